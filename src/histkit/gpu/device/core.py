"""The Runtime: one CUDA device, its context and stream, and the caches every
call shares; ``runtime()``, the process's one runtime.

Its methods are grouped by concept in the mixins it is made of: launches
(``launching``), waits (``waiting``), memory (``allocation``) and what a
public call reads back (``call_slots``).
"""

from __future__ import annotations

import copy
import ctypes
import threading
from functools import cache

from histkit.gpu.device import bindings
from histkit.gpu.device.allocation import Allocation
from histkit.gpu.device.bindings import PerCallPath, check, per_call_driver_calls
from histkit.gpu.device.call_slots import CallSlots
from histkit.gpu.device.harness import ScheduleSkew, ScratchPoison, WaitBound
from histkit.gpu.device.launching import Launching
from histkit.gpu.device.memory import BufferPool
from histkit.gpu.device.waiting import Waiting
from histkit.gpu.errors import CudaError, GpuUnavailableError
from histkit.gpu.verdict import VerdictBoard


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
        driver = bindings.driver
        host = int(check(driver.cuMemHostAlloc(nbytes, driver.CU_MEMHOSTALLOC_DEVICEMAP),
                         "cuMemHostAlloc(DEVICEMAP)"))
        ctypes.memset(host, 0, nbytes)
        device = int(check(driver.cuMemHostGetDevicePointer(host, 0),
                           "cuMemHostGetDevicePointer"))
        return host, device

    def write_global(self, module, name: bytes, data: bytes) -> bool:
        driver = bindings.driver
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


class Runtime(Launching, Waiting, Allocation, CallSlots):
    """One device's context and stream (``on(handle)``: a view of it on another
    stream, sharing every cache), its kernels, memory and waits."""

    def __init__(self):
        try:
            from cuda.core import Device, launch
        except ImportError as error:
            raise GpuUnavailableError(
                f"cuda-python (cuda.core) is not installed: {error}; install the gpu "
                f"extra: python3 -m pip install \"histkit[gpu]\"") from None
        try:
            self.device = Device()
            self.device.set_current()
        except Exception as error:
            raise GpuUnavailableError(f"no usable CUDA device: {error}") from None
        self.stream = self.device.create_stream()
        # The raw handle, an int, is what the driver calls take: cuda.core's
        # Stream.handle makes a new driver object per use (a memset took 4.5 us
        # through it against 2.7 with the int on the H200).
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
        attribute = bindings.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
        try:
            if not check(bindings.driver.cuDeviceGetAttribute(attribute, self.device.device_id),
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
