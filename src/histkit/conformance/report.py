"""What a conformance run prints: one line per kernel column, then every
failure in full and a sample of the findings (the JSON report has all)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

STYLE = {"pass": "green", "FAIL": "bold red", "finding": "yellow", "skip": "dim"}
SHOWN_FINDINGS = 3  # per column


def print_report(console: Console, report, seconds: float | None = None) -> None:
    names = list(dict.fromkeys(r.kernel for r in report.results))
    table = Table(title="GPU conformance: cells per kernel column")
    table.add_column("kernel column")
    for status in STYLE:
        table.add_column(status, justify="right")
    for name in names:
        cells = [r.cell.status for r in report.results if r.kernel == name]
        table.add_row(name, *(f"[{STYLE[s]}]{cells.count(s)}[/]" if cells.count(s) else "0"
                              for s in STYLE))
    console.print(table)
    failures = [r for r in report.results if r.cell.status == "FAIL"]
    if failures:
        console.print(f"[bold red]{len(failures)} FAIL[/]")
    for r in failures:
        console.print(f"  [bold red]FAIL[/] {escape(r.kernel)} on {escape(r.case.name)}: "
                      f"{escape(r.cell.detail)}", soft_wrap=True)
    for name in names:
        findings = [r for r in report.results if r.kernel == name and r.cell.status == "finding"]
        for r in findings[:SHOWN_FINDINGS]:
            console.print(f"  [yellow]finding[/] {escape(name)} on {escape(r.case.name)}: "
                          f"{escape(r.cell.detail)}", soft_wrap=True)
        if len(findings) > SHOWN_FINDINGS:
            more = len(findings) - SHOWN_FINDINGS
            console.print(f"  ... and {more} more finding{'s' if more != 1 else ''} of "
                          f"{escape(name)} (in the JSON report)")
    if report.stopped:
        console.print(f"[bold red]{escape(report.stopped)}[/]", soft_wrap=True)
    counts = {s: sum(r.cell.status == s for r in report.results) for s in STYLE}
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    console.print("totals: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + took)
