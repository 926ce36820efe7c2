"""The verdict of ``histkit check`` as data: each failure and the report.

A ``Failure`` is one case an implementation FAILed, with the smaller input
that shows it, its first differences and its reproducers; a ``CheckReport``
holds every case's cell and the failures, grouped by symptom (``symptom_of``:
"bins differ", "hang", "crash: SIGABRT"), and writes them as strict JSON
(``to_json``). What a person reads is ``check_output``'s; how a failure is
found and shrunk is ``check`` and ``check_shrink``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from histkit.conformance.binning_cases import BinCase
from histkit.conformance.cases import Case
from histkit.conformance.checks import Cell
from histkit.conformance.shrinking import UNNAMED
from histkit.conformance.weighted_cases import WeightedCase
from histkit.gpu.registry import BINNING_KINDS

SYMPTOM_WIDTH = 60  # a symptom longer than this (a message with no "head: rest") is cut
SHOWN_KEYS = 64


@dataclass
class Failure:
    """One case an implementation FAILed.

    ``case`` is the case as run (a ``Case``, ``BinCase`` or ``WeightedCase``)
    and ``detail`` what went wrong on it. Where it is the smallest of its
    group, ``shrunk`` is a smaller input that fails the same way (None when
    none was found) with its ``shrunk_detail``; ``smallest`` is whichever of
    the two the verdict shows, and its input is ``input_json(smallest)`` as
    data. ``reproducer`` and ``python_reproducer`` run that input again;
    ``figures`` hold the first differences (``[index, got, expected]``).
    """

    case: Case
    geometry: str
    detail: str
    shrunk: Case | None = None
    shrunk_detail: str = ""
    shrunk_geometry: str = ""  # the launch that ran the shrunk input (privatized, .cu)
    printed: str = ""  # what it printed to stdout (then stderr, marked) on the input shown
    reproducer: str = ""  # a command line
    python_reproducer: str = ""  # the same as a Python call (or why there is none)
    figures: dict | None = None  # the first differences, where the rule lists them
    kind: str = ""
    alone: str = ""  # how the shown input fared called alone in a new worker, where that differs

    @property
    def smallest(self) -> Case:
        return self.shrunk or self.case

    @property
    def symptom(self) -> str:
        return symptom_of(self.detail)

    @property
    def launch(self) -> str:
        """The launch shape the shown input ran with ("" where none applies)."""
        return self.shrunk_geometry if self.shrunk is not None else self.geometry

    @property
    def title(self) -> str:
        """The symptom with the values of the input shown (the smallest one):
        a group's heading, where `symptom` (values blanked) is its key."""
        return symptom_of(self.shrunk_detail or self.detail, blank=False)

    def __str__(self) -> str:
        where = self.case.name
        if hasattr(self.case, "describe_input") and self.case.name == UNNAMED:
            where = self.case.describe_input(SHOWN_KEYS)
        launched = f" [{self.geometry}]" if self.geometry else ""  # a .cu kernel's launch
        text = f"FAIL on {where}{launched}: {self.detail}"
        if hasattr(self.shrunk, "describe_input"):
            text += (f"\n  smallest failing input: {self.shrunk.describe_input(SHOWN_KEYS)}: "
                     f"{self.shrunk_detail}")
        elif self.shrunk is not None:
            text += f"\n  smallest failing input: {self.shrunk.name}: {self.shrunk_detail}"
            if self.shrunk.n <= SHOWN_KEYS:
                label = "counts" if self.shrunk.scan_counts else "keys"
                text += f"\n  {label} = {list(self.shrunk.literal)}"
        if self.alone:
            text += f"\n  alone: {self.alone}"
        if self.reproducer:
            text += f"\n  reproduce: {self.reproducer}"
        return text


_CASE_SUFFIX = re.compile(r"\s*\[case [^\]]*\]\s*$")
_NUMBER = re.compile(r"-?\b\d+(\.\d+)?\b")
_COUNTED_PLURAL = re.compile(r"(\bN [a-z-]+?)s\b")


def symptom_of(detail: str, blank: bool = True, singular: bool = True) -> str:
    """What went wrong, without the values (blank=False: with them, for a
    heading): failures with one symptom are one group in the verdict ("bins
    differ", "hang", "crash: SIGABRT", "crash: exit code 3"). singular: a
    counted noun in the singular, so that "1 key" and "2 keys" are one group
    (False for a heading, which reads "lost updates")."""
    text = _CASE_SUFFIX.sub("", detail)
    head, _, rest = text.partition(": ")
    if head == "hang":
        return head
    if head == "crash" and rest:  # the signal or the exit code, not the sentence
        ended = re.search(r"killed by (SIG[A-Z]+)|(exit code -?\d+|exit code None)", rest)
        return f"crash: {ended.group(1) or ended.group(2)}" if ended else head
    if head == "raised on valid input" and rest:
        # name the exception, not its message
        word = re.match(r"[A-Za-z_.]+", rest)
        head += f": {word.group(0) if word else ''}"
    if blank:
        head = _NUMBER.sub("N", head)  # before any cut: values never split a group
        if singular:
            head = _COUNTED_PLURAL.sub(r"\1", head)
    head = head.strip()
    if not rest and len(head) > SYMPTOM_WIDTH:
        clause = head.rfind("; ", 0, SYMPTOM_WIDTH + 1)  # whole clauses where they fit
        head = (head[:clause] if clause > 0
                else head[:head.rfind(" ", 0, SYMPTOM_WIDTH)].rstrip(" ,;:(") + " ...")
    return head


