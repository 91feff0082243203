"""``python -m torch_opencl``: a report of the OpenCL set-up as torch-opencl sees it.

Prints the versions, every platform and device, which devices are selected and
why, the key properties of each selected device, the program cache, CLBlast,
the fallback mode and whether autoload is on. A selection variable that names
nothing prints the error (which lists what exists) and exits with status 1.

``python -m torch_opencl warmup`` compiles the kernels training commonly needs ahead of time
(torch_opencl/warmup.py). ``python -m torch_opencl --help`` lists the commands.
"""
import os
import sys


def _bytes(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.2f} {unit}"
    return f"{n} bytes"


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def _selection_env() -> str:
    names = ("TORCH_OPENCL_PLATFORM", "TORCH_OPENCL_DEVICE_TYPE", "TORCH_OPENCL_VISIBLE_DEVICES")
    shown = [f"{name}={os.environ[name]!r}" for name in names if os.environ.get(name)]
    return ", ".join(shown) if shown else "(none set)"


def main() -> int:
    import torch

    import torch_opencl
    from torch_opencl import _C
    from torch_opencl_autoload import accelerator_build

    out = []
    out.append(f"torch:          {torch.__version__}")
    out.append(f"torch_opencl:   {torch_opencl.__version__}")
    out.append(f"CLBlast:        {_C._clblast_version()}")
    headers = _C._opencl_headers_version()
    out.append(f"OpenCL headers: {headers // 100}.{headers % 100 // 10} (CL_TARGET_OPENCL_VERSION={headers})")

    platforms = _C._platforms()
    out.append("")
    if not platforms:
        out.append("Platforms:      none (no OpenCL ICD is installed or none loads)")
    else:
        out.append(f"Platforms ({len(platforms)}):")
        for p in platforms:
            out.append(f"  platform {p['index']}: {p['name']} (vendor: {p['vendor']})")
            out.append(f"    version: {p['version']}")
            if not p["devices"]:
                out.append("    (no devices)")
            for d in p["devices"]:
                out.append(f"    device {d['index']}: {d['name']} [{d['type']}], driver {d['driver_version']}")

    out.append("")
    out.append(f"Selection variables: {_selection_env()}")
    try:
        count = _C._device_count()
        reason = _C._selection_reason()
    except RuntimeError as exc:
        print("\n".join(out))
        print(f"\nError: the OpenCL device selection failed:\n{exc}", file=sys.stderr)
        return 1

    if count == 0:
        out.append(f"OpenCL is not available: {reason}.")
    else:
        out.append(f"Selected {count} device(s): {reason}")
        for index in range(count):
            p = _C._device_properties(index)
            out.append(f"  opencl:{index}: {p['name']}")
            out.append(f"    vendor:            {p['vendor']}")
            out.append(f"    type:              {p['type']}")
            out.append(f"    platform:          {p['platform']} (platform {p['platform_index']}, "
                       f"device {p['index_in_platform']})")
            out.append(f"    OpenCL version:    {p['device_version']}")
            out.append(f"    OpenCL C version:  {p['opencl_c_version']}")
            out.append(f"    driver:            {p['driver_version']}")
            out.append(f"    global memory:     {_bytes(p['total_memory'])}")
            out.append(f"    max allocation:    {_bytes(p['max_alloc_size'])}")
            out.append(f"    local memory:      {_bytes(p['local_memory'])}")
            out.append(f"    compute units:     {p['compute_units']}")
            out.append(f"    max clock:         {p['max_clock_mhz']} MHz")
            out.append(f"    max work group:    {p['max_work_group_size']}")
            out.append(f"    fp64:              {_yes_no(p['fp64'])}")
            out.append(f"    fp16:              {_yes_no(p['fp16'])}")
            simd = p['simd_width'] or "unknown"
            out.append(f"    SIMD width:        {simd}")
            out.append(f"    kernel class:      {p['kernel_class']} ({p['kernel_class_reason']}; "
                       f"TORCH_OPENCL_KERNEL_CLASS=cpu|gpu forces one)")
            math = "own (kernels_cl/float_math.cl)" if p["own_float_math"] else "the driver's"
            out.append(f"    float log, pow:    {math} (TORCH_OPENCL_OWN_FLOAT_MATH=0|1 chooses)")

    out.append("")
    cache_dir = _C._cache_dir()
    if cache_dir and count > 0:
        location = _C._program_cache_location(0) or "none kept between runs (PoCL's cache directory cannot be used)"
        out.append(f"Program cache:  {location}")
    elif cache_dir:
        out.append(f"Program cache:  {cache_dir}")
    else:
        out.append("Program cache:  disk cache disabled (TORCH_OPENCL_CACHE=0); programs are kept in memory only")
    out.append(f"Fallback mode:  {torch.opencl.fallback_mode()} (TORCH_OPENCL_FALLBACK=warn|silent|error)")
    autoload = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "0"
    build = accelerator_build()
    if build:
        out.append(f"Autoload:       off: torch is a {build} build, where a registered opencl backend breaks "
                   f"CUDA's backward (PyTorch issue 161129); `import torch_opencl` loads it explicitly")
    else:
        out.append(f"Autoload:       {'on' if autoload else 'off'} "
                   f"(import torch loads torch_opencl unless TORCH_DEVICE_BACKEND_AUTOLOAD=0)")
    print("\n".join(out))
    return 0


USAGE = """usage: python -m torch_opencl [COMMAND] [ARGS]

commands:
  (none)         report the OpenCL set-up as torch-opencl sees it: versions, platforms and devices,
                 which are selected and why (TORCH_OPENCL_PLATFORM, TORCH_OPENCL_DEVICE_TYPE,
                 TORCH_OPENCL_VISIBLE_DEVICES), their properties, the program cache, CLBlast, the
                 fallback mode and autoload; exits with status 1 where the selection fails
  warmup [ARGS]  compile the kernels training commonly needs ahead of time, into the program cache
                 (python -m torch_opencl warmup --help lists its options)
  -h, --help     this text

related modules:
  python -m torch_opencl.tune --help   tune GEMM for this device and save the parameters
"""


def dispatch(argv) -> int:
    if not argv:
        return main()
    if argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    if argv[0] == "warmup":
        from .warmup import main as warmup_main

        return warmup_main(argv[1:])
    print(f"python -m torch_opencl: unknown command {argv[0]!r}\n\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(dispatch(sys.argv[1:]))
