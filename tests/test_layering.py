"""The packages that run on a broker host or in a plain CLI must not pull in Spark, directly or indirectly."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import pipelines

SPARK_FREE = ("kafka", "metadata", "plan", "execute", "cli", "config", "simulate", "analytics", "signing",
              "metrics", "deploy", "remote_tier", "execute_remote")
ROOT = Path(pipelines.__file__).resolve().parent


def _modules(package: str) -> list[str]:
    path = ROOT / package
    if not path.is_dir():
        return []
    names = [f"pipelines.{package}"]
    names += [m.name for m in pkgutil.walk_packages([str(path)], prefix=f"pipelines.{package}.")]
    return names


@pytest.mark.parametrize("package", SPARK_FREE)
def test_package_imports_without_spark(package: str) -> None:
    modules = _modules(package)
    if not modules:
        pytest.skip(f"pipelines.{package} does not exist yet")
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.'))\n"
        "print(','.join(leaked))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"pipelines.{package} imports pyspark: {out.stdout.strip()}"


def test_probe_detects_a_spark_import() -> None:
    """The probe itself must be able to fail: importing a module that imports pyspark is seen."""
    probe = "import sys, pyspark.sql\nprint(any(m.startswith('pyspark') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
