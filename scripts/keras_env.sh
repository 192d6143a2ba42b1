#!/usr/bin/env bash
# Makes .venv-keras: Keras 3 on JAX (CPU), the reference the Keras-file tests
# (python/tests/test_keras_files.py) run in their own interpreter. Not a dependency of
# tandem: only the tests use it. Pinned to the Keras release the format was checked with.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if [ ! -x .venv-keras/bin/python ]; then
  "$python" -m venv .venv-keras
fi
.venv-keras/bin/python -m pip install --quiet --disable-pip-version-check keras==3.15.1 \
  "jax[cpu]==0.10.2"
.venv-keras/bin/python -c "import os; os.environ['KERAS_BACKEND'] = 'jax'; import keras, jax; \
print('keras_env: keras', keras.__version__, 'on jax', jax.__version__)" 2>&1 | tail -1
