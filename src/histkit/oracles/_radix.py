"""Stable LSD radix sort of full-width integer keys: the chapter's "radix sort
runs the counting sort once per digit" (7.3), as an oracle.

Each pass is ``counting_sort`` (Cython, stable) of one 8-bit digit of the keys
in the current order; a digit that every key shares is skipped (its pass would
not move anything). Signed keys sort in signed order: the sign bit is flipped
so that negative keys come first as unsigned values.
"""

from __future__ import annotations

import numpy as np

from histkit.oracles._inputs import as_key_array, require_memory

DIGIT_BITS = 8
DIGITS = 1 << DIGIT_BITS


def _as_unsigned(keys: np.ndarray) -> np.ndarray:
    """Keys as unsigned integers of the same width, in the same order as the keys."""
    unsigned = keys.view(keys.dtype.str.replace("i", "u")) if keys.dtype.kind == "i" else keys
    if keys.dtype.kind == "i":
        sign = np.array(1 << (8 * keys.itemsize - 1), dtype=unsigned.dtype)
        unsigned = unsigned ^ sign
    return unsigned


def radix_order(keys) -> np.ndarray:
    """The stable sorting permutation of keys (int64), one 8-bit digit per pass."""
    from histkit.oracles import counting_sort

    keys = np.ascontiguousarray(as_key_array(keys))
    n = len(keys)
    require_memory(24 * n, f"radix sort of {n} keys")
    unsigned = _as_unsigned(keys)
    order = np.arange(n, dtype=np.int64)
    for shift in range(0, 8 * keys.itemsize, DIGIT_BITS):
        digits = ((unsigned >> unsigned.dtype.type(shift)) & unsigned.dtype.type(DIGITS - 1))
        digits = digits.astype(np.uint8)
        if n and np.all(digits == digits[0]):
            continue  # every key shares this digit: the pass would move nothing
        _, by_digit = counting_sort(digits[order], DIGITS)
        order = order[by_digit]
    return order
