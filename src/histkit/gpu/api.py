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
given) runs in
histkit.gpu._lane: where auto launches one kernel, it makes the same driver
calls as the Python path below without its glue; elsewhere it replays auto's
launches, recorded once per shape (histkit.gpu.recording).
gpu.counting_sort's common call (the same, stable=True, int64 indices) runs
its launcher from there too. An unchecked call there waits for nothing, as
below. Every other call, and any problem with the arguments, takes the
Python path.

Threads. Calls may come from any thread (a Dask worker's, a server's): the
first call on a thread makes histkit's device's CUDA context current there.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from histkit.gpu import recording, registry
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.device import DeviceArray, Runtime, runtime
from histkit.gpu.device import check as check_driver_result
from histkit.gpu.errors import DeviceMemoryError, UnsupportedShape
from histkit.gpu.launch.common import Keys
from histkit.gpu.launch.histogram import VECTOR_BYTES, vector_head
from histkit.gpu.launch.sort import VALUE_C_TYPES
from histkit.gpu.launch.weighted import Weights, weight_kind
from histkit.gpu.policy import check_index_dtype
from histkit.oracles._inputs import (
    MAX_BINS,
    as_key_array,
    as_weight_array,
    bad_key_error,
    bin_count,
    boolean,
)

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

# Raw CUstream handles 0 and 1 both name the legacy default stream.
_LEGACY = 1


@dataclass
class _Call:
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
class _Out:
    """A device array a call writes: its pointer, and what the caller gets."""

    ptr: int
    n: int
    dtype: np.dtype
    handed: object  # the caller's array (CuPy, PyTorch), or histkit's DeviceArray


class _Deferred:
    """A result allocated when a launcher first asks where it is (its ptr or
    handed), not before: a launcher whose first passes do not write it (auto's
    choice and the partitioned kernel's first pass, at 2^25+ keys) has them
    running on the GPU while the host allocates. At 2^28 keys over 2^20 bins
    the allocation took 30 us of host time in a call, every one of them on
    the call's critical path (an event before each launch against the host's
    clock, H200)."""

    __slots__ = ("call", "n", "dtype", "what", "details", "_out")

    def __init__(self, call: _Call, n: int, dtype, what: str, *details):
        """_allocate's arguments, kept until the first ask."""
        self.call, self.n, self.dtype = call, n, np.dtype(dtype)
        self.what, self.details = what, details
        self._out: _Out | None = None

    def _made(self) -> _Out:
        if self._out is None:
            self._out = _allocate(self.call, self.n, self.dtype, self.what, *self.details)
        return self._out

    @property
    def ptr(self) -> int:
        return self._made().ptr

    @property
    def handed(self):
        return self._made().handed


# Array type -> "cupy", "torch" or "device": asked several times a call, so
# each type's answer is worked out once.
_FRAMEWORKS: dict[type, str] = {}


def _framework_of(obj) -> str:
    kind = type(obj)
    framework = _FRAMEWORKS.get(kind)
    if framework is None:
        module = kind.__module__.split(".")[0]
        framework = _FRAMEWORKS[kind] = module if module in ("cupy", "torch") else "device"
    return framework


# DLPack device types that name GPU memory (CUDA, CUDA managed).
_DLPACK_CUDA = (2, 13)


def is_device_array(obj) -> bool:
    if isinstance(obj, np.ndarray):
        return False
    framework = _framework_of(obj)
    if framework == "cupy":  # always on a GPU (asking its interface builds a dict)
        return True
    if framework == "torch":
        return bool(getattr(obj, "is_cuda", False))
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    try:
        return obj.__dlpack_device__()[0] in _DLPACK_CUDA
    except Exception:  # no DLPack, or a host-only exporter
        return False


