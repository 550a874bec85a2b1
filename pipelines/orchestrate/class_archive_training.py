"""The session ``pipelines.tables.class_archive.build_archive`` records (run as
``python -m pipelines.orchestrate.class_archive_training <archive> <work dir>``).

It runs the whole pipeline twice on a two-broker simulated cluster (a new run id, then a rerun of it), so the
archive holds the classes a run loads on both paths (the first writes of a run, and replacing a run's rows). Then it
stops Spark, closes the driver JVM's stdin (the JVM exits and writes the archive) and waits for that JVM.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(archive: Path, work: Path) -> None:
    from pipelines.config.load import load_config
    from pipelines.orchestrate import run_pipeline
    from pipelines.simulate import PRESETS, ClusterSpec, generate
    from pipelines.tables.spark_session import _local_defaults, build_spark

    result = generate(ClusterSpec(brokers=2, jbod_dirs=1, anomalies=PRESETS["small"]), work / "cluster",
                      warehouse=str(work / "warehouse"), force=True)
    options = _local_defaults("local[*]")["spark.driver.extraJavaOptions"]
    spark = build_spark("kafka-logdir-gc-class-archive", log_file=work / "spark.log",
                        conf={"spark.driver.extraJavaOptions": f"{options} -XX:ArchiveClassesAtExit={archive}"})
    config = load_config(result.config_path)
    for _ in range(2):
        run_pipeline(config, "class-archive", created_by="class-archive")
    from pyspark import SparkContext

    jvm = getattr(SparkContext._gateway, "proc", None)
    spark.stop()
    if jvm is None:  # a JVM this process did not start: it would write the archive after we returned
        sys.exit("no driver JVM of this process to wait for")
    jvm.stdin.close()
    jvm.wait(timeout=300)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
