"""Tunes GEMM for this OpenCL device and saves the best parameters.

    python -m torch_opencl.tune [--max-seconds 600] [--size 512] [--precision 32] [--direct-seconds 300]

On a device of the GPU kernel class (runtime/kernel_forms.h), the tiles of our own GPU GEMM
(``kernels_cl/gemm_tiled.cl``, which serves mm/bmm there) are searched first: each large and small tile
runs the real products of training-sized shapes, checked against CPU, and the fastest are kept (about
a minute); then CLBlast's ``Xgemm`` over a GPU-shaped space (work-group tiles of 64/128, local memory on,
vector widths 1-4), which serves the products our kernel declines.

Each candidate parameter set for CLBlast's ``Xgemm`` kernel runs through the real
GEMM call on the device, is checked against a CPU reference, and is timed; then
the size from which the tuned (indirect) kernel beats CLBlast's direct one is
chosen (``XGEMM_MIN_INDIRECT_SIZE``). With ``--direct-seconds``, CLBlast's direct
kernel (``XgemmDirect``, which serves the small products) is searched too. The best set is kept per device and driver
as JSON in the cache directory (``TORCH_OPENCL_CACHE_DIR``, default
``~/.cache/torch_opencl``), and the backend applies it at start, over the
built-in defaults. Candidates run in a worker process, so a set that crashes
CLBlast only costs that worker: it is marked failed and a new worker goes on.
``--reset`` removes the saved file.
"""
import argparse
import itertools
import json
import os
import random
import select
import subprocess
import sys
import time

XGEMM_KEYS = ("GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC", "NWG",
              "SA", "SB", "STRM", "STRN", "VWM", "VWN")
NEVER_INDIRECT = 1 << 30


