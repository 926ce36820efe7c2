"""A user's implementation, judged by the same cases and rules as histkit's own.

Two ways in:

- a Python callable (``PythonImpl``), run on the keys as the array kind it
  asks for (``inputs="numpy" | "cupy" | "torch"``), in a worker process by
  default (``isolation.py``), so that one that aborts or hangs costs one
  cell; a CPU callable needs no GPU at all;
- a CUDA C++ file (``CudaFileImpl``), compiled with NVRTC through histkit's
  cache and launched through cuda.core with the kernel ABI of its kind
  (``cuda_abi.py``). It becomes one more registry row (``registry.Kernel``)
  and is judged by the conformance runner itself, in a worker process.

How a callable of each kind is called, and what it returns, is
``loading.CALL_FORMS`` (arrays of any kind come back: NumPy, CuPy, torch):

- histogram, racy-histogram: ``f(keys, num_bins) -> counts``
- wave: ``f(keys, num_bins, warp_size=32) -> counts``
- privatized: ``f(keys, num_bins, block_size=256, num_blocks=G)
  -> (counts, global_atomics)``
- scan: ``f(counts) -> offsets``
- sort, stable-sort: ``f(keys, num_bins) -> (sorted_keys, original_index)``
- radix-sort: ``f(keys) -> (sorted_keys, original_index)`` (full-width keys;
  every key is valid, so raising is a FAIL)

A bad key is reported by raising ``ValueError`` that names the first bad index
(``histkit.oracles.BadKeyError`` carries it as ``.index``; otherwise the
message must say "index N").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from histkit.conformance import checks
from histkit.conformance.cases import Case, judges, not_judged_because
from histkit.conformance.checks import Cell
from histkit.conformance.isolation import load_callable_isolated
from histkit.conformance.loading import (
    CALL_FORMS,
    INPUT_KINDS,
    importable_name,
    load_callable,
    main_script_name,
    raised,
)
from histkit.gpu.registry import FULL_WIDTH_KINDS, SORTING_KINDS

_INDEX_IN_MESSAGE = re.compile(r"index (\d+)")
# A wave callable is also told other widths (PythonImpl.other_widths): one
# that keeps a width of its own (a hard-coded 32) passes at that width alone.
# Twice its width (past a 32-bit lane mask) only on inputs up to this many keys.
SECOND_WAVE_MAX_KEYS = 4096
# A privatized callable is also called with another block size and a grid of 2
# (PythonImpl.other_geometry) on inputs up to this many keys.
OTHER_BLOCK_MAX_KEYS = 4096


def to_input_kind(array: np.ndarray, inputs: str, offset: int = 0):
    """array as a callable gets it: a copy of its own (the callable may
    scribble on it; the oracle's copy stays intact) in the inputs' library,
    contiguous, starting `offset` elements into its allocation (a case's
    misaligned start, off the 16-byte alignment of vector loads)."""
    if inputs == "numpy":
        copied, library = np.array(array), np
    elif inputs == "cupy":
        import cupy

        copied, library = cupy.asarray(array), cupy  # (a copy: the array is on the host)
    elif inputs == "torch":
        import torch

        copied, library = torch.as_tensor(np.array(array), device="cuda"), torch
    else:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}; got {inputs!r}")
    if not offset:
        return copied
    if inputs == "torch":
        base = torch.empty(offset + len(copied), dtype=copied.dtype, device="cuda")
    else:
        base = library.empty(offset + len(copied), dtype=copied.dtype)
    base[offset:] = copied
    return base[offset:]


def start_offset(array: np.ndarray) -> int:
    """How many elements past a 16-byte boundary array's data starts (0 for an
    aligned array): the offset its copy for a callable keeps."""
    return (array.ctypes.data % 16) // array.itemsize if array.size else 0


def to_numpy(value) -> np.ndarray:
    """A callable's result as a NumPy array (CuPy and PyTorch arrays copied
    to the host); WrongResult where NumPy reads no array of numbers in it
    (an object of another library, a ragged list)."""
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        return value.get()
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:  # a ragged list, say
        raise WrongResult(f"returned {_described(value)}, which NumPy cannot read as an "
                          f"array ({error}); {_READABLE}") from None
    if array.dtype == object or array.dtype.kind in "USVMmc":  # strings, dates, complex
        raise WrongResult(f"returned {_described(value)}, which NumPy reads as no array of "
                          f"real numbers ({array.dtype}); {_READABLE}")
    return array


_READABLE = ("return a NumPy, CuPy or PyTorch array, or an object NumPy reads "
             "(one with __array__ or the buffer protocol)")


def _described(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return "None" if value is None else f"a {type(value).__name__}"


def changed_input(given, original: np.ndarray, name: str) -> Cell | None:
    """A FAIL where the callable wrote to the input it was handed (``given``,
    a copy of ``original``): the caller's data would be lost, and a kernel's
    inputs are const. None where it is unchanged."""
    now = to_numpy(given)
    if now.shape == original.shape:
        floats = now.dtype.kind in "fc" and original.dtype.kind in "fc"
        if np.array_equal(now, original, equal_nan=floats):
            return None
        with np.errstate(invalid="ignore"):
            differ = np.flatnonzero(now != original)
        at = int(differ[0]) if len(differ) else 0
        change = f"index {at} was {original[at].item()!r}, is now {now[at].item()!r}"
    else:
        change = f"its shape {original.shape} is now {now.shape}"
    return Cell("FAIL", f"wrote to its {name} input: {change} (inputs are read-only, as a "
                        f"kernel's are const: work on a copy)")


def reported_index(error: Exception) -> int | None:
    index = getattr(error, "index", None)
    if isinstance(index, (int, np.integer)):
        return int(index)
    found = _INDEX_IN_MESSAGE.search(str(error))
    return int(found.group(1)) if found else None


HOW_TO_REPORT = ("a callable reports one by raising ValueError with the index in its message "
                 "(\"index 3\") or as .index")


def raised_cell(error: Exception, bad_index: int | None, bad_value=None) -> Cell | None:
    """The FAIL of a callable that raised ``error`` on an input whose first
    bad key is at ``bad_index`` (None: every key is valid); None where it
    reported a bad key as asked, by a ValueError naming an index (the caller
    judges whether it names the right one)."""
    if bad_index is None:
        return Cell("FAIL", f"raised on valid input: {raised(error)}")
    if isinstance(error, ValueError) and reported_index(error) is not None:
        return None
    where = f"the first bad key is at index {bad_index} (value {bad_value}); {HOW_TO_REPORT}"
    if isinstance(error, ValueError):
        return Cell("FAIL", f"raised ValueError without the bad key's index: {raised(error)}; "
                            f"{where}")
    return Cell("FAIL", f"raised {type(error).__name__} on a bad key, not ValueError: "
                        f"{raised(error)}; {where}")


def _largest_exact_count(dtype: np.dtype) -> int:
    """The largest count a counts dtype holds exactly (float: 2^(mantissa + 1))."""
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1)
    return int(np.iinfo(dtype).max)


def narrow_counts(cell: Cell, counts: np.ndarray, exact: np.ndarray,
                  what: str = "counts") -> Cell:
    """cell, its symptom naming the counts' type where a count of this input
    does not fit it (uint8 counts wrap 256 keys to 0; float16 counts round
    2049 to 2048); what: "offsets" for a scan's."""
    if exact is None or counts.dtype.kind not in "iuf" or not exact.size:
        return cell  # (an input with bad keys has no exact counts)
    top = _largest_exact_count(counts.dtype)
    if int(exact.max()) <= top:
        return cell
    holds = (f"which count exactly only up to {top}" if counts.dtype.kind == "f"
             else f"which hold at most {top}")
    head, sep, rest = cell.detail.partition(": ")
    return replace(cell, detail=f"{head} ({what} returned as {counts.dtype.name}, {holds})"
                                f"{sep}{rest}")


