"""The comparison rule for each kernel (DESIGN.md's conformance table).

A check returns a Cell: "pass", "FAIL" (the rule is broken), "finding" (the
rule holds and there is something to report, e.g. lost updates or broken
stability in the kernels that are meant to show them) or "skip".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Cell:
    status: str  # pass | FAIL | finding | skip
    detail: str = ""
    figures: dict | None = None


def _first_difference(got: np.ndarray, want: np.ndarray) -> str:
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    where = np.flatnonzero(got != want)
    if not where.size:
        return ""
    i = int(where[0])
    return f"{where.size} differing; first at {i}: got {got[i]}, expected {want[i]}"


def equal(got: np.ndarray, want: np.ndarray, what: str = "bin") -> Cell:
    difference = _first_difference(np.asarray(got), np.asarray(want))
    return Cell("FAIL", f"{what}s differ: {difference}") if difference else Cell("pass")


def at_most_exact(got: np.ndarray, exact: np.ndarray) -> Cell:
    """The racy many-block kernel: no bin above the exact count; report the loss."""
    over = np.flatnonzero(got > exact)
    if over.size:
        b = int(over[0])
        return Cell("FAIL", f"bin {b} counted {got[b]} > exact {exact[b]}")
    lost = int(exact.sum() - got.sum())
    total = int(exact.sum())
    if lost:
        return Cell("finding", f"lost {lost} of {total} updates ({lost / total:.1%})",
                    {"lost": lost, "total": total})
    return Cell("pass", "no update lost on this input", {"lost": 0, "total": total})


def privatized(got: np.ndarray, exact: np.ndarray, atomics: int, model_atomics: int) -> Cell:
    cell = equal(got, exact)
    if cell.status != "pass":
        return cell
    if atomics != model_atomics:
        return Cell("FAIL", f"issued {atomics} global atomics; the model says {model_atomics}")
    return Cell("pass", f"{atomics} global atomics = model", {"global_atomics": atomics})


def stability_violations(sorted_keys: np.ndarray, index: np.ndarray) -> int:
    same_key = sorted_keys[1:] == sorted_keys[:-1]
    return int(np.count_nonzero(same_key & (index[1:] < index[:-1])))


def atomic_cursor_sort(got_keys, got_index, keys, want_keys) -> Cell:
    """Sorted and a permutation is the rule; instability is counted, not failed."""
    n = len(keys)
    cell = equal(got_keys, want_keys, "sorted key")
    if cell.status != "pass":
        return cell
    seen = np.zeros(n, dtype=bool)
    if n:
        if got_index.min() < 0 or got_index.max() >= n:
            return Cell("FAIL", "original_index out of range")
        seen[got_index] = True
    if not seen.all():
        return Cell("FAIL", f"original_index is not a permutation: "
                            f"{n - int(seen.sum())} indices missing")
    if not np.array_equal(keys[got_index], got_keys):
        return Cell("FAIL", "a sorted key differs from the input key at its original index")
    violations = stability_violations(got_keys, got_index)
    if violations:
        return Cell("finding", f"NOT stable: {violations} adjacent equal-key pairs out of "
                               f"input order", {"stability_violations": violations})
    return Cell("pass", "stable on this input", {"stability_violations": 0})
