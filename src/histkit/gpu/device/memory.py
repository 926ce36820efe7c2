"""Device memory as histkit hands it out: arrays (``DeviceArray``), the pool
of freed buffers kept per stream and size class, windows into a buffer, and
buffers fenced by unmapped address space (the conformance suite's fenced
cases). The Runtime's methods that allocate and copy are in ``allocation``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histkit.gpu.device import bindings
from histkit.gpu.device.bindings import check
from histkit.gpu.errors import CudaError


class PooledBuffer:
    """A cuda.core Buffer on loan from Runtime's pool: dropped, it goes back to
    the pool of its stream (for the next allocation of its size class there)
    instead of being freed. Shared by every DeviceArray made from it."""

    __slots__ = ("inner", "handle", "pool", "key")

    def __init__(self, inner, pool: BufferPool | None, key: tuple):
        self.inner = inner
        self.handle = int(inner.handle)
        self.pool = pool
        self.key = key

    def __del__(self):
        # Not contextlib.suppress: at interpreter shutdown module globals may
        # already be gone, and there is nothing left to keep the buffer for.
        if self.pool is not None:
            try:  # noqa: SIM105
                self.pool.give_back(self.key, self.inner)
            except Exception:
                pass


@dataclass
class DeviceArray:
    """A 1-d device array histkit allocated; exposes __cuda_array_interface__."""

    buffer: object
    n: int
    dtype: np.dtype

    @property
    def ptr(self) -> int:
        return int(self.buffer.handle)

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.n,), "typestr": self.dtype.str, "data": (self.ptr, False),
                "version": 3, "strides": None}


# Streams that outlive every buffer and are one stream for every thread:
# histkit's own and the legacy default stream (handle 1). Only their buffers
# are pooled: a caller's stream may be destroyed while a pooled buffer still
# names it, and the per-thread default stream (2) is another stream on each
# thread, which would not order a reuse after the last use.
LASTING_STREAMS = (1,)
POOL_MAX_BYTES = 1 << 30
# Blocks up to the whole pool are kept: a freed buffer stays reserved by the
# driver's pool anyway (cuda.core sets its release threshold to the maximum),
# and taking it back here skips cuMemAllocFromPoolAsync and cuMemFreeAsync on
# every call, large blocks included: 2^28 keys over 2^20 bins hold the
# partitioned kernel's 512 MiB of low bins, and the compiled lane's replay of
# that call takes its scratch as one block of 552 MiB (histkit.gpu.recording).
POOL_MAX_BLOCK = POOL_MAX_BYTES


def size_class(nbytes: int) -> int:
    """nbytes rounded up: to 512 B below 64 KiB, else to 1/8 of its power of two
    (at most 12.5% more), so nearby sizes share pooled blocks."""
    if nbytes <= 1 << 16:
        return max(512, -(-nbytes // 512) * 512)
    step = 1 << (nbytes.bit_length() - 4)
    return -(-nbytes // step) * step


class BufferPool:
    """Freed device buffers kept per (stream, size class) and handed out again.

    Reuse on the stream that freed a buffer is ordered after its last use by
    the stream itself (work queued before the free runs before work queued
    after the reuse), whichever thread queues it -- CuPy's and PyTorch's
    allocators rest on the same rule. About POOL_MAX_BYTES at most are kept.

    No lock: buffers come back from finalisers (PooledBuffer.__del__), which
    the garbage collector may run in the middle of take() on the same thread,
    where a lock would deadlock. list.append and list.pop are atomic under
    the GIL; the byte count is only a cap, so a racy update is harmless.
    """

    def __init__(self):
        self.free: dict[tuple, list] = {}
        self.kept = 0

    def take(self, key: tuple):
        stack = self.free.get(key)
        if not stack:
            return None
        try:
            inner = stack.pop()
        except IndexError:  # another thread took the last one
            return None
        self.kept -= key[1]
        return inner

    def give_back(self, key: tuple, inner) -> None:
        if self.kept + key[1] > POOL_MAX_BYTES:
            return  # dropped: the buffer frees itself on its stream
        self.free.setdefault(key, []).append(inner)
        self.kept += key[1]

    def clear(self) -> None:
        self.free = {}
        self.kept = 0


class KeptBuffer:
    """Device memory from cuMemAlloc, tied to no stream, freed by cuMemFree:
    for what a runtime keeps across calls for one stream (its barrier
    scratch). A caller's stream may be destroyed while histkit still keeps
    such a buffer, and a stream-ordered buffer freed on a destroyed stream is
    undefined behaviour (at interpreter exit, CUDA_ERROR_CONTEXT_IS_DESTROYED
    and a segfault). It is freed after a cuCtxSynchronize, so that no kernel
    still queued on any stream uses the bytes when they are reused."""

    __slots__ = ("handle",)

    def __init__(self, nbytes: int):
        self.handle = int(check(bindings.driver.cuMemAlloc(nbytes), "cuMemAlloc"))

    def __del__(self):
        # the device's queued work first: a kernel may still use the bytes.
        # At interpreter exit the context (or the bindings) may be gone: the
        # memory goes with the context, and there is nothing to report.
        try:
            bindings.driver.cuCtxSynchronize()
            bindings.driver.cuMemFree(self.handle)
        except Exception:
            pass


class BufferWindow:
    """Part of another buffer, from offset bytes on: what a DeviceArray needs
    (a handle), keeping the whole buffer alive."""

    __slots__ = ("whole", "handle")

    def __init__(self, whole, offset: int):
        self.whole = whole
        self.handle = int(whole.handle) + offset


FENCE_GRANULES = 16  # unmapped granules (2 MiB each on the H200) either side of a FencedBuffer


class FenceUnavailable(CudaError):
    """The driver's virtual memory API could not make a FencedBuffer here."""


