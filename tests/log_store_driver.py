"""Drive a Delta LogStore class of the test session's JVM from Python: write one commit file as Delta would."""

from __future__ import annotations

from typing import Any


class LogStoreDriver:
    """An instance of ``class_name`` (a ``io.delta.storage.LogStore``) over ``hadoop_conf``."""

    def __init__(self, spark: Any, class_name: str, hadoop_conf: Any) -> None:
        self.spark = spark
        self.jvm = spark._jvm
        self.conf = hadoop_conf
        cls = self.jvm.org.apache.spark.util.Utils.classForName(class_name, True, False)
        args = spark.sparkContext._gateway.new_array(self.jvm.java.lang.Object, 1)
        args[0] = hadoop_conf
        self.store = cls.getConstructors()[0].newInstance(args)

    def write(self, path: str, lines: list[str], overwrite: bool = False) -> None:
        actions = self.jvm.java.util.ArrayList()
        for line in lines:
            actions.add(line)
        self.store.write(self.jvm.org.apache.hadoop.fs.Path(path), actions.iterator(), overwrite, self.conf)

    def read(self, path: str) -> list[str]:
        lines = self.store.read(self.jvm.org.apache.hadoop.fs.Path(path), self.conf)
        out = []
        while lines.hasNext():
            out.append(lines.next())
        lines.close()
        return out


def java_error(exc: BaseException) -> str:
    """The Java exception class a py4j call raised ('' for a Python error)."""
    java = getattr(exc, "java_exception", None)
    return "" if java is None else java.getClass().getName()


def assert_a_retried_commit_is_ours(driver: LogStoreDriver, path: str) -> None:
    """Writing the same commit twice (a retry after a lost reply) succeeds; another commit of that version is
    ``FileAlreadyExistsException`` and leaves ours in place."""
    import pytest

    ours = ['{"commitInfo":{"txnId":"a"}}', '{"add":{"path":"x"}}']
    driver.write(path, ours)
    driver.write(path, ours)
    with pytest.raises(Exception) as other:
        driver.write(path, ['{"commitInfo":{"txnId":"b"}}'])
    assert java_error(other.value) == "java.nio.file.FileAlreadyExistsException"
    assert driver.read(path) == ours
