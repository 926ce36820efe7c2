"""The binning kernels judged: every row of registry.BINNING_KERNELS, in every
variant, on every case of histkit.conformance.binning_cases, against
oracles.bin_histogram.

The rule (kind ``bin-histogram``): the counts and the underflow, overflow and
NaN tallies equal the oracle's, bit for bit; where numpy's own code fails on a
sample (the oracle raises), the kernel reports exactly that sample's index.
One more column judges gpu.bin_histogram's weighted path (bin_indices, then
the weighted histogram) with every weight 1.0, whose sums are the counts.
Samples go to the device at the case's own alignment (a misaligned view
stays misaligned there), and the counts start poisoned, so a counter the
kernel never writes shows. Besides those cases, ``harness_cases``: kernels
built with schedule skew, and samples flush against unmapped memory; and
``failing_cases``: samples numpy's code fails on, which the kernels must
name (the first of them, past the start of the samples). Every
column runs with new scratch poisoned and guarded (as the integer kernels'
runner runs them), so a write past an array fails the cell.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from histkit import oracles
from histkit.conformance.binning_cases import BinCase, bin_cases, failing_cases, harness_cases
from histkit.conformance.checks import ColumnResult, harness_cell, with_overruns
from histkit.gpu import registry
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.device import Runtime
from histkit.gpu.launch.binning import TALLIES, weighted_bin_histogram
from histkit.gpu.launch.common import Keys
from histkit.gpu.launch.weighted import Weights
from histkit.oracles._bin_rule import NumpyFailsError, as_sample_array, parse_bins

POISON = 0xA5  # the counts' bytes before the launch
# The column of gpu.bin_histogram's weighted path, judged with weights of one.
WEIGHTS_OF_ONE = "weights-of-one"


BinResult = ColumnResult  # one binning column on one case


def expected(case: BinCase) -> tuple[np.ndarray, int | None]:
    """(counts then the three tallies, None), or (None, index of the first
    sample numpy fails on) where the oracle raises for that reason."""
    try:
        counts, _, flow = oracles.bin_histogram(case.samples, case.bins, case.range,
                                                right_closed_last=case.right_closed_last,
                                                flow=True)
    except NumpyFailsError as error:
        return None, error.index
    return np.concatenate([counts, np.array(flow, dtype=np.int64)]), None


def _samples_on_device(rt: Runtime, samples: np.ndarray, keep: list) -> Keys:
    """The samples on the device, starting at the same offset from a 16-byte
    boundary as on the host (the kernel's vector head depends on it)."""
    samples = np.ascontiguousarray(samples) if samples.strides[0] != samples.itemsize else samples
    offset = samples.ctypes.data % 16
    block = rt.empty(samples.nbytes + 16, np.uint8)
    keep.append(block)
    ptr = block.ptr + offset
    if samples.nbytes:
        staged = rt.to_device(samples)
        keep.append(staged)
        rt.copy_device(ptr, staged.ptr, samples.nbytes)
    return Keys(ptr, len(samples), samples.dtype)


def judge_case(rt: Runtime, case: BinCase, columns) -> list[BinResult]:
    from histkit.gpu.binning import kernel_rule_for
    from histkit.gpu.device.memory import FenceUnavailable

    want, fails_at = expected(case)
    rule, _, _ = kernel_rule_for(as_sample_array(case.samples), *parse_bins(case.bins),
                                 case.range, case.right_closed_last)
    keep: list = []
    try:
        samples = (_samples_fenced(rt, case.samples, case.fenced, keep) if case.fenced
                   else _samples_on_device(rt, case.samples, keep))
    except FenceUnavailable as error:  # no virtual memory API: not the kernels' fault
        return [BinResult(case.name, column, "skip",
                          f"fenced inputs cannot be made here: {error}")
                for column in [c for c, _, _ in columns] + [WEIGHTS_OF_ONE]]
    edges = rt.to_device(rule.edges)
    total = rule.num_bins + TALLIES
    results = []
    for column, kernel, variant in columns:
        start = time.perf_counter()
        with harness_cell(rt, bool(case.fenced), case.skewed):
            hist = rt.empty(total, np.int64)
            rt.memset(hist.ptr, POISON, total * 8)
            first_bad = rt.empty(1, np.uint64)
            rt.memset(first_bad.ptr, 0xFF, 8)
            geometry = ""
            if samples.n:
                geometry = str(kernel.run(rt, samples, rule, hist, first_bad, edges,
                                          **variant.options))
            else:
                rt.memset(hist.ptr, 0, total * 8)
            got = rt.copy_to_host(hist.ptr, np.empty(total, np.int64))
            bad = rt.read_word(first_bad.ptr)
        status, detail = _compare(got, want, None if bad == NO_BAD_KEY else bad, fails_at,
                                  rule.num_bins)
        status, detail = with_overruns(rt, status, detail)
        results.append(BinResult(case.name, column, status, detail, geometry,
                                 time.perf_counter() - start))
    if samples.n:
        with harness_cell(rt, bool(case.fenced), case.skewed):
            result = _judge_weights_of_one(rt, case.name, samples, rule, edges, want, fails_at)
        status, detail = with_overruns(rt, result.status, result.detail)
        results.append(BinResult(result.case, result.column, status, detail, result.geometry,
                                 result.seconds))
    return results


def _samples_fenced(rt: Runtime, samples: np.ndarray, fenced: str, keep: list) -> Keys:
    """The samples flush against unmapped memory at their end or start."""
    array = rt.fenced_copy(samples, at_start=fenced == "start")
    keep.append(array)
    return Keys(array.ptr, len(samples), samples.dtype)


def _judge_weights_of_one(rt: Runtime, name: str, samples: Keys, rule, edges, want,
                          fails_at: int | None) -> BinResult:
    """The weighted path of gpu.bin_histogram (each sample's counter written
    out, then summed by the weighted histogram), with every weight 1.0: its
    sums must be the counts."""
    start = time.perf_counter()
    total = rule.num_bins + TALLIES
    ones = rt.to_device(np.ones(samples.n, np.float32))
    sums = rt.empty(total, np.float64)
    rt.memset(sums.ptr, POISON, total * 8)
    first_bad = rt.empty(1, np.uint64)
    rt.memset(first_bad.ptr, 0xFF, 8)
    geometry = "; ".join(str(g) for g in weighted_bin_histogram(
        rt, samples, rule, Weights(ones.ptr, np.dtype(np.float32)), sums, first_bad, edges))
    got = rt.copy_to_host(sums.ptr, np.empty(total, np.float64))
    whole = np.isfinite(got) & (got == np.round(got)) & (np.abs(got) < 2**62)
    counts = np.where(whole, got, -1).astype(np.int64)
    bad = rt.read_word(first_bad.ptr)
    status, detail = _compare(counts, want, None if bad == NO_BAD_KEY else bad, fails_at,
                              rule.num_bins)
    return BinResult(name, WEIGHTS_OF_ONE, status, detail, geometry, time.perf_counter() - start)


def _compare(got, want, bad: int | None, fails_at: int | None, num_bins: int):
    if fails_at is not None:
        if bad == fails_at:
            return "pass", ""
        return "FAIL", (f"numpy's rule fails first on sample {fails_at}; the kernel reported "
                        f"{'none' if bad is None else bad}")
    if bad is not None:
        return "FAIL", f"the kernel reported sample {bad} as one numpy fails on; numpy bins it"
    differ = np.flatnonzero(got != want)
    if not len(differ):
        return "pass", ""
    first = int(differ[0])
    names = {num_bins: "underflow", num_bins + 1: "overflow", num_bins + 2: "nan"}
    where = names.get(first, f"bin {first}")
    return "FAIL", (f"{len(differ)} counters differ; first {where}: expected {int(want[first])}"
                    f", got {int(got[first])}")


def all_cases(quick: bool = True) -> list[BinCase]:
    """The cases histkit's own binning kernel is judged on."""
    return bin_cases(quick) + harness_cases() + failing_cases()


def judge(rt: Runtime, cases: list[BinCase] | None = None, quick: bool = True,
          on_result: Callable[[BinResult], None] | None = None) -> list[BinResult]:
    """Every binning column on every case (default: all_cases(quick))."""
    columns = [(name, kernel, variant) for kernel in registry.BINNING_KERNELS
               for name, variant in kernel.columns()]
    results = []
    for case in all_cases(quick) if cases is None else cases:
        for result in judge_case(rt, case, columns):
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results