class FencedBuffer:
    """Device memory with unmapped address space on both sides, placed flush
    against one of them: at the end (the default), a kernel that reads or
    writes even one element past it faults (CUDA_ERROR_ILLEGAL_ADDRESS)
    instead of reading whatever lies there and dropping it; at the start
    (at_start=True), one that writes or reads before it faults. Made with
    the driver's virtual memory API: FENCE_GRANULES granules of address space
    are reserved on either side of the mapped ones. For the conformance
    suite's fenced cases (a few small arrays); freed, after a device sync,
    when dropped."""

    def __init__(self, device_id: int, nbytes: int, at_start: bool = False):
        driver = bindings.driver
        prop = driver.CUmemAllocationProp()
        prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = device_id
        minimum = driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
        try:
            granule = int(check(driver.cuMemGetAllocationGranularity(prop, minimum),
                                "cuMemGetAllocationGranularity"))
        except CudaError as error:
            raise FenceUnavailable(str(error)) from None
        self.mapped = -(-max(1, nbytes) // granule) * granule
        self.memory = self.base = None
        # the address space on either side stays unmapped: an access a whole
        # grid stride away (megabytes) must fault too, not land elsewhere, and
        # so must one a whole input away (an index past 2^31 wrapped to a
        # negative int reads that far before the keys); address space costs
        # no memory
        fence = max(FENCE_GRANULES * granule, self.mapped)
        self.reserved = self.mapped + 2 * fence
        try:
            self.memory = check(driver.cuMemCreate(self.mapped, prop, 0), "cuMemCreate")
            self.base = check(driver.cuMemAddressReserve(self.reserved, granule, 0, 0),
                              "cuMemAddressReserve")
            self.start = int(self.base) + fence
            check(driver.cuMemMap(self.start, self.mapped, 0, self.memory, 0), "cuMemMap")
            access = driver.CUmemAccessDesc()
            access.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            access.location.id = device_id
            access.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            check(driver.cuMemSetAccess(self.start, self.mapped, [access], 1), "cuMemSetAccess")
        except CudaError as error:
            self._free()
            raise FenceUnavailable(str(error)) from None
        self.handle = self.start if at_start else self.start + self.mapped - nbytes

    def _free(self) -> None:
        driver = bindings.driver
        if self.base is not None:
            driver.cuMemUnmap(self.start, self.mapped)
            driver.cuMemAddressFree(self.base, self.reserved)
            self.base = None
        if self.memory is not None:
            driver.cuMemRelease(self.memory)
            self.memory = None

    def __del__(self):
        try:  # noqa: SIM105 (see PooledBuffer.__del__)
            bindings.driver.cuCtxSynchronize()  # no kernel may still be reading it
            self._free()
        except Exception:
            pass
