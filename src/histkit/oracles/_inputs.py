"""Input checks shared by every oracle (and by histkit.gpu).

One place decides what a valid key array, bin count or geometry is, so the
CPU oracles and the GPU wrappers raise the same errors for the same input.
"""

from __future__ import annotations

import operator

import numpy as np


def as_key_array(keys, name: str = "keys") -> np.ndarray:
    """Return keys as a 1-d native-endian integer ndarray, copying only if needed."""
    arr = np.asarray(keys)
    if arr.size == 0 and not isinstance(keys, np.ndarray):
        # An empty Python sequence has no element to give it a dtype.
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"{name} must have an integer dtype (int8 ... uint64); got {arr.dtype}"
        )
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def positive_int(value, name: str) -> int:
    """value as an int >= 1, or a TypeError / ValueError naming the argument."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer; got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer; got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be >= 1; got {number}")
    return number


class BadKeyError(ValueError):
    """A key outside [0, num_bins); ``index`` is the first such key's, ``value`` its value."""

    def __init__(self, index: int, value: int, num_bins: int):
        super().__init__(f"key at index {index} is {value}, outside [0, {num_bins})")
        self.index = index
        self.value = value
        self.num_bins = num_bins


def bad_key_error(index: int, value: int, num_bins: int) -> BadKeyError:
    """The error every histkit entry point, CPU or GPU, gives an out-of-range key."""
    return BadKeyError(index, value, num_bins)


def raise_bad_key(keys: np.ndarray, index: int, num_bins: int) -> None:
    raise bad_key_error(index, keys[index].item(), num_bins)
