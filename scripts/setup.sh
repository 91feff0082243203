#!/usr/bin/env bash
# Everything a fresh Debian machine needs, and safe to run again:
# system packages (when missing), .venv with torch==2.13.0, and the build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

PACKAGES=(pocl-opencl-icd ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers clinfo libclblast-dev cmake ninja-build)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> Installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> Creating .venv"
  python3 -m venv .venv
fi
PY=$ROOT/.venv/bin/python
# A stale or broken install must not stop `import torch` during set-up.
export TORCH_DEVICE_BACKEND_AUTOLOAD=0
PIP="$PY -m pip --disable-pip-version-check -q"
# pip's exit status is kept (pipefail); only its notes about index locations that do not exist are dropped.
pip_install() { $PIP install "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }

# torch is pinned exactly: any other spelling would pull a newer CUDA build.
if ! $PY -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
  echo "==> Installing torch==2.13.0 (CPU build)"
  pip_install torch==2.13.0
fi
want=(scikit-build-core pytest pytest-xdist hypothesis tqdm expecttest numpy scikit-learn)
if ! $PY -c "import scikit_build_core, pytest, xdist, hypothesis, tqdm, expecttest, numpy, sklearn" 2>/dev/null; then
  echo "==> Installing build and test dependencies"
  pip_install "${want[@]}"
fi

# The model zoo's HF transformers (test/test_zoo_transformers.py), pure Python, pinned, with only what it
# imports (--no-deps: pip must never resolve torch; its CLI and download extras are left out).
zoo=(transformers==5.23.0 huggingface_hub==2.4.0 tokenizers==0.23.3 safetensors==0.8.0 regex==2026.12.2
     PyYAML==6.0.4 httpx2==2.17.0 httpcore2==2.17.0 anyio==4.16.0 h11==0.16.0 idna==3.21 truststore==0.10.5)
if ! $PY -c "import transformers, sys; sys.exit(transformers.__version__ != '5.23.0')" 2>/dev/null; then
  echo "==> Installing the model zoo's transformers"
  pip_install --no-deps "${zoo[@]}"
fi

# Intel's OpenCL CPU runtime under .venv, the second implementation CI tests on (scripts/test_intel.sh).
bash scripts/setup_intel_opencl.sh

# Rebuild (incrementally, in build/) when the sources are newer than the install.
stamp=.venv/.torch_opencl_installed
if [ ! -f "$stamp" ] || [ -n "$(find CMakeLists.txt pyproject.toml runtime aten fallback kernels_cl python cmake -newer "$stamp" -type f 2>/dev/null | head -1)" ] \
   || ! $PY -c "import torch_opencl" 2>/dev/null; then
  echo "==> Building torch_opencl (first build takes a few minutes)"
  # The stamp gets the time the sources were copied, so an edit made during the build is seen next time.
  touch "$stamp.new"
  # Build from a copy of the tracked and new files only, so binaries of a developer's
  # in-place build (python/torch_opencl/*.so) never reach the wheel.
  src=build/src
  rm -rf "$src" && mkdir -p "$src"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | xargs -0 cp -p --parents -t "$src" 2>/dev/null || true
  else
    tar --exclude=./build --exclude=./.venv -cf - . | tar -xf - -C "$src"
  fi
  # Copies keep their sources' times, so unchanged files are not recompiled; a file edited since the last
  # build began may still be older than the object that build made from its previous text (an edit made
  # while it ran): those copies get the time of now, newer than every object.
  if [ -f "$stamp" ]; then find "$src" -type f -newer "$stamp" -exec touch {} +; fi
  # A failed build stops here (pipefail), rather than leaving an older install in place.
  if ! pip_install --no-build-isolation --no-deps -C build-dir="$ROOT/build/wheel" "$src"; then
    echo "torch_opencl failed to build; the compiler's messages are above." >&2
    exit 1
  fi
  $PY -c "import torch_opencl" || { echo "torch_opencl failed to build or import"; exit 1; }
  mv "$stamp.new" "$stamp"
fi
echo "==> Ready: $(TORCH_DEVICE_BACKEND_AUTOLOAD=1 $PY -c 'import torch, torch_opencl; print("torch", torch.__version__, "| opencl devices:", torch.opencl.device_count() if torch.opencl.is_available() else 0)')"