def stream_handle(stream) -> int | None:
    """The raw CUstream handle of what a caller passes as stream= (None: none).

    Takes an int, anything with ``__cuda_stream__`` (cuda.core), a PyTorch
    stream (``.cuda_stream``), a CuPy stream (``.ptr``) or an object whose
    ``.handle`` converts to int. 0 and 1 both mean the legacy default stream.
    """
    if stream is None:
        return None
    if type(stream) is int and stream > 0:  # the common case, kept short
        return stream
    if isinstance(stream, bool):
        raise TypeError("stream must be a CUDA stream or a raw CUstream handle; got a bool")
    if isinstance(stream, int | np.integer):
        handle = int(stream)
    elif hasattr(stream, "__cuda_stream__"):
        protocol = stream.__cuda_stream__
        handle = int((protocol() if callable(protocol) else protocol)[1])
    elif isinstance(getattr(stream, "cuda_stream", None), int):
        handle = stream.cuda_stream
    elif isinstance(getattr(stream, "ptr", None), int):
        handle = stream.ptr
    elif getattr(stream, "handle", None) is not None:
        handle = int(stream.handle)
    else:
        raise TypeError(f"stream must be a CUDA stream (CuPy, PyTorch, cuda.core, or anything "
                        f"with __cuda_stream__) or a raw CUstream handle; got "
                        f"{type(stream).__name__}")
    if handle < 0:
        raise ValueError(f"stream handle must be >= 0; got {handle}")
    return _LEGACY if handle == 0 else handle


# --- keys on the device ------------------------------------------------------

def _begin(rt: Runtime, keys, handle: int | None, on_device: bool,
           name: str = "keys", integer: bool = True) -> _Call:
    """The call's keys (on_device: a device array; else a checked NumPy array)
    on the device, and its stream: handle, else the keys' framework's current
    stream, else histkit's own."""
    if not on_device:
        call_rt = rt.on(handle)
        array = call_rt.to_device(keys)
        return _Call(call_rt, Keys(array.ptr, len(keys), keys.dtype), "numpy", array)
    framework = _framework_of(keys)
    in_place = framework in _READ_IN_PLACE
    own_stream = _current_stream(framework, keys) if in_place else None
    call_rt = rt.on(handle if handle is not None else own_stream)
    read = _read_in_place(framework, keys, call_rt, name, integer) if in_place else None
    if read is None:  # the general view: its exporter orders its own pending work
        read = _view(call_rt, keys, name, integer)
    else:  # on another stream= : read the keys after the framework's work
        call_rt.wait_for(own_stream)
    return _Call(call_rt, Keys(*read), framework, keys, own_stream)


def _view(rt: Runtime, obj, name: str, integer: bool = True) -> tuple[int, int, np.dtype]:
    """(pointer, length, dtype) of a 1-d contiguous device array on our device,
    through DLPack or its array interface; the exporter orders its pending
    work before rt's stream."""
    from cuda.core.utils import StridedMemoryView

    view = StridedMemoryView.from_any_interface(obj, stream_ptr=rt.handle)
    shape = tuple(view.shape)
    strided = view.strides is not None and shape and shape[0] > 1 and tuple(view.strides) != (1,)
    _check_layout(np.dtype(view.dtype), shape, name,
                  f"strides {view.strides} (in elements)" if strided else None, integer)
    _check_device(rt, view.device_id, name)
    return view.ptr, shape[0], np.dtype(view.dtype)


def _cupy_array(array, rt: Runtime, name: str, integer: bool = True) -> tuple[int, int, np.dtype]:
    """(pointer, length, dtype) of a CuPy array, read from its attributes: its
    __cuda_array_interface__ builds a dict on every call, which cost about as
    much as the rest of the call's argument checks."""
    dtype = array.dtype
    shape = array.shape
    strided = len(shape) == 1 and shape[0] > 1 and array.strides[0] != dtype.itemsize
    _check_layout(dtype, shape, name, f"strides {array.strides} (in bytes)" if strided else None,
                  integer)
    memory = array.data
    _check_device(rt, memory.device_id, name)
    return memory.ptr, shape[0], dtype


# PyTorch's dtypes that NumPy has, as NumPy's (made on the first torch call).
_TORCH_DTYPES: dict = {}


def _torch_dtypes(torch) -> dict:
    """_TORCH_DTYPES, made on the first call."""
    if not _TORCH_DTYPES:
        for dtype in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                      "uint64", "float16", "float32", "float64", "complex64", "complex128"):
            if getattr(torch, dtype, None) is not None:  # the unsigned ones: PyTorch 2.3+
                _TORCH_DTYPES[getattr(torch, dtype)] = np.dtype(dtype)
    return _TORCH_DTYPES


