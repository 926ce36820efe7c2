"""The CUDA device, its stream, memory and module loading, via cuda.core.

One ``Runtime`` per process, created on first use. Every driver call is
checked; a failure raises ``CudaError`` naming the call and the CUDA error.
A runtime works on one stream: histkit's own, or -- through ``on(handle)``,
a view sharing every cache -- the caller's (a CuPy or PyTorch stream, say),
so a call is ordered with the caller's work without cross-stream waits and
can be captured in a CUDA graph. A public call synchronises its stream before
returning only when it must read something back (results for NumPy, the
bad-key word when it checks keys).

A public call pays Python and driver work on top of its kernels; what can be
done once is done once here: kernel attributes and occupancy are asked once
per kernel and shape, launch configurations are kept, and the bad-key slot a
call needs is one cached device word per thread, read back through one
pinned host word (no allocation, no pageable copy). The driver calls every
public call makes (launch, memset, that read-back, sync) go from C
(``_driver_calls.pyx``) to the driver's entry points, looked up once through
cuda.bindings; without that extension, or for an argument it cannot pack,
they go through cuda.core and cuda.bindings.

The modules, one concept each:

    bindings     cuda.bindings' driver, ``check``, the C path's entry points
    memory       DeviceArray, the buffer pool, windows, fenced buffers
    harness      the conformance harness's modes (skew, poisoned scratch, wait bounds)
    launching    kernels built and launched (Runtime's methods)
    waiting      syncs, bounded or not (Runtime's methods)
    allocation   arrays, scratch and copies (Runtime's methods)
    call_slots   the bad-key slot a call reads back (Runtime's methods)
    core         Runtime itself, ``runtime()``, ``gpu_unavailable_reason()``
"""

from histkit.gpu.device.bindings import PerCallPath, check, error_name, per_call_driver_calls
from histkit.gpu.device.core import (
    BoardMemory,
    Runtime,
    foreign_stream,
    gpu_unavailable_reason,
    runtime,
)
from histkit.gpu.device.harness import (
    SCRATCH_CANARIES,
    SCRATCH_GUARD_BYTES,
    GuardedScratch,
    ScheduleSkew,
    ScratchPoison,
    WaitBound,
)
from histkit.gpu.device.memory import (
    FENCE_GRANULES,
    LASTING_STREAMS,
    POOL_MAX_BLOCK,
    POOL_MAX_BYTES,
    BufferPool,
    BufferWindow,
    DeviceArray,
    FencedBuffer,
    FenceUnavailable,
    PooledBuffer,
    size_class,
)

__all__ = [
    "FENCE_GRANULES",
    "LASTING_STREAMS",
    "POOL_MAX_BLOCK",
    "POOL_MAX_BYTES",
    "SCRATCH_CANARIES",
    "SCRATCH_GUARD_BYTES",
    "BoardMemory",
    "BufferPool",
    "BufferWindow",
    "DeviceArray",
    "FenceUnavailable",
    "FencedBuffer",
    "GuardedScratch",
    "PerCallPath",
    "PooledBuffer",
    "Runtime",
    "ScheduleSkew",
    "ScratchPoison",
    "WaitBound",
    "check",
    "error_name",
    "foreign_stream",
    "gpu_unavailable_reason",
    "per_call_driver_calls",
    "runtime",
    "size_class",
]
