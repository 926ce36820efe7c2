"""What the conformance matrix reports, on a pretend runtime (no GPU): every
case's cells kept, a passing cell whose kernel wrote outside its scratch
turned into a FAIL, the fenced note only on a fenced case's fault, the
progress log, and stop_at_first_fail. The runner's own bookkeeping is what
turns a kernel's slip into a FAIL a user sees: a slip in it would hide the
kernels' slips, whatever the cases."""

import io
import json
from types import SimpleNamespace

import numpy as np
import pytest
from rich.console import Console

from histkit.conformance import runner
from histkit.conformance.cases import Case
from histkit.conformance.checks import Cell
from histkit.gpu import device
from histkit.gpu.device import Runtime, WaitBound
from histkit.gpu.registry import DEFAULT, Kernel

CASES = [Case("uniform", 100, 16, seed=s) for s in (1, 2, 3)]


@pytest.fixture
def matrix(monkeypatch):
    """A pretend runtime and one column whose verdict per case the test sets
    (pretend.verdicts: case seed -> Cell), and whose writes outside its
    scratch it sets too (pretend.overruns: case seed -> list of findings)."""
    rt = Runtime.__new__(Runtime)
    rt.waits, rt.handle = WaitBound(), 7
    rt.device, rt.arch, rt.sm_count = SimpleNamespace(name="pretend GPU"), "sm_90", 132
    rt.poison, rt.skew = device.ScratchPoison(), device.ScheduleSkew()
    pretend = SimpleNamespace(rt=rt, verdicts={}, overruns={}, current=None)
    monkeypatch.setattr(rt, "sticky_error", lambda: None, raising=False)
    monkeypatch.setattr(Runtime, "scratch_overruns",
                        lambda self: pretend.overruns.get(pretend.current, []))

    def judge(case):
        pretend.current = case.seed
        return pretend.verdicts.get(case.seed, Cell("pass", "")), "k<<<1, 32>>>"

    monkeypatch.setattr(runner, "CaseRun", lambda rt, case: SimpleNamespace(
        judge=lambda kernel, variant: judge(case)))
    monkeypatch.setattr(runner, "runtime", lambda: rt)
    column = Kernel("pretend", "histogram", "pretend.cu", ("k",), None)
    monkeypatch.setattr(runner, "columns", lambda rows=None: [("pretend", column, DEFAULT)])
    return pretend


def run(cases=CASES, **options):
    return runner.run_conformance(console=Console(file=io.StringIO()), cases=cases,
                                  json_path=None, **options)


def statuses(report):
    return [(r.case.seed, r.cell.status) for r in report.results]


def test_every_cases_cells_are_in_the_report_a_fail_in_the_first_too(matrix):
    matrix.verdicts[1] = Cell("FAIL", "counts differ")
    report = run()
    assert statuses(report) == [(1, "FAIL"), (2, "pass"), (3, "pass")]
    assert not report.passed and report.stopped is None


def test_a_passing_cell_whose_kernel_wrote_outside_its_scratch_fails_naming_it(matrix):
    matrix.overruns[2] = ["wrote 4 bytes after a 64-byte scratch array"]
    report = run()
    assert statuses(report) == [(1, "pass"), (2, "FAIL"), (3, "pass")]
    assert "wrote 4 bytes after a 64-byte scratch array" in report.failures[0].cell.detail


def test_a_cell_that_failed_keeps_its_own_reason_over_the_scratch_findings(matrix):
    matrix.verdicts[1] = Cell("FAIL", "counts differ")
    matrix.overruns[1] = ["wrote before a scratch array"]
    (failure,) = run(cases=CASES[:1]).failures
    assert failure.cell.detail.startswith("counts differ")


def test_a_failure_names_its_case_seed_kernel_and_geometry(matrix):
    matrix.verdicts[3] = Cell("FAIL", "counts differ")
    (failure,) = run().failures
    assert failure.cell.detail == ("counts differ [case uniform/N=100/K=16/int32, seed 3, "
                                   "kernel pretend, geometry k<<<1, 32>>>]")


@pytest.mark.parametrize("fenced,detail,noted", [
    (True, "CudaError: CUDA_ERROR_ILLEGAL_ADDRESS", True),
    (False, "CudaError: CUDA_ERROR_ILLEGAL_ADDRESS", False),  # not where memory ends
    (True, "counts differ", False),  # not a fault
])
def test_only_a_fault_in_a_fenced_case_is_explained_as_a_read_past_an_input(
        matrix, fenced, detail, noted):
    case = Case("uniform", 100, 16, seed=1, fenced=fenced)
    matrix.verdicts[1] = Cell("FAIL", detail)
    (failure,) = run(cases=[case]).failures
    assert ("read or wrote past one of them" in failure.cell.detail) == noted


