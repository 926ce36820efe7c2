"""Input checks shared by every oracle (and by histkit.gpu).

One place decides what a valid key array, bin count or geometry is, so the
CPU oracles and the GPU wrappers raise the same errors for the same input.
"""

from __future__ import annotations

import operator
import os

import numpy as np


def as_key_array(keys, name: str = "keys") -> np.ndarray:
    """Return keys as a 1-d native-endian integer ndarray, copying only if needed."""
    if keys is None:
        raise TypeError(f"{name} must be a 1-d array of integers; got None")
    arr = as_number_array(keys, name)
    if arr.size == 0 and not isinstance(keys, np.ndarray):
        # An empty Python sequence has no element to give it a dtype.
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise _numeric_dtype_error(arr, f"{name} must have an integer dtype (int8 ... uint64)")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _python_ints(values, name: str) -> np.ndarray | None:
    """A list or tuple of Python ints as int64, else uint64 where they need it
    (NumPy makes float64 of [2**63, 1], rounding it); a ValueError where no
    integer dtype holds them all (-1 with 2**63, or 2**64). None for anything
    else."""
    if not isinstance(values, list | tuple) or not values:
        return None
    # NumPy's integer scalars too: np.asarray makes float64 of [np.uint64(2**63 + 1),
    # np.int64(-1)] as of [2**63 + 1, -1], rounding them
    if all(type(v) is int or isinstance(v, np.integer) for v in values):
        values = [int(v) for v in values]
    else:
        flags = [i for i, v in enumerate(values) if isinstance(v, bool | np.bool_)]
        if flags:  # NumPy would take [True, 2] for [1, 2]
            raise TypeError(f"{name} must not hold bools; got {values[flags[0]]!r} at "
                            f"index {flags[0]}")
        return None
    low, high = min(values), max(values)
    for dtype in (np.int64, np.uint64):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return np.array(values, dtype=dtype)
    raise ValueError(f"{name} hold integers from {_shown(low)} to {_shown(high)}, which no "
                     f"integer dtype holds together (int64: [-2**63, 2**63), uint64: "
                     f"[0, 2**64))")


def _shown(number: int) -> str:
    """An integer for a message: in full up to 24 digits, else its first
    digits and how many there are."""
    digits = str(abs(number))
    if len(digits) <= 24:
        return str(number)
    return f"{'-' if number < 0 else ''}{digits[:6]}... ({len(digits)} digits)"


def _numeric_dtype_error(arr: np.ndarray, wanted: str) -> TypeError:
    """The TypeError `wanted` (what was wanted) for values of another dtype;
    for dtype object, what numpy makes of numbers it finds no common dtype
    for, says so."""
    why = (": numpy found no numeric dtype for them together (an integer past 64 bits "
           "beside a float, say, or something that is not a number)"
           if arr.dtype == object else "")
    return TypeError(f"{wanted}; got {arr.dtype}{why}")


def as_number_array(values, name: str) -> np.ndarray:
    """values as an ndarray: a list or tuple of Python (or NumPy) integers
    exactly (_python_ints), anything else by as_array."""
    arr = _python_ints(values, name)
    return as_array(values, name) if arr is None else arr


def as_array(values, name: str, what: str = "a 1-d array") -> np.ndarray:
    """np.asarray(values), its error naming the argument (a ragged list, say);
    a TypeError for a masked array with masked entries, which np.asarray would
    read as if none were masked."""
    if isinstance(values, np.ma.MaskedArray) and np.ma.is_masked(values):
        raise TypeError(f"{name} is a masked array with masked entries, which histkit "
                        f"would not leave out: pass {name}.compressed() to leave them out, "
                        f"or {name}.filled(value) to count them as value")
    try:
        return np.asarray(values)
    except (ValueError, TypeError) as error:
        raise type(error)(f"{name} must be {what}; {error}") from None


