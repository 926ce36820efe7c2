"""histkit: judge GPU histogram, scan and sort kernels against exact CPU oracles.

  histkit check KERNEL --kind KIND   judge your kernel (.cu file or Python callable)
  histkit verify                     oracle self-checks, the chapter demo, GPU conformance
  histkit demo                       walk the chapter's three sections on the oracles
  histkit bench                      GPU benchmark against CUB, CuPy and PyTorch
"""

from __future__ import annotations

import argparse
import os
import sys

from histkit import __version__
from histkit.cli_args import bounded_int, join_negative_values, writable_file
from histkit.distributions import GENERATORS

# Options that size work are capped where the demo stops being a demo; the
# library calls themselves take anything that fits in memory.
MAX_DEMO_KEYS = 2**31 - 1
MAX_DEMO_BINS = 2**31 - 1


def _demo(args) -> int:
    from histkit.demo import DemoOptions, run_demo

    options = DemoOptions(n=args.n, num_bins=args.bins, distribution=args.distribution,
                          warp_size=args.warp_size, block_size=args.block_size, seed=args.seed)
    sections = ("7.1", "7.2", "7.3") if args.section == "all" else (args.section,)
    return 0 if run_demo(sections, options, console=make_console()) else 1


def _verify(args) -> int:
    from histkit.verify import run_verify

    ok = run_verify(console=make_console(), gpu=args.gpu, quick=args.quick,
                    json_path=args.json, large_only=args.large_only)
    return 0 if ok else 1


def _bench(args) -> int:
    from histkit.bench import run_gpu_bench

    return run_gpu_bench(out_dir=args.out, quick=args.quick, only=args.only, calls=args.calls)


def _check(args) -> int:
    from histkit.conformance.check_cli import run_check_command

    return run_check_command(args, make_console())


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown where there is one to show: not for options without a
    default, for flags, or where the help already says it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.default in (None, False, True, []) or action.required
                or "default" in text or action.default == argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are two lines: what is wrong
    (with the nearest valid choice, for a misspelt one) and where the help is,
    rather than the whole usage block first."""

    def error(self, message: str):
        import difflib
        import re

        wrong = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if wrong:
            choices = re.findall(r"'?([^',\s]+)'?", wrong.group(2))
            near = difflib.get_close_matches(wrong.group(1), choices, n=1)
            if near:
                message += f"; did you mean {near[0]!r}?"
        self.exit(2, f"{self.prog}: error: {message}\n"
                     f"  ({self.prog} --help lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="histkit", description=__doc__, formatter_class=_Formatter)
    parser.add_argument("--version", action="version", version=f"histkit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="walk the chapter's three sections on the oracles",
                               description="Walk the chapter's three sections (7.1 the race "
                                           "and atomicAdd, 7.2 privatization, 7.3 counting "
                                           "sort) on the CPU oracles, on seeded keys.",
                               formatter_class=_Formatter)
    demo.add_argument("--section", choices=("7.1", "7.2", "7.3", "all"), default="all",
                      help="which section to show")
    demo.add_argument("--n", type=bounded_int(0, MAX_DEMO_KEYS),
                      help="number of keys (default: each section's own)")
    demo.add_argument("--bins", type=bounded_int(1, MAX_DEMO_BINS),
                      help="number of buckets (default: each section's own)")
    demo.add_argument("--distribution", choices=tuple(GENERATORS),
                      help="key distribution (default: each section's own)")
    demo.add_argument("--warp-size", type=bounded_int(1, 2**31 - 1), default=32,
                      help="lanes per lockstep wave in the 7.1 race model")
    demo.add_argument("--block-size", type=bounded_int(1, 2**31 - 1), default=256,
                      help="threads per block in the 7.2 privatized model")
    demo.add_argument("--seed", type=bounded_int(0, 2**63 - 1), default=0,
                      help="seed of the key generator")
    demo.set_defaults(run=_demo)

    verify = commands.add_parser(
        "verify", formatter_class=_Formatter,
        help="oracle self-checks, the chapter demo, and GPU conformance if a GPU is present",
        description="The main job: every oracle checked against an independent reference, "
                    "the chapter's three sections walked, and, where a CUDA GPU is present, "
                    "every kernel judged on the conformance cases. Exit status 0 when "
                    "everything run passed.",
        epilog="A kernel that never ends FAILs its cell once a wait on the GPU outlasts\n"
               "its bound (histkit.conformance.runner.WAIT_LIMIT_S seconds, or\n"
               "HISTKIT_WAIT_LIMIT_S; 0: none), and the run stops there, naming the\n"
               "cases it left: the hung launch holds the GPU until the process exits.")
    verify.add_argument("--gpu", choices=("auto", "on", "off"), default="auto",
                        help="auto: run GPU conformance when a GPU is present (a skip is "
                             "reported loudly); on: fail without one; off: CPU checks only")
    size = verify.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="GPU conformance without the 2^28 and > 2^31 key cases")
    size.add_argument("--large-only", action="store_true",
                      help="GPU conformance on the 2^28 and > 2^31 key cases alone (what "
                           "--quick leaves out): a full run split in two")
    verify.add_argument("--json", default="conformance-results.json", type=writable_file,
                        help="where the JSON report (self-checks, demo, conformance) goes")
    verify.set_defaults(run=_verify)

    from histkit.conformance.check_cli import add_check_parser

    add_check_parser(commands, _Formatter, _check)

    bench = commands.add_parser("bench", formatter_class=_Formatter,
                                help="GPU benchmark against CUB, CuPy and PyTorch "
                                     "(needs histkit[bench])",
                                description="Time histkit's kernels (or, with --calls, its "
                                            "whole public calls) against CUB, CuPy and "
                                            "PyTorch in one process, every result checked "
                                            "against the oracle first; writes a JSON file "
                                            "and a plot (needs a GPU and histkit[bench]).")
    bench.add_argument("--out", default="bench/results", help="folder for the JSON and plot")
    bench.add_argument("--quick", action="store_true", help="2^24 keys instead of 2^28")
    bench.add_argument("--only", choices=("histogram", "sort", "radix", "binning", "weighted"),
                       help="run one part of the benchmark")
    bench.add_argument("--calls", action="store_true",
                       help="time whole public calls (what a user waits for) against the "
                            "peers' calls, at N = 2^12 ... 2^28 (--quick: up to 2^24)")
    bench.set_defaults(run=_bench)
    return parser


class _PipeSafeStream:
    """stdout that turns a closed pipe (``histkit verify | head -1``) into
    silence: the run goes on to its real verdict and exit code."""

    def __init__(self, stream):
        self._stream = stream
        self.closed_pipe = False

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self.closed_pipe = True
        # Python flushes stdout at exit; point its descriptor at /dev/null so
        # that last flush cannot fail either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def __getattr__(self, name):
        return getattr(self._stream, name)


# Piped or redirected output is read by programs and grep: never wrap it.
PIPED_WIDTH = 200


def make_console():
    from rich.console import Console

    stream = _PipeSafeStream(sys.stdout)
    if stream.isatty():
        return Console(file=stream)
    return Console(file=stream, width=PIPED_WIDTH, soft_wrap=True)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:  # no command: the commands, not argparse's one-line complaint
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(join_negative_values(argv, ("--keys",)))
    args.argv = argv  # histkit check --sanitize re-runs itself under compute-sanitizer
    try:
        return args.run(args)
    except MemoryError as error:  # a request too large for this machine: say so, no traceback
        print(f"histkit {args.command}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\nhistkit {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