def inexact_counts(counts: np.ndarray, unit: str = "keys") -> Cell | None:
    """A finding where counts come back in a type too narrow to count every
    key (or sample: ``unit``): right on these inputs, wrong on a bin of more
    than it holds exactly (2^(mantissa + 1) for a float, the largest value
    for an integer narrower than 64 bits), which the quick matrix does not build."""
    return _narrow_result(counts, "counts", "{} " + unit + " a bin, a bin of more is "
                                                           "miscounted")


def inexact_indices(index: np.ndarray) -> Cell | None:
    """A finding where a sort's original indices come back in a type that
    cannot name every position of a larger input (int32 past 2^31 keys): the
    matrix a callable meets stays below it."""
    return _narrow_result(index, "original indices",
                          "index {}, a larger input's are wrong", "index_dtype")


def _narrow_result(values: np.ndarray, what: str, limit: str,
                   figure: str = "counts_dtype") -> Cell | None:
    """The finding for a result dtype narrower than 64-bit integers or
    doubles (None where it is not): what it is, the largest value it holds
    exactly (formatted into limit), and what to return instead."""
    dtype = values.dtype
    if dtype.kind == "f" and np.finfo(dtype).nmant < 52:
        advice = "return integers"
    elif dtype.kind in "iu" and dtype.itemsize < 8:
        advice = "return int64"
    else:
        return None
    return Cell("finding", f"{what} returned as {dtype.name}: exact only up to "
                           f"{limit.format(_largest_exact_count(dtype))} ({advice})",
                {figure: dtype.name})


