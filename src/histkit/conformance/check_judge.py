"""Run one implementation on one case, and stop running it where it keeps failing hard.

A ``Judge`` runs a .cu kernel always, and a callable unless asked to run it in
this process, in a worker process (``isolation.IsolatedJudge``), so that a
crash or a hang costs one cell. It counts the cases the implementation hung
or crashed on, and says which further cases are not worth running
(``not_run_because``): each would cost a timeout or a new worker.
"""

from __future__ import annotations

from histkit.conformance.cases import Case
from histkit.conformance.check_binning import BinningCudaFile
from histkit.conformance.check_weighted import WeightedCudaFile
from histkit.conformance.checks import Cell
from histkit.conformance.foreign import CudaFileImpl
from histkit.conformance.isolation import like_any
from histkit.conformance.loading import raised

# A kernel that hangs this many times is not run on cases like those it hung
# on (each would cost a timeout); those cells are skips naming why. Its
# verdict is FAIL. A .cu kernel is not run on any further case.
MAX_HANGS = 2
# The same after this many faults (each costs a new worker process): a .cu
# kernel stops (a new worker starts CUDA again), a callable goes on with the
# cases unlike those it crashed on, where other bugs may show, until it has
# crashed MAX_CALLABLE_FAULTS times.
MAX_FAULTS = 5
MAX_CALLABLE_FAULTS = 40
# The implementations built from a .cu file: compiled before any case, always
# judged in a worker process, on a GPU only.
FROM_SOURCE = (CudaFileImpl, BinningCudaFile, WeightedCudaFile)


class Judge:
    """Runs one implementation on one case: in a worker process (isolated),
    or, for a callable asked to run in process, here."""

    def __init__(self, impl, timeout: float, isolated: bool | None = None, worker=None):
        self.impl = impl
        self._isolated = None
        self._owns_worker = worker is None
        self._hung_cases: list[Case] = []
        self._faulted_cases: list[Case] = []
        if isolated is None:  # a .cu kernel always; a callable when check() asks
            isolated = isinstance(impl, FROM_SOURCE)
        if isolated:
            from histkit.conformance.isolation import IsolatedJudge

            self._isolated = worker if worker is not None else IsolatedJudge(timeout)

    @property
    def isolated(self) -> bool:
        return self._isolated is not None

    @property
    def printed_lines(self) -> int:
        """Lines the implementation printed to stdout or stderr in its worker, so far."""
        return getattr(self._isolated, "printed_lines", 0)  # a worker= may not count

    @property
    def last_printed(self) -> str:
        """What it printed on the last case judged: stdout, then stderr with its
        lines marked "stderr: " ("" in process)."""
        return getattr(self._isolated, "last_printed", "")

    @property
    def hung(self) -> list[str]:
        """The cases on which the implementation hung (only an isolated one can)."""
        return [case.name for case in self._hung_cases]

    @property
    def faulted(self) -> list[str]:
        """The cases on which it crashed or faulted (each cost its worker process)."""
        return [case.name for case in self._faulted_cases]

    def not_run_because(self, case: Case) -> str | None:
        """Why case is not run after hangs or faults (None: it is run): a .cu
        kernel past MAX_HANGS hangs or MAX_FAULTS faults runs no more cases;
        a callable is still run on cases unlike those (a smaller size, or
        another dtype), up to MAX_CALLABLE_FAULTS faults."""
        from_source = isinstance(self.impl, FROM_SOURCE)
        for stopped, limit, what in ((self._hung_cases, MAX_HANGS, "hung"),
                                     (self._faulted_cases, MAX_FAULTS, "crashed or faulted")):
            if len(stopped) < limit:
                continue
            if (from_source or (what == "hung" and len(stopped) >= 2 * limit)
                    or len(stopped) >= MAX_CALLABLE_FAULTS):
                return (f"not run: the kernel {what} on {len(stopped)} cases "
                        f"({', '.join(c.name for c in stopped)})")
            alike = like_any(case, stopped)
            if alike:
                return (f"not run: at least as large as a case of {alike} that the "
                        f"kernel {what} on (after {limit} such cases)")
        return None

    def __call__(self, case: Case) -> tuple[Cell, str]:
        if self._isolated is None:
            try:
                return self.impl.judge(case)
            except (Exception, SystemExit) as error:  # the callable crashed: one FAIL cell
                return Cell("FAIL", raised(error)), ""
        hangs, faults = len(self._isolated.hung), len(self._isolated.faulted)
        result = self._isolated.judge(self.impl, case)
        if len(self._isolated.hung) > hangs:
            self._hung_cases.append(case)
        if len(self._isolated.faulted) > faults:
            self._faulted_cases.append(case)
        return result

    def close(self) -> None:
        """Stop the worker process, unless the caller keeps it (worker=)."""
        if self._isolated is not None and self._owns_worker:
            self._isolated.close()
