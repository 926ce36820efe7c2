"""The conformance matrix (case x kernel) and the findings under it."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

STYLE = {"pass": "green", "FAIL": "bold red", "finding": "yellow", "skip": "dim"}


def print_matrix(console: Console, report) -> None:
    kernels = list(dict.fromkeys(r.kernel for r in report.results))
    by_case: dict = {}
    for result in report.results:
        by_case.setdefault(result.case.name, {})[result.kernel] = result
    table = Table(title="GPU conformance (pass / FAIL / finding / skip)")
    table.add_column("case")
    for kernel in kernels:
        table.add_column(kernel, justify="center")
    for case_name, row in by_case.items():
        cells = []
        for kernel in kernels:
            status = row[kernel].cell.status if kernel in row else ""
            cells.append(f"[{STYLE.get(status, '')}]{status}[/]" if status else "")
        table.add_row(case_name, *cells)
    console.print(table)
    notes = [r for r in report.results if r.cell.status in ("FAIL", "finding")]
    if notes:
        console.print("[bold]Findings and failures[/]")
    for r in notes:
        console.print(f"  [{STYLE[r.cell.status]}]{r.cell.status}[/] {r.kernel} on "
                      f"{r.case.name}: {r.cell.detail}")
    counts = {s: sum(r.cell.status == s for r in report.results) for s in STYLE}
    console.print("totals: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
