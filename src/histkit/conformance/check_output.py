"""What ``histkit check`` prints: the verdict a person reads.

A header (what is judged, by which rule, on how many cases and how it runs),
then the failures grouped by symptom, each group with its smallest input,
the first differences, one reproducer and a few of the other cases; then
the findings with their detail; why cases were skipped, a line a reason;
the verdict last. ``verbose`` adds every
cell. The JSON report (``CheckReport.to_json``) has everything.
"""

from __future__ import annotations

import re

import numpy as np
from rich.console import Console
from rich.markup import escape

from histkit.conformance.check_binning import BinningCudaFile
from histkit.conformance.check_verdict import SHOWN_KEYS, CheckReport, Failure, symptom_of
from histkit.conformance.check_weighted import WeightedCudaFile
from histkit.conformance.foreign import CudaFileImpl
from histkit.conformance.loading import call_form
from histkit.conformance.reproduce import can_write_out, keys_python
from histkit.conformance.shrinking import UNNAMED
from histkit.gpu.registry import CHECK_KINDS, FULL_WIDTH_KINDS

DEFAULT_MAX_FAILURES = 3  # groups of failures shown in full
OTHER_CASES_SHOWN = 3  # cases named beside a group's smallest
FINDING_EXAMPLES = 2  # cases shown per kind of finding
SKIP_REASONS_SHOWN = 3  # reasons for skipped cases, one line each
STYLE = {"pass": "green", "FAIL": "bold red", "finding": "yellow", "skip": "dim"}
PRINTED_LINES_SHOWN = 3  # lines of what a callable printed on a failure's input
PRINTED_WIDTH = 200


def print_header(console: Console, impl, kind: str, cases: list, isolated: bool,
                 note: str = "", options: str = "") -> None:
    """The verdict's head: what is judged, by which rule, how it is run
    (options: the run's own command-line options, echoed on the first line)."""
    console.print(f"[bold]histkit check[/] {escape(impl.describe())} --kind {kind}"
                  f"{escape(' ' + options if options else '')}")
    console.print(f"  kind      {kind}: {escape(CHECK_KINDS[kind])}")
    how = "in a worker process" if isolated else "in this process"
    if isinstance(impl, CudaFileImpl):
        grid = "one thread per key" if impl.grid is None else f"{impl.grid} blocks"
        defines = "".join(f", -D{k}={v}" for k, v in impl.defines)
        console.print(f"  launch    blocks of {impl.block} threads, grid {grid}, "
                      f"{impl.count_bits}-bit counts, warp size {impl.warp_size}"
                      f"{escape(defines)}")
    elif isinstance(impl, BinningCudaFile):
        grid = "one thread per sample" if impl.grid is None else f"{impl.grid} blocks"
        defines = "".join(f", -D{k}={v}" for k, v in impl.defines)
        console.print(f"  launch    blocks of {impl.block} threads, grid {grid}, "
                      f"{impl.count_bits}-bit counts{escape(defines)}")
    elif isinstance(impl, WeightedCudaFile):
        grid = "one thread per key" if impl.grid is None else f"{impl.grid} blocks"
        defines = "".join(f", -D{k}={v}" for k, v in impl.defines)
        console.print(f"  launch    blocks of {impl.block} threads, grid {grid}, float64 sums"
                      f"{escape(defines)}")
    else:
        console.print(f"  called as {escape(call_form(kind))}, on {impl.inputs} arrays")
    console.print(f"  cases     {len(cases)}, run {how}" + (f" ({escape(note)})" if note else ""))


def _input_lines(failure: Failure) -> list[str]:
    case = failure.smallest
    if hasattr(case, "describe_input"):  # binning and weighted cases
        shown = [f"  input     {escape(case.describe_input(SHOWN_KEYS))}"]
        if _rounds_to_float64(case):
            shown.append("            (numpy compares integer samples with the edges in "
                         "float64, where a sample past 2^53 rounds to its nearest float64)")
        if failure.case.name == UNNAMED:  # the caller's own input: no case to name
            return shown + (["            (shrunk from the input given)"] if failure.shrunk
                            else [])
        return shown + [f"            ({'shrunk from ' if failure.shrunk else ''}case "
                        f"{escape(failure.case.name)})"]
    label = "counts" if case.scan_counts else "keys"
    # (no dtype for a scan's counts: a callable gets them as int64, a .cu
    # scan as unsigned long long)
    dtype = "" if case.scan_counts else f" ({case.dtype})"
    if case.literal is not None and can_write_out(case.literal):
        what = f"{label} = {keys_python(case.literal)}{dtype}"
    elif case.n <= SHOWN_KEYS and failure.kind != "scan":  # (a scan is handed counts)
        what = f"{label} = {case.keys().tolist()}{dtype}"
    else:
        what = f"{case.n} {label[:-1] if case.n == 1 else label}{dtype}"
    if not (case.full_width or case.scan_counts or failure.kind in FULL_WIDTH_KINDS):
        what += f", num_bins = {case.num_bins}"  # (a radix sort takes none)
    extras = [f"{name}" for name, on in (("grid " + str(case.grid), case.grid is not None),
                                         ("skewed warps", case.skewed),
                                         ("fenced input", case.fenced),
                                         (f"offset {case.offset}", case.offset)) if on]
    if extras:
        what += f", {', '.join(extras)}"
    if failure.kind == "privatized" and failure.launch:  # to call it with by hand
        what += f"; called with {failure.launch}"
    lines = [f"  input     {escape(what)}"]
    if failure.shrunk is not None:
        origin = ("your input" if failure.case.literal is not None
                  else f"case {escape(failure.case.name)}")
        lines.append(f"            (shrunk from {origin})")
    elif failure.case.literal is None:  # your own input needs no name
        lines.append(f"            (case {escape(failure.case.name)})")
    return lines


