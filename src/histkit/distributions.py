"""Named, seeded key generators shared by the demo, the benchmarks and the
conformance cases.

Each generator returns ``n`` keys in ``[0, num_bins)`` and is deterministic for
a given seed, so any reported failure can be reproduced from its name alone.

Inputs of PARALLEL_FROM keys or more are made in chunks on every CPU: each
chunk draws from its own stream spawned from the seed (the same keys for the
same seed, whatever the number of CPUs), and position-dependent patterns are
computed per chunk from its offset. On one core a 2^28-key Zipf input took
34 s and a uniform one 8 s, most of a full conformance run's host time.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# Exponent of the Zipf law: a few bins take most keys, as in real data.
ZIPF_EXPONENT = 1.3


def uniform(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, num_bins, size=n, dtype=np.int64)


def onebin(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    """Every key equal: the worst contention any histogram kernel can see."""
    return np.full(n, num_bins // 2, dtype=np.int64)


def zipf(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    # Folding the unbounded Zipf draw onto [0, num_bins) keeps its heavy head.
    return (rng.zipf(ZIPF_EXPONENT, size=n) - 1) % num_bins


def sorted_keys(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform keys in ascending order (built from their counts: O(N), no sort)."""
    counts = np.bincount(uniform(n, num_bins, rng), minlength=num_bins)
    return np.repeat(np.arange(num_bins, dtype=np.int64), counts)


def round_robin_at(start: int, count: int, num_bins: int) -> np.ndarray:
    """Keys start .. start + count - 1 of ``i % num_bins``: the chapter's
    inputs for 7.1 and 7.2."""
    return np.arange(start, start + count, dtype=np.int64) % num_bins


def strided_31_at(start: int, count: int, num_bins: int) -> np.ndarray:
    """Keys start .. start + count - 1 of ``(31 i + 17) % num_bins``: the
    chapter's input for 7.3."""
    return (np.arange(start, start + count, dtype=np.int64) * 31 + 17) % num_bins


# Inputs on the edges of method="auto"'s rule (gpu/policy.auto_choice), which
# judges runs of WARP consecutive keys: whatever runs it samples, each holds
# exactly the share these patterns set. The hot bin is K // 2 (onebin's) and
# the cold keys bin 0, which auto counts in shared memory at any K it samples.
EDGE_RUN = 32  # = contract.WARP, auto's run length (not imported: no GPU layer here)


