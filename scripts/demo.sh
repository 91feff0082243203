#!/usr/bin/env bash
# The main job: train a small CNN on scikit-learn's digits on torch.device("opencl").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m torch_opencl
# Compiles the kernels this training needs ahead of time (the digits workload), with a progress bar,
# so the first epoch starts at full speed; seconds once they are cached.
.venv/bin/python -m torch_opencl warmup --only digits
exec .venv/bin/python examples/train_digits.py "$@"
