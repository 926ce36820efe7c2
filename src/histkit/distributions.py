"""Named, seeded key generators shared by the demo, the benchmarks and the
conformance cases.

Each generator returns ``n`` keys in ``[0, num_bins)`` and is deterministic for
a given seed, so any reported failure can be reproduced from its name alone.
"""

from __future__ import annotations

from collections.abc import Callable

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


def round_robin(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    """``i % num_bins``: the chapter's inputs for 7.1 and 7.2."""
    return np.arange(n, dtype=np.int64) % num_bins


def strided_31(n: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    """``(31 i + 17) % num_bins``: the chapter's input for 7.3."""
    return (np.arange(n, dtype=np.int64) * 31 + 17) % num_bins


GENERATORS: dict[str, Callable[[int, int, np.random.Generator], np.ndarray]] = {
    "uniform": uniform,
    "onebin": onebin,
    "zipf": zipf,
    "sorted": sorted_keys,
    "round-robin": round_robin,
    "strided-31": strided_31,
}


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
    return generator(n, num_bins, np.random.default_rng(seed)).astype(dtype)