def _rounds_to_float64(case) -> bool:
    """Whether a binning case holds 64-bit integer samples that float64 rounds."""
    samples = getattr(case, "samples", None)
    if samples is None or samples.dtype.kind not in "iu" or samples.dtype.itemsize < 8:
        return False
    shown = samples[:SHOWN_KEYS]  # (the samples a reader sees)
    return bool(np.any(shown.astype(np.float64).astype(object) != shown.astype(object)))


def _difference_lines(failure: Failure) -> list[str]:
    figures = failure.figures or {}
    differences = figures.get("differences")
    detail = failure.shrunk_detail or failure.detail
    if not differences:
        return [f"  got       {escape(_without_case(detail))}"]
    what = figures.get("what", "bin")
    bounds = {i: f" [{low!r}, {high!r}{']' if closed else ')'}"
              for i, (low, high, closed) in figures.get("bin_edges", {}).items()}
    shown = ", ".join(f"{what} {i}{bounds.get(str(i), '')}: expected {want}, got {got}"
                      for i, got, want in differences)
    head = _without_case(detail).split(";")[0]
    if figures.get("called_with"):  # a second call's failure (a wave's other width)
        head += f"; when called with {figures['called_with']}"
    return [f"  got       {escape(head)}", f"            {escape(shown)}"]


def _printed_lines(printed: str) -> list[str]:
    """What the implementation printed on the input shown: its first lines."""
    lines = printed.splitlines()
    if not lines:
        return []
    shown = [escape(line[:PRINTED_WIDTH]) for line in lines[:PRINTED_LINES_SHOWN]]
    more = len(lines) - len(shown)
    if more:
        shown.append(f"(and {more} more line{'s' if more != 1 else ''})")
    return [f"  printed   {shown[0]}"] + [f"            {line}" for line in shown[1:]]


def _without_case(detail: str) -> str:
    at = detail.rfind(" [case ")
    return detail[:at] if at >= 0 and detail.endswith("]") else detail


def print_group(console: Console, number: int, total: int, group: list[Failure]) -> None:
    first = group[0]
    cases = f"{len(group)} case{'s' if len(group) != 1 else ''}"
    if len(group) > 1 and any(ch.isdigit() for ch in first.title):
        # the values in the heading are the shown input's, not every case's
        cases += ", values from the input below"
    console.print(f"[bold red]FAIL[/] (failure {number} of {total}): "
                  f"[bold]{escape(first.title)}[/] ({cases})")
    for line in _input_lines(first) + _difference_lines(first):
        console.print(line, soft_wrap=True)
    for line in _printed_lines(first.printed):
        console.print(line, soft_wrap=True, highlight=False)
    if first.alone:
        console.print(f"  alone     {escape(first.alone)}", soft_wrap=True, highlight=False)
    console.print(f"  reproduce {escape(first.reproducer)}", soft_wrap=True, highlight=False)
    console.print(f"            {escape(first.python_reproducer)}", soft_wrap=True,
                  highlight=False)
    if first.shrunk is not None and " --case " in first.reproducer:
        both = "case=" in first.python_reproducer
        console.print("            (" + ("both run" if both else "the command line runs")
                      + " the case the input above was shrunk from, as a command line "
                        "cannot write that input out"
                      + (")" if both else "; the Python call runs the input itself)"),
                      soft_wrap=True)
    others = [f.case.name for f in group[1:]]
    if others:
        shown = ", ".join(others[:OTHER_CASES_SHOWN])
        more = len(others) - OTHER_CASES_SHOWN
        tail = f" and {more} more (-v lists every cell)" if more > 0 else ""
        console.print(f"  also on   {escape(shown)}{tail}", soft_wrap=True)


