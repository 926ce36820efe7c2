"""A user's weighted histogram, judged by the exact rule (kind ``weighted-histogram``).

Each bin must equal ``oracles.histogram(keys, num_bins, weights)``: the exact
sum of its weights rounded once to float64, which is ``math.fsum``'s value and
does not depend on the order of the additions. NaN equals NaN there; the sign
of a zero is not judged. A key outside ``[0, num_bins)`` must be reported by
raising ``ValueError`` that names its index, as the histogram kind asks. The
cases are ``histkit.conformance.weighted_cases``: a kernel that adds with
atomics, or left to right as ``np.bincount(keys, weights)`` does, fails the
cancellation cases.

A Python callable is called as ``f(keys, weights, num_bins)`` and returns the
sums (any float dtype; they are compared as float64). A CUDA C++ file
provides, by the kernel ABI (``KEY_T`` and ``WEIGHT_T``, ``float`` or
``double``, come as -D defines)::

    extern "C" __global__ void weighted_histogram(
        const KEY_T* keys, const WEIGHT_T* weights, long long n,
        unsigned long long num_bins, double* sums, unsigned long long* first_bad)

sums start at +0.0; first_bad starts at ~0ULL, and a kernel that meets a key
outside [0, num_bins) lowers it to that key's index (atomicMin). Blocks of
``block`` threads; ``grid=None`` launches one thread per key, a fixed grid
means the kernel walks the keys grid-stride.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from histkit import oracles
from histkit.conformance import checks
from histkit.conformance.checks import Cell
from histkit.conformance.foreign import (
    HOW_TO_REPORT,
    PythonImpl,
    WrongResult,
    callable_impl,
    changed_input,
    raised_cell,
    reported_index,
    to_input_kind,
    to_numpy,
)
from histkit.conformance.loading import UsageError
from histkit.conformance.reproduce import (
    histkit_word,
    no_command_line,
    python_command,
    source_options,
    source_path,
    timeout_argument,
    verdict_script,
)
from histkit.conformance.shrinking import UNNAMED, fewer, shrink_by
from histkit.conformance.weighted_cases import WeightedCase, weighted_cases

KIND = "weighted-histogram"
INLINE = 64  # keys and weights written out in a reproducer
ENTRY = "weighted_histogram"
WEIGHT_C_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def expected(case: WeightedCase) -> np.ndarray | int:
    """The exact sums, or the index of the first key outside [0, num_bins)."""
    try:
        return oracles.histogram(case.keys, case.num_bins, case.weights)
    except oracles.BadKeyError as error:
        return int(error.index)


def compare(got: np.ndarray, want: np.ndarray) -> Cell:
    """got equal to want as float64 values, NaN equal to NaN."""
    got = np.asarray(got)
    if got.dtype.kind not in "fiu":
        return Cell("FAIL", f"returned sums of dtype {got.dtype}; a weighted histogram "
                            f"returns floats")
    got = got.astype(np.float64)
    if got.shape != want.shape:
        return checks.equal(got, want)
    both = np.isnan(got) & np.isnan(want)
    got, want = np.where(both, 0.0, got), np.where(both, 0.0, want)
    cell = checks.equal(got, want)
    if cell.status != "FAIL":
        return cell
    # IEEE's rules are bugs of their own, each its own group of failures
    first = int(np.flatnonzero(got != want)[0])
    expected, returned = want[first], got[first]
    ieee = ("the exact sum is NaN, from a NaN weight or +inf with -inf" if np.isnan(expected)
            else "the sum is infinite, from an infinite weight or an exact sum past the "
                 "largest float64" if np.isinf(expected)
            else "the exact sum is finite, as every weight of the bin is, but the result is "
                 "NaN" if np.isnan(returned)
            else "the exact sum is finite, but the result is infinite: a partial sum "
                 "overflowed" if np.isinf(returned) else "")
    if not ieee:
        return cell
    head, sep, rest = cell.detail.partition(":")
    return replace(cell, detail=f"{head} ({ieee}){sep}{rest}")


def one_case(keys, weights, num_bins) -> WeightedCase:
    keys, weights = np.asarray(keys), np.asarray(weights)
    if keys.dtype.kind not in "iu" or keys.ndim != 1:
        raise UsageError(f"keys must be one-dimensional integers; got {keys.dtype} of shape "
                         f"{keys.shape}")
    if weights.dtype not in (np.float32, np.float64) or weights.shape != keys.shape:
        raise UsageError(f"weights must be float32 or float64, one per key; got "
                         f"{weights.dtype} of shape {weights.shape} for {len(keys)} "
                         f"key{'' if len(keys) == 1 else 's'}")
    if num_bins is None or int(num_bins) < 1:
        raise UsageError(f"a weighted histogram needs num_bins >= 1; got {num_bins}")
    return WeightedCase(UNNAMED, keys, weights, int(num_bins))


def find_case(name: str) -> WeightedCase:
    for case in weighted_cases():
        if case.name == name:
            return case
    raise UsageError(f"no {KIND} case is named {name!r} (names are printed by histkit "
                     f"check -v and in its --json report)")


@dataclass
class WeightedCallable(PythonImpl):
    """``f(keys, weights, num_bins) -> sums`` (pickled by name, as PythonImpl)."""

    def judge(self, case: WeightedCase) -> tuple[Cell, str]:
        want = expected(case)
        keys, weights = to_input_kind(case.keys, self.inputs), to_input_kind(case.weights,
                                                                             self.inputs)
        bad = (oracles.BadKeyError(want, case.keys[want].item(), case.num_bins)
               if isinstance(want, int) else None)
        try:
            result = self.function(keys, weights, case.num_bins)
        except Exception as error:
            cell = raised_cell(error, None if bad is None else bad.index,
                               None if bad is None else bad.value)
            if cell is not None:
                return cell, ""
            return checks.bad_key_rule(bad, reported_index(error)), ""
        changed = (changed_input(keys, case.keys, "keys")
                   or changed_input(weights, case.weights, "weights"))
        if changed is not None:
            return changed, ""
        if bad is not None:
            cell = checks.bad_key_rule(bad, checks.NO_REPORT)
            return replace(cell, detail=f"{cell.detail}; {HOW_TO_REPORT}"), ""
        if result is None:
            return Cell("FAIL", "returned None; a weighted histogram returns the sums"), ""
        try:
            return compare(to_numpy(result), want), ""
        except WrongResult as error:
            return Cell("FAIL", str(error)), ""


@dataclass(frozen=True)
class WeightedCudaFile:
    """A .cu file by the weighted kernel ABI (picklable: a worker rebuilds it)."""

    path: str
    entry: str = ENTRY
    defines: tuple[tuple[str, str], ...] = ()
    block: int = 256
    grid: int | None = None  # None: one thread per key; N: a fixed (grid-stride) grid
    kind: str = KIND

    @property
    def entries(self) -> tuple[str, ...]:
        return (self.entry,)

    def describe(self) -> str:
        return f"{self.path}:{self.entry}"

    def build_defines(self, keys: np.dtype, weights: np.dtype) -> dict[str, str]:
        from histkit.gpu.contract import KEY_C_TYPES

        return {"KEY_T": KEY_C_TYPES[np.dtype(keys)],
                "WEIGHT_T": WEIGHT_C_TYPES[np.dtype(weights)], **dict(self.defines)}

    def as_kernel(self) -> _CudaWeightedJudge:
        """What a worker process judges cases with."""
        return _CudaWeightedJudge(self)


class _CudaWeightedJudge:
    """Builds and launches a weighted .cu file on this process's GPU."""

    def __init__(self, impl: WeightedCudaFile):
        self.impl = impl

    def judge(self, case: WeightedCase) -> tuple[Cell, str]:
        from histkit.gpu.contract import NO_BAD_KEY
        from histkit.gpu.device import runtime
        from histkit.gpu.geometry import Geometry

        want = expected(case)
        impl, rt = self.impl, runtime()
        kernel = rt.kernel(impl.path, impl.entry,
                           impl.build_defines(case.keys.dtype, case.weights.dtype))
        keys = rt.to_device(np.ascontiguousarray(case.keys))
        weights = rt.to_device(np.ascontiguousarray(case.weights))
        sums = rt.empty(max(case.num_bins, 1), np.float64)
        rt.memset(sums.ptr, 0, max(case.num_bins, 1) * 8)  # the ABI hands over +0.0 sums
        first_bad = rt.empty(1, np.uint64)
        rt.memset(first_bad.ptr, 0xFF, 8)
        grid = impl.grid or max(1, -(-case.n // impl.block))
        geometry = Geometry(impl.entry, grid, impl.block, 0)
        if case.n:
            rt.launch(kernel, geometry, keys.ptr, weights.ptr, np.int64(case.n),
                      np.uint64(case.num_bins), sums.ptr, first_bad.ptr)
        got = rt.copy_to_host(sums.ptr, np.empty(case.num_bins, np.float64))
        bad = rt.read_word(first_bad.ptr)
        if isinstance(want, int):
            if bad != want:
                reported = "none" if bad == NO_BAD_KEY else bad
                return Cell("FAIL", f"the first bad key is at index {want}; the kernel "
                                    f"reported {reported}"), str(geometry)
            return Cell("pass"), str(geometry)
        if bad != NO_BAD_KEY:
            return Cell("FAIL", f"reported a bad key at index {bad}; every key is in [0, "
                                f"{case.num_bins})"), str(geometry)
        return compare(got, want), str(geometry)


def make_impl(impl, *, inputs: str, defines=None, block: int = 256, grid: int | None = None):
    """A WeightedCudaFile for ``file.cu[:entry]``, a WeightedCallable for a callable."""
    if isinstance(impl, str) and impl.split(":")[0].endswith((".cu", ".cuh")):
        path, _, entry = impl.partition(":")
        file = Path(path).expanduser().resolve()
        if not file.is_file():
            raise FileNotFoundError(f"no such kernel file: {path}")
        if "," in entry:
            raise UsageError(f"a {KIND} kernel has one entry point ({ENTRY}); got {entry}")
        return WeightedCudaFile(str(file), entry or ENTRY,
                                tuple(sorted((defines or {}).items())), block, grid)
    return callable_impl(WeightedCallable, impl, KIND, inputs)


def compile_only(impl: WeightedCudaFile, arch: str) -> str:
    """Compile impl for int32 keys and float32 weights; the entry it provides,
    or KernelCompileError with NVRTC's log (NVRTC only, no GPU)."""
    from histkit.gpu import compiler, contract

    defines = impl.build_defines(np.dtype(np.int32), np.dtype(np.float32))
    cubin = compiler.compile_cubin(impl.path, contract.defines_for(impl.path, defines), arch)
    if b"\x00" + impl.entry.encode() + b"\x00" not in cubin:
        raise UsageError(f"{impl.path} compiles for {arch} but has no entry {impl.entry} (a "
                         f"{KIND} kernel provides extern \"C\" __global__ {impl.entry})")
    return f"{impl.path} compiles for {arch} with entry {impl.entry}"


def smaller_inputs(case: WeightedCase):
    """Fewer keys with their weights, most aggressive first (``fewer``);
    num_bins stays."""
    for number, part in enumerate(fewer(case.n)):
        yield replace(case, name=UNNAMED, keys=case.keys[part], weights=case.weights[part])
        if number == 1:  # after the halves: fewer bins, or one
            yield from _fewer_bins(case)
    if case.n == 1:
        yield from _fewer_bins(case)


def _fewer_bins(case: WeightedCase):
    """case with every key in bin 0 of one bin, and with as many bins as its
    largest key needs (where either is fewer; keys past num_bins stay put:
    a bad key's case keeps its bins)."""
    keys = case.keys
    if not len(keys) or keys.min() < 0 or keys.max() >= case.num_bins:
        return
    if case.num_bins > 1:
        yield replace(case, name=UNNAMED, keys=np.zeros_like(keys), num_bins=1)
    needed = int(keys.max()) + 1
    if 1 < needed < case.num_bins:
        yield replace(case, name=UNNAMED, num_bins=needed)


def shrink(judge, case: WeightedCase, same_failure=None) -> tuple[WeightedCase, str] | None:
    """The smallest input found that still FAILs (as same_failure(detail)
    says, where given), with its detail."""
    return shrink_by(judge, case, smaller_inputs, same_failure)


def _number(value: float) -> str:
    return f"float('{value}')" if not math.isfinite(value) else repr(value)


def _named(case: WeightedCase, original: WeightedCase | None) -> str | None:
    named = original if original is not None and original.name != UNNAMED else case
    return None if named.name == UNNAMED else named.name


def _spec(impl) -> str | None:
    """How a command line names impl: a .cu path (relative where it is below
    the current directory), or a callable's importable name."""
    if isinstance(impl, WeightedCudaFile):
        path = source_path(impl.path)
        return path if impl.entry == ENTRY else f"{path}:{impl.entry}"
    name = impl.describe()
    return name if ":" in name else None


def _options(impl) -> list[tuple[str, object]]:
    """The command line's options that rebuild impl as it was judged."""
    if isinstance(impl, WeightedCudaFile):
        return source_options(impl.defines, impl.block, impl.grid)
    return [("--inputs", impl.inputs)] if impl.inputs != "numpy" else []


def command_line(impl, kind: str, case: WeightedCase,
                 original: WeightedCase | None = None) -> str:
    spec = _spec(impl)
    if spec is None:
        return no_command_line(impl)
    words = [histkit_word(), "check", shlex.quote(spec), "--kind", kind]
    if case.n <= INLINE:
        keys = ",".join(map(str, case.keys.tolist())) or "''"
        weights = ",".join(str(w) for w in case.weights.tolist()) or "''"
        words += [f"--keys={keys}", f"--weights={weights}", "--num-bins", str(case.num_bins),
                  "--dtype", case.keys.dtype.name, "--weights-dtype", case.weights.dtype.name]
    elif _named(case, original):
        words += ["--case", shlex.quote(_named(case, original))]
    else:
        return "(none: the input is not a matrix case; see the Python call)"
    for option, value in _options(impl):
        words += [option, shlex.quote(str(value))]
    return " ".join(words)


def python_call(impl, kind: str, case: WeightedCase,
                original: WeightedCase | None = None, timeout: float | None = None) -> str:
    spec = _spec(impl)
    arguments = [repr(spec) if spec else "your_function", repr(kind)]
    if case.n <= INLINE:
        weights = ", ".join(_number(w) for w in case.weights.tolist())
        arguments += [f"keys=np.array({case.keys.tolist()}, dtype={case.keys.dtype.name!r})",
                      f"weights=np.array([{weights}], dtype={case.weights.dtype.name!r})",
                      f"num_bins={case.num_bins}"]
    elif _named(case, original):
        arguments.append(f"case={_named(case, original)!r}")
    else:
        return "(none: the input is too long to write out; call check() with the same arrays)"
    for option, value in _options(impl):
        if option != "--define":
            arguments.append(f"{option[2:]}={value!r}")
    if isinstance(impl, WeightedCudaFile) and impl.defines:
        arguments.append(f"defines={dict(impl.defines)!r}")
    arguments += timeout_argument(timeout)
    call = f"check({', '.join(arguments)})"
    code = verdict_script(call)
    if spec is None:
        return f"(in your own code) {code}"
    return python_command(code)
