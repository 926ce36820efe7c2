"""Entry point for ``nox -s sanitize``: every kernel on small cases, run under
compute-sanitizer (memcheck or racecheck) by the session.

Small cases keep the instrumented run short while still covering the edge
sizes (block +/- 1), both contention extremes and every key width.
"""

from __future__ import annotations

import sys

from rich.console import Console

from histkit.conformance.cases import DISTRIBUTIONS, Case
from histkit.conformance.runner import run_conformance


def sanitizer_cases() -> list[Case]:
    cases = [Case(d, n, k, seed=n) for d in DISTRIBUTIONS for n in (1, 33, 257, 5000)
             for k in (10, 256)]
    cases += [Case("uniform", 1 << 16, k, seed=1) for k in (4096, 65536, 1 << 20)]
    cases += [Case("uniform", 999, 100, seed=2, dtype=t) for t in ("int8", "uint64")]
    return cases


def main(argv: list[str]) -> int:
    tool = argv[1] if len(argv) > 1 else "memcheck"
    console = Console()
    console.print(f"compute-sanitizer {tool}: conformance on small cases")
    report = run_conformance(console, json_path=f"sanitize-{tool}.json", cases=sanitizer_cases())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
