"""Python implementations to hand to ``histkit check``: correct ones and
buggy ones, one of each kind at least. They run on the CPU (NumPy), so the
whole engine is exercised without a GPU:

    histkit check examples.python_kernels:histogram --kind histogram      # PASS
    histkit check examples.python_kernels:histogram_clipped --kind histogram  # FAIL

(run from the repository root, so that ``examples`` is importable). The
buggy ones each carry one realistic mistake, named in their docstring; the
verdict each gets is pinned by tests/test_check_examples.py.
"""

from __future__ import annotations

import numpy as np


def _first_bad(keys: np.ndarray, num_bins: int) -> int | None:
    bad = np.flatnonzero((keys < 0) | (keys >= num_bins)) if len(keys) else []
    return int(bad[0]) if len(bad) else None


def _reject_bad_keys(keys: np.ndarray, num_bins: int) -> None:
    index = _first_bad(keys, num_bins)
    if index is not None:
        raise ValueError(f"key at index {index} is {keys[index]}, outside [0, {num_bins})")


# --- histogram -----------------------------------------------------------------------

def histogram(keys, num_bins):
    """Correct: np.bincount after checking every key."""
    _reject_bad_keys(keys, num_bins)
    return np.bincount(keys.astype(np.int64), minlength=num_bins)


def histogram_clipped(keys, num_bins):
    """Bug: out-of-range keys clipped into the edge bins instead of reported."""
    return np.bincount(np.clip(keys, 0, num_bins - 1).astype(np.int64), minlength=num_bins)


def histogram_dropped_tail(keys, num_bins):
    """Bug: the last partial warp of keys is dropped (a loop bound rounded down)."""
    _reject_bad_keys(keys, num_bins)
    whole = len(keys) // 32 * 32
    return np.bincount(keys[:whole].astype(np.int64), minlength=num_bins)


def histogram_last_bad_index(keys, num_bins):
    """Bug: reports the LAST bad key's index (a plain store where atomicMin belongs)."""
    bad = np.flatnonzero((keys < 0) | (keys >= num_bins))
    if len(bad):
        raise ValueError(f"key at index {bad[-1]} is out of range")
    return np.bincount(keys.astype(np.int64), minlength=num_bins)


def histogram_uint8_as_signed(keys, num_bins):
    """Bug: 8-bit keys read as signed char (uint8 keys >= 128 become negative)."""
    if keys.dtype == np.uint8:
        keys = keys.view(np.int8)
    _reject_bad_keys(keys, num_bins)
    return np.bincount(keys.astype(np.int64), minlength=num_bins)


def histogram_int32_counts_wrap(keys, num_bins):
    """Bug: counts kept in int16 (wrap past 32767 keys in one bin)."""
    _reject_bad_keys(keys, num_bins)
    return np.bincount(keys.astype(np.int64), minlength=num_bins).astype(np.int16)


# --- racy-histogram and wave -------------------------------------------------------

def wave_histogram(keys, num_bins, warp_size=32):
    """Correct: each wave of warp_size keys adds one to every distinct bin it touches."""
    _reject_bad_keys(keys, num_bins)
    # A (wave, bin) pair is one increment however many of the wave's lanes
    # hold that bin: count each distinct pair once.
    wave = np.arange(len(keys), dtype=np.int64) // warp_size
    pairs = np.sort(wave * num_bins + keys.astype(np.int64))
    distinct = pairs[np.diff(pairs, prepend=-1) != 0]
    return np.bincount(distinct % num_bins, minlength=num_bins)


def wave_histogram_atomic(keys, num_bins, warp_size=32):
    """Bug (as a wave model): the race is 'fixed' with atomics, so nothing is lost."""
    return histogram(keys, num_bins)


def racy_histogram_double_count(keys, num_bins):
    """Bug: the last key is counted twice (a loop that runs to i <= n - 1 and once more)."""
    counts = histogram(keys, num_bins)
    if len(keys):
        counts[keys[-1]] += 1
    return counts


# --- privatized ----------------------------------------------------------------------

def privatized(keys, num_bins, block_size=256, num_blocks=1):
    """Correct: every block merges every bin (zeros too): num_blocks * num_bins atomics."""
    return histogram(keys, num_bins), num_blocks * num_bins