def _torch_tensor(tensor, rt: Runtime, name: str,
                  integer: bool = True) -> tuple[int, int, np.dtype] | None:
    """(pointer, length, dtype) of a PyTorch CUDA tensor, read from its
    attributes, as _cupy_array does (a DLPack export is dearer per call);
    None for a dtype NumPy lacks (bfloat16, ...) and for a lazily conjugated
    or negated view (its memory holds the values before the conjugation or
    negation: read raw, they would be wrong), which the general view reports."""
    import torch

    dtype = _torch_dtypes(torch).get(tensor.dtype)
    if dtype is None or tensor.is_conj() or tensor.is_neg():
        return None
    shape = tuple(tensor.shape)
    strided = len(shape) == 1 and shape[0] > 1 and tensor.stride(0) != 1
    _check_layout(dtype, shape, name,
                  f"strides {tensor.stride()} (in elements)" if strided else None, integer)
    _check_device(rt, tensor.device.index, name)
    return tensor.data_ptr(), shape[0], dtype


def _current_stream(framework: str, array) -> int:
    """The framework's current stream for this array, a raw handle: where
    CuPy or PyTorch has ordered the pending work on its arrays (the stream a
    CuPy array's __cuda_array_interface__ names; the one a PyTorch tensor's
    DLPack export orders before the consumer's)."""
    if framework == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr or _LEGACY
    import torch

    return stream_handle(torch.cuda.current_stream(array.device).cuda_stream)


def _read_in_place(framework: str, array, rt: Runtime, name: str,
                   integer: bool = True) -> tuple[int, int, np.dtype] | None:
    """(pointer, length, dtype) of a CuPy array or PyTorch tensor read from
    its attributes; None where the general view (_view) must take it."""
    if framework == "cupy":
        return _cupy_array(array, rt, name, integer)
    return _torch_tensor(array, rt, name, integer)


# The frameworks whose arrays _read_in_place reads.
_READ_IN_PLACE = ("cupy", "torch")


def _check_layout(dtype: np.dtype, shape: tuple, name: str, strided: str | None,
                  integer: bool = True) -> None:
    """Integer keys (integer=False: values, see _check_value_dtype) in one
    contiguous dimension (strided: the strides, when not contiguous)."""
    if integer and dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype (int8 ... uint64); got {dtype}")
    if not integer:
        _check_value_dtype(dtype, name)
    if len(shape) != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {shape}")
    if strided:
        raise ValueError(f"device {name} must be contiguous; got {strided}; "
                         f"make a contiguous copy first")


def _check_device(rt: Runtime, device_id: int, name: str) -> None:
    if device_id != rt.device.device_id:
        raise ValueError(f"{name} live on device {device_id}; histkit runs on "
                         f"device {rt.device.device_id}")


# --- results -----------------------------------------------------------------

class _StreamHandle:
    """A raw CUDA stream handle, offered through the CUDA stream protocol."""

    __slots__ = ("handle",)

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def cupy_stream(cupy, handle: int):
    """CuPy's view of a stream it did not make: Stream.from_external (CuPy 14,
    the CUDA stream protocol), else ExternalStream, which CuPy 14 deprecates."""
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(_StreamHandle(handle))
    return cupy.cuda.ExternalStream(handle)


# Entered when the framework already allocates on the call's stream: one
# object for every call (a nullcontext holds no state).
_ALREADY_ON_IT = contextlib.nullcontext()


def _framework_stream(call: _Call):
    """A context in which the caller's framework allocates on the call's stream
    (nothing to enter when that is already its current stream)."""
    if call.framework_stream == call.rt.handle:
        return _ALREADY_ON_IT
    if call.framework == "cupy":
        import cupy

        return cupy_stream(cupy, call.rt.handle)
    import torch

    return torch.cuda.stream(torch.cuda.ExternalStream(call.rt.handle, device=call.owner.device))


