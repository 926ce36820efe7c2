"""What the conformance matrix reports, on a pretend runtime (no GPU): every
case's cells kept, a passing cell whose kernel wrote outside its scratch
turned into a FAIL, the fenced note only on a fenced case's fault, the
progress log, and stop_at_first_fail. The runner's own bookkeeping is what
turns a kernel's slip into a FAIL a user sees: a slip in it would hide the
kernels' slips, whatever the cases."""

import io
import json
from types import SimpleNamespace

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