def candidate_space(kernel_class="cpu"):
    """Xgemm sets within the kernel's constraints. CPU-shaped: vectors up to 16 wide (AVX-512 holds 16
    floats), work-group tiles up to 256, local memory or not (SA/SB), strided or contiguous per-thread
    elements (STRM/STRN). GPU-shaped: work-group tiles of 64 or 128, 8x8 or 16x16 work-items, local
    memory on, vectors 1-4 wide. GEMMK=0/KREG=1 only (the notes' crash was GEMMK=1)."""
    if kernel_class == "gpu":
        ranges = ((64, 128), (64, 128), (16, 32), (8, 16), (8, 16), (1, 2, 4), (1, 2, 4), (2, 8), (1,), (1,),
                  (0, 1), (0, 1))
    else:
        ranges = ((32, 64, 128, 256), (32, 64, 128), (32, 64, 128), (4, 8, 16), (4, 8, 16), (4, 8, 16), (2, 4, 8),
                  (2, 8, 16), (0, 1), (0, 1), (0, 1), (0, 1))
    out = []
    for mwg, nwg, kwg, mdimc, ndimc, vwm, vwn, kwi, sa, sb, strm, strn in itertools.product(*ranges):
        mdima, ndimb = mdimc, ndimc
        if mwg % (mdimc * vwm) or nwg % (ndimc * vwn) or kwg % kwi:
            continue
        if kwg % ((mdimc * ndimc) // mdima) or kwg % ((mdimc * ndimc) // ndimb):
            continue
        # at least 4 output vectors per work-item to hide the FMA latency, at most 64 (register pressure)
        accumulators = (mwg // (mdimc * vwm)) * (nwg // ndimc)
        if not 4 <= accumulators <= 64:
            continue
        out.append(dict(GEMMK=0, KREG=1, KWG=kwg, KWI=kwi, MDIMA=mdima, MDIMC=mdimc, MWG=mwg, NDIMB=ndimb,
                        NDIMC=ndimc, NWG=nwg, SA=sa, SB=sb, STRM=strm, STRN=strn, VWM=vwm, VWN=vwn))
    return out


def direct_candidate_space():
    """XgemmDirect (the kernel CLBlast runs below XGEMM_MIN_INDIRECT_SIZE^3 multiply-adds) sets."""
    out = []
    for wgd, mdimcd, ndimcd, vwmd, vwnd, kwid, pada, padb in itertools.product(
            (16, 32, 64), (4, 8, 16), (4, 8, 16), (1, 2, 4, 8, 16), (1, 2, 4, 8, 16), (2, 8, 16), (0, 1), (0, 1)):
        if wgd % (mdimcd * vwmd) or wgd % (ndimcd * vwnd) or wgd % kwid:
            continue
        out.append(dict(WGD=wgd, MDIMCD=mdimcd, NDIMCD=ndimcd, MDIMAD=mdimcd, NDIMBD=ndimcd, KWID=kwid, VWMD=vwmd,
                        VWND=vwnd, PADA=pada, PADB=padb))
    return out


# Our tiled GPU GEMM (kernels_cl/gemm_tiled.cl): tiles of 64 rm x 64 rn, K stages of bk.
TILED_LARGE = ((2, 2, 8), (2, 2, 4), (2, 2, 16), (2, 1, 8), (1, 2, 8))
TILED_SMALL = ((1, 1, 16), (1, 1, 8), (1, 1, 32))
# (m, n, k): square, a transformer's projections and an MLP's layers (the large tile); products with few
# output tiles (the small one).
TILED_LARGE_SHAPES = ((2048, 2048, 2048), (8192, 1152, 384), (8192, 384, 1536))
TILED_SMALL_SHAPES = ((512, 2048, 784), (256, 384, 2048))


def _measure_shapes(torch, shapes, reps):
    """Total median seconds of the products at `shapes` and their largest error against float64 CPU."""
    total, worst = 0.0, 0.0
    for m, n, k in shapes:
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
        ref = a.double() @ b.double()
        da, db = a.to("opencl"), b.to("opencl")
        c = torch.mm(da, db)
        worst = max(worst, ((c.cpu().double() - ref).abs().max() / ref.abs().max()).item())
        times = []
        for _ in range(reps):
            torch.opencl.synchronize()
            t = time.perf_counter()
            torch.mm(da, db)
            torch.opencl.synchronize()
            times.append(time.perf_counter() - t)
        times.sort()
        total += times[len(times) // 2]
    return total, worst


# --- worker: runs in its own process, one JSON request per line on stdin.

def _measure(torch, n, dtype, reps):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g, dtype=dtype)
    b = torch.randn(n, n, generator=g, dtype=dtype)
    ref = (a.double() @ b.double())
    da, db = a.to("opencl"), b.to("opencl")
    c = torch.mm(da, db)  # compiles
    err = ((c.cpu().double() - ref).abs().max() / ref.abs().max()).item()
    times = []
    for _ in range(reps):
        torch.opencl.synchronize()
        t = time.perf_counter()
        torch.mm(da, db)
        torch.opencl.synchronize()
        times.append(time.perf_counter() - t)
    times.sort()
    return 2 * n ** 3 / times[len(times) // 2] / 1e9, err


def worker():
    import torch
    import torch_opencl  # noqa: F401
    from torch_opencl import _C
    _C._small_gemm_limit(0)  # time CLBlast: our small-GEMM kernel would otherwise serve these sizes
    for line in sys.stdin:
        req = json.loads(line)
        dtype = torch.float32 if req["bits"] == 32 else torch.float64
        if "tile" in req:  # our tiled GEMM with one tile forced
            try:
                _C._set_tiled_gemm_enabled(True)
                _C._override_tiled_gemm_plan((*req["tile"], 1))
                seconds, err = _measure_shapes(torch, req["shapes"], req["reps"])
                reply = {"seconds": seconds, "error": err}
            except Exception as e:
                reply = {"failed": str(e).splitlines()[0][:200]}
            finally:
                _C._override_tiled_gemm_plan(None)
            print(json.dumps(reply), flush=True)
            continue
        _C._set_tiled_gemm_enabled(False)  # time CLBlast
        try:
            for kernel, params in req["sets"].items():
                _C._gemm_override(req["device"], kernel, req["bits"], {k: int(v) for k, v in params.items()})
            gflops, err = _measure(torch, req["n"], dtype, req["reps"])
            reply = {"gflops": gflops, "error": err}
        except Exception as e:  # a refused set or a failed build: reported, the worker goes on
            reply = {"failed": str(e).splitlines()[0][:200]}
        print(json.dumps(reply), flush=True)


class Pool:
    """One worker process; restarted when a candidate takes it down."""

    def __init__(self, device):
        self.device, self.proc = device, None

    def run(self, request, timeout):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-m", "torch_opencl.tune", "--worker"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        request = dict(request, device=self.device)
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            return {"failed": "crashed or timed out"}
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def tune_tiled(pool, reps=5, tolerance=1e-4, progress=True, large=TILED_LARGE, small=TILED_SMALL,
               large_shapes=TILED_LARGE_SHAPES, small_shapes=TILED_SMALL_SHAPES):
    """The fastest accurate large and small tiles of our tiled GEMM: {"LARGE_RM": .., ..., "SMALL_BK": ..},
    the timings of every candidate, and the seconds the defaults (the first of each list) took."""
    from tqdm import tqdm
    chosen, table = {}, []
    for label, tiles, shapes in (("LARGE", large, large_shapes), ("SMALL", small, small_shapes)):
        best = None
        for tile in tqdm(tiles, desc=f"tiled GEMM, {label.lower()} tile", disable=not progress):
            r = pool.run({"bits": 32, "tile": list(tile), "shapes": [list(s) for s in shapes], "reps": reps},
                         timeout=300)
            ok = "seconds" in r and r["error"] <= tolerance
            table.append({"tile": label.lower(), "rm_rn_bk": list(tile), **r, "ok": ok})
            if ok and (best is None or r["seconds"] < best[1]):
                best = (tile, r["seconds"])
        if best is None:
            raise RuntimeError(f"no {label.lower()} tile of the tiled GEMM passed; nothing saved")
        for key, value in zip(("RM", "RN", "BK"), best[0]):
            chosen[f"{label}_{key}"] = value
    return chosen, table


def tune(device=0, bits=32, n=512, max_seconds=600.0, max_candidates=None, seed=0, tolerance=None, progress=True,
         save=True, switch_sizes=(64, 128, 256, 512, 1024), direct_seconds=0.0, direct_size=192):
    import torch
    import torch_opencl  # noqa: F401
    from torch_opencl import _C
    path = _C._gemm_tuning_path(device)
    if save and not path:
        raise RuntimeError("the cache is disabled (TORCH_OPENCL_CACHE=0): nowhere to save tuned parameters")
    tolerance = tolerance or (1e-4 if bits == 32 else 1e-10)
    start = time.monotonic()
    builtin = _C._gemm_builtin_parameters(device, bits)
    kernel_class = _C._device_properties(device)["kernel_class"]
    tiled, tiled_table = None, []
    pool = Pool(device)
    if kernel_class == "gpu" and bits == 32:
        try:
            tiled, tiled_table = tune_tiled(pool, tolerance=tolerance, progress=progress)
        except BaseException:
            pool.close()
            raise
    candidates = candidate_space(kernel_class)
    random.Random(seed).shuffle(candidates)
    if "Xgemm" in builtin:
        candidates.insert(0, dict(builtin["Xgemm"]))
    if max_candidates is not None:
        candidates = candidates[:max_candidates]
    best, results = None, []
    try:
        from tqdm import tqdm
        bar = tqdm(candidates, desc=f"Xgemm {bits}-bit n={n}", disable=not progress)
        for params in bar:
            left = max_seconds - (time.monotonic() - start)
            if left <= 0:
                break
            # The indirect (Xgemm) kernel for every size while its parameters are measured.
            r = pool.run({"bits": bits, "n": n, "reps": 3,
                          "sets": {"Xgemm": params, "GemmRoutine": {"XGEMM_MIN_INDIRECT_SIZE": 1}}},
                         timeout=max(left, 1))
            ok = "gflops" in r and r["error"] <= tolerance
            results.append({"params": params, **r, "ok": ok})
            if ok and (best is None or r["gflops"] > best["gflops"]):
                best = {"params": params, "gflops": r["gflops"]}
            if best:
                bar.set_postfix(best=f"{best['gflops']:.1f} GFLOP/s")
        if best is None:
            raise RuntimeError(f"no candidate passed within {max_seconds} s (each new one compiles first); nothing saved")
        # The direct kernel (small products), timed with the indirect one switched off, in its own budget.
        direct = _search_direct(pool, bits, builtin, direct_seconds, direct_size, max_candidates, seed, tolerance,
                                progress, results)
        # From which size the tuned indirect kernel beats the direct one (unmeasured when out of time:
        # or when the direct kernel wins at every size tried: then the built-in or CLBlast's own value stays).
        switch = None
        for size in switch_sizes:
            if time.monotonic() - start > max_seconds:
                break
            timing = {}
            for label, value in (("indirect", 1), ("direct", NEVER_INDIRECT)):
                sets = {"Xgemm": best["params"], "GemmRoutine": {"XGEMM_MIN_INDIRECT_SIZE": value}}
                if direct:
                    sets["XgemmDirect"] = direct["params"]
                r = pool.run({"bits": bits, "n": size, "reps": 5, "sets": sets}, timeout=300)
                timing[label] = r.get("gflops", 0.0)
            if timing["indirect"] >= timing["direct"]:
                switch = size
                break
    finally:
        pool.close()
    chosen = {"Xgemm": best["params"]}
    if tiled:
        chosen["TiledGemm"] = tiled
    if direct:
        chosen["XgemmDirect"] = direct["params"]
    if switch is not None:
        chosen["GemmRoutine"] = {"XGEMM_MIN_INDIRECT_SIZE": switch}
    props = _C._device_properties(device)
    if save:
        saved = {}
        if os.path.exists(path):
            try:
                with open(path) as f:
                    saved = json.load(f)
            except ValueError:
                saved = {}
        saved.update(device=props["name"], platform=props["platform"], driver=props["driver_version"],
                     clblast=_C._clblast_version())
        saved.setdefault("parameters", {})[str(bits)] = chosen
        saved.setdefault("gflops", {})[str(bits)] = {"n": n, "best": best["gflops"]}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(saved, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    return {"path": path, "parameters": chosen, "gflops": best["gflops"], "results": results, "tiled": tiled_table}


def _search_direct(pool, bits, builtin, max_seconds, n, max_candidates, seed, tolerance, progress, results):
    """The fastest XgemmDirect set at n within max_seconds (None when none passed or no time was given)."""
    if max_seconds <= 0:
        return None
    start = time.monotonic()
    candidates = direct_candidate_space()
    random.Random(seed).shuffle(candidates)
    if "XgemmDirect" in builtin:
        candidates.insert(0, dict(builtin["XgemmDirect"]))
    if max_candidates is not None:
        candidates = candidates[:max_candidates]
    best = None
    from tqdm import tqdm
    bar = tqdm(candidates, desc=f"XgemmDirect {bits}-bit n={n}", disable=not progress)
    for params in bar:
        left = max_seconds - (time.monotonic() - start)
        if left <= 0:
            break
        r = pool.run({"bits": bits, "n": n, "reps": 5,
                      "sets": {"XgemmDirect": params, "GemmRoutine": {"XGEMM_MIN_INDIRECT_SIZE": NEVER_INDIRECT}}},
                     timeout=max(left, 1))
        ok = "gflops" in r and r["error"] <= tolerance
        results.append({"kernel": "XgemmDirect", "params": params, **r, "ok": ok})
        if ok and (best is None or r["gflops"] > best["gflops"]):
            best = {"params": params, "gflops": r["gflops"]}
        if best:
            bar.set_postfix(best=f"{best['gflops']:.1f} GFLOP/s")
    return best


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m torch_opencl.tune", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--precision", type=int, choices=(32, 64), default=32)
    p.add_argument("--size", type=int, default=512, help="matrix size the candidates are timed at")
    p.add_argument("--max-seconds", type=float, default=600.0, help="time budget for the candidate search")
    p.add_argument("--direct-seconds", type=float, default=0.0,
                   help="time budget for the direct kernel's search (used for small products; 0: not tuned)")
    p.add_argument("--direct-size", type=int, default=192, help="matrix size the direct kernel is timed at")
    p.add_argument("--max-candidates", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reset", action="store_true", help="remove the saved parameters and exit")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker()
    from torch_opencl import _C
    if args.reset:
        path = _C._gemm_tuning_path(args.device)
        if path and os.path.exists(path):
            os.remove(path)
            print(f"removed {path}")
        else:
            print("no saved parameters")
        return
    r = tune(args.device, args.precision, args.size, args.max_seconds, args.max_candidates, args.seed,
             direct_seconds=args.direct_seconds, direct_size=args.direct_size)
    failed = sum(1 for x in r["results"] if not x["ok"])  # both kernels' candidates
    for row in r["tiled"]:
        took = f"{row['seconds'] * 1e3:.2f} ms" if "seconds" in row else row.get("failed", "")
        print(f"tiled GEMM {row['tile']} tile rm,rn,bk={row['rm_rn_bk']}: {took}{'' if row['ok'] else ' (rejected)'}")
    print(f"best {r['gflops']:.1f} GFLOP/s at n={args.size} over {len(r['results'])} candidates "
          f"({failed} failed or inaccurate)")
    print(json.dumps(r["parameters"], sort_keys=True))
    print(f"saved to {r['path']}")


if __name__ == "__main__":
    main()