def privatized_skips_zero_bins(keys, num_bins, block_size=256, num_blocks=1):
    """Bug: the merge skips empty bins, so fewer global atomics than the chapter's model."""
    counts = histogram(keys, num_bins)
    atomics = 0
    for block in range(num_blocks):
        mine = keys[block * block_size::num_blocks * block_size]  # one key per thread, roughly
        atomics += len(np.unique(mine)) if len(mine) else 0
    return counts, atomics


# --- scan ----------------------------------------------------------------------------

def exclusive_scan(counts):
    """Correct: offsets[i] = counts[0] + ... + counts[i - 1]."""
    offsets = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    return offsets


def inclusive_scan(counts):
    """Bug: an inclusive scan (offsets[i] includes counts[i])."""
    return np.cumsum(counts)


def exclusive_scan_32_bit_sum(counts):
    """Bug: the running sum kept in 32 bits (a kernel's `unsigned sum`), which
    wraps once the counts pass 2^32 (no key case's counts do)."""
    offsets = np.zeros(len(counts), np.uint32)
    np.cumsum(np.asarray(counts[:-1], np.uint32), dtype=np.uint32, out=offsets[1:])
    return offsets.astype(np.int64)


def scan_tiles_without_carry(counts):
    """Bug: tiles of 1024 are scanned on their own; no tile adds the ones before it."""
    offsets = np.zeros(len(counts), np.int64)
    for start in range(0, len(counts), 1024):
        tile = counts[start:start + 1024]
        offsets[start + 1:start + len(tile)] = np.cumsum(tile[:-1])
    return offsets


# --- sort and stable-sort ----------------------------------------------------------

def stable_counting_sort(keys, num_bins):
    """Correct: histogram + exclusive scan + a stable scatter (chapter 7.3)."""
    counts = histogram(keys, num_bins)
    cursor = exclusive_scan(counts).tolist()  # Python lists: a loop's fastest scalars
    order = [0] * len(keys)
    for i, key in enumerate(keys.tolist()):
        order[cursor[key]] = i
        cursor[key] += 1
    order = np.array(order, np.int64)
    return keys[order], order


def quicksort_argsort(keys, num_bins):
    """Bug for stable-sort (fine for sort): NumPy's default sort is not stable."""
    _reject_bad_keys(keys, num_bins)
    order = np.argsort(keys, kind="quicksort")
    return keys[order], order


def sort_index_off_by_one(keys, num_bins):
    """Bug: original indices counted from 1."""
    _reject_bad_keys(keys, num_bins)
    order = np.argsort(keys, kind="stable")
    return keys[order], order + 1


def sort_unchecked(keys, num_bins):
    """Bug: out-of-range keys are sorted along instead of reported."""
    order = np.argsort(keys, kind="stable")
    return keys[order], order


def sort_drops_last_key(keys, num_bins):
    """Bug: the scatter loop stops one key early (the last slot keeps garbage)."""
    _reject_bad_keys(keys, num_bins)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if len(keys) > 1:
        sorted_keys = sorted_keys.copy()
        sorted_keys[-1] = sorted_keys[0]
    return sorted_keys, order


def sort_by_low_byte(keys, num_bins):
    """Bug: one 8-bit digit pass where num_bins needs two (keys sorted by key % 256)."""
    _reject_bad_keys(keys, num_bins)
    order = np.argsort(keys % 256, kind="stable")
    return keys[order], order


# --- radix-sort: f(keys) -> (sorted_keys, original_index), full-width keys ----

def radix_argsort(keys):
    """Correct: NumPy's stable sort of the keys as the integers they are."""
    order = np.argsort(keys, kind="stable")
    return keys[order], order


def radix_unsigned_order(keys):
    """Bug: sorts the keys' bits as unsigned, so negative keys come last."""
    unsigned = keys.view(f"u{keys.dtype.itemsize}")
    order = np.argsort(unsigned, kind="stable")
    return keys[order], order


def radix_low_bytes_only(keys):
    """Bug: the last digit pass is missing: only the low 3 bytes (of wide
    keys) decide the order, as if the pass count assumed 24-bit keys."""
    if keys.dtype.itemsize < 4:
        order = np.argsort(keys, kind="stable")
    else:
        order = np.argsort(keys.astype(np.int64) & 0xFFFFFF, kind="stable")
    return keys[order], order


def radix_equal_keys_reversed(keys):
    """Bug: equal keys come out in reverse input order (a scatter that walks
    each digit's run from its end): sorted, but not stable."""
    reversed_order = np.argsort(keys[::-1], kind="stable")
    order = (len(keys) - 1 - reversed_order) if len(keys) else reversed_order
    return keys[order], order


