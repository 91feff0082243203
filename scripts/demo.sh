#!/usr/bin/env bash
# The main job: train a small CNN on scikit-learn's digits on torch.device("opencl").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m torch_opencl
# Compiles the kernels training needs ahead of time, with a progress bar (seconds once they are cached),
# so the first epoch starts at full speed.
.venv/bin/python -m torch_opencl warmup
exec .venv/bin/python examples/train_digits.py "$@"
