"""A kernel that never ends, on a pretend device: in the conformance matrix
every host wait on the device is bounded (Runtime.bounded_waits), so a hang
is a FAIL of its cell with a name, the run stops there (the launch holds the
GPU until the process exits) and says so, instead of never ending. So does a
fault that leaves the context unusable: one FAIL, not every later cell in
another kernel's name. The driver's stream query is faked; the GPU test with
a planted hang is in test_gpu.py."""

import io
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from rich.console import Console

from histkit.conformance import runner
from histkit.conformance.cases import Case
from histkit.conformance.checks import Cell
from histkit.gpu import device
from histkit.gpu.device import PerCallPath, Runtime, WaitBound, bindings, waiting
from histkit.gpu.errors import DeviceHang
from histkit.gpu.registry import DEFAULT, Kernel

SUCCESS, NOT_READY = "success", "not ready"


class FakeStream:
    handle = 7

    def __init__(self):
        self.synced = 0

    def sync(self):
        self.synced += 1


@pytest.fixture
def rt(monkeypatch):
    """A Runtime whose stream is answered by `answers` (one a query; the last repeats)."""
    runtime = Runtime.__new__(Runtime)  # no device: only the waits
    runtime.waits, runtime.handle, runtime.stream = WaitBound(), 7, FakeStream()
    runtime.per_call = PerCallPath(None)  # through cuda.bindings (see the C path's test)
    runtime.answers, runtime.calls = [NOT_READY], []

    def query(handle):
        runtime.calls.append("query")
        answer = runtime.answers.pop(0) if len(runtime.answers) > 1 else runtime.answers[0]
        return (answer,)

    def copy_back(dst, src, nbytes, stream):
        runtime.calls.append("copy")
        return (SUCCESS,)

    fake = SimpleNamespace(cuStreamQuery=query, cuMemcpyDtoHAsync=copy_back,
                           cuGetErrorName=lambda status: (SUCCESS, status.encode()))
    monkeypatch.setattr(bindings, "driver", fake)
    monkeypatch.setattr(bindings, "SUCCESS", SUCCESS)
    monkeypatch.setattr(bindings, "NOT_READY", NOT_READY)
    # a hang registers an exit without the driver's teardown: not in pytest's process
    exits = []
    monkeypatch.setattr(waiting.atexit, "register", exits.append)
    runtime.exits = exits
    return runtime


def test_a_wait_past_the_bound_is_a_device_hang_naming_the_wait(rt):
    start = time.perf_counter()
    with rt.bounded_waits(0.2), pytest.raises(DeviceHang, match="reading counts.*0 s"):
        rt.sync("reading counts")
    assert 0.2 <= time.perf_counter() - start < 5
    assert rt.hung.startswith("reading counts") and rt.exits == [waiting._exit_without_teardown]


def test_after_a_hang_every_wait_fails_at_once_bounded_or_not(rt):
    with rt.bounded_waits(0.05), pytest.raises(DeviceHang):
        rt.sync("the kernel that hangs")
    rt.answers = [SUCCESS]  # even were the stream to answer, nothing is waited for
    for limit in (60.0, None):
        start = time.perf_counter()
        with rt.bounded_waits(limit), pytest.raises(DeviceHang, match="not waited for"):
            rt.sync("the next cell")
        assert time.perf_counter() - start < 1
    assert rt.stream.synced == 0


def test_a_wait_that_ends_inside_the_bound_returns(rt):
    rt.answers = [NOT_READY, NOT_READY, NOT_READY, SUCCESS]
    with rt.bounded_waits(30):
        rt.sync("a slow kernel")
    assert rt.calls == ["query"] * 4 and rt.hung is None


def test_a_bounded_wait_polls_finely_at_first_and_never_sleeps_past_10_ms(rt, monkeypatch):
    # A short kernel is waited for in microseconds, not a whole poll period;
    # a hang is reported within 10 ms of its bound, whatever the bound. On a
    # clock that only the sleeps move, with a stream that never finishes:
    clock = SimpleNamespace(now=0.0, pauses=[])

    def sleep(seconds):
        clock.pauses.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(waiting, "time", SimpleNamespace(perf_counter=lambda: clock.now,
                                                        sleep=sleep))
    with rt.bounded_waits(2.0), pytest.raises(DeviceHang):
        rt.sync("a kernel that never ends")
    assert clock.pauses[0] <= 1e-4 and max(clock.pauses) <= 0.01
    assert sum(clock.pauses[:8]) < 0.005  # a kernel of a few ms is seen within a doubling
    assert clock.pauses == sorted(clock.pauses)  # backs off, never speeds up again
    assert 2.0 < clock.now <= 2.0 + 0.01


