"""CPU oracles: the ground truth every histkit GPU kernel is judged against.

Each function models one thing the chapter (Chapter 7: Histograms) describes:

- :func:`histogram` -- the exact count, what ``atomicAdd`` achieves (7.1);
- :func:`naive_wave_histogram` -- the lockstep-wave model of a non-atomic
  ``hist[b]++`` (7.1);
- :func:`privatized_histogram` -- the shared-memory privatized kernel and the
  number of global atomics it issues (7.2);
- :func:`exclusive_scan` -- counts to offsets (7.3, via Chapter 5);
- :func:`counting_sort` -- the stable counting sort (7.3).

Keys may have any integer dtype and any stride; counts and indices are int64.
A key outside ``[0, num_bins)`` raises ``BadKeyError`` (a ``ValueError``)
naming the first bad index and value; nothing is clipped.
"""

from __future__ import annotations

import numpy as np

from histkit.oracles import _pages
from histkit.oracles._histogram import histogram_counts
from histkit.oracles._inputs import (
    BadKeyError,
    as_key_array,
    bin_count,
    positive_int,
    raise_bad_key,
    require_memory,
)
from histkit.oracles._scan import exclusive_scan_counts
from histkit.oracles._sort import counting_sort_arrays
from histkit.oracles._threads import idle_cpus
from histkit.oracles._wave import naive_wave_counts

__all__ = [
    "BadKeyError",
    "argsort",
    "counting_sort",
    "exclusive_scan",
    "histogram",
    "naive_wave_histogram",
    "privatized_histogram",
    "radix_sort",
    "release_pages",
]

WARP_SIZE = 32
BLOCK_SIZE = 256


def _counts_fit(num_bins: int) -> None:
    require_memory(8 * num_bins, f"num_bins={num_bins} (int64 counts)")


def histogram(keys, num_bins: int) -> np.ndarray:
    """Exact histogram of keys into num_bins bins (int64).

    NumPy equivalent: ``np.bincount(keys, minlength=num_bins)``.
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    _counts_fit(num_bins)
    counts, bad = histogram_counts(keys, num_bins, idle_cpus(len(keys)))
    if bad >= 0:
        raise_bad_key(keys, bad, num_bins)
    return counts


def naive_wave_histogram(keys, num_bins: int, warp_size: int = WARP_SIZE) -> np.ndarray:
    """The chapter's lockstep model of a non-atomic ``hist[b]++`` (7.1).

    Keys are taken in waves of ``warp_size`` consecutive elements; each wave
    adds exactly one to every distinct bin it touches, however many lanes
    shared it. Equals :func:`histogram` only when no wave repeats a bin.
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    _counts_fit(num_bins)
    # A wave wider than the input is one wave of all of it: same model.
    warp_size = min(positive_int(warp_size, "warp_size"), max(1, len(keys)))
    counts, bad = naive_wave_counts(keys, num_bins, warp_size, idle_cpus(len(keys)))
    if bad >= 0:
        raise_bad_key(keys, bad, num_bins)
    return counts


def privatized_histogram(
    keys, num_bins: int, block_size: int = BLOCK_SIZE, num_blocks: int | None = None
) -> tuple[np.ndarray, int]:
    """The privatized kernel of 7.2: (histogram, global atomics issued).

    Each block counts its keys in a private shared-memory histogram, then
    merges every one of its bins into global memory with one atomicAdd,
    zeros included. Blocks take keys grid-stride, so any ``num_blocks >= 1``
    covers every key; the default is the chapter's one key per thread,
    ``ceil(N / block_size)`` blocks. The global-atomic count therefore does not
    depend on the data at all: ``num_blocks * num_bins``.
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    block_size = positive_int(block_size, "block_size")
    if num_blocks is None:
        num_blocks = -(-len(keys) // block_size)
    else:
        num_blocks = positive_int(num_blocks, "num_blocks")
    # Shared-memory atomics lose nothing, so the merged result is the exact
    # histogram whatever the block decomposition.
    return histogram(keys, num_bins), num_blocks * num_bins


def exclusive_scan(counts) -> np.ndarray:
    """Exclusive prefix sum of non-negative integer counts, as int64.

    ``out[i] = counts[0] + ... + counts[i - 1]``; ``out[0] = 0``.
    """
    counts = as_key_array(counts, name="counts")
    offsets, negative_at, overflow_at = exclusive_scan_counts(counts)
    if negative_at >= 0:
        raise ValueError(
            f"counts must be >= 0; count at index {negative_at} is "
            f"{counts[negative_at].item()}"
        )
    if overflow_at >= 0:
        raise OverflowError(f"offsets pass int64 at the count at index {overflow_at}")
    return offsets


def counting_sort(keys, num_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable counting sort: (sorted keys, original index of each output slot).

    ``sorted_keys`` has the input's dtype; ``original_index`` is int64 and
    increasing within every run of equal keys. NumPy equivalent:
    ``order = np.argsort(keys, kind="stable"); keys[order], order``.
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    require_memory(8 * num_bins + (keys.itemsize + 8) * len(keys),
                   f"counting_sort of {len(keys)} keys into num_bins={num_bins}")
    # Pooled pages: a repeated call writes into pages a dropped result left.
    sorted_keys = _pages.empty(len(keys), keys.dtype)
    original_index = _pages.empty(len(keys), np.int64)
    bad = counting_sort_arrays(keys, num_bins, sorted_keys, original_index,
                               idle_cpus(len(keys)))
    if bad >= 0:
        raise_bad_key(keys, bad, num_bins)
    return sorted_keys, original_index


def release_pages() -> int:
    """Return to the OS the pages kept from large results the caller dropped
    (counting_sort reuses them, see ``_pages``); the bytes released."""
    return _pages.release_pages()


def argsort(keys) -> np.ndarray:
    """Stable sorting permutation of full-width integer keys (int64), by LSD radix
    passes of the counting sort. NumPy equivalent: ``np.argsort(keys, kind="stable")``
    (signed keys in signed order)."""
    from histkit.oracles._radix import radix_order

    return radix_order(keys)


def radix_sort(keys, values=None):
    """Stable sort of full-width integer keys (7.3: the counting sort once per
    digit, 16 bits wide). Returns ``(sorted_keys, original_index)``, or ``(sorted_keys,
    values[original_index])`` when values are given (one per key)."""
    keys = as_key_array(keys)
    order = argsort(keys)
    if values is None:
        return keys[order], order
    values = np.asarray(values)
    if values.shape[:1] != keys.shape:
        raise ValueError(f"values must hold one entry per key: {len(keys)} keys, "
                         f"values of shape {values.shape}")
    return keys[order], values[order]
