"""The ``histkit`` command: ``demo``, ``verify`` and ``bench``."""

from __future__ import annotations

import argparse
import sys

from histkit.distributions import GENERATORS


def _demo(args) -> int:
    from histkit.demo import DemoOptions, run_demo

    options = DemoOptions(n=args.n, num_bins=args.bins, distribution=args.distribution,
                          warp_size=args.warp_size, block_size=args.block_size, seed=args.seed)
    sections = ("7.1", "7.2", "7.3") if args.section == "all" else (args.section,)
    return 0 if run_demo(sections, options) else 1


def _verify(args) -> int:
    from histkit.verify import run_verify

    return 0 if run_verify(gpu=args.gpu, quick=args.quick, json_path=args.json) else 1


def _bench(args) -> int:
    from histkit.gpu.bench import run_gpu_bench

    return run_gpu_bench(out_dir=args.out, quick=args.quick, only=args.only)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="histkit", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="walk the chapter's three sections on the oracles")
    demo.add_argument("--section", choices=("7.1", "7.2", "7.3", "all"), default="all")
    demo.add_argument("--n", type=int, help="number of keys (default: each section's own)")
    demo.add_argument("--bins", type=int, help="number of buckets (default: each section's own)")
    demo.add_argument("--distribution", choices=tuple(GENERATORS),
                      help="key distribution (default: each section's own)")
    demo.add_argument("--warp-size", type=int, default=32)
    demo.add_argument("--block-size", type=int, default=256)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(run=_demo)

    verify = commands.add_parser(
        "verify",
        help="oracle self-checks, the chapter demo, and GPU conformance if a GPU is present")
    verify.add_argument("--gpu", choices=("auto", "on", "off"), default="auto",
                        help="auto: run GPU conformance when a GPU is present; "
                             "on: fail without one")
    verify.add_argument("--quick", action="store_true",
                        help="GPU conformance without the 2^28 and > 2^31 key cases")
    verify.add_argument("--json", default="conformance-results.json",
                        help="where GPU conformance writes its JSON report")
    verify.set_defaults(run=_verify)

    bench = commands.add_parser("bench", help="GPU benchmark against CUB, CuPy and PyTorch")
    bench.add_argument("--out", default="bench/results", help="folder for the JSON and plot")
    bench.add_argument("--quick", action="store_true", help="2^24 keys instead of 2^28")
    bench.add_argument("--only", choices=("histogram", "sort"),
                       help="run one half of the benchmark")
    bench.set_defaults(run=_bench)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("n", "bins"):
        value = getattr(args, name, None)
        if value is not None and value < (0 if name == "n" else 1):
            build_parser().error(f"--{name} must be >= {0 if name == 'n' else 1}")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
