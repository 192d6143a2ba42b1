#!/usr/bin/env bash
# Makes the virtual environment .venv (Debian's python3 refuses pip installs outside one) and
# installs tandem into it with `pip install .` (scikit-build-core runs this repository's
# CMake; build/python-wheel keeps the build, so a second install rebuilds only what changed).
# EXTRA="pytest" installs more packages beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# shellcheck disable=SC2086
.venv/bin/python -m pip install --quiet --disable-pip-version-check numpy ${EXTRA:-}
.venv/bin/python -m pip install --quiet --disable-pip-version-check .
.venv/bin/python -c "import tandem, sys; print('python_env: tandem', tandem.__version__, 'in', sys.prefix)"