def _allocate(call: _Call, n: int, dtype, what: str, *details) -> _Out:
    """A new result array of the caller's kind (what.format(*details): named if
    it does not fit; formatted only then)."""
    dtype = np.dtype(dtype)
    try:
        if call.framework == "cupy":
            import cupy

            with _framework_stream(call):
                array = cupy.empty(n, dtype)
            return _Out(array.data.ptr, n, dtype, array)
        if call.framework == "torch":
            import torch

            with _framework_stream(call):
                tensor = torch.empty(n, dtype=getattr(torch, dtype.name),
                                     device=call.owner.device)
            return _Out(tensor.data_ptr(), n, dtype, tensor)
        # NumPy results are copied back and dropped within the call; another
        # framework's results may be used on its streams: not from the pool.
        array = call.rt.empty(n, dtype, pooled=call.framework == "numpy")
        return _Out(array.ptr, n, dtype, array)
    except DeviceMemoryError as error:
        raise DeviceMemoryError(error.nbytes, error.free, what.format(*details)) from None
    except Exception as error:  # CuPy's and PyTorch's out-of-memory errors
        if "outofmemory" not in type(error).__name__.lower():
            raise
        raise DeviceMemoryError(n * dtype.itemsize, call.rt.free_bytes(),
                                what.format(*details)) from None


def _borrow(call: _Call, array, n: int, dtype, name: str) -> _Out:
    """A caller's device array for the call to write: n elements of dtype."""
    dtype = np.dtype(dtype)
    if not is_device_array(array):
        raise TypeError(f"{name} must be a device array (CuPy, PyTorch, ...) of {n} {dtype}; "
                        f"got {type(array).__name__}")
    ptr, size, got = _device_view(call, array, name)
    if got != dtype or size != n:
        raise ValueError(f"{name} must hold {n} {dtype}; got {size} {got}")
    return _Out(ptr, n, dtype, array)


def _device_view(call: _Call, array, name: str, integer: bool = True):
    """(pointer, length, dtype) of a caller's device array other than the keys,
    its pending writes ordered before the call's work."""
    framework = _framework_of(array)
    if framework in _READ_IN_PLACE:
        read = _read_in_place(framework, array, call.rt, name, integer)
        if read is not None:
            call.rt.wait_for(_current_stream(framework, array))  # its pending writes first
            return read
    return _view(call.rt, array, name, integer)


def _fill(call: _Call, out: _Out, byte: int, nbytes: int) -> None:
    """Set nbytes of out to byte on the call's stream (CuPy's own memset for a
    CuPy array on CuPy's current stream: cheaper per call than a driver call
    from Python)."""
    if call.framework_stream == call.rt.handle and _framework_of(out.handed) == "cupy":
        out.handed.data.memset_async(byte, nbytes)
    else:
        call.rt.memset(out.ptr, byte, nbytes)


def _first_bad_word(call: _Call, check: bool, first_bad) -> _Out | DeviceArray:
    """Where the kernels note the first bad index: with check, the thread's
    cached slot; else the caller's word (first_bad) or a new one, reset here."""
    if check:
        return call.rt.bad_key_slot()
    word = (_allocate(call, 1, np.uint64, "the first_bad word") if first_bad is None
            else _borrow(call, first_bad, 1, np.uint64, "first_bad"))
    _fill(call, word, 0xFF, 8)
    return word


def _hand_back(call: _Call, out: _Out | DeviceArray):
    """A result as the caller's kind of array (NumPy: copied back, synchronised)."""
    if call.framework == "numpy":
        return call.rt.copy_to_host(out.ptr, np.empty(out.n, dtype=out.dtype))
    return out.handed if isinstance(out, _Out | _Deferred) else out


def _raise_if_bad(rt: Runtime, first_bad: DeviceArray, keys: Keys, num_bins: int) -> None:
    """Wait for the call's work; raise the oracles' error if a kernel noted a bad key
    in first_bad (the thread's cached slot: check=True calls use it)."""
    index = rt.read_bad_key(first_bad)
    if index != NO_BAD_KEY:
        value = rt.copy_to_host(keys.ptr + index * keys.dtype.itemsize,
                                np.empty(1, keys.dtype))[0]
        raise bad_key_error(index, value.item(), num_bins)


def _open(keys, stream, check, first_bad) -> _Call:
    """A histogram's or sort's call, its arguments checked before a GPU is
    looked for: keys (device array, or made a NumPy key array), stream, check."""
    _check_options(check, first_bad)
    on_device = is_device_array(keys)
    keys = keys if on_device else as_key_array(keys)
    handle = stream_handle(stream)
    return _begin(runtime(), keys, handle, on_device)


def _check_options(check, first_bad) -> None:
    if not isinstance(check, bool | np.bool_):
        raise TypeError(f"check must be True or False; got {check!r}")
    if check and first_bad is not None:
        raise ValueError("first_bad= is where a call with check=False leaves the first bad "
                         "index; pass check=False with it")
    _precheck_out(first_bad, 1, np.uint64, "first_bad")


