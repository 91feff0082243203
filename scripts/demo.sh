#!/usr/bin/env bash
# The main job: train a small CNN on scikit-learn's digits on torch.device("opencl").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m torch_opencl
exec .venv/bin/python examples/train_digits.py "$@"
