"""One public call of histkit.gpu: its runtime on the call's stream, its keys
on the device, the arrays it writes, and how results go back to the caller
(NumPy in, NumPy out; a CuPy or PyTorch array in, one of theirs out,
allocated by that library on the call's stream).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from histkit.gpu._arrays import (
    READ_IN_PLACE,
    cupy_stream,
    current_stream,
    framework_of,
    interface_view,
    is_device_array,
    read_in_place,
    stream_handle,
    torch_dtype_of,
    torch_dtypes,
)
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.device import DeviceArray, Runtime, runtime
from histkit.gpu.errors import DeviceMemoryError
from histkit.gpu.launch.common import Keys
from histkit.gpu.launch.weighted import Weights, weight_kind
from histkit.oracles._inputs import (
    as_key_array,
    as_number_array,
    as_weight_array,
    bad_key_error,
)


@dataclass
class Call:
    """One public call: its runtime (on the call's stream), keys on the device,
    and how results go back to the caller."""

    rt: Runtime
    keys: Keys
    framework: str  # "numpy", "cupy", "torch" or "device"
    owner: object  # keeps the keys' device memory alive while kernels read them
    # The framework's own current stream (CuPy, PyTorch), where its allocator
    # orders memory reuse; None for NumPy and other device arrays.
    framework_stream: int | None = None


@dataclass
class Out:
    """A device array a call writes: its pointer, and what the caller gets."""

    ptr: int
    n: int
    dtype: np.dtype
    handed: object  # the caller's array (CuPy, PyTorch), or histkit's DeviceArray


class Deferred:
    """A result allocated when a launcher first asks where it is (its ptr or
    handed), not before: a launcher whose first passes do not write it (auto's
    choice and the partitioned kernel's first pass, at 2^25+ keys) has them
    running on the GPU while the host allocates. At 2^28 keys over 2^20 bins
    the allocation took 30 us of host time in a call, every one of them on
    the call's critical path (an event before each launch against the host's
    clock, H200)."""

    __slots__ = ("call", "n", "dtype", "what", "details", "_out")

    def __init__(self, call: Call, n: int, dtype, what: str, *details):
        """allocate's arguments, kept until the first ask."""
        self.call, self.n, self.dtype = call, n, np.dtype(dtype)
        self.what, self.details = what, details
        self._out: Out | None = None

    def _made(self) -> Out:
        if self._out is None:
            self._out = allocate(self.call, self.n, self.dtype, self.what, *self.details)
        return self._out

    @property
    def ptr(self) -> int:
        return self._made().ptr

    @property
    def handed(self):
        return self._made().handed


def begin(rt: Runtime, keys, handle: int | None, on_device: bool,
           name: str = "keys", integer: bool = True) -> Call:
    """The call's keys (on_device: a device array; else a checked NumPy array)
    on the device, and its stream: handle, else the keys' framework's current
    stream, else histkit's own."""
    if not on_device:
        call_rt = rt.on(handle)
        array = call_rt.to_device(keys)
        return Call(call_rt, Keys(array.ptr, len(keys), keys.dtype), "numpy", array)
    framework = framework_of(keys)
    in_place = framework in READ_IN_PLACE
    own_stream = current_stream(framework, keys) if in_place else None
    call_rt = rt.on(handle if handle is not None else own_stream)
    read = read_in_place(framework, keys, call_rt, name, integer) if in_place else None
    if read is None:  # the general view: its exporter orders its own pending work
        read = interface_view(call_rt, keys, name, integer)
    else:  # on another stream= : read the keys after the framework's work
        call_rt.wait_for(own_stream)
    return Call(call_rt, Keys(*read), framework, keys, own_stream)


# Entered when the framework already allocates on the call's stream: one
# object for every call (a nullcontext holds no state).
_ALREADY_ON_IT = contextlib.nullcontext()


def framework_stream(call: Call):
    """A context in which the caller's framework allocates on the call's stream
    (nothing to enter when that is already its current stream)."""
    if call.framework_stream == call.rt.handle:
        return _ALREADY_ON_IT
    if call.framework == "cupy":
        import cupy

        return cupy_stream(cupy, call.rt.handle)
    import torch

    return torch.cuda.stream(torch.cuda.ExternalStream(call.rt.handle, device=call.owner.device))


def allocate(call: Call, n: int, dtype, what: str, *details) -> Out:
    """A new result array of the caller's kind (what.format(*details): named if
    it does not fit; formatted only then)."""
    dtype = np.dtype(dtype)
    try:
        if call.framework == "cupy":
            import cupy

            with framework_stream(call):
                array = cupy.empty(n, dtype)
            return Out(array.data.ptr, n, dtype, array)
        if call.framework == "torch":
            import torch

            with framework_stream(call):  # on the keys' device (new_empty reads it in C)
                tensor = call.owner.new_empty(n, dtype=torch_dtype_of(torch, dtype))
            return Out(tensor.data_ptr(), n, dtype, tensor)
        # NumPy results are copied back and dropped within the call; another
        # framework's results may be used on its streams: not from the pool.
        array = call.rt.empty(n, dtype, pooled=call.framework == "numpy")
        return Out(array.ptr, n, dtype, array)
    except DeviceMemoryError as error:
        raise DeviceMemoryError(error.nbytes, error.free, what.format(*details)) from None
    except Exception as error:  # CuPy's and PyTorch's out-of-memory errors
        if "outofmemory" not in type(error).__name__.lower():
            raise
        raise DeviceMemoryError(n * dtype.itemsize, call.rt.free_bytes(),
                                what.format(*details)) from None


def borrow(call: Call, array, n: int, dtype, name: str) -> Out:
    """A caller's device array for the call to write: n elements of dtype."""
    dtype = np.dtype(dtype)
    if not is_device_array(array):
        raise TypeError(f"{name} must be a device array (CuPy, PyTorch, ...) of {n} {dtype}; "
                        f"got {type(array).__name__}")
    ptr, size, got = device_view(call, array, name)
    if got != dtype or size != n:
        raise ValueError(f"{name} must hold {n} {dtype}; got {size} {got}")
    return Out(ptr, n, dtype, array)


def device_view(call: Call, array, name: str, integer: bool = True):
    """(pointer, length, dtype) of a caller's device array other than the keys,
    its pending writes ordered before the call's work."""
    framework = framework_of(array)
    if framework in READ_IN_PLACE:
        read = read_in_place(framework, array, call.rt, name, integer)
        if read is not None:
            call.rt.wait_for(current_stream(framework, array))  # its pending writes first
            return read
    return interface_view(call.rt, array, name, integer)


def fill(call: Call, out: Out, byte: int, nbytes: int) -> None:
    """Set nbytes of out to byte on the call's stream (CuPy's own memset for a
    CuPy array on CuPy's current stream: cheaper per call than a driver call
    from Python)."""
    if call.framework_stream == call.rt.handle and framework_of(out.handed) == "cupy":
        out.handed.data.memset_async(byte, nbytes)
    else:
        call.rt.memset(out.ptr, byte, nbytes)


def first_bad_word(call: Call, check: bool, first_bad) -> Out | DeviceArray:
    """Where the kernels note the first bad index: with check, the thread's
    cached slot; else the caller's word (first_bad) or a new one, reset here."""
    if check:
        return call.rt.bad_key_slot()
    word = (allocate(call, 1, np.uint64, "the first_bad word") if first_bad is None
            else borrow(call, first_bad, 1, np.uint64, "first_bad"))
    fill(call, word, 0xFF, 8)
    return word


def hand_back(call: Call, out: Out | DeviceArray):
    """A result as the caller's kind of array (NumPy: copied back, synchronised)."""
    if call.framework == "numpy":
        return call.rt.copy_to_host(out.ptr, np.empty(out.n, dtype=out.dtype))
    return out.handed if isinstance(out, Out | Deferred) else out


def raise_noted_bad_key(rt: Runtime, first_bad: DeviceArray, keys: Keys, num_bins: int) -> None:
    """Wait for the call's work; raise the oracles' error if a kernel noted a bad key
    in first_bad (the thread's cached slot: check=True calls use it)."""
    index = rt.read_bad_key(first_bad)
    if index != NO_BAD_KEY:
        value = rt.copy_to_host(keys.ptr + index * keys.dtype.itemsize,
                                np.empty(1, keys.dtype))[0]
        raise bad_key_error(index, value.item(), num_bins)


def open_call(keys, stream, check, first_bad) -> Call:
    """A histogram's or sort's call, its arguments checked before a GPU is
    looked for: keys (device array, or made a NumPy key array), stream, check."""
    check_options(check, first_bad)
    on_device = is_device_array(keys)
    keys = keys if on_device else as_key_array(keys)
    handle = stream_handle(stream)
    return begin(runtime(), keys, handle, on_device)


def check_options(check, first_bad) -> None:
    if not isinstance(check, bool | np.bool_):
        raise TypeError(f"check must be True or False; got {check!r}")
    if check and first_bad is not None:
        raise ValueError("first_bad= is where a call with check=False leaves the first bad "
                         "index; pass check=False with it")
    precheck_out(first_bad, 1, np.uint64, "first_bad")


def precheck_out(array, n: int, dtype, name: str) -> None:
    """A caller's array for the call to write (out=, first_bad=; None: none),
    checked before a GPU is looked for: a device array, and n elements of dtype
    where its attributes tell (CuPy, PyTorch; others are read by borrow)."""
    if array is None:
        return
    dtype = np.dtype(dtype)
    if not is_device_array(array):
        raise TypeError(f"{name} must be a device array (CuPy, PyTorch, ...) of {n} {dtype}; "
                        f"got {type(array).__name__}")
    framework = framework_of(array)
    if framework == "cupy":
        got = array.dtype
    elif framework == "torch":
        import torch

        got = torch_dtypes(torch).get(array.dtype, array.dtype)
    else:
        return
    shape = tuple(array.shape)
    if got != dtype or shape != (n,):
        held = f"{shape[0]} {got}" if len(shape) == 1 else f"shape {shape} of {got}"
        raise ValueError(f"{name} must hold {n} {dtype}; got {held}")


def host_gpu_weights(weights, n: int, per: str = "key") -> np.ndarray:
    """NumPy weights for a GPU call, checked before any GPU work: floats
    (float16 widens to float32, exactly), one-dimensional, one per `per`."""
    weights = as_number_array(weights, "weights")  # a list of ints stays ints: refused
    if weights.dtype.kind != "f":
        raise TypeError(f"GPU weights must be float16, float32 or float64; got {weights.dtype}")
    return as_weight_array(weights, n, per=per)


def weights_on_device(call: Call, weights, on_device: bool, per: str = "key"):
    """(Weights, the object keeping them alive): device weights read in place
    (float32 or float64, one per key of the call), host weights copied over."""
    if not on_device:
        owner = call.rt.to_device(np.ascontiguousarray(weights))
        return Weights(owner.ptr, weights.dtype), owner
    ptr, n, dtype = device_view(call, weights, "weights", integer=False)
    weight_kind(dtype)
    if n != call.keys.n:
        raise ValueError(f"weights must hold one weight per {per}: {call.keys.n} {per}s, "
                         f"{n} weights")
    return Weights(ptr, dtype), weights
