"""A runtime's memory: arrays stream-ordered on its stream (pooled where the
stream outlives them, from the graph's memory while it is captured),
poisoned and guarded scratch while the conformance harness is on, the
stream's kept barrier scratch, and copies to and from the device.
"""

from __future__ import annotations

import numpy as np

from histkit.gpu.device import bindings
from histkit.gpu.device.bindings import check
from histkit.gpu.device.harness import SCRATCH_GUARD_BYTES, GuardedScratch, switched_on
from histkit.gpu.device.memory import (
    LASTING_STREAMS,
    POOL_MAX_BLOCK,
    BufferWindow,
    DeviceArray,
    FencedBuffer,
    KeptBuffer,
    PooledBuffer,
    size_class,
)
from histkit.gpu.errors import CudaError, DeviceMemoryError


class Allocation:
    """Runtime's memory methods (the state is set in Runtime.__init__)."""

    def capturing(self) -> bool:
        """Whether this runtime's stream is being captured into a CUDA graph
        (only a caller's stream can be: histkit's own is never handed out)."""
        if self is self._base:
            return False
        status = check(bindings.driver.cuStreamIsCapturing(self.handle), "cuStreamIsCapturing")
        return status != bindings.driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE

    def _empty(self, n: int, dtype, pooled: bool = True) -> DeviceArray:
        """n elements on the device, stream-ordered on this runtime's stream:
        from the pool when this stream outlives its buffers (histkit's own, the
        legacy default stream) and the array is used only on it (pooled=False:
        a result handed to a caller, who may use it on other streams); while
        the stream is captured, from the graph's memory (an allocation node)."""
        dtype = np.dtype(dtype)
        nbytes = max(1, n * dtype.itemsize)
        lasting = self is self._base or self.handle in LASTING_STREAMS
        if pooled and lasting and nbytes <= POOL_MAX_BLOCK:
            key = (self.handle, size_class(nbytes))
            inner = self.pool.take(key)
            if inner is None:
                inner = self._allocate(key[1])
            array = DeviceArray(PooledBuffer(inner, self.pool, key), n, dtype)
        elif self.capturing():
            array = DeviceArray(self._graph_memory().allocate(nbytes, stream=self.stream),
                                n, dtype)
        else:
            array = DeviceArray(self._allocate(nbytes), n, dtype)
        return array

    def empty(self, n: int, dtype, pooled: bool = True) -> DeviceArray:
        """n elements on the device (_empty), poisoned and between guards while
        the conformance runner poisons scratch (ScratchPoison)."""
        poison = self.poison.next_byte()
        if poison is None:
            return self._empty(n, dtype, pooled)
        dtype = np.dtype(dtype)
        nbytes = max(1, n * dtype.itemsize)
        guard = SCRATCH_GUARD_BYTES
        canary = self.poison.canary
        if self.poison.exact:
            whole = self._empty(n, dtype, pooled=False).buffer
            guarded = GuardedScratch(whole, int(whole.handle), nbytes, canary, before=False,
                                     after=False)
        elif self.poison.fenced:
            at_start = self.poison.fence_at_start()
            whole = FencedBuffer(self.device.device_id, nbytes + guard, at_start)
            ptr = whole.handle if at_start else whole.handle + guard
            guarded = GuardedScratch(whole, ptr, nbytes, canary, before=not at_start,
                                     after=at_start)
            self.memset(whole.handle, canary, nbytes + guard)
        else:
            whole = self._empty(nbytes + 2 * guard, np.uint8, pooled).buffer
            guarded = GuardedScratch(whole, int(whole.handle) + guard, nbytes, canary)
            self.memset(int(whole.handle), canary, nbytes + 2 * guard)
        self.memset(guarded.ptr, poison, nbytes)
        self.poison.guarded.append(guarded)
        return DeviceArray(BufferWindow(whole, guarded.ptr - int(whole.handle)), n, dtype)

    def scratch_overruns(self) -> list[str]:
        """Waits for this stream, then reads back the guards of every poisoned
        array handed out since the last call (and lets them go): what was
        written outside them, one line each (empty: nothing)."""
        guarded, self.poison.guarded = self.poison.guarded, []
        found = []
        guard = SCRATCH_GUARD_BYTES

        def first_changed(ptr: int, canary: int) -> int | None:
            """The offset of the first guard byte at ptr that is not the canary."""
            changed = np.flatnonzero(self.copy_to_host(ptr, np.empty(guard, np.uint8)) != canary)
            return int(changed[0]) if changed.size else None

        for scratch in guarded:
            nbytes, canary = scratch.nbytes, scratch.canary
            at = first_changed(scratch.ptr - guard, canary) if scratch.before else None
            if at is not None:
                found.append(f"wrote {guard - at} bytes before the start of a {nbytes}-byte "
                             f"scratch array")
            at = first_changed(scratch.ptr + nbytes, canary) if scratch.after else None
            if at is not None:
                found.append(f"wrote past the end of a {nbytes}-byte scratch array (at byte "
                             f"{nbytes + at})")
            if scratch.ends_zero:
                word = self.copy_to_host(scratch.ptr, np.empty(1, np.uint64))[0]
                if word:
                    found.append(f"left {int(word)} in the first word of the stream's kept "
                                 f"barrier scratch (the kernel must leave it zero: the next "
                                 f"call starts from it)")
        return found

    def skewed_schedule(self, order_seed: int | None = None):
        """Within: kernels are built and planned with schedule skew (ScheduleSkew);
        a user's kernel with the warp order drawn from order_seed at each barrier."""
        self.skew.order_seed = order_seed
        return switched_on(self.skew)

    def poisoned_scratch(self, fenced: bool = False):
        """Within: new arrays arrive poisoned (ScratchPoison), and with
        fenced=True flush against unmapped memory; each outermost use is a
        new cell."""
        if not self.poison.depth:
            self.poison.new_cell(fenced)
        return switched_on(self.poison)

    def _allocate(self, nbytes: int):
        """A new buffer on this stream; when the device is full, the pool's kept
        buffers are freed and the allocation tried once more."""
        for attempt in (1, 2):
            try:
                return self.device.allocate(nbytes, stream=self.stream)
            except Exception as error:
                if "OUT_OF_MEMORY" not in str(error):
                    raise
                if attempt == 2 or not self.pool.kept:
                    raise DeviceMemoryError(nbytes, self.free_bytes()) from None
                self.pool.clear()

    def barrier_scratch(self, words: int) -> DeviceArray | None:
        """At least `words` uint64 of scratch kept by this stream, its first
        word zero: for kernels that leave that word as they found it
        (resident_sort's blocks reset their arrivals counter on the way out), so
        a call pays no allocation and no memset. Launches on one stream run one
        after another, so they may share it; None on the per-thread default
        stream (handle 2), which is another stream on each thread, and where
        none is kept yet while the stream is captured into a graph (the call's
        scratch then comes from the graph's memory)."""
        if self.handle == 2:
            return None
        if self.poison.depth:
            # A conformance cell: poisoned and guarded like any scratch (the
            # words past the first are never read before written), and the
            # kernel's promise to leave the first word zero is checked.
            scratch = self.empty(max(1, words), np.uint64)
            self.memset(scratch.ptr, 0, 8)
            self.poison.guarded[-1].ends_zero = True
            return scratch
        scratch = self._barrier_scratch
        if scratch is None or scratch.n < words:
            if self.capturing():
                return None
            # Kept, not pooled: no other array may ever hold these bytes. Tied
            # to no stream (KeptBuffer), since this one may be a caller's that
            # is destroyed first; an outgrown one is freed once the device's
            # queued work is done.
            self._barrier_scratch = None
            scratch = DeviceArray(self._allocate_kept(max(1, words) * 8), max(1, words),
                                  np.dtype(np.uint64))
            self.memset(scratch.ptr, 0, 8)
            self._barrier_scratch = scratch
        return scratch

    def _allocate_kept(self, nbytes: int) -> KeptBuffer:
        """Device memory tied to no stream, for what is kept across calls."""
        return KeptBuffer(nbytes)

    def zero_word(self) -> DeviceArray:
        """One uint64 zero on the device, made once and never written: a
        constant any stream may read (a single-tile scan's tile offset)."""
        base = self._base
        if base._zero_word is None:
            word = DeviceArray(base.device.allocate(8, stream=base.stream), 1,
                               np.dtype(np.uint64))
            base.memset(word.ptr, 0, 8)
            base.sync("zeroing a constant word")
            base._zero_word = word
        return base._zero_word

    def _graph_memory(self):
        if self._base._graph_resource is None:
            from cuda.core import GraphMemoryResource

            self._base._graph_resource = GraphMemoryResource(self.device.device_id)
        return self._base._graph_resource

    def free_bytes(self) -> int | None:
        try:
            free, _ = check(bindings.driver.cuMemGetInfo(), "cuMemGetInfo")
        except CudaError:
            return None
        return int(free)

    def zeros(self, n: int, dtype) -> DeviceArray:
        array = self.empty(n, dtype)
        self.memset(array.ptr, 0, max(1, n * array.dtype.itemsize))
        return array

    def memset(self, ptr: int, byte: int, nbytes: int) -> None:
        calls = self.per_call.calls
        if calls is not None:
            check(calls.memset(ptr, byte, nbytes, self.handle), "cuMemsetD8Async")
            return
        check(bindings.driver.cuMemsetD8Async(ptr, byte, nbytes, self.handle), "cuMemsetD8Async")

    def to_device(self, host: np.ndarray) -> DeviceArray:
        host = np.ascontiguousarray(host)
        array = self.empty(len(host), host.dtype)
        if host.nbytes:
            self._wait_before_pageable_copy("copying inputs to the device")
            check(bindings.driver.cuMemcpyHtoDAsync(array.ptr, host.ctypes.data, host.nbytes,
                                           self.handle), "cuMemcpyHtoDAsync")
        return array

    def fenced_at_start(self, n: int, dtype) -> DeviceArray:
        """n elements of dtype in a FencedBuffer whose first byte follows
        unmapped memory: a kernel that touches the word before them faults
        (CudaError where this driver cannot do it)."""
        dtype = np.dtype(dtype)
        return DeviceArray(FencedBuffer(self.device.device_id, n * dtype.itemsize,
                                        at_start=True), n, dtype)

    def fenced_copy(self, host: np.ndarray, at_start: bool = False) -> DeviceArray:
        """host on the device in a FencedBuffer: the byte after its last
        element is unmapped (at_start: the byte before its first); CudaError
        where this driver cannot do it."""
        host = np.ascontiguousarray(host)
        array = DeviceArray(FencedBuffer(self.device.device_id, host.nbytes, at_start),
                            len(host), host.dtype)
        if host.nbytes:
            self._wait_before_pageable_copy("copying inputs to the device")
            check(bindings.driver.cuMemcpyHtoDAsync(array.ptr, host.ctypes.data, host.nbytes,
                                           self.handle), "cuMemcpyHtoDAsync")
        return array

    def copy_to_host(self, ptr: int, host: np.ndarray) -> np.ndarray:
        """Copy into a contiguous host array and wait for it."""
        if host.nbytes:
            self._wait_before_pageable_copy("copying results to the host")
            check(bindings.driver.cuMemcpyDtoHAsync(host.ctypes.data, ptr, host.nbytes,
                                           self.handle), "cuMemcpyDtoHAsync")
        self.sync("copying results to the host")
        return host

    def copy_device(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            check(bindings.driver.cuMemcpyDtoDAsync(dst, src, nbytes, self.handle),
                  "cuMemcpyDtoDAsync")
