"""Make a failure small enough to read, and tell whether it repeats alone.

``shrink`` cuts a failing key case down (half the keys, fewer bins, equal or
sorted values, runs deleted from the middle) while it FAILs with the same
symptom; the binning and weighted rules shrink their own inputs
(``check_binning.shrink``, ``check_weighted.shrink``). ``shrink_groups`` does
this for the smallest failure of each group the verdict shows, and
``call_alone`` calls each shown input again in a new worker, as its
reproducers will, to say when a failure comes from state kept between calls
or from chance.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from histkit.conformance.cases import Case
from histkit.conformance.check_judge import Judge
from histkit.conformance.check_verdict import CheckReport, Failure, odd_numbers, symptom_of
from histkit.conformance.checks import Cell
from histkit.conformance.isolation import is_hang
from histkit.gpu.registry import BINNING_KINDS

# The shrinker gives up after SHRINK_MAX_FAULTS faults of its own (each costs
# a new worker) or SHRINK_ATTEMPTS inputs tried.
SHRINK_MAX_FAULTS = 20
SHRINK_ATTEMPTS = 160
DELETE_MAX_N = 64  # inputs up to this long are also shrunk by deleting runs of keys inside
SHRINK_MAX_N = 1 << 22  # larger failing inputs are reported as they are
SHRUNK_GROUPS = 3  # the groups of failures whose smallest input is shrunk
# A shown input is called this many times in a new worker: a FAIL that the
# input alone does not repeat is state kept between calls, or chance.
ALONE_CALLS = 3


def _candidates(keys: np.ndarray, num_bins: int, fewer_only: bool = False,
                counts: bool = False):
    """Smaller inputs to try, most aggressive first (fewer_only: full-width
    keys or a scan's counts, only fewer of them, there being no num_bins to
    shrink; counts: a scan's counts, also smaller ones, [1] before [66887])."""
    n = len(keys)
    if n > 1:
        yield keys[: n // 2], num_bins
        yield keys[n // 2:], num_bins
        cut = max(1, n // 8)
        yield keys[: n - cut], num_bins
        yield keys[cut:], num_bins
        # as many keys, simpler values: an input too long to write out key by
        # key is still written as runs ([0] * 257) once its values are equal
        # or in order
        if not counts and (keys != keys[0]).any():
            yield np.full_like(keys, keys[0]), num_bins
            if (keys[1:] < keys[:-1]).any():
                yield np.sort(keys), num_bins
    if counts and n and int(keys.max()) > 1:
        yield np.minimum(keys, 1).astype(keys.dtype), num_bins
        yield (keys // 2).astype(keys.dtype), num_bins
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
        if distinct[0] > 0:  # smaller keys, the bins kept: [5] of 10 bins to [0]
            yield (keys - distinct[0]).astype(keys.dtype), num_bins
    if num_bins > 1 and (len(valid) == 0 or int(valid.max()) < num_bins // 2):
        yield keys, num_bins // 2
    if 2 < n <= DELETE_MAX_N:  # a few keys from the middle: [256, ..., 257] to [256, 257]
        size = max(1, n // 4)
        while size >= 1:
            for start in range(0, n - size + 1, size):
                yield np.delete(keys, np.s_[start:start + size]), num_bins
            size //= 2


def with_keys(case: Case, keys: np.ndarray, num_bins: int) -> Case:
    """case with these keys in place of its own: every other dimension (a
    forced grid, schedule skew, a misaligned or fenced start) is kept, so
    that the smaller input fails for the same reason."""
    literal = Case.of_keys(keys, num_bins, case.grid, case.full_width, case.scan_counts)
    kept = {name: getattr(case, name) for name in ("offset", "skewed", "fenced",
                                                    "fenced_at_start", "skew_seed")
            if hasattr(case, name)}
    return dataclasses.replace(literal, **kept)


def as_scan_input(case: Case) -> Case:
    """A key case as the counts a scan of it scans (the keys' histogram), a
    literal case of scan_counts: what the shrinker shortens and a reproducer
    hands a scan."""
    if case.scan_counts or case.bad is not None or case.num_bins > SHRINK_MAX_N:
        return case
    from histkit import oracles

    counts = oracles.histogram(case.keys(), case.num_bins).astype(np.uint64)
    return dataclasses.replace(Case.of_keys(counts, 0, scan_counts=True), skewed=case.skewed,
                               skew_seed=case.skew_seed, fenced=case.fenced,
                               fenced_at_start=case.fenced_at_start)


def shrink(judge: Judge, case: Case, symptom: str | None = None) -> tuple[Case, str] | None:
    """The smallest input found that still FAILs (None when the case is too
    large); with symptom, that still FAILs with it (symptom_of the detail), so
    that a smaller input failing for another reason does not stand in for it."""
    if case.n > SHRINK_MAX_N:
        return None
    keys, num_bins = case.keys(), case.num_bins
    best = with_keys(case, keys, num_bins)
    best_detail = ""
    hangs_before, faults_before = len(judge.hung), len(judge.faulted)
    attempts = 0
    improved = True
    while improved and attempts < SHRINK_ATTEMPTS:
        improved = False
        for cand_keys, cand_bins in _candidates(keys, num_bins,
                                                case.full_width or case.scan_counts,
                                                counts=case.scan_counts):
            candidate = with_keys(case, cand_keys, cand_bins)
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
            if cell.status == "FAIL" and symptom in (None, symptom_of(cell.detail)):
                keys, num_bins, best, best_detail = cand_keys, cand_bins, candidate, cell.detail
                improved = True
                break
            if attempts >= SHRINK_ATTEMPTS:
                break
    return best, best_detail


def shrink_groups(judge: Judge, report: CheckReport, rule=None) -> None:
    """Shrink the smallest failing case of each of the first SHRUNK_GROUPS
    symptoms (one minimal input per group is what a reader needs to start),
    then put each group's smallest first. Keys are shrunk by ``shrink``;
    with ``rule`` (``check_binning`` or ``check_weighted``), samples or keys
    with their weights by ``rule.shrink``."""
    for group in report.groups()[:SHRUNK_GROUPS]:
        heads = [group[0]]
        if report.kind in BINNING_KINDS and odd_numbers(group[0].case):
            # an odd input (1e300, -0.0, NaN) may be the smallest only because
            # every plain one is longer: shrink the shortest plain one too,
            # and the group shows whichever comes out smaller (_smallness)
            plain = [f for f in group[1:] if not odd_numbers(f.case, look_through=True)]
            heads += sorted(plain, key=lambda f: f.case.n)[:1]
        for smallest in heads:
            # A hang is not shrunk: each smaller input tried could cost a timeout.
            if smallest.case.name in judge.hung:
                continue
            found = _shrunk(judge, report.kind, smallest, rule)
            if found is None:
                continue
            smallest.shrunk, smallest.shrunk_detail = found
            cell, geometry = judge(smallest.shrunk)  # its figures, on the shrunk input
            if cell.status == "FAIL":
                # (a binning or weighted .cu launch is shown as the case's)
                _show_own(smallest, cell, judge.last_printed,
                          geometry if rule is None else None)
            else:  # not the case's figures beside the shrunk input
                smallest.figures, smallest.printed = None, ""
    report.failures[:] = [f for group in report.groups() for f in group]


def _shrunk(judge: Judge, kind: str, failure: Failure, rule) -> tuple | None:
    """A smaller input of failure's that fails the same way, or None."""
    symptom = failure.symptom
    if rule is not None:
        if failure.case.n > SHRINK_MAX_N:
            return None
        return rule.shrink(judge, failure.case,
                           lambda detail: symptom_of(detail) == symptom)
    if failure.case.literal is not None:  # the caller's own input: shown as given
        return None
    # a scan's input is counts: shortened as counts, whatever made them
    start = as_scan_input(failure.case) if kind == "scan" else failure.case
    return shrink(judge, start, symptom)


def _show_own(failure: Failure, cell: Cell, printed: str, geometry: str | None = None) -> None:
    """The shown input FAILed with cell: its own detail, figures and printed
    lines (and its launch, where given) stand in for those it came with."""
    if failure.shrunk is not None:
        failure.shrunk_detail = cell.detail
        if geometry is not None:
            failure.shrunk_geometry = geometry
    else:
        failure.detail = cell.detail
        if geometry is not None:
            failure.geometry = geometry
    failure.figures, failure.printed = cell.figures, printed


def call_alone(implementation, timeout: float, report: CheckReport, judge: Judge) -> None:
    """Call each shown group's input ALONE_CALLS times in a new worker, as its
    reproducers will: where the first call passes, the failure came from
    earlier calls (state kept between calls); where the calls disagree, from
    chance or state. Either is said in ``alone``; where the input fails
    alone, its figures are those of its first call there. A group of a hang
    or a crash, or of an input past SHRINK_MAX_N, is left as it is: each call
    could cost a timeout, a worker or minutes."""
    stopped = set(judge.hung) | set(judge.faulted)
    for group in report.groups()[:SHRUNK_GROUPS]:
        failure = group[0]
        if (failure.case.name in stopped or is_hang(failure.shrunk_detail or failure.detail)
                or failure.smallest.n > SHRINK_MAX_N):  # (three more calls of 2^28 keys)
            continue
        fresh = Judge(implementation, timeout, isolated=True)
        calls = []
        try:
            for _ in range(ALONE_CALLS):
                cell, geometry = fresh(failure.smallest)
                calls.append((cell, geometry, fresh.last_printed))
                if is_hang(cell.detail):
                    break
        finally:
            fresh.close()
        first = calls[0][0]
        failing = [call for call in calls if call[0].status == "FAIL"]
        same = all(cell.status == first.status and cell.detail == first.detail
                   for cell, _, _ in calls)
        if failing and symptom_of(failing[0][0].detail) == failure.symptom:
            cell, geometry, printed = failing[0]  # the shown input's own figures
            _show_own(failure, cell, printed, geometry)
        if not failing:
            failure.alone = (f"in a new process this input passes ({len(calls)} calls): it "
                             f"fails only after other calls: the callable keeps state "
                             f"between calls (a buffer, cache or counter not reset), or "
                             f"fails by chance; the reproducers below pass, the whole "
                             f"check (its first line) may fail again")
        elif first.status != "FAIL":
            failure.alone = (f"in a new process this input passes, then fails when called "
                             f"again ({len(failing)} of {len(calls)} calls): the callable "
                             f"keeps state between calls (a buffer, cache or counter not "
                             f"reset) or its result changes by chance; the reproducers "
                             f"below may pass")
        elif not same:
            failure.alone = (f"called {len(calls)} times in a new process this input "
                             f"failed {len(failing)}, not the same way each time: the "
                             f"result changes from call to call (ties broken at random, "
                             f"threads, or state kept between calls); a reproducer may "
                             f"need several runs")
        elif symptom_of(first.detail) != failure.symptom:
            failure.alone = (f"in a new process this input fails otherwise "
                             f"({symptom_of(first.detail, blank=False)}): the callable "
                             f"keeps state between calls")
