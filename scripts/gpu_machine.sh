#!/usr/bin/env bash
# Set-up on a GPU machine that has a driver and its own torch but no package access (the project's
# lent H100): `source scripts/gpu_machine.sh DIR`, where DIR holds a copy of ../shared/gpu (the OpenCL
# loader, headers and CLBlast as Debian packages, and opencl-offline-setup.sh), optionally with
# DIR/wheels/*.whl for missing pure-Python test dependencies. Unpacks the packages under a prefix,
# registers NVIDIA's ICD, and builds and installs torch-opencl into the machine's python3 against its
# torch, with the system compiler (a compiler wrapper that links libstdc++ statically crashes the
# extension; the build checks it). Afterwards TORCH_OPENCL_PLATFORM=nvidia is exported when NVIDIA's
# platform answers.
gpu_dir="$(cd "${1:?usage: source scripts/gpu_machine.sh DIR-with-a-copy-of-shared/gpu}" && pwd)"
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
