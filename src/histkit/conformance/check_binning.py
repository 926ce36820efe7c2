"""A user's binning of real-valued samples, judged by numpy's rule or CUB's.

Two kinds (``registry.BINNING_KINDS``): ``bin-histogram`` (the counts of
``np.histogram``, the last bin closed) and ``bin-histogram-half-open``
(every bin half-open, CUB's ``HistogramEven`` / ``HistogramRange``). The
cases are ``histkit.conformance.binning_cases`` (the half-open kind takes
every one of them under its own rule); the counts must equal
``oracles.bin_histogram``'s, bin for bin. Two answers are accepted where
numpy gives two: on a few even-bin inputs (float16 arithmetic, subnormal
spans, integers past 2^53) numpy's estimate puts a sample outside the bin
its own returned edges bracket, and counts that follow those edges instead
(numpy's explicit-edge rule, ``np.histogram(samples, edges)``) are a
finding that names the difference, not a FAIL. A case on which numpy's own
code fails (it raises) is a skip: there are no counts to compare.

A Python callable is called as ``f(samples, bins, range)``, as
``np.histogram`` is: ``bins`` an int or the edges (an array of the kind the
callable asked for), ``range`` a ``(lo, hi)`` pair or None. It returns the
counts, or ``(counts, edges)`` as ``np.histogram`` does, and then the edges
must equal numpy's too.

A CUDA C++ file provides (every argument as docs/check.md's "The kernel ABI"
shows)::

    extern "C" __global__ void bin_histogram(const SAMPLE_T* samples, long long n,
                                             const EDGE_T* edges,
                                             unsigned long long num_bins, COUNT_T* hist)

``edges`` are numpy's num_bins + 1 edges for the call (even bins computed as
numpy computes them) in the type numpy compares samples with them in
(``EDGE_T``: double, long long or unsigned long long, which hold numpy's
compare type exactly): a sample converted to ``EDGE_T`` and compared with
the edges is compared as numpy compares it. float16 samples arrive widened
to float (``SAMPLE_T``), which is exact. ``RIGHT_CLOSED_LAST`` is defined 1
(numpy's kind) or 0 (the half-open kind). ``hist`` starts zeroed; samples
outside the edges and NaN samples are counted nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from histkit import oracles
from histkit.conformance import checks
from histkit.conformance.binning_cases import BinCase, bin_cases
from histkit.conformance.checks import Cell
from histkit.conformance.foreign import (
    PythonImpl,
    WrongResult,
    callable_impl,
    changed_input,
    inexact_counts,
    narrow_counts,
    start_offset,
    to_input_kind,
    to_numpy,
)
from histkit.conformance.loading import UsageError, raised
from histkit.conformance.shrinking import UNNAMED, fewer, shrink_by
from histkit.gpu.contract import FLOAT_C_TYPES, KEY_C_TYPES
from histkit.gpu.registry import BINNING_KIND, BINNING_KINDS
from histkit.oracles._bin_rule import NumpyFailsError, search_edges

ENTRY = "bin_histogram"
NUMPY_FAILS = "numpy's own code fails on sample {index} of this input: no counts to compare"


def right_closed_last(kind: str) -> bool:
    if kind not in BINNING_KINDS:
        raise UsageError(f"a binning kind is one of {', '.join(BINNING_KINDS)}; got {kind!r}")
    return kind == BINNING_KIND


def cases_for(kind: str, quick: bool = True) -> list[BinCase]:
    """The binning cases that judge `kind`: numpy's rule takes the cases
    under numpy's convention; the half-open kind takes every case under its own."""
    closed = right_closed_last(kind)
    cases = bin_cases(quick)
    if closed:
        return [case for case in cases if case.right_closed_last]
    half_open: dict[str, BinCase] = {}
    for case in cases:
        if case.right_closed_last:
            case = replace(case, name=f"{case.name}/cub", right_closed_last=False)
        half_open.setdefault(case.name, case)
    return list(half_open.values())


