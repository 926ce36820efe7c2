"""Independent references for the oracles: NumPy calls and plain Python loops.

Deliberately slow and obvious. Nothing here shares code with
``histkit.oracles``, so an oracle bug cannot hide behind its own reference.
"""

from __future__ import annotations

import numpy as np


def histogram(keys: np.ndarray, num_bins: int) -> np.ndarray:
    return np.bincount(np.asarray(keys, dtype=np.int64), minlength=num_bins).astype(np.int64)


def naive_wave_histogram(keys, num_bins: int, warp_size: int = 32) -> np.ndarray:
    """The chapter's simulate_naive_histogram, as a plain loop over waves."""
    hist = [0] * num_bins
    keys = [int(k) for k in keys]
    for wave_start in range(0, len(keys), warp_size):
        pre_wave_value = {}
        for b in keys[wave_start:wave_start + warp_size]:
            pre_wave_value.setdefault(b, hist[b])
        for b, value in pre_wave_value.items():
            hist[b] = value + 1
    return np.array(hist, dtype=np.int64)


def exclusive_scan(counts) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)[: len(counts)]


def counting_sort(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable").astype(np.int64)
    return keys[order], order


def bin_histogram(samples, bins, range=None) -> tuple[np.ndarray, np.ndarray]:
    """numpy's own binning: the rule `oracles.bin_histogram` reproduces."""
    return np.histogram(samples, bins, range)


def weighted_histogram(keys, num_bins: int, weights) -> np.ndarray:
    """Each bin's weights summed by ``math.fsum`` (exact, rounded once), one
    plain loop over the keys to group them."""
    import math

    groups: list[list[float]] = [[] for _ in range(num_bins)]
    for key, weight in zip(keys.tolist(), weights.tolist(), strict=True):
        groups[key].append(weight)
    return np.array([math.fsum(group) for group in groups], dtype=np.float64)
