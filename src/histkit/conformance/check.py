"""``histkit.conformance.check``: judge a user's histogram, scan or sort.

    report = check("my_hist.cu", "histogram")              # a CUDA C++ file
    report = check("mypkg.kernels:histogram", "histogram")  # a Python callable
    report = check("./kernels.py:histogram", "histogram")   # ... in a file
    report = check(my_function, "stable-sort")
    print(report)  # PASS or FAIL, with the first failure's reproducer

The cases are the conformance matrix's (quick by default); the rule is the
kind's (``histkit.gpu.registry.CHECK_KINDS``). Everything the user could have got
wrong in asking (a kind, keys of a float dtype, a callable of the wrong
signature, a missing framework) is a ``UsageError`` before any case runs.
The implementation runs in a worker process (``isolation.py``), so a crash
or a hang costs one cell. The smallest failing case is shrunk to a small
input that still fails; every failure gets a reproducer (``reproduce.py``)
that prints PASS once the bug is fixed.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass, field

import numpy as np

import histkit.conformance.check_binning as check_binning
import histkit.conformance.check_weighted as check_weighted
from histkit.conformance.cases import Case, cases_for
from histkit.conformance.checks import Cell
from histkit.conformance.foreign import (
    DEFAULT_ENTRIES,
    CudaFileImpl,
    PythonImpl,
    parse_kernel_spec,
)
from histkit.conformance.isolation import (
    AFTER_HANG_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    is_hang,
    like_any,
    load_callable_isolated,
)
from histkit.conformance.loading import (
    UsageError,
    check_inputs_available,
    check_signature,
    raised,
)
from histkit.conformance.reproduce import histkit_word
from histkit.gpu.errors import GpuUnavailableError
from histkit.gpu.registry import BINNING_KINDS, CHECK_KINDS, FULL_WIDTH_KINDS, WEIGHTED_KINDS

# A kernel that hangs this many times is not run on cases like those it hung
# on (each would cost a timeout); those cells are skips naming why. Its
# verdict is FAIL. A .cu kernel is not run on any further case.
MAX_HANGS = 2
# The same after this many faults (each costs a new worker process): a .cu
# kernel stops (a new worker starts CUDA again), a callable goes on with the
# cases unlike those it crashed on, where other bugs may show, until it has
# crashed MAX_CALLABLE_FAULTS times. The shrinker gives up after
# SHRINK_MAX_FAULTS of its own.
MAX_FAULTS = 5
MAX_CALLABLE_FAULTS = 40
SHRINK_MAX_FAULTS = 20
SHRINK_ATTEMPTS = 160
DELETE_MAX_N = 64  # inputs up to this long are also shrunk by deleting runs of keys inside
SHRINK_MAX_N = 1 << 22  # larger failing inputs are reported as they are
SHRUNK_GROUPS = 3  # the groups of failures whose smallest input is shrunk
# A shown input is called this many times in a new worker: a FAIL that the
# input alone does not repeat is state kept between calls, or chance.
ALONE_CALLS = 3
SYMPTOM_WIDTH = 60  # a symptom longer than this (a message with no "head: rest") is cut
SHOWN_KEYS = 64
DEFAULT_ARCH = "sm_90"
# The implementations built from a .cu file: compiled before any case, always
# judged in a worker process, on a GPU only.
FROM_SOURCE = (CudaFileImpl, check_binning.BinningCudaFile, check_weighted.WeightedCudaFile)


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
        if hasattr(self.case, "describe_input") and self.case.name == check_binning.UNNAMED:
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
    if isinstance(case, check_binning.BinCase):
        data = {"samples_dtype": case.dtype,
                "bins": case.bins if isinstance(case.bins, int) else case.bins.tolist(),
                "range": None if case.range is None else list(case.range),
                "right_closed_last": case.right_closed_last}
        if case.n <= JSON_VALUES:
            data["samples"] = case.samples.tolist()
    elif isinstance(case, check_weighted.WeightedCase):
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
    if case.name != check_binning.UNNAMED and not written_out:
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
    plain = _PLAIN_DTYPES.get(case.dtype, 2)
    if failure.kind in BINNING_KINDS:  # few samples either way: float64 ones read best
        return (size[0] == 0, _odd_numbers(case), plain, size[0], size[1], _magnitude(case))
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


def _odd_numbers(case, look_through: bool = False) -> bool:
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


def names_source(impl) -> bool:
    """Whether impl is, or names, a CUDA C++ file (``file.cu[:entry]``)."""
    if isinstance(impl, FROM_SOURCE):
        return True
    return isinstance(impl, str) and impl.split(":")[0].endswith((".cu", ".cuh"))


def make_impl(impl, kind: str, *, inputs: str = "auto", defines=None, block: int = 256,
              grid: int | None = None, count_bits: int = 32, warp_size: int = 32):
    """A CudaFileImpl for ``file.cu[:entry]``, a PythonImpl for anything callable.

    Raises
    ------
    UsageError
        An unknown kind, a .cu file of a kind the kernel ABI lacks, a callable
        that cannot be found, or one whose signature the kind cannot call.
    FileNotFoundError
        A .cu path that does not exist.
    TypeError
        `impl` is neither a path, a name nor a callable.
    """
    if kind not in CHECK_KINDS:
        raise UsageError(f"kind must be one of {', '.join(CHECK_KINDS)}; got {kind!r}")
    if isinstance(impl, (PythonImpl, *FROM_SOURCE)):
        return impl
    if kind in BINNING_KINDS:
        return check_binning.make_impl(impl, kind, inputs=inputs, defines=defines, block=block,
                                       grid=grid, count_bits=count_bits)
    if kind in WEIGHTED_KINDS:
        return check_weighted.make_impl(impl, inputs=inputs, defines=defines, block=block,
                                        grid=grid)
    if names_source(impl):
        if kind not in DEFAULT_ENTRIES:
            abi_kinds = ", ".join([*DEFAULT_ENTRIES, *BINNING_KINDS, *WEIGHTED_KINDS])
            raise UsageError(f"the kernel ABI has no {kind} kernels (CUDA files may be of "
                             f"kind {abi_kinds}); hand a {kind} as a Python callable that "
                             f"launches it")
        path, entries = parse_kernel_spec(impl, kind)
        return CudaFileImpl(path, kind, entries, tuple(sorted((defines or {}).items())), block,
                            grid, count_bits, warp_size)
    function = load_callable_isolated(impl) if isinstance(impl, str) else impl
    if not callable(function):
        raise TypeError(f"an implementation is a .cu path or a callable; {impl!r} is of "
                        f"type {type(function).__name__}")
    name = impl if isinstance(impl, str) else ""
    python = PythonImpl(function, kind, "numpy" if inputs == "auto" else inputs, warp_size,
                        block, grid, name=name)
    check_signature(function, kind, python.describe())
    return python


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


def reproducer(impl, kind: str, case: Case) -> str:
    """A command line that runs just this case (see reproduce.py)."""
    from histkit.conformance.reproduce import command_line

    return command_line(impl, kind, case)


def find_case(kind: str, name: str) -> Case:
    """The matrix case named `name` that judges `kind` (quick or full matrix,
    as a .cu kernel gets them: the widest set)."""
    if kind in BINNING_KINDS:
        return check_binning.find_case(kind, name)
    if kind in WEIGHTED_KINDS:
        return check_weighted.find_case(name)
    for case in cases_for(kind, quick=False, fenced=True, skewed=True):
        if case.name == name:
            return case
    raise UsageError(f"no {kind} case is named {name!r} (names are printed by "
                     f"histkit check -v and in its --json report)")


def validate_keys(keys, kind: str, num_bins: int | None) -> np.ndarray:
    """keys as an integer array, or a UsageError / TypeError naming the problem."""
    keys = np.asarray(keys)
    if keys.dtype.kind not in "iu":
        raise TypeError(f"keys must be integers (int8 ... uint64); got dtype {keys.dtype} "
                        f"(real-valued samples are binned, not checked as keys)")
    if keys.ndim != 1:
        raise UsageError(f"keys must be one-dimensional; got shape {keys.shape}")
    if kind == "scan":
        if keys.size and keys.min() < 0:
            raise UsageError(f"a scan's input is counts, which are >= 0; got {keys.min()}")
    elif kind not in FULL_WIDTH_KINDS and num_bins is None:
        raise UsageError("keys= needs num_bins=")
    return keys


def compile_only(impl: CudaFileImpl, dtype="int32", arch: str = DEFAULT_ARCH) -> str:
    """Compile impl's file as a kernel of its kind would be built, for `arch`;
    the entries it provides, or KernelCompileError with NVRTC's log. Needs
    NVRTC only, no GPU."""
    if isinstance(impl, check_binning.BinningCudaFile):
        return check_binning.compile_only(impl, arch)
    if isinstance(impl, check_weighted.WeightedCudaFile):
        return check_weighted.compile_only(impl, arch)
    from histkit.conformance.cuda_abi import COUNT_TYPES
    from histkit.gpu import compiler, contract
    from histkit.gpu.contract import KEY_C_TYPES

    count = COUNT_TYPES[impl.count_bits][0] if impl.kind not in ("sort", "stable-sort") \
        else "unsigned long long"
    defines = {"KEY_T": KEY_C_TYPES[np.dtype(dtype)], "COUNT_T": count,
               "WARP_SIZE": str(impl.warp_size), **dict(impl.defines)}
    cubin = compiler.compile_cubin(impl.path, contract.defines_for(impl.path, defines), arch)
    missing = [e for e in impl.entries if b"\x00" + e.encode() + b"\x00" not in cubin]
    if missing:
        raise UsageError(f"{impl.path} compiles for {arch} but has no entry "
                         f"{', '.join(missing)} (a kernel of kind {impl.kind} provides "
                         f"extern \"C\" __global__ {', '.join(impl.entries)})")
    return f"{impl.path} compiles for {arch} with entries {', '.join(impl.entries)}"


def check(impl, kind: str, *, quick: bool = True, inputs: str = "auto", cases=None,
          keys=None, num_bins: int | None = None, case: str | None = None,
          defines: dict | None = None, block: int = 256, grid: int | None = None,
          count_bits: int = 32, warp_size: int = 32, timeout: float | None = None,
          shrink_failures: bool = True, in_process: bool = False, progress=None,
          on_start=None, samples=None, bins=None, range=None, weights=None,
          worker=None) -> CheckReport:
    """Judge `impl` as an implementation of `kind` on the conformance cases.

    Parameters
    ----------
    impl : str or callable
        ``path/to/file.cu[:entry[,entry]]``, ``package.module:function``,
        ``path/to/file.py:function``, or a callable.
    kind : str
        The rule to judge by: one of ``histkit.gpu.registry.CHECK_KINDS``
        (``histkit check --help`` lists them with what a callable of each
        takes and returns).
    quick : bool
        The quick matrix (default) or the full one (2^28 and > 2^31 keys;
        for binning, 2^24 to 2^26 samples and 2^20 bins).
    inputs : {"auto", "numpy", "cupy", "torch"}
        The array kind a callable receives (auto: NumPy).
    cases, keys, num_bins, case
        Run these Cases, one input (``keys`` with ``num_bins``), or the
        matrix case named ``case``, instead of the matrix.
    samples, bins, range
        A binning kind's one input, as ``np.histogram`` takes it.
    weights
        A weighted histogram's weights for ``keys`` (with ``num_bins``).
    defines, block, grid, count_bits, warp_size
        How a .cu kernel is built and launched (see ``histkit check --help``);
        ``block`` and ``grid`` are also the geometry a privatized callable is
        told, ``warp_size`` a wave callable's wave width.
    timeout : float, optional
        Seconds a case may run before it counts as a hang (default 60; a
        second more per 2^23 keys of the case). A
        callable run in process cannot be stopped: no timeout with
        ``in_process=True``.
    shrink_failures : bool
        Shrink the smallest failing case to a minimal input.
    in_process : bool
        Run a callable in this process (for a debugger) instead of a worker.
    progress, on_start
        Called with (case, cell) after each case; with (cases, report) before
        the first (the report says how the implementation is run).
    worker : histkit.conformance.isolation.IsolatedJudge, optional
        A worker process the caller keeps from one check to the next, made
        with the same timeout (the pytest plugin keeps one a session); by
        default one is started for this check and stopped after it.

    Returns
    -------
    CheckReport
        ``print(report)`` says PASS, or FAIL with the first failure's reproducer.

    Raises
    ------
    UsageError
        Anything wrong with the request, found before any case runs.
    TypeError
        Keys that are not integers.
    GpuUnavailableError
        A .cu kernel where no GPU can run it (after compiling it, so its
        compile errors are shown even there).

    Examples
    --------
    One input of your own, a callable that forgets its last key (in
    process here; by default it runs in a worker process, which needs a
    function it can import by name):

    >>> import numpy as np
    >>> from histkit.conformance import check
    >>> def drops_last(keys, num_bins):
    ...     return np.bincount(keys[:-1], minlength=num_bins)
    >>> report = check(drops_last, "histogram", keys=np.array([2, 0, 2]), num_bins=3,
    ...                in_process=True)
    >>> report.passed
    False
    >>> report.failures[0].detail
    'bins differ: 1 differing; first at 2: expected 2, got 1'

    The whole quick matrix: ``check("my_kernels:histogram", "histogram")``.
    """
    problem = launch_option_problem(kind, names_source(impl), defines, count_bits, block, grid,
                                    warp_size)
    if problem is not None:
        raise UsageError(problem)
    implementation = make_impl(impl, kind, inputs=inputs, defines=defines, block=block,
                               grid=grid, count_bits=count_bits, warp_size=warp_size)
    cases = None if cases is None else list(cases)
    _check_request(kind, cases, keys, num_bins, case, samples, bins, range, weights, timeout,
                   in_process and not isinstance(implementation, FROM_SOURCE))
    if not quick and any(given is not None for given in (keys, samples, case)):
        raise UsageError("quick=False runs the whole matrix; with keys=, samples= or case= "
                         "one input runs")
    timeout_given = timeout is not None
    timeout = DEFAULT_TIMEOUT_S if timeout is None else float(timeout)
    from_source = isinstance(implementation, FROM_SOURCE)
    binning = kind in BINNING_KINDS
    weighted = kind in WEIGHTED_KINDS
    if weighted and keys is not None:
        cases, keys = [check_weighted.one_case(keys, weights, num_bins)], None
    elif weights is not None:
        raise UsageError(f"weights= is for kind {', '.join(WEIGHTED_KINDS)}, with keys=")
    if binning and keys is not None:
        raise UsageError(f"a {kind} check takes samples= and bins= (and range=), not keys=")
    if not binning and samples is not None:
        raise UsageError(f"samples= is for the binning kinds ({', '.join(BINNING_KINDS)}); "
                         f"a {kind} check takes keys=")
    if samples is not None:
        cases = [check_binning.one_case(kind, samples, bins, range)]
    if keys is not None:
        keys = validate_keys(keys, kind, num_bins)
        if kind == "scan":  # a scan's input is counts, not keys
            cases = [Case.of_keys(keys.astype(np.uint64), 0, scan_counts=True)]
        else:
            full = kind in FULL_WIDTH_KINDS  # full-width keys: there is no num_bins
            cases = [Case.of_keys(keys, 0 if full else num_bins, grid, full_width=full)]
    if case is not None:
        cases = [find_case(kind, case)]
    if cases is None and binning:
        cases = check_binning.cases_for(kind, quick)
    if cases is None and weighted:
        cases = check_weighted.weighted_cases()
    if cases is None:
        cases = cases_for(kind, quick, fenced=from_source, skewed=from_source)
    cases = list(cases)
    if not from_source:
        check_inputs_available(implementation.inputs)
    isolated = from_source or not in_process
    note = ""
    if isolated and not from_source:
        from histkit.conformance.isolation import sendable

        try:
            sendable(implementation)
        except TypeError as error:
            if timeout_given:  # a hang could not be stopped: say so rather than hang
                raise UsageError(f"timeout= needs a worker process, and {error}; pass the "
                                 f"callable as 'module:name' (the worker imports it)") from None
            isolated, note = False, str(error)
    elif not isolated:
        note = "in_process=True"
    if from_source:
        compile_only(implementation)  # its compile errors, once, before any case
        from histkit.gpu.device import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        if reason is not None:  # not the kernel's fault: no case can run here
            raise GpuUnavailableError(f"{implementation.path} compiles, but judging a CUDA "
                                      f"C++ kernel needs a GPU: {reason} (a Python callable "
                                      f"needs none)")
    report = CheckReport(implementation.describe(), kind, isolated=isolated, note=note)
    judge = Judge(implementation, timeout, isolated=isolated, worker=worker)
    if on_start is not None:
        on_start(cases, report)
    start, printed_before = time.perf_counter(), judge.printed_lines
    try:
        _run_cases(judge, cases, report, progress)
        if report.failures and shrink_failures:
            if binning or weighted:
                _shrink_samples(judge, report, check_binning if binning else check_weighted)
            else:
                _shrink_smallest(judge, report)
        if isolated and worker is None and report.failures:
            _call_alone(implementation, timeout, report, judge)
        _attach_reproducers(implementation, kind, report, timeout)
    finally:
        report.printed_lines = judge.printed_lines - printed_before
        judge.close()
        report.seconds = time.perf_counter() - start
    return report


CLI_SPELLING = {"warp_size": "--warp-size", "defines": "--define", "count_bits": "--counts",
                "block": "--block", "grid": "--grid", "kind": "--kind"}


def launch_option_problem(kind: str, from_source: bool, defines, count_bits: int, block: int,
                          grid: int | None, warp_size: int, cli: bool = False) -> str | None:
    """What is wrong with the launch options asked for, or None: each option
    has the kinds and the implementations it is for. Options are named as
    check() takes them, or (cli) as the command line does."""
    def name(option: str) -> str:
        return CLI_SPELLING[option] if cli else f"{option}" + ("" if option == "kind" else "=")

    if warp_size != 32 and kind != "wave":
        return f"{name('warp_size')} is for {name('kind')} wave, not {kind}"
    if not from_source:
        if defines or count_bits != 32:
            return f"{name('defines')} and {name('count_bits')} are for a .cu kernel"
        if (block != 256 or grid is not None) and kind != "privatized":
            return (f"{name('block')} and {name('grid')} are for a .cu kernel or a privatized "
                    f"callable")
    elif warp_size > 32:
        return (f"a .cu wave kernel runs in one warp, of at most 32 threads; got "
                f"{name('warp_size')} {warp_size}")
    return None


def _check_request(kind, cases, keys, num_bins, case, samples, bins, range, weights,
                   timeout, in_process) -> None:
    """check()'s arguments that name no input, or two, or one the kind does
    not take: a UsageError naming the problem, before anything runs."""
    given = [name for name, value in (("cases=", cases), ("keys=", keys), ("case=", case),
                                      ("samples=", samples)) if value is not None]
    if len(given) > 1:
        raise UsageError(f"give one of cases=, keys=, case= or samples=; got "
                         f"{' and '.join(given)}")
    if num_bins is not None and keys is None:
        raise UsageError("num_bins= goes with keys= (one input of your own); the matrix "
                         "cases bring their own")
    if num_bins is not None and (isinstance(num_bins, bool | np.bool_)
                                 or not isinstance(num_bins, int | np.integer)
                                 or num_bins < 1):
        raise UsageError(f"num_bins must be an integer >= 1; got {num_bins!r}")
    if num_bins is not None and kind in ("scan", *FULL_WIDTH_KINDS):
        raise UsageError(f"kind {kind} takes no num_bins= (" + (
            "a scan's input is its counts)" if kind == "scan" else "its keys are full-width)"))
    if (bins is not None or range is not None) and samples is None:
        raise UsageError("bins= and range= go with samples=")
    if kind in WEIGHTED_KINDS and keys is not None and weights is None:
        raise UsageError(f"a {kind} check of keys= needs weights= (one per key)")
    if timeout is not None:
        if not usable_timeout(timeout):
            raise UsageError(f"timeout must be a positive finite number of seconds; "
                             f"got {timeout!r}")
        if in_process:
            raise UsageError("timeout= needs a worker process: a callable run in this "
                             "process (in_process=True) cannot be stopped when it hangs")
    if cases is not None:
        _check_cases(kind, cases)


def usable_timeout(timeout) -> bool:
    """Whether check() takes this timeout: None (its default) or a positive
    finite number of seconds."""
    return timeout is None or (not isinstance(timeout, bool)
                               and isinstance(timeout, int | float | np.number)
                               and 0 < float(timeout) < float("inf"))


def _check_cases(kind: str, cases) -> None:
    """cases= holds cases, each of the kind's sort (conformance_cases(kind) gives them)."""
    from histkit.conformance.binning_cases import BinCase
    from histkit.conformance.weighted_cases import WeightedCase

    wanted = BinCase if kind in BINNING_KINDS else WeightedCase if kind in WEIGHTED_KINDS \
        else Case
    if not cases:
        raise UsageError("cases= is empty: nothing would be judged")
    for given in cases:
        name = getattr(given, "name", given)
        if not isinstance(given, wanted):
            raise UsageError(f"cases= holds a {type(given).__name__} ({name!r}), not a case "
                             f"of kind {kind} ({wanted.__name__}): @conformance_cases(...) "
                             f"and histkit_check(...) must name the same kind")
        if wanted is BinCase and given.right_closed_last != (kind == "bin-histogram"):
            other = "bin-histogram" if given.right_closed_last else "bin-histogram-half-open"
            raise UsageError(f"cases= holds {name!r}, a case of kind {other} (its own rule "
                             f"for the last bin), not of {kind}: @conformance_cases(...) "
                             f"and histkit_check(...) must name the same kind")


