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

import time

import numpy as np

import histkit.conformance.check_binning as check_binning
import histkit.conformance.check_weighted as check_weighted
from histkit.conformance.cases import Case, cases_for
from histkit.conformance.check_judge import FROM_SOURCE, Judge
from histkit.conformance.check_shrink import call_alone, shrink_groups
from histkit.conformance.check_verdict import CheckReport, Failure
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
    load_callable_isolated,
)
from histkit.conformance.loading import (
    UsageError,
    check_inputs_available,
    check_signature,
)
from histkit.conformance.reproduce import histkit_word
from histkit.gpu.errors import GpuUnavailableError
from histkit.gpu.registry import BINNING_KINDS, CHECK_KINDS, FULL_WIDTH_KINDS, WEIGHTED_KINDS
from histkit.oracles._inputs import require_memory

DEFAULT_ARCH = "sm_90"



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
    elif kind not in FULL_WIDTH_KINDS:
        if num_bins is None:
            raise UsageError("keys= needs num_bins=")
        try:  # the judge's own answer holds num_bins int64 counts
            require_memory(8 * int(num_bins), f"judging num_bins={num_bins} (the oracle's "
                                              f"int64 counts)")
        except MemoryError as error:
            raise UsageError(str(error)) from None
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
            shrink_groups(judge, report, check_binning if binning
                          else check_weighted if weighted else None)
        if isolated and worker is None and report.failures:
            call_alone(implementation, timeout, report, judge)
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
