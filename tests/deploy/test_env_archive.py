"""The environment archive runs wherever it is unpacked: real venvs, real tar, real interpreters (no Spark)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pipelines.deploy.env_archive import NotAVirtualEnv, pack_venv

SCRIPT = "#!{python}\nimport sys\nimport tinypkg\nprint(tinypkg.WHERE, sys.prefix)\n"


def _venv(root: Path) -> Path:
    """A venv (no pip: fast) with a package in site-packages and a console script, as pip would install them."""
    venv = root / "made-here"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = venv.glob("lib/python3.*/site-packages")
    (site / "tinypkg").mkdir()
    (site / "tinypkg" / "__init__.py").write_text("import os\nWHERE = os.path.dirname(__file__)\n")
    script = venv / "bin" / "tiny"
    script.write_text(SCRIPT.format(python=venv / "bin" / "python"))
    script.chmod(0o755)
    return venv


def _unpack(archive: Path, target: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="tar")
    return target


def test_unpacked_elsewhere_the_python_and_the_scripts_use_the_unpacked_environment(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    archive = pack_venv(venv, tmp_path / "out" / "env.tar.gz")
    shutil.rmtree(venv)  # nothing may still point at the original directory
    env = _unpack(archive, tmp_path / "executor" / "environment")

    run = subprocess.run([str(env / "bin" / "python"), "-c", "import sys, tinypkg; print(tinypkg.WHERE, sys.prefix)"],
                         capture_output=True, text=True, check=True)
    where, prefix = run.stdout.split()
    assert Path(prefix) == env and Path(where).is_relative_to(env)

    script = subprocess.run([str(env / "bin" / "tiny")], capture_output=True, text=True, check=True)
    assert script.stdout.split() == run.stdout.split()
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "bin/activate" not in names and not any("__pycache__" in n for n in names)
    assert "pyvenv.cfg" in names


def test_python_prefix_repoints_the_interpreter_links(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    archive = pack_venv(venv, tmp_path / "env.tar.gz", python_prefix="/opt/python/")
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    with tarfile.open(archive) as tar:
        links = {m.name: m.linkname for m in tar.getmembers() if m.issym() and m.name.startswith("bin/python")}
        cfg = tar.extractfile("pyvenv.cfg").read().decode()  # type: ignore[union-attr]
    assert links and set(links.values()) == {f"/opt/python/bin/python{minor}"}
    assert "home = /opt/python/bin" in cfg.splitlines()


def test_a_plain_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotAVirtualEnv, match=r"pyvenv\.cfg"):
        pack_venv(tmp_path, tmp_path / "x.tar.gz")
