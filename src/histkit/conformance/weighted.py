"""The weighted-histogram kernels judged: every row of
registry.WEIGHTED_KERNELS, in every variant, on every case of
histkit.conformance.weighted_cases, against oracles.histogram(keys,
num_bins, weights).

Besides those cases, ``harness_cases``: kernels built with schedule skew,
and inputs flush against unmapped memory. Every column runs with new
scratch poisoned and guarded (as the integer kernels' runner runs them), so
scratch a launcher forgets to zero, or a write past it, fails the cell.

The rule for histkit's own kernels is stricter than ``histkit check``'s: each
bin's float64 equal to the oracle's **bit for bit** (the sign of a zero and
the NaN's bits included: the kernel rounds as the oracle does). On a case
with keys outside ``[0, num_bins)`` the first such index must be reported and
the sums equal the oracle's over the valid keys (the bad ones skipped, as the
integer histograms skip them). The sums start poisoned, so a bin the kernel
never writes shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from histkit import oracles
from histkit.conformance.checks import ColumnResult, harness_cell, with_overruns
from histkit.conformance.weighted_cases import WeightedCase, harness_cases, weighted_cases
from histkit.gpu import registry
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.device import Runtime
from histkit.gpu.launch.common import Keys
from histkit.gpu.launch.weighted import Weights

POISON = 0xA5  # the sums' bytes before the launch


WeightedResult = ColumnResult  # one weighted column on one case


def expected(case: WeightedCase) -> tuple[np.ndarray, int | None]:
    """(the oracle's sums over the valid keys, as uint64 bits; the first bad
    key's index or None)."""
    keys = case.keys.astype(np.int64) if case.keys.dtype.kind == "i" else case.keys
    valid = (keys >= 0) & (keys < case.num_bins) if keys.dtype.kind == "i" else (
        keys < case.num_bins)
    bad = np.flatnonzero(~valid)
    sums = oracles.histogram(case.keys[valid], case.num_bins, case.weights[valid])
    return sums.view(np.uint64), (int(bad[0]) if len(bad) else None)


def _on_device(rt: Runtime, host: np.ndarray, fenced: str):
    """host on the device; fenced "end" or "start": flush against unmapped memory."""
    host = np.ascontiguousarray(host)
    return rt.fenced_copy(host, at_start=fenced == "start") if fenced else rt.to_device(host)


def judge_case(rt: Runtime, case: WeightedCase, columns) -> list[WeightedResult]:
    from histkit.gpu.device.memory import FenceUnavailable

    want, bad_at = expected(case)
    try:
        keys_on_device = _on_device(rt, case.keys, case.fenced)
        weights_on_device = _on_device(rt, case.weights, case.fenced)
    except FenceUnavailable as error:  # no virtual memory API: not the kernels' fault
        return [WeightedResult(case.name, column, "skip",
                               f"fenced inputs cannot be made here: {error}")
                for column, _, _ in columns]
    keys = Keys(keys_on_device.ptr, case.n, case.keys.dtype)
    weights = Weights(weights_on_device.ptr, case.weights.dtype)
    results = []
    for column, kernel, variant in columns:
        start = time.perf_counter()
        # new scratch arrives poisoned and guarded, the sums too
        with harness_cell(rt, bool(case.fenced), case.skewed):
            sums = rt.empty(case.num_bins, np.uint64)
            rt.memset(sums.ptr, POISON, case.num_bins * 8)
            first_bad = rt.empty(1, np.uint64)
            rt.memset(first_bad.ptr, 0xFF, 8)
            geometry = ""
            if case.n:
                geometry = " + ".join(str(g) for g in kernel.run(
                    rt, keys, weights, case.num_bins, sums, first_bad, **variant.options))
            else:
                rt.memset(sums.ptr, 0, case.num_bins * 8)
            got = rt.copy_to_host(sums.ptr, np.empty(case.num_bins, np.uint64))
            bad = rt.read_word(first_bad.ptr)
        status, detail = compare(got, want, None if bad == NO_BAD_KEY else bad, bad_at)
        status, detail = with_overruns(rt, status, detail)
        results.append(WeightedResult(case.name, column, status, detail, geometry,
                                      time.perf_counter() - start))
    return results


def compare(got: np.ndarray, want: np.ndarray, bad: int | None, bad_at: int | None
            ) -> tuple[str, str]:
    """Sums (uint64 bits of float64) equal bit for bit, and the first bad key
    reported where there is one."""
    if bad != bad_at:
        return "FAIL", (f"the first key outside the bins is at index {bad_at}; the kernel "
                        f"reported {bad}")
    differ = np.flatnonzero(got != want)
    if not len(differ):
        return "pass", ""
    first = int(differ[0])
    as_float = lambda bits: float(np.array(bits, np.uint64).view(np.float64))  # noqa: E731
    return "FAIL", (f"{len(differ)} bins differ; first bin {first}: expected "
                    f"{as_float(want[first])!r}, got {as_float(got[first])!r}")


def all_cases() -> list[WeightedCase]:
    """The cases histkit's own weighted kernels are judged on."""
    return weighted_cases() + harness_cases()


def columns() -> list:
    return [(name, kernel, variant) for kernel in registry.WEIGHTED_KERNELS
            for name, variant in kernel.columns()]


def judge(rt: Runtime, cases: list[WeightedCase] | None = None,
          on_result: Callable[[WeightedResult], None] | None = None) -> list[WeightedResult]:
    """Every weighted column on every case (default: weighted_cases() and
    harness_cases())."""
    every = columns()
    results = []
    for case in all_cases() if cases is None else cases:
        for result in judge_case(rt, case, every):
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results
