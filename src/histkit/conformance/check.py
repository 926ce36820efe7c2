"""``histkit.conformance.check``: judge a user's histogram, scan or sort.

    report = check("my_hist.cu", "histogram")              # a CUDA C++ file
    report = check("mypkg.kernels:histogram", "histogram")  # a Python callable
    report = check(my_function, "stable-sort", inputs="numpy")
    report.passed, report.failures  # each failure: case, geometry, detail, reproducer

The cases are the conformance matrix's (quick by default); the rule is the
kind's (``histkit.gpu.registry.KINDS``). A failing case is shrunk to a small
input that still fails, printed with a one-line command that reproduces it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from histkit.conformance.cases import Case, cases_for
from histkit.conformance.checks import Cell
from histkit.conformance.foreign import (
    DEFAULT_ENTRIES,
    CudaFileImpl,
    PythonImpl,
    load_callable,
    parse_kernel_spec,
)
from histkit.gpu.errors import GpuUnavailableError
from histkit.gpu.registry import FULL_WIDTH_KINDS, KINDS

# A kernel that hangs this many times is not run on the remaining cases (each
# would cost a timeout); those cells are skips naming why. Its verdict is FAIL.
MAX_HANGS = 2
# A kernel that faulted on this many cases is not run on the rest either: each
# fault costs a new worker process, and a kernel that faults everywhere would
# pay one per case. The shrinker gives up after SHRINK_MAX_FAULTS of its own.
MAX_FAULTS = 5
SHRINK_MAX_FAULTS = 20
SHRINK_ATTEMPTS = 80
SHRINK_MAX_N = 1 << 22  # larger failing inputs are reported as they are
SHOWN_KEYS = 64
INLINE_KEYS = 1024


@dataclass
class Failure:
    case: Case
    geometry: str
    detail: str
    shrunk: Case | None = None
    shrunk_detail: str = ""
    reproducer: str = ""

    def __str__(self) -> str:
        text = f"FAIL on {self.case.name} [{self.geometry or 'n/a'}]: {self.detail}"
        if self.shrunk is not None:
            text += f"\n  smallest failing input: {self.shrunk.name}: {self.shrunk_detail}"
            if self.shrunk.n <= SHOWN_KEYS:
                label = "counts" if self.shrunk.scan_counts else "keys"
                text += f"\n  {label} = {list(self.shrunk.literal)}"
        if self.reproducer:
            text += f"\n  reproduce: {self.reproducer}"
        return text


@dataclass
class CheckReport:
    implementation: str
    kind: str
    cells: list[tuple[Case, Cell, str]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures

    def counts(self) -> dict[str, int]:
        statuses = [cell.status for _, cell, _ in self.cells]
        return {s: statuses.count(s) for s in ("pass", "FAIL", "finding", "skip")}

    def to_json(self) -> dict:
        return {"implementation": self.implementation, "kind": self.kind,
                "passed": self.passed, "counts": self.counts(),
                "seconds": round(self.seconds, 2),
                "failures": [{"case": f.case.name, "geometry": f.geometry, "detail": f.detail,
                              "shrunk": f.shrunk.name if f.shrunk else None,
                              "shrunk_keys": list(f.shrunk.literal) if f.shrunk else None,
                              "reproducer": f.reproducer} for f in self.failures],
                "cells": [{"case": c.name, "status": cell.status, "detail": cell.detail,
                           "geometry": g} for c, cell, g in self.cells]}


def make_impl(impl, kind: str, *, inputs: str = "auto", defines=None, block: int = 256,
              grid: int | None = None, count_bits: int = 32, warp_size: int = 32):
    """A CudaFileImpl for ``file.cu[:entry]``, a PythonImpl for anything callable."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if isinstance(impl, (CudaFileImpl, PythonImpl)):
        return impl
    if isinstance(impl, str) and impl.split(":")[0].endswith((".cu", ".cuh")):
        if kind not in DEFAULT_ENTRIES:
            raise ValueError(f"the kernel ABI has no {kind} kernels (CUDA files may be of kind "
                             f"{', '.join(DEFAULT_ENTRIES)}); hand a {kind} as a Python "
                             f"callable that launches it")
        path, entries = parse_kernel_spec(impl, kind)
        return CudaFileImpl(path, kind, entries, tuple(sorted((defines or {}).items())), block,
                            grid, count_bits, warp_size)
    function = load_callable(impl) if isinstance(impl, str) else impl
    if not callable(function):
        raise TypeError(f"an implementation is a .cu path or a callable; got {impl!r}")
    return PythonImpl(function, kind, "numpy" if inputs == "auto" else inputs, warp_size,
                      block, grid, name=impl if isinstance(impl, str) else "")


