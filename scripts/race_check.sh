#!/usr/bin/env bash
# The GPU-shaped kernels under Oclgrind, an OpenCL device simulator (Debian's `oclgrind`), with its
# data-race detector and its checks of out-of-range accesses, barrier divergence and device limits.
# PoCL's CPU device runs a work-group's items one after another between barriers, which hides races
# that a GPU shows; this finds them without a GPU.
#
#   scripts/race_check.sh                      the GPU-form test files (TORCH_OPENCL_KERNEL_CLASS=gpu)
#   scripts/race_check.sh --small-device       ... on a device of 128-item groups and 16 KiB of local memory
#   scripts/race_check.sh test_foo.py [-k X]   chosen tests (pytest arguments)
#
# One Oclgrind log per test file under build/race_check/. Fails when a test fails or Oclgrind reports
# anything. Slow: Oclgrind interprets every work-item (the default set takes about an hour on 2 cores).
# Programs build with -cl-opt-disable: Oclgrind 21.10 cannot load the llvm.experimental.noalias.scope.decl
# calls that inlining leaves in the scan kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v oclgrind >/dev/null; then
  echo "==> Installing oclgrind (Debian)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq oclgrind >/dev/null
fi
bash scripts/setup.sh >/dev/null
device=(--global-mem-size 1073741824)
if [ "${1:-}" = "--small-device" ]; then
  device+=(--max-wgsize 128 --local-mem-size 16384)
  shift
fi
if [ $# -gt 0 ]; then
  runs=("$*")
else
  runs=(test_softmax_loss.py test_cross_entropy.py test_normalization.py test_rowwise_kernels.py test_row_gpu_forms.py
        test_reduction_forms.py test_reduce.py test_deferred_index_errors.py test_attention.py
        test_conv_winograd.py
        # The two tests of inputs past the layout kernels' 4M-element chunks outgrow Oclgrind's shadow memory
        # (24 GiB were not enough).
        "test_convolution.py --deselect test_convolution.py::test_layout_kernels_over_several_sample_chunks
         --deselect test_convolution.py::test_sample_larger_than_a_chunk_changes_layout_through_aten"
        test_gemm_tiled.py "test_blas.py --deselect test_blas.py::test_tuner_saves_and_backend_applies" "test_inductor.py -k forms")
fi
out=$PWD/build/race_check
mkdir -p "$out"
export TORCH_OPENCL_KERNEL_CLASS=gpu TORCH_OPENCL_CACHE=0 TORCH_OPENCL_FALLBACK=silent
failed=0
cd test
for run in "${runs[@]}"; do
  name=$(printf '%s' "$run" | tr -cs 'A-Za-z0-9_.' '_' | cut -c1-60)
  log=$out/$name.log
  rm -f "$log"
  set +e
  # shellcheck disable=SC2086
  oclgrind --data-races --build-options -cl-opt-disable --max-errors 20 --log "$log" "${device[@]}" \
    ../.venv/bin/python -m pytest -q -p no:cacheprovider $run > "$out/$name.out" 2>&1
  rc=$?
  set -e
  reports=$(grep -c '^[A-Z]' "$log" 2>/dev/null || true)
  reports=${reports:-0}
  echo "$run: pytest rc=$rc, $(tail -1 "$out/$name.out"); Oclgrind reports: $reports (log: $log)"
  if [ $rc -ne 0 ] || [ "$reports" != 0 ]; then failed=1; fi
done
exit $failed