def half_hot_at(start: int, count: int, num_bins: int) -> np.ndarray:
    """Every even-numbered key the hot bin, the rest bin 0: any EDGE_RUN
    consecutive keys hold exactly half hot keys, where auto's rule, which
    needs more than half, still takes the fast kernel."""
    i = np.arange(start, start + count, dtype=np.int64)
    return np.where(i % 2 == 0, num_bins // 2, 0)


def hot_head_at(start: int, count: int, num_bins: int) -> np.ndarray:
    """half-hot with its first EDGE_RUN keys all hot: a sample whose first run
    is the head holds a bare majority (32 + 63 x 16 of 64 runs' 2048 keys),
    which one run's worth of keys lost or misjudged turns back to a tie."""
    keys = half_hot_at(start, count, num_bins)
    keys[: max(0, EDGE_RUN - start)] = num_bins // 2
    return keys


def sixteen_sectors_at(start: int, count: int, num_bins: int) -> np.ndarray:
    """Key i is bin K // 2 + 4 (i mod 16): 16 bins, each in its own 4-bin
    (32-byte) sector of the counts, so any EDGE_RUN consecutive keys touch
    exactly 16 sectors, half the run: the edge of auto's "scattered" rule."""
    i = np.arange(start, start + count, dtype=np.int64)
    return (num_bins // 2 + 4 * (i % 16)) % num_bins


def powers_at(start: int, count: int, num_bins: int) -> np.ndarray:
    """Cycles, in descending order, through 0, 1, K - 1 and every 2^j - 1,
    2^j and 2^j + 1 below K: keys that share every low digit with 0 (2^j;
    with K = 2^j + 1, the largest key), neighbours that float32 cannot tell
    apart past 2^24, and a largest key that float32 rounds up to K (a sort
    that skips a digit pass because the smallest and largest keys share it,
    orders or bounds keys as floats, or packs a key into too few bits, gets
    them wrong)."""
    values = {0, 1, num_bins - 1}
    values |= {v for j in range(1, 64) for v in (2**j - 1, 2**j, 2**j + 1)}
    table = np.array(sorted((v for v in values if v < num_bins), reverse=True), np.int64)
    return table[np.arange(start, start + count, dtype=np.int64) % len(table)]


# Patterns that depend on a key's position: (offset, count, num_bins) -> keys.
POSITIONAL: dict[str, Callable[[int, int, int], np.ndarray]] = {
    "round-robin": round_robin_at,
    "strided-31": strided_31_at,
    "half-hot": half_hot_at,
    "hot-head": hot_head_at,
    "sixteen-sectors": sixteen_sectors_at,
    "powers": powers_at,
}


def _from_the_first_key(pattern: Callable[[int, int, int], np.ndarray]):
    """A positional pattern as a generator: keys 0 .. n - 1 (no seed needed)."""
    def keys(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
        return pattern(0, n, num_bins)

    keys.__doc__ = pattern.__doc__
    return keys


def last_apart(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    """Every key the last bin but the last key, bin 0 (drawn in chunks, past
    2^24 keys, the last key of each chunk): a kernel that decides from whole
    vectors that every key shares a digit or a bin, and leaves the scalar
    tail out of that test, miscounts or misorders the one key apart."""
    keys = np.full(n, num_bins - 1, dtype=np.int64)
    keys[-1:] = 0
    return keys


GENERATORS: dict[str, Callable[[int, int, np.random.Generator], np.ndarray]] = {
    "uniform": uniform,
    "onebin": onebin,
    "zipf": zipf,
    "sorted": sorted_keys,
    "last-apart": last_apart,
    **{name: _from_the_first_key(pattern) for name, pattern in POSITIONAL.items()},
}


PARALLEL_FROM = 1 << 24
CHUNK = 1 << 22


def make_keys(
    distribution: str, n: int, num_bins: int, seed: int = 0, dtype=np.int32
) -> np.ndarray:
    """``n`` keys of the named distribution, as ``dtype``."""
    try:
        generator = GENERATORS[distribution]
    except KeyError:
        known = ", ".join(GENERATORS)
        raise ValueError(f"unknown distribution {distribution!r}; known: {known}") from None
    if num_bins - 1 > np.iinfo(dtype).max:
        raise ValueError(f"{num_bins} bins do not fit keys of dtype {np.dtype(dtype)}")
    if n >= PARALLEL_FROM:
        return _in_chunks(distribution, n, num_bins, seed, np.dtype(dtype))
    if distribution in SLOW_TO_DRAW:
        return _kept_draw(distribution, n, num_bins, seed).astype(dtype)
    return generator(n, num_bins, np.random.default_rng(seed)).astype(dtype)


# Zipf keys are drawn by rejection, about 70 ns a key: a conformance run
# draws 9 million of them, and a check, a shrink or a test session draws the
# same seeded cases again. The latest draws are kept, in the narrowest dtype
# that holds their bins, up to KEPT_BYTES, and every caller gets a copy.
SLOW_TO_DRAW = frozenset({"zipf"})
KEPT_BYTES = 64 << 20
_kept: OrderedDict[tuple, np.ndarray] = OrderedDict()
_kept_lock = threading.Lock()


def _kept_draw(distribution: str, n: int, num_bins: int, seed: int) -> np.ndarray:
    key = (distribution, n, num_bins, seed)
    with _kept_lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    drawn = GENERATORS[distribution](n, num_bins, np.random.default_rng(seed))
    drawn = drawn.astype(np.min_scalar_type(max(num_bins - 1, 0)))
    drawn.flags.writeable = False
    if drawn.nbytes <= KEPT_BYTES:
        with _kept_lock:
            _kept[key] = drawn
            while sum(kept.nbytes for kept in _kept.values()) > KEPT_BYTES:
                _kept.popitem(last=False)
    return drawn


def _in_chunks(distribution: str, n: int, num_bins: int, seed: int,
               dtype: np.dtype) -> np.ndarray:
    """make_keys for large n: chunks of CHUNK keys on a thread per CPU (NumPy's
    generators and ufuncs release the GIL), chunk i drawing from the seed's
    i-th spawned stream."""
    spans = [(start, min(CHUNK, n - start)) for start in range(0, n, CHUNK)]
    streams = np.random.SeedSequence(seed).spawn(len(spans))
    workers = min(len(spans), os.cpu_count() or 1)

    def draw(chunk: int) -> np.ndarray:
        count = spans[chunk][1]
        rng = np.random.default_rng(streams[chunk])
        if distribution in ("uniform", "sorted"):
            return rng.integers(0, num_bins, size=count, dtype=dtype)
        return GENERATORS[distribution](count, num_bins, rng)

    if distribution == "sorted":  # uniform keys, placed in order from their counts
        with ThreadPoolExecutor(workers) as pool:
            counts = sum(pool.map(lambda c: np.bincount(draw(c), minlength=num_bins),
                                  range(len(spans))))
        return np.repeat(np.arange(num_bins, dtype=dtype), counts)
    keys = np.empty(n, dtype)
    # Round-robin keys repeat every num_bins: each chunk is a copy of a slice
    # of one cycle made once (2^31 one-byte keys in 2.7 s, not 9.6, on 2 CPUs),
    # for cycles no longer than a chunk (a longer one costs more than it saves).
    cycle = (round_robin_at(0, CHUNK + num_bins, num_bins).astype(dtype)
             if distribution == "round-robin" and num_bins <= CHUNK else None)

    def fill(chunk: int) -> None:
        start, count = spans[chunk]
        if cycle is not None:
            keys[start:start + count] = cycle[start % num_bins:start % num_bins + count]
        elif distribution in POSITIONAL:
            keys[start:start + count] = POSITIONAL[distribution](start, count, num_bins)
        else:
            keys[start:start + count] = draw(chunk)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fill, range(len(spans))))
    return keys


def full_width_keys(distribution: str, n: int, seed: int = 0, dtype=np.int32) -> np.ndarray:
    """``n`` keys of the named distribution spread over the dtype's whole range
    (negative keys included), for sorts of full-width keys (radix sort).

    "uniform" draws every bit at random; "extremes" draws from the dtype's
    edges (its smallest and largest values and their neighbours, -1, 0, 1);
    the others draw the distribution over 2^16 values (2^bits for 8-bit
    keys) and stretch it, in order, from the dtype's smallest value to its
    largest, keeping its shape (one value, a Zipf head, sorted runs, a round
    robin).
    """
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    bits = 8 * dtype.itemsize
    unsigned = np.dtype(f"u{dtype.itemsize}")
    if distribution == "extremes":
        edges = {int(info.min), int(info.min) + 1, 0, 1, int(info.max) - 1, int(info.max)}
        edges |= {-1} if info.min < 0 else set()
        choices = np.array(sorted(edges), dtype=dtype)
        return np.random.default_rng(seed).choice(choices, size=n)
    if distribution == "uniform":
        drawn = np.random.default_rng(seed).integers(0, 2**bits - 1, size=n, endpoint=True,
                                                     dtype=np.uint64)
        return drawn.astype(unsigned).view(dtype)
    values = min(1 << 16, 1 << bits)
    base = make_keys(distribution, n, values, seed, np.int64).astype(np.uint64)
    stride = np.uint64((1 << bits) // values)
    lowest = np.uint64(info.min % (1 << bits))  # the smallest key's bits
    # uint64 arithmetic wraps: the bits of lowest + base * stride, in order from
    # the smallest key up (a signed key's image is its bits plus the sign bit).
    image = base * stride
    if info.min < 0:
        return (image + lowest).astype(unsigned).view(dtype)
    return image.astype(unsigned).view(dtype)