def without_placeholders(symptom: str) -> str:
    """A symptom's words without its blanked values: "lost N of N updates (N%)"
    reads "lost updates" (the cases below it show the values)."""
    words = re.sub(r"\(N(\.N)?%\)|\bN of N\b|\bN\b", "", symptom)
    words = re.sub(r"\(\s*\)", "", words)
    return re.sub(r"\s+", " ", words).strip(" ,;:") or symptom


def print_findings(console: Console, report: CheckReport) -> None:
    # a narrow result type a FAIL already names ("counts returned as uint8")
    # is not said again as a finding
    failing = " ".join(f.detail + " " + f.shrunk_detail for f in report.failures)
    for found in report.findings().values():
        if found[0][1].detail.split(":")[0] in failing:
            continue
        cases = f"{len(found)} case{'s' if len(found) != 1 else ''}"
        heading = without_placeholders(symptom_of(found[0][1].detail, singular=False))
        console.print(f"[yellow]finding[/] [bold]{escape(heading)}[/] "
                      f"({cases}): the rule "
                      f"holds; this is reported, not failed")
        for case, cell in found[:FINDING_EXAMPLES]:
            console.print(f"  {escape(case.name)}: {escape(_without_case(cell.detail))}",
                          soft_wrap=True)
        if len(found) > FINDING_EXAMPLES:
            console.print(f"  and {len(found) - FINDING_EXAMPLES} more (-v lists every cell)")


def skip_reasons(report: CheckReport) -> list[tuple[str, int]]:
    """Why cells were skipped: (reason, how many cells), commonest first; a
    reason's list of cases, in parentheses, left out so that one cause is one
    line."""
    reasons: dict[str, int] = {}
    for _, cell, _ in report.cells:
        if cell.status == "skip":
            reason = _CASE_LIST.sub("", _without_case(cell.detail)).strip() or "no reason given"
            reasons[reason] = reasons.get(reason, 0) + 1
    return sorted(reasons.items(), key=lambda item: -item[1])


_CASE_LIST = re.compile(r" \([^()]*\)")


def print_skips(console: Console, report: CheckReport) -> None:
    reasons = skip_reasons(report)
    for reason, count in reasons[:SKIP_REASONS_SHOWN]:
        cells = f"{count} case{'s' if count != 1 else ''}"
        console.print(f"[dim]skip[/] {cells}: {escape(reason)}", soft_wrap=True,
                      highlight=False)
    if len(reasons) > SKIP_REASONS_SHOWN:
        console.print(f"[dim]skip[/] {sum(c for _, c in reasons[SKIP_REASONS_SHOWN:])} more "
                      f"cases for {len(reasons) - SKIP_REASONS_SHOWN} other reasons "
                      f"(-v lists every cell)")


def print_cells(console: Console, report: CheckReport) -> None:
    for case, cell, geometry in report.cells:
        where = f" [{geometry}]" if geometry else ""
        console.print(f"[{STYLE[cell.status]}]{cell.status:7}[/] {escape(case.name)}"
                      f"{escape(where)} {escape(_without_case(cell.detail))}", soft_wrap=True)


def print_verdict(console: Console, report: CheckReport, max_failures: int = DEFAULT_MAX_FAILURES,
                  verbose: bool = False) -> None:
    if verbose:
        print_cells(console, report)
    groups = report.groups()
    for number, group in enumerate(groups[:max_failures], 1):
        print_group(console, number, len(groups), group)
    if len(groups) > max_failures:
        hidden = groups[max_failures:]
        kinds = f"{len(hidden)} more kind{'s' if len(hidden) != 1 else ''}"
        # each as its heading reads, with its values ("at most 255", not "N")
        named = ", ".join(escape(symptom_of(g[0].detail, blank=False)) for g in hidden[:3])
        console.print(f"... and {kinds} of failure "
                      f"({named}"
                      f"{', ...' if len(hidden) > 3 else ''}): --max-failures "
                      f"{len(groups)} shows them; --json has every cell", soft_wrap=True)
    print_findings(console, report)
    if not verbose:  # -v has printed each skipped cell with its reason
        print_skips(console, report)
    if report.printed_lines:
        lines = f"{report.printed_lines} line{'s' if report.printed_lines != 1 else ''}"
        console.print(f"(it printed {lines} to stdout or stderr while judged, kept out of "
                      f"this verdict; a failure shows what its own input printed, if anything)")
    style = "bold green" if report.passed else "bold red"
    verdict, _, rest = report.summary().partition(":")
    console.print(f"[{style}]{verdict}[/]:{escape(rest)}", soft_wrap=True, highlight=False)
