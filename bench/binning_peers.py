"""Where histogram libraries put real-valued samples, judged against two rules.

numpy's rule: the counts ``np.histogram(samples, bins, range)`` gives. A
sample x is in bin i when ``edges[i] <= x < edges[i + 1]``, the last bin
closed, against the edges numpy computes (``np.linspace`` in the dtype NEP 50
promotion picks); numpy is exact against those edges, not against the range
the user wrote.

The exact rule: each sample placed by exact rational comparison with the
exact even edges ``lo + i * (hi - lo) / bins``, computed as fractions from the
range bounds as the floats they are (0.9 is 0.90000000000000002220...), the
last bin closed; explicit edges are taken as their exact values. This is what
"10 even bins on (0.9, 1.1)" means once the bounds are floats, with no
rounding anywhere after that.

Each available peer runs on every case: the trap inputs built here, then the
named cases of histkit.conformance.binning_cases when that module exists.
Where a peer's counts differ from a rule's, the case is shrunk to the single
sample that shows it (halving the samples: counts add up sample by sample),
and the smallest such input per peer, rule and kind of difference is shrunk
further to the fewest bins that still show it. A peer that is missing, or
fails on one sample in two bins, is skipped with the reason.

    python bench/binning_peers.py [--json PATH [--merge]] [--peers NAME,...]
                                  [--cases traps|conformance|all] [--no-fewer-bins]

--peers keeps the peers whose name contains one of the given substrings
(case-insensitive), e.g. ``--peers cub,cupy``; --merge adds them to the
results already in --json. Each peer runs in a child
process of its own: one that crashes the interpreter is reported with the
smallest input that crashes it, and judged on the other cases.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.abc
import importlib.util
import json
import pickle
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np

from histkit.bench.common import short_commit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its helpers, beside it
from _binning_peer_calls import Job, NotApplicable, Peer, _host, all_peers, ready  # noqa: E402
from _binning_rules import (  # noqa: E402
    _quiet,
    builtin_range,
    exact_edges,
    numpy_rule,
    numpy_span,
    rule_counts,
)

ROOT = Path(__file__).resolve().parents[1]
RULES = ("numpy", "exact")
RULE_NAMES = {"numpy": "numpy's rule", "exact": "exact rule"}
# Bin counts tried, smallest first, when shrinking the smallest input of each
# kind of difference: a few, because each new count can cost a GPU peer a compile.
FEWER_BINS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 16)
SHRUNK_PER_KIND = 3
# Inputs longer than this are described by their size in the results.
LISTED = 8
# A peer that crashes its process is judged again without the case, this often.
MAX_CRASHES = 10
PROBE_SECONDS = 300  # one call in a fresh process, a GPU peer's compile included


# ---------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """One call of np.histogram(samples, bins, range), under a convention."""

    name: str
    samples: np.ndarray
    bins: object  # an int (even bins) or a 1-d array of edges
    range: tuple | None  # as np.histogram takes it
    right_closed_last: bool = True  # False: CUB's convention, every bin half-open
    note: str = ""
    source: str = "traps"

    @property
    def even(self) -> bool:
        return np.ndim(self.bins) == 0


def _around(values, dtype) -> np.ndarray:
    """Each value cast to dtype, and one ulp below and above it there."""
    on = np.asarray(values, dtype=np.float64).astype(dtype)
    with _quiet():
        return np.unique(np.concatenate([on, np.nextafter(on, dtype.type(-np.inf)),
                                         np.nextafter(on, dtype.type(np.inf))]))


def edge_neighbours(dtype, bins: int, lo: float, hi: float) -> np.ndarray:
    """Samples of dtype on and one ulp around numpy's edges and the exact edges
    (each rounded to dtype), so a peer that parts from either rule shows it."""
    dtype = np.dtype(dtype)
    with _quiet():
        numpy_edges = np.histogram_bin_edges(np.zeros(0, dtype), bins, (lo, hi))
    exact = [float(e) for e in exact_edges(bins, (lo, hi))]
    samples = np.concatenate([_around(numpy_edges, dtype), _around(exact, dtype)])
    return np.unique(samples[np.isfinite(samples)])


def _decimals(first: str, last: str, step: str) -> list[float]:
    """The floats nearest the decimals first, first + step, ..., last."""
    value, out = Decimal(first), []
    while value <= Decimal(last):
        out.append(float(value))
        value += Decimal(step)
    return out


def trap_cases() -> list[Case]:
    """Small inputs where binning goes wrong: published reports, edges and their
    ulp neighbours, float32 samples under a float64 range, huge and subnormal
    spans, the maximum on hi, one ulp under hi and under lo, integers past 2^53."""
    f32, f64 = np.float32, np.float64
    cases = [
        Case("fast-histogram-45", np.arange(127.0), 126, (0.0, 126.0),
             note="(x - lo) * (1 / (hi - lo)) * bins puts 33 into bin 32"),
        Case("fast-histogram-63", np.array(_decimals("0.9", "1.1", "0.01")), 10, (0.9, 1.1),
             note="the decimals 0.90 .. 1.10; 1.0 reported in bin 4"),
        Case("fast-histogram-63/float32", np.array(_decimals("0.9", "1.1", "0.01"), f32), 10,
             (0.9, 1.1), note="the same decimals as float32 samples, a Python-float range"),
        Case("max-equals-hi", np.array([0.1, 0.4, 0.7]), 6, (0.1, 0.7),
             note="the maximum is hi: in the last bin"),
        Case("max-equals-hi/float32", np.array([0.1, 0.4, 0.7], f32), 6, (0.1, 0.7),
             note="float32 samples: numpy's edges are float32(0.1) .. float32(0.7)"),
        Case("float32-above-float64-hi", np.array([0.1, 0.2, 0.3], f32), 2, (0.1, 0.3),
             note="float32(0.3) > 0.3: outside the exact range, on numpy's float32 top edge"),
        Case("float32-below-float64-lo", np.array([0.7, 0.8, 0.9], f32), 2, (0.7, 0.9),
             note="float32(0.7) < 0.7: outside the exact range, on numpy's float32 first edge"),
        Case("int-samples-non-integer-hi", np.arange(5, dtype=np.int64), 2, (0.0, 2.5),
             note="integer samples, hi not an integer: 3 is past hi"),
        Case("int64-past-2pow53", np.array([2**54 - 1, 2**54, 2**54 + 1], np.int64), 2,
             (0.0, 2.0**55), note="2**54 - 1 rounds onto the edge 2**54 when cast to float64"),
        Case("nan-and-infinities", np.array([np.nan, -np.inf, np.inf, 0.0, 0.5, 1.0]), 2,
             (0.0, 1.0), note="NaN never counted, infinities outside"),
        Case("minus-zero-at-lo", np.array([-0.0, 0.0, 5e-324]), 2, (0.0, 1.0),
             note="-0.0 == 0.0 == lo"),
        Case("huge-span-overflows", np.array([-1e308, -1.0, 0.0, 1.0, 1e308]), 4,
             (-1e308, 1e308), note="hi - lo overflows to inf (numpy raises)"),
    ]
    for lo, hi, bins in ((0.0, 1.0, 3), (0.0, 1.0, 7), (0.9, 1.1, 10), (0.0, 126.0, 126),
                         (0.0, 1.0, 1000), (-1.0, 0.3, 49)):
        top = np.nextafter(hi, -np.inf)
        cases.append(Case(f"ulp-under-hi/bins={bins}/range={lo}..{hi}", np.array([top, hi]), bins,
                          (lo, hi), note="one ulp under hi: the estimate can round up to bins"))
    for lo, hi, bins in ((0.0, 1.0, 10), (1.0, 2.0, 10), (0.9, 1.1, 10)):
        below = np.nextafter(lo, -np.inf)
        cases.append(Case(f"ulp-under-lo/range={lo}..{hi}", np.array([below, lo]), bins,
                          (lo, hi), note="one ulp under lo: truncating a small negative gives 0"))
    neighbours = {
        "float64": [(0.0, 1.0, 10), (0.9, 1.1, 10), (0.0, 126.0, 126), (0.1, 0.7, 6),
                    (-0.3, 0.3, 6), (-1.0, 1.0, 3), (1e-3, 1e3, 7), (0.0, 0.1, 1000),
                    (0.0, 1.7e308, 3), (-8e307, 8e307, 4), (0.0, 5e-323, 10),
                    (3.26e-322, 4.056e-321, 340), (1e15, 1e15 + 1, 8)],
        "float32": [(0.9, 1.1, 10), (0.1, 0.3, 20), (0.0, 0.1, 10), (0.0, 1e-44, 7),
                    (1e7, 1e7 + 8, 8), (-3.7, 12.9, 1000)],
        "float16": [(0.0, 1.0, 10), (0.9, 1.1, 10)],
    }
    for dtype, spans in neighbours.items():
        for lo, hi, bins in spans:
            cases.append(Case(f"edges/{dtype}/bins={bins}/range={lo!r}..{hi!r}",
                              edge_neighbours(dtype, bins, lo, hi), bins, (lo, hi),
                              note="on and one ulp around numpy's and the exact edges"))
    rng = np.random.default_rng(20610)
    cases.append(Case("uniform/float32/bins=1000", rng.random(10_000).astype(f32), 1000,
                      (0.0, 1.0), note="seeded uniform float32 samples"))
    cases.append(Case("uniform/float64/bins=10", 0.9 + 0.2 * rng.random(10_000), 10, (0.9, 1.1),
                      note="seeded uniform float64 samples"))
    edges = np.histogram_bin_edges(np.zeros(0), 10, (0.9, 1.1))
    cases.append(Case("explicit/numpy-edges", edge_neighbours(f64, 10, 0.9, 1.1), edges, None,
                      note="numpy's edges of (0.9, 1.1) given as an array"))
    return cases


class _CheckoutModules(importlib.abc.MetaPathFinder):
    """Finds histkit.conformance modules the installed histkit lacks in this
    checkout's src/ (they are plain Python), after every other finder."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith("histkit.conformance."):
            return None
        source = ROOT / "src" / (name.replace(".", "/") + ".py")
        return importlib.util.spec_from_file_location(name, source) if source.exists() else None


