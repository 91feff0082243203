#!/usr/bin/env bash
# Full conformance sweep: every OpInfo of PyTorch's op_db, float32 + float64 + int64, on CPU and
# on the opencl device, compared (test/_opinfo_harness.py). Writes build/conformance/results.jsonl
# and docs/conformance.md. Each (op, dtype) runs under a timeout in a worker process, so one hang
# or crash cannot stall the sweep. Seeds are fixed and output sorted: reruns are deterministic.
#
#   scripts/conformance.sh                     the whole sweep (about 20 minutes on the 2-core PoCL machine)
#   scripts/conformance.sh --update-xfail      ... and rewrite test/conformance_xfail.txt
#   scripts/conformance.sh --ops add,mm --dtypes float32 [--update-xfail]   a subset (the
#                                              xfail list keeps entries of (op, dtype) not swept)
#   scripts/conformance.sh --resume            continue an interrupted sweep
#   scripts/conformance.sh --report-only       rewrite docs/conformance.md from the last results
#   scripts/conformance.sh --common [--ops ..] [--update-xfail]   TestCommon's checks instead (out=, variants,
#                                              non-contiguous, against CPU; test/_common_checks.py), whose
#                                              list is test/conformance_common_xfail.txt (CI runs them all)
# Environment: CONFORMANCE_TIMEOUT (seconds per op and dtype, default 300).
set -euo pipefail
cd "$(dirname "$0")/.."
update=0; report_only=0; common=0; sweep_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --update-xfail) update=1 ;;
    --report-only) report_only=1 ;;
    --common) common=1 ;;
    --resume) sweep_args+=(--resume) ;;
    --ops|--dtypes) sweep_args+=("$1" "$2"); shift ;;
    *) echo "conformance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
bash scripts/setup.sh >/dev/null
PY=$PWD/.venv/bin/python
export TORCH_OPENCL_FALLBACK=silent
H=test/_opinfo_harness.py
if [ $common -eq 1 ]; then
  common_args=(); [ $update -eq 1 ] && common_args+=(--update-xfail)
  for ((i = 0; i < ${#sweep_args[@]}; i++)); do [ "${sweep_args[i]}" = --ops ] && common_args+=(--ops "${sweep_args[i + 1]}"); done
  cd test && exec $PY _common_checks.py "${common_args[@]}"
fi
if [ $report_only -eq 0 ]; then
  $PY $H sweep --timeout "${CONFORMANCE_TIMEOUT:-300}" "${sweep_args[@]}"
fi
$PY $H report
if [ $update -eq 1 ]; then
  $PY $H update-xfail
fi