def find_case(kind: str, name: str) -> BinCase:
    """The case of this name: the quick matrix's first (the full one makes
    2^26 samples, seconds and a GiB, to look through)."""
    for quick in (True, False):
        for case in cases_for(kind, quick=quick):
            if case.name == name:
                return case
    raise UsageError(f"no {kind} case is named {name!r} (names are printed by "
                     f"histkit check -v and in its --json report)")


def one_case(kind: str, samples, bins, range) -> BinCase:
    """A case of the caller's own input, its arguments checked as numpy checks them."""
    samples = np.asarray(samples)
    if samples.ndim != 1:
        raise UsageError(f"samples must be one-dimensional; got shape {samples.shape}")
    if samples.dtype.kind not in "iuf":
        raise UsageError(f"samples must be of a float or integer dtype; got {samples.dtype}")
    if bins is None:
        raise UsageError("samples= needs bins= (an int, or the edges)")
    bins = int(bins) if isinstance(bins, (int, np.integer)) else np.asarray(bins)
    case = BinCase(UNNAMED, samples, bins, None if range is None else tuple(range),
                   right_closed_last=right_closed_last(kind))
    try:
        oracles.bin_histogram(case.samples, case.bins, case.range)
    except NumpyFailsError:
        pass  # a case like any other: judged as a skip
    except ValueError as error:
        raise UsageError(f"np.histogram refuses this input: {error}") from None
    return case


def expected(case: BinCase) -> tuple[np.ndarray, np.ndarray] | int:
    """(counts, edges) by the case's rule, or the index of the sample numpy fails on."""
    try:
        return oracles.bin_histogram(case.samples, case.bins, case.range,
                                     right_closed_last=case.right_closed_last)
    except NumpyFailsError as error:
        return error.index


def judged(got: np.ndarray, case: BinCase, counts: np.ndarray, edges: np.ndarray) -> Cell:
    """got against numpy's counts; where those differ from the samples binned
    by numpy's own edges, counts equal to the latter are a finding."""
    cell = _with_bin_edges(checks.equal(got, counts), edges, case.right_closed_last)
    if cell.status == "pass" or not isinstance(case.bins, int):
        return cell
    by_edges, _ = oracles.bin_histogram(case.samples, edges, None,
                                        right_closed_last=case.right_closed_last)
    if np.array_equal(by_edges, counts) or not np.array_equal(got, by_edges):
        return cell
    differ = np.flatnonzero(by_edges != counts)
    first = int(differ[0])
    how_many = f"{len(differ)} {'bins differ' if len(differ) != 1 else 'bin differs'}"
    return Cell("finding", f"binned by numpy's own edges: {how_many} from numpy's even-bin "
                           f"arithmetic (bin {first}: {int(counts[first])} by numpy's "
                           f"arithmetic, {int(by_edges[first])} by its edges); both answers "
                           f"are accepted",
                {"bins_differing": len(differ)})


def _with_bin_edges(cell: Cell, edges: np.ndarray, right_closed_last: bool) -> Cell:
    """cell with each differing bin's edges among its figures ("bin_edges":
    bin -> [low, high, whether high is in the bin]): numpy's edges are often
    the explanation (float16 samples get float16 edges)."""
    differences = (cell.figures or {}).get("differences")
    if cell.status != "FAIL" or not differences or len(edges) < 2:
        return cell
    last = len(edges) - 2
    bounds = {}
    for i, _, _ in differences:
        if 0 <= i <= last:
            bounds[str(i)] = [edges[i].item(), edges[i + 1].item(),
                              right_closed_last and i == last]
    return Cell(cell.status, cell.detail, {**cell.figures, "bin_edges": bounds})