def radix_sign_flipped_in_every_digit(keys):
    """Bug: the sign bit flip is applied to the top bit of every 8-bit digit,
    not only the key's top one (right for 8-bit keys, wrong for wider ones)."""
    width = keys.dtype.itemsize
    image = keys.view(f"u{width}").astype(np.uint64)
    if keys.dtype.kind == "i":
        image ^= np.uint64(int("80" * width, 16))
    order = np.argsort(image, kind="stable")
    return keys[order], order


# --- binning real-valued samples (bin-histogram, bin-histogram-half-open) ---------------

def _edges_of(samples, bins, range):
    return np.histogram_bin_edges(samples, bins, range)


def bin_by_edges(samples, bins, range):
    """Correct: a sample's bin is the number of numpy's edges <= it, minus
    one, the top edge closing the last bin; samples and edges compared in
    the dtype numpy compares them in (uint64 samples against int64 edges:
    float64). Where numpy's even-bin arithmetic parts from its own edges the
    verdict reports a finding: both answers are accepted."""
    edges = _edges_of(samples, bins, range)
    counts = np.zeros(max(len(edges) - 1, 0), dtype=np.int64)
    if not len(counts):
        return counts
    common = np.promote_types(samples.dtype, edges.dtype)
    x, edges = samples.astype(common), edges.astype(common)
    x = x[(x >= edges[0]) & (x <= edges[-1])]
    index = np.searchsorted(edges, x, side="right") - 1
    np.add.at(counts, np.minimum(index, len(counts) - 1), 1)
    return counts


def bin_by_naive_estimate(samples, bins, range):
    """Bug: the bin estimated as (x - lo) * (1 / (hi - lo)) * bins and never
    corrected against the edges (fast-histogram #45 and #63)."""
    edges = _edges_of(samples, bins, range)
    lo, hi, num_bins = float(edges[0]), float(edges[-1]), len(edges) - 1
    x = samples.astype(np.float64)
    x = x[(x >= lo) & (x <= hi)]
    scale = 1.0 / (hi - lo) if hi > lo else 0.0
    index = np.minimum(((x - lo) * scale * num_bins).astype(np.int64), num_bins - 1)
    return np.bincount(index, minlength=num_bins)


def bin_half_open(samples, bins, range):
    """Bug under numpy's rule, correct under CUB's (kind
    bin-histogram-half-open): the top edge is left out of the last bin."""
    edges = _edges_of(samples, bins, range)
    counts = bin_by_edges(samples, edges, None)
    if len(counts):
        common = np.promote_types(samples.dtype, edges.dtype)
        counts[-1] -= np.count_nonzero(samples.astype(common) == edges.astype(common)[-1])
    return counts


# --- weighted histogram (weighted-histogram) ---------------------------------------------

def _exact_sum(weights) -> float:
    """math.fsum, with IEEE's rules for NaN and infinities (which fsum refuses
    to mix), and where fsum's partial sums overflow, the exact rational sum
    (rounded once by float(); past the largest float, an infinity)."""
    import math
    from fractions import Fraction

    weights = [float(w) for w in weights]
    infinite = {w for w in weights if math.isinf(w)}
    if any(math.isnan(w) for w in weights) or len(infinite) == 2:
        return math.nan
    if infinite:
        return infinite.pop()
    try:
        return math.fsum(weights)
    except OverflowError:
        total = sum(Fraction(w) for w in weights)
        try:
            return float(total)
        except OverflowError:
            return math.inf if total > 0 else -math.inf


def weighted_fsum(keys, weights, num_bins):
    """Correct: each bin's weights summed exactly and rounded once (math.fsum)."""
    _reject_bad_keys(keys, num_bins)
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(num_bins + 1))
    ordered = weights[order].astype(np.float64)
    sums = np.zeros(num_bins)
    for b in np.flatnonzero(bounds[1:] > bounds[:-1]):  # an empty bin's sum is 0.0
        sums[b] = _exact_sum(ordered[bounds[b]:bounds[b + 1]])
    return sums


def weighted_bincount(keys, weights, num_bins):
    """Bug: np.bincount's weights, added left to right, each step rounded."""
    _reject_bad_keys(keys, num_bins)
    return np.bincount(keys.astype(np.int64), weights, minlength=num_bins)


def weighted_float32_sums(keys, weights, num_bins):
    """Bug: float32 weights summed exactly, but returned as float32."""
    return weighted_fsum(keys, weights, num_bins).astype(weights.dtype)
