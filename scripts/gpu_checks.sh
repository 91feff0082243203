#!/usr/bin/env bash
# The test suite and the benchmarks on a machine with a GPU and its OpenCL driver, each step under a time
# limit of its own (so that one slow step still leaves the others' logs), logs and figures under OUT.
#
#   bash scripts/gpu_checks.sh OUT suite     # build, then the suite on the GPU (-n 16 with pytest-xdist)
#   bash scripts/gpu_checks.sh OUT bench     # build, then bench_vs_cuda (--fp32-cuda), bench_attention (and
#                                            # --sweep), bench_compile (tiny: host overhead), bench_rowops
#                                            # (fused cross_entropy against the composite), Winograd/im2col,
#                                            # products by precision (tensor cores) and the training steps at
#                                            # float32 matmul precision "high" (--tf32)
#   bash scripts/gpu_checks.sh OUT profile   # build, then bench_vs_cuda --profile (each training step's
#                                            # operators by device time, opencl and cuda), bench_compile
#                                            # --profile (eager and compiled kernels by device time), and the
#                                            # training steps under autocast (bench_vs_cuda --amp)
#
# The build goes into python3's environment against the torch installed there (2.11-2.13; a CUDA build
# gives the CUDA columns of bench_vs_cuda), in build/gpu, so a second run is incremental. It needs the
# OpenCL headers, the ICD loader and CLBlast (Debian: opencl-headers opencl-clhpp-headers ocl-icd-opencl-dev
# libclblast-dev). On a machine without package access, set GPU_OFFLINE_DIR to a directory that
# scripts/gpu_machine.sh takes (the Debian packages unpacked under a prefix, optionally wheels/*.whl for
# missing test dependencies: `pip download --no-deps -d DIR/wheels expecttest "hypothesis<6.150"
# pytest-xdist execnet sortedcontainers attrs`). Where the machine has several OpenCL platforms,
# TORCH_OPENCL_PLATFORM chooses (docs/install.md). Times on an H100: the suite about 4 minutes with 16
# workers, the bench phase about 2 minutes and its attention sweep 1-1.5 more; docs/performance.md says
# where the figures go.
set -uo pipefail
usage="usage: [GPU_OFFLINE_DIR=DIR] bash scripts/gpu_checks.sh OUT suite|bench|profile"
out="${1:?$usage}"
phase="${2:?$usage}"
case "$phase" in suite|bench|profile) ;; *) echo "unknown phase '$phase': $usage" >&2; exit 2 ;; esac
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$repo"
build() {
  if [ -n "${GPU_OFFLINE_DIR:-}" ]; then
    # shellcheck disable=SC1091
    source scripts/gpu_machine.sh "$GPU_OFFLINE_DIR"
  else
    python3 -m pip install -q --no-build-isolation --no-deps -C build-dir="$repo/build/gpu" "$repo" \
      || { echo "torch_opencl failed to build"; return 1; }
    (cd / && python3 -m torch_opencl) || true
  fi
}
build >"$out/setup.log" 2>&1 || { tail -20 "$out/setup.log"; exit 1; }
tail -3 "$out/setup.log"

step() {  # step NAME SECONDS COMMAND...: run with a limit, log to OUT/NAME.log, print its tail
  local name=$1 limit=$2
  shift 2
  echo "==> $name ($(date +%T), limit ${limit}s)"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "    rc=$? ($(date +%T))"
  tail -5 "$out/$name.log"
}

case "$phase" in
  suite)
    if ! python3 -c "import xdist" 2>/dev/null; then workers=(); else workers=(-n 16); fi
    (cd test && step suite 420 python3 -m pytest -q -p no:cacheprovider "${workers[@]}" . --ignore=test_distributed.py)
    grep -E "^(FAILED|ERROR)" "$out/suite.log" | head -40
    ;;
  bench)
    step bench_vs_cuda 300 python3 bench/bench_vs_cuda.py --fp32-cuda --json "$out/bench_vs_cuda.json"
    step bench_attention 60 python3 bench/bench_attention.py
    step bench_attention_sweep 90 python3 bench/bench_attention.py --sweep --repeat 5
    step bench_compile 120 python3 bench/bench_compile.py --steps 10 --only mlp,transformer,gelu_mlp,layernorm,attention,tiny
    step bench_rowops 120 python3 bench/bench_rowops.py --set gpu --compare none --calls 20
    step bench_winograd 60 python3 bench/bench_conv.py --winograd --batch 128
    step bench_gemm_precision 60 python3 bench/bench_gemm_precision.py
    step bench_vs_cuda_tf32 150 python3 bench/bench_vs_cuda.py --only training --steps 5 --tf32
    ;;
  profile)
    # Where the training steps' device time goes on each device (the operators by device time), then
    # the compiled blocks' kernels.
    step bench_vs_cuda_profile 240 python3 bench/bench_vs_cuda.py --only training --steps 5 --profile
    step bench_compile_profile 240 python3 bench/bench_compile.py --steps 5 --only gelu_mlp,layernorm,transformer,mlp --profile 5
    step bench_vs_cuda_amp 180 python3 bench/bench_vs_cuda.py --only training --steps 5 --amp
    ;;
  *)
    echo "unknown phase '$phase': use suite, bench or profile" >&2
    exit 2
    ;;
esac
