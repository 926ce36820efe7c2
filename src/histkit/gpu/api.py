"""histkit.gpu's public functions: input checks, streams, results.

Keys may be NumPy arrays (copied to the device) or device arrays from any
library speaking DLPack or ``__cuda_array_interface__`` (CuPy, PyTorch, ...),
used in place. Results come back as the same kind: NumPy in, NumPy out; a
CuPy or PyTorch array in, one of theirs out, allocated by that library on the
call's stream (its memory pool then orders reuse as for its own arrays).

Streams. A call on CuPy or PyTorch keys runs on that library's current
stream, so it is ordered with the caller's work without any cross-stream
wait; ``stream=`` names another (a CuPy, PyTorch or cuda.core stream,
anything with ``__cuda_stream__``, or a raw CUstream handle). NumPy keys and
other device arrays run on histkit's own stream unless ``stream=`` is given.

Checking. ``check=True`` (the default) waits for the call and raises the
oracles' ``BadKeyError`` (first bad index and its value) for a key outside
``[0, num_bins)``. ``check=False`` waits for nothing (except to copy results
back to NumPy): the call returns its results and ``first_bad``, a one-element
uint64 device array in which the kernels leave the first bad index
(``NO_BAD_KEY`` = 2**64 - 1 when there is none); ``raise_if_bad`` turns it
into the error later. Bad keys are never counted, nor written anywhere. With
``out=`` and ``first_bad=`` given, a histogram call allocates nothing, so a
loop of calls can be captured in a CUDA graph and replayed.

The compiled lane. gpu.histogram's common call (CuPy or PyTorch keys on
their framework's current stream, method="auto", check= and nothing else
given) runs in histkit.gpu._lane (its Python side: histkit.gpu._lane_calls):
where auto launches one kernel, it makes the same driver calls as the Python
path without its glue; elsewhere it replays auto's launches, recorded once
per shape (histkit.gpu.recording). gpu.counting_sort's common call (the
same, stable=True, int64 indices) runs its launcher from there too. An
unchecked call there waits for nothing, as below. Every other call, and any
problem with the arguments, takes the Python path (histkit.gpu._calls, on
arrays read by histkit.gpu._arrays).

Threads. Calls may come from any thread (a Dask worker's, a server's): the
first call on a thread makes histkit's device's CUDA context current there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from histkit.gpu import registry
from histkit.gpu._arrays import (
    check_same_kind,
    check_value_dtype,
    framework_of,
    is_device_array,
    stream_handle,
)
from histkit.gpu._calls import (
    Call,
    Deferred,
    Out,
    allocate,
    begin,
    borrow,
    check_options,
    device_view,
    fill,
    first_bad_word,
    hand_back,
    host_gpu_weights,
    open_call,
    precheck_out,
    raise_noted_bad_key,
    weights_on_device,
)
from histkit.gpu._lane_calls import LANE_FRAMEWORKS, lane_for
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.device import DeviceArray, runtime
from histkit.gpu.errors import UnsupportedShape
from histkit.gpu.policy import check_index_dtype
from histkit.oracles._inputs import (
    as_array,
    as_key_array,
    bad_key_error,
    bin_count,
    boolean,
    refuse_bad_counts,
    values_per_key_error,
)
from histkit.oracles._scan import exclusive_scan_counts

if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from numpy.typing import DTypeLike

    # A NumPy array (copied to the device, results copied back) or a device
    # array from CuPy, PyTorch or anything speaking DLPack or
    # __cuda_array_interface__ (used in place; results of the same kind).
    AnyArray: TypeAlias = Any
    # A CuPy, PyTorch or cuda.core stream, anything with __cuda_stream__, a
    # raw CUstream handle, or None (the keys' framework's current stream).
    AnyStream: TypeAlias = Any

METHODS = registry.methods("histogram")
"""The names `histogram` takes as ``method=``, from the kernel registry."""


# --- keys on the device ------------------------------------------------------


# --- results -----------------------------------------------------------------

# --- the calls ---------------------------------------------------------------

def histogram(keys: AnyArray, num_bins: int, method: str = "auto", *,
              weights: AnyArray | None = None, out: AnyArray | None = None,
              stream: AnyStream = None, check: bool = True,
              first_bad: AnyArray | None = None) -> AnyArray | tuple[AnyArray, AnyArray]:
    """Histogram of keys on the GPU (int64 counts, or float64 sums of weights).

    Equals `histkit.oracles.histogram` for every exact method, with weights
    too: each bin's sum is the exact sum of its weights rounded once to
    float64 (``math.fsum``'s value), the same bits on every call. Bad
    arguments raise what the oracles raise, before a GPU is looked for; keys
    outside ``[0, num_bins)`` are found on the device.

    Parameters
    ----------
    keys : array
        One-dimensional integer keys (int8 ... uint64): a NumPy array (copied
        to the device) or a device array from CuPy, PyTorch or anything
        speaking DLPack or ``__cuda_array_interface__`` (used in place).
    num_bins : int
        The number of bins, K >= 1.
    method : {"auto", "atomic", "privatized", "partitioned", "naive"}, default "auto"
        "atomic" (one global atomicAdd per key), "privatized" (the chapter's
        shared-memory kernel), "partitioned" (two passes, for many bins: up
        to 2^22), "naive" (the chapter's racy non-atomic kernel: it LOSES
        updates, on purpose) or "auto" (the fastest exact kernel). With
        `weights`, "auto" only.
    weights : array, optional
        One float32 or float64 weight per key (NumPy weights may be float16,
        widened exactly), the same kind of array as the keys. Each bin gets
        the exact sum of its keys' weights, correctly rounded to float64; a
        NaN weight makes its bin NaN, +inf and -inf in one bin make it NaN, a
        sum past the float64 range is +-inf.
    out : device array, optional
        `num_bins` int64 (float64 with `weights`) on the device to write the
        counts into (returned as
        itself; with NumPy keys and ``check=False``, pass the stream you will
        read it on as `stream`). With `out` and `first_bad` given, the call
        allocates nothing, so it can be captured in a CUDA graph.
    stream : stream, optional
        The stream to run on; default: the keys' framework's current stream,
        else histkit's own.
    check : bool, default True
        True: wait, and raise for a bad key. False: return ``(counts,
        first_bad)`` without waiting (see the module's docstring).
    first_bad : device array, optional
        With ``check=False``: a one-element uint64 device array to leave the
        first bad index in, instead of a new one.

    Returns
    -------
    counts : array
        int64 counts (float64 sums with `weights`), of the keys' kind (NumPy
        keys: a NumPy array), or `out`.
    first_bad : array
        Only with ``check=False``: one uint64, the first bad key's index, or
        2**64 - 1 when there is none (see `raise_if_bad`). Bad keys are
        never counted.

    Raises
    ------
    histkit.oracles.BadKeyError
        With ``check=True``, a key outside ``[0, num_bins)``.
    TypeError
        Keys that are not integers.
    ValueError
        A `method` not in `METHODS`, keys that are not one-dimensional,
        `num_bins` out of range, an `out` of the wrong dtype or length.
    GpuUnavailableError
        No usable GPU, driver or cuda-python (the message says which).
    DeviceMemoryError
        The counts do not fit in the GPU's free memory.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import gpu
    >>> gpu.histogram(np.array([0, 1, 1, 3]), 4)  # doctest: +SKIP
    array([1, 2, 0, 1])
    >>> counts, first_bad = gpu.histogram(np.array([0, 5]), 4, check=False)  # doctest: +SKIP
    >>> gpu.histogram(np.array([0, 0, 0, 1]), 2, weights=np.array([1e16, 1.0, -1e16, 0.5]))
    ... # doctest: +SKIP
    array([1. , 0.5])

    Bad arguments are refused before a GPU is looked for:

    >>> gpu.histogram(np.array([0.5, 1.5]), 4)
    Traceback (most recent call last):
    ...
    TypeError: keys must have an integer dtype (int8 ... uint64); got float64
    """
    if not isinstance(method, str):
        raise TypeError(f"method must be one of {METHODS}; got {type(method).__name__} "
                        f"(weights go by keyword: gpu.histogram(keys, num_bins, weights=w))")
    if weights is not None:
        return _weighted_histogram(keys, weights, num_bins, method, out, stream, check,
                                   first_bad)
    framework = framework_of(keys)
    if (method == "auto" and (check is True or check is False) and out is None
            and stream is None and first_bad is None and framework in LANE_FRAMEWORKS):
        lane = lane_for(runtime(), framework)
        result = None if lane is None else lane.histogram(keys, num_bins, check)
        if result is not None:
            return result
    keys = keys if is_device_array(keys) else as_key_array(keys)  # named before num_bins
    num_bins = bin_count(num_bins)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    precheck_out(out, num_bins, np.int64, "out")
    call = open_call(keys, stream, check, first_bad)
    hist = (Deferred(call, num_bins, np.int64, "num_bins={} (int64 counts)", num_bins)
            if out is None
            else borrow(call, out, num_bins, np.int64, "out"))
    slot = first_bad_word(call, check, first_bad)
    if call.keys.n:  # the launcher leaves exact counts in hist, whatever it held
        registry.serving("histogram", method).run(call.rt, call.keys, num_bins, hist, slot)
    else:  # no keys, no launch: zeros
        fill(call, hist, 0, num_bins * 8)
    if check:
        raise_noted_bad_key(call.rt, slot, call.keys, num_bins)
    # A caller's out= comes back as itself, whatever kind the keys were.
    counts = out if out is not None else hand_back(call, hist)
    return counts if check else (counts, hand_back(call, slot))


def _weighted_histogram(keys, weights, num_bins, method, out, stream, check, first_bad):
    """gpu.histogram with weights: exact float64 sums (launch.weighted)."""
    on_device = is_device_array(keys)
    keys = keys if on_device else as_key_array(keys)  # named before num_bins, as the oracle does
    num_bins = bin_count(num_bins)
    if method != "auto":
        raise ValueError(f"with weights, method must be 'auto'; got {method!r}")
    check_options(check, first_bad)
    check_same_kind(keys, weights, on_device, "weights")
    if not on_device:
        weights = host_gpu_weights(weights, len(keys))
    precheck_out(out, num_bins, np.float64, "out")
    handle = stream_handle(stream)
    call = begin(runtime(), keys, handle, on_device)
    device_weights, owner = weights_on_device(call, weights, on_device)
    sums = (allocate(call, num_bins, np.float64, "num_bins={} (float64 sums)", num_bins)
            if out is None else borrow(call, out, num_bins, np.float64, "out"))
    slot = first_bad_word(call, check, first_bad)
    if call.keys.n:
        registry.weighted_kernel().run(call.rt, call.keys, device_weights, num_bins, sums, slot)
    else:
        fill(call, sums, 0, num_bins * 8)
    del owner  # freed stream-ordered: after the kernels that read it
    if check:
        raise_noted_bad_key(call.rt, slot, call.keys, num_bins)
    result = out if out is not None else hand_back(call, sums)
    return result if check else (result, hand_back(call, slot))


def counting_sort(keys: AnyArray, num_bins: int, stable: bool = True, *,
                  index_dtype: DTypeLike = np.int64, stream: AnyStream = None,
                  check: bool = True, first_bad: AnyArray | None = None,
                  ) -> tuple[AnyArray, AnyArray] | tuple[AnyArray, AnyArray, AnyArray]:
    """(sorted_keys, original_index) on the GPU.

    ``stable=True`` is the exact stable sort: it equals
    `histkit.oracles.counting_sort`.

    Parameters
    ----------
    keys : array
        One-dimensional integer keys, as for `histogram`.
    num_bins : int
        The number of bins, K >= 1.
    stable : bool, default True
        False: the chapter's atomic-cursor scatter; sorted, but equal keys may
        leave their input order.
    index_dtype : {numpy.int64, numpy.int32}, default numpy.int64
        The original indices' dtype: int64 (the oracles'), or int32 for up to
        2^31 keys (4 bytes less to write per key).
    stream : stream, optional
        As for `histogram`.
    check : bool, default True
        As for `histogram`: False returns `first_bad` too, without waiting.
    first_bad : device array, optional
        As for `histogram`.

    Returns
    -------
    sorted_keys : array
        The keys in ascending order, in their dtype and kind.
    original_index : array
        ``sorted_keys[i] == keys[original_index[i]]``.
    first_bad : array
        Only with ``check=False``, as for `histogram`. With bad keys,
        the first slots hold the valid keys' sort and the last ones (one per
        bad key) are unspecified.

    Raises
    ------
    histkit.oracles.BadKeyError
        With ``check=True``, a key outside ``[0, num_bins)``.
    TypeError
        Keys that are not integers; an `index_dtype` other than int32 or int64.
    ValueError
        Keys that are not one-dimensional, `num_bins` out of range, int32
        indices for more than 2^31 keys.
    GpuUnavailableError
        No usable GPU, driver or cuda-python.
    DeviceMemoryError
        The results do not fit in the GPU's free memory.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import gpu
    >>> gpu.counting_sort(np.array([2, 0, 2, 1, 0]), 3)  # doctest: +SKIP
    (array([0, 0, 1, 2, 2]), array([1, 4, 3, 0, 2]))
    >>> gpu.counting_sort(np.array([2, 0]), 3, index_dtype=np.int16)
    Traceback (most recent call last):
    ...
    TypeError: index_dtype must be int32 or int64; got int16
    """
    if (stable is True and (check is True or check is False) and stream is None
            and first_bad is None and index_dtype is np.int64
            and (framework := framework_of(keys)) in LANE_FRAMEWORKS):
        lane = lane_for(runtime(), framework)
        result = None if lane is None else lane.counting_sort(keys, num_bins, check)
        if result is not None:
            return result
    keys = keys if is_device_array(keys) else as_key_array(keys)  # named before num_bins
    num_bins = bin_count(num_bins)
    stable = boolean(stable, "stable")
    index_dtype = _index_dtype(index_dtype, _length(keys))
    call = open_call(keys, stream, check, first_bad)
    n = call.keys.n
    _index_dtype(index_dtype, n)  # device keys' length is known from here on
    out_keys = allocate(call, n, call.keys.dtype, "sorting {} keys", n)
    out_index = allocate(call, n, index_dtype, "sorting {} keys", n)
    slot = first_bad_word(call, check, first_bad)
    keep_alive: list = []  # scratch, freed on the call's stream after its kernels
    if n:
        registry.serving("counting_sort", bool(stable)).run(
            call.rt, call.keys, num_bins, out_keys, out_index, slot, keep_alive,
            index_dtype=index_dtype)
    if check:
        raise_noted_bad_key(call.rt, slot, call.keys, num_bins)
        return hand_back(call, out_keys), hand_back(call, out_index)
    return hand_back(call, out_keys), hand_back(call, out_index), hand_back(call, slot)


def exclusive_scan(counts: AnyArray, *, stream: AnyStream = None) -> AnyArray:
    """Exclusive prefix sum of non-negative integer counts on the GPU (int64).

    Equals `histkit.oracles.exclusive_scan`. The call waits for its
    result.

    Parameters
    ----------
    counts : array
        One-dimensional non-negative counts: int64 (the histograms' dtype),
        as a NumPy or device array.
    stream : stream, optional
        As for `histogram`.

    Returns
    -------
    array
        int64 offsets, one per count, of the counts' kind.

    Raises
    ------
    ValueError
        A negative count, named by index and value.
    TypeError
        Counts that are not int64.
    OverflowError
        Offsets that would pass the int64 range, as the oracle says.
    GpuUnavailableError
        No usable GPU, driver or cuda-python.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import gpu
    >>> gpu.exclusive_scan(np.array([3, 0, 2, 5]))  # doctest: +SKIP
    array([0, 3, 3, 5])
    >>> gpu.exclusive_scan(np.array([3, -1]))
    Traceback (most recent call last):
    ...
    ValueError: counts must be >= 0; count at index 1 is -1
    """
    host_counts = None
    if not is_device_array(counts):  # check the input before looking for a GPU
        host_counts = as_key_array(counts, name="counts")
        _require_int64_counts(host_counts.dtype, len(host_counts))
        _refuse_bad_counts(host_counts)
    handle = stream_handle(stream)
    call = begin(runtime(), counts if host_counts is None else host_counts, handle,
                  on_device=host_counts is None, name="counts")
    n = call.keys.n
    _require_int64_counts(call.keys.dtype, n)
    out = allocate(call, n, np.int64, "scanning {} counts", n)
    keep_alive: list = []
    if n:
        if host_counts is None:
            _refuse_bad_counts(call.rt.copy_to_host(call.keys.ptr, np.empty(n, np.int64)))
        registry.serving("exclusive_scan").run(call.rt, call.keys.ptr, n, out.ptr, keep_alive)
    call.rt.sync("exclusive_scan")
    return hand_back(call, out)


def radix_sort(keys: AnyArray, values: AnyArray | None = None, *, stable: bool = True,
               index_dtype: DTypeLike = np.int64,
               stream: AnyStream = None) -> tuple[AnyArray, AnyArray]:
    """Stable sort of full-width integer keys on the GPU (signed keys in signed
    order): the counting sort once per byte of the key (7.3's "radix sort").

    Equals `histkit.oracles.radix_sort`. With device keys nothing
    waits (no key can be bad); NumPy keys come back synchronised.

    Parameters
    ----------
    keys : array
        One-dimensional integer keys over the dtype's whole range.
    values : array, optional
        One value per key, moved with it: any 1-, 2-, 4- or 8-byte dtype, the
        same kind of array as `keys`.
    stable : bool, default True
        Accepted for symmetry with `counting_sort`; the sort is always
        stable, and False gets the stable order too.
    index_dtype : {numpy.int64, numpy.int32}, default numpy.int64
        As for `counting_sort`.
    stream : stream, optional
        As for `histogram`.

    Returns
    -------
    sorted_keys : array
        The keys in ascending order.
    original_index_or_values : array
        The original indices, or the values in the keys' sorted order when
        `values` are given.

    Raises
    ------
    TypeError
        Keys that are not integers; values of another kind of array than the
        keys or of an unsupported dtype; `stable` not a bool.
    ValueError
        Keys that are not one-dimensional; values not one per key.
    GpuUnavailableError
        No usable GPU, driver or cuda-python.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import gpu
    >>> gpu.radix_sort(np.array([5, -3, 70000, -3, 0]))  # doctest: +SKIP
    (array([   -3,    -3,     0,     5, 70000]), array([1, 3, 4, 0, 2]))
    """
    stable = boolean(stable, "stable")
    index_dtype = _index_dtype(index_dtype, _length(keys))
    call, values_in = _open_radix(keys, values, stream)
    n = call.keys.n
    _index_dtype(index_dtype, n)  # device keys' length is known from here on
    out_keys = allocate(call, n, call.keys.dtype, "sorting {} keys", n)
    out_index = allocate(call, n, index_dtype, "sorting {} keys", n)
    out_values = None
    if values_in is not None:
        out_values = allocate(call, n, values_in.dtype, "sorting {} values", n)
    if n:
        keep_alive: list = []  # scratch, freed on the call's stream after its kernels
        registry.serving("radix_sort").run(
            call.rt, call.keys, out_keys, out_index, keep_alive,
            values=None if values_in is None else (values_in.ptr, values_in.dtype.itemsize,
                                                   out_values.ptr),
            index_dtype=index_dtype)
    sorted_keys = hand_back(call, out_keys)
    if out_values is None:
        return sorted_keys, hand_back(call, out_index)
    return sorted_keys, hand_back(call, out_values)


def argsort(keys: AnyArray, *, index_dtype: DTypeLike = np.int64,
            stream: AnyStream = None) -> AnyArray:
    """The stable sorting permutation of integer keys on the GPU.

    As ``np.argsort(keys, kind="stable")``: `radix_sort`'s original
    indices.

    Parameters
    ----------
    keys : array
        One-dimensional integer keys over the dtype's whole range.
    index_dtype : {numpy.int64, numpy.int32}, default numpy.int64
        int64, or int32 for up to 2^31 keys.
    stream : stream, optional
        As for `histogram`.

    Returns
    -------
    array
        The indices that sort `keys` stably.

    Raises
    ------
    TypeError
        Keys that are not integers.
    ValueError
        Keys that are not one-dimensional.
    GpuUnavailableError
        No usable GPU, driver or cuda-python.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import gpu
    >>> gpu.argsort(np.array([5, -3, 70000, -3, 0]))  # doctest: +SKIP
    array([1, 3, 4, 0, 2])
    """
    return radix_sort(keys, index_dtype=index_dtype, stream=stream)[1]


def _length(keys) -> int:
    """How many keys, before they are checked (0 when that cannot be told yet:
    the call's own checks then name the problem)."""
    try:
        return len(keys)
    except TypeError:
        return 0


def _index_dtype(index_dtype, n: int) -> np.dtype:
    """The sorts' index_dtype, checked: int64, or int32 for up to 2^31 keys."""
    try:
        return check_index_dtype(n, index_dtype)
    except UnsupportedShape as error:
        raise ValueError(str(error)) from None


def _open_radix(keys, values, stream) -> tuple[Call, Out | None]:
    """A radix sort's call, and its values on the device (None: no values),
    every argument checked before a GPU is looked for."""
    on_device = is_device_array(keys)
    keys = keys if on_device else as_key_array(keys)
    if values is not None:
        check_same_kind(keys, values, on_device, "values")
        if not on_device:  # read as the oracle reads them, with its errors
            values = as_array(values, "values", "an array of one entry per key")
            if values.shape[:1] != keys.shape:
                raise values_per_key_error(len(keys), values.shape)
            if values.ndim != 1:
                raise ValueError(f"values must be one-dimensional; got shape {values.shape}")
            check_value_dtype(values.dtype)
            values = np.ascontiguousarray(values)
    handle = stream_handle(stream)
    call = begin(runtime(), keys, handle, on_device)
    if values is None:
        return call, None
    if not on_device:
        array = call.rt.to_device(values)
        return call, Out(array.ptr, len(values), values.dtype, array)
    ptr, n, dtype = device_view(call, values, "values", integer=False)
    if n != call.keys.n:
        raise values_per_key_error(call.keys.n, (n,))
    return call, Out(ptr, n, dtype, values)


def raise_if_bad(first_bad: AnyArray, keys: AnyArray, num_bins: int) -> None:
    """Raise the oracles' BadKeyError if `first_bad` holds a bad index of keys.

    Turns what a ``check=False`` call returned into the error a checked call
    raises. Reads two elements, waiting for the call's work.

    Parameters
    ----------
    first_bad : array
        The one-element uint64 array a ``check=False`` call returned (2**64 - 1:
        no bad key).
    keys : array
        The keys that call was given.
    num_bins : int
        The call's `num_bins`.

    Raises
    ------
    histkit.oracles.BadKeyError
        `first_bad` names a bad key: its index and value.
    TypeError
        `first_bad` is not an array of one integer.
    ValueError
        `first_bad` holds more or fewer than one element, or a value that is
        neither an index of a bad key nor 2**64 - 1.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import gpu
    >>> keys = np.array([0, 7, 1])
    >>> gpu.raise_if_bad(np.array([2**64 - 1], dtype=np.uint64), keys, 4)  # none
    >>> gpu.raise_if_bad(np.array([1], dtype=np.uint64), keys, 4)
    Traceback (most recent call last):
    ...
    histkit.oracles.BadKeyError: key at index 1 is 7, outside [0, 4)
    """
    num_bins = bin_count(num_bins)
    if not hasattr(first_bad, "__len__") and not isinstance(first_bad, DeviceArray):
        raise TypeError(f"first_bad must be the one-element uint64 array a check=False "
                        f"call returned; got {type(first_bad).__name__}")
    if _elements(first_bad) != 1:
        raise ValueError(f"first_bad must be the one-element word a check=False call "
                         f"returned; got {type(first_bad).__name__} of "
                         f"{_elements(first_bad)} elements")
    index = _element(first_bad, 0)
    if not isinstance(index, int) or isinstance(index, bool):  # not truncated into an index
        raise TypeError(f"first_bad must be the one-element uint64 array a check=False "
                        f"call returned; it holds {index!r}")
    if index == NO_BAD_KEY:
        return
    n = _elements(keys)
    if not 0 <= index < n:
        raise ValueError(f"first_bad holds {index}: neither an index of the {n} keys nor "
                         f"2**64 - 1 (no bad key); pass the word the check=False call on "
                         f"these keys returned")
    value = _element(keys, index)
    if 0 <= value < num_bins:
        raise ValueError(f"first_bad names index {index}, whose key {value} lies in "
                         f"[0, {num_bins}); pass the word the check=False call on these "
                         f"keys returned, and its num_bins")
    raise bad_key_error(index, value, num_bins)


def _elements(array) -> int:
    """How many elements array holds (histkit's DeviceArray included)."""
    return array.n if isinstance(array, DeviceArray) else _length(array)


def _element(array, index: int) -> int:
    """array[index] as a Python scalar (an int for integer arrays), from any
    array histkit takes or returns."""
    if isinstance(array, DeviceArray):  # histkit's own: wait for every stream
        rt = runtime()
        rt.device.sync()
        return rt.copy_to_host(array.ptr + index * array.dtype.itemsize,
                               np.empty(1, array.dtype))[0].item()
    element = array[index]
    return element.item() if hasattr(element, "item") else element


def _require_int64_counts(dtype: np.dtype, n: int) -> None:
    if n and dtype != np.dtype(np.int64):
        raise TypeError("gpu.exclusive_scan takes int64 counts (the histograms' dtype); "
                        f"got {dtype}")


def _refuse_bad_counts(counts: np.ndarray) -> None:
    """The oracle's error for int64 counts it refuses: a negative count, or
    offsets past int64, where the kernel's 64-bit sums would wrap. Where no
    count is negative and none before the last is large enough for n - 1 of
    them to pass int64, that is all; else the oracle's own scan names the
    count, as the oracle does."""
    n = len(counts)
    if not n:
        return
    bound = np.iinfo(np.int64).max // max(1, n - 1)
    if counts.min() >= 0 and (n == 1 or counts[:-1].max() <= bound):
        return
    _, negative_at, overflow_at = exclusive_scan_counts(counts)
    refuse_bad_counts(counts, negative_at, overflow_at)


__all__ = ["METHODS", "argsort", "counting_sort", "exclusive_scan", "histogram",
           "radix_sort", "raise_if_bad", "stream_handle"]