def _run_cases(judge: Judge, cases: list[Case], report: CheckReport, progress) -> None:
    for case in cases:
        reason = judge.not_run_because(case)
        cell, geometry = (Cell("skip", reason), "") if reason is not None else judge(case)
        report.cells.append((case, cell, geometry))
        if progress is not None:
            progress(case, cell)
        if cell.status == "FAIL":
            report.failures.append(Failure(case, geometry, cell.detail, figures=cell.figures,
                                           kind=report.kind, printed=judge.last_printed))


def _shrink_smallest(judge: Judge, report: CheckReport) -> None:
    """The smallest failing case of each symptom is shrunk further (one minimal
    input per group is what a reader needs to start), then put first."""
    for group in report.groups()[:SHRUNK_GROUPS]:
        smallest = group[0]
        # A hang is not shrunk: each smaller input tried could cost a timeout.
        if smallest.case.literal is not None or smallest.case.name in judge.hung:
            continue
        # a scan's input is counts: shortened as counts, whatever made them
        start = as_scan_input(smallest.case) if report.kind == "scan" else smallest.case
        found = shrink(judge, start, smallest.symptom)
        if found is not None:
            smallest.shrunk, smallest.shrunk_detail = found
            cell, geometry = judge(smallest.shrunk)  # its figures, on the shrunk input
            if cell.status == "FAIL":
                smallest.shrunk_detail, smallest.figures = cell.detail, cell.figures
                smallest.shrunk_geometry, smallest.printed = geometry, judge.last_printed
            else:  # not the case's figures beside the shrunk input
                smallest.figures, smallest.printed = None, ""
    ordered = [f for group in report.groups() for f in group]
    report.failures[:] = ordered