def _precheck_out(array, n: int, dtype, name: str) -> None:
    """A caller's array for the call to write (out=, first_bad=; None: none),
    checked before a GPU is looked for: a device array, and n elements of dtype
    where its attributes tell (CuPy, PyTorch; others are read by _borrow)."""
    if array is None:
        return
    dtype = np.dtype(dtype)
    if not is_device_array(array):
        raise TypeError(f"{name} must be a device array (CuPy, PyTorch, ...) of {n} {dtype}; "
                        f"got {type(array).__name__}")
    framework = _framework_of(array)
    if framework == "cupy":
        got = array.dtype
    elif framework == "torch":
        import torch

        got = _torch_dtypes(torch).get(array.dtype, array.dtype)
    else:
        return
    shape = tuple(array.shape)
    if got != dtype or shape != (n,):
        held = f"{shape[0]} {got}" if len(shape) == 1 else f"shape {shape} of {got}"
        raise ValueError(f"{name} must hold {n} {dtype}; got {held}")


# --- the compiled lane ------------------------------------------------------

# (runtime, its lane): the lane is made on the first CuPy or PyTorch call of a
# runtime (None where it cannot be: no C path, or the extension not built),
# and handed each framework's module on its first call.
_LANE: list = [None, None]
# The frameworks whose keys the lane takes.
_LANE_FRAMEWORKS = ("cupy", "torch")


def _lane(rt: Runtime, framework: str):
    """rt's compiled lane (histkit.gpu._lane) serving framework, or None."""
    if _LANE[0] is not rt:
        _LANE[:] = [rt, _make_lane(rt)]
    lane = _LANE[1]
    if lane is not None and framework not in lane.served:
        # the caller's keys are of this framework: its module is imported
        module = sys.modules[framework]
        if framework == "cupy":
            lane.serve_cupy(module)
        else:  # the integer dtypes alone: the lane takes keys
            lane.serve_torch(module, {torch_dtype: dtype for torch_dtype, dtype
                                      in _torch_dtypes(module).items() if dtype.kind in "iu"})
    return lane


@contextlib.contextmanager
def python_path_only():
    """Within: every call takes the Python path, the compiled lane off (for
    A/B measurements of the lane)."""
    saved = _LANE[:]
    _LANE[:] = [runtime(), None]
    try:
        yield
    finally:
        _LANE[:] = saved


def _make_lane(rt: Runtime):
    if rt.per_call.calls is None:
        return None
    try:
        from histkit.gpu._lane import Lane
    except ImportError:  # a build without it: every call takes the Python path
        return None
    return Lane(rt, lambda keys, n, num_bins: _lane_plan(rt, keys, n, num_bins),
                _lane_sort, check_driver_result, _lane_bad_key, MAX_BINS)


def _lane_plan(rt: Runtime, keys, n: int, num_bins: int):
    """The lane's plan for keys of this dtype, length and num_bins: a LanePlan
    from the auto row's lane_plan where auto makes one launch, else auto's
    launcher recorded for the lane to replay (histkit.gpu.recording), with
    _lane_auto (the launcher itself) where it cannot be."""
    from histkit.gpu._lane import LanePlan, Recorded

    ptr, _, dtype = _read_in_place(_framework_of(keys), keys, rt, "keys")
    plan = registry.serving("histogram", "auto").lane_plan(rt, Keys(ptr, n, dtype), num_bins)
    if plan is None:
        return Recorded(lambda residue: _lane_replay(rt, dtype, n, num_bins, residue),
                        _lane_auto, VECTOR_BYTES)
    kernel, geometry, n_and_bins, shared_bins, overwrite = plan
    # A head depends on the address only modulo the vector width (which every
    # itemsize divides): one per residue.
    heads = tuple(vector_head(address, n, dtype.itemsize) for address in range(VECTOR_BYTES))
    return LanePlan(rt.launch_handle(kernel, geometry), geometry, tuple(n_and_bins),
                    shared_bins, overwrite, 0 if overwrite else num_bins * 8, heads)


