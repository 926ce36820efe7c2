"""Shrinking a failing input of the binning and weighted kinds: fewer of its
samples (or keys with their weights), as long as the smaller input still FAILs."""

from __future__ import annotations

from collections.abc import Callable, Iterator

SHRINK_ATTEMPTS = 80
UNNAMED = "input"  # the name of a case made of the caller's own input, or shrunk from one


def shrink_by(judge, case, smaller: Callable[[object], Iterator],
              same_failure: Callable[[str], bool] | None = None,
              attempts: int = SHRINK_ATTEMPTS):
    """(the smallest input found that still FAILs, its detail), or None when no
    smaller one does. ``judge`` is check's Judge; ``smaller(case)`` yields the
    candidates, most aggressive first; ``same_failure(detail)``, where given,
    says whether a candidate's FAIL is the one being shrunk (a smaller input
    failing for another reason must not stand in for it). A candidate that
    hangs or faults ends the search: each more would cost a timeout or a
    worker process."""
    best, detail, tried = None, "", 0
    trouble = len(judge.hung) + len(judge.faulted)
    while tried < attempts:
        for candidate in smaller(best or case):
            tried += 1
            cell, _ = judge(candidate)
            if len(judge.hung) + len(judge.faulted) > trouble:
                return None if best is None else (best, detail)
            if cell.status == "FAIL" and (same_failure is None or same_failure(cell.detail)):
                best, detail = candidate, cell.detail
                break
            if tried >= attempts:
                break
        else:
            break
    return None if best is None else (best, detail)