class Judge:
    """Runs one implementation on one case, isolated when it is a .cu kernel."""

    def __init__(self, impl, timeout: float):
        self.impl = impl
        self._isolated = None
        if isinstance(impl, CudaFileImpl):
            from histkit.conformance.isolation import IsolatedJudge

            self._isolated = IsolatedJudge(timeout)

    @property
    def hung(self) -> list[str]:
        """The cases on which the kernel hung (only an isolated .cu kernel can)."""
        return self._isolated.hung if self._isolated is not None else []

    @property
    def faulted(self) -> list[str]:
        """The cases on which the kernel faulted (cost its worker process)."""
        return self._isolated.faulted if self._isolated is not None else []

    def __call__(self, case: Case) -> tuple[Cell, str]:
        if len(self.hung) >= MAX_HANGS:
            return Cell("skip", f"not run: the kernel hung on {len(self.hung)} cases "
                                f"({', '.join(self.hung)}); a hanging kernel is not run "
                                f"further"), ""
        if self._isolated is not None:
            return self._isolated.judge(self.impl, case)
        try:
            return self.impl.judge(case)
        except Exception as error:  # the callable crashed: one FAIL cell
            return Cell("FAIL", f"{type(error).__name__}: {error}"), ""

    def close(self) -> None:
        if self._isolated is not None:
            self._isolated.close()


