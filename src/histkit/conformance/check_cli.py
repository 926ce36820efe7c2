"""``histkit check KERNEL --kind KIND``: the command-line way into check().

Exit status: 0 when nothing FAILs, 1 when something does, 2 on usage errors
(a missing file, an unknown kind, a malformed option).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from histkit.conformance.sanitize import TOOLS as SANITIZERS
from histkit.gpu.registry import FULL_WIDTH_KINDS, KINDS


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


def _keys(text: str) -> list[int]:
    try:
        return [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("--keys takes comma-separated integers") from None


def add_check_parser(commands, formatter, handler) -> None:
    from histkit.cli import bounded_int

    check = commands.add_parser(
        "check", formatter_class=formatter,
        help="judge YOUR kernel (a .cu file or a Python callable) by the conformance suite",
        description="Judge a histogram, scan or sort implementation: a CUDA C++ file "
                    "(path/to/file.cu[:entry]) compiled with NVRTC, or a Python callable "
                    "(package.module:function). Kinds: " + "; ".join(
                        f"{k}: {rule}" for k, rule in KINDS.items()))
    check.add_argument("kernel", metavar="KERNEL",
                       help="path/to/file.cu[:entry[,entry]] or package.module:function")
    check.add_argument("--kind", required=True, choices=tuple(KINDS), help="the rule to judge by")
    mode = check.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="quick", action="store_true", default=True,
                      help="the quick matrix (cases up to 2^22 keys; a .cu histogram, "
                           "privatized or racy-histogram kernel also gets its cases past "
                           "2^31 one-byte keys, 2 GiB of GPU memory, and a .cu stable-sort "
                           "the fenced one, 21 GiB)")
    mode.add_argument("--full", dest="quick", action="store_false",
                      help="add the 2^28 and > 2^31 key cases (not the default: "
                           "quick=%(default)s unless --full is given)")
    check.add_argument("--json", help="write the report (every cell, every failure) here")
    check.add_argument("--define", action="append", type=_define, default=[],
                       metavar="NAME=VALUE", help="a -D define for the .cu compile")
    check.add_argument("--block", type=bounded_int(1, 1024), default=256,
                       help="threads per block (.cu kernels); block_size for Python "
                            "privatized callables")
    check.add_argument("--grid", type=_grid, default=None, metavar="N|auto",
                       help="auto: one thread per key; N: a fixed grid (the kernel is "
                            "grid-stride, and forced small grids apply too)")
    check.add_argument("--counts", type=int, choices=(32, 64), default=32,
                       help="COUNT_T of a .cu histogram: 32-bit (the chapter's) or 64-bit")
    check.add_argument("--warp-size", type=bounded_int(1, 32), default=32,
                       help="the wave width of a wave kernel")
    check.add_argument("--inputs", choices=("auto", "numpy", "cupy", "torch"), default="auto",
                       help="the array kind a Python callable receives")
    check.add_argument("--timeout", type=float, default=60.0,
                       help="seconds a .cu case may run before it counts as a hang "
                            "(after a first hang at most 10 s; after two, the remaining "
                            "cases are not run)")
    check.add_argument("--keys", type=_keys, help="run one input: these keys (with --num-bins)")
    check.add_argument("--num-bins", type=bounded_int(1, 2**62),
                       help="num_bins for --keys (not for --kind radix-sort)")
    check.add_argument("--dtype", default="int32", help="dtype of --keys")
    check.add_argument("--no-shrink", action="store_true",
                       help="report failing cases as they are, without a minimal reproducer")
    check.add_argument("--sanitize", choices=SANITIZERS,
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


def run_check_command(args, console) -> int:
    import numpy as np

    from histkit.conformance.check import check
    from histkit.gpu.errors import GpuUnavailableError

    if args.sanitize:
        return _under_sanitizer(args)
    keys = None
    if args.keys is not None:
        if args.num_bins is None and args.kind not in FULL_WIDTH_KINDS:  # no K to give
            console.print("histkit check: --keys needs --num-bins")
            return 2
        keys = np.array(args.keys, dtype=args.dtype)

    def progress(case, cell):
        if cell.status == "FAIL":
            console.print(f"[bold red]FAIL[/] {case.name}")

    try:
        report = check(args.kernel, args.kind, quick=args.quick, inputs=args.inputs, keys=keys,
                       num_bins=args.num_bins, defines=dict(args.define), block=args.block,
                       grid=args.grid, count_bits=args.counts, warp_size=args.warp_size,
                       timeout=args.timeout, shrink_failures=not args.no_shrink,
                       progress=progress)
    except (FileNotFoundError, ValueError, TypeError, ImportError,
            GpuUnavailableError) as error:
        console.print(f"histkit check: {error}")
        return 2
    counts = report.counts()
    for failure in report.failures:
        console.print(str(failure), markup=False, highlight=False)
    verdict = "[green]PASS[/]" if report.passed else "[bold red]FAIL[/]"
    console.print(f"{verdict} {report.implementation} as {args.kind}: "
                  + ", ".join(f"{n} {s}" for s, n in counts.items())
                  + f" ({report.seconds:.1f} s)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report.to_json(), out, indent=1, default=str)
        console.print(f"wrote {args.json}")
    return 0 if report.passed else 1