@dataclass
class PythonImpl:
    """A callable and how to call it.

    ``name`` is how the callable was given (``module:function`` or
    ``file.py:function``), or else how another process can import it; empty
    when none can (a lambda, a local function). A worker process receives
    the name and imports the callable itself; one with no name travels by
    value (cloudpickle, where installed) or is judged in this process.
    """

    function: object
    kind: str
    inputs: str = "numpy"
    warp_size: int = 32
    block: int = 256
    grid: int | None = None  # privatized: the block count the callable is told to use
    name: str = ""

    def __post_init__(self):
        if not self.name:
            self.name = importable_name(self.function) or ""

    def describe(self) -> str:
        """How the verdict names the callable: its importable name, the script's
        file for a function of ``__main__``, else its qualified name."""
        if self.name:
            return self.name
        return main_script_name(self.function) or getattr(
            self.function, "__qualname__", repr(self.function))

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.name:  # the worker imports it by name
            state["function"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.function is None:
            self.function = load_callable(self.name)

    def geometry(self, case: Case) -> tuple[int, int]:
        grid = case.grid or self.grid or max(1, -(-case.n // self.block))
        return self.block, grid

    def judge(self, case: Case) -> tuple[Cell, str]:
        if not judges(case, self.kind):
            return Cell("skip", not_judged_because(case)), ""
        keys = case.keys()
        full_width = self.kind in FULL_WIDTH_KINDS  # no K: no histogram, no bad key
        expected = checks.Expected(keys, case.num_bins, case.full_width or full_width,
                                   scan_counts=case.scan_counts)
        if self.kind == "scan":
            if expected.bad is not None:
                return Cell("skip", "scan inputs are counts: no bad keys"), ""
            return self._judge_scan(expected)
        outcome = checks.Outcome()
        geometry = ""
        given = to_input_kind(keys, self.inputs, case.offset)
        try:
            result = self._call(given, case, outcome)
        except Exception as error:
            bad = expected.bad
            cell = raised_cell(error, None if bad is None else bad.index,
                               None if bad is None else bad.value)
            if cell is not None:
                return cell, ""
            outcome.first_bad = reported_index(error)
            return checks.judge(self.kind, expected, outcome, self.warp_size), ""
        if self.kind == "privatized":
            block, grid = self.geometry(case)
            geometry = f"block_size={block}, num_blocks={grid}"
        changed = changed_input(given, keys, "keys")
        if changed is not None:
            return changed, geometry
        try:
            self._fill(outcome, result)
        except WrongResult as error:  # the verdict is the sentence, headed "returned ..."
            return Cell("FAIL", str(error)), geometry
        cell = checks.judge(self.kind, expected, outcome, self.warp_size)
        if cell.status == "pass" and self.kind == "privatized" and case.n <= OTHER_BLOCK_MAX_KEYS:
            block, grid = self.other_geometry()
            own_block, own_grid = self.geometry(case)
            cell = self._judge_another_call(
                keys, case, expected, {"block_size": block, "num_blocks": grid},
                {"block_size": own_block, "num_blocks": own_grid})
        if cell.status == "pass" and self.kind == "wave":
            for width in self.other_widths(case.n):
                cell = self._judge_another_call(
                    keys, case, expected, {"warp_size": width}, {"warp_size": self.warp_size},
                    " (a width of its own, or one it mishandles?)")
                if cell.status != "pass":
                    break
        if cell.status == "pass" and outcome.counts is not None:
            cell = inexact_counts(outcome.counts) or cell
        if cell.status == "pass" and outcome.original_index is not None:
            cell = inexact_indices(outcome.original_index) or cell
        if cell.status == "FAIL" and outcome.counts is not None:
            cell = narrow_counts(cell, outcome.counts, expected.exact)
        if cell.status == "FAIL" and outcome.sorted_keys is not None and _swapped(outcome, keys):
            cell = Cell("FAIL", f"returned the pair swapped: its first element is the "
                                f"original indices and its second the sorted keys; a "
                                f"{self.kind} callable returns {CALL_FORMS[self.kind][2]}")
        if cell.status == "FAIL" and cell.detail.startswith("no bad key reported"):
            cell = replace(cell, detail=f"{cell.detail}; {HOW_TO_REPORT}")
        return cell, geometry

    def other_widths(self, n: int) -> tuple[int, ...]:
        """The wave widths a wave callable is told besides its own: three
        quarters of it (no power of two: a wave index taken by a shift is
        wrong there) on every input, and twice it (past a 32-bit lane mask)
        on inputs of up to SECOND_WAVE_MAX_KEYS keys."""
        widths = [max(2, self.warp_size * 3 // 4)]
        if n <= SECOND_WAVE_MAX_KEYS:
            widths.append(2 * self.warp_size)
        return tuple(w for w in dict.fromkeys(widths) if w != self.warp_size)

    def other_geometry(self) -> tuple[int, int]:
        """The second launch a privatized callable is told: half its block
        (twice it where that is below a warp) on a grid of 2, so that blocks
        loop over tiles with a stride of the block they were given."""
        block = self.block // 2 if self.block >= 64 else self.block * 2
        return block, 2

    def _judge_another_call(self, keys: np.ndarray, case: Case, expected: checks.Expected,
                            asked: dict, own: dict, hint: str = "") -> Cell:
        """The cell of one more call, on a case the callable's own call passed:
        asked holds the keyword arguments it is called with, own those of its
        own call. A failure keeps its symptom first, so that it joins its group,
        and says which call it was (the "called_with" figure shows it too)."""
        called = ", ".join(f"{name}={value}" for name, value in asked.items())
        outcome = checks.Outcome(block=asked.get("block_size"), grid=asked.get("num_blocks"))
        given = to_input_kind(keys, self.inputs, case.offset)
        try:  # no bad key here: it answered its own call without raising
            self._fill(outcome, self.function(given, case.num_bins, **asked))
        except WrongResult as error:
            return Cell("FAIL", f"{error}; when called with {called}")
        except Exception as error:
            return Cell("FAIL", f"raised on valid input when called with {called}: "
                                f"{raised(error)}")
        cell = checks.judge(self.kind, expected, outcome,
                            asked.get("warp_size", self.warp_size))
        if cell.status != "FAIL":
            return cell
        called += ", right at " + ", ".join(f"{name}={value}" for name, value in own.items())
        return replace(cell, detail=f"{cell.detail}; when called with {called}{hint}",
                       figures={**(cell.figures or {}), "called_with": called})

    def _call(self, arg, case: Case, outcome: checks.Outcome):
        if self.kind == "wave":
            return self.function(arg, case.num_bins, warp_size=self.warp_size)
        if self.kind == "privatized":
            block, grid = self.geometry(case)
            outcome.block, outcome.grid = block, grid
            return self.function(arg, case.num_bins, block_size=block, num_blocks=grid)
        if self.kind in FULL_WIDTH_KINDS:
            return self.function(arg)
        return self.function(arg, case.num_bins)

    def _fill(self, outcome: checks.Outcome, result) -> None:
        pair = self.kind in SORTING_KINDS or self.kind == "privatized"
        if pair and (not isinstance(result, (tuple, list)) or len(result) != 2):
            raise WrongResult(f"returned {_described(result)}; a {self.kind} callable "
                              f"returns {CALL_FORMS[self.kind][2]}")
        if self.kind in SORTING_KINDS:
            sorted_keys, original_index = result
            outcome.sorted_keys = to_numpy(sorted_keys)
            outcome.original_index = to_numpy(original_index)
            if outcome.original_index.dtype.kind not in "iu":  # no index to judge it by
                raise WrongResult(f"returned original indices of dtype "
                                  f"{outcome.original_index.dtype}; a {self.kind} callable "
                                  f"returns integer indices (int64)")
        elif self.kind == "privatized":
            counts, atomics = result
            outcome.counts = to_numpy(counts)
            if not isinstance(atomics, (int, np.integer)) and np.ndim(atomics) != 0:
                raise WrongResult(f"returned {_described(atomics)} as global_atomics, the "
                                  f"second element; a privatized callable returns "
                                  f"{CALL_FORMS[self.kind][2]}, global_atomics an integer")
            value = to_numpy(atomics)
            if value.dtype.kind not in "iu":  # 12.9 or True is no count of atomics
                raise WrongResult(f"returned global_atomics {value.item()!r} ({value.dtype}); "
                                  f"a privatized callable returns {CALL_FORMS[self.kind][2]}, "
                                  f"global_atomics an integer")
            outcome.global_atomics = int(value)
        else:
            if result is None:
                raise WrongResult(f"returned None; a {self.kind} callable returns counts")
            outcome.counts = to_numpy(result)

    def _judge_scan(self, expected: checks.Expected) -> tuple[Cell, str]:
        given = to_input_kind(expected.exact, self.inputs)
        try:
            offsets = self.function(given)
        except Exception as error:  # a scan's counts are all valid
            return raised_cell(error, None), ""
        changed = changed_input(given, expected.exact, "counts")
        if changed is not None:
            return changed, ""
        try:
            offsets = to_numpy(offsets)
        except WrongResult as error:
            return Cell("FAIL", str(error)), ""
        cell = checks.judge("scan", expected, checks.Outcome(offsets=offsets))
        if cell.status == "FAIL" and isinstance(offsets, np.ndarray):
            cell = narrow_counts(cell, offsets, expected.offsets(), "offsets")
        return cell, ""


def _swapped(outcome: checks.Outcome, keys: np.ndarray) -> bool:
    """Whether a sort's pair came back as (original_index, sorted_keys): its
    first element the indices of keys in sorted order, its second those keys."""
    index, sorted_keys = outcome.sorted_keys, outcome.original_index
    if len(index) != len(keys) or len(sorted_keys) != len(keys) or not len(keys):
        return False
    if index.dtype.kind not in "iu" or np.any(index < 0) or np.any(index >= len(keys)):
        return False
    # read swapped, the pair is a sort's (the gather and the order first:
    # they rule out most failures in one pass each, before any sort) ...
    if not (np.array_equal(keys[index], sorted_keys)
            and bool(np.all(sorted_keys[1:] >= sorted_keys[:-1]))):
        return False
    in_order = np.sort(keys, kind="stable")
    # ... its keys all there, and read straight, the first element is not
    # the sorted keys (else the failure is another)
    return bool(np.array_equal(in_order, sorted_keys)
                and not np.array_equal(outcome.sorted_keys, in_order))


class WrongResult(TypeError):
    """A callable's result is not of its kind's form (None, a lone array
    where a pair belongs): its FAIL cell is the message itself."""


def callable_impl(cls, impl, kind: str, inputs: str) -> PythonImpl:
    """``cls`` (PythonImpl or a kind's subclass) for a callable or its name,
    its signature checked against the kind's call form."""
    from histkit.conformance.loading import check_signature

    function = load_callable_isolated(impl) if isinstance(impl, str) else impl
    if not callable(function):
        raise TypeError(f"an implementation is a .cu path or a callable; {impl!r} is of "
                        f"type {type(function).__name__}")
    python = cls(function, kind, "numpy" if inputs == "auto" else inputs,
                 name=impl if isinstance(impl, str) else "")
    check_signature(function, kind, python.describe())
    return python


# --- CUDA C++ files ------------------------------------------------------------------

# The entry points a .cu file of each kind provides, unless KERNEL names one.
DEFAULT_ENTRIES = {
    "histogram": ("histogram",),
    "racy-histogram": ("histogram",),
    "wave": ("histogram",),
    "privatized": ("histogram",),
    "scan": ("scan",),
    "sort": ("count", "scatter"),
    "stable-sort": ("count", "scatter"),
}


@dataclass(frozen=True)
class CudaFileImpl:
    """A .cu file and how to build and launch it (picklable: workers rebuild the row)."""

    path: str
    kind: str
    entries: tuple[str, ...]
    defines: tuple[tuple[str, str], ...] = ()
    block: int = 256
    grid: int | None = None  # None: one thread per key; N: a fixed (grid-stride) grid
    count_bits: int = 32
    warp_size: int = 32

    def describe(self) -> str:
        return f"{self.path}:{','.join(self.entries)}"

    def as_kernel(self):
        """This file as a registry row (built in the process that launches it)."""
        from histkit.conformance import cuda_abi
        from histkit.conformance.cuda_abi import COUNT_TYPES
        from histkit.gpu.registry import Kernel, bins_past_shared_memory

        return Kernel(row=Path(self.path).name, kind=self.kind, source=str(Path(self.path)),
                      entries=self.entries, run=cuda_abi.launcher(self),
                      takes_grid=self.grid is not None and self.kind != "scan",
                      count_dtype=COUNT_TYPES[self.count_bits][1]
                      if self.kind not in ("sort", "stable-sort") else "uint64",
                      skips_bad_keys=False,  # the ABI asks only for the first bad index
                      publishes_verdict=False,  # nor for histkit's verdict board
                      # its launcher refuses bins past a block's shared memory
                      may_refuse=(bins_past_shared_memory(self.count_bits // 8)
                                  if self.kind == "privatized" else None))


def parse_kernel_spec(spec: str, kind: str) -> tuple[str, tuple[str, ...]]:
    """``path/to/file.cu[:entry[,entry]]`` -> (absolute path, entries)."""
    path, _, entries = spec.partition(":")
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise FileNotFoundError(f"no such kernel file: {path}")
    names = tuple(e for e in entries.split(",") if e) or DEFAULT_ENTRIES[kind]
    if len(names) != len(DEFAULT_ENTRIES[kind]):
        raise ValueError(f"a {kind} kernel has {len(DEFAULT_ENTRIES[kind])} entry point(s) "
                         f"({', '.join(DEFAULT_ENTRIES[kind])}); got {', '.join(names)}")
    return str(file), names