def _load_binning_cases():
    """histkit.conformance.binning_cases, from the installed histkit or else from
    this checkout: (module, where from), or (None, why not)."""
    name = "histkit.conformance.binning_cases"
    try:
        return importlib.import_module(name), "the installed histkit"
    except ImportError:
        pass
    if not any(isinstance(f, _CheckoutModules) for f in sys.meta_path):
        sys.meta_path.append(_CheckoutModules())
    try:
        return importlib.import_module(name), "this checkout's src/ (not in the installed histkit)"
    except Exception as error:
        return None, f"{name} does not import: {type(error).__name__}: {error}"


def conformance_cases() -> tuple[list[Case], str]:
    """The named cases of histkit.conformance.binning_cases (quick), and where from."""
    module, where = _load_binning_cases()
    if module is None:
        return [], where
    try:
        made = module.bin_cases(quick=True)
    except Exception as error:
        return [], f"bin_cases(quick=True) raised {type(error).__name__}: {error}"
    return [Case(c.name, c.samples, c.bins, c.range, c.right_closed_last, c.note, "conformance")
            for c in made], where


# ---------------------------------------------------------------- judging


def _num(x):
    """A sample or bound for the results: ints as ints, floats as their shortest repr
    (exact: every float16/32/64 value round-trips through a float64 repr)."""
    x = x.item() if isinstance(x, np.generic) else x
    return x if isinstance(x, int) else repr(float(x))


