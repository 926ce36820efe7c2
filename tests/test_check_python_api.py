"""histkit.conformance.check() as a Python caller and the pytest plugin use it:
a request naming no input, two, or one its kind does not take is a
UsageError before any case runs; the JSON report is strict JSON with its
inputs as data; a binning failure keeps its own symptom when shrunk and shows
its bins' edges; plugin items run in a kept worker, so a crash fails one item
and the run goes on."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from histkit.conformance import check
from histkit.conformance.cases import Case
from histkit.conformance.check_binning import cases_for as binning_cases
from histkit.conformance.loading import UsageError
from histkit.conformance.weighted_cases import weighted_cases

CALLS: list = []


def counted_histogram(keys, num_bins):
    """A correct histogram that notes each call (so a refusal can be shown to
    come before any)."""
    CALLS.append(len(keys))
    keys = np.asarray(keys)
    bad = np.flatnonzero((keys < 0) | (keys >= num_bins))
    if len(bad):
        raise ValueError(f"index {bad[0]}")
    return np.bincount(keys.astype(np.int64), minlength=num_bins)


def indexes_out_of_range(keys, num_bins):
    """Counts by np.add.at: a key of num_bins or more raises IndexError, a
    negative key wraps (unreported)."""
    counts = np.zeros(num_bins, np.int64)
    np.add.at(counts, np.asarray(keys).astype(np.int64), 1)
    return counts


def refuses_bad_keys_without_saying_where(keys, num_bins):
    keys = np.asarray(keys).astype(np.int64)
    if keys.size and (keys.min() < 0 or keys.max() >= num_bins):
        raise ValueError("a key is out of range")
    return np.bincount(keys, minlength=num_bins)


def exclusive_scan(counts):
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.uint64)


def drops_nan_weights(keys, weights, num_bins):
    """Exact sums, except that a NaN weight is skipped (its bin must be NaN)."""
    from fractions import Fraction

    sums = [Fraction(0)] * num_bins
    for key, weight in zip(keys.tolist(), weights.tolist(), strict=True):
        if weight == weight and abs(weight) != float("inf"):
            sums[key] += Fraction(weight)
    return np.array([float(s) for s in sums])


def raises_on_one_sample_and_opens_the_last_bin(samples, bins, range):
    """Two bugs: a single sample raises; the last bin is half-open (as CUB's)."""
    if len(samples) == 1:
        raise RuntimeError("one sample")
    counts, edges = np.histogram(samples, bins, range)
    top = np.asarray(samples) == edges[-1]
    counts[-1] -= int(np.count_nonzero(top))
    return counts


@pytest.mark.parametrize("request_, message", [
    (dict(keys=[0, 1], num_bins=2, case="uniform/N=31/K=10/int32"), "keys= and case="),
    (dict(num_bins=3), "num_bins= goes with keys="),
    (dict(keys=[0], num_bins=-1), "num_bins must be an integer >= 1"),
    (dict(keys=[0], num_bins=True), "num_bins must be an integer >= 1"),
    (dict(timeout=0), "timeout must be a positive finite number"),
    (dict(timeout=float("nan")), "timeout must be a positive finite number"),
    (dict(timeout=5, in_process=True), "timeout= needs a worker process"),
    (dict(cases=[]), "cases= is empty"),
    (dict(cases=weighted_cases()[:1]), "holds a WeightedCase.*conformance_cases"),
    (dict(bins=5), "bins= and range= go with samples="),
    (dict(warp_size=16), "warp_size= is for kind wave, not histogram"),
    (dict(block=128), "block= and grid= are for a .cu kernel or a privatized callable"),
    (dict(defines={"X": "1"}), "defines= and count_bits= are for a .cu kernel"),
    (dict(quick=False, keys=[0, 1], num_bins=2), "quick=False runs the whole matrix"),
])
def test_a_request_check_cannot_honour_is_refused_before_any_case_runs(request_, message):
    CALLS.clear()
    with pytest.raises(UsageError, match=message):
        check(counted_histogram, "histogram", **request_)
    assert CALLS == []


def test_a_scan_or_a_radix_sort_takes_no_num_bins_and_a_weighted_check_needs_weights():
    with pytest.raises(UsageError, match="takes no num_bins"):
        check(exclusive_scan, "scan", keys=[1, 2], num_bins=3)
    with pytest.raises(UsageError, match="needs weights="):
        check(drops_nan_weights, "weighted-histogram", keys=[0, 1], num_bins=2)
    with pytest.raises(UsageError, match="holds a Case"):
        check(drops_nan_weights, "weighted-histogram",
              cases=[Case.of_keys(np.array([0], np.int32), 1)])
    with pytest.raises(UsageError, match="holds a BinCase"):
        check(counted_histogram, "histogram", cases=binning_cases("bin-histogram")[:1])


def test_binning_cases_of_the_other_convention_are_refused_not_failed():
    half_open = binning_cases("bin-histogram-half-open")[:1]
    with pytest.raises(UsageError, match="a case of kind bin-histogram-half-open"):
        check(raises_on_one_sample_and_opens_the_last_bin, "bin-histogram", cases=half_open)
    closed = binning_cases("bin-histogram")[:1]
    with pytest.raises(UsageError, match="a case of kind bin-histogram .its own rule"):
        check(raises_on_one_sample_and_opens_the_last_bin, "bin-histogram-half-open",
              cases=closed)


class _Unpicklable:
    """A callable object that no pickler carries (it holds a lock)."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()

    def __call__(self, keys, num_bins):
        return counted_histogram(keys, num_bins)


def test_a_timeout_for_a_callable_no_worker_can_take_is_refused_not_ignored():
    with pytest.raises(UsageError, match="timeout= needs a worker process.*module:name"):
        check(_Unpicklable(), "histogram", keys=[0, 1], num_bins=2, timeout=3)
    report = check(_Unpicklable(), "histogram", keys=[0, 1], num_bins=2)  # no timeout asked
    assert report.passed and not report.isolated and report.note


def counts_nan_in_bin_0(samples, bins, range):
    """Bug: a NaN sample is counted in bin 0."""
    counts, _ = np.histogram(samples, bins, range)
    counts[0] += int(np.count_nonzero(np.isnan(np.asarray(samples, dtype=np.float64))))
    return counts


def test_a_bad_key_answered_by_another_error_is_told_how_a_bad_key_is_reported():
    report = check(indexes_out_of_range, "histogram", in_process=True)
    symptoms = {group[0].symptom for group in report.groups()}
    assert "raised IndexError on a bad key, not ValueError" in symptoms
    assert not any(symptom.startswith("raised on valid input") for symptom in symptoms)
    detail = next(f.shrunk_detail or f.detail for f in report.failures
                  if f.detail.startswith("raised IndexError"))
    assert "the first bad key is at index 0" in detail
    assert "raising ValueError with the index in its message" in detail


def test_a_value_error_that_names_no_index_is_told_to_name_it():
    report = check(refuses_bad_keys_without_saying_where, "histogram", in_process=True)
    assert {group[0].symptom for group in report.groups()} == {
        "raised ValueError without the bad key's index"}


def test_a_failure_only_odd_inputs_show_is_shown_by_its_smallest_not_a_large_unlooked_one():
    report = check(counts_nan_in_bin_0, "bin-histogram", in_process=True,
                   shrink_failures=False)
    group = next(g for g in report.groups() if g[0].symptom.startswith("bins differ"))
    shown = group[0].smallest.describe_input(64)
    assert group[0].smallest.n <= 64 and "nan" in shown, shown  # the samples written out


def test_the_json_report_is_strict_json_with_a_nan_sum_written_as_a_string():
    report = check(drops_nan_weights, "weighted-histogram", keys=[0, 0, 1],
                   weights=[1.0, float("nan"), 2.0], num_bins=2, in_process=True,
                   shrink_failures=False)
    assert not report.passed
    text = json.dumps(report.to_json(), allow_nan=False)  # raises on a bare NaN
    failure = json.loads(text)["failures"][0]
    assert failure["differences"] == [{"bin": 0, "expected": "nan", "got": 1.0}]
    assert failure["input"] == {"keys_dtype": "int64", "weights_dtype": "float64",
                                "num_bins": 2, "keys": [0, 0, 1],
                                "weights": [1.0, "nan", 2.0], "n": 3}


def test_a_json_failure_of_a_matrix_case_names_the_case_and_holds_its_keys():
    def drops_the_last_key(keys, num_bins):
        return counted_histogram(keys[:-1] if len(keys) > 3 else keys, num_bins)

    report = check(drops_the_last_key, "histogram", case="uniform/N=31/K=10/int32",
                   in_process=True, shrink_failures=False)
    (failure,) = report.to_json()["failures"]
    assert failure["input"]["case"] == "uniform/N=31/K=10/int32"
    assert len(failure["input"]["keys"]) == 31 and failure["input"]["num_bins"] == 10
    (difference,) = failure["differences"]
    assert difference["got"] == difference["expected"] - 1


def test_a_binning_failure_is_shrunk_only_to_inputs_that_fail_the_same_way():
    report = check(raises_on_one_sample_and_opens_the_last_bin, "bin-histogram",
                   in_process=True)
    groups = {group[0].symptom: group[0] for group in report.groups()}
    differ = next(f for symptom, f in groups.items() if symptom.startswith("bins differ"))
    assert differ.shrunk is not None and differ.shrunk.n > 1  # one sample would raise
    assert differ.shrunk_detail.startswith("bins differ"), differ.shrunk_detail
    assert any(symptom.startswith("raised on valid input") for symptom in groups)


def test_a_binning_difference_shows_the_edges_of_its_bin_and_an_ordinary_input():
    done = subprocess.run([sys.executable, "-m", "histkit", "check",
                           f"{__name__}:raises_on_one_sample_and_opens_the_last_bin",
                           "--kind", "bin-histogram", "--in-process"],
                          capture_output=True, text=True, cwd=str(_here()), timeout=300)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FAIL (failure 1 of"))
    shown = "\n".join(lines[at:at + 6])
    assert "bins differ" in lines[at]
    assert "]: expected " in shown and "bin " in shown, shown  # "bin 9 [0.9, 1.0]: ..."
    assert "-0.0" not in lines[at + 1] and "e+" not in lines[at + 1], shown


def test_plugin_items_run_in_a_kept_worker_so_a_crash_fails_its_item_and_the_run_goes_on(
        tmp_path):
    (tmp_path / "crashing.py").write_text(textwrap.dedent("""
        import os, signal
        import numpy as np

        def histogram(keys, num_bins):
            if len(keys) > 1000:
                os.kill(os.getpid(), signal.SIGSEGV)
            return np.bincount(np.asarray(keys, np.int64), minlength=num_bins)

        class Locked:  # no pickler carries it: it is judged in pytest's process
            def __init__(self):
                import threading
                self.lock = threading.Lock()

            def __call__(self, keys, num_bins):
                bad = np.flatnonzero((keys < 0) | (keys >= num_bins))
                if len(bad):
                    raise ValueError(f"index {bad[0]}")
                return np.bincount(np.asarray(keys, np.int64), minlength=num_bins)

        LOCKED = Locked()
    """))
    (tmp_path / "test_crashing.py").write_text(textwrap.dedent("""
        from histkit.conformance.pytest_plugin import conformance_cases
        import crashing

        @conformance_cases("histogram")
        def test_histogram(case, histkit_check):
            histkit_check(crashing.histogram, "histogram", case, shrink_failures=False)

        def test_after_the_crashes():
            assert True

        @conformance_cases("histogram")
        def test_locked(case, histkit_check):
            histkit_check(crashing.LOCKED, "histogram", case)
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-k", "N5003 or N31 or after", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "crash: the worker process died (killed by SIGSEGV) at crashing.py:7" in out, out
    assert " passed" in out and "failed" in out and "Fatal Python error" not in out
    assert "ran crashing.LOCKED in pytest's own process" not in out  # (named by type)
    assert "in pytest's own process" in out and "a crash there ends the run" in out, out


def _here():
    from pathlib import Path

    return Path(__file__).resolve().parent


def drops_the_last_key(keys, num_bins):
    counts = np.bincount(np.asarray(keys, np.int64), minlength=num_bins)
    counts[keys[-1]] -= 1
    return counts


def test_a_failures_input_comes_as_data_from_the_package_names_the_docs_use():
    # docs/check.md: from histkit.conformance import check ... input_json(failure.smallest)
    from histkit.conformance import Failure, input_json

    report = check(drops_the_last_key, "histogram", keys=np.array([2, 0, 2], np.int32),
                   num_bins=3, in_process=True)
    failure = report.failures[0]
    assert isinstance(failure, Failure)
    data = input_json(failure.smallest)
    assert data["num_bins"] == 3 and data["keys"] == [2, 0, 2]


def privatized_wrong_past_a_thousand_keys(keys, num_bins, block_size=256, num_blocks=1):
    keys = np.asarray(keys).astype(np.int64)
    counts = np.bincount(keys, minlength=num_bins)
    if len(keys) > 1000:
        counts[0] += 1
    return counts, num_blocks * int(np.count_nonzero(counts))


def test_a_json_failure_gives_the_launch_of_its_shown_input_beside_its_cases():
    report = check(privatized_wrong_past_a_thousand_keys, "privatized", in_process=True,
                   cases=[Case("uniform", 3001, 7, seed=1, dtype="int32")])
    (failure,) = report.failures
    assert failure.shrunk is not None and failure.geometry != failure.launch
    written = report.to_json()["failures"][report.failures.index(failure)]
    assert written["geometry"] == failure.geometry and written["launch"] == failure.launch
    assert written["launch"] == failure.shrunk_geometry != ""