def _shrink_samples(judge: Judge, report: CheckReport, rule) -> None:
    """The smallest failing case of each symptom, shrunk to fewer samples
    (binning) or keys with their weights (weighted): ``rule.shrink``."""
    for group in report.groups()[:SHRUNK_GROUPS]:
        heads = [group[0]]
        if report.kind in BINNING_KINDS and _odd_numbers(group[0].case):
            # an odd input (1e300, -0.0, NaN) may be the smallest only because
            # every plain one is longer: shrink the shortest plain one too,
            # and the group shows whichever comes out smaller (_smallness)
            plain = [f for f in group[1:] if not _odd_numbers(f.case, look_through=True)]
            heads += sorted(plain, key=lambda f: f.case.n)[:1]
        for smallest in heads:
            if smallest.case.name in judge.hung or smallest.case.n > SHRINK_MAX_N:
                continue
            symptom = smallest.symptom
            found = rule.shrink(judge, smallest.case,
                                lambda detail, symptom=symptom: symptom_of(detail) == symptom)
            if found is not None:
                smallest.shrunk, smallest.shrunk_detail = found
                cell, _ = judge(smallest.shrunk)
                if cell.status == "FAIL":
                    smallest.shrunk_detail, smallest.figures = cell.detail, cell.figures
                    smallest.printed = judge.last_printed
                else:  # not the case's figures beside the shrunk input
                    smallest.figures, smallest.printed = None, ""
    report.failures[:] = [f for group in report.groups() for f in group]