def test_outside_a_bounded_run_a_wait_is_the_streams_own_sync(rt):
    rt.sync("a public call")
    assert rt.stream.synced == 1 and rt.calls == []
    with rt.bounded_waits(30):
        pass
    assert rt.waits.limit_s is None  # restored on leaving


class _CPath:
    """The C path's waits, recorded."""

    def __init__(self):
        self.log = []

    def sync(self, stream):
        self.log.append(("sync", stream))
        return 0

    def read_word(self, device_ptr, host_word, stream):
        self.log.append(("read_word", device_ptr, stream))
        return 0, 42


def test_a_public_calls_wait_goes_through_the_c_path_and_a_bounded_one_is_polled(rt):
    rt.per_call.calls = c_path = _CPath()
    rt._scratch = threading.local()
    rt._scratch.pinned, rt._scratch.pinned_ptr = [0], 0x5000
    rt.sync("a public call")
    assert rt.read_word(0x900) == 42
    assert c_path.log == [("sync", 7), ("read_word", 0x900, 7)] and rt.stream.synced == 0
    rt.answers = [SUCCESS]
    with rt.bounded_waits(30):  # polled (a kernel that never ends must not hold the wait)
        rt.sync("a conformance cell")
        rt.read_word(0x900)
    assert len(c_path.log) == 2 and rt.calls == ["query", "copy", "query"]


def test_a_bounded_copy_to_pageable_memory_waits_first(rt):
    # the driver's pageable copy waits for the stream itself, where no bound applies
    rt.answers = [SUCCESS]
    with rt.bounded_waits(30):
        rt.copy_to_host(1024, np.empty(4, np.uint64))
    assert rt.calls == ["query", "copy", "query"]


# --- the runner: the hanging cell FAILs, the rest is not run --------------------------

def _hangs(rt, *args, **kwargs):
    with rt.bounded_waits(0.05):
        rt.sync("copying results to the host")


def _must_not_run(rt, *args, **kwargs):
    raise AssertionError("a column ran after the GPU hung")


@pytest.fixture
def matrix(rt, monkeypatch):
    """rt able to run a small case's set-up, and two columns: one hangs."""
    rt.answers = [NOT_READY]
    rt.device, rt.arch, rt.sm_count = SimpleNamespace(name="pretend GPU"), "sm_90", 132
    rt.poison, rt.skew = device.ScratchPoison(), device.ScheduleSkew()
    overruns = []
    monkeypatch.setattr(Runtime, "scratch_overruns", lambda self: overruns.append(1) or [])
    monkeypatch.setattr(runner, "CaseRun", lambda rt, case: SimpleNamespace(
        judge=lambda kernel, variant: kernel.run(rt)))
    monkeypatch.setattr(runner, "runtime", lambda: rt)
    hang = Kernel("hangs", "histogram", "hangs.cu", ("k",), _hangs)
    after = Kernel("after", "histogram", "after.cu", ("k",), _must_not_run)
    selected = [("hangs", hang, DEFAULT), ("after", after, DEFAULT)]
    monkeypatch.setattr(runner, "columns", lambda rows=None: selected)
    rt.overruns = overruns
    return selected


def test_a_cell_whose_kernel_never_ends_fails_and_later_columns_are_not_run(rt, matrix):
    case = Case("uniform", 100, 16, seed=1)
    hung, after = runner.run_case(rt, case, matrix)
    assert hung.cell.status == "FAIL" and "DeviceHang" in hung.cell.detail
    assert "kernel hangs" in hung.cell.detail and "did not finish within" in hung.cell.detail
    assert after.cell.status == "skip" and "never ended" in after.cell.detail
    assert rt.overruns == []  # no scratch read behind the hang either


def test_a_run_stops_at_a_hang_and_says_how_many_cases_it_left(rt, matrix):
    out = io.StringIO()
    cases = [Case("uniform", 100, 16, seed=s) for s in (1, 2, 3)]
    report = runner.run_conformance(Console(file=out, width=200), cases=cases, json_path=None)
    assert not report.passed and len(report.results) == 2  # the first case's two cells
    assert report.stopped.endswith("2 cases not run") and report.to_json()["stopped"]
    assert "2 cases not run" in out.getvalue() and rt.waits.limit_s is None


