"""The real Runtime's memory bookkeeping on a pretend device (allocations and
memsets recorded, no GPU): sizes, what is pooled and what never is, the
stream's kept scratch, zeroed arrays, and the retry when the device is full.
A slip here is a kernel handed too little memory, or a caller's array
handed to the next call while the caller still reads it."""

import threading
from types import SimpleNamespace

import numpy as np
import pytest

from histkit.gpu.device import (
    POOL_MAX_BLOCK,
    BufferPool,
    PerCallPath,
    Runtime,
    ScratchPoison,
    size_class,
)
from histkit.gpu.errors import DeviceMemoryError

OWN, CALLERS = 0xA000, 0x6000  # histkit's own stream; a caller's (not lasting)


class PretendDevice:
    def __init__(self):
        self.allocated, self.next, self.full = [], 0x10000, 0

    def allocate(self, nbytes, stream=None):
        if self.full:
            self.full -= 1
            raise RuntimeError("cuMemAllocFromPoolAsync: CUDA_ERROR_OUT_OF_MEMORY")
        self.allocated.append(nbytes)
        self.next += -(-nbytes // 4096) * 4096 + 4096
        return SimpleNamespace(handle=self.next, size=nbytes)


@pytest.fixture
def rt(monkeypatch):
    runtime = Runtime.__new__(Runtime)
    runtime.device, runtime.pool, runtime.poison = PretendDevice(), BufferPool(), ScratchPoison()
    runtime._scratch, runtime._views, runtime._base = threading.local(), {}, runtime
    runtime.handle, runtime.stream = OWN, SimpleNamespace(handle=OWN)
    runtime._barrier_scratch = None
    runtime.per_call = PerCallPath(None)  # through cuda.bindings (the C path has its own tests)
    runtime.memsets = []
    monkeypatch.setattr(runtime, "memset", lambda ptr, byte, nbytes: runtime.memsets.append(
        (ptr, byte, nbytes)), raising=False)
    monkeypatch.setattr(runtime, "capturing", lambda: False, raising=False)
    monkeypatch.setattr(runtime, "_allocate_kept", runtime.device.allocate, raising=False)
    monkeypatch.setattr(runtime, "free_bytes", lambda: 123, raising=False)
    return runtime


def callers_view(rt, monkeypatch):
    """rt on a caller's stream (Runtime.on, the stream itself pretended)."""
    from histkit.gpu.device import core

    monkeypatch.setattr(core, "foreign_stream", lambda handle: SimpleNamespace(handle=handle))
    return rt.on(CALLERS)


def test_an_array_gets_at_least_its_bytes_pooled_or_not(rt, monkeypatch):
    assert rt.empty(10, np.int64).buffer.inner.size >= 80  # pooled: its size class
    view = callers_view(rt, monkeypatch)
    view.empty(10, np.int64)
    assert rt.device.allocated[-1] == 80  # a caller's stream: exactly its bytes
    view.empty(0, np.int32)
    assert rt.device.allocated[-1] == 1  # never a zero-byte allocation


def test_histkits_own_stream_reuses_a_freed_buffer_of_the_same_size_class(rt):
    first = rt.empty(1000, np.int32)
    address = first.ptr
    del first  # back to the pool, for this stream
    assert size_class(4004) == size_class(4000)  # (so 1001 int32 take the same class)
    again = rt.empty(1001, np.int32)
    assert again.ptr == address and len(rt.device.allocated) == 1


def test_a_result_handed_to_a_caller_never_comes_from_or_goes_to_the_pool(rt):
    kept = rt.empty(1000, np.int32)
    del kept  # a pooled buffer is waiting
    handed = rt.empty(1000, np.int32, pooled=False)
    assert len(rt.device.allocated) == 2  # not the waiting one
    del handed
    assert rt.pool.kept == size_class(4000)  # only the first came back
    big = rt.empty(POOL_MAX_BLOCK // 4 + 1, np.int32)  # past the largest pooled block
    assert rt.device.allocated[-1] == POOL_MAX_BLOCK + 4 and big.ptr


def test_a_callers_stream_pools_nothing(rt, monkeypatch):
    view = callers_view(rt, monkeypatch)
    for _ in range(2):
        view.empty(1000, np.int32)
    assert len(rt.device.allocated) == 2 and rt.pool.kept == 0


def test_zeros_clears_every_byte_of_the_array(rt):
    array = rt.zeros(1000, np.int64)
    assert rt.memsets == [(array.ptr, 0, 8000)]


def test_the_streams_kept_scratch_has_the_words_asked_its_first_zeroed_once(rt):
    scratch = rt.barrier_scratch(100)
    assert scratch.n >= 100 and rt.device.allocated == [800]
    assert rt.memsets == [(scratch.ptr, 0, 8)]
    assert rt.barrier_scratch(50) is scratch and len(rt.memsets) == 1  # kept, not zeroed again
    grown = rt.barrier_scratch(300)
    assert grown.n >= 300 and rt.device.allocated[-1] == 2400
    assert rt.memsets[-1] == (grown.ptr, 0, 8)
    rt.handle = 2  # the per-thread default stream is another stream on each thread
    assert rt.barrier_scratch(100) is None


def test_a_callers_stream_keeps_scratch_tied_to_no_stream_and_none_while_captured(
        rt, monkeypatch):
    # a caller may destroy its stream while histkit keeps the scratch: a
    # stream-ordered free on it then segfaulted at exit
    view = callers_view(rt, monkeypatch)

    def on_the_stream(nbytes, stream=None):
        raise AssertionError("kept scratch allocated on the caller's stream")

    monkeypatch.setattr(view, "_allocate", on_the_stream, raising=False)
    monkeypatch.setattr(view, "capturing", lambda: True, raising=False)
    assert view.barrier_scratch(100) is None  # captured: the call's scratch is the graph's
    monkeypatch.setattr(view, "capturing", lambda: False, raising=False)
    scratch = view.barrier_scratch(100)
    assert scratch.n >= 100 and rt.device.allocated == [800]
    assert view.barrier_scratch(100) is scratch


def test_a_full_device_frees_the_pools_buffers_and_tries_once_more(rt):
    del_me = rt.empty(1000, np.int32)
    del del_me
    assert rt.pool.kept
    rt.device.full = 1
    assert rt.empty(10, np.int32, pooled=False).ptr
    assert rt.pool.kept == 0  # cleared for the retry


def test_a_full_device_with_nothing_pooled_is_a_memory_error_naming_the_size(rt):
    rt.device.full = 1
    with pytest.raises(DeviceMemoryError, match="4000"):
        rt.empty(1000, np.int32, pooled=False)


def test_an_allocation_failing_otherwise_is_not_retried(rt, monkeypatch):
    def broken(nbytes, stream=None):
        raise RuntimeError("cuMemAllocFromPoolAsync: CUDA_ERROR_INVALID_VALUE")

    monkeypatch.setattr(rt.device, "allocate", broken)
    with pytest.raises(RuntimeError, match="INVALID_VALUE"):
        rt.empty(10, np.int32, pooled=False)