def _call_alone(implementation, timeout: float, report: CheckReport, judge: Judge) -> None:
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
            if failure.shrunk is not None:
                failure.shrunk_detail, failure.shrunk_geometry = cell.detail, geometry
            else:
                failure.detail, failure.geometry = cell.detail, geometry
            failure.figures, failure.printed = cell.figures, printed
        if not failing:
            failure.alone = (f"in a new process this input passes ({len(calls)} calls): it "
                             f"fails only after other calls, so the callable keeps state "
                             f"between calls (a buffer, cache or counter not reset); the "
                             f"reproducers below pass, the whole check (its first line) "
                             f"fails again")
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


def _attach_reproducers(implementation, kind: str, report: CheckReport,
                        timeout: float = DEFAULT_TIMEOUT_S) -> None:
    if kind in BINNING_KINDS:
        from histkit.conformance.reproduce_binning import command_line, python_call
    elif kind in WEIGHTED_KINDS:
        command_line, python_call = check_weighted.command_line, check_weighted.python_call
    else:
        from histkit.conformance.reproduce import command_line, python_call

    for failure in report.failures:
        # A hang reproduces within the short timeout the check gave cases after
        # one, not the whole default: the user's rerun waits 10 s, not a minute.
        wait = min(timeout, AFTER_HANG_TIMEOUT_S) if is_hang(failure.detail) else timeout
        failure.reproducer = command_line(implementation, kind, failure.smallest,
                                          failure.case)
        if wait != DEFAULT_TIMEOUT_S and failure.reproducer.startswith(
                f"{histkit_word()} check"):
            failure.reproducer += f" --timeout {wait:g}"
        failure.python_reproducer = python_call(
            implementation, kind, failure.smallest, failure.case,
            timeout=None if wait == DEFAULT_TIMEOUT_S else wait)
