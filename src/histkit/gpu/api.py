"""histkit.gpu's public functions: input checks, device residency, results.

Keys may be NumPy arrays (copied to the device) or device arrays from any
library speaking DLPack or ``__cuda_array_interface__`` (CuPy, PyTorch, ...),
used in place. Results come back as the same kind: NumPy in, NumPy out; a
CuPy or PyTorch array in, one of theirs out (sharing histkit's allocation).
Bad input raises exactly what the oracles raise, out-of-range keys included
(found on the device, reported with the first bad index and its value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histkit.gpu import registry
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.device import DeviceArray, Runtime, runtime
from histkit.gpu.errors import DeviceMemoryError
from histkit.gpu.kernels import Keys
from histkit.oracles._inputs import as_key_array, bad_key_error, bin_count

METHODS = registry.methods("histogram")


@dataclass
class _Input:
    """Keys resident on the device, and what to hand results back as."""

    keys: Keys
    framework: str  # "numpy", "cupy", "torch" or "device"
    owner: object  # keeps the device memory alive while kernels read it


def _framework_of(obj) -> str:
    module = type(obj).__module__.split(".")[0]
    return module if module in ("cupy", "torch") else "device"


# DLPack device types that name GPU memory (CUDA, CUDA managed).
_DLPACK_CUDA = (2, 13)


def is_device_array(obj) -> bool:
    if isinstance(obj, np.ndarray):
        return False
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    try:
        return obj.__dlpack_device__()[0] in _DLPACK_CUDA
    except Exception:  # no DLPack, or a host-only exporter
        return False


def _on_device(rt: Runtime, keys, name: str = "keys") -> _Input:
    if is_device_array(keys):
        return _device_view(rt, keys, name)
    host = as_key_array(keys, name)
    array = rt.to_device(host)
    return _Input(Keys(array.ptr, len(host), host.dtype), "numpy", array)


def _device_view(rt: Runtime, obj, name: str) -> _Input:
    framework = _framework_of(obj)
    if framework == "cupy":
        return _cupy_view(rt, obj, name)
    from cuda.core.utils import StridedMemoryView

    # Passing our stream orders our kernels after the producer's pending work.
    view = StridedMemoryView.from_any_interface(obj, stream_ptr=int(rt.stream.handle))
    shape = tuple(view.shape)
    strided = view.strides is not None and shape and shape[0] > 1 and tuple(view.strides) != (1,)
    _check_layout(np.dtype(view.dtype), shape, name,
                  f"strides {view.strides} (in elements)" if strided else None)
    _check_device(rt, view.device_id, name)
    return _Input(Keys(view.ptr, shape[0], np.dtype(view.dtype)), framework, obj)


def _cupy_view(rt: Runtime, array, name: str) -> _Input:
    """A CuPy array read through its __cuda_array_interface__ (v3): cheaper per
    call than a general view; our stream waits for the stream it names."""
    interface = array.__cuda_array_interface__
    dtype = np.dtype(interface["typestr"])
    shape = tuple(interface["shape"])
    strides = interface.get("strides")
    strided = (strides is not None and len(shape) == 1 and shape[0] > 1
               and tuple(strides) != (dtype.itemsize,))
    _check_layout(dtype, shape, name, f"strides {tuple(strides)} (in bytes)" if strided else None)
    _check_device(rt, array.device.id, name)
    stream = interface.get("stream")
    if stream is not None:
        rt.wait_for(int(stream))
    return _Input(Keys(int(interface["data"][0]), shape[0], dtype), "cupy", array)


def _check_layout(dtype: np.dtype, shape: tuple, name: str, strided: str | None) -> None:
    """Integer keys in one contiguous dimension (strided: the strides, when not contiguous)."""
    if dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype (int8 ... uint64); got {dtype}")
    if len(shape) != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {shape}")
    if strided:
        raise ValueError(f"device {name} must be contiguous; got {strided}; "
                         f"make a contiguous copy first")


def _check_device(rt: Runtime, device_id: int, name: str) -> None:
    if device_id != rt.device.device_id:
        raise ValueError(f"{name} live on device {device_id}; histkit runs on "
                         f"device {rt.device.device_id}")


def _hand_back(rt: Runtime, source: _Input, array: DeviceArray):
    """A result in the caller's kind of array (the device array is synchronised)."""
    if source.framework == "numpy":
        return rt.copy_to_host(array.ptr, np.empty(array.n, dtype=array.dtype))
    if source.framework == "cupy":
        import cupy

        # Our memory seen by CuPy directly (cupy.asarray would ask the driver
        # which device holds the pointer, on every call); array keeps it alive.
        memory = cupy.cuda.UnownedMemory(array.ptr, array.n * array.dtype.itemsize, array,
                                         rt.device.device_id)
        return cupy.ndarray((array.n,), array.dtype, cupy.cuda.MemoryPointer(memory, 0))
    if source.framework == "torch":
        import torch

        return torch.as_tensor(array, device=source.owner.device)
    return array


