#!/usr/bin/env bash
# The test suite on Intel's OpenCL CPU runtime (installed under .venv by scripts/setup_intel_opencl.sh), the
# second OpenCL implementation: another compiler than PoCL's, with cl_khr_fp16. Extra arguments go to pytest
# and run that selection only; --ci runs the slice scripts/test.sh runs there (sized for CI's time); with
# none, the whole suite runs once in the device's own kernel class (cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f .venv/intel-opencl/vendors/intel-opencl-venv.icd ]; then
  echo "==> Intel's OpenCL CPU runtime is not installed (x86-64 only): no tests on it"
  exit 0
fi
. scripts/intel_opencl_env.sh
cd test
run() { ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@"; }
if [ "${1:-}" != --ci ]; then
  if [ $# -gt 0 ]; then exec ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@"; fi
  run . --ignore=test_distributed.py
  exit 0
fi
# CI's slice (3 to 4 minutes cold on 2 cores): what differs between implementations. Every kernel file
# compiled by Intel's compiler in both kernel classes, with its warnings; fp16's autocast rule; logspace's
# integers (the driver's pow is not glibc's); training against CPU, and float16 autocast's (the default dtype
# here: cl_khr_fp16); the line forms in the runtime's own layout (work-items vectorised, 16 a run); the fuzzer's
# operator families (PoCL's fixed examples) and attention, in both classes; torch.compile's training workloads,
# vector loops and product epilogues (30 s cold; the rest of its tests are left to the whole suite, 1 to 2 minutes
# a module cold on Intel's compiler).
SLICE=(test_kernel_warnings.py test_autocast.py test_sort_shape.py::test_logspace_matches_cpu test_training.py
       test_half_training.py test_item_vectorisation.py test_copy_lines.py test_pointwise_lines.py test_foreach.py
       test_reduce.py test_normalization.py test_index_ops.py test_compile_gemm.py::test_vector_epilogue_matches_cpu_forms
       test_inductor.py::test_pointwise_vectors_forms test_inductor.py::test_training_workloads_match_eager)
echo "==> Intel's OpenCL runtime (TORCH_OPENCL_PLATFORM=Intel): ${SLICE[*]} test_fuzz.py test_attention.py"
run "${SLICE[@]}"
run test_fuzz.py test_attention.py -k "test_fuzz[ or attention"
echo "==> Again with TORCH_OPENCL_KERNEL_CLASS=gpu on Intel's runtime: test_fuzz.py test_attention.py"
TORCH_OPENCL_KERNEL_CLASS=gpu run test_fuzz.py test_attention.py -k "test_fuzz[ or attention"
