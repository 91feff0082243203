# Sourced (`. scripts/intel_opencl_env.sh`): this shell's processes then use Intel's OpenCL CPU runtime,
# installed under .venv by scripts/setup_intel_opencl.sh, instead of PoCL. The OpenCL loader reads
# .venv/intel-opencl/vendors instead of /etc/OpenCL/vendors (the system's .icd files are linked there), and
# TORCH_OPENCL_PLATFORM picks Intel's platform. No LD_LIBRARY_PATH: the runtime finds its own libraries
# (RUNPATH $ORIGIN), and the prefix's lib would put Intel's copy of the loader, libOpenCL.so.1, before the system's.
_tocl_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -f "$_tocl_root/.venv/intel-opencl/vendors/intel-opencl-venv.icd" ]; then
  export OCL_ICD_VENDORS=$_tocl_root/.venv/intel-opencl/vendors
  export TORCH_OPENCL_PLATFORM=Intel
else
  echo "Intel's OpenCL runtime is not installed under .venv (scripts/setup.sh installs it on x86-64)" >&2
  unset _tocl_root
  return 1 2>/dev/null || exit 1
fi
unset _tocl_root