def _lane_replay(rt: Runtime, dtype, n: int, num_bins: int, residue: int):
    """auto's launches for n keys of dtype at an address residue past a
    VECTOR_BYTES-aligned one, recorded as the lane replays them; None where
    the launcher cannot be recorded."""
    from histkit.gpu._lane import Replay, ReplayLaunch, ReplayMemset

    script = recording.record(rt, registry.serving("histogram", "auto").run, dtype, n,
                              num_bins, residue)
    if script is None:
        return None
    steps = tuple(ReplayMemset(*step) if isinstance(step, recording.Memset)
                  else ReplayLaunch(*step) for step in script.steps)
    return Replay(script.scratch_bytes, steps)


def _lane_call(keys, n: int, stream: int) -> _Call:
    """A lane call's keys (checked by the lane) as the launchers take them, on
    their framework's current stream (stream)."""
    rt = runtime().on(stream)
    framework = _framework_of(keys)
    ptr, _, dtype = _read_in_place(framework, keys, rt, "keys")
    return _Call(rt, Keys(ptr, n, dtype), framework, keys, stream)


def _lane_auto(keys, n: int, num_bins: int, stream: int, slot):
    """Queue auto's launches for a lane call's keys on stream, their bad keys noted in
    slot, as the Python path does (its counts allocated once auto's first
    passes are queued); the lane waits and reads the verdict."""
    call = _lane_call(keys, n, stream)
    hist = _Deferred(call, num_bins, np.int64, "num_bins={} (int64 counts)", num_bins)
    registry.serving("histogram", "auto").run(call.rt, call.keys, num_bins, hist, slot)
    return hist.handed


def _lane_sort(keys, n: int, num_bins: int, stream: int, slot):
    """Queue gpu.counting_sort's launches (stable, int64 indices) for a lane
    call's keys on stream, their bad keys noted in slot, as the Python path
    does; the lane waits and reads the verdict."""
    call = _lane_call(keys, n, stream)
    out_keys = _allocate(call, n, call.keys.dtype, "sorting {} keys", n)
    out_index = _allocate(call, n, np.int64, "sorting {} keys", n)
    keep_alive: list = []  # scratch, freed on the call's stream after its kernels
    registry.serving("counting_sort", True).run(call.rt, call.keys, num_bins, out_keys,
                                                out_index, slot, keep_alive,
                                                index_dtype=_INT64)
    return out_keys.handed, out_index.handed


_INT64 = np.dtype(np.int64)


def _lane_bad_key(keys, num_bins: int, stream: int, slot) -> None:
    """A lane call's kernels flagged a bad key: raise it as the Python path does."""
    rt = runtime().on(stream)
    ptr, n, dtype = _read_in_place(_framework_of(keys), keys, rt, "keys")
    _raise_if_bad(rt, slot, Keys(ptr, n, dtype), num_bins)


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
    framework = _framework_of(keys)
    if (method == "auto" and (check is True or check is False) and out is None
            and stream is None and first_bad is None and framework in _LANE_FRAMEWORKS):
        lane = _lane(runtime(), framework)
        result = None if lane is None else lane.histogram(keys, num_bins, check)
        if result is not None:
            return result
    keys = keys if is_device_array(keys) else as_key_array(keys)  # named before num_bins
    num_bins = bin_count(num_bins)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    _precheck_out(out, num_bins, np.int64, "out")
    call = _open(keys, stream, check, first_bad)
    hist = (_Deferred(call, num_bins, np.int64, "num_bins={} (int64 counts)", num_bins)
            if out is None
            else _borrow(call, out, num_bins, np.int64, "out"))
    slot = _first_bad_word(call, check, first_bad)
    if call.keys.n:  # the launcher leaves exact counts in hist, whatever it held
        registry.serving("histogram", method).run(call.rt, call.keys, num_bins, hist, slot)
    else:  # no keys, no launch: zeros
        _fill(call, hist, 0, num_bins * 8)
    if check:
        _raise_if_bad(call.rt, slot, call.keys, num_bins)
    # A caller's out= comes back as itself, whatever kind the keys were.
    counts = out if out is not None else _hand_back(call, hist)
    return counts if check else (counts, _hand_back(call, slot))


