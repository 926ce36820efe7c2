"""histkit's pytest plugin (entry point ``pytest11``): run the conformance
matrix over YOUR implementation as ordinary test items, one per case.

    from histkit.conformance.pytest_plugin import conformance_cases

    @conformance_cases("histogram")            # parametrizes `case`, one item per case
    def test_my_histogram(case, histkit_check):
        histkit_check(my_histogram, "histogram", case)   # FAILs with the reproducer

``histkit_check(impl, kind, case, **options)`` takes what ``check`` takes
(a callable, "package.module:function" or "file.cu[:entry]", and its options).
Each item runs the implementation in a worker process, as ``histkit check``
does: a crash or a hang is that item's FAIL, naming the line it died or hung
at, and the other items still run. The worker is kept from item to item (one
for each timeout, stopped when the session ends) and replaced after a crash
or a hang. ``in_process=True`` runs a callable in the test's own process
instead (for a debugger), where a crash ends the pytest run and a hang never
ends; a .cu kernel always runs in a worker.
"""

from __future__ import annotations

import re
import warnings

import pytest

from histkit.conformance.cases import Case


def k_safe_id(text: str) -> str:
    """text as a test id that ``pytest -k`` takes whole: letters, digits and
    ``_ - . +`` only. A case's name reads the same: "uniform/N=33/K=10/int32"
    is "uniform-N33-K10-int32" (``/`` is ``-``; ``=`` goes before a number
    and is ``-`` before a word: "bad=past-2^31" is "bad-past-2_31"; ``^`` is
    ``_``, a run of spaces ``_``, any other character dropped)."""
    text = re.sub(r"=(?=\d)", "", text).replace("=", "-").replace("/", "-").replace("^", "_")
    return re.sub(r"[^\w.+-]", "", re.sub(r"\s+", "_", text.strip()))


def case_id(case: Case) -> str:
    """The test id of a conformance case: its name, as k_safe_id writes it."""
    return k_safe_id(case.name)


def conformance_cases(kind: str, quick: bool = True, cuda_file: bool = False):
    """A parametrize mark: one test item per conformance case of `kind`, its id
    the case's name in a form ``-k`` takes (case_id: ``-k "N33 and K10"``).
    cuda_file=True: the cases ``check`` gives a .cu kernel (inputs flush
    against unmapped memory, and the schedule-skewed cases) as well."""
    from histkit.conformance import check_binning
    from histkit.conformance.cases import cases_for
    from histkit.conformance.weighted_cases import weighted_cases
    from histkit.gpu.registry import BINNING_KINDS, CHECK_KINDS, WEIGHTED_KINDS

    if kind not in CHECK_KINDS:
        raise ValueError(f"kind must be one of {', '.join(CHECK_KINDS)}; got {kind!r}")
    if kind in BINNING_KINDS or kind in WEIGHTED_KINDS:
        cases = (check_binning.cases_for(kind, quick) if kind in BINNING_KINDS
                 else weighted_cases())
        return pytest.mark.parametrize("case", cases, ids=[k_safe_id(c.name) for c in cases])
    cases = cases_for(kind, quick, fenced=cuda_file, skewed=cuda_file)
    return pytest.mark.parametrize("case", cases, ids=[case_id(c) for c in cases])


# The session's worker processes, one for each timeout (None: check's default).
_WORKERS: dict = {}


def _worker(timeout):
    from histkit.conformance.isolation import DEFAULT_TIMEOUT_S, IsolatedJudge

    if timeout not in _WORKERS:
        _WORKERS[timeout] = IsolatedJudge(DEFAULT_TIMEOUT_S if timeout is None else timeout)
    return _WORKERS[timeout]


def pytest_sessionfinish(session, exitstatus):
    """Stop the session's worker processes."""
    for worker in _WORKERS.values():
        worker.close()
    _WORKERS.clear()


def judge_case(impl, kind: str, case: Case, **options) -> None:
    from histkit.conformance.check import check, usable_timeout
    from histkit.conformance.loading import UsageError
    from histkit.gpu.errors import GpuUnavailableError

    timeout = options.get("timeout")
    if not options.get("in_process") and usable_timeout(timeout):  # (check() names a bad one)
        options = {**options, "worker": _worker(None if timeout is None else float(timeout))}
    try:
        report = check(impl, kind, cases=[case], **options)
    except GpuUnavailableError as error:  # a .cu kernel on a machine without a GPU
        pytest.skip(str(error))
    except UsageError as error:  # the test asks for something check cannot do
        refused = str(error)
    else:
        refused = None
    if refused is not None:
        pytest.fail(f"histkit_check: {refused}", pytrace=False)
    if not report.isolated and not options.get("in_process"):
        warnings.warn(f"histkit_check ran {report.implementation} in pytest's own process "
                      f"({report.note}): a crash there ends the run and a hang is not "
                      f"stopped", stacklevel=2)
    (_, cell, _), = report.cells
    if cell.status == "skip":
        pytest.skip(cell.detail)
    if report.failures:
        pytest.fail(str(report.failures[0]), pytrace=False)


@pytest.fixture
def histkit_check():
    """A function (impl, kind, case, **options) that fails the test with a reproducer."""
    return judge_case
