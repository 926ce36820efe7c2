"""Reproducers of a binning check's failure: a command line and a Python call
that run the one failing input again and print PASS once the bug is fixed.

A short input (a shrunk one) is written out: the samples, bins and range as
``np.histogram`` took them, every float written so that it reads back to the
same bits. An input a command line cannot carry (a misaligned view, a range
of NumPy scalars whose dtype steers numpy's edges, edges that are not
float64) is named as the matrix case it came from (``--case NAME``); the
Python call carries the NumPy scalars as they are.
"""

from __future__ import annotations

import math
import shlex

import numpy as np

from histkit.conformance.binning_cases import BinCase
from histkit.conformance.check_binning import ENTRY, BinningCudaFile
from histkit.conformance.reproduce import (
    can_write_out,
    histkit_word,
    no_command_line,
    python_command,
    runs,
    source_options,
    source_path,
    timeout_argument,
    verdict_script,
)
from histkit.conformance.shrinking import UNNAMED

INLINE_SAMPLES = 64  # samples (and edges) written out; more are named as their case
_PYTHON_NAMES = {"--block": "block", "--grid": "grid", "--counts": "count_bits",
                 "--inputs": "inputs"}


def _spec(impl) -> str | None:
    if isinstance(impl, BinningCudaFile):
        path = source_path(impl.path)
        return path if impl.entry == ENTRY else f"{path}:{impl.entry}"
    name = impl.describe()
    return name if ":" in name else None


def _number(value) -> str:
    """value written so that float() or the Python parser reads it back exactly."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    return repr(value)


def _inline(case: BinCase) -> bool:
    """Whether the samples are few, or of few runs, and the edges few, to write out."""
    samples = case.samples
    return (samples.ctypes.data % samples.itemsize == 0
            and (case.n <= INLINE_SAMPLES or can_write_out(samples.tolist()))
            and (isinstance(case.bins, int) or len(case.bins) <= INLINE_SAMPLES + 1))


def _samples_option(samples: list) -> str:
    """The samples as --samples takes them: ``0.5,1.0`` or, past
    INLINE_SAMPLES, runs ``0.5*256,1.0``."""
    if len(samples) <= INLINE_SAMPLES:
        return ",".join(str(v) for v in samples)
    return ",".join(f"{v}*{n}" if n > 1 else str(v) for v, n in runs(samples))


def _samples_python(samples: list) -> str:
    """The samples as a Python list expression, runs as ``[0.5] * 256``."""
    if len(samples) <= INLINE_SAMPLES:
        return f"[{', '.join(_number(v) for v in samples)}]"
    return " + ".join(f"[{_number(v)}] * {n}" if n > 1 else f"[{_number(v)}]"
                      for v, n in runs(samples))


def _plain_range(case: BinCase) -> bool:
    """Whether a command line's float range means the same as the case's."""
    return case.range is None or all(type(v) in (int, float) for v in case.range)


def _options(impl) -> list[tuple[str, object]]:
    if isinstance(impl, BinningCudaFile):
        options = source_options(impl.defines, impl.block, impl.grid)
        if impl.count_bits != 32:
            options.append(("--counts", impl.count_bits))
        return options
    return [("--inputs", impl.inputs)] if impl.inputs != "numpy" else []


def command_line(impl, kind: str, case: BinCase, original: BinCase | None = None) -> str:
    """``histkit check SPEC --kind KIND ...`` for this input, or why there is none."""
    spec = _spec(impl)
    if spec is None:
        return no_command_line(impl)
    words = [histkit_word(), "check", shlex.quote(spec), "--kind", kind]
    edges_plain = isinstance(case.bins, int) or case.bins.dtype == np.float64
    if _inline(case) and _plain_range(case) and edges_plain:
        samples = _samples_option(case.samples.tolist())
        words.append(shlex.quote(f"--samples={samples}") if samples.startswith("-")
                     or not samples else f"--samples {shlex.quote(samples)}")
        bins = str(case.bins) if isinstance(case.bins, int) else ",".join(
            repr(v) for v in case.bins.tolist())
        if not isinstance(case.bins, int) and len(case.bins) == 1:
            bins += ","  # one edge (no bins), not a bin count
        words.append(f"--bins={bins}" if bins.startswith("-")
                     else f"--bins {bins}" if bins else "--bins ''")
        if case.range is not None:
            words.append("--range=" + ",".join(repr(v) for v in case.range))
        words += ["--dtype", case.dtype]
    else:
        named = original if original is not None and original.name != UNNAMED else case
        if named.name == UNNAMED:
            why = ("NumPy scalars in range" if not _plain_range(case)
                   else f"{case.bins.dtype} edges" if not edges_plain
                   else f"{case.n} samples, or a misaligned start")
            return f"(none: a command line cannot carry {why}; see the Python call)"
        words += ["--case", shlex.quote(named.name)]
    for option, value in _options(impl):
        words += [option, shlex.quote(str(value))]
    return " ".join(words)


def python_call(impl, kind: str, case: BinCase, original: BinCase | None = None,
                timeout: float | None = None) -> str:
    """A ``python3 -c`` line that runs this input through check() and prints its verdict."""
    spec = _spec(impl)
    arguments = [repr(spec) if spec else "your_function", repr(kind)]
    if _inline(case):
        samples = _samples_python(case.samples.tolist())
        arguments.append(f"samples=np.array({samples}, dtype={case.dtype!r})")
        if isinstance(case.bins, int):
            arguments.append(f"bins={case.bins}")
        else:
            edges = ", ".join(_number(v) for v in case.bins.tolist())
            arguments.append(f"bins=np.array([{edges}], dtype={case.bins.dtype.name!r})")
        arguments.append(f"range={case.range!r}")
    else:
        named = original if original is not None and original.name != UNNAMED else case
        if named.name == UNNAMED:
            return (f"(none: {case.n} samples, too many to write out or starting "
                    f"misaligned; call check() with the same array)")
        arguments.append(f"case={named.name!r}")
    for option, value in _options(impl):
        if option != "--define":
            arguments.append(f"{_PYTHON_NAMES[option]}={value!r}")
    if isinstance(impl, BinningCudaFile) and impl.defines:
        arguments.append(f"defines={dict(impl.defines)!r}")
    arguments += timeout_argument(timeout)
    call = f"check({', '.join(arguments)})"
    code = verdict_script(call)
    if spec is None:
        return f"(in your own code) {code}"
    return python_command(code)
