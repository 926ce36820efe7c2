"""Runs every kernel on every case, applies its rule, and reports.

The oracles run on the host; the kernels on the device, fed the same keys
(uploaded once per case). Nothing here decides what is correct: that is
checks.py, against histkit.oracles.
"""

from __future__ import annotations

import functools
import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

from histkit import __version__, oracles
from histkit.conformance import checks
from histkit.conformance.cases import LARGE, Case, all_cases
from histkit.conformance.checks import Cell
from histkit.conformance.report import print_matrix
from histkit.gpu import kernels
from histkit.gpu.device import Runtime, runtime
from histkit.gpu.geometry import WARP
from histkit.gpu.kernels import NO_BAD_KEY, Keys

KERNELS = (
    "naive-one-warp",
    "naive-grid",
    "atomic",
    "privatized",
    "fast",
    "partitioned",
    "auto",
    "exclusive-scan",
    "sort-stable",
    "sort-atomic-cursor",
)
# One warp walks the whole input alone: past this it is only slow, not new.
ONE_WARP_MAX_N = 1 << 24
# Sorting 2^31 keys needs 17 GB of int64 indices on each side; the 64-bit
# index paths are covered by the histograms at that size.
SORT_MAX_N = LARGE


@dataclass
class Result:
    case: Case
    kernel: str
    cell: Cell
    geometry: str = ""
    seconds: float = 0.0


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not any(r.cell.status == "FAIL" for r in self.results)

    def to_json(self) -> dict:
        return {
            "histkit": __version__,
            "host": platform.node(),
            "passed": self.passed,
            "results": [{"case": r.case.name, **asdict(r.case), "kernel": r.kernel,
                         "status": r.cell.status, "detail": r.cell.detail,
                         "figures": r.cell.figures, "geometry": r.geometry,
                         "seconds": round(r.seconds, 4)} for r in self.results],
        }


class CaseRun:
    """One case: its keys on host and device, its oracle results (computed once)."""

    def __init__(self, rt: Runtime, case: Case):
        self.rt = rt
        self.case = case
        self.host = case.keys()
        self.device_array = rt.to_device(self.host)
        self.keys = Keys(self.device_array.ptr, len(self.host), self.host.dtype)
        self.exact = oracles.histogram(self.host, case.num_bins)
        self._sorted = None

    @property
    def sorted(self):
        if self._sorted is None:
            self._sorted = oracles.counting_sort(self.host, self.case.num_bins)
        return self._sorted

    # --- helpers -----------------------------------------------------------
    def fresh(self, n: int, dtype, zero: bool = True):
        return self.rt.zeros(n, dtype) if zero else self.rt.empty(n, dtype)

    def first_bad(self):
        first_bad = self.rt.empty(1, np.uint64)
        self.rt.memset(first_bad.ptr, 0xFF, 8)
        return first_bad

    def read(self, array) -> np.ndarray:
        return self.rt.copy_to_host(array.ptr, np.empty(array.n, array.dtype))

    def no_bad_key(self, first_bad) -> None:
        index = int(self.read(first_bad)[0])
        if index != NO_BAD_KEY:
            raise AssertionError(f"kernel reported a bad key at {index} on valid input")

    def histogram_with(self, launch) -> tuple[np.ndarray, str]:
        hist = self.fresh(self.case.num_bins, np.uint64)
        first_bad = self.first_bad()
        geometry = launch(self.rt, self.keys, self.case.num_bins, hist, first_bad)
        counts = self.read(hist).astype(np.int64)
        self.no_bad_key(first_bad)
        return counts, str(geometry)

    # --- one method per kernel row -----------------------------------------
    def naive_one_warp(self):
        if self.case.n > ONE_WARP_MAX_N:
            return Cell("skip", f"one warp over N > {ONE_WARP_MAX_N} is only slow"), ""
        got, geometry = self.histogram_with(kernels.naive_histogram_one_warp)
        want = oracles.naive_wave_histogram(self.host, self.case.num_bins, WARP)
        cell = checks.equal(got, want)
        if cell.status == "pass":
            lost = int(self.exact.sum() - got.sum())
            cell = Cell("pass", f"= wave model; lost {lost} of {self.case.n}", {"lost": lost})
        return cell, geometry

    def naive_grid(self):
        got, geometry = self.histogram_with(kernels.naive_histogram_grid)
        return checks.at_most_exact(got, self.exact), geometry

    def atomic(self):
        got, geometry = self.histogram_with(kernels.atomic_histogram)
        return checks.equal(got, self.exact), geometry

    def privatized(self):
        try:
            geometry = kernels.privatized_geometry(self.rt, self.case.n, self.case.num_bins)
        except ValueError as error:
            return Cell("skip", str(error).split(";")[0]), ""
        atomics = self.fresh(1, np.uint64)

        def launch(rt, keys, num_bins, hist, first_bad):
            return kernels.privatized_histogram(rt, keys, num_bins, hist, first_bad, geometry,
                                                atomics_issued=atomics)

        got, text = self.histogram_with(launch)
        _, model = oracles.privatized_histogram(self.host, self.case.num_bins,
                                                geometry.block, geometry.grid)
        return checks.privatized(got, self.exact, int(self.read(atomics)[0]), model), text

    def fast(self):
        got, geometry = self.histogram_with(kernels.fast_histogram)
        cell = checks.equal(got, self.exact)
        if cell.status != "pass":
            return cell, geometry
        # The variant auto picks for one hot bin past shared memory.
        held, held_geometry = self.histogram_with(
            functools.partial(kernels.fast_histogram, hold_runs=True))
        return checks.equal(held, self.exact), f"{geometry} and {held_geometry}"

    def partitioned(self):
        if self.case.num_bins > kernels.MAX_PARTITIONED_BINS:
            return Cell("skip", f"num_bins > {kernels.MAX_PARTITIONED_BINS}"), ""
        got, geometry = self.histogram_with(kernels.partitioned_histogram)
        return checks.equal(got, self.exact), geometry

    def auto(self):
        got, geometry = self.histogram_with(kernels.auto_histogram)
        return checks.equal(got, self.exact), geometry

    def exclusive_scan(self):
        counts = self.rt.to_device(self.exact.astype(np.uint64))
        out = self.fresh(len(self.exact), np.uint64, zero=False)
        keep: list = []
        geometries = kernels.exclusive_scan(self.rt, counts.ptr, len(self.exact), out.ptr, keep)
        got = self.read(out).astype(np.int64)
        want = oracles.exclusive_scan(self.exact)
        return checks.equal(got, want, "offset"), " + ".join(map(str, geometries))

    def _sort_outputs(self):
        return (self.fresh(self.case.n, self.host.dtype, zero=False),
                self.fresh(self.case.n, np.int64, zero=False))

    def sort_stable(self):
        if self.case.n > SORT_MAX_N:
            return Cell("skip", "sorting > 2^31 keys needs 17 GB of indices per side"), ""
        if self.case.n == 0:
            return Cell("pass", "empty"), ""
        out_keys, out_index = self._sort_outputs()
        first_bad = self.first_bad()
        keep: list = []
        plan = kernels.stable_count(self.rt, self.keys, self.case.num_bins, first_bad, keep)
        scatters = kernels.stable_scatter(self.rt, self.keys, self.case.num_bins, plan,
                                          out_keys, out_index)
        got_keys, got_index = self.read(out_keys), self.read(out_index)
        self.no_bad_key(first_bad)
        want_keys, want_index = self.sorted
        cell = checks.equal(got_keys, want_keys, "sorted key")
        if cell.status == "pass":
            cell = checks.equal(got_index, want_index, "original index")
        plan.geometries += scatters
        return cell, plan.describe()

    def sort_atomic_cursor(self):
        if self.case.n > SORT_MAX_N:
            return Cell("skip", "sorting > 2^31 keys needs 17 GB of indices per side"), ""
        if self.case.n == 0:
            return Cell("pass", "empty"), ""
        out_keys, out_index = self._sort_outputs()
        first_bad = self.first_bad()
        keep: list = []
        cursor, geometries = kernels.atomic_cursor_count(self.rt, self.keys, self.case.num_bins,
                                                         first_bad, keep)
        geometries.append(kernels.scatter_atomic_cursor(self.rt, self.keys, cursor, out_keys,
                                                        out_index))
        got_keys, got_index = self.read(out_keys), self.read(out_index)
        self.no_bad_key(first_bad)
        cell = checks.atomic_cursor_sort(got_keys, got_index, self.host, self.sorted[0])
        return cell, " + ".join(map(str, geometries))


