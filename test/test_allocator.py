"""The caching allocator: reuse, exact statistics, split and merge, empty_cache,
out-of-memory, the memory limit, threads, and the torch.opencl / torch.accelerator
memory API.

Exact checks go through the raw helpers (_C._raw_alloc / _C._raw_free), which
allocate on the current stream of a device exactly as tensors do, so no tensor
temporaries muddy the figures. Every figure is a delta against the state at the
start of the check, so tensors other tests keep alive do not matter.
"""

import gc
import random
import threading

import pytest
import torch

import torch_opencl  # noqa: F401
from torch_opencl import _C

pytestmark = pytest.mark.skipif(not torch.opencl.is_available(), reason="no OpenCL device")

DEV = 0
KiB = 1 << 10
MiB = 1 << 20
SMALL_SEGMENT = 2 * MiB
LARGE_SEGMENT = 20 * MiB


def stats():
    return _C._memory_stats(DEV)


def delta(after, before, key):
    return after[key] - before[key]


def round_up(n):
    return max(512, (n + 511) // 512 * 512)


@pytest.fixture(scope="module", autouse=True)
def collect_garbage():
    gc.collect()  # tensors that earlier tests left to the collector (~0.2 s, so once)
    yield


@pytest.fixture(autouse=True)
def clean():
    torch.opencl.synchronize()
    torch.opencl.empty_cache()
    yield
    torch.opencl.empty_cache()


@pytest.mark.parametrize("nbytes", [1, 511, 512, 513, 1000, 4096, 100_000, MiB])
def test_statistics_are_exact(nbytes):
    s0 = stats()
    ptr = _C._raw_alloc(DEV, nbytes)
    s1 = stats()
    size = round_up(nbytes)
    for pool in ("all", "small_pool"):
        assert delta(s1, s0, f"allocated_bytes.{pool}.current") == size
        assert delta(s1, s0, f"active_bytes.{pool}.current") == size
        assert delta(s1, s0, f"requested_bytes.{pool}.current") == nbytes
        assert delta(s1, s0, f"allocation.{pool}.current") == 1
        assert delta(s1, s0, f"allocation.{pool}.allocated") == 1
        assert delta(s1, s0, f"active.{pool}.current") == 1
    assert delta(s1, s0, "allocated_bytes.large_pool.current") == 0
    assert s1["allocated_bytes.all.peak"] >= s1["allocated_bytes.all.current"]
    _C._raw_free(DEV, ptr)
    s2 = stats()
    for key in ("allocated_bytes.all.current", "active_bytes.all.current", "requested_bytes.all.current",
                "allocation.all.current", "active.all.current"):
        assert s2[key] == s0[key], key
    assert delta(s2, s0, "allocated_bytes.all.freed") == size
    assert delta(s2, s0, "allocation.all.freed") == 1


def test_large_request_statistics_are_exact():
    nbytes = 3 * MiB + 1
    s0 = stats()
    ptr = _C._raw_alloc(DEV, nbytes)
    s1 = stats()
    assert delta(s1, s0, "allocated_bytes.large_pool.current") == round_up(nbytes)
    assert delta(s1, s0, "allocated_bytes.small_pool.current") == 0
    assert delta(s1, s0, "requested_bytes.large_pool.current") == nbytes
    _C._raw_free(DEV, ptr)
    assert stats()["allocated_bytes.all.current"] == s0["allocated_bytes.all.current"]


def test_zero_bytes_is_a_null_pointer_and_counts_nothing():
    s0 = stats()
    assert _C._raw_alloc(DEV, 0) == 0
    _C._raw_free(DEV, 0)
    s1 = stats()
    assert s1["allocation.all.allocated"] == s0["allocation.all.allocated"]


def test_freed_size_is_reused_without_a_new_buffer():
    nbytes = 300 * KiB
    ptr = _C._raw_alloc(DEV, nbytes)
    _C._raw_free(DEV, ptr)
    s0 = stats()
    again = _C._raw_alloc(DEV, nbytes)
    s1 = stats()
    assert delta(s1, s0, "num_device_alloc") == 0
    assert delta(s1, s0, "cache_hits") == 1
    assert delta(s1, s0, "cache_misses") == 0
    assert delta(s1, s0, "reserved_bytes.all.current") == 0
    _C._raw_free(DEV, again)


@pytest.mark.parametrize("nbytes", [8 * MiB, 12 * MiB], ids=["8MiB_in_shared_segment", "12MiB_own_segment"])
def test_freed_large_block_is_reused(nbytes):
    # An 8 MiB request lives in a 20 MiB segment; once freed, the merged 20 MiB block must
    # serve the next 8 MiB request rather than a second segment being opened.
    _C._empty_cache(DEV)
    ptr = _C._raw_alloc(DEV, nbytes)
    _C._raw_free(DEV, ptr)
    s0 = stats()
    again = _C._raw_alloc(DEV, nbytes)
    s1 = stats()
    assert delta(s1, s0, "num_device_alloc") == 0
    assert delta(s1, s0, "reserved_bytes.all.current") == 0
    _C._raw_free(DEV, again)


def test_tensor_of_a_freed_size_is_reused_without_a_new_buffer():
    x = torch.empty(64 * KiB, dtype=torch.uint8, device="opencl")
    del x
    s0 = stats()
    y = torch.empty(64 * KiB, dtype=torch.uint8, device="opencl")
    s1 = stats()
    assert delta(s1, s0, "num_device_alloc") == 0
    assert delta(s1, s0, "cache_hits") == 1
    assert delta(s1, s0, "allocated_bytes.all.current") == 64 * KiB
    del y


def allocate_until_new_segment(nbytes, limit=64):
    """Allocates `nbytes` blocks until one needs a new segment; returns (blocks, stats before
    that allocation, stats after it). The last block starts a fresh segment."""
    blocks = []
    for _ in range(limit):
        before = stats()
        blocks.append(_C._raw_alloc(DEV, nbytes))
        after = stats()
        if delta(after, before, "cache_misses"):
            return blocks, before, after
    raise AssertionError(f"{limit} allocations of {nbytes} bytes never needed a new segment")


def free_all(blocks):
    for ptr in blocks:
        _C._raw_free(DEV, ptr)


@pytest.mark.parametrize(
    "nbytes,pool,segment",
    [(100 * KiB, "small_pool", SMALL_SEGMENT), (MiB, "small_pool", SMALL_SEGMENT),
     (MiB + 1, "large_pool", LARGE_SEGMENT), (5 * MiB, "large_pool", LARGE_SEGMENT)],
)
def test_reserved_grows_by_one_segment(nbytes, pool, segment):
    blocks, before, after = allocate_until_new_segment(nbytes)
    try:
        assert delta(after, before, "num_device_alloc") == 1
        assert delta(after, before, "reserved_bytes.all.current") == segment
        assert delta(after, before, f"reserved_bytes.{pool}.current") == segment
        assert delta(after, before, f"segment.{pool}.current") == 1
        assert delta(after, before, "allocated_bytes.all.current") == round_up(nbytes)
    finally:
        free_all(blocks)


def test_huge_request_gets_a_segment_of_its_own_rounded_to_2_MiB():
    nbytes = 12 * MiB + 1
    blocks, before, after = allocate_until_new_segment(nbytes)
    try:
        assert delta(after, before, "reserved_bytes.large_pool.current") == 14 * MiB
    finally:
        free_all(blocks)


def test_split_and_merge():
    reserved0 = stats()["reserved_bytes.all.current"]
    device_free0 = stats()["num_device_free"]
    # Fill the small pool with 1 MiB blocks until one starts a fresh 2 MiB segment: that
    # block (first) and the free 1 MiB rest of its segment are now the only 1 MiB room.
    fillers, before, after = allocate_until_new_segment(MiB)
    first = fillers.pop()
    new_segments = stats()["segment.all.allocated"]
    assert delta(after, before, "inactive_split.small_pool.current") == 1  # the free rest
    assert delta(after, before, "inactive_split_bytes.small_pool.current") == MiB

    # The second block comes from the same segment, right after the first.
    s0 = stats()
    second = _C._raw_alloc(DEV, MiB)
    s1 = stats()
    assert second == first + MiB
    assert delta(s1, s0, "num_device_alloc") == 0 and delta(s1, s0, "cache_hits") == 1
    assert delta(s1, s0, "inactive_split.small_pool.current") == -1
    assert delta(s1, s0, "inactive_split_bytes.small_pool.current") == -MiB

    # Free the first: a free block of a split segment (its neighbour is in use).
    _C._raw_free(DEV, first)
    s2 = stats()
    assert delta(s2, s1, "inactive_split.small_pool.current") == 1
    assert delta(s2, s1, "inactive_split_bytes.small_pool.current") == MiB

    # Free the second: it merges with the first into one free block spanning the segment.
    _C._raw_free(DEV, second)
    s3 = stats()
    assert delta(s3, s2, "inactive_split.small_pool.current") == -1
    assert delta(s3, s2, "inactive_split_bytes.small_pool.current") == -MiB
    assert s3["reserved_bytes.all.current"] == after["reserved_bytes.all.current"]

    # The merged block serves two 1 MiB requests again, at the same addresses, without a new buffer.
    again = [_C._raw_alloc(DEV, MiB), _C._raw_alloc(DEV, MiB)]
    assert sorted(again) == [first, first + MiB]
    assert stats()["num_device_alloc"] == s3["num_device_alloc"]
    free_all(again)

    # empty_cache releases the whole segment (and those of the fillers): reserved is back.
    free_all(fillers)
    torch.opencl.empty_cache()
    s4 = stats()
    assert s4["reserved_bytes.all.current"] == reserved0
    assert s4["num_device_free"] - device_free0 >= 1
    assert s4["segment.all.freed"] >= 1
    assert new_segments >= 1


def test_empty_cache_returns_reserved_memory():
    s0 = stats()
    x = torch.empty(6 * MiB, dtype=torch.uint8, device="opencl")
    s1 = stats()
    assert s1["reserved_bytes.all.current"] > s0["reserved_bytes.all.current"]
    del x
    s2 = stats()
    assert s2["reserved_bytes.all.current"] == s1["reserved_bytes.all.current"]  # cached, not released
    torch.opencl.empty_cache()
    s3 = stats()
    assert s3["reserved_bytes.all.current"] == s0["reserved_bytes.all.current"]
    assert s3["num_device_free"] > s2["num_device_free"]


def test_freeing_an_unknown_address_is_an_error():
    with pytest.raises(RuntimeError, match="did not hand out"):
        _C._raw_free(DEV, 12345)


def device_still_works():
    a = torch.arange(10, dtype=torch.float32)
    x = a.to("opencl")
    x.fill_(3.0)
    y = torch.ones(5, device="opencl")
    torch.opencl.synchronize()
    return torch.equal(x.cpu(), torch.full((10,), 3.0)) and torch.equal(y.cpu(), torch.ones(5))


def test_out_of_memory_beyond_the_largest_buffer():
    props = torch.opencl.get_device_properties(DEV)
    # The next whole GiB above the device's largest buffer: refused without touching memory.
    gib = props.max_alloc_size // (1 << 30) + 1
    request = gib << 30
    assert request > props.max_alloc_size
    s0 = stats()
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(request, dtype=torch.uint8, device="opencl")
    message = str(info.value)
    assert f"tried to allocate {gib}.00 GiB" in message
    assert "largest single buffer" in message
    assert "allocated by tensors" in message and "reserved by the caching allocator" in message
    s1 = stats()
    assert delta(s1, s0, "num_ooms") == 1
    assert delta(s1, s0, "allocated_bytes.all.current") == 0
    assert device_still_works()


def test_memory_limit():
    s0 = stats()
    limit = s0["reserved_bytes.all.current"] + 4 * MiB
    _C._set_memory_limit(DEV, limit)
    try:
        small = torch.empty(1000, device="opencl")  # fits: at most one 2 MiB segment
        with pytest.raises(torch.OutOfMemoryError, match=r"tried to allocate 8\.00 MiB.*limit"):
            torch.empty(8 * MiB, dtype=torch.uint8, device="opencl")
        assert stats()["reserved_bytes.all.current"] <= limit
        del small
    finally:
        _C._set_memory_limit(DEV, 0)
    assert delta(stats(), s0, "num_ooms") == 1
    ok = torch.empty(8 * MiB, dtype=torch.uint8, device="opencl")  # the limit is gone
    assert ok.numel() == 8 * MiB
    del ok
    assert device_still_works()


def test_out_of_memory_empties_the_cache_and_retries():
    cached = torch.empty(12 * MiB, dtype=torch.uint8, device="opencl")  # a 12 MiB segment of its own
    del cached  # back to the cache: still reserved
    s0 = stats()
    # 14 MiB fits under the limit only once the cached 12 MiB segment is given back to the driver.
    _C._set_memory_limit(DEV, s0["reserved_bytes.all.current"] + 4 * MiB)
    try:
        big = torch.full((14 * MiB,), 3, dtype=torch.uint8, device="opencl")
    finally:
        _C._set_memory_limit(DEV, 0)
    s1 = stats()
    assert delta(s1, s0, "num_alloc_retries") == 1
    assert delta(s1, s0, "num_ooms") == 0
    assert delta(s1, s0, "num_device_free") >= 1  # the cached segment
    assert delta(s1, s0, "reserved_bytes.all.current") == 2 * MiB  # -12 MiB, +14 MiB
    assert int(big[-1]) == 3 and big.numel() == 14 * MiB
    del big
    assert device_still_works()


def test_threads_allocating_and_freeing_at_once():
    start = stats()
    live = {}
    lock = threading.Lock()
    errors = []

    def worker(seed):
        rng = random.Random(seed)
        mine = []
        try:
            for _ in range(500):
                if mine and (len(mine) > 8 or rng.random() < 0.5):
                    ptr, size = mine.pop(rng.randrange(len(mine)))
                    with lock:
                        del live[ptr]
                    _C._raw_free(DEV, ptr)
                else:
                    size = rng.choice([rng.randint(1, 4096), rng.randint(1, MiB), rng.randint(MiB, 3 * MiB)])
                    ptr = _C._raw_alloc(DEV, size)
                    with lock:
                        # No live block may overlap another.
                        for other, other_size in live.items():
                            assert ptr + size <= other or other + other_size <= ptr, "overlapping blocks"
                        live[ptr] = size
                    mine.append((ptr, size))
            for ptr, _ in mine:
                with lock:
                    del live[ptr]
                _C._raw_free(DEV, ptr)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    end = stats()
    for key in ("allocated_bytes.all.current", "allocation.all.current", "active.all.current",
                "requested_bytes.all.current", "active_bytes.all.current"):
        assert end[key] == start[key], key
    assert delta(end, start, "allocation.all.allocated") == delta(end, start, "allocation.all.freed")
    assert delta(end, start, "allocation.all.allocated") > 1000
    torch.opencl.empty_cache()
    assert stats()["reserved_bytes.all.current"] == start["reserved_bytes.all.current"]


# --- torch.opencl and torch.accelerator memory functions


def test_torch_opencl_memory_api():
    base = torch.opencl.memory_allocated()
    assert base == stats()["allocated_bytes.all.current"]
    x = torch.empty(MiB // 4, dtype=torch.float32, device="opencl")  # 1 MiB
    assert torch.opencl.memory_allocated() == base + MiB
    assert torch.opencl.memory_allocated("opencl:0") == base + MiB
    assert torch.opencl.memory_allocated(torch.device("opencl", 0)) == base + MiB
    assert torch.opencl.max_memory_allocated() >= base + MiB
    assert torch.opencl.memory_reserved() >= torch.opencl.memory_allocated()
    assert torch.opencl.max_memory_reserved() >= torch.opencl.memory_reserved()
    del x
    assert torch.opencl.memory_allocated() == base
    assert torch.opencl.max_memory_allocated() >= base + MiB
    torch.opencl.reset_peak_memory_stats()
    assert torch.opencl.max_memory_allocated() == base
    s = torch.opencl.memory_stats()
    assert s["allocated_bytes.all.current"] == base
    assert list(s) == sorted(s)
    torch.opencl.reset_accumulated_memory_stats()
    s = torch.opencl.memory_stats()
    assert s["allocation.all.allocated"] == 0 and s["num_device_alloc"] == 0
    summary = torch.opencl.memory_summary()
    assert "Allocated memory" in summary and "Reserved memory" in summary
    assert torch.opencl.get_device_name(0) in summary
    with pytest.raises(RuntimeError, match="Invalid device"):
        torch.opencl.memory_allocated(5)


def test_torch_accelerator_memory_api():
    assert torch.accelerator.current_accelerator() == torch.device("opencl")
    base = torch.accelerator.memory_allocated()
    assert base == torch.opencl.memory_allocated()
    x = torch.empty(MiB, dtype=torch.uint8, device="opencl")
    assert torch.accelerator.memory_allocated() == base + MiB
    assert torch.accelerator.max_memory_allocated() >= base + MiB
    assert torch.accelerator.memory_reserved() == torch.opencl.memory_reserved()
    assert torch.accelerator.max_memory_reserved() >= torch.accelerator.memory_reserved()
    stats_ = torch.accelerator.memory_stats()
    assert stats_["allocated_bytes.all.current"] == base + MiB
    del x
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == base
    free, total = torch.accelerator.get_memory_info()
    assert total == torch.opencl.get_device_properties(0).total_memory
    assert free == total - torch.opencl.memory_reserved()
    torch.accelerator.empty_cache()
    assert torch.opencl.memory_reserved() == stats()["reserved_bytes.all.current"]


ADDRESS_LIMIT_CHILD = r"""
import resource, torch
x = torch.ones(16, device="opencl")
assert x.sum().item() == 16  # the kernels used below are compiled before the limit
assert torch.ones(32 << 20, device="opencl")[-1].item() == 1.0
torch.opencl.empty_cache()
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), resource.RLIM_INFINITY))
kept = []
try:
    for _ in range(64):  # 8 GiB in all, far past the limit
        kept.append(torch.ones(32 << 20, device="opencl"))  # 128 MiB, filled: the driver allocates it now
        assert kept[-1][-1].item() == 1.0
    print("NO_ERROR")
except torch.OutOfMemoryError as e:
    print("OOM_AFTER", len(kept), "|", e)
kept.clear()
torch.opencl.empty_cache()
print("RECOVERED", torch.ones(16, device="opencl").sum().item())
"""


def test_a_process_memory_limit_is_an_out_of_memory_error_not_a_crash():
    # Under ulimit -v, PoCL's lazy allocation of a buffer failed inside the driver, which asserted
    # (pocl_util.c) and killed the process. A CPU device's memory is the process's: the allocator raises
    # torch.OutOfMemoryError first, and the device keeps working once memory is freed.
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", ADDRESS_LIMIT_CHILD], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "RECOVERED 16.0" in proc.stdout, proc.stdout
    if torch.opencl.get_device_properties(0).type == "cpu":
        assert "OOM_AFTER" in proc.stdout, proc.stdout
        assert "address-space (ulimit -v) limit" in proc.stdout, proc.stdout
