#!/usr/bin/env bash
# The whole test suite on the PoCL device. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Run against the installed package, not the source tree.
cd test
exec ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@" .
