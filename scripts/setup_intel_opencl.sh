#!/usr/bin/env bash
# Intel's OpenCL CPU runtime (PyPI: intel-opencl-rt, with intel-cmplr-lib-rt for libimf, libsvml, libirng
# and libintlc) under .venv/intel-opencl, the second OpenCL implementation CI tests on (another compiler
# than PoCL's, with fp16 and subgroups). Nothing outside .venv is touched: the loader finds it through
# .venv/intel-opencl/vendors (OCL_ICD_VENDORS, set by scripts/intel_opencl_env.sh), which holds Intel's
# .icd, rewritten to the library's absolute path, beside links to the system's .icd files (PoCL's).
# Run by scripts/setup.sh; quiet when everything is in place.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PREFIX=$ROOT/.venv/intel-opencl
VENDORS=$PREFIX/vendors
# Pinned, so CI tests the runtime it was measured on.
VERSION=2026.2.0
LIBRARY=$PREFIX/lib/libintelocl.so

# Intel ships it for x86-64 only; elsewhere PoCL is the only device (scripts/test_intel.sh says so).
[ "$(uname -m)" = x86_64 ] || exit 0

stamp=$PREFIX/.installed
if [ ! -f "$LIBRARY" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$VERSION" ]; then
  echo "==> Installing Intel's OpenCL CPU runtime $VERSION into .venv/intel-opencl (about 800 MB)"
  rm -rf "$PREFIX"
  # The whole set pip resolves for the two (Intel's tbb, tcmlib and licence package; no torch), pinned and
  # installed with --no-deps, so the resolution cannot reach torch or change with a new release.
  .venv/bin/python -m pip --disable-pip-version-check -q install --no-deps --ignore-installed --prefix "$PREFIX" \
    intel-opencl-rt=="$VERSION" intel-cmplr-lib-rt=="$VERSION" intel-cmplr-lic-rt=="$VERSION" tbb==2023.2.0 tcmlib==1.6.0 \
    2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  [ -f "$LIBRARY" ] || { echo "intel-opencl-rt installed no $LIBRARY" >&2; exit 1; }
  echo "$VERSION" > "$stamp"
fi

# The vendors folder follows the system's .icd files (links), and Intel's .icd names the library's absolute
# path (the package's own names a path on Intel's build machine; the library finds its companions by its
# RUNPATH, $ORIGIN). Only what changed is written, so a process starting meanwhile never sees it empty.
mkdir -p "$VENDORS"
for link in "$VENDORS"/system-*.icd; do
  if [ -L "$link" ] && [ ! -e "$link" ]; then rm -f "$link"; fi
done
for icd in /etc/OpenCL/vendors/*.icd; do
  if [ -e "$icd" ] && [ ! -e "$VENDORS/system-$(basename "$icd")" ]; then ln -s "$icd" "$VENDORS/system-$(basename "$icd")"; fi
done
if [ "$(cat "$VENDORS/intel-opencl-venv.icd" 2>/dev/null)" != "$LIBRARY" ]; then
  echo "$LIBRARY" > "$VENDORS/.intel-opencl-venv.icd.new" && mv "$VENDORS/.intel-opencl-venv.icd.new" "$VENDORS/intel-opencl-venv.icd"
fi