@dataclass
class BinningCallable(PythonImpl):
    """A Python callable that bins as np.histogram does (pickled by name, as PythonImpl)."""

    def judge(self, case: BinCase) -> tuple[Cell, str]:
        want = expected(case)
        if isinstance(want, int):
            return Cell("skip", NUMPY_FAILS.format(index=want)), ""
        counts, edges = want
        bins = case.bins if isinstance(case.bins, int) else to_input_kind(
            case.bins, self.inputs, start_offset(np.asarray(case.bins)))
        samples = to_input_kind(case.samples, self.inputs, start_offset(np.asarray(case.samples)))
        try:
            result = self.function(samples, bins, case.range)
        except Exception as error:
            return Cell("FAIL", f"raised on valid input: {raised(error)}"), ""
        changed = changed_input(samples, np.asarray(case.samples), "samples")
        if changed is None and not isinstance(case.bins, int):
            changed = changed_input(bins, np.asarray(case.bins), "bins")
        if changed is not None:
            return changed, ""
        got_edges = None
        # A tuple is (counts, edges); so is a list of two arrays, where a list
        # of numbers is the counts themselves.
        pair = isinstance(result, tuple) or (
            isinstance(result, list) and len(result) == 2
            and all(np.ndim(part) >= 1 for part in result))
        if pair:
            if len(result) != 2:
                return Cell("FAIL", f"returned a {type(result).__name__} of {len(result)}; a "
                                    f"binning callable returns counts or (counts, edges)"), ""
            result, got_edges = result
        if result is None:
            return Cell("FAIL", "returned None; a binning callable returns counts"), ""
        try:
            got = to_numpy(result)
            cell = judged(got, case, counts, edges)
            if cell.status == "FAIL":  # the counts' type named where it cannot hold them
                cell = narrow_counts(cell, got, counts)
            elif cell.status == "pass":
                cell = inexact_counts(got, "samples") or cell
            if cell.status != "FAIL" and got_edges is not None:
                cell = _edges_cell(to_numpy(got_edges), edges)
        except WrongResult as error:
            return Cell("FAIL", str(error)), ""
        return cell, ""


def _edges_cell(got: np.ndarray, want: np.ndarray) -> Cell:
    """Edges equal numpy's in value (an edge array of another dtype that holds
    the same values passes: the counts are what was binned by them)."""
    if got.shape == want.shape and np.array_equal(got, want):
        return Cell("pass")
    return checks.equal(got.astype(want.dtype) if got.shape == want.shape else got, want,
                        "edge")


@dataclass(frozen=True)
class BinningCudaFile:
    """A .cu file by the binning kernel ABI (picklable: a worker rebuilds it)."""

    path: str
    kind: str
    entry: str = ENTRY
    defines: tuple[tuple[str, str], ...] = ()
    block: int = 256
    grid: int | None = None  # None: one thread per sample; N: a fixed (grid-stride) grid
    count_bits: int = 32

    @property
    def entries(self) -> tuple[str, ...]:
        return (self.entry,)

    def describe(self) -> str:
        return f"{self.path}:{self.entry}"

    def build_defines(self, samples: np.dtype, edges: np.dtype) -> dict[str, str]:
        from histkit.conformance.cuda_abi import COUNT_TYPES

        return {"SAMPLE_T": _c_type(samples), "EDGE_T": _c_type(edges),
                "COUNT_T": COUNT_TYPES[self.count_bits][0],
                "RIGHT_CLOSED_LAST": str(int(right_closed_last(self.kind))),
                **dict(self.defines)}

    def as_kernel(self) -> _CudaBinningJudge:
        """What a worker process judges cases with."""
        return _CudaBinningJudge(self)


def _widened(array: np.ndarray) -> np.ndarray:
    """float16 as float32 (exact: every float16 is a float32), the rest as they are."""
    return array.astype(np.float32) if array.dtype == np.float16 else array