def describe(samples, bins, range, closed_last: bool = True) -> dict:
    samples = np.asarray(samples).reshape(-1)
    out = {"samples": [_num(v) for v in samples] if len(samples) <= LISTED else
           f"{len(samples)} samples", "dtype": str(samples.dtype)}
    if np.ndim(bins) == 0:
        out["bins"] = int(bins)
        out["range"] = None if range is None else [_num(v) for v in range]
    else:
        edges = np.asarray(bins).reshape(-1)
        out["edges"] = [_num(v) for v in edges] if len(edges) <= LISTED + 1 else (
            f"{len(edges)} edges of {edges.dtype}")
    if not closed_last:
        out["right_closed_last"] = False
    return out


def place(counts) -> str:
    """Where the counts put the samples: 'bin 4', 'no bin', or the nonzero bins."""
    counts = np.asarray(counts)
    nonzero = np.flatnonzero(counts)
    if len(nonzero) == 0:
        return "no bin"
    if len(nonzero) == 1 and counts[nonzero[0]] == 1:
        return f"bin {int(nonzero[0])}"
    shown = ", ".join(f"{int(i)}: {int(counts[i])}" for i in nonzero[:6])
    return f"{len(counts)} bins, {{{shown}{', ...' if len(nonzero) > 6 else ''}}}"


