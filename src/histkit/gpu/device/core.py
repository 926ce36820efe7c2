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
they go through cuda.core and cuda.bindings as before.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import ctypes
import os
import sys
import threading
import time
from dataclasses import dataclass
from functools import cache

import numpy as np

try:  # cuda-python is the gpu extra: without it, Runtime() says so
    from cuda.bindings import driver
except ImportError:  # pragma: no cover - exercised on hosts without the extra
    driver = None

from histkit.gpu import contract
from histkit.gpu.compiler import compile_cubin, files_of
from histkit.gpu.errors import CudaError, DeviceHang, DeviceMemoryError, GpuUnavailableError
from histkit.gpu.geometry import Geometry
from histkit.gpu.verdict import COMMON_HEADER, SlotLease, VerdictBoard

_SUCCESS = driver.CUresult.CUDA_SUCCESS if driver is not None else None
_NOT_READY = driver.CUresult.CUDA_ERROR_NOT_READY if driver is not None else None


def _exit_without_teardown() -> None:
    """At exit after a hang (registered then): the driver's teardown of the
    context would wait for the kernel that never ends, so the process leaves
    without it, with status 1 (the run it ends has failed)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(1)


class WaitBound:
    """How long a host wait on the device may take (None: unbounded), and
    the wait that outlasted it, once one has (Runtime.bounded_waits)."""

    def __init__(self):
        self.limit_s: float | None = None
        self.hung: str | None = None

    @property
    def active(self) -> bool:
        """Whether waits go through Runtime._bounded_sync (a bound, or a hang)."""
        return self.limit_s is not None or self.hung is not None


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
    if type(result) is tuple and result[0] == _SUCCESS:  # the common case, kept short
        return result[1] if len(result) == 2 else result[1:]
    status, *values = result if isinstance(result, tuple) else (result,)
    if status != driver.CUresult.CUDA_SUCCESS:
        text = _as_text(driver.cuGetErrorString(status)[1])
        raise CudaError(f"{call} failed: {error_name(status)} ({text})")
    return values[0] if len(values) == 1 else tuple(values)


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
# and taking it back here skips cuMemAllocFromPoolAsync and cuMemFreeAsync:
# 2^28 keys over 2^20 bins (the partitioned kernel's 512 MiB of low bins) took
# 1737.3-1742.6 us a call with blocks up to 64 MiB pooled, 1727.1-1734.8 with
# any (4 alternating rounds each, H200, bench/call_gap.py --profile,
# call-gap-profile-h200-2026-12-03-session29.log). The compiled lane's replay
# of that call takes its scratch as one block of 552 MiB (histkit.gpu.recording),
# past the half of the pool that was kept until session 33.
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
        if self.base is not None:
            driver.cuMemUnmap(self.start, self.mapped)
            driver.cuMemAddressFree(self.base, self.reserved)
            self.base = None
        if self.memory is not None:
            driver.cuMemRelease(self.memory)
            self.memory = None

    def __del__(self):
        try:  # noqa: SIM105 (see PooledBuffer.__del__)
            driver.cuCtxSynchronize()  # no kernel may still be reading it
            self._free()
        except Exception:
            pass


# Guard bytes on each side of a poisoned scratch array (a multiple of 256:
# the array keeps the allocation's alignment), and the bytes they hold, by
# turns from cell to cell: a kernel that reads one past its scratch (a
# search's bound, a table's last entry) gets a large value in some cells and
# zero in others, and a sentinel that works with one fails with the other.
SCRATCH_GUARD_BYTES = 256
SCRATCH_CANARIES = (0x3C, 0x00)


@contextlib.contextmanager
def _switched_on(mode):
    """Within: mode (a ScheduleSkew or ScratchPoison, shared by a runtime's
    stream views) is on; nested uses count, so the outermost exit turns it off."""
    mode.depth += 1
    try:
        yield
    finally:
        mode.depth -= 1


class ScheduleSkew:
    """While on (the conformance runner's skewed cases), kernels are built with
    -DHK_SKEW_NS and -DHK_STRAGGLE_NS (common.cuh: warps of a block sleep
    different times at entry and after every barrier, and in the first blocks
    all warps but warp 0 straggle after one barrier each), and launch plans
    made then are kept apart from the plain ones. Shared by a runtime's stream
    views."""

    def __init__(self):
        self.depth = 0

    def defines(self) -> dict[str, str]:
        return contract.schedule_defines() if self.depth else {}


@dataclass
class GuardedScratch:
    """A poisoned scratch array's guards, read back by Runtime.scratch_overruns:
    `before` and `after` say which sides have SCRATCH_GUARD_BYTES of canary
    (a side flush against unmapped memory has none: a write there faults);
    `ends_zero`: the array's first word must be zero again after the cell
    (a barrier counter its kernel promises to leave as it found it)."""

    owner: object  # keeps the allocation alive until the guards are read
    ptr: int
    nbytes: int
    canary: int
    before: bool = True
    after: bool = True
    ends_zero: bool = False


class ScratchPoison:
    """While on (the conformance runner's cells), every array Runtime.empty
    hands out arrives filled with 0x00 and 0xFF by turns: a kernel may neither
    read scratch it has not written (zeros read as valid keys and counts) nor
    count on it being zeroed (all ones). Each such array also sits between
    SCRATCH_GUARD_BYTES of a canary byte on either side, kept (with the
    array) until Runtime.scratch_overruns reads them back: a kernel that
    writes just before or past its scratch is caught there. A call allocates
    the same arrays in the same order every time, so each cell starts the
    turns one further on: over four cells every array meets both fills and
    both canaries (SCRATCH_CANARIES). In a fenced cell (`fenced`) each array
    is also flush against unmapped memory, before it and after it by turns
    (FencedBuffer): a write or read far outside it, past any guard, faults.
    `exact` (compute-sanitizer memcheck's runs, conformance/sanitize.py): each
    array is instead an allocation of exactly its own bytes, poisoned, with no
    guards, outside histkit's pool: memcheck then reports a read or write one
    element outside it, which guards or a pool's size class would hold and
    hide. Shared by a runtime's stream views."""

    def __init__(self):
        self.depth = 0
        self.cells = 0
        self.turn = 0
        self.exact = False
        self.fenced = False
        self.canary = SCRATCH_CANARIES[0]
        self.guarded: list[GuardedScratch] = []

    def new_cell(self, fenced: bool = False) -> None:
        self.cells += 1
        self.turn = self.cells
        self.fenced = fenced
        self.canary = SCRATCH_CANARIES[self.cells // 2 % 2]

    def next_byte(self) -> int | None:
        if not self.depth:
            return None
        self.turn += 1
        return 0xFF if self.turn % 2 else 0x00

    def fence_at_start(self) -> bool:
        """Which side of the next fenced array is unmapped: by turns, so in
        every fenced cell arrays meet both (whatever their number)."""
        return self.turn // 2 % 2 == 1


# The driver functions public calls make on every call, made from C
# (_driver_calls.pyx) when that module is built: looked up by name for the
# CUDA 12.0 ABI, which its C signatures follow.
_PER_CALL_ENTRY_POINTS = ("cuLaunchKernel", "cuLaunchCooperativeKernel", "cuMemsetD8Async",
                          "cuMemcpyDtoHAsync", "cuStreamSynchronize")
_ENTRY_POINT_ABI = 12000


class PerCallPath:
    """How a runtime and all its stream views make their per-call driver
    calls: calls is the C path (a DriverCalls), or None for cuda.core's
    launch and cuda.bindings' calls (the path before the C one, kept for a
    build without the extension, arguments the C path does not pack, and
    A/B measurements: Runtime.through_python)."""

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
        if found[0] != _SUCCESS or not int(found[1]):
            return None
        addresses.append(int(found[1]))
    return DriverCalls(*addresses)


class BoardMemory:
    """A runtime's storage for its VerdictBoard (verdict.py): kept device
    memory, mapped host memory, and the modules' board global."""

    def __init__(self, rt: Runtime):
        self.rt = rt

    def device(self, nbytes: int):
        buffer = self.rt._allocate(nbytes)  # kept: never pooled, never freed
        return buffer, int(buffer.handle)

    def fill(self, ptr: int, byte: int, nbytes: int) -> None:
        self.rt.memset(ptr, byte, nbytes)
        self.rt.sync("filling the verdict board")

    def mapped(self, nbytes: int) -> tuple[int, int]:
        host = int(check(driver.cuMemHostAlloc(nbytes, driver.CU_MEMHOSTALLOC_DEVICEMAP),
                         "cuMemHostAlloc(DEVICEMAP)"))
        ctypes.memset(host, 0, nbytes)
        device = int(check(driver.cuMemHostGetDevicePointer(host, 0),
                           "cuMemHostGetDevicePointer"))
        return host, device

    def write_global(self, module, name: bytes, data: bytes) -> bool:
        status, ptr, size = driver.cuLibraryGetGlobal(module.handle, name)
        if status == driver.CUresult.CUDA_ERROR_NOT_FOUND:
            return False
        check((status,), f"cuLibraryGetGlobal({name.decode()})")
        if int(size) != len(data):
            return False  # a layout this host does not know: never write it
        image = ctypes.create_string_buffer(data, len(data))
        check(driver.cuMemcpyHtoD(int(ptr), ctypes.addressof(image), len(data)),
              f"cuMemcpyHtoD({name.decode()})")
        return True


class Runtime:
    def __init__(self):
        try:
            from cuda.core import Device, launch
        except ImportError as error:
            raise GpuUnavailableError(
                f"cuda-python (cuda.core) is not installed: {error}") from None
        try:
            self.device = Device()
            self.device.set_current()
        except Exception as error:
            raise GpuUnavailableError(f"no usable CUDA device: {error}") from None
        self.stream = self.device.create_stream()
        # The raw handle, an int, is what the driver calls below take: cuda.core's
        # Stream.handle makes a new driver object per use (a memset took 4.5 us
        # through it against 2.7 with the int; H200, twentieth session).
        self.handle = int(self.stream.handle)
        major, minor = self.device.compute_capability
        self.arch = f"sm_{major}{minor}"
        props = self.device.properties
        self.sm_count = props.multiprocessor_count
        self.max_shared_per_block = props.max_shared_memory_per_block_optin
        self.cooperative = self._can_launch_cooperatively()
        self._kernels: dict = {}
        self._shared_allowed: dict[int, int] = {}  # kernel handle -> bytes allowed
        self._resident: dict = {}
        self._static_shared: dict[int, int] = {}  # kernel handle -> static bytes
        self._ready: dict = {}  # (kernel, geometry) -> its launch configuration
        self._plans: dict = {}
        self._scratch = threading.local()
        self._scratch.bound = True  # the context is current on this thread (above)
        self._launch = launch
        self._views: dict[int, Runtime] = {}
        self._base = self
        self._graph_resource = None
        self.pool = BufferPool()
        self._zero_word = None
        self.poison = ScratchPoison()
        self.skew = ScheduleSkew()
        self._barrier_scratch = None
        self.waits = WaitBound()  # shared with every stream view (copy.copy)
        self.per_call = PerCallPath(per_call_driver_calls())  # shared with the views too
        self.verdicts = VerdictBoard(BoardMemory(self))  # shared with the views too

    def _can_launch_cooperatively(self) -> bool:
        """Whether the device takes cooperative launches (every block resident
        at once) and this cuda.core can ask for one."""
        attribute = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
        try:
            if not check(driver.cuDeviceGetAttribute(attribute, self.device.device_id),
                         "cuDeviceGetAttribute(COOPERATIVE_LAUNCH)"):
                return False
            from cuda.core import LaunchConfig

            LaunchConfig(grid=1, block=1, is_cooperative=True)
        except (TypeError, CudaError):  # an older cuda.core: no is_cooperative
            return False
        return True

    def bind_to_this_thread(self) -> None:
        """Make the device's context current on this thread, once per thread:
        a CUDA context is current per thread, and Runtime() made it so only on
        the thread that built it (a call from a worker thread then failed)."""
        if not getattr(self._scratch, "bound", False):
            self.device.set_current()
            self._scratch.bound = True

    # --- streams -----------------------------------------------------------
    def on(self, handle: int | None) -> Runtime:
        """This runtime working on the stream with this raw CUstream handle (0 or
        1: the legacy default stream, 2: the per-thread one; None: histkit's
        own). Views share every cache; one is made per handle, once."""
        if handle is None:
            return self._base
        if handle == self.handle:
            return self
        view = self._views.get(handle)
        if view is None:
            if len(self._views) > 64:  # streams come and go: keep the map bounded
                self._views.clear()
            view = copy.copy(self)
            view.stream = foreign_stream(handle)
            view.handle = handle
            view._barrier_scratch = None  # the stream's own (barrier_scratch)
            self._views[handle] = view
        return view

    # --- modules ---------------------------------------------------------
    def kernel(self, source: str, name: str, defines: dict[str, str]):
        """The entry `name` of cuda/`source`, built with the contract's defines + `defines`."""
        defines = {**defines, **self.skew.defines()}
        key = (source, name, tuple(sorted(defines.items())))
        if key not in self._kernels:
            defines = contract.defines_for(source, defines)
            from cuda.core import ObjectCode

            cubin = compile_cubin(source, defines, self.arch)
            module = ObjectCode.from_cubin(cubin)
            kernel = module.get_kernel(name)
            self.verdicts.install(module, reads_board=COMMON_HEADER in files_of(source))
            self._kernels[key] = kernel
        return self._kernels[key]

    def allow_shared(self, kernel, nbytes: int) -> None:
        """Let kernel use nbytes of dynamic shared memory: beyond the default
        48 KiB of static and dynamic shared memory together, the kernel must
        opt in, and its static part is its own, so any dynamic use opts in
        (set once per kernel and size: later calls cost a dict lookup)."""
        if nbytes == 0:
            return
        handle = int(kernel.handle)
        if nbytes <= self._shared_allowed.get(handle, 0):
            return
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(driver.cuKernelSetAttribute(attribute, nbytes, kernel.handle,
                                          self.device.device_id),
              "cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
        self._shared_allowed[handle] = nbytes

    def launch(self, kernel, geometry: Geometry, *args) -> None:
        ready = self._ready_for(kernel, geometry)
        calls = self.per_call.calls
        if calls is not None:
            try:
                status = calls.launch(ready[1], geometry.grid, geometry.block,
                                      geometry.shared_bytes, self.handle, geometry.cooperative,
                                      args)
            except TypeError:  # an argument the C path does not pack: cuda.core does
                pass
            else:
                if status:
                    raise CudaError(f"launching {geometry} failed: {error_name(status)}")
                return
        try:
            self._launch(self.stream, ready[0], kernel, *args)
        except Exception as error:
            raise CudaError(f"launching {geometry} failed: {error}") from error

    def _ready_for(self, kernel, geometry: Geometry):
        """(launch configuration, raw handle) of this kernel and geometry: one
        lookup per launch; the kernel's shared-memory opt-in, its handle and
        the configuration are settled the first time this pair launches."""
        ready = self._ready.get((kernel, geometry))
        return ready if ready is not None else self._ready_to_launch(kernel, geometry)

    def launch_handle(self, kernel, geometry: Geometry) -> int:
        """The raw handle the C path launches kernel through at this geometry,
        its shared memory allowed (the compiled lane keeps it in its plans)."""
        return self._ready_for(kernel, geometry)[1]

    def _ready_to_launch(self, kernel, geometry: Geometry):
        """(geometry's launch configuration, the kernel's raw handle), the
        kernel allowed its shared memory."""
        self.allow_shared(kernel, geometry.shared_bytes)
        if len(self._ready) > 4096:  # many distinct shapes: keep the cache bounded
            self._ready.clear()
        ready = self._ready[kernel, geometry] = (self._config(geometry), int(kernel.handle))
        return ready

    @contextlib.contextmanager
    def through_python(self):
        """Within: launches, memsets and read-backs through cuda.core and
        cuda.bindings, not the C path (A/B measurements; the same driver
        functions either way)."""
        saved = self.per_call.calls
        self.per_call.calls = None
        try:
            yield
        finally:
            self.per_call.calls = saved

    @staticmethod
    def _config(geometry: Geometry):
        """geometry's LaunchConfig (made once per kernel and geometry: Runtime.launch
        keeps it in _ready)."""
        from cuda.core import LaunchConfig

        options = {"is_cooperative": True} if geometry.cooperative else {}
        return LaunchConfig(grid=geometry.grid, block=geometry.block,
                            shmem_size=geometry.shared_bytes, **options)

    def plan(self, shape: tuple, make):
        """make()'s result for this launch shape, made once (launch wrappers keep
        their kernel, geometry and names here: a repeated call looks them up)."""
        if self.skew.depth:  # the skewed builds' plans hold other kernels
            shape = ("skewed", *shape)
        found = self._plans.get(shape)
        if found is None:
            if len(self._plans) > 4096:  # many distinct shapes: keep the cache bounded
                self._plans.clear()
            found = self._plans[shape] = make()
        return found

    def max_dynamic_shared(self, kernel) -> int:
        """The dynamic shared memory a block of this kernel may have: the
        device's opt-in limit less what the kernel declares statically (the
        skewed builds' barrier counts, say); asked once per kernel."""
        handle = int(kernel.handle)
        if handle not in self._static_shared:
            attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
            self._static_shared[handle] = int(check(
                driver.cuKernelGetAttribute(attribute, kernel.handle, self.device.device_id),
                "cuKernelGetAttribute(SHARED_SIZE_BYTES)"))
        return self.max_shared_per_block - self._static_shared[handle]

    def resident_blocks(self, kernel, block: int, shared_bytes: int) -> int:
        """Blocks of this kernel that fit on one SM at once (at least 1); asked once."""
        key = (int(kernel.handle), block, shared_bytes)
        if key not in self._resident:
            self.allow_shared(kernel, shared_bytes)
            per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(block, shared_bytes)
            self._resident[key] = max(1, per_sm)
        return self._resident[key]

    def sync(self, what: str) -> None:
        if not self.waits.active:
            calls = self.per_call.calls
            if calls is not None:
                check(calls.sync(self.handle), f"{what}: cuStreamSynchronize")
                return
            try:
                self.stream.sync()
            except Exception as error:
                raise CudaError(f"{what}: {error}") from error
            return
        self._bounded_sync(what)

    @contextlib.contextmanager
    def bounded_waits(self, limit_s: float | None):
        """Within: a host wait on the device (a sync, or a copy to or from
        pageable host memory, which waits for the stream inside the driver)
        that outlasts limit_s raises DeviceHang, so that a kernel that never
        ends is a failure with a name, not a process that never ends (the
        conformance matrix; public calls wait unbounded, as CUDA does)."""
        saved = self.waits.limit_s
        self.waits.limit_s = limit_s
        try:
            yield
        finally:
            self.waits.limit_s = saved

    @property
    def hung(self) -> str | None:
        """The wait that outlasted its bound in this process, if one did."""
        return self.waits.hung

    def sticky_error(self) -> str | None:
        """The name of the error a fault left on this context (an illegal
        address, a trap: every later call on it returns that error), or None
        while it is usable. Asked of the stream, which returns at once."""
        (status,) = driver.cuStreamQuery(self.handle)
        if status in (_SUCCESS, _NOT_READY):
            return None
        return error_name(status)

    def _bounded_sync(self, what: str) -> None:
        # Polled, not a blocking cuStreamSynchronize: the limit is checked
        # between queries, on this thread, whatever the driver call does with
        # the GIL.
        if self.waits.hung is not None:
            raise DeviceHang(f"{what}: not waited for: the GPU is still running a launch "
                             f"that never finished ({self.waits.hung})")
        limit, start, pause = self.waits.limit_s, time.perf_counter(), 1e-5
        while True:
            (status,) = driver.cuStreamQuery(self.handle)
            if status == _SUCCESS:
                return
            if status != _NOT_READY:
                check((status,), f"{what}: cuStreamQuery")
            waited = time.perf_counter() - start
            if waited > limit:
                self.waits.hung = f"{what}: no answer in {waited:.0f} s"
                atexit.register(_exit_without_teardown)
                raise DeviceHang(f"{what}: the GPU did not finish within {limit:.0f} s: a "
                                 f"kernel that never ends (hangs); its launch holds the GPU "
                                 f"until this process exits")
            time.sleep(pause)
            pause = min(2 * pause, 0.01)

    def _wait_before_pageable_copy(self, what: str) -> None:
        """A copy to or from pageable host memory waits for the stream inside
        the driver, where no bound applies: in a bounded run, wait here first."""
        if self.waits.active:
            self._bounded_sync(f"waiting for the GPU before {what}")

    # --- memory ----------------------------------------------------------
    def capturing(self) -> bool:
        """Whether this runtime's stream is being captured into a CUDA graph
        (only a caller's stream can be: histkit's own is never handed out)."""
        if self is self._base:
            return False
        status = check(driver.cuStreamIsCapturing(self.handle), "cuStreamIsCapturing")
        return status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE

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

    def skewed_schedule(self):
        """Within: kernels are built and planned with schedule skew (ScheduleSkew)."""
        return _switched_on(self.skew)

    def poisoned_scratch(self, fenced: bool = False):
        """Within: new arrays arrive poisoned (ScratchPoison), and with
        fenced=True flush against unmapped memory; each outermost use is a
        new cell."""
        if not self.poison.depth:
            self.poison.new_cell(fenced)
        return _switched_on(self.poison)

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
        stream (handle 2), which is another stream on each thread."""
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
            # Kept, not pooled: no other array may ever hold these bytes. An
            # outgrown one is freed on this stream, after the work queued on it.
            scratch = DeviceArray(self._allocate(max(1, words) * 8), max(1, words),
                                  np.dtype(np.uint64))
            self.memset(scratch.ptr, 0, 8)
            self._barrier_scratch = scratch
        return scratch

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
            free, _ = check(driver.cuMemGetInfo(), "cuMemGetInfo")
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
        check(driver.cuMemsetD8Async(ptr, byte, nbytes, self.handle), "cuMemsetD8Async")

    def to_device(self, host: np.ndarray) -> DeviceArray:
        host = np.ascontiguousarray(host)
        array = self.empty(len(host), host.dtype)
        if host.nbytes:
            self._wait_before_pageable_copy("copying inputs to the device")
            check(driver.cuMemcpyHtoDAsync(array.ptr, host.ctypes.data, host.nbytes,
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
            check(driver.cuMemcpyHtoDAsync(array.ptr, host.ctypes.data, host.nbytes,
                                           self.handle), "cuMemcpyHtoDAsync")
        return array

    def copy_to_host(self, ptr: int, host: np.ndarray) -> np.ndarray:
        """Copy into a contiguous host array and wait for it."""
        if host.nbytes:
            self._wait_before_pageable_copy("copying results to the host")
            check(driver.cuMemcpyDtoHAsync(host.ctypes.data, ptr, host.nbytes,
                                           self.handle), "cuMemcpyDtoHAsync")
        self.sync("copying results to the host")
        return host

    # --- per-call scratch -------------------------------------------------
    def bad_key_slot(self) -> DeviceArray:
        """This thread's cached first-bad-key word on the device, holding
        NO_BAD_KEY: a slot of the verdict board (verdict.py) while one is
        free, else a word of its own. Valid until this thread's next call:
        public calls use it synchronously, one at a time. It is reset only
        when a kernel may have written it since read_bad_key last found it
        untouched."""
        scratch = self._scratch
        slot = getattr(scratch, "slot", None)
        if slot is None:
            board_slot = scratch.board_slot = self.verdicts.claim()
            if board_slot is None:
                # On histkit's own stream, which outlives every caller's, and
                # ready before any stream uses it.
                slot = self._base.empty(1, np.uint64)
                self._base.sync("allocating the bad-key slot")
            else:
                scratch.lease = SlotLease(self.verdicts, board_slot)  # back when the thread ends
                slot = self.board_word(board_slot)
                scratch.flag_address = self.verdicts.flag_address(board_slot)
            scratch.slot = slot
            scratch.slot_ptr = slot.ptr
            scratch.slot_clean = False
        if not scratch.slot_clean:
            self.memset(slot.ptr, 0xFF, 8)
        scratch.slot_clean = False  # kernels launched from here on may write it
        return slot

    def lane_slot(self):
        """This thread's scratch when the compiled lane (histkit.gpu._lane) may
        check a call through its bad-key slot as it stands, else None: the
        context is current on this thread, the slot is on the verdict board
        and clean (holds NO_BAD_KEY, its flag down), the C path is built, and
        no conformance harness is on (bounded waits, skewed builds, poisoned
        scratch: the Python path serves those). The slot is marked as one
        kernels may write from here on; the lane marks it clean again
        (scratch.slot_clean) when the flag at scratch.flag_address is still
        down after the call's sync, and otherwise hands the call to
        read_bad_key through the Python path."""
        scratch = self._scratch
        if (not getattr(scratch, "slot_clean", False) or scratch.board_slot is None
                or not self.verdicts.usable or not self.lane_open()):
            return None
        scratch.slot_clean = False
        return scratch

    def lane_open(self) -> bool:
        """Whether the compiled lane may run a call on this thread at all: the
        context is current here, the C path is built, and no conformance
        harness is on (an unchecked call needs no slot: lane_slot asks the
        rest for a checked one)."""
        return (getattr(self._scratch, "bound", False) and self.per_call.calls is not None
                and not self.waits.active and not self.skew.depth and not self.poison.depth)

    def board_word(self, slot: int) -> DeviceArray:
        """A verdict board slot's word (a margin word's too) as a one-element array."""
        return DeviceArray(BufferWindow(self.verdicts.buffer, self.verdicts.offset(slot)), 1,
                           np.dtype(np.uint64))

    def read_bad_key(self, slot: DeviceArray) -> int:
        """The first bad index a call's kernels noted in slot (NO_BAD_KEY: none),
        after waiting for them. This thread's board slot is copied back only
        when its flag says a kernel lowered it."""
        scratch = self._scratch
        if slot is not getattr(scratch, "slot", None):
            return self.read_word(slot.ptr)
        board_slot = scratch.board_slot
        if board_slot is not None and self.verdicts.usable:
            self.sync("waiting for the call's kernels")
            if not self.verdicts.flagged(board_slot):
                scratch.slot_clean = True
                return contract.NO_BAD_KEY
            self.verdicts.lower(board_slot)
        index = self.read_word(slot.ptr)
        scratch.slot_clean = index == contract.NO_BAD_KEY
        return index

    def wait_for(self, foreign_stream: int) -> None:
        """Order this runtime's stream after the work pending on another stream
        (a raw CUstream handle; 1 and 2 are the legacy and per-thread defaults);
        nothing to do when it is this runtime's own stream."""
        if foreign_stream == self.handle:
            return
        event = getattr(self._scratch, "event", None)
        if event is None:
            flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
            event = self._scratch.event = check(driver.cuEventCreate(flags), "cuEventCreate")
        check(driver.cuEventRecord(event, driver.CUstream(foreign_stream)), "cuEventRecord")
        check(driver.cuStreamWaitEvent(self.handle, event, 0), "cuStreamWaitEvent")

    def read_word(self, ptr: int) -> int:
        """One uint64 from the device, through this thread's pinned host word
        (an asynchronous copy, then a stream sync)."""
        word = getattr(self._scratch, "pinned", None)
        if word is None:
            host_ptr = int(check(driver.cuMemHostAlloc(8, 0), "cuMemHostAlloc"))
            word = self._scratch.pinned = (ctypes.c_uint64 * 1).from_address(host_ptr)
            self._scratch.pinned_ptr = host_ptr
        calls = self.per_call.calls
        if calls is not None and not self.waits.active:  # a bounded wait polls
            status, value = calls.read_word(ptr, self._scratch.pinned_ptr, self.handle)
            check(status, "reading a result word back (cuMemcpyDtoHAsync, cuStreamSynchronize)")
            return value
        check(driver.cuMemcpyDtoHAsync(self._scratch.pinned_ptr, ptr, 8, self.handle),
              "cuMemcpyDtoHAsync")
        self.sync("reading a result word back")
        return int(word[0])

    def copy_device(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            check(driver.cuMemcpyDtoDAsync(dst, src, nbytes, self.handle),
                  "cuMemcpyDtoDAsync")


def foreign_stream(handle: int):
    """A cuda.core Stream for a raw CUstream handle someone else owns."""
    import cuda.core

    if handle in (0, 1):
        legacy = getattr(cuda.core, "LEGACY_DEFAULT_STREAM", None)
        if legacy is not None:
            return legacy
    if handle == 2:
        per_thread = getattr(cuda.core, "PER_THREAD_DEFAULT_STREAM", None)
        if per_thread is not None:
            return per_thread
    return cuda.core.Stream.from_handle(handle)


@cache
def _the_runtime() -> Runtime:
    return Runtime()


def runtime() -> Runtime:
    """The process's runtime, its device's context current on the calling
    thread (a driver call from a thread with none fails with
    CUDA_ERROR_INVALID_CONTEXT)."""
    rt = _the_runtime()
    rt.bind_to_this_thread()
    return rt


def gpu_unavailable_reason() -> str | None:
    """None when histkit can run kernels here, else why it cannot."""
    try:
        runtime()
    except GpuUnavailableError as error:
        return str(error)
    except Exception as error:  # a driver that fails to initialise, say
        return f"CUDA is not usable: {type(error).__name__}: {error}"
    return None