def _c_type(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    return FLOAT_C_TYPES[dtype] if dtype.kind == "f" else KEY_C_TYPES[dtype]


class _CudaBinningJudge:
    """Builds and launches a binning .cu file on this process's GPU."""

    def __init__(self, impl: BinningCudaFile):
        self.impl = impl

    def judge(self, case: BinCase) -> tuple[Cell, str]:
        from histkit.conformance.binning import _samples_on_device
        from histkit.gpu.device import runtime
        from histkit.gpu.geometry import Geometry

        want = expected(case)
        if isinstance(want, int):
            return Cell("skip", NUMPY_FAILS.format(index=want)), ""
        counts, numpy_edges = want
        impl, rt = self.impl, runtime()
        samples = _widened(case.samples)
        edges = search_edges(case.samples.dtype, numpy_edges)
        kernel = rt.kernel(impl.path, impl.entry, impl.build_defines(samples.dtype, edges.dtype))
        keep: list = []
        on_device = _samples_on_device(rt, samples, keep)
        device_edges = rt.to_device(np.ascontiguousarray(edges))
        from histkit.conformance.cuda_abi import COUNT_TYPES

        count_dtype = np.dtype(COUNT_TYPES[impl.count_bits][1])
        hist = rt.zeros(max(len(counts), 1), count_dtype)
        grid = impl.grid or max(1, -(-case.n // impl.block))
        geometry = Geometry(impl.entry, grid, impl.block, 0)
        if case.n:
            rt.launch(kernel, geometry, on_device.ptr, np.int64(case.n), device_edges.ptr,
                      np.uint64(len(counts)), hist.ptr)
        got = rt.copy_to_host(hist.ptr, np.empty(len(counts), count_dtype))
        return judged(got, case, counts, numpy_edges), str(geometry)


def make_impl(impl, kind: str, *, inputs: str, defines, block: int, grid: int | None,
              count_bits: int):
    """A BinningCudaFile for ``file.cu[:entry]``, a BinningCallable for a callable."""
    if isinstance(impl, str) and impl.split(":")[0].endswith((".cu", ".cuh")):
        path, _, entry = impl.partition(":")
        file = Path(path).expanduser().resolve()
        if not file.is_file():
            raise FileNotFoundError(f"no such kernel file: {path}")
        if "," in entry:
            raise UsageError(f"a {kind} kernel has one entry point ({ENTRY}); got {entry}")
        return BinningCudaFile(str(file), kind, entry or ENTRY,
                               tuple(sorted((defines or {}).items())), block, grid, count_bits)
    return callable_impl(BinningCallable, impl, kind, inputs)


def compile_only(impl: BinningCudaFile, arch: str) -> str:
    """Compile impl for float32 samples (double edges); the entry it provides, or
    KernelCompileError with NVRTC's log (NVRTC only, no GPU)."""
    from histkit.gpu import compiler, contract

    defines = impl.build_defines(np.dtype(np.float32), np.dtype(np.float64))
    cubin = compiler.compile_cubin(impl.path, contract.defines_for(impl.path, defines), arch)
    if b"\x00" + impl.entry.encode() + b"\x00" not in cubin:
        raise UsageError(f"{impl.path} compiles for {arch} but has no entry {impl.entry} (a "
                         f"{impl.kind} kernel provides extern \"C\" __global__ {impl.entry})")
    return f"{impl.path} compiles for {arch} with entry {impl.entry}"


def smaller_inputs(case: BinCase):
    """Cases with fewer of its samples, most aggressive first (``fewer``),
    and, after the halves, every sample equal to the first (counts too
    narrow for a bin fail with all samples in one); then fewer of its edges,
    where it has edges. A bin count and range stay (with range=None the
    edges follow the data, as numpy's do)."""
    samples, n = case.samples, case.n
    for number, part in enumerate(fewer(n)):
        yield replace(case, name=UNNAMED, samples=samples[part])
        if number == 1 and n > 1 and not np.array_equal(samples, samples[:1].repeat(n),
                                                          equal_nan=True):
            yield replace(case, name=UNNAMED, samples=samples[:1].repeat(n))
    if not isinstance(case.bins, int):  # fewer edges: any of them stay in order
        for part in fewer(len(case.bins)):
            edges = case.bins[part]
            if len(edges) >= 2:
                yield replace(case, name=UNNAMED, bins=edges)


def shrink(judge, case: BinCase, same_failure=None) -> tuple[BinCase, str] | None:
    """The smallest input found that still FAILs (as same_failure(detail)
    says, where given), with its detail."""
    return shrink_by(judge, case, smaller_inputs, same_failure)