def kind_of(want, got, other) -> str:
    """How got differs from want; other is the rule's count under the other convention."""
    if len(got) != len(want):
        return "number of bins"
    if other is not None and np.array_equal(got, other):
        return "top edge"
    if want.sum() == 1 and got.sum() == 1:
        return "neighbour bin" if abs(int(np.argmax(got)) - int(np.argmax(want))) == 1 else (
            "other bin")
    if want.sum() == 1 and got.sum() == 0:
        return "dropped"
    if want.sum() == 0 and got.sum() == 1:
        return "counted outside the range"
    return "counts differ"


class Judge:
    """Runs one peer against one rule, shrinking the inputs where they differ."""

    def __init__(self, peer: Peer, rule: str):
        self.peer, self.rule = peer, rule

    def counts(self, samples, bins, range, span, closed_last):
        with _quiet():
            return _host(self.peer.call(Job(samples, bins, range, span, closed_last)))

    def want(self, samples, bins, range, closed_last):
        return rule_counts(self.rule, samples, bins, range, closed_last)

    def differs(self, samples, bins, range, span, closed_last) -> bool:
        """The peer's counts are not the rule's (a peer or rule that raises: not shown)."""
        try:
            want = self.want(samples, bins, range, closed_last)
            got = self.counts(samples, bins, range, span, closed_last)
        except Exception:
            return False
        return len(got) != len(want) or not np.array_equal(got, want)

    def shrink(self, samples, bins, range, span, closed_last):
        """The fewest samples (halving, then one by one) that still differ."""
        def differs(part):
            return self.differs(part, bins, range, span, closed_last)

        while len(samples) > 1:
            half = len(samples) // 2
            for part in (samples[:half], samples[half:]):
                if differs(part):
                    samples = part
                    break
            else:
                break
        if len(samples) > 2 and len(samples) <= 64:  # the counts did not add up by halves
            for i in builtin_range(len(samples)):
                if differs(samples[i:i + 1]):
                    return samples[i:i + 1]
        return samples

    def record(self, case: Case, samples, bins, range, span) -> dict:
        """The input and what the rule and the peer give for it."""
        closed = case.right_closed_last
        want = self.want(samples, bins, range, closed)
        got = self.counts(samples, bins, range, span, closed)
        try:
            other = self.want(samples, bins, range, not closed)
        except Exception:
            other = None
        return {"case": case.name, "kind": kind_of(want, got, other),
                "input": describe(samples, bins, range, closed),
                "expected": place(want), "got": place(got)}

    def smallest(self, case: Case, span) -> dict:
        """The case shrunk to the fewest samples that differ. range=None is replaced by
        numpy's span first, when the difference survives it (a subset has another
        min and max)."""
        samples, bins, range, closed = case.samples, case.bins, case.range, case.right_closed_last
        if range is None and case.even and self.differs(samples, bins, span, span, closed):
            range = span
        if range is not None or not case.even:
            samples = self.shrink(np.asarray(samples).reshape(-1), bins, range, span, closed)
        return self.record(case, samples, bins, range, span)

    def fewer_bins(self, found: dict, case: Case) -> dict:
        """found's input with the fewest even bins that still differ the same way."""
        if "bins" not in found["input"] or found["input"].get("range") is None:
            return found
        samples = np.asarray(case.samples)
        listed = found["input"]["samples"]
        if not isinstance(listed, list):
            return found
        samples = np.array([float(v) if isinstance(v, str) else v for v in listed],
                           dtype=samples.dtype)
        range = case.range if case.range is not None else tuple(
            float(v) for v in found["input"]["range"])
        for bins in FEWER_BINS:
            if bins >= found["input"]["bins"]:
                break
            try:
                span = range
                if not self.differs(samples, bins, range, span, case.right_closed_last):
                    continue
                smaller = self.record(case, samples, bins, range, span)
            except Exception:
                continue
            if smaller["kind"] == found["kind"]:
                return smaller
        return found


