"""The cause of a driver JVM that exited at start, read from its output (shapes of real Spark 4 / Ivy / java output)."""

from __future__ import annotations

from pathlib import Path

from pipelines.tables.start_failure import cause_in_log, cause_in_text, log_size

UNREACHABLE = """\
:: resolving dependencies :: org.apache.spark#spark-submit-parent-1;1.0
\tconfs: [default]
:: problems summary ::
:::: WARNINGS
\t\tmodule not found: io.delta#delta-spark_4.2_2.13;4.4.0
\t==== klgc-maven: tried
\t  http://127.0.0.1:9/io/delta/delta-spark_4.2_2.13/4.4.0/delta-spark_4.2_2.13-4.4.0.pom
:::: ERRORS
\tServer access error at url http://127.0.0.1:9/io/delta/delta-spark_4.2_2.13/4.4.0/delta-spark_4.2_2.13-4.4.0.pom \
(java.net.ConnectException: Connection refused)
:: USE VERBOSE OR DEBUG MESSAGE LEVEL FOR MORE DETAILS
Exception in thread "main" java.lang.RuntimeException: [unresolved dependency: io.delta#delta-spark_4.2_2.13;4.4.0: \
not found, unresolved dependency: org.apache.hadoop#hadoop-aws;3.5.0: not found]
\tat org.apache.spark.util.MavenUtils$.resolveMavenCoordinates(MavenUtils.scala:539)
\tat org.apache.spark.deploy.SparkSubmit.main(SparkSubmit.scala)
"""

DOWNLOAD_FAILED = """\
\t[FAILED     ] io.delta#delta-storage;4.4.0!delta-storage.jar: Downloaded file size (0) doesn't match expected \
Content Length (24513) (1ms)
Exception in thread "main" java.lang.RuntimeException: [download failed: io.delta#delta-storage;4.4.0!delta-storage.jar]
\tat org.apache.spark.util.MavenUtils$.resolveMavenCoordinates(MavenUtils.scala:539)
"""

BAD_OPTION = """\
Invalid maximum heap size: -Xmx1x
Error: Could not create the Java Virtual Machine.
Error: A fatal exception has occurred. Program will exit.
"""


def test_an_unreachable_repository_names_the_first_missing_package_and_why() -> None:
    assert cause_in_text(UNREACHABLE) == (
        "unresolved dependency io.delta#delta-spark_4.2_2.13;4.4.0: not found (and 1 more); "
        "ConnectException: Connection refused at "
        "http://127.0.0.1:9/io/delta/delta-spark_4.2_2.13/4.4.0/delta-spark_4.2_2.13-4.4.0.pom")


def test_a_failed_download_is_named() -> None:
    assert cause_in_text(DOWNLOAD_FAILED) == "download failed for io.delta#delta-storage;4.4.0!delta-storage.jar"


def test_another_exception_of_spark_submit_is_named_by_its_class() -> None:
    text = 'Exception in thread "main" org.apache.spark.SparkException: Master must start with yarn\n\tat x.y(Z)\n'
    assert cause_in_text(text) == "SparkException: Master must start with yarn"


def test_the_java_launchers_complaint_is_named() -> None:
    assert cause_in_text(BAD_OPTION) == "Invalid maximum heap size: -Xmx1x"
    warned = "26/11/28 05:40:28 WARN NativeCodeLoader: Unable to load native-hadoop library\n" + BAD_OPTION
    assert cause_in_text(warned) == "Invalid maximum heap size: -Xmx1x"


def test_no_output_names_nothing() -> None:
    assert cause_in_text("") is None
    assert cause_in_text("\n\n") is None


def test_only_this_starts_output_is_read(tmp_path: Path) -> None:
    """The log is appended to across reruns of a run id: an earlier run's failure is not this one's cause."""
    log = tmp_path / "spark.log"
    log.write_text(DOWNLOAD_FAILED)
    start = log_size(log)
    with log.open("a") as out:
        out.write(BAD_OPTION)
    assert cause_in_log(log, start) == "Invalid maximum heap size: -Xmx1x"
    assert cause_in_log(tmp_path / "missing.log") is None
    assert log_size(tmp_path / "missing.log") == 0 and log_size(None) == 0


def test_the_cause_is_one_line_of_bounded_length() -> None:
    many = ", ".join(f"download failed: org.example#lib{i};1.0!lib{i}.jar" for i in range(200))
    cause = cause_in_text(f'Exception in thread "main" java.lang.RuntimeException: [{many}]\n')
    assert cause == "download failed for org.example#lib0;1.0!lib0.jar (and 199 more)"
    long_line = "Error: " + "x" * 5000
    found = cause_in_text(long_line)
    assert found is not None and "\n" not in found and len(found) <= 400