def _raise_if_bad(rt: Runtime, first_bad: DeviceArray, keys: Keys, num_bins: int) -> None:
    """Wait for the call's work; raise the oracles' error if a kernel noted a bad key."""
    index = rt.read_bad_key(first_bad)
    if index != NO_BAD_KEY:
        value = rt.copy_to_host(keys.ptr + index * keys.dtype.itemsize,
                                np.empty(1, keys.dtype))[0]
        raise bad_key_error(index, value.item(), num_bins)


def histogram(keys, num_bins: int, method: str = "auto"):
    """Histogram of keys on the GPU (int64 counts).

    method: "atomic" (one global atomicAdd per key), "privatized" (the
    chapter's shared-memory kernel), "partitioned" (two passes, for many
    bins: up to 2^22), "naive" (the chapter's racy non-atomic kernel: it
    LOSES updates, on purpose) or "auto" (the fastest exact kernel).
    """
    num_bins = bin_count(num_bins)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    keys = keys if is_device_array(keys) else as_key_array(keys)
    rt = runtime()
    source = _on_device(rt, keys)
    try:
        hist = rt.zeros(num_bins, np.int64)
    except DeviceMemoryError as error:
        raise DeviceMemoryError(error.nbytes, error.free,
                                f"num_bins={num_bins} (int64 counts)") from None
    first_bad = rt.bad_key_slot()
    if source.keys.n:
        registry.serving("histogram", method).run(rt, source.keys, num_bins, hist, first_bad)
    _raise_if_bad(rt, first_bad, source.keys, num_bins)
    return _hand_back(rt, source, hist)


def counting_sort(keys, num_bins: int, stable: bool = True):
    """(sorted_keys, original_index) on the GPU.

    stable=True: the exact stable sort (equals oracles.counting_sort).
    stable=False: the chapter's atomic-cursor scatter; sorted, but equal keys
    may leave their input order.
    """
    num_bins = bin_count(num_bins)
    keys = keys if is_device_array(keys) else as_key_array(keys)
    rt = runtime()
    source = _on_device(rt, keys)
    n = source.keys.n
    out_keys = rt.empty(n, source.keys.dtype)
    out_index = rt.empty(n, np.int64)
    first_bad = rt.bad_key_slot()
    keep_alive: list = []
    if n:
        registry.serving("counting_sort", bool(stable)).run(
            rt, source.keys, num_bins, out_keys, out_index, first_bad, keep_alive,
            between=lambda: _raise_if_bad(rt, first_bad, source.keys, num_bins))
    rt.sync("counting_sort")
    return _hand_back(rt, source, out_keys), _hand_back(rt, source, out_index)


def exclusive_scan(counts):
    """Exclusive prefix sum of non-negative integer counts on the GPU (int64)."""
    host_counts = None
    if not is_device_array(counts):  # check the input before looking for a GPU
        host_counts = as_key_array(counts, name="counts")
        _require_int64_counts(host_counts.dtype, len(host_counts))
        _refuse_negative(host_counts)
    rt = runtime()
    source = _on_device(rt, counts if host_counts is None else host_counts, name="counts")
    n = source.keys.n
    _require_int64_counts(source.keys.dtype, n)
    out = rt.empty(n, np.int64)
    keep_alive: list = []
    if n:
        if host_counts is None:
            _refuse_negative(rt.copy_to_host(source.keys.ptr, np.empty(n, np.int64)))
        registry.serving("exclusive_scan").run(rt, source.keys.ptr, n, out.ptr, keep_alive)
    rt.sync("exclusive_scan")
    return _hand_back(rt, source, out)


def _require_int64_counts(dtype: np.dtype, n: int) -> None:
    if n and dtype != np.dtype(np.int64):
        raise TypeError("gpu.exclusive_scan takes int64 counts (the histograms' dtype); "
                        f"got {dtype}")


def _refuse_negative(counts: np.ndarray) -> None:
    negative = np.flatnonzero(counts < 0)
    if negative.size:
        raise ValueError(f"counts must be >= 0; count at index {negative[0]} is "
                         f"{counts[negative[0]]}")


__all__ = ["METHODS", "counting_sort", "exclusive_scan", "histogram"]