def _weighted_histogram(keys, weights, num_bins, method, out, stream, check, first_bad):
    """gpu.histogram with weights: exact float64 sums (launch.weighted)."""
    on_device = is_device_array(keys)
    keys = keys if on_device else as_key_array(keys)  # named before num_bins, as the oracle does
    num_bins = bin_count(num_bins)
    if method != "auto":
        raise ValueError(f"with weights, method must be 'auto'; got {method!r}")
    _check_options(check, first_bad)
    _check_same_kind(keys, weights, on_device, "weights")
    if not on_device:
        weights = host_gpu_weights(weights, len(keys))
    _precheck_out(out, num_bins, np.float64, "out")
    handle = stream_handle(stream)
    call = _begin(runtime(), keys, handle, on_device)
    device_weights, owner = weights_on_device(call, weights, on_device)
    sums = (_allocate(call, num_bins, np.float64, "num_bins={} (float64 sums)", num_bins)
            if out is None else _borrow(call, out, num_bins, np.float64, "out"))
    slot = _first_bad_word(call, check, first_bad)
    if call.keys.n:
        registry.weighted_kernel().run(call.rt, call.keys, device_weights, num_bins, sums, slot)
    else:
        _fill(call, sums, 0, num_bins * 8)
    del owner  # freed stream-ordered: after the kernels that read it
    if check:
        _raise_if_bad(call.rt, slot, call.keys, num_bins)
    result = out if out is not None else _hand_back(call, sums)
    return result if check else (result, _hand_back(call, slot))


def host_gpu_weights(weights, n: int, per: str = "key") -> np.ndarray:
    """NumPy weights for a GPU call, checked before any GPU work: floats
    (float16 widens to float32, exactly), one-dimensional, one per `per`."""
    weights = np.asarray(weights)
    if weights.dtype.kind != "f":
        raise TypeError(f"GPU weights must be float16, float32 or float64; got {weights.dtype}")
    return as_weight_array(weights, n, per=per)


def weights_on_device(call: _Call, weights, on_device: bool, per: str = "key"):
    """(Weights, the object keeping them alive): device weights read in place
    (float32 or float64, one per key of the call), host weights copied over."""
    if not on_device:
        owner = call.rt.to_device(np.ascontiguousarray(weights))
        return Weights(owner.ptr, weights.dtype), owner
    ptr, n, dtype = _device_view(call, weights, "weights", integer=False)
    weight_kind(dtype)
    if n != call.keys.n:
        raise ValueError(f"weights must hold one weight per {per}: {call.keys.n} {per}s, "
                         f"{n} weights")
    return Weights(ptr, dtype), weights


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
            and (framework := _framework_of(keys)) in _LANE_FRAMEWORKS):
        lane = _lane(runtime(), framework)
        result = None if lane is None else lane.counting_sort(keys, num_bins, check)
        if result is not None:
            return result
    keys = keys if is_device_array(keys) else as_key_array(keys)  # named before num_bins
    num_bins = bin_count(num_bins)
    stable = boolean(stable, "stable")
    index_dtype = _index_dtype(index_dtype, _length(keys))
    call = _open(keys, stream, check, first_bad)
    n = call.keys.n
    _index_dtype(index_dtype, n)  # device keys' length is known from here on
    out_keys = _allocate(call, n, call.keys.dtype, "sorting {} keys", n)
    out_index = _allocate(call, n, index_dtype, "sorting {} keys", n)
    slot = _first_bad_word(call, check, first_bad)
    keep_alive: list = []  # scratch, freed on the call's stream after its kernels
    if n:
        registry.serving("counting_sort", bool(stable)).run(
            call.rt, call.keys, num_bins, out_keys, out_index, slot, keep_alive,
            index_dtype=index_dtype)
    if check:
        _raise_if_bad(call.rt, slot, call.keys, num_bins)
        return _hand_back(call, out_keys), _hand_back(call, out_index)
    return _hand_back(call, out_keys), _hand_back(call, out_index), _hand_back(call, slot)


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
        _refuse_negative(host_counts)
    handle = stream_handle(stream)
    call = _begin(runtime(), counts if host_counts is None else host_counts, handle,
                  on_device=host_counts is None, name="counts")
    n = call.keys.n
    _require_int64_counts(call.keys.dtype, n)
    out = _allocate(call, n, np.int64, "scanning {} counts", n)
    keep_alive: list = []
    if n:
        if host_counts is None:
            _refuse_negative(call.rt.copy_to_host(call.keys.ptr, np.empty(n, np.int64)))
        registry.serving("exclusive_scan").run(call.rt, call.keys.ptr, n, out.ptr, keep_alive)
    call.rt.sync("exclusive_scan")
    return _hand_back(call, out)


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
    out_keys = _allocate(call, n, call.keys.dtype, "sorting {} keys", n)
    out_index = _allocate(call, n, index_dtype, "sorting {} keys", n)
    out_values = None
    if values_in is not None:
        out_values = _allocate(call, n, values_in.dtype, "sorting {} values", n)
    if n:
        keep_alive: list = []  # scratch, freed on the call's stream after its kernels
        registry.serving("radix_sort").run(
            call.rt, call.keys, out_keys, out_index, keep_alive,
            values=None if values_in is None else (values_in.ptr, values_in.dtype.itemsize,
                                                   out_values.ptr),
            index_dtype=index_dtype)
    sorted_keys = _hand_back(call, out_keys)
    if out_values is None:
        return sorted_keys, _hand_back(call, out_index)
    return sorted_keys, _hand_back(call, out_values)


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


