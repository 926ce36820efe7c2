"""Stable LSD radix sort of full-width integer keys: the chapter's "radix sort
runs the counting sort once per digit" (7.3), as an oracle.

Each pass is ``counting_sort`` (Cython, stable) of one 16-bit digit of the
keys in the current order (8 bits for 1-byte keys); a digit that every key
shares is skipped (its pass would not move anything). Signed keys sort in
signed order: the sign bit is flipped so that negative keys come first as
unsigned values.

Why 16-bit digits: each pass costs two gathers in NumPy besides the counting
sort, and a counting sort of 65536 bins is nearly as fast as one of 256, so
fewer passes win. On 2^24 random keys over the whole range (a 2-core x86-64 VM,
median of 3 in one run): int32 1.15 s with 8-bit digits, 0.66 s with 16-bit;
int64 2.64 s and 1.58 s; ``np.argsort(kind="stable")`` 2.11 s and 2.18 s.
"""

from __future__ import annotations

import numpy as np

from histkit.oracles import _pages
from histkit.oracles._inputs import as_key_array, require_memory
from histkit.oracles._sort import counting_sort_arrays
from histkit.oracles._threads import idle_cpus

DIGIT_BITS = 16


def _as_unsigned(keys: np.ndarray) -> np.ndarray:
    """Keys as unsigned integers of the same width, in the same order as the keys."""
    unsigned = keys.view(keys.dtype.str.replace("i", "u")) if keys.dtype.kind == "i" else keys
    if keys.dtype.kind == "i":
        sign = np.array(1 << (8 * keys.itemsize - 1), dtype=unsigned.dtype)
        unsigned = unsigned ^ sign
    return unsigned


def pass_bytes(n: int, itemsize: int, digit_dtype) -> int:
    """Memory one pass holds at once, asked for before the first: the order,
    the counting sort's indices and the next order (int64 each), the keys as
    unsigned, the digits, the digits in the current order and sorted, and the
    counting sort's row of counters and its bins' ends (int64 each, one per
    value a digit of digit_dtype takes)."""
    digit_bytes = np.dtype(digit_dtype).itemsize
    return (3 * 8 + itemsize + 3 * digit_bytes) * n + 16 * (1 << (8 * digit_bytes))


def _digit_order(digits: np.ndarray, num_bins: int) -> np.ndarray:
    """The stable counting sort's original indices of digits (each below num_bins,
    so none is a bad key; the memory was asked for by the caller, pass_bytes)."""
    sorted_digits = _pages.empty(len(digits), digits.dtype)
    original_index = _pages.empty(len(digits), np.int64)
    counting_sort_arrays(digits, num_bins, sorted_digits, original_index,
                         idle_cpus(len(digits)))
    return original_index


def radix_order(keys) -> np.ndarray:
    """The stable sorting permutation of keys (int64), one 16-bit digit per pass."""
    keys = np.ascontiguousarray(as_key_array(keys))
    n = len(keys)
    bits = min(DIGIT_BITS, 8 * keys.itemsize)
    digit_dtype = np.uint8 if bits == 8 else np.uint16
    require_memory(pass_bytes(n, keys.itemsize, digit_dtype), f"radix sort of {n} keys")
    unsigned = _as_unsigned(keys)
    mask = unsigned.dtype.type((1 << bits) - 1)
    order = np.arange(n, dtype=np.int64)
    for shift in range(0, 8 * keys.itemsize, bits):
        digits = ((unsigned >> unsigned.dtype.type(shift)) & mask).astype(digit_dtype)
        if n and np.all(digits == digits[0]):
            continue  # every key shares this digit: the pass would move nothing
        order = order[_digit_order(digits[order], 1 << bits)]
    return order