def judge(peer: Peer, cases: list[Case], shrink_bins: bool = True,
          on_case: Callable[[Case], None] | None = None) -> dict:
    """One peer against both rules over the cases.

    Returns {"rules": {rule: {"judged", "agree", "differ": [record, ...],
    "smallest": {kind: record}}}, "raised": [...], "not_applicable": n}. A
    case is judged against a rule where the rule gives counts; a peer that
    raises there is listed under "raised". Cases of CUB's convention
    (right_closed_last=False) are judged only for peers that take the
    convention as a parameter; the others are called with their defaults.
    """
    result = {"rules": {rule: {"judged": 0, "agree": 0, "differ": [], "smallest": {}}
                        for rule in RULES},
              "raised": [], "not_applicable": 0}
    judges = {rule: Judge(peer, rule) for rule in RULES}
    for case in cases:
        if on_case is not None:
            on_case(case)
        if not case.right_closed_last and not peer.takes_convention:
            result["not_applicable"] += 1
            continue
        span = None
        if case.even:
            span = tuple(case.range) if case.range is not None else None
            if span is None:
                try:
                    span = numpy_span(case.samples, case.bins)
                except Exception:
                    span = None
        wants = {}
        for rule in RULES:
            try:
                wants[rule] = rule_counts(rule, case.samples, case.bins, case.range,
                                          case.right_closed_last)
            except Exception:
                continue  # the rule has no counts here: nothing to judge against
        if not wants:
            continue
        try:
            with _quiet():
                got = _host(peer.call(Job(case.samples, case.bins, case.range, span,
                                          case.right_closed_last)))
        except NotApplicable:
            result["not_applicable"] += 1
            continue
        except Exception as error:
            result["raised"].append({"case": case.name,
                                     "error": f"{type(error).__name__}: {error}"[:300]})
            continue
        for rule, want in wants.items():
            tally = result["rules"][rule]
            tally["judged"] += 1
            if len(got) == len(want) and np.array_equal(got, want):
                tally["agree"] += 1
                continue
            try:
                found = judges[rule].smallest(case, span)
            except Exception as error:
                found = {"case": case.name, "kind": "counts differ",
                         "input": describe(case.samples, case.bins, case.range),
                         "expected": place(want), "got": place(got),
                         "shrink_failed": f"{type(error).__name__}: {error}"[:300]}
            tally["differ"].append(found)
    by_name = {case.name: case for case in cases}
    order = {case.name: i for i, case in enumerate(cases)}
    for rule in RULES:
        tally = result["rules"][rule]
        kinds: dict[str, list] = {}
        for found in tally["differ"]:
            kinds.setdefault(found["kind"], []).append(found)
        for kind, found in kinds.items():
            # fewer bins are tried on a few inputs only (each new count can cost a
            # GPU peer a compile): the first traps, which lead with the published
            # reports, and the smallest of the other cases; on a tie the earlier wins
            traps = [f for f in found if by_name[f["case"]].source == "traps"]
            others = sorted((f for f in found if by_name[f["case"]].source != "traps"),
                            key=lambda f: (_size(f), order[f["case"]]))
            found = traps[:SHRUNK_PER_KIND] + others[:SHRUNK_PER_KIND]
            if shrink_bins:
                found = [judges[rule].fewer_bins(f, by_name[f["case"]]) for f in found]
            tally["smallest"][kind] = min(found, key=lambda f: (_size(f), order[f["case"]]))
        tally["kinds"] = {kind: len(found) for kind, found in sorted(
            kinds.items(), key=lambda kv: (-len(kv[1]), kv[0]))}
    return result


def one_line(found: dict) -> str:
    """A case's difference as one line for the results: the case, its shrunk samples
    (its own bins and range), the rule's bins and the peer's, the kind."""
    samples = found["input"]["samples"]
    shown = f"[{', '.join(str(v) for v in samples)}]" if isinstance(samples, list) else samples
    return (f"{found['case']}: {shown}: expected {found['expected']}, got {found['got']} "
            f"({found['kind']})")