def test_the_progress_log_holds_one_json_line_per_cell_as_cases_end(matrix, tmp_path):
    matrix.verdicts[2] = Cell("FAIL", "counts differ")
    log = tmp_path / "progress.jsonl"
    run(progress_path=log)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["status"] for line in lines] == ["pass", "FAIL", "pass"]


def test_stop_at_first_fail_stops_after_the_failing_case_and_only_then(matrix):
    assert statuses(run(stop_at_first_fail=True)) == [(1, "pass"), (2, "pass"), (3, "pass")]
    matrix.verdicts[2] = Cell("FAIL", "counts differ")
    assert statuses(run(stop_at_first_fail=True)) == [(1, "pass"), (2, "FAIL")]
    assert len(run().results) == 3  # without it, the run goes on


# --- which huge cases a machine skips for memory ---------------------------------------

GIB = 1 << 30


def pretend_machine(monkeypatch, gpu_free, host_available):
    monkeypatch.setattr(runner, "available_memory", lambda: host_available)
    return SimpleNamespace(free_bytes=lambda: gpu_free)


def test_no_case_of_either_matrix_is_skipped_for_memory_on_an_h200_and_its_host(monkeypatch):
    # (139 GiB of GPU memory, 128 GiB of host memory less the system's)
    h200 = pretend_machine(monkeypatch, 139 * GIB, 120 * GIB)
    from histkit.conformance.cases import all_cases

    too_large = {case.name: runner.too_large_here(h200, case)
                 for case in all_cases(quick=False)}
    assert not {name: why for name, why in too_large.items() if why}


def test_a_huge_case_is_skipped_naming_the_memory_it_needs_and_what_is_there(monkeypatch):
    case = Case("uniform", runner.HUGE, 256, dtype="uint8")
    small_gpu = pretend_machine(monkeypatch, 1 * GIB, 120 * GIB)
    assert runner.too_large_here(small_gpu, case).endswith("GiB of GPU memory; 1.0 GiB free here")
    small_host = pretend_machine(monkeypatch, 139 * GIB, 1 * GIB)
    assert runner.too_large_here(small_host, case).endswith(
        "GiB of host memory; 1.0 GiB available here")
    unknown = pretend_machine(monkeypatch, None, None)  # nothing to say: it is tried
    assert runner.too_large_here(unknown, case) is None
    small = Case("uniform", runner.HUGE - 18, 256, dtype="uint8")  # not huge: never skipped
    assert runner.too_large_here(pretend_machine(monkeypatch, 1, 1), small) is None


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
@pytest.mark.parametrize("shape", ["counted", "sorted", "sorted-two-passes", "fenced-sorted",
                                   "scan-counts"])
def test_the_memory_estimates_hold_at_least_the_arrays_and_at_most_four_times_them(dtype, shape):
    # Counted independently of the estimates: the keys, and what the widest
    # column writes (K counts; a sort's keys and int64 indices, twice over
    # two digit passes; a scan's offsets), and on the host the keys and the
    # oracle's answer (a sort's sorted keys and indices).
    n, itemsize = runner.HUGE, np.dtype(dtype).itemsize
    if shape == "scan-counts":
        case = Case.counts(n, seed=1)
        device_low = host_low = 2 * n * 8
    elif shape == "counted":
        case = Case("uniform", n, 256, dtype=dtype, kinds=("histogram",))
        device_low, host_low = n * itemsize + 256 * 8, n * itemsize
    else:
        passes = 2 if shape == "sorted-two-passes" else 1
        if passes == 2 and itemsize == 1:
            pytest.skip("one-byte keys sort in one digit pass")
        bins = 5000 if passes == 2 else 100
        fenced = shape == "fenced-sorted"
        case = Case("round-robin" if fenced else "uniform", n, bins, dtype=dtype, fenced=fenced)
        device_low = n * itemsize + passes * n * (itemsize + 8)
        host_low = n * itemsize + (0 if case.sorted_in_closed_form else n * (itemsize + 8))
    device, host = runner.device_bytes_needed(case), runner.host_bytes_needed(case)
    assert device_low <= device <= 4 * device_low
    assert host_low <= host <= 4 * host_low
