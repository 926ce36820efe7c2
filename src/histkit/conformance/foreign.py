"""A user's implementation, judged by the same cases and rules as histkit's own.

Two ways in:

- a Python callable (``PythonImpl``), run in this process on the keys as the
  array kind it asks for (``inputs="numpy" | "cupy" | "torch"``); a CPU
  callable needs no GPU at all;
- a CUDA C++ file (``CudaFileImpl``), compiled with NVRTC through histkit's
  cache and launched through cuda.core with the kernel ABI of the README's
  "Check your own kernel" section. It becomes one more registry row
  (``registry.Kernel``) and is judged by the conformance runner itself, in a
  worker process (``isolation.py``) so that a fault or a hang costs one cell.

What a callable returns, by kind (arrays of any kind: NumPy, CuPy, torch):

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

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from histkit.conformance import checks
from histkit.conformance.cases import Case, judges, not_judged_because
from histkit.conformance.checks import Cell
from histkit.gpu.registry import FULL_WIDTH_KINDS, SORTING_KINDS

INPUT_KINDS = ("numpy", "cupy", "torch")
_INDEX_IN_MESSAGE = re.compile(r"index (\d+)")


def load_callable(spec: str):
    """``package.module:function`` -> the function (a clear error if it is not there)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"a Python kernel is given as package.module:function; got {spec!r}")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ValueError(f"module {module_name} has no attribute {attribute!r}") from None


def _to_kind(array: np.ndarray, inputs: str):
    if inputs == "numpy":
        return array.copy()  # the callable may scribble on it; the oracle's copy stays intact
    if inputs == "cupy":
        import cupy

        return cupy.asarray(array)
    if inputs == "torch":
        import torch

        return torch.as_tensor(array.copy(), device="cuda")
    raise ValueError(f"inputs must be one of {INPUT_KINDS}; got {inputs!r}")


def to_numpy(value) -> np.ndarray:
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        return value.get()
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def reported_index(error: Exception) -> int | None:
    index = getattr(error, "index", None)
    if isinstance(index, (int, np.integer)):
        return int(index)
    found = _INDEX_IN_MESSAGE.search(str(error))
    return int(found.group(1)) if found else None


@dataclass
class PythonImpl:
    """A callable judged in this process."""

    function: object
    kind: str
    inputs: str = "numpy"
    warp_size: int = 32
    block: int = 256
    grid: int | None = None  # privatized: the block count the callable is told to use
    name: str = ""

    def describe(self) -> str:
        """module:function when importable (the reproducer can then name it)."""
        if self.name:
            return self.name
        module = getattr(self.function, "__module__", None)
        qualname = getattr(self.function, "__qualname__", repr(self.function))
        return f"{module}:{qualname}" if module and "<" not in qualname else qualname

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
        try:
            result = self._call(keys, case, outcome)
        except ValueError as error:
            if expected.bad is None:
                return Cell("FAIL", f"raised on valid input: {type(error).__name__}: {error}"), ""
            outcome.first_bad = reported_index(error)
            if outcome.first_bad is None:
                return Cell("FAIL", f"raised {type(error).__name__}({error}) without naming "
                                    f"the first bad index ({expected.bad.index})"), ""
            return checks.judge(self.kind, expected, outcome, self.warp_size), ""
        if self.kind == "privatized":
            block, grid = self.geometry(case)
            geometry = f"block_size={block}, num_blocks={grid}"
        self._fill(outcome, result)
        return checks.judge(self.kind, expected, outcome, self.warp_size), geometry

    def _call(self, keys: np.ndarray, case: Case, outcome: checks.Outcome):
        arg = _to_kind(keys, self.inputs)
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
        if self.kind in SORTING_KINDS:
            sorted_keys, original_index = result
            outcome.sorted_keys = to_numpy(sorted_keys)
            outcome.original_index = to_numpy(original_index)
        elif self.kind == "privatized":
            counts, atomics = result
            outcome.counts = to_numpy(counts)
            outcome.global_atomics = int(atomics)
        else:
            outcome.counts = to_numpy(result)

    def _judge_scan(self, expected: checks.Expected) -> tuple[Cell, str]:
        offsets = self.function(_to_kind(expected.exact.copy(), self.inputs))
        return checks.judge("scan", expected, checks.Outcome(offsets=to_numpy(offsets))), ""


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
COUNT_TYPES = {32: ("unsigned int", "uint32"), 64: ("unsigned long long", "uint64")}


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