def _size(found: dict) -> tuple:
    """Orders inputs: fewer samples, then fewer bins, then edges after even bins."""
    given = found["input"]
    samples = given["samples"]
    n = len(samples) if isinstance(samples, list) else int(samples.split()[0])
    bins = given.get("bins", 1 << 62)
    return n, bins


def verdict(tally: dict) -> str:
    """'agrees (N cases)' or 'differs in K of N cases: kinds'."""
    judged, kinds = tally["judged"], tally.get("kinds", {})
    differ = sum(kinds.values())
    if judged == 0:
        return "not judged"
    if differ == 0:
        return f"agrees ({_cases_count(judged)})"
    listed = ", ".join(f"{kind} {n}" for kind, n in kinds.items())
    return f"differs in {differ} of {judged} cases ({listed})"


def _cases_count(n: int) -> str:
    return f"{n} case" + ("s" if n != 1 else "")


def failures(peer: dict) -> str:
    """'crashes on N cases (SIGSEGV), raises on M' or '-'."""
    parts = []
    if peer.get("crashed"):
        how = sorted({c["crash"] for c in peer["crashed"]})
        parts.append(f"crashes on {_cases_count(len(peer['crashed']))} ({', '.join(how)})")
    if peer["raised"]:
        parts.append(f"raises on {_cases_count(len(peer['raised']))}")
    return ", ".join(parts) or "-"


def show_input(found: dict) -> str:
    return (f"{show_given(found['input'])}: expected {found['expected']}, got {found['got']} "
            f"(case {found['case']})")


def show_given(given: dict) -> str:
    samples = given["samples"]
    text = (f"[{', '.join(str(v) for v in samples)}]" if isinstance(samples, list) else samples)
    text += f" {given['dtype']}"
    if "bins" in given:
        lo_hi = given["range"]
        count = f"{given['bins']} bin" + ("s" if given["bins"] != 1 else "")
        text += f", {count} on " + (f"({lo_hi[0]}, {lo_hi[1]})" if lo_hi else
                                    "numpy's min..max")
    else:
        text += f", edges {given['edges']}"
    if given.get("right_closed_last") is False:
        text += ", right_closed_last=False"
    return text


def report(results: dict) -> str:
    """The table, then each peer's smallest inputs per rule and kind."""
    lines = ["| peer | where | numpy's rule | exact rule | fails |",
             "| --- | --- | --- | --- | --- |"]
    for peer in results["peers"]:
        if peer["status"] != "ran":
            lines.append(f"| {peer['name']} | {peer['where']} | skipped: {peer['reason']} | | |")
            continue
        rules = peer["rules"]
        lines.append(f"| {peer['name']} | {peer['where']} | {verdict(rules['numpy'])} | "
                     f"{verdict(rules['exact'])} | {failures(peer)} |")
    for peer in results["peers"]:
        if peer["status"] != "ran":
            continue
        lines.append("")
        lines.append(f"{peer['name']} ({peer['version']})" +
                     (f": {peer['note']}" if peer["note"] else ""))
        for rule in RULES:
            for kind, found in sorted(peer["rules"][rule]["smallest"].items()):
                lines.append(f"  {RULE_NAMES[rule]}, {kind}: {show_input(found)}")
        for crash in peer.get("crashed", []):
            lines.append(f"  crashes ({crash['crash']}): {show_given(crash['input'])} "
                         f"(case {crash['case']})")
        if peer["raised"]:
            first = peer["raised"][0]
            lines.append(f"  raised on {_cases_count(len(peer['raised']))}, e.g. {first['case']}: "
                         f"{first['error']}")
        if peer["not_applicable"]:
            lines.append(f"  {_cases_count(peer['not_applicable'])} not applicable (explicit "
                         f"edges, or CUB's convention for a call without the parameter)")
    return "\n".join(lines)


