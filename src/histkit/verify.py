"""``histkit verify``: the main job.

1. Oracle self-checks: every oracle against its independent reference
   (``histkit.references``) on seeded cases of every distribution.
2. The chapter demo on its embedded sample inputs.
3. GPU kernel conformance, when a GPU is present; otherwise it says why it
   was skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from histkit import __version__, oracles, references
from histkit.demo import run_demo
from histkit.distributions import GENERATORS, make_keys

SELF_CHECK_SIZES = (0, 1, 31, 32, 33, 255, 256, 257, 1000)
SELF_CHECK_BINS = (1, 10, 256, 4099)


def oracle_self_checks(console: Console, seed: int = 0) -> dict[str, list[str]]:
    """Each oracle against its reference; prints one row per oracle and
    returns, per oracle, the cases where it disagreed (empty: it passed)."""
    failures: dict[str, list[str]] = {name: [] for name in
                                      ("histogram", "naive_wave_histogram",
                                       "privatized_histogram", "exclusive_scan",
                                       "counting_sort", "radix_sort", "bin_histogram",
                                       "histogram (weights)")}
    cases = 0
    for distribution in GENERATORS:
        for n in SELF_CHECK_SIZES:
            for num_bins in SELF_CHECK_BINS:
                cases += 1
                keys = make_keys(distribution, n, num_bins, seed)
                where = f"{distribution} N={n} K={num_bins} seed={seed}"
                expected = references.histogram(keys, num_bins)
                if not np.array_equal(oracles.histogram(keys, num_bins), expected):
                    failures["histogram"].append(where)
                priv, atomics = oracles.privatized_histogram(keys, num_bins)
                if not np.array_equal(priv, expected) or atomics != -(-n // 256) * num_bins:
                    failures["privatized_histogram"].append(where)
                for warp_size in (32, 7):
                    if not np.array_equal(oracles.naive_wave_histogram(keys, num_bins, warp_size),
                                          references.naive_wave_histogram(keys, num_bins,
                                                                          warp_size)):
                        failures["naive_wave_histogram"].append(f"{where} warp={warp_size}")
                if not np.array_equal(oracles.exclusive_scan(expected),
                                      references.exclusive_scan(expected)):
                    failures["exclusive_scan"].append(where)
                got_keys, got_index = oracles.counting_sort(keys, num_bins)
                want_keys, want_index = references.counting_sort(keys)
                if not (np.array_equal(got_keys, want_keys)
                        and np.array_equal(got_index, want_index)):
                    failures["counting_sort"].append(where)
                # full-width keys, negatives included: a signed spread of the same keys
                signed = (keys.astype(np.int64) - num_bins // 2) * 2654435761
                if not np.array_equal(oracles.argsort(signed),
                                      np.argsort(signed, kind="stable")):
                    failures["radix_sort"].append(where)
                if not _binning_agrees(keys, num_bins, seed):
                    failures["bin_histogram"].append(where)
                weights = _adversarial_weights(n, seed + n + num_bins)
                if not _same_bits(oracles.histogram(keys, num_bins, weights),
                                  references.weighted_histogram(keys, num_bins, weights)):
                    failures["histogram (weights)"].append(where)
    table = Table(title=f"oracle self-checks ({cases} seeded cases each)")
    table.add_column("oracle")
    table.add_column("reference")
    table.add_column("result")
    reference_names = {
        "histogram": "np.bincount",
        "naive_wave_histogram": "plain Python wave loop",
        "privatized_histogram": "np.bincount + blocks x bins",
        "exclusive_scan": "np.cumsum",
        "counting_sort": "np.argsort(kind='stable')",
        "radix_sort": "np.argsort(kind='stable'), signed 64-bit keys",
        "bin_histogram": "np.histogram, counts and edges bit for bit",
        "histogram (weights)": "math.fsum per bin, bit for bit",
    }
    for name, failed in failures.items():
        result = "[green]pass[/]" if not failed else f"[bold red]FAIL[/] ({failed[0]}, ...)"
        table.add_row(name, reference_names[name], result)
    console.print(table)
    return failures


def _binning_agrees(keys: np.ndarray, num_bins: int, seed: int) -> bool:
    """oracles.bin_histogram equal to np.histogram, counts and edges, on
    samples spread over the bins of a range, on its edges and one ulp either
    side of them, in float32 and float64, with the range given and not."""
    rng = np.random.default_rng(seed + len(keys) + num_bins)
    for dtype, span in ((np.float64, (-1.5, 2.25)), (np.float32, (0.1, 0.7))):
        lo, hi = span
        spread = lo + (keys + rng.random(len(keys))) * ((hi - lo) / num_bins)
        edges = np.histogram(np.empty(0, dtype), num_bins, span)[1]
        on_edges = edges[rng.integers(0, len(edges), len(keys))]
        samples = np.concatenate([spread.astype(dtype), on_edges,
                                  np.nextafter(on_edges, np.inf),
                                  np.nextafter(on_edges, -np.inf)]).astype(dtype)
        for range_ in (span, None):
            if range_ is None and not len(samples):
                continue
            got = oracles.bin_histogram(samples, num_bins, range_)
            want = references.bin_histogram(samples, num_bins, range_)
            if not (np.array_equal(got[0], want[0]) and _same_bits(got[1], want[1])):
                return False
    return True


def _adversarial_weights(n: int, seed: int) -> np.ndarray:
    """Weights over many binades, both signs, where a bin's float64 sum in
    order loses what cancels: huge pairs that cancel, tiny and subnormal ones."""
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    weights[::5] = 1e16 * rng.choice([-1.0, 1.0], len(weights[::5]))
    weights[1::7] = 5e-324 * rng.integers(1, 9, len(weights[1::7]))
    return weights


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and got.tobytes() == want.tobytes()


def gpu_how_to() -> str:
    """What would let this host check the kernels: the GPU extra where
    cuda-python is missing, else the GPU and driver it lacks."""
    import importlib.util

    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.core") is None:
        return ('install the GPU extra: python3 -m pip install ".[gpu]" from a checkout '
                '(cuda-python is not installed here), on a host with an NVIDIA GPU and driver')
    return "run this on a host with an NVIDIA GPU and its driver (the GPU extra is installed)"


def run_verify(console: Console | None = None, gpu: str = "auto", quick: bool = False,
               json_path: str | None = "conformance-results.json",
               large_only: bool = False) -> bool:
    """Run everything ``histkit verify`` promises; True when all passed.

    The JSON report holds the oracle self-checks, the demo's self-checks and
    the GPU conformance matrix (or why it did not run).
    """
    console = console or Console()
    failures = oracle_self_checks(console)
    demo_ok = run_demo(console=console)
    ok = demo_ok and not any(failures.values())
    summary: dict = {"histkit": __version__, "oracle_self_checks": failures,
                     "demo_self_checks_confirmed": demo_ok}
    gpu_ok, summary["gpu_conformance"] = _gpu_conformance(console, gpu, quick, json_path,
                                                          large_only)
    ok &= gpu_ok
    summary["passed"] = ok
    if json_path:
        report = summary["gpu_conformance"].pop("report", None)
        if report is not None:
            summary["gpu_conformance"].update(report)
        Path(json_path).write_text(json.dumps(summary, indent=1, default=str))
        progress_path(json_path).unlink(missing_ok=True)
        console.print(f"wrote {json_path}")
    return ok


def progress_path(json_path) -> Path:
    """Where the conformance results go case by case until the JSON is written."""
    return Path(json_path).with_suffix(".progress.jsonl")


def _gpu_conformance(console: Console, gpu: str, quick: bool, json_path,
                     large_only: bool = False) -> tuple[bool, dict]:
    if gpu == "off":
        console.print("GPU conformance: skipped (--gpu off)")
        return True, {"ran": False, "why": "--gpu off"}
    from histkit.gpu import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        if gpu == "on":
            console.print("[bold red]GPU conformance requested but unavailable:[/] "
                          + escape(reason))
            return False, {"ran": False, "why": reason}
        console.rule("[bold yellow]GPU conformance SKIPPED[/]")
        console.print(f"[bold yellow]GPU conformance: skipped -- {escape(reason)}[/]\n"
                      f"No kernel was checked. To check them, {escape(gpu_how_to())}; "
                      f"--gpu on makes a missing GPU a failure.")
        return True, {"ran": False, "why": reason}
    from histkit.conformance.cases import large_cases
    from histkit.conformance.runner import run_conformance

    # Results also go, case by case, to a progress file beside the JSON: a
    # long run that is cut off keeps what it judged. Removed once the JSON is.
    progress = progress_path(json_path) if json_path else None
    report = run_conformance(console=console, quick=quick, json_path=None,
                             cases=large_cases() if large_only else None,
                             progress_path=progress)
    if progress:
        console.print(f"(results case by case in {progress}, until the JSON is written)")
    binning_ok, binning = _binning_conformance(console, quick=quick, large_only=large_only)
    weighted_ok, weighted = _weighted_conformance(console)
    return report.passed and binning_ok and weighted_ok, {
        "ran": True, "large_only": large_only, "report": report.to_json(), "binning": binning,
        "weighted": weighted}


def _binning_conformance(console: Console, quick: bool,
                         large_only: bool = False) -> tuple[bool, dict]:
    """The binning kernel's columns on the binning case set
    (histkit.conformance.binning): the quick set, the large cases alone
    (large_only: the other half of a split run), or both: (passed, their
    summary for the JSON)."""
    from histkit.conformance import binning
    from histkit.conformance.binning_cases import bin_cases
    from histkit.gpu.device import runtime

    cases = None
    if large_only:
        small = {case.name for case in bin_cases(quick=True)}
        cases = [case for case in bin_cases(quick=False) if case.name not in small]
    return _judged(console, "binning real-valued samples",
                   binning.judge(runtime(), cases=cases, quick=quick))


def _judged(console: Console, title: str, results: list) -> tuple[bool, dict]:
    """A judge's columns summed up on the console: (passed, their JSON summary)."""
    from dataclasses import asdict

    failures = [r for r in results if r.status == "FAIL"]
    verdict = "[bold green]PASS[/]" if not failures else "[bold red]FAIL[/]"
    console.print(f"{title}: {len(results)} cells ({len({r.case for r in results})} cases), "
                  f"{len(failures)} FAIL: {verdict}")
    for failure in failures[:10]:
        console.print(f"  FAIL {escape(failure.case)} {failure.column}: {escape(failure.detail)}")
    return not failures, {"cells": len(results), "failures": [asdict(r) for r in failures]}


def _weighted_conformance(console: Console) -> tuple[bool, dict]:
    """The weighted kernel's columns on the weighted case set
    (histkit.conformance.weighted): (passed, their summary for the JSON)."""
    from histkit.conformance import weighted
    from histkit.gpu.device import runtime

    return _judged(console, "weighted histograms (exact sums)", weighted.judge(runtime()))
