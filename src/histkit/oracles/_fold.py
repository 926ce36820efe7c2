"""Summing the oracles' per-worker count rows without a second full-size array."""

from __future__ import annotations

import numpy as np


def fold_rows(rows: np.ndarray, num_bins: int) -> np.ndarray:
    """rows[0, :num_bins] + rows[1, :num_bins] + ..., as int64.

    int64 rows are summed into row 0 in place and the result is a view of it:
    peak memory stays at the workers' rows, so one worker over a huge num_bins
    needs about the output's size, not twice it. Narrower rows (32-bit chunk
    counters) are summed into a new int64 array.
    """
    counts = rows[0, :num_bins]
    if counts.dtype != np.int64:
        counts = counts.astype(np.int64)
    for w in range(1, rows.shape[0]):
        counts += rows[w, :num_bins]
    return counts
