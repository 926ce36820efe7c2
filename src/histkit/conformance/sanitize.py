"""Entry point for ``nox -s sanitize``: every integer-key kernel column
(``registry.KERNELS``; the binning and weighted kernels have judges of their
own, not run here) on small cases, run under compute-sanitizer (memcheck,
racecheck or synccheck) by the session.

    python -m histkit.conformance.sanitize TOOL [ROW ...]

Small cases keep the instrumented run short while still covering the edge
sizes (block +/- 1), both contention extremes, every key width, misaligned
starts, bad keys and forced small grids (grid-stride loops and blocks that
own several tiles), which is where barriers and bounds go missing.
"""

from __future__ import annotations

import sys

from rich.console import Console

from histkit.conformance.cases import DISTRIBUTIONS, Case

# compute-sanitizer's tools the suite runs (`nox -s sanitize`, `histkit check
# --sanitize`, mutants that need one). The runner is imported only to run: the
# command line and the mutation machinery read TOOLS without it.
TOOLS = ("memcheck", "racecheck", "synccheck")


def sanitizer_cases() -> list[Case]:
    # N = 0 too: a kernel that reads "the last entry" of an empty table reads
    # before its buffer, which only a sanitizer sees reliably
    cases = [Case(d, n, k, seed=n) for d in DISTRIBUTIONS for n in (0, 1, 33, 257, 5000)
             for k in (10, 256)]
    cases += [Case("uniform", 1 << 16, k, seed=1) for k in (4096, 65536, 1 << 20)]
    cases += [Case("uniform", 999, 100, seed=2, dtype=t) for t in ("int8", "uint64")]
    cases += [Case("uniform", 20_003, k, seed=3, grid=g) for k in (256, 70_000) for g in (1, 3)]
    cases += [Case("uniform", 30_001, 1 << 14, seed=3, grid=1),
              Case("sorted", 9_001, 300, seed=3, dtype="int8", offset=3, grid=2),
              Case("uniform", 5_003, 256, seed=3, bad="several", grid=2)]
    # the radix sort's full-width keys: every width, a partial tile, a forced grid
    cases += [Case("uniform", 4_097, 0, seed=4, dtype=t, full_width=True)
              for t in ("int8", "uint16", "int32", "int64")]
    cases += [Case("zipf", 20_003, 0, seed=4, dtype="int64", full_width=True, grid=2)]
    return cases


def main(argv: list[str]) -> int:
    tool = argv[1] if len(argv) > 1 else "memcheck"
    if tool not in TOOLS:
        print(f"usage: python -m histkit.conformance.sanitize {{{','.join(TOOLS)}}} [ROW ...]",
              file=sys.stderr)
        return 2
    from histkit.conformance.runner import run_conformance

    rows = argv[2:] or None
    console = Console()
    console.print(f"compute-sanitizer {tool}: conformance on small cases")
    if tool == "memcheck":
        from histkit.gpu.device import runtime

        # Scratch of exactly its size, unguarded: memcheck sees one element
        # past it (ScratchPoison.exact).
        runtime().poison.exact = True
    # (unbounded waits: under the sanitizer a kernel runs orders of magnitude slower)
    report = run_conformance(console, json_path=f"sanitize-{tool}.json", cases=sanitizer_cases(),
                             rows=rows, bounded_waits=False)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