@dataclass
class CheckReport:
    """The verdict of ``check``: every case's cell and every failure.

    ``passed`` is True when no case FAILs. ``cells`` holds (case, cell,
    launch) for every case run, each cell's ``status`` one of ``pass``,
    ``FAIL``, ``finding`` or ``skip`` with its ``detail``; ``counts()`` counts
    them. ``failures`` holds a `Failure` per failing case, ``groups()`` the
    same by symptom, largest group first, each with the input the verdict
    shows first. ``str(report)`` is the summary line and the first group's
    first failure; ``to_json()`` is everything, as the ``--json`` report.
    """

    implementation: str
    kind: str
    cells: list[tuple[Case, Cell, str]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    isolated: bool = False
    note: str = ""  # how it was run, where that is not the default (in-process, why)
    printed_lines: int = 0  # lines it printed to stdout or stderr, kept out of the verdict

    @property
    def passed(self) -> bool:
        return not self.failures

    def counts(self) -> dict[str, int]:
        statuses = [cell.status for _, cell, _ in self.cells]
        return {s: statuses.count(s) for s in ("pass", "FAIL", "finding", "skip")}

    def groups(self) -> list[list[Failure]]:
        """The failures by symptom, the group of the most cases first (the
        main bug, where a group of one case is often an edge of it), then of
        the smallest failing input; each group's smallest failure first."""
        by_symptom: dict[str, list[Failure]] = {}
        for failure in self.failures:
            by_symptom.setdefault(failure.symptom, []).append(failure)
        groups = [sorted(g, key=_smallness) for g in by_symptom.values()]
        return sorted(groups, key=lambda g: (-len(g), _smallness(g[0])))

    def findings(self) -> dict[str, list[tuple[Case, Cell]]]:
        """The findings (a rule that holds, with something to report) by symptom."""
        found: dict[str, list[tuple[Case, Cell]]] = {}
        for case, cell, _ in self.cells:
            if cell.status == "finding":
                found.setdefault(symptom_of(cell.detail), []).append((case, cell))
        return found

    def summary(self) -> str:
        """One line: the verdict, what was judged, the cells by status."""
        counts = self.counts()
        verdict = "PASS" if self.passed else "FAIL"
        cells = ", ".join(f"{n} {s}{'s' if s in ('finding', 'skip') and n != 1 else ''}"
                          for s, n in counts.items() if n or s in ("pass", "FAIL"))
        groups = len(self.groups())
        kinds = f" ({groups} kind{'s' if groups != 1 else ''} of failure)" if groups else ""
        return (f"{verdict}: {self.implementation} as {self.kind}: {cells}{kinds} "
                f"in {self.seconds:.1f} s")

    def __str__(self) -> str:
        if self.passed:
            return self.summary()
        first = self.groups()[0][0]
        return f"{self.summary()}\n{first}"

    def to_json(self) -> dict:
        """Everything, as strict JSON takes it (docs/check.md, "The JSON
        report"): a NaN or infinite value is the string "nan", "inf" or "-inf"."""
        heads = {id(group[0]): number for number, group in enumerate(self.groups(), 1)}
        return json_safe({"implementation": self.implementation, "kind": self.kind,
                "passed": self.passed, "counts": self.counts(),
                "seconds": round(self.seconds, 2), "isolated": self.isolated,
                "note": self.note, "printed_lines": self.printed_lines,
                "failures": [{"case": f.case.name, "geometry": f.geometry, "launch": f.launch,
                              "detail": f.detail,
                              "symptom": f.symptom,
                              "shrunk": f.shrunk is not None,
                              "shrunk_detail": f.shrunk_detail or None,
                              "input": input_json(f.smallest),
                              "differences": _differences_json(f.figures),
                              "figures": {k: v for k, v in (f.figures or {}).items()
                                          if k != "differences"} or None,
                              "reproducer": f.reproducer,
                              "python_reproducer": f.python_reproducer,
                              "printed": f.printed or None,
                              "alone": f.alone or None,
                              "group": heads.get(id(f))}
                             for f in self.failures],
                "cells": [{"case": c.name, "status": cell.status, "detail": cell.detail,
                           "geometry": g} for c, cell, g in self.cells]})


# Inputs of at most this many values are written out in the JSON report; a
# larger one is named by its case (``--case`` runs it again).
JSON_VALUES = 4096


def input_json(case) -> dict:
    """The input a failure shows, as data: its values where there are at most
    JSON_VALUES of them, else the matrix case that makes them."""
    if isinstance(case, BinCase):
        data = {"samples_dtype": case.dtype,
                "bins": case.bins if isinstance(case.bins, int) else case.bins.tolist(),
                "range": None if case.range is None else list(case.range),
                "right_closed_last": case.right_closed_last}
        if case.n <= JSON_VALUES:
            data["samples"] = case.samples.tolist()
    elif isinstance(case, WeightedCase):
        data = {"keys_dtype": case.keys.dtype.name, "weights_dtype": case.weights.dtype.name,
                "num_bins": case.num_bins}
        if case.n <= JSON_VALUES:
            data.update(keys=case.keys.tolist(), weights=case.weights.tolist())
    else:
        label = "counts" if case.scan_counts else "keys"
        data = {f"{label}_dtype": case.dtype}
        if not (case.scan_counts or case.full_width):
            data["num_bins"] = case.num_bins
        if case.n <= JSON_VALUES:
            data[label] = (list(case.literal) if case.literal is not None
                           else case.keys().tolist())
    data["n"] = case.n  # (values past JSON_VALUES are not written out)
    written_out = isinstance(case, Case) and case.literal is not None
    if case.name != UNNAMED and not written_out:
        data["case"] = case.name
    return data


def _differences_json(figures: dict | None) -> list[dict] | None:
    """A rule's first differences as labelled records."""
    differences = (figures or {}).get("differences")
    if not differences:
        return None
    what, bounds = figures.get("what", "bin"), figures.get("bin_edges", {})
    return [{what: i, "expected": want, "got": got,
             **({"edges": bounds[str(i)][:2], "high_edge_in_bin": bounds[str(i)][2]}
                if str(i) in bounds else {})}
            for i, got, want in differences]


def json_safe(value):
    """value with every float NaN or infinity written as the string "nan",
    "inf" or "-inf" and NumPy scalars as Python's, so that strict JSON
    (json.dump(..., allow_nan=False)) takes it."""
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    return value


def _smallness(failure: Failure) -> tuple:
    """How small a failure's input is, for choosing the one a group shows: a
    non-empty one before an empty one (which shows less of what differs),
    then its length, the plainer dtype, the fewer bins, the smaller
    values (keys = [1] over [66887], float64 samples near 1 over uint64
    samples past 2^63). A binning input of ordinary numbers (no -0.0, no
    infinity or NaN, magnitudes between 1e-6 and 1e9, in its samples, edges
    and range) is shown before an odd one of as few samples: [1.0] over 0
    and 1e-300 over 1e300, [-0.0] between edges -1.0 and -0.0), whatever
    their dtypes."""
    case = failure.smallest
    size = ((case.num_bins, case.n) if failure.kind == "scan" and not case.scan_counts
            else (case.n, case.num_bins))  # the scan's input: K counts
    # a scan's input is counts, whatever dtype of keys made them
    plain = 0 if failure.kind == "scan" else _PLAIN_DTYPES.get(case.dtype, 2)
    if failure.kind in BINNING_KINDS:  # few samples either way: float64 ones read best
        return (size[0] == 0, odd_numbers(case), plain, size[0], size[1], _magnitude(case))
    return (size[0] == 0, size[0], plain, size[1], _magnitude(case))


_PLAIN_DTYPES = {"int32": 0, "float64": 0, "int64": 1, "float32": 1}


def _magnitude(case) -> float:
    """The largest magnitude among a short input's written-out values (0 for
    an input generated from its case name, or too long to write out)."""
    values = getattr(case, "samples", None)
    if values is None:
        values = getattr(case, "literal", None) or ()
    if not 0 < len(values) <= SHOWN_KEYS:
        return 0.0
    with np.errstate(all="ignore"):
        magnitudes = np.abs(np.asarray(values).astype(np.float64))
    return float("inf") if np.isnan(magnitudes).any() else float(magnitudes.max())


def odd_numbers(case, look_through: bool = False) -> bool:
    """Whether a binning input's samples, edges or range hold a -0.0, an
    infinity, a NaN, or a nonzero magnitude outside [1e-6, 1e9] (an input of
    more than JSON_VALUES samples counts as odd unless ``look_through``)."""
    if case.n > JSON_VALUES and not look_through:
        return True
    parts = [np.asarray(case.samples, dtype=np.float64)]
    if not isinstance(case.bins, int):
        parts.append(np.asarray(case.bins, dtype=np.float64))
    if case.range is not None:
        parts.append(np.asarray(case.range, dtype=np.float64))
    with np.errstate(all="ignore"):
        for values in parts:
            magnitudes = np.abs(values)
            if (not np.isfinite(values).all() or (np.signbit(values) & (values == 0)).any()
                    or ((magnitudes != 0) & ((magnitudes < 1e-6) | (magnitudes > 1e9))).any()):
                return True
    return False