def judge_here(peer: Peer, cases: list[Case], shrink_bins: bool = True,
               on_case: Callable[[Case], None] | None = None) -> dict:
    """Set the peer up and judge it in this process: its results entry."""
    entry = {"name": peer.name, "where": peer.where, "note": peer.note}
    start = time.perf_counter()
    reason = ready(peer)
    if reason is not None:
        return {**entry, "status": "skipped", "reason": reason}
    entry.update(status="ran", version=peer.version,
                 **judge(peer, cases, shrink_bins=shrink_bins, on_case=on_case))
    entry["seconds"] = round(time.perf_counter() - start, 2)
    for tally in entry["rules"].values():  # every case's difference, one line each
        tally["differ"] = [one_line(found) for found in tally["differ"]]
    return entry


def _exit_status(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-code).name
    return f"exit status {code}"


def _child(*args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(Path(__file__).resolve()), *args],
                          capture_output=True, text=True, timeout=timeout)


def crashes(peer: Peer, job: Job, where: Path) -> str | None:
    """Whether the peer kills its process on this one call: the signal, or None."""
    where.write_bytes(pickle.dumps(job))
    done = _child("--probe", peer.name, "--input", str(where), timeout=PROBE_SECONDS)
    return None if done.returncode == 0 else _exit_status(done.returncode)


def shrink_crash(peer: Peer, case: Case, tmp: Path) -> dict:
    """The fewest samples (and bins) of the case that still crash the peer."""
    samples, bins, range = np.asarray(case.samples).reshape(-1), case.bins, case.range
    span = tuple(range) if range is not None else None
    if case.even and span is None:
        span = numpy_span(samples, bins)
    probe = tmp / "probe.pickle"

    def crash(part, bins=bins, range=range):
        return crashes(peer, Job(part, bins, range, span, case.right_closed_last), probe)

    how = crash(samples)
    if how is None:  # not reproduced alone (it crashed while shrinking some other input)
        return {"case": case.name, "crash": "not reproduced by the whole case alone",
                "input": describe(samples, bins, range, case.right_closed_last)}
    if range is None and case.even and crash(samples, range=span):
        range = span
    if range is not None or not case.even:
        while len(samples) > 1:
            half = len(samples) // 2
            for part in (samples[:half], samples[half:]):
                if crash(part, range=range):
                    samples = part
                    break
            else:
                break
    if case.even and range is not None:
        for fewer in FEWER_BINS:
            if fewer < bins and crash(samples, bins=fewer, range=range):
                bins = fewer
                break
    return {"case": case.name, "crash": crash(samples, bins=bins, range=range) or how,
            "input": describe(samples, bins, range, case.right_closed_last)}


def run_isolated(peers: list[Peer], cases: list[Case], shrink_bins: bool,
                 progress=print) -> list[dict]:
    """Each peer judged in a child process of its own, so a peer that crashes the
    interpreter (a segmentation fault in a C extension) is reported, with the
    smallest input that crashes it, and judged on the other cases."""
    by_name = {case.name: case for case in cases}
    out = []
    for peer in peers:
        crashed, skip = [], []
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            result, trail, given = tmp / "peer.json", tmp / "trail", tmp / "cases.pickle"
            given.write_bytes(pickle.dumps(cases))  # the same cases for every child
            while True:
                trail.write_text("")
                args = ["--child", peer.name, "--case-file", str(given), "--json", str(result),
                        "--trail", str(trail), *(["--no-fewer-bins"] if not shrink_bins else [])]
                for name in skip:
                    args += ["--skip", name]
                done = _child(*args)
                if done.returncode == 0:
                    entry = json.loads(result.read_text())
                    break
                last = trail.read_text().splitlines()
                if not last or len(crashed) >= MAX_CRASHES:
                    said = (done.stderr.strip().splitlines() or [""])[-1][:300]
                    entry = {"name": peer.name, "where": peer.where, "note": peer.note,
                             "status": "skipped",
                             "reason": f"its process ended ({_exit_status(done.returncode)}) "
                                       f"{'after ' + last[-1] if last else 'while setting up'}"
                                       f": {said}"}
                    break
                progress(f"{peer.name}: crashed ({_exit_status(done.returncode)}) on case "
                         f"{last[-1]}; shrinking it, then judging the other cases")
                crashed.append(shrink_crash(peer, by_name[last[-1]], tmp))
                skip.append(last[-1])
        entry["crashed"] = crashed
        progress(f"{peer.name}: " + (
            f"skipped: {entry['reason']}" if entry["status"] != "ran" else
            f"numpy's rule {verdict(entry['rules']['numpy'])}; exact rule "
            f"{verdict(entry['rules']['exact'])}; crashed on {len(crashed)} cases "
            f"[{entry['seconds']} s]"))
        out.append(entry)
    return out


