"""cuda.bindings' driver, the one place histkit's runtime reaches it from:
every driver call is checked (``check``), and the driver calls every public
call makes (launch, memset, a word read back, sync) go from C when the
extension is built (``per_call_driver_calls``).

The rest of the runtime calls ``bindings.driver.<function>``, so a test
that answers for the driver replaces this module's ``driver`` (and
``SUCCESS``, ``NOT_READY``) once.
"""

from __future__ import annotations

import contextlib

try:  # cuda-python is the gpu extra: without it, Runtime() says so
    from cuda.bindings import driver
except ImportError:  # pragma: no cover - exercised on hosts without the extra
    driver = None

from histkit.gpu.errors import CudaError

SUCCESS = driver.CUresult.CUDA_SUCCESS if driver is not None else None
NOT_READY = driver.CUresult.CUDA_ERROR_NOT_READY if driver is not None else None


def _as_text(value) -> str:
    """A driver's error name or description (bytes in some bindings) as str."""
    return value.decode() if isinstance(value, bytes) else str(value)


def error_name(status) -> str:
    """The name of a CUresult status (CUDA_ERROR_ILLEGAL_ADDRESS, ...); a bare
    int (the C path's) is named by the bindings' enum."""
    if type(status) is int:
        with contextlib.suppress(AttributeError, TypeError, ValueError):
            return driver.CUresult(status).name
    return _as_text(driver.cuGetErrorName(status)[1])


def check(result, call: str):
    """Unpack a cuda.bindings driver result (or a bare CUresult status from
    the C path: an int), raising CudaError on failure."""
    if type(result) is int:
        if result == 0:
            return ()
        with contextlib.suppress(AttributeError, TypeError, ValueError):
            result = driver.CUresult(result)  # the driver's calls below take the enum
    if type(result) is tuple and result[0] == SUCCESS:  # the common case, kept short
        return result[1] if len(result) == 2 else result[1:]
    status, *values = result if isinstance(result, tuple) else (result,)
    if status != driver.CUresult.CUDA_SUCCESS:
        text = _as_text(driver.cuGetErrorString(status)[1])
        raise CudaError(f"{call} failed: {error_name(status)} ({text})")
    return values[0] if len(values) == 1 else tuple(values)

# The driver functions public calls make on every call, made from C
# (_driver_calls.pyx) when that module is built: looked up by name for the
# CUDA 12.0 ABI, which its C signatures follow.
_PER_CALL_ENTRY_POINTS = ("cuLaunchKernel", "cuLaunchCooperativeKernel", "cuMemsetD8Async",
                          "cuMemcpyDtoHAsync", "cuStreamSynchronize")
_ENTRY_POINT_ABI = 12000


class PerCallPath:
    """How a runtime and all its stream views make their per-call driver
    calls: calls is the C path (a DriverCalls), or None for cuda.core's
    launch and cuda.bindings' calls (for a build without the extension,
    arguments the C path does not pack, and A/B measurements:
    Runtime.through_python)."""

    def __init__(self, calls):
        self.calls = calls


def per_call_driver_calls():
    """The C path's DriverCalls, or None when the extension is not built or
    the driver lacks one of the entry points."""
    try:
        from histkit.gpu._driver_calls import DriverCalls
    except ImportError:  # a build without it: calls go through cuda.core
        return None
    version = min(_ENTRY_POINT_ABI, int(check(driver.cuDriverGetVersion(),
                                              "cuDriverGetVersion")))
    flags = driver.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
    addresses = []
    for name in _PER_CALL_ENTRY_POINTS:
        try:
            found = driver.cuGetProcAddress(name.encode(), version, flags)
        except Exception:  # bindings whose lookup takes other arguments
            return None
        if found[0] != SUCCESS or not int(found[1]):
            return None
        addresses.append(int(found[1]))
    return DriverCalls(*addresses)
