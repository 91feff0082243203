"""Philox-4x32-10 (kernels_cl/philox.cl) in numpy, for tests that rebuild what a kernel drew: the random
ops of torch.compile's kernels (test_inductor.py) and the fused attention's dropout mask (test_attention.py).
test_random.py checks it against Random123's known answer."""
import numpy as np


def philox4x32_10(seed: int, counters: np.ndarray) -> np.ndarray:
    """The blocks of uint64 `counters` (words 0-1 of the counter; words 2-3 zero) under the 64-bit `seed`
    (the key): an (n, 4) array of uint32 values held in uint64."""
    m = np.uint64(0xFFFFFFFF)
    counters = np.asarray(counters, dtype=np.uint64)
    c = [counters & m, counters >> np.uint64(32), np.zeros_like(counters), np.zeros_like(counters)]
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & m, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & m]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m, (k1 + np.uint64(0xBB67AE85)) & m
    return np.stack(c, axis=1)