ROWS = {
    "naive-one-warp": CaseRun.naive_one_warp,
    "naive-grid": CaseRun.naive_grid,
    "atomic": CaseRun.atomic,
    "privatized": CaseRun.privatized,
    "fast": CaseRun.fast,
    "partitioned": CaseRun.partitioned,
    "auto": CaseRun.auto,
    "exclusive-scan": CaseRun.exclusive_scan,
    "sort-stable": CaseRun.sort_stable,
    "sort-atomic-cursor": CaseRun.sort_atomic_cursor,
}


def run_case(rt: Runtime, case: Case, kernel_names=KERNELS) -> list[Result]:
    try:
        run = CaseRun(rt, case)
    except Exception as error:  # the case itself could not be set up
        cell = Cell("FAIL", f"setting up case {case.name} failed: {type(error).__name__}: {error}")
        return [Result(case, name, cell) for name in kernel_names]
    results = []
    for name in kernel_names:
        start = time.perf_counter()
        try:
            cell, geometry = ROWS[name](run)
        except Exception as error:  # a crash is a failure of that cell, reported in full
            cell, geometry = Cell("FAIL", f"{type(error).__name__}: {error}"), ""
        if cell.status == "FAIL":
            cell = Cell("FAIL", f"{cell.detail} [case {case.name}, seed {case.seed}, "
                                f"kernel {name}, geometry {geometry or 'n/a'}]", cell.figures)
        results.append(Result(case, name, cell, geometry, time.perf_counter() - start))
    return results


def run_conformance(console: Console | None = None, quick: bool = False,
                    json_path: str | Path | None = "conformance-results.json",
                    cases: list[Case] | None = None) -> Report:
    console = console or Console()
    rt = runtime()
    cases = cases if cases is not None else all_cases(quick)
    report = Report()
    console.print(f"GPU conformance on {rt.device.name} ({rt.arch}, {rt.sm_count} SMs): "
                  f"{len(cases)} cases x {len(KERNELS)} kernels")
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("conformance", total=len(cases))
        for case in cases:
            progress.update(task, description=case.name)
            report.results += run_case(rt, case)
            progress.advance(task)
    print_matrix(console, report)
    if json_path:
        Path(json_path).write_text(json.dumps(report.to_json(), indent=1, default=str))
        console.print(f"wrote {json_path}")
    return report
