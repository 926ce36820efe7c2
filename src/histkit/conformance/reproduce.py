"""Reproducers: the one case a failure was found on, as a command line and a
Python call that run it again with every option that shaped the run.

A short plain input (a shrunk one) is written out as ``--keys``; anything a
list of keys cannot carry (a skewed, fenced or misaligned case, a scan's
counts past ``INLINE_KEYS``, a large input) is named as the matrix case it
came from (``--case NAME``). Both print PASS once the bug is fixed.
"""

from __future__ import annotations

import functools
import itertools
import os
import shlex
import shutil
import sys

from histkit.conformance.cases import Case
from histkit.conformance.foreign import CudaFileImpl
from histkit.conformance.loading import source_file_name as source_path
from histkit.gpu.registry import FULL_WIDTH_KINDS

INLINE_KEYS = 64  # keys written out one by one in a reproducer
MAX_RUNS = 16  # more keys are written as runs of one value where they form at most this many
MAX_WRITTEN_KEYS = 1 << 22  # the most keys (or values) --keys writes, runs and all
LISTED_KEYS = 4096  # the most keys of many values a Python reproducer lists one by one
HISTOGRAM_KINDS = ("histogram", "racy-histogram", "wave", "privatized")


@functools.cache
def python_word() -> str:
    """How a reproducer names this Python: ``python3`` where the shell finds
    this very interpreter by that name (an activated environment), else its
    path, so that a reproducer never runs another install's histkit."""
    found = shutil.which("python3")
    if found and os.path.realpath(found) == os.path.realpath(sys.executable):
        return "python3"
    return shlex.quote(sys.executable)


@functools.cache
def histkit_word() -> str:
    """How a reproducer starts ``histkit``: the command where the shell finds
    this Python's own (beside it, as an environment installs it), else
    ``<this python> -m histkit``."""
    found = shutil.which("histkit")
    if found and os.path.dirname(os.path.abspath(found)) == os.path.dirname(
            os.path.abspath(sys.executable)):
        return "histkit"
    return f"{python_word()} -m histkit"


def runs(values) -> list[tuple[int, int]]:
    """values as (value, count) runs of equal neighbours."""
    out: list[tuple[int, int]] = []
    for value in values:
        if out and out[-1][0] == value:
            out[-1] = (value, out[-1][1] + 1)
        else:
            out.append((value, 1))
    return out


def can_write_out(values) -> bool:
    """Whether values are few enough, or of few enough runs, to write out
    (a shrunk input may hold millions of keys: the count stops past MAX_RUNS),
    and no more than the command line's --keys writes (MAX_WRITTEN_KEYS)."""
    if len(values) <= INLINE_KEYS:
        return True
    if len(values) > MAX_WRITTEN_KEYS:
        return False
    count = 1
    for before, value in itertools.pairwise(values):
        count += before != value
        if count > MAX_RUNS:
            return False
    return True


def keys_option(values) -> str:
    """values as ``--keys`` takes them: ``1,2,3`` or, past INLINE_KEYS, ``0*256,1``."""
    if len(values) <= INLINE_KEYS:
        return ",".join(map(str, values))
    return ",".join(f"{v}*{n}" if n > 1 else str(v) for v, n in runs(values))


def keys_python(values) -> str:
    """values as a Python list expression: ``[1, 2, 3]`` or ``[0] * 256 + [1]``."""
    if len(values) <= INLINE_KEYS:
        return f"[{', '.join(map(str, values))}]"
    return " + ".join(f"[{v}] * {n}" if n > 1 else f"[{v}]" for v, n in runs(values))


def _inline(case: Case) -> bool:
    """Whether case is a list of keys short enough to write out, and nothing else."""
    return (case.literal is not None and can_write_out(case.literal) and not case.offset
            and not case.skewed and not case.fenced)


def _spec(impl) -> str | None:
    """How the command line names impl (None: it cannot be named)."""
    if isinstance(impl, CudaFileImpl):
        path = source_path(impl.path)
        default = impl.entries == _default_entries(impl.kind)
        return path if default else f"{path}:{','.join(impl.entries)}"
    name = impl.describe()
    return name if ":" in name else None


def _default_entries(kind: str) -> tuple[str, ...]:
    from histkit.conformance.foreign import DEFAULT_ENTRIES

    return DEFAULT_ENTRIES.get(kind, ())


def source_options(defines, block: int, grid: int | None) -> list[tuple[str, object]]:
    """A .cu file's --define, --block and --grid options, those that differ
    from the defaults, as (option, value) in command-line spelling."""
    options: list[tuple[str, object]] = [("--define", f"{name}={value}")
                                         for name, value in defines]
    if block != 256:
        options.append(("--block", block))
    if grid is not None:
        options.append(("--grid", grid))
    return options


def _options(impl, kind: str, case: Case, named: bool) -> list[tuple[str, object]]:
    """(option, value) pairs, in command-line spelling, that differ from the
    defaults or that the kind always needs."""
    grid = impl.grid if named else (case.grid or impl.grid)
    options: list[tuple[str, object]] = []
    if isinstance(impl, CudaFileImpl):
        # a scan is launched on the user's --grid alone (cuda_abi's scan launcher)
        options += source_options(impl.defines, impl.block,
                                  impl.grid if kind == "scan" else grid)
        if impl.count_bits != 32 and kind in HISTOGRAM_KINDS:
            options.append(("--counts", impl.count_bits))
    else:
        if impl.inputs != "numpy":
            options.append(("--inputs", impl.inputs))
        if kind == "privatized":
            if impl.block != 256:
                options.append(("--block", impl.block))
            if grid is not None:
                options.append(("--grid", grid))
    if kind == "wave" and impl.warp_size != 32:
        options.append(("--warp-size", impl.warp_size))
    return options