def boolean(value, name: str) -> bool:
    """value as a bool; a TypeError naming the argument for anything but True,
    False or a NumPy bool (a None or a string is not taken for a flag)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def flat_sample_weights(weights, shape: tuple) -> np.ndarray | list | tuple:
    """Weights of real-valued samples of `shape` (any, flattened as the
    samples are), flattened, for as_weight_array (a flat list or tuple as
    given); a ValueError when their shape differs."""
    given = as_array(weights, "weights", "an array of the samples' shape")
    if given.shape != shape:
        raise ValueError(f"weights must have the samples' shape {shape}; got {given.shape}")
    if not isinstance(weights, list | tuple):
        return given.ravel()
    if given.ndim == 1:
        return weights  # as given: as_weight_array reads Python ints exactly
    # a nested list flattened as objects, not through float64 (its ints stay exact)
    return np.asarray(weights, dtype=object).ravel().tolist()


def as_weight_array(weights, num_keys: int, name: str = "weights", per: str = "key"
                    ) -> np.ndarray:
    """Return weights as a 1-d native-endian array of float32, float64, int64 or
    uint64, one per key, for the exact weighted sums.

    float16 widens to float32 and narrower integers to int64 / uint64: exact,
    at the cost of a copy. Other dtypes (bool, complex, long double, object)
    raise TypeError: none has a sum that this rule defines.
    """
    arr = as_number_array(weights, name)
    if arr.dtype.kind not in "fiu" or (arr.dtype.kind == "f" and arr.itemsize > 8):
        raise _numeric_dtype_error(arr, f"{name} must be float16, float32, float64 or integer")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    if len(arr) != num_keys:
        raise ValueError(f"{name} must hold one weight per {per}: {num_keys} {per}s, "
                         f"{len(arr)} {name}")
    wide = {"f": np.float32, "i": np.int64, "u": np.uint64}[arr.dtype.kind]
    if arr.dtype.kind == "f" and arr.itemsize >= 4:
        wide = arr.dtype.type
    if arr.dtype != np.dtype(wide) or not arr.dtype.isnative:
        arr = arr.astype(np.dtype(wide).newbyteorder("="))
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


# The oracles keep counts as int64; this many bins is past any machine's memory.
MAX_BINS = 2**62


def bin_count(value, name: str = "num_bins") -> int:
    """A bin count: an int in [1, 2**62], named in every error."""
    number = positive_int(value, name)
    if number > MAX_BINS:
        raise ValueError(f"{name} must be <= 2**62; got {number}")
    return number


def available_memory() -> int | None:
    """Bytes of memory this process can still get (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def require_memory(nbytes: int, what: str) -> None:
    """MemoryError naming `what` before the work starts, when nbytes cannot fit."""
    free = available_memory()
    if free is not None and nbytes > free:
        raise MemoryError(f"{what} needs {_human(nbytes)} ({nbytes} bytes); "
                          f"this machine has {_human(free)} available")


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{nbytes} B"


class BadKeyError(ValueError):
    """A key outside [0, num_bins); ``index`` is the first such key's, ``value`` its value."""

    __module__ = "histkit.oracles"  # where users import it from

    def __init__(self, index: int, value: int, num_bins: int):
        super().__init__(f"key at index {index} is {value}, outside [0, {num_bins})")
        self.index = index
        self.value = value
        self.num_bins = num_bins

    def __reduce__(self):
        # Dask workers pickle errors they pass on: rebuild from all three arguments.
        return type(self), (self.index, self.value, self.num_bins)


def bad_key_error(index: int, value: int, num_bins: int) -> BadKeyError:
    """The error every histkit entry point, CPU or GPU, gives an out-of-range key."""
    return BadKeyError(index, value, num_bins)


def values_per_key_error(num_keys: int, shape: tuple) -> ValueError:
    """The error the radix sorts, CPU or GPU, give values of shape `shape`
    that are not one entry per key."""
    return ValueError(f"values must hold one entry per key: {num_keys} keys, "
                      f"values of shape {shape}")


def refuse_bad_counts(counts: np.ndarray, negative_at: int, overflow_at: int) -> None:
    """The errors every exclusive scan, CPU or GPU, gives counts it refuses:
    the first negative count (negative_at), or the count that carries an
    offset past int64 (overflow_at); -1 where there is none."""
    if negative_at >= 0:
        raise ValueError(f"counts must be >= 0; count at index {negative_at} is "
                         f"{counts[negative_at].item()}")
    if overflow_at >= 0:
        raise OverflowError(f"offsets pass int64 at the count at index {overflow_at}")


def raise_bad_key(keys: np.ndarray, index: int, num_bins: int) -> None:
    raise bad_key_error(index, keys[index].item(), num_bins)


def bad_key_before_counters(keys: np.ndarray, num_bins: int) -> None:
    """Where num_bins counters cost more to set up (or to ask memory for) than
    the keys do to read (num_bins > len(keys)): BadKeyError for the first key
    outside [0, num_bins), if any, before the counters; elsewhere nothing (the
    count itself finds a bad key)."""
    if num_bins <= len(keys):
        return
    outside = keys >= num_bins
    if keys.dtype.kind == "i":
        outside |= keys < 0
    found = np.flatnonzero(outside)
    if len(found):
        raise_bad_key(keys, int(found[0]), num_bins)
