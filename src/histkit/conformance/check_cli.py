"""``histkit check KERNEL --kind KIND``: the command-line way into check().

Exit status: 0 when nothing FAILs, 1 when something does (or a .cu file
does not compile), 2 on usage errors (a missing file, an unknown kind, keys
that do not fit their dtype, a callable of the wrong signature, a missing
framework, an unwritable --json path, a .cu verdict asked of a machine with
no GPU), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from histkit.cli_args import bounded_int, positive_seconds, writable_file
from histkit.conformance.isolation import DEFAULT_TIMEOUT_S
from histkit.conformance.loading import CALL_FORMS, call_form
from histkit.conformance.reproduce import MAX_WRITTEN_KEYS
from histkit.conformance.sanitize import TOOLS as SANITIZERS
from histkit.gpu.registry import BINNING_KINDS, CHECK_KINDS, FULL_WIDTH_KINDS, WEIGHTED_KINDS

KEY_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
SAMPLE_DTYPES = ("float16", "float32", "float64", *KEY_DTYPES)


def _define(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"--define takes NAME=VALUE; got {text!r}")
    return name, value


def _grid(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--grid takes a block count or 'auto'; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--grid must be >= 1; got {value}")
    return value


def _words(text: str, option: str) -> list[str]:
    """The comma-separated words of an option's value (none for an empty
    value: an empty input). One comma may end it (``--bins 1.0,`` is one edge,
    not a bin count); an empty word before another is a typo that would
    change the input without a word, so it is refused."""
    if not text.strip():
        return []
    words = [w.strip() for w in text.split(",")]
    if words[-1] == "":
        words.pop()
    if "" in words:
        raise argparse.ArgumentTypeError(
            f"{option} has an empty element at position {words.index('')} of {text!r} "
            f"(two commas in a row, or one at its start)")
    return words


def _keys(text: str) -> list[int]:
    """--keys: comma-separated integers, a run of one value as VALUE*COUNT
    (``0*256,1*3``: how a verdict writes a long input of few runs)."""
    keys: list[int] = []
    for word in _words(text, "--keys"):
        value, star, count = word.partition("*")
        try:
            value, count = int(value), int(count) if star else 1
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--keys takes comma-separated integers, a run as VALUE*COUNT; got {word!r}"
            ) from None
        if count < 1:
            raise argparse.ArgumentTypeError(f"--keys run {word!r}: a count of at least 1")
        if len(keys) + count > MAX_WRITTEN_KEYS:
            raise argparse.ArgumentTypeError(
                f"--keys writes at most {MAX_WRITTEN_KEYS} keys; a larger input is a --case")
        keys += [value] * count
    return keys


def _dtype(text: str) -> str:
    if text not in SAMPLE_DTYPES:
        raise argparse.ArgumentTypeError(f"--dtype must be one of {', '.join(SAMPLE_DTYPES)} "
                                         f"(float dtypes for --samples only); got {text!r}")
    return text


def _numbers(option: str):
    """comma-separated numbers, a run of one value as VALUE*COUNT (``0.5*256``)."""
    def parse(text: str) -> list[str]:
        words: list[str] = []
        for word in _words(text, option):
            value, star, count = word.partition("*")
            try:
                float(value)
                count = int(count) if star else 1
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{option} takes comma-separated numbers (nan, inf too), a run as "
                    f"VALUE*COUNT; got {word!r}") from None
            if count < 1:
                raise argparse.ArgumentTypeError(f"{option} run {word!r}: a count of at "
                                                 f"least 1")
            if len(words) + count > MAX_WRITTEN_KEYS:
                raise argparse.ArgumentTypeError(
                    f"{option} writes at most {MAX_WRITTEN_KEYS} values; a larger input "
                    f"is a --case")
            words += [value.strip()] * count
        return words
    return parse


def samples_array(words: list[str], dtype: str, option: str = "--samples"):
    """--samples (or --weights) as an array of dtype, every value exactly as
    written, or ValueError naming the first that does not fit."""
    import numpy as np

    if np.dtype(dtype).kind == "f":
        values = [float(w) for w in words]
        array = np.array(values, dtype=dtype)
        for value, stored in zip(values, array.tolist(), strict=True):
            if value == value and stored != value:
                raise ValueError(f"{option} value {value!r} is not a {dtype}; it rounds to "
                                 f"{stored!r}")
        return array
    try:
        return keys_array([int(w) for w in words], dtype)
    except ValueError as error:
        raise ValueError(str(error).replace("--keys", option)) from None


def range_value(words: list[str]) -> tuple:
    """--range as np.histogram takes it: an integer as a Python int (numpy
    subtracts integer bounds exactly), anything else as a float."""
    return tuple(int(w) if w.lstrip("-").isdigit() else float(w) for w in words)


def bins_value(words: list[str]):
    """--bins: one integer (even bins), else the edges as float64."""
    import numpy as np

    if len(words) == 1 and words[0].lstrip("-").isdigit():
        return int(words[0])
    return np.array([float(w) for w in words], dtype=np.float64)


def keys_array(values: list[int], dtype: str):
    """values as an array of dtype, or ValueError naming the first that does not fit."""
    import numpy as np

    info = np.iinfo(dtype)
    fits = not values or (info.min <= min(values) and max(values) <= info.max)
    for value in () if fits else values:
        if not info.min <= value <= info.max:
            raise ValueError(f"--keys value {value} does not fit --dtype {dtype} "
                             f"[{info.min}, {info.max}]")
    return np.array(values, dtype=dtype)


def _table(rows: dict) -> str:
    """name: text rows, the texts aligned past the longest name."""
    width = max(map(len, rows))
    return "\n".join(f"  {name:{width}}  {text}" for name, text in rows.items())


CALLABLES_HELP = "A Python callable of each kind is called as:\n" + _table(
    {kind: call_form(kind) for kind in CALL_FORMS})


def add_check_parser(commands, formatter, handler) -> None:
    check = commands.add_parser(
        "check", formatter_class=formatter,
        help="judge YOUR kernel (a .cu file or a Python callable) by the conformance suite",
        description="Judge an implementation of a histogram, a binning of real values, a "
                    "weighted histogram, a scan or a sort: a CUDA C++ file "
                    "(path/to/file.cu[:entry]) compiled with NVRTC, or a Python callable "
                    "(package.module:function or path/to/file.py:function), on the "
                    "conformance cases, by the rule of its kind:\n" + _table(CHECK_KINDS),
        epilog=CALLABLES_HELP + "\nA bad key is reported by raising ValueError naming "
               "'index N' of the first one.\nExit status: 0 PASS, 1 FAIL, 2 usage error or "
               "nothing to run it on (a .cu file where no GPU is: --compile-only compiles "
               "it).")
    check.add_argument("kernel", metavar="KERNEL",
                       help="path/to/file.cu[:entry[,entry]], package.module:function or "
                            "path/to/file.py:function")
    check.add_argument("--kind", required=True, choices=tuple(CHECK_KINDS),
                       help="the rule to judge by (required)")
    mode = check.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="quick", action="store_true", default=True,
                      help="the quick matrix, the default (cases up to 2^22 keys; a .cu "
                           "histogram, privatized or racy-histogram kernel also gets its "
                           "cases past 2^31 one-byte keys, 2 GiB of GPU memory, and a .cu "
                           "sort or stable-sort the fenced one, 21 GiB)")
    mode.add_argument("--full", dest="quick", action="store_false",
                      help="add the 2^28 and > 2^31 key cases (binning kinds: 2^24-2^26 "
                           "samples; weighted-histogram: no more cases)")
    one = check.add_argument_group("one input instead of the matrix")
    one.add_argument("--keys", type=_keys, metavar="K,K,...",
                     help="these keys (with --num-bins; a scan's counts for --kind scan); "
                          "negative keys as --keys -1,2 or --keys=-1,2; a run of one "
                          "value as VALUE*COUNT, e.g. '0*256,1'")
    one.add_argument("--num-bins", type=bounded_int(1, 2**62), metavar="N",
                     help="num_bins for --keys (not for --kind scan or radix-sort)")
    one.add_argument("--dtype", type=_dtype, default=None, metavar="DTYPE",
                     help="dtype of --keys (default int32; an integer dtype; none for a "
                          "scan, whose counts are int64) or --samples (default float64): "
                          + ", ".join(SAMPLE_DTYPES))
    one.add_argument("--samples", type=_numbers("--samples"), metavar="X,X,...",
                     help="a binning kind's samples (with --bins, and --range where "
                          "wanted), as np.histogram(samples, bins, range) takes them")
    one.add_argument("--bins", type=_numbers("--bins"), metavar="N|E,E,...",
                     help="for --samples: a bin count (an integer), or the edges (float64; "
                          "a single edge, which makes no bins, as --bins 1.0,)")
    one.add_argument("--range", type=_numbers("--range"), metavar="LO,HI",
                     help="for --samples: np.histogram's range (float64)")
    one.add_argument("--weights", type=_numbers("--weights"), metavar="W,W,...",
                     help="--kind weighted-histogram: one weight per --keys key")
    one.add_argument("--weights-dtype", choices=("float32", "float64"), default="float64",
                     help="dtype of --weights (default float64)")
    one.add_argument("--case", metavar="NAME", help="the one matrix case of this name "
                     "(as a reproducer or -v names it)")
    launch = check.add_argument_group("how a .cu kernel is built and launched")
    launch.add_argument("--define", action="append", type=_define, default=[],
                        metavar="NAME=VALUE", help="a -D define for the .cu compile")
    launch.add_argument("--block", type=bounded_int(1, 1024), default=256,
                        help="threads per block (.cu kernels); block_size for Python "
                             "privatized callables")
    launch.add_argument("--grid", type=_grid, default=None, metavar="N|auto",
                        help="auto (the default): one thread per key; N: a fixed grid (the "
                             "kernel is grid-stride, and forced small grids apply too)")
    launch.add_argument("--counts", type=int, choices=(32, 64), default=32,
                        help="COUNT_T of a .cu histogram: 32-bit (the chapter's) or 64-bit")
    launch.add_argument("--warp-size", type=bounded_int(1, 64), default=32,
                        help="the wave width of a wave kernel (at most 32 for a .cu one: "
                             "one warp)")
    launch.add_argument("--arch", default="sm_90",
                        help="the architecture a .cu file is compiled for where no GPU "
                             "says which (--compile-only, or no GPU here)")
    launch.add_argument("--compile-only", action="store_true",
                        help="compile the .cu file with NVRTC and stop (no GPU needed)")
    run = check.add_argument_group("how it runs and what it prints")
    run.add_argument("--inputs", choices=("auto", "numpy", "cupy", "torch"), default="auto",
                     help="the array kind a Python callable receives (auto means numpy)")
    run.add_argument("--in-process", action="store_true",
                     help="run a Python callable in this process (for a debugger) rather "
                          "than in a worker process that a crash or hang cannot take down")
    run.add_argument("--timeout", type=positive_seconds, default=None,
                     help=f"seconds a case may run before it counts as a hang (default "
                          f"{DEFAULT_TIMEOUT_S:g}, and a second more per 2^23 keys); after "
                          "a hang, cases as large get at most 10 s; after two, cases "
                          "as large in a dtype that hung are not run, nor any case of a "
                          ".cu kernel")
    run.add_argument("--no-shrink", action="store_true",
                     help="report failing cases as they are, without a minimal input")
    run.add_argument("--max-failures", type=bounded_int(0, 10**6), default=3, metavar="N",
                     help="kinds of failure shown in full")
    run.add_argument("-v", "--verbose", action="store_true", help="print every cell")
    run.add_argument("--json", type=writable_file,
                     help="write the report (every cell, every failure) here")
    run.add_argument("--sanitize", choices=SANITIZERS,
                     help="run the whole check under compute-sanitizer with this tool")
    check.set_defaults(run=handler)


def _under_sanitizer(args) -> int:
    argv = list(args.argv)
    at = next(i for i, word in enumerate(argv) if word.startswith("--sanitize"))
    del argv[at:at + (1 if "=" in argv[at] else 2)]
    command = ["compute-sanitizer", "--tool", args.sanitize, "--report-api-errors", "no",
               "--error-exitcode", "1", sys.executable, "-m", "histkit", *argv]
    try:
        return subprocess.run(command, env={**os.environ}).returncode
    except FileNotFoundError:
        print("histkit check: --sanitize needs compute-sanitizer (CUDA toolkit) on PATH",
              file=sys.stderr)
        return 2


def _usage(console, message) -> int:
    console.print(f"histkit check: {message}", markup=False, highlight=False)
    return 2


def _does_not_compile(console, kernel: str, error) -> int:
    """A .cu file NVRTC rejects: the kernel's FAIL (exit 1), with NVRTC's log."""
    console.print(f"[bold red]FAIL[/]: {kernel} does not compile", highlight=False)
    console.print(str(error), markup=False, highlight=False)
    return 1


def run_check_command(args, console) -> int:
    from histkit.conformance import check_output
    from histkit.conformance.check import (
        FROM_SOURCE,
        check,
        compile_only,
        launch_option_problem,
        make_impl,
        names_source,
    )
    from histkit.gpu.errors import GpuUnavailableError, KernelCompileError

    if args.sanitize:
        return _under_sanitizer(args)
    try:
        keys = None
        binning = args.kind in BINNING_KINDS
        if args.keys is not None and binning:
            return _usage(console, f"--kind {args.kind} takes --samples and --bins, not --keys")
        if args.samples is not None and not binning:
            return _usage(console, f"--samples is for --kind {' or '.join(BINNING_KINDS)}; "
                                   f"--kind {args.kind} takes --keys")
        if args.samples is not None:
            if args.case is not None:
                return _usage(console, "give --samples or --case, not both")
            if args.bins is None:
                return _usage(console, "--samples needs --bins (a count or the edges)")
            if args.range is not None and len(args.range) != 2:
                return _usage(console, f"--range takes LO,HI; got {len(args.range)} values")
            args.samples = samples_array(args.samples, args.dtype or "float64")
        elif args.bins is not None or args.range is not None:
            return _usage(console, "--bins and --range go with --samples")
        if (args.weights is not None) != (args.kind in WEIGHTED_KINDS and args.keys is not None):
            return _usage(console, f"--weights go with --keys, for --kind "
                                   f"{', '.join(WEIGHTED_KINDS)} alone")
        if args.weights is not None:
            args.weights = samples_array(args.weights, args.weights_dtype, "--weights")
        one_input = (args.keys is not None or args.samples is not None
                     or args.case is not None)
        if not args.quick and one_input:
            return _usage(console, "--full runs the whole matrix; with --keys, --samples or "
                                   "--case one input runs")
        problem = launch_option_problem(args.kind, names_source(args.kernel), args.define,
                                        args.counts, args.block, args.grid, args.warp_size,
                                        cli=True)
        if problem is not None:
            return _usage(console, problem)
        if args.num_bins is not None and args.kind in ("scan", *FULL_WIDTH_KINDS):
            return _usage(console, f"--kind {args.kind} takes no --num-bins (" + (
                "a scan's input is its counts)" if args.kind == "scan"
                else "its keys are full-width)"))
        if args.num_bins is not None and args.keys is None:
            return _usage(console, "--num-bins goes with --keys (one input of your own); "
                                   "without --keys the whole matrix runs")
        if args.keys is not None:
            if args.case is not None:
                return _usage(console, "give --keys or --case, not both")
            if (args.num_bins is None and args.kind not in FULL_WIDTH_KINDS
                    and args.kind != "scan"):
                return _usage(console, "--keys needs --num-bins")
            if args.dtype is not None and args.dtype not in KEY_DTYPES:
                return _usage(console, f"--keys are integers; --dtype {args.dtype} is not")
            if args.dtype is not None and args.kind == "scan":
                return _usage(console, "--dtype does not apply to a scan: its counts are "
                                       "handed to it as int64")
            keys = keys_array(args.keys, args.dtype or ("int64" if args.kind == "scan"
                                                         else "int32"))
        impl = make_impl(args.kernel, args.kind, inputs=args.inputs,
                         defines=dict(args.define), block=args.block, grid=args.grid,
                         count_bits=args.counts, warp_size=args.warp_size)
        if (args.dtype is not None and args.keys is None and args.samples is None
                and not args.compile_only):
            return _usage(console, "--dtype goes with --keys, --samples or --compile-only (the "
                                   "matrix has its own dtypes)")
        if args.in_process and args.timeout is not None and not isinstance(impl, FROM_SOURCE):
            return _usage(console, "--timeout needs a worker process: a callable run with "
                                   "--in-process cannot be stopped when it hangs")
        if args.compile_only:
            if not isinstance(impl, FROM_SOURCE):
                return _usage(console, "--compile-only is for a .cu file")
            console.print(compile_only(impl, args.dtype or "int32", args.arch), markup=False)
            return 0
    except KernelCompileError as error:
        return _does_not_compile(console, args.kernel, error)
    except GpuUnavailableError as error:  # --compile-only where NVRTC is missing
        return _usage(console, f"{error}\n  (--compile-only needs cuda-python and NVRTC, "
                               f"not a GPU)")
    except (FileNotFoundError, ValueError, TypeError, ImportError) as error:
        return _usage(console, error)
    return _judge(args, console, impl, keys, check, check_output)


def _run_options(args) -> str:
    """The options that change which cases run and how, as typed: a pasted
    verdict says what ran."""
    words = [] if args.quick else ["--full"]
    if args.timeout is not None:
        words += ["--timeout", f"{args.timeout:g}"]
    words += ["--in-process"] * bool(args.in_process) + ["--no-shrink"] * bool(args.no_shrink)
    return " ".join(words)


def _judge(args, console, impl, keys, check, check_output) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from histkit.conformance.check_judge import FROM_SOURCE
    from histkit.gpu.errors import GpuUnavailableError, KernelCompileError

    # the clock keeps moving while a slow or hung case holds the bar
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=True,
                        disable=not console.is_terminal)
    task = None

    def on_start(cases, report):
        nonlocal task
        check_output.print_header(console, impl, args.kind, cases, report.isolated,
                                  report.note, _run_options(args))
        progress.start()
        task = progress.add_task("checking", total=len(cases))

    def on_case(case, cell):
        progress.update(task, advance=1, description=case.name[:60])

    try:
        report = check(impl, args.kind, quick=args.quick, inputs=args.inputs, keys=keys,
                       num_bins=args.num_bins if keys is not None else None, case=args.case,
                       grid=args.grid, timeout=args.timeout, in_process=args.in_process,
                       shrink_failures=not args.no_shrink, progress=on_case,
                       on_start=on_start, samples=args.samples,
                       bins=None if args.bins is None else bins_value(args.bins),
                       range=None if args.range is None else range_value(args.range),
                       weights=args.weights)
    except KernelCompileError as error:
        return _does_not_compile(console, args.kernel, error)
    except GpuUnavailableError as error:
        if isinstance(impl, FROM_SOURCE):
            return _usage(console, f"{error}\n  (--compile-only compiles the file with NVRTC, "
                                   f"no GPU needed)")
        return _usage(console, error)
    except (FileNotFoundError, ValueError, TypeError, ImportError) as error:
        return _usage(console, error)
    finally:
        progress.stop()
    check_output.print_verdict(console, report, args.max_failures, args.verbose)
    if args.json:
        try:
            with open(args.json, "w") as out:
                json.dump(report.to_json(), out, indent=1, default=str, allow_nan=False)
        except OSError as error:  # writable when the run began (cli_args.writable_file)
            return _usage(console, f"cannot write {args.json}: {error.strerror or error}")
        console.print(f"wrote {args.json}", markup=False)
    return 0 if report.passed else 1
