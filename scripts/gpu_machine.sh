#!/usr/bin/env bash
# Set-up on a GPU machine that has a driver and its own torch but no package access:
# `source scripts/gpu_machine.sh DIR`, where DIR holds the OpenCL ICD loader, headers and CLBlast as Debian
# packages and opencl-offline-setup.sh, which unpacks them under a prefix ($OPENCL_PREFIX) and registers
# the vendor's ICD; optionally DIR/wheels/*.whl, missing pure-Python test dependencies. Then builds and
# installs torch-opencl into the machine's python3 against its torch, with the system compiler (a compiler
# wrapper that links libstdc++ statically crashes the extension; the build checks it). Afterwards
# TORCH_OPENCL_PLATFORM=nvidia is exported when NVIDIA's platform answers. scripts/gpu_checks.sh runs this
# when GPU_OFFLINE_DIR is set.
gpu_dir="$(cd "${1:?usage: source scripts/gpu_machine.sh DIR-with-the-offline-packages}" && pwd)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$gpu_dir/opencl-offline-setup.sh"
if compgen -G "$gpu_dir/wheels/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile "$gpu_dir"/wheels/*.whl
fi
python3 -m pip install -q --no-build-isolation --no-deps --no-index \
  -C cmake.define.CMAKE_PREFIX_PATH="$OPENCL_PREFIX/usr" -C build-dir="$repo/build/gpu" "$repo" \
  || { echo "torch_opencl failed to build"; return 1 2>/dev/null || exit 1; }
(cd / && python3 -m torch_opencl) || true