def _candidates(keys: np.ndarray, num_bins: int, fewer_only: bool = False):
    """Smaller inputs to try, most aggressive first (fewer_only: full-width
    keys or a scan's counts, only fewer of them; there is no num_bins to
    shrink)."""
    n = len(keys)
    if n > 1:
        yield keys[: n // 2], num_bins
        yield keys[n // 2:], num_bins
        cut = max(1, n // 8)
        yield keys[: n - cut], num_bins
        yield keys[cut:], num_bins
    if fewer_only:
        return
    valid = keys[(keys >= 0) & (keys < num_bins)] if n else keys
    if len(valid) == n and n:
        top = int(keys.max()) + 1
        if top < num_bins:
            yield keys, top
        distinct, ranks = np.unique(keys, return_inverse=True)
        if len(distinct) < top or distinct[0] != 0:
            yield ranks.astype(keys.dtype), len(distinct)
        if len(distinct) > 2:  # (with two, capping at the second changes nothing)
            yield np.minimum(keys, distinct[1]).astype(keys.dtype), num_bins
    if num_bins > 1 and (len(valid) == 0 or int(valid.max()) < num_bins // 2):
        yield keys, num_bins // 2


def shrink(judge: Judge, case: Case) -> tuple[Case, str] | None:
    """The smallest input found that still FAILs (None when the case is too large)."""
    if case.n > SHRINK_MAX_N:
        return None
    keys, num_bins = case.keys(), case.num_bins
    best = Case.of_keys(keys, num_bins, case.grid, case.full_width, case.scan_counts)
    best_detail = ""
    hangs_before, faults_before = len(judge.hung), len(judge.faulted)
    attempts = 0
    improved = True
    while improved and attempts < SHRINK_ATTEMPTS:
        improved = False
        for cand_keys, cand_bins in _candidates(keys, num_bins,
                                                case.full_width or case.scan_counts):
            candidate = Case.of_keys(cand_keys, cand_bins, case.grid, case.full_width,
                                     case.scan_counts)
            if candidate == best:
                # The input itself (a scan's counts keep their own length as K):
                # no smaller, and a FAIL would only repeat the round to the cap.
                continue
            attempts += 1
            cell, _ = judge(candidate)
            if len(judge.hung) > hangs_before:  # a smaller input hangs: each try could
                return best, best_detail
            if len(judge.faulted) - faults_before >= SHRINK_MAX_FAULTS:
                return best, best_detail  # each fault costs a new worker
            if cell.status == "FAIL":
                keys, num_bins, best, best_detail = cand_keys, cand_bins, candidate, cell.detail
                improved = True
                break
            if attempts >= SHRINK_ATTEMPTS:
                break
    return best, best_detail


def reproducer(impl, kind: str, case: Case) -> str:
    """A one-line command (or Python snippet) that runs just this case."""
    # (a scan's counts are no keys= input: they are named as the Case they are)
    if case.literal is not None and case.n <= INLINE_KEYS and not case.scan_counts:
        keys = ",".join(map(str, case.literal))
        if isinstance(impl, CudaFileImpl):
            options = "".join(f" --define {k}={v}" for k, v in impl.defines)
            grid = case.grid or impl.grid
            options += f" --block {impl.block}" + (f" --grid {grid}" if grid else "")
            options += f" --counts {impl.count_bits}"
            return (f"histkit check {impl.describe()} --kind {kind} --keys '{keys}' "
                    f"--dtype {case.dtype} --num-bins {case.num_bins}{options}")
        bins = "" if kind in FULL_WIDTH_KINDS else f", num_bins={case.num_bins}"
        return (f"python -c \"import numpy as np; from histkit.conformance import check; "
                f"print(check('{impl.describe()}', '{kind}', keys=np.array([{keys}], "
                f"dtype='{case.dtype}'){bins}).failures[0])\"")
    return (f"python -c \"from histkit.conformance import check, Case; "
            f"print(check('{impl.describe()}', '{kind}', cases=[{case!r}]).failures[0])\"")


def check(impl, kind: str, *, quick: bool = True, inputs: str = "auto", cases=None,
          keys=None, num_bins: int | None = None, defines: dict | None = None,
          block: int = 256, grid: int | None = None, count_bits: int = 32,
          warp_size: int = 32, timeout: float = 60.0, shrink_failures: bool = True,
          progress=None) -> CheckReport:
    """Judge `impl` as a kernel of `kind` on the conformance cases (see module doc)."""
    implementation = make_impl(impl, kind, inputs=inputs, defines=defines, block=block,
                               grid=grid, count_bits=count_bits, warp_size=warp_size)
    if keys is not None:
        if kind in FULL_WIDTH_KINDS:  # full-width keys: there is no num_bins
            cases = [Case.of_keys(np.asarray(keys), 0, grid, full_width=True)]
        elif num_bins is None:
            raise ValueError("keys= needs num_bins=")
        else:
            cases = [Case.of_keys(np.asarray(keys), num_bins, grid)]
    from_source = isinstance(implementation, CudaFileImpl)
    if keys is None and cases is None:
        cases = cases_for(kind, quick, fenced=from_source, skewed=from_source)
    if from_source:
        from histkit.gpu.device import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        if reason is not None:  # not the kernel's fault: no case can run here
            raise GpuUnavailableError(f"checking a CUDA C++ kernel needs a GPU here: {reason} "
                                      f"(a Python callable needs none)")
    report = CheckReport(implementation.describe(), kind)
    judge = Judge(implementation, timeout)
    start = time.perf_counter()
    try:
        for case in cases:
            if len(judge.faulted) >= MAX_FAULTS:
                cell, geometry = Cell("skip", f"not run: the kernel faulted on "
                                              f"{len(judge.faulted)} cases "
                                              f"({', '.join(judge.faulted)})"), ""
            else:
                cell, geometry = judge(case)
            report.cells.append((case, cell, geometry))
            if progress is not None:
                progress(case, cell)
            if cell.status == "FAIL":
                report.failures.append(Failure(case, geometry, cell.detail))
        # The smallest failing case is shrunk further (the others keep their own
        # reproducer): one minimal input is what a reader needs to start.
        if report.failures and shrink_failures:
            smallest = min(report.failures, key=lambda f: (f.case.n, f.case.num_bins))
            # A hang is not shrunk: each smaller input tried could cost a timeout.
            if smallest.case.literal is None and smallest.case.name not in judge.hung:
                found = shrink(judge, smallest.case)
                if found is not None:
                    smallest.shrunk, smallest.shrunk_detail = found
            report.failures.remove(smallest)
            report.failures.insert(0, smallest)
        for failure in report.failures:
            failure.reproducer = reproducer(implementation, kind, failure.shrunk or failure.case)
    finally:
        judge.close()
    report.seconds = time.perf_counter() - start
    return report
