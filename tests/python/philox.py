"""Dropout's keep-mask written again here, from its definition
(docs/families.md#dropout), for the Python tests' float64 reference:

    key     = (seed & 0xffffffff, seed >> 32)
    counter = (k // 4, q, b * heads_q + h, offset)
    r       = Philox4x32-10(counter, key)[k % 4]
    kept   <=> r >= threshold,  threshold = min(floor(p * 2^32), 2^32 - 1)

with p the float32 the kernels get. Philox4x32-10 is Random123's (Salmon
et al., SC'11), vectorized over NumPy arrays of uint64 that hold 32-bit
words, so a product of two words is exact. test_dropout.py checks it
against Random123's known-answer vectors before trusting it."""

import numpy as np

_MASK32 = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)  # round multipliers
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)  # key increments
_SHIFT = np.uint64(32)


def philox4x32_10(counter, key):
    """Philox4x32-10 of counter (four arrays of 32-bit words, broadcast
    together) under key (two words). Returns four uint64 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) & _MASK32 for c in counter)
    k0, k1 = (np.uint64(int(k) & 0xFFFFFFFF) for k in key)
    for _ in range(10):
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = ((p1 >> _SHIFT) ^ c1 ^ k0, p1 & _MASK32,
                          (p0 >> _SHIFT) ^ c3 ^ k1, p0 & _MASK32)
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return c0, c1, c2, c3


def threshold(p):
    """The uint32 below which a draw drops, for the float32 of p."""
    t = np.floor(np.float64(np.float32(p)) * 2.0 ** 32)
    return int(min(t, 2.0 ** 32 - 1))


def scale(p):
    """1 / (1 - p) for the float32 of p: what kept probabilities get."""
    return 1.0 / (1.0 - np.float64(np.float32(p)))


def keep_mask(p, seed, offset, batch_index, heads_q, sq, sk):
    """bool [heads_q, sq, sk]: the keep bits of sequence batch_index (its
    query and key positions from 0, under varlen too)."""
    h = np.arange(heads_q, dtype=np.uint64)[:, None, None]
    q = np.arange(sq, dtype=np.uint64)[None, :, None]
    k = np.arange(sk, dtype=np.uint64)[None, None, :]
    words = philox4x32_10(
        (k >> np.uint64(2), q, np.uint64(batch_index * heads_q) + h,
         np.uint64(offset)),
        (seed & 0xFFFFFFFF, seed >> 32))
    lane = (k & np.uint64(3)).astype(np.int64)
    r = np.choose(np.broadcast_to(lane, (heads_q, sq, sk)),
                  [np.broadcast_to(w, (heads_q, sq, sk)) for w in words])
    return r >= np.uint64(threshold(p))
