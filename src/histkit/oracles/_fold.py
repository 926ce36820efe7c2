"""Summing the oracles' per-worker count rows without a second full-size array."""

from __future__ import annotations

import numpy as np


def fold_rows(rows: np.ndarray, num_bins: int) -> np.ndarray:
    """rows[0, :num_bins] + rows[1, :num_bins] + ..., summed into row 0 in place.

    The result is a view of row 0: peak memory stays at the workers' rows, so
    one worker over a huge num_bins needs about the output's size, not twice it.
    """
    counts = rows[0, :num_bins]
    for w in range(1, rows.shape[0]):
        counts += rows[w, :num_bins]
    return counts
