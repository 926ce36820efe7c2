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
sums (any float dtype; they are compared as float64). The kernel ABI has no
weighted kind: a CUDA kernel is handed over as a callable that launches it.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, replace

import numpy as np

from histkit import oracles
from histkit.conformance import checks
from histkit.conformance.checks import Cell
from histkit.conformance.foreign import (
    PythonImpl,
    callable_impl,
    reported_index,
    to_input_kind,
    to_numpy,
)
from histkit.conformance.loading import UsageError
from histkit.conformance.reproduce import python_command
from histkit.conformance.shrinking import UNNAMED, shrink_by
from histkit.conformance.weighted_cases import WeightedCase, weighted_cases

KIND = "weighted-histogram"
INLINE = 64  # keys and weights written out in a reproducer


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
    if got.shape == want.shape:
        both = np.isnan(got) & np.isnan(want)
        got, want = np.where(both, 0.0, got), np.where(both, 0.0, want)
    return checks.equal(got, want)


def one_case(keys, weights, num_bins) -> WeightedCase:
    keys, weights = np.asarray(keys), np.asarray(weights)
    if keys.dtype.kind not in "iu" or keys.ndim != 1:
        raise UsageError(f"keys must be one-dimensional integers; got {keys.dtype} of shape "
                         f"{keys.shape}")
    if weights.dtype not in (np.float32, np.float64) or weights.shape != keys.shape:
        raise UsageError(f"weights must be float32 or float64, one per key; got "
                         f"{weights.dtype} of shape {weights.shape} for {len(keys)} keys")
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
        try:
            result = self.function(to_input_kind(case.keys, self.inputs),
                                   to_input_kind(case.weights, self.inputs), case.num_bins)
        except ValueError as error:
            if not isinstance(want, int):
                return Cell("FAIL", f"raised on valid input: ValueError: {error}"), ""
            index = reported_index(error)
            if index != want:
                return Cell("FAIL", f"the first bad key is at index {want}; the error named "
                                    f"{'none' if index is None else index}"), ""
            return Cell("pass"), ""
        except Exception as error:
            return Cell("FAIL", f"raised on valid input: {type(error).__name__}: {error}"), ""
        if isinstance(want, int):
            return Cell("FAIL", f"key {case.keys[want]} at index {want} is outside [0, "
                                f"{case.num_bins}) and was not reported"), ""
        if result is None:
            return Cell("FAIL", "returned None; a weighted histogram returns the sums"), ""
        return compare(to_numpy(result), want), ""


def make_impl(impl, *, inputs: str):
    if isinstance(impl, str) and impl.split(":")[0].endswith((".cu", ".cuh")):
        raise UsageError(f"the kernel ABI has no {KIND} kernels; hand a {KIND} as a Python "
                         f"callable that launches it")
    return callable_impl(WeightedCallable, impl, KIND, inputs)


def smaller_inputs(case: WeightedCase):
    """Fewer keys with their weights, most aggressive first; num_bins stays."""
    n = case.n
    if n > 1:
        cut = max(1, n // 8)
        for part in (slice(0, n // 2), slice(n // 2, n), slice(0, n - cut), slice(cut, n)):
            yield replace(case, name=UNNAMED, keys=case.keys[part], weights=case.weights[part])


def shrink(judge, case: WeightedCase) -> tuple[WeightedCase, str] | None:
    """The smallest input found that still FAILs, with its detail."""
    return shrink_by(judge, case, smaller_inputs)


def _number(value: float) -> str:
    return f"float('{value}')" if not math.isfinite(value) else repr(value)


def _named(case: WeightedCase, original: WeightedCase | None) -> str | None:
    named = original if original is not None and original.name != UNNAMED else case
    return None if named.name == UNNAMED else named.name


def command_line(impl, kind: str, case: WeightedCase,
                 original: WeightedCase | None = None) -> str:
    name = impl.describe()
    if ":" not in name:
        return (f"(none: {name} has no importable name, a lambda or a local function; "
                f"define it at the top level of a module to get one)")
    words = ["histkit", "check", shlex.quote(name), "--kind", kind]
    if case.n <= INLINE:
        keys = ",".join(map(str, case.keys.tolist())) or "''"
        weights = ",".join(str(w) for w in case.weights.tolist()) or "''"
        words += [f"--keys={keys}", f"--weights={weights}", "--num-bins", str(case.num_bins),
                  "--dtype", case.keys.dtype.name, "--weights-dtype", case.weights.dtype.name]
    elif _named(case, original):
        words += ["--case", shlex.quote(_named(case, original))]
    else:
        return "(none: the input is not a matrix case; see the Python call)"
    if impl.inputs != "numpy":
        words += ["--inputs", impl.inputs]
    return " ".join(words)


def python_call(impl, kind: str, case: WeightedCase,
                original: WeightedCase | None = None) -> str:
    name = impl.describe()
    spec = name if ":" in name else None
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
    if impl.inputs != "numpy":
        arguments.append(f"inputs={impl.inputs!r}")
    code = ("import numpy as np; from histkit.conformance import check; "
            f"print(check({', '.join(arguments)}))")
    if spec is None:
        return f"(in your own code) {code}"
    return python_command(code)
