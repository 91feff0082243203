#!/usr/bin/env bash
# The whole test suite on the PoCL device, then a slice on Intel's OpenCL runtime. Extra arguments go to
# pytest and run that selection only (on PoCL); with none, the suite runs once as the device's own kernel
# class chooses, then again for the passes below that need a process of their own (an environment read when
# the devices are first selected).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Run against the installed package, not the source tree.
cd test
run() { ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@"; }
if [ $# -gt 0 ]; then
  exec ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi
# The large passes run their files in parallel worker processes (pytest-xdist, a file per worker at a time):
# most of a cold run is PoCL's LLVM building programs, one at a time in each process. Up to 4 workers, one
# a core.
WORKERS=$(( $(nproc) < 4 ? $(nproc) : 4 ))
parallel() { run -n "$WORKERS" --dist loadfile "$@"; }
parallel . --ignore=test_distributed.py
# The GPU forms of the kernel families (runtime/kernel_forms.h), on PoCL: the tests of every family
# that has one, and the fuzzer's fixed examples (which found wrong answers in those forms).
GPU_FORM_TESTS=(test_deferred_index_errors.py test_pointwise_lines.py test_blas.py test_gemm_tiled.py test_convolution.py test_conv_winograd.py test_softmax_loss.py test_cross_entropy.py test_normalization.py
                test_rowwise_kernels.py test_row_gpu_forms.py test_reduction_forms.py test_reduce.py test_conv_depthwise.py
                test_attention.py test_copy_lines.py test_sort_shape.py test_search_stats.py test_order_stats.py test_fuzz.py
                test_transformer_fast_paths.py test_zoo_models.py test_zoo_transformers.py test_half_training.py)
echo "==> Again with TORCH_OPENCL_KERNEL_CLASS=gpu: ${GPU_FORM_TESTS[*]}"
TORCH_OPENCL_KERNEL_CLASS=gpu parallel "${GPU_FORM_TESTS[@]}"
# The CPU forms' runs as implementations that vectorise across work-items take them (Intel's CPU runtime: 16
# work-items a run, runtime/kernel_forms.h's line_lanes), on PoCL.
LANE_FORM_TESTS=(test_copy_lines.py test_pointwise_lines.py test_foreach.py test_item_vectorisation.py)
echo "==> Again with TORCH_OPENCL_LINE_LANES=16: ${LANE_FORM_TESTS[*]}"
TORCH_OPENCL_LINE_LANES=16 parallel "${LANE_FORM_TESTS[@]}"
# Bad indices of embedding_bag and max_unpool2d as GPU-class devices report them (deferred IndexErrors).
TORCH_OPENCL_KERNEL_CLASS=gpu run test_nn_ops_native.py -k "embedding_bag_errors or max_unpool_errors"
# torch.compile's generated kernels in their GPU form (one work-group per reduction row), and the compile
# fuzzer's fixed cases.
TORCH_OPENCL_KERNEL_CLASS=gpu run test_inductor.py test_compile_fuzz.py test_compile_gemm.py -k forms
# torch.distributed (issue 16): two ranks, each a process on one of PoCL's two devices.
echo "==> torch.distributed with two ranks on POCL_DEVICES='pthread pthread': test_distributed.py"
POCL_DEVICES="pthread pthread" run test_distributed.py
# Two devices (PoCL's CPU device twice): the tests that need a second device, which skip above.
# TORCH_OPENCL_TEST_DEVICES=2 makes a missing second device fail the pass instead (test/conftest.py).
MULTI_DEVICE_TESTS=(test_multi_device.py)
echo "==> Again with two devices (POCL_DEVICES=\"pthread pthread\"): ${MULTI_DEVICE_TESTS[*]}"
POCL_DEVICES="pthread pthread" TORCH_OPENCL_TEST_DEVICES=2 run "${MULTI_DEVICE_TESTS[@]}"
# Intel's OpenCL CPU runtime, the second implementation (another compiler, fp16): a slice in both kernel
# classes (scripts/test_intel.sh --ci); `scripts/test_intel.sh` runs the whole suite there.
(cd .. && bash scripts/test_intel.sh --ci)
# The wheel (issue 45): scripts/wheel.sh packs the build above (build/wheel, nothing compiles again) with CLBlast
# inside; scripts/wheel_check.sh installs it beside torch in a fresh venv and runs it from outside the tree.
echo "==> The wheel: scripts/wheel.sh, then scripts/wheel_check.sh"
(cd .. && bash scripts/wheel.sh && bash scripts/wheel_check.sh)
