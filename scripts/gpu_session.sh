#!/usr/bin/env bash
# What a session with the lent GPU machine runs, in calls of at most 10 minutes (the device tool's limit);
# each call sends the checkout and starts from `source scripts/gpu_machine.sh DIR` (a warm machine keeps
# build/gpu, so the second call's build is incremental). Logs and figures go under OUT ($OUT on the
# device machine): copy what they say into README.md and bench/results/.
#
#   bash scripts/gpu_session.sh DIR OUT suite   # build, then the suite on the NVIDIA device (-n 16)
#   bash scripts/gpu_session.sh DIR OUT bench   # build, then bench_vs_cuda (--fp32-cuda), bench_attention,
#                                               # bench_compile (tiny: host overhead), bench_rowops
#                                               # (fused cross_entropy against the composite), Winograd/im2col,
#                                               # products by precision (tensor cores) and the training steps
#                                               # at float32 matmul precision "high" (--tf32)
#   bash scripts/gpu_session.sh DIR OUT profile # build, then bench_vs_cuda --profile (each training step's
#                                               # operators by device time, opencl and cuda) and bench_compile
#                                               # --profile (eager and compiled kernels by device time), then
#                                               # the training steps under autocast (bench_vs_cuda --amp)
#
# DIR holds a copy of ../shared/gpu (see scripts/gpu_machine.sh) and DIR/wheels the test dependencies the
# machine lacks (`pip download --no-deps -d DIR/wheels expecttest "hypothesis<6.150" pytest-xdist execnet
# sortedcontainers attrs`: without expecttest three test modules are not collected). Each step runs under a
# time limit of its own so that one slow step still leaves the others' logs. The suite took 224 s with 16
# workers; the bench phase about 120 s, and its attention sweep 60-90 s more.
set -uo pipefail
gpu_dir="${1:?usage: bash scripts/gpu_session.sh DIR-with-shared-gpu OUT suite|bench|profile}"
out="${2:?usage: bash scripts/gpu_session.sh DIR OUT suite|bench|profile}"
phase="${3:?usage: bash scripts/gpu_session.sh DIR OUT suite|bench|profile}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$repo"
# shellcheck disable=SC1091
source scripts/gpu_machine.sh "$gpu_dir" >"$out/setup.log" 2>&1 || { tail -20 "$out/setup.log"; exit 1; }
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