def _check_same_kind(keys, array, keys_on_device: bool, name: str) -> None:
    """array (values, weights) the same kind as keys: both NumPy, or both on the device."""
    if is_device_array(array) != keys_on_device:
        raise TypeError(f"{name} must be the same kind of array as keys (both NumPy, or both "
                        f"on the device); got {type(keys).__name__} keys and "
                        f"{type(array).__name__} {name}")


def _check_value_dtype(dtype: np.dtype, name: str = "values") -> None:
    """Values move as raw bits: any fixed-size dtype of 1, 2, 4 or 8 bytes."""
    if dtype.kind in "OVSUMm" or dtype.itemsize not in VALUE_C_TYPES:
        raise TypeError(f"{name} must have a numeric dtype of 1, 2, 4 or 8 bytes "
                        f"(int8 ... uint64, float16 ... float64, bool); got {dtype}")


def _open_radix(keys, values, stream) -> tuple[_Call, _Out | None]:
    """A radix sort's call, and its values on the device (None: no values),
    every argument checked before a GPU is looked for."""
    on_device = is_device_array(keys)
    keys = keys if on_device else as_key_array(keys)
    if values is not None:
        _check_same_kind(keys, values, on_device, "values")
        if not on_device:
            values = np.ascontiguousarray(values)
            if values.ndim != 1:
                raise ValueError(f"values must be one-dimensional; got shape {values.shape}")
            _check_value_dtype(values.dtype)
            if len(values) != len(keys):
                raise ValueError(f"values must hold one entry per key: {len(keys)} keys, "
                                 f"{len(values)} values")
    handle = stream_handle(stream)
    call = _begin(runtime(), keys, handle, on_device)
    if values is None:
        return call, None
    if not on_device:
        array = call.rt.to_device(values)
        return call, _Out(array.ptr, len(values), values.dtype, array)
    ptr, n, dtype = _device_view(call, values, "values", integer=False)
    if n != call.keys.n:
        raise ValueError(f"values must hold one entry per key: {call.keys.n} keys, "
                         f"{n} values")
    return call, _Out(ptr, n, dtype, values)


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
    if _elements(first_bad) != 1:
        raise ValueError(f"first_bad must be the one-element word a check=False call "
                         f"returned; got {type(first_bad).__name__} of "
                         f"{_elements(first_bad)} elements")
    index = _element(first_bad, 0)
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
    """array[index] as a Python int, from any array histkit takes or returns."""
    if isinstance(array, DeviceArray):  # histkit's own: wait for every stream
        rt = runtime()
        rt.device.sync()
        return rt.copy_to_host(array.ptr + index * array.dtype.itemsize,
                               np.empty(1, array.dtype))[0].item()
    return int(array[index])


def _require_int64_counts(dtype: np.dtype, n: int) -> None:
    if n and dtype != np.dtype(np.int64):
        raise TypeError("gpu.exclusive_scan takes int64 counts (the histograms' dtype); "
                        f"got {dtype}")


def _refuse_negative(counts: np.ndarray) -> None:
    negative = np.flatnonzero(counts < 0)
    if negative.size:
        raise ValueError(f"counts must be >= 0; count at index {negative[0]} is "
                         f"{counts[negative[0]]}")


__all__ = ["METHODS", "argsort", "counting_sort", "exclusive_scan", "histogram",
           "radix_sort", "raise_if_bad", "stream_handle"]
