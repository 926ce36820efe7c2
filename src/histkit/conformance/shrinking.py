"""Shrinking a failing input of the binning and weighted kinds: fewer of its
samples (or keys with their weights), as long as the smaller input still FAILs."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

SHRINK_ATTEMPTS = 80  # candidates in a row that do not fail the same way: the search stops
SHRINK_MAX_TRIES = 1000  # candidates in all
ONE_BY_ONE_MAX = 32  # inputs up to this long try dropping each item, after the halves
UNNAMED = "input"  # the name of a case made of the caller's own input, or shrunk from one


def fewer(n: int) -> Iterator[slice | np.ndarray]:
    """Selections of fewer of n items, most aggressive first: each half, all
    but an eighth at either end, then all but one of 4, 8, 16, ... chunks,
    down to single items (at once for a few items), so that items far apart
    that fail together are kept without those between them."""
    if n <= 1:
        return
    cut = max(1, n // 8)
    yield from (slice(0, n // 2), slice(n // 2, n), slice(0, n - cut), slice(cut, n))
    chunks = 4 if n > ONE_BY_ONE_MAX else n
    while True:
        size = -(-n // chunks)  # ceil
        if size < n:
            for start in range(0, n, size):
                yield np.r_[0:start, min(n, start + size):n]
        if size == 1:
            return
        chunks *= 2


def shrink_by(judge, case, smaller: Callable[[object], Iterator],
              same_failure: Callable[[str], bool] | None = None,
              attempts: int = SHRINK_ATTEMPTS):
    """(the smallest input found that still FAILs, its detail), or None when no
    smaller one does. ``judge`` is check's Judge; ``smaller(case)`` yields the
    candidates, most aggressive first; ``same_failure(detail)``, where given,
    says whether a candidate's FAIL is the one being shrunk (a smaller input
    failing for another reason must not stand in for it). It gives up after
    ``attempts`` candidates in a row that do not fail so, or SHRINK_MAX_TRIES
    in all. A candidate that hangs or faults ends the search: each more would
    cost a timeout or a worker process."""
    best, detail, tried, since = None, "", 0, 0
    trouble = len(judge.hung) + len(judge.faulted)
    while since < attempts and tried < SHRINK_MAX_TRIES:
        for candidate in smaller(best or case):
            tried += 1
            since += 1
            cell, _ = judge(candidate)
            if len(judge.hung) + len(judge.faulted) > trouble:
                return None if best is None else (best, detail)
            if cell.status == "FAIL" and (same_failure is None or same_failure(cell.detail)):
                best, detail, since = candidate, cell.detail, 0
                break
            if since >= attempts or tried >= SHRINK_MAX_TRIES:
                break
        else:
            break
    return None if best is None else (best, detail)
