"""Optional C speed-ups, built by ``pip install`` when a C compiler is present.

Every ``pipelines/**/_native_*.c`` becomes the extension module of the same dotted name. Each has a pure-Python twin
that is the reference (tests compare the two on the same input); when the compiler or the Python headers are
missing, the build of that module is skipped (``optional=True``) and the pure-Python code runs.
Everything else about the package is in ``pyproject.toml``.
"""

from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent


def native_extensions() -> list[Extension]:
    out = []
    for src in sorted(HERE.glob("pipelines/**/_native_*.c")):
        rel = src.relative_to(HERE)
        name = ".".join(rel.with_suffix("").parts)
        out.append(Extension(name, [rel.as_posix()], optional=True, extra_compile_args=["-O2", "-std=c11"]))
    return out


setup(ext_modules=native_extensions())