def test_the_matrix_bound_comes_from_the_environment_when_set(monkeypatch):
    monkeypatch.delenv("HISTKIT_WAIT_LIMIT_S", raising=False)
    assert runner.wait_limit_s() == runner.WAIT_LIMIT_S
    monkeypatch.setenv("HISTKIT_WAIT_LIMIT_S", "0")
    assert runner.wait_limit_s() is None
    monkeypatch.setenv("HISTKIT_WAIT_LIMIT_S", "12.5")
    assert runner.wait_limit_s() == 12.5
    monkeypatch.setenv("HISTKIT_WAIT_LIMIT_S", "soon")
    with pytest.raises(ValueError, match="HISTKIT_WAIT_LIMIT_S.*'soon'"):
        runner.wait_limit_s()


def test_a_huge_case_whose_context_a_fault_spoiled_still_ends_its_lock_and_returns(
        rt, matrix, monkeypatch):
    # the lock's closing sync meets the sticky error the fault left: the
    # cells already say so, and the run goes on to write its report
    from histkit.conformance.cases import HUGE

    def spoiled():
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")

    rt.device.sync = spoiled
    monkeypatch.setattr(runner, "too_large_here", lambda rt, case: None)
    rt.answers = [SUCCESS]
    faults = Kernel("faults", "histogram", "faults.cu", ("k",), lambda rt: spoiled())
    case = Case("round-robin", HUGE, 251, dtype="uint8")
    results = runner.run_case(rt, case, [("faults", faults, DEFAULT)])
    assert results[0].cell.status == "FAIL" and "ILLEGAL_ADDRESS" in results[0].cell.detail


# --- a fault that spoils the context: one FAIL, the rest not run -------------------

def _faults(rt, *args, **kwargs):
    raise RuntimeError("cuMemcpyDtoHAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS")


def _miscounts(rt, *args, **kwargs):
    return Cell("FAIL", "bins differ"), ""


def test_a_fault_that_spoils_the_context_fails_its_cell_and_later_columns_are_not_run(rt,
                                                                                     matrix):
    rt.answers = ["CUDA_ERROR_ILLEGAL_ADDRESS"]  # what every call returns after the fault
    faults = Kernel("faults", "histogram", "faults.cu", ("k",), _faults)
    spoiled, after = runner.run_case(rt, Case("uniform", 100, 16, seed=1),
                                     [("faults", faults, DEFAULT), matrix[1]])
    assert spoiled.cell.status == "FAIL" and "ILLEGAL_ADDRESS" in spoiled.cell.detail
    assert after.cell.status == "skip" and after.cell.detail == (
        "not run: a fault left the CUDA context unusable (CUDA_ERROR_ILLEGAL_ADDRESS)")


def test_a_run_stops_after_a_fault_that_spoils_the_context(rt, matrix, monkeypatch):
    rt.answers = ["CUDA_ERROR_ILLEGAL_ADDRESS"]
    faults = Kernel("faults", "histogram", "faults.cu", ("k",), _faults)
    monkeypatch.setattr(runner, "columns", lambda rows=None: [("faults", faults, DEFAULT)])
    cases = [Case("uniform", 100, 16, seed=s) for s in (1, 2, 3, 4)]
    report = runner.run_conformance(Console(file=io.StringIO(), width=200), cases=cases,
                                    json_path=None)
    assert len(report.failures) == 1 and len(report.results) == 1
    assert "unusable (CUDA_ERROR_ILLEGAL_ADDRESS); 3 cases not run" in report.stopped


def test_a_failure_that_leaves_the_context_usable_stops_nothing(rt, matrix):
    rt.answers = [SUCCESS]  # the context still answers: a wrong count is not a fault
    ran = []
    wrong = Kernel("wrong", "histogram", "wrong.cu", ("k",), _miscounts)
    right = Kernel("right", "histogram", "right.cu", ("k",),
                   lambda rt: ran.append(1) or (Cell("pass"), ""))
    results = runner.run_case(rt, Case("uniform", 100, 16, seed=1),
                              [("wrong", wrong, DEFAULT), ("right", right, DEFAULT)])
    assert [r.cell.status for r in results] == ["FAIL", "pass"] and ran == [1]