def case_line(case: Case) -> str:
    """A case in one line: name, size, dtype, bins and range, convention, trap."""
    given = describe(case.samples, case.bins, case.range, case.right_closed_last)
    given["samples"] = f"{np.size(case.samples)} samples"
    return f"{case.source}/{case.name}: {show_given(given)}" + (
        f" ({case.note})" if case.note else "")


def _cases(case_set: str) -> tuple[list[Case], str | None]:
    cases, source = [], None
    if case_set in ("traps", "all"):
        cases += trap_cases()
    if case_set in ("conformance", "all"):
        named, source = conformance_cases()
        cases += named
    return cases, source


def _peer_named(name: str) -> Peer:
    (peer,) = [p for p in all_peers() if p.name == name]
    return peer


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--peers", default="", help="comma-separated name substrings")
    parser.add_argument("--cases", choices=("traps", "conformance", "all"), default="all")
    parser.add_argument("--no-fewer-bins", action="store_true",
                        help="keep each smallest input's bin count (saves GPU compiles)")
    parser.add_argument("--merge", action="store_true",
                        help="add these peers to the results already in --json (a run split "
                             "by --peers into several commands)")
    # how the script runs each peer in a child process of its own
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--trail", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--case-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--skip", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.probe:  # one call; only a crash exits non-zero
        peer = _peer_named(args.probe)
        job = pickle.loads(args.input.read_bytes())
        with contextlib.suppress(Exception), _quiet():
            peer.call, peer.version = peer.setup()
            _host(peer.call(job))
        return 0
    if args.child:
        skip = set(args.skip)
        trail = args.trail.open("a") if args.trail else None

        def on_case(case):
            if trail:  # written before the peer runs, so it survives a crash
                trail.write(case.name + "\n")
                trail.flush()

        cases = pickle.loads(args.case_file.read_bytes())
        entry = judge_here(_peer_named(args.child), [c for c in cases if c.name not in skip],
                           shrink_bins=not args.no_fewer_bins, on_case=on_case)
        args.json.write_text(json.dumps(entry))
        return 0

    cases, source = _cases(args.cases)
    if source is not None:
        print(f"histkit.conformance.binning_cases: from {source}")
    peers = all_peers()
    if args.peers:
        wanted = [w.strip().lower() for w in args.peers.split(",") if w.strip()]
        peers = [p for p in peers if any(w in p.name.lower() for w in wanted)]
    print(f"{len(cases)} cases, {len(peers)} peers", flush=True)

    def progress(line):
        print(line, flush=True)

    judged = run_isolated(peers, cases, not args.no_fewer_bins, progress)
    numpy_raises = []
    for case in cases:
        try:
            numpy_rule(case.samples, case.bins, case.range)
        except Exception as error:
            numpy_raises.append({"case": case.name, "error": f"{type(error).__name__}: {error}"})
    results = {
        "method": __doc__,
        "rules": {"numpy": "np.histogram's counts (numpy's edges, the last bin closed)",
                  "exact": "exact rational placement against lo + i * (hi - lo) / bins from "
                           "the float bounds (or the given edges), the last bin closed"},
        "python": platform.python_version(), "machine": platform.machine(),
        "numpy": np.__version__, "commit": short_commit(str(ROOT)) or None,
        "conformance_cases": source,
        "cases": [case_line(c) for c in cases],
        "numpy_raises": numpy_raises,
        "peers": judged,
    }
    if args.merge and args.json and args.json.exists():
        earlier = json.loads(args.json.read_text())
        ours = {peer["name"] for peer in judged}
        results["peers"] = [p for p in earlier["peers"] if p["name"] not in ours] + judged
        order = {peer.name: i for i, peer in enumerate(all_peers())}
        results["peers"].sort(key=lambda p: order.get(p["name"], len(order)))
    print()
    print(report(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
