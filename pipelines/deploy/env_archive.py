"""Pack a virtual environment into a ``.tar.gz`` that works wherever it is unpacked (``spark.archives``).

What venv-pack does, reduced to what Spark needs. A venv is relocatable but for three things, handled here:

* ``bin/python*`` are symbolic links to the interpreter the venv was made from: kept (the target host needs that
  interpreter at the same path: same Python minor version, as PySpark requires anyway), or pointed at
  ``<python_prefix>/bin/python3.X`` when the target keeps its Python elsewhere (``pyvenv.cfg``'s ``home`` follows).
* console scripts start with ``#!<venv>/bin/python``: rewritten to a header that is valid sh and valid Python,
  so the script runs with the ``python`` beside it wherever the archive is unpacked.
* ``activate`` scripts hard-code the venv's path: left out (nothing on an executor sources them).

The interpreter itself is not packed (a conda-pack archive would carry it).
"""

from __future__ import annotations

import io
import os
import sys
import tarfile
from pathlib import Path

#: For sh, line 2 is the no-op ``:`` and line 3 execs the python beside the script; for Python, lines 2-4 are one
#: string literal (the module docstring, so ``from __future__`` imports below it stay legal).
RELOCATABLE_SHEBANG = b"""#!/bin/sh
''':'
exec "$(dirname -- "$0")/python" "$0" "$@"
'''
"""
_SKIPPED = frozenset({"activate", "activate.csh", "activate.fish", "Activate.ps1"})


class NotAVirtualEnv(ValueError):
    """The directory has no ``pyvenv.cfg``."""


def _python_link(name: str, python_prefix: str | None, version: str) -> str | None:
    """New target of ``bin/<name>`` (a python symlink) under ``python_prefix``, or None to keep it."""
    if python_prefix is None or not name.startswith("python"):
        return None
    return f"{python_prefix.rstrip('/')}/bin/python{version}"


def _script(path: Path, venv: Path) -> bytes | None:
    """The script with a relocatable header, when it is one of the venv's console scripts; else None."""
    with open(path, "rb") as f:
        head = f.read(2 + len(str(venv)) + 64)
    if not head.startswith(b"#!") or not head[2:].startswith(os.fsencode(venv / "bin")):
        return None
    data = path.read_bytes()
    return RELOCATABLE_SHEBANG + data[data.index(b"\n") + 1 :]


def _venv_python_version(cfg: Path) -> str:
    """``3.11`` from ``pyvenv.cfg`` (``version = 3.11.7`` or ``version_info = 3.11.7.final.0``)."""
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return ".".join(value.strip().split(".")[:2])
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _cfg(path: Path, python_prefix: str | None, version: str) -> bytes:
    """``pyvenv.cfg`` with ``home`` (and ``executable``) under ``python_prefix``."""
    lines = path.read_text().splitlines()
    if python_prefix is not None:
        bin_dir = f"{python_prefix.rstrip('/')}/bin"
        new = {"home": bin_dir, "executable": f"{bin_dir}/python{version}"}
        lines = [f"{key} = {new[key]}" if (key := line.partition("=")[0].strip()) in new else line for line in lines]
    return ("\n".join(lines) + "\n").encode()


def pack_venv(venv: Path, out: Path, *, python_prefix: str | None = None, compresslevel: int = 6) -> Path:
    """Write ``venv`` as ``out`` (``.tar.gz``), its contents at the archive's top level.

    Args:
        venv: a virtual environment made by ``python -m venv`` with non-editable installs.
        out: the archive to write (replaced atomically).
        python_prefix: where the target hosts keep the Python the venv was made from (``/usr`` for
            ``/usr/bin/python3.11``); default: the same path as here.

    Raises:
        NotAVirtualEnv: ``venv`` has no ``pyvenv.cfg``.
    """
    venv = venv.resolve()
    if not (venv / "pyvenv.cfg").is_file():
        raise NotAVirtualEnv(f"{venv} is not a virtual environment (no pyvenv.cfg)")
    version = _venv_python_version(venv / "pyvenv.cfg")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with tarfile.open(tmp, "w:gz", compresslevel=compresslevel) as tar:
        for root, dirs, files in os.walk(venv):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            rel_root = Path(root).relative_to(venv)
            for name in sorted(files) + [d for d in dirs if Path(root, d).is_symlink()]:
                path = Path(root, name)
                arcname = (rel_root / name).as_posix()
                if rel_root == Path("bin") and name in _SKIPPED:
                    continue
                info = tar.gettarinfo(str(path), arcname)
                if info.issym():
                    target = _python_link(name, python_prefix, version) if rel_root == Path("bin") else None
                    info.linkname = target or info.linkname
                    tar.addfile(info)
                    continue
                data = None
                if rel_root == Path("bin") and info.isfile():
                    data = _script(path, venv)
                elif arcname == "pyvenv.cfg":
                    data = _cfg(path, python_prefix, version)
                if data is None:
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    tmp.replace(out)
    return out
