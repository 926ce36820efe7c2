"""A caller's arrays on the device: which library made them (CuPy, PyTorch,
or any DLPack or ``__cuda_array_interface__`` exporter), their pointer, length
and dtype, checked, and the streams their libraries order work on.

CuPy arrays and PyTorch tensors are read from their own attributes
(read_in_place): the general view through DLPack (interface_view) costs more
per call than the rest of a call's checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from histkit.gpu.launch.sort import VALUE_C_TYPES

if TYPE_CHECKING:
    from histkit.gpu.device import Runtime

# Raw CUstream handles 0 and 1 both name the legacy default stream.
LEGACY_STREAM = 1


# Array type -> "cupy", "torch" or "device": asked several times a call, so
# each type's answer is worked out once.
_FRAMEWORKS: dict[type, str] = {}


def framework_of(obj) -> str:
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
    framework = framework_of(obj)
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
    return LEGACY_STREAM if handle == 0 else handle


def interface_view(rt: Runtime, obj, name: str, integer: bool = True) -> tuple[int, int, np.dtype]:
    """(pointer, length, dtype) of a 1-d contiguous device array on our device,
    through DLPack or its array interface; the exporter orders its pending
    work before rt's stream."""
    from cuda.core.utils import StridedMemoryView

    view = StridedMemoryView.from_any_interface(obj, stream_ptr=rt.handle)
    shape = tuple(view.shape)
    strided = view.strides is not None and shape and shape[0] > 1 and tuple(view.strides) != (1,)
    check_layout(np.dtype(view.dtype), shape, name,
                  f"strides {view.strides} (in elements)" if strided else None, integer)
    check_device(rt, view.device_id, name)
    return view.ptr, shape[0], np.dtype(view.dtype)


def cupy_view(array, rt: Runtime, name: str, integer: bool = True) -> tuple[int, int, np.dtype]:
    """(pointer, length, dtype) of a CuPy array, read from its attributes: its
    __cuda_array_interface__ builds a dict on every call, which cost about as
    much as the rest of the call's argument checks."""
    dtype = array.dtype
    shape = array.shape
    strided = len(shape) == 1 and shape[0] > 1 and array.strides[0] != dtype.itemsize
    check_layout(dtype, shape, name, f"strides {array.strides} (in bytes)" if strided else None,
                  integer)
    memory = array.data
    check_device(rt, memory.device_id, name)
    return memory.ptr, shape[0], dtype


# PyTorch's dtypes that NumPy has, as NumPy's, and the reverse (made on the
# first torch call).
_TORCH_DTYPES: dict = {}
_NUMPY_TO_TORCH: dict = {}


def torch_dtypes(torch) -> dict:
    """_TORCH_DTYPES, made on the first call."""
    if not _TORCH_DTYPES:
        for dtype in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                      "uint64", "float16", "float32", "float64", "complex64", "complex128"):
            if getattr(torch, dtype, None) is not None:  # the unsigned ones: PyTorch 2.3+
                _TORCH_DTYPES[getattr(torch, dtype)] = np.dtype(dtype)
        _NUMPY_TO_TORCH.update({dtype: torch_dtype for torch_dtype, dtype
                                in _TORCH_DTYPES.items()})
    return _TORCH_DTYPES


def torch_dtype_of(torch, dtype: np.dtype):
    """PyTorch's dtype for a NumPy dtype it has: a dict lookup, where
    getattr(torch, dtype.name) spends most of its time in NumPy's name
    property (a few us of a small call's host time)."""
    torch_dtypes(torch)
    return _NUMPY_TO_TORCH[dtype]


def torch_view(tensor, rt: Runtime, name: str,
                  integer: bool = True) -> tuple[int, int, np.dtype] | None:
    """(pointer, length, dtype) of a PyTorch CUDA tensor, read from its
    attributes, as cupy_view does (a DLPack export is dearer per call);
    None for a dtype NumPy lacks (bfloat16, ...) and for a lazily conjugated
    or negated view (its memory holds the values before the conjugation or
    negation: read raw, they would be wrong), which the general view reports."""
    import torch

    dtype = torch_dtypes(torch).get(tensor.dtype)
    if dtype is None or tensor.is_conj() or tensor.is_neg():
        return None
    shape = tuple(tensor.shape)
    strided = len(shape) == 1 and shape[0] > 1 and tensor.stride(0) != 1
    check_layout(dtype, shape, name,
                  f"strides {tensor.stride()} (in elements)" if strided else None, integer)
    check_device(rt, tensor.device.index, name)
    return tensor.data_ptr(), shape[0], dtype


def current_stream(framework: str, array) -> int:
    """The framework's current stream for this array, a raw handle: where
    CuPy or PyTorch has ordered the pending work on its arrays (the stream a
    CuPy array's __cuda_array_interface__ names; the one a PyTorch tensor's
    DLPack export orders before the consumer's)."""
    if framework == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr or LEGACY_STREAM
    import torch

    return stream_handle(torch.cuda.current_stream(array.device).cuda_stream)


def read_in_place(framework: str, array, rt: Runtime, name: str,
                   integer: bool = True) -> tuple[int, int, np.dtype] | None:
    """(pointer, length, dtype) of a CuPy array or PyTorch tensor read from
    its attributes; None where the general view (interface_view) must take it."""
    if framework == "cupy":
        return cupy_view(array, rt, name, integer)
    return torch_view(array, rt, name, integer)


# The frameworks whose arrays read_in_place reads.
READ_IN_PLACE = ("cupy", "torch")


def check_layout(dtype: np.dtype, shape: tuple, name: str, strided: str | None,
                  integer: bool = True) -> None:
    """Integer keys (integer=False: values, see check_value_dtype) in one
    contiguous dimension (strided: the strides, when not contiguous)."""
    if integer and dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype (int8 ... uint64); got {dtype}")
    if not integer:
        check_value_dtype(dtype, name)
    if len(shape) != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {shape}")
    if strided:
        raise ValueError(f"device {name} must be contiguous; got {strided}; "
                         f"make a contiguous copy first")


def check_device(rt: Runtime, device_id: int, name: str) -> None:
    if device_id != rt.device.device_id:
        raise ValueError(f"{name} live on device {device_id}; histkit runs on "
                         f"device {rt.device.device_id}")


def check_same_kind(keys, array, keys_on_device: bool, name: str) -> None:
    """array (values, weights) the same kind as keys: both NumPy, or both on the device."""
    if is_device_array(array) != keys_on_device:
        raise TypeError(f"{name} must be the same kind of array as keys (both NumPy, or both "
                        f"on the device); got {type(keys).__name__} keys and "
                        f"{type(array).__name__} {name}")


def check_value_dtype(dtype: np.dtype, name: str = "values") -> None:
    """Values move as raw bits: any fixed-size dtype of 1, 2, 4 or 8 bytes."""
    if dtype.kind in "OVSUMm" or dtype.itemsize not in VALUE_C_TYPES:
        raise TypeError(f"{name} must have a numeric dtype of 1, 2, 4 or 8 bytes "
                        f"(int8 ... uint64, float16 ... float64, bool); got {dtype}")


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
