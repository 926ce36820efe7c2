"""The C path of the per-call driver calls (histkit.gpu._driver_calls), run
against C callbacks standing in for the driver's entry points: what each
kernel parameter's slot holds, which stream and geometry the driver gets,
and that its status comes back. No GPU needed."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

driver_calls = pytest.importorskip("histkit.gpu._driver_calls")

_U = ctypes.c_uint
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _U, _U, _U, _U, _U, _U, _U,
                          ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
COOPERATIVE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _U, _U, _U, _U, _U, _U, _U,
                               ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
MEMSET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t,
                          ctypes.c_void_p)
COPY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t,
                        ctypes.c_void_p)
SYNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class FakeDriver:
    """Entry points recording what they were given; device memory is a dict
    of uint64 words."""

    def __init__(self, status: int = 0):
        self.status, self.log, self.words = status, [], {}

        def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            self.log.append(("launch", f, (gx, gy, gz), (bx, by, bz), shared, stream,
                             self._slots(params), extra))
            return self.status

        def cooperative(f, gx, gy, gz, bx, by, bz, shared, stream, params):
            self.log.append(("cooperative", f, (gx, gy, gz), (bx, by, bz), shared, stream,
                             self._slots(params)))
            return self.status

        def memset(ptr, byte, count, stream):
            self.log.append(("memset", ptr, byte, count, stream))
            return self.status

        def copy(host, device, nbytes, stream):
            self.log.append(("copy", device, nbytes, stream))
            ctypes.c_uint64.from_address(host).value = self.words[device]
            return self.status

        def sync(stream):
            self.log.append(("sync", stream))
            return self.status

        self.entry_points = [LAUNCH(launch), COOPERATIVE(cooperative), MEMSET(memset),
                             COPY(copy), SYNC(sync)]  # kept alive with the driver
        self.calls = driver_calls.DriverCalls(
            *(ctypes.cast(f, ctypes.c_void_p).value for f in self.entry_points))
        self.expected_args = 0

    def _slots(self, params):
        return [ctypes.c_uint64.from_address(params[i]).value
                for i in range(self.expected_args)]


def test_each_argument_is_passed_in_an_8_byte_slot_of_its_twos_complement_value():
    fake = FakeDriver()
    args = (0x7F00_1234_5678, np.int64(-5), np.uint64(2**64 - 1), np.uint32(7), np.int32(-1),
            True, 0)
    fake.expected_args = len(args)
    assert fake.calls.launch(0xABC, 132, 256, 4096, 0x51, False, args) == 0
    (entry,) = fake.log
    assert entry[:6] == ("launch", 0xABC, (132, 1, 1), (256, 1, 1), 4096, 0x51)
    assert entry[6] == [0x7F00_1234_5678, 2**64 - 5, 2**64 - 1, 7, 2**64 - 1, 1, 0]
    assert entry[7] is None  # no "extra" launch options


def test_a_cooperative_launch_goes_to_the_cooperative_entry_point():
    fake = FakeDriver()
    fake.expected_args = 1
    fake.calls.launch(0xABC, 4, 512, 0, 2, True, (9,))
    assert [e[0] for e in fake.log] == ["cooperative"] and fake.log[0][6] == [9]


@pytest.mark.parametrize("bad", [0.5, np.float32(1.0), "3", None])
def test_an_argument_that_is_not_an_integer_is_refused_before_anything_launches(bad):
    fake = FakeDriver()
    with pytest.raises(TypeError):
        fake.calls.launch(1, 1, 32, 0, 2, False, (1, bad))
    assert fake.log == []


def test_more_arguments_than_slots_are_refused():
    fake = FakeDriver()
    with pytest.raises(TypeError, match="at most 32"):
        fake.calls.launch(1, 1, 32, 0, 2, False, tuple(range(33)))


def test_the_drivers_status_comes_back_from_every_call():
    fake = FakeDriver(status=700)
    fake.words[0x1000] = 5
    host = ctypes.c_uint64(0)
    assert fake.calls.launch(1, 1, 32, 0, 2, False, ()) == 700
    assert fake.calls.memset(0x1000, 0xFF, 8, 2) == 700
    assert fake.calls.sync(2) == 700
    # a failed copy is not followed by a wait, and no value is made up
    assert fake.calls.read_word(0x1000, ctypes.addressof(host), 2) == (700, 0)
    assert [e[0] for e in fake.log] == ["launch", "memset", "sync", "copy"]


def test_a_word_is_read_back_through_the_pinned_word_after_the_streams_work():
    fake = FakeDriver()
    fake.words[0x2000] = 2**64 - 1
    host = ctypes.c_uint64(0)
    assert fake.calls.read_word(0x2000, ctypes.addressof(host), 0x33) == (0, 2**64 - 1)
    assert fake.log == [("copy", 0x2000, 8, 0x33), ("sync", 0x33)]
    assert fake.calls.memset(0x2000, 0xA5, 64, 0x33) == 0
    assert fake.log[-1] == ("memset", 0x2000, 0xA5, 64, 0x33)


def test_a_missing_entry_point_is_refused():
    with pytest.raises(ValueError, match="entry point"):
        driver_calls.DriverCalls(1, 2, 0, 4, 5)


def _fake_bindings(monkeypatch, fake: FakeDriver, driver_version: int, missing: str = "",
                   lookup_status: int = 0):
    """histkit.gpu.device.bindings' driver, answering cuGetProcAddress with fake's entry points."""
    from types import SimpleNamespace

    from histkit.gpu.device import bindings

    addresses = dict(zip(bindings._PER_CALL_ENTRY_POINTS,
                         (ctypes.cast(f, ctypes.c_void_p).value for f in fake.entry_points),
                         strict=True))
    asked = []

    def get_proc_address(symbol, version, flags):
        name = symbol.decode()
        asked.append((name, version))
        return (lookup_status, 0 if name == missing else addresses[name], 0)

    monkeypatch.setattr(bindings, "driver", SimpleNamespace(
        cuDriverGetVersion=lambda: (0, driver_version), cuGetProcAddress=get_proc_address,
        CUdriverProcAddress_flags=SimpleNamespace(CU_GET_PROC_ADDRESS_DEFAULT=0)))
    monkeypatch.setattr(bindings, "SUCCESS", 0)
    return asked


def test_the_entry_points_are_looked_up_for_the_abi_of_the_c_signatures(monkeypatch):
    from histkit.gpu import device
    from histkit.gpu.device import bindings

    fake = FakeDriver()
    asked = _fake_bindings(monkeypatch, fake, driver_version=13020)
    calls = device.per_call_driver_calls()
    assert asked == [(name, 12000) for name in bindings._PER_CALL_ENTRY_POINTS]
    fake.expected_args = 1
    calls.launch(0xABC, 2, 64, 0, 5, False, (3,))
    calls.memset(0x10, 0, 8, 5)
    assert [e[0] for e in fake.log] == ["launch", "memset"]  # each call reaches its own


@pytest.mark.parametrize("missing,lookup_status", [("cuMemsetD8Async", 0),
                                                    ("", 1)])  # CUDA_ERROR_INVALID_VALUE
def test_a_driver_without_an_entry_point_leaves_the_calls_to_cuda_core(monkeypatch, missing,
                                                                       lookup_status):
    from histkit.gpu import device

    _fake_bindings(monkeypatch, FakeDriver(), 12040, missing, lookup_status)
    assert device.per_call_driver_calls() is None


def test_a_driver_older_than_that_abi_is_asked_for_its_own_version(monkeypatch):
    from histkit.gpu import device

    asked = _fake_bindings(monkeypatch, FakeDriver(), driver_version=11080)
    device.per_call_driver_calls()
    assert {version for _, version in asked} == {11080}


def test_a_memset_goes_through_the_c_path_on_the_runtimes_stream():
    from histkit.gpu.device import PerCallPath, Runtime

    fake = FakeDriver()
    rt = Runtime.__new__(Runtime)  # no device: the memset alone
    rt.handle, rt.per_call = 0x42, PerCallPath(fake.calls)
    rt.memset(0x7000, 0xA5, 96)
    assert fake.log == [("memset", 0x7000, 0xA5, 96, 0x42)]