_PYTHON_NAMES = {"--define": "defines", "--block": "block", "--grid": "grid",
                 "--counts": "count_bits", "--inputs": "inputs", "--warp-size": "warp_size"}


def _input(case: Case, original: Case | None) -> tuple[Case, bool]:
    """(the case to name, whether it is named as a matrix case rather than keys)."""
    if _inline(case):
        return case, False
    written = _written_out(case)
    if written is not None:
        return written, False
    if original is not None and original.literal is None:
        return original, True
    return case, case.literal is None


def _written_out(case: Case) -> Case | None:
    """A matrix case of at most INLINE_KEYS plain keys (no offset, skew or
    fence), as those keys: a failure no shrink made smaller is still given
    as an input to read and edit, not a case name (None: it is not such a case)."""
    if (case.literal is not None or case.n > INLINE_KEYS or case.offset or case.skewed
            or case.fenced):
        return None
    return Case.of_keys(case.keys(), case.num_bins, grid=case.grid,
                        full_width=case.full_width, scan_counts=case.scan_counts)


def no_command_line(impl) -> str:
    """Why a callable gets no command line: no name another process imports it by."""
    return (f"(none: {impl.describe()} has no name another process can import it by, as a "
            f"lambda, a local function, a functools.partial or a callable object has not; "
            f"a function at the top level of a module, given as module:function, has one)")


def command_line(impl, kind: str, case: Case, original: Case | None = None) -> str:
    """``histkit check SPEC --kind KIND ...`` for this case, or a sentence
    saying why there is none (a callable with no importable name)."""
    spec = _spec(impl)
    if spec is None:
        return no_command_line(impl)
    target, named = _input(case, original)
    words = [histkit_word(), "check", shlex.quote(spec), "--kind", kind]
    if named:
        words += ["--case", shlex.quote(target.name)]
    elif target.literal is not None:
        if not can_write_out(target.literal):
            return (f"(none: --keys writes {INLINE_KEYS} keys, or up to {MAX_WRITTEN_KEYS} "
                    f"in at most {MAX_RUNS} runs of one value, and these {len(target.literal)} "
                    f"are more; see the Python call)")
        keys = keys_option(target.literal) or "''"
        words.append(shlex.quote(f"--keys={keys}") if keys.startswith("-")
                     else f"--keys {shlex.quote(keys) if '*' in keys else keys}")
        if kind not in FULL_WIDTH_KINDS and kind != "scan":
            words += ["--num-bins", str(target.num_bins)]
        if kind != "scan":  # a scan's counts are handed over as int64, whatever their dtype
            words += ["--dtype", target.dtype]
    else:
        return "(none: the input is not a matrix case; see the Python call)"
    for option, value in _options(impl, kind, target, named):
        words += [option, shlex.quote(str(value))]
    return " ".join(words)


def python_call(impl, kind: str, case: Case, original: Case | None = None,
                timeout: float | None = None) -> str:
    """A ``python3 -c`` line that runs this case through check() and prints
    its verdict; for a callable with no importable name, the call to make
    with the function itself."""
    spec = _spec(impl)
    target, named = _input(case, original)
    arguments = [repr(spec) if spec else "your_function", repr(kind)]
    names = "check"  # what the call imports
    yours = ""  # the keys the call leaves to the caller, too many to write out
    if named:
        arguments.append(f"case={target.name!r}")
    elif target.literal is not None and (_inline(target) or not target.skewed):
        if can_write_out(target.literal) or len(target.literal) <= LISTED_KEYS:
            keys = (keys_python(target.literal) if can_write_out(target.literal)
                    else f"[{', '.join(map(str, target.literal))}]")
            arguments.append(f"keys=np.array({keys}, dtype={target.dtype!r})")
        else:
            arguments.append("keys=your_keys")
            yours = f"your_keys the {len(target.literal)} {target.dtype} keys checked"
        if kind not in FULL_WIDTH_KINDS and kind != "scan":
            arguments.append(f"num_bins={target.num_bins}")
    else:
        arguments.append(f"cases=[{target!r}]")
        names = "check, Case"  # the Case's repr names it
    values: dict[str, object] = {}
    for option, value in _options(impl, kind, target, named):
        name = _PYTHON_NAMES[option]
        if option == "--define":
            key, _, text = str(value).partition("=")
            values.setdefault(name, {})[key] = text
        else:
            values[name] = value
    arguments += [f"{name}={value!r}" for name, value in values.items()]
    arguments += timeout_argument(timeout)
    call = f"check({', '.join(arguments)})"
    code = verdict_script(call, names)
    if spec is None or yours:
        return f"(in your own code{', ' + yours if yours else ''}) {code}"
    return python_command(code)


def timeout_argument(timeout: float | None) -> list[str]:
    """check()'s ``timeout=`` as the run had it (none: the default), so that a
    hang reproduced takes as long as it took in the run."""
    return [] if timeout is None else [f"timeout={timeout:g}"]


def verdict_script(call: str, names: str = "check") -> str:
    """Python that imports `names` from histkit.conformance, prints the
    verdict of `call` (a check(...) expression) and exits with 1 where it
    failed, as ``histkit check`` does."""
    return (f"import sys, numpy as np; from histkit.conformance import {names}; "
            f"verdict = {call}; print(verdict); sys.exit(not verdict.passed)")


def python_command(code: str) -> str:
    """``python3 -c CODE``, quoted for a POSIX shell (double quotes where they
    are safe, as they read best)."""
    quoted = f'"{code}"' if not any(c in code for c in '"$`\\') else shlex.quote(code)
    return f"{python_word()} -c {quoted}"
