"""histkit check --kind weighted-histogram: the exact-sum rule on callables
(no GPU): an fsum implementation passes, left-to-right and float32 sums fail
with a few-key reproducer that fails again, bad keys must be reported, and
the cases' traps hold against independent references."""

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_nvrtc

from histkit.conformance import check
from histkit.conformance.loading import UsageError
from histkit.conformance.weighted_cases import weighted_cases

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples.python_kernels import weighted_fsum  # noqa: E402  (math.fsum per bin)

EXAMPLE = "examples.python_kernels:"


def sums_ignoring_bad_keys(keys, weights, num_bins):
    keep = (keys >= 0) & (keys < num_bins)
    return np.bincount(keys[keep].astype(np.int64), weights[keep], minlength=num_bins)


def test_exact_sums_pass_every_case():
    report = check(EXAMPLE + "weighted_fsum", "weighted-histogram", in_process=True)
    assert report.passed and report.counts()["pass"] == len(weighted_cases())


def test_left_to_right_sums_fail_with_a_three_key_reproducer_that_fails_again():
    report = check(EXAMPLE + "weighted_bincount", "weighted-histogram")
    assert not report.passed
    first = report.failures[0]
    assert first.smallest.n <= 3 and "expected 1.0" in (first.shrunk_detail or first.detail)
    done = subprocess.run(["bash", "-c", first.python_reproducer.replace(
        "python3 -c", f"{sys.executable} -c", 1)], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.startswith("FAIL"), done.stdout + done.stderr
    argv = first.reproducer.split()[2:]
    done = subprocess.run([sys.executable, "-m", "histkit", "check", *argv],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "FAIL" in done.stdout, done.stdout + done.stderr


def test_float32_results_fail_where_rounding_the_exact_sum_to_float32_changes_it():
    report = check(EXAMPLE + "weighted_float32_sums", "weighted-histogram", in_process=True)
    assert not report.passed
    assert {g[0].symptom for g in report.groups()} == {"bins differ"}


def test_a_bad_key_that_is_not_reported_fails_naming_it():
    report = check(sums_ignoring_bad_keys, "weighted-histogram", in_process=True)
    details = [f.detail for f in report.failures]
    assert any(d.startswith("no bad key reported; the first is at index 3 (value 5); a "
                            "callable reports one by raising ValueError") for d in details)


def indexes_out_of_range(keys, weights, num_bins):
    """Sums by np.add.at: a key of num_bins or more raises IndexError."""
    sums = np.zeros(num_bins)
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow cases
        np.add.at(sums, keys.astype(np.int64), weights.astype(np.float64))
    return sums


def test_a_bad_key_raising_another_error_than_value_error_is_told_what_to_raise():
    report = check(indexes_out_of_range, "weighted-histogram", in_process=True)
    details = [f.detail for f in report.failures if "key-equal-to-num-bins" in f.case.name]
    assert details and details[0].startswith(
        "raised IndexError on a bad key, not ValueError: IndexError: index 5 is out of bounds")
    assert "the first bad key is at index 3 (value 5); a callable reports one by raising " \
           "ValueError" in details[0]
    assert "raised on valid input" not in " ".join(f.detail for f in report.failures)


def _in_order(weights: np.ndarray) -> float:
    """Left-to-right addition in the weights' own dtype, as a kernel adding
    float32 weights into float32 counters does."""
    total = weights.dtype.type(0)
    for w in weights:
        total = weights.dtype.type(total + w)
    return float(total)


def test_every_cancellation_case_defeats_addition_in_one_order_or_its_reverse():
    # the trap each cancel/ case sets, against fsum and exact rationals
    for case in weighted_cases():
        if not case.name.startswith("cancel/"):
            continue
        for b in range(case.num_bins):
            weights = case.weights[case.keys == b]
            exact = float(sum(Fraction(float(w)) for w in weights))
            assert math.fsum(weights.tolist()) == exact
            forward, backward = _in_order(weights), _in_order(weights[::-1])
            assert forward != exact or backward != exact, case.name


def test_the_overflow_cases_overflow_only_in_some_orders():
    cases = {case.name: case for case in weighted_cases()}
    weights = cases["overflow/max-max-minus-max"].weights.tolist()
    assert float(sum(Fraction(w) for w in weights)) == np.finfo(np.float64).max
    with np.errstate(over="ignore"):
        assert np.isinf(np.add.accumulate(np.array(weights))[1])


@pytest.mark.parametrize("arguments, message", [
    ({"keys": np.zeros(3, np.int32), "weights": np.ones(2), "num_bins": 2}, "one per key"),
    ({"keys": np.zeros(3, np.int32), "weights": np.ones(3, np.int64), "num_bins": 2},
     "float32 or float64"),
    ({"keys": np.zeros(3), "weights": np.ones(3), "num_bins": 2}, "integers"),
    ({"keys": np.zeros(3, np.int32), "weights": np.ones(3), "num_bins": 0},
     "num_bins must be an integer >= 1"),
])
def test_a_weighted_check_asked_wrongly_is_a_usage_error(arguments, message):
    with pytest.raises(UsageError, match=message):
        check(EXAMPLE + "weighted_fsum", "weighted-histogram", **arguments)


def test_weights_for_another_kind_are_a_usage_error():
    with pytest.raises(UsageError, match="weights= is for kind weighted-histogram"):
        check(EXAMPLE + "histogram", "histogram", weights=np.ones(3))


ATOMIC_WEIGHTED = str(ROOT / "examples" / "cuda" / "weighted_atomic.cu")


def test_a_weighted_cuda_file_is_built_by_the_kernel_abi_with_its_launch_options():
    from histkit.conformance.check import make_impl
    from histkit.conformance.check_weighted import WeightedCudaFile

    impl = make_impl(ATOMIC_WEIGHTED, "weighted-histogram", defines={"UNROLL": "4"},
                     block=128, grid=8)
    assert impl == WeightedCudaFile(ATOMIC_WEIGHTED, "weighted_histogram",
                                    (("UNROLL", "4"),), 128, 8)
    assert impl.build_defines(np.dtype(np.uint16), np.dtype(np.float64)) == {
        "KEY_T": "unsigned short", "WEIGHT_T": "double", "UNROLL": "4"}
    with pytest.raises(FileNotFoundError, match="no such kernel file"):
        make_impl("no/such/weighted.cu", "weighted-histogram")
    with pytest.raises(UsageError, match="one entry point"):
        make_impl(ATOMIC_WEIGHTED + ":a,b", "weighted-histogram")


def test_a_weighted_cuda_file_reproducer_carries_its_launch_options(monkeypatch):
    from histkit.conformance import check_weighted
    from histkit.conformance.check import make_impl

    monkeypatch.chdir(ROOT)
    impl = make_impl(ATOMIC_WEIGHTED, "weighted-histogram", defines={"UNROLL": "4"},
                     block=128, grid=8)
    case = check_weighted.one_case(np.zeros(3, np.int32), np.array([1e16, 1.0, -1e16]), 1)
    line = check_weighted.command_line(impl, "weighted-histogram", case)
    assert line == ("histkit check examples/cuda/weighted_atomic.cu --kind weighted-histogram "
                    "--keys=0,0,0 --weights=1e+16,1.0,-1e+16 --num-bins 1 --dtype int32 "
                    "--weights-dtype float64 --define UNROLL=4 --block 128 --grid 8")
    call = check_weighted.python_call(impl, "weighted-histogram", case)
    assert "'examples/cuda/weighted_atomic.cu', 'weighted-histogram'" in call
    assert "block=128, grid=8, defines={'UNROLL': '4'}" in call


@needs_nvrtc
def test_the_atomic_weighted_example_compiles_and_without_a_gpu_is_refused(monkeypatch,
                                                                           capsys):
    from histkit.cli import main
    from histkit.gpu.errors import GpuUnavailableError

    assert main(["check", ATOMIC_WEIGHTED, "--kind", "weighted-histogram",
                 "--compile-only"]) == 0
    assert "with entry weighted_histogram" in capsys.readouterr().out
    monkeypatch.setattr("histkit.gpu.device.gpu_unavailable_reason", lambda: "no driver here")
    with pytest.raises(GpuUnavailableError, match="needs a GPU: no driver here"):
        check(ATOMIC_WEIGHTED, "weighted-histogram")


@needs_nvrtc
def test_a_cuda_file_without_the_weighted_entry_is_a_usage_error():
    with pytest.raises(UsageError, match="has no entry weighted_histogram"):
        check(str(ROOT / "examples" / "cuda" / "atomic_histogram.cu"), "weighted-histogram")


def test_the_json_report_of_a_weighted_failure_holds_its_smallest_input_as_data(tmp_path):
    import json

    from histkit.cli import main

    out = tmp_path / "report.json"
    code = main(["check", EXAMPLE + "weighted_bincount", "--kind", "weighted-histogram",
                 "--in-process", "--json", str(out)])
    report = json.loads(out.read_text())
    assert code == 1
    shown = report["failures"][0]["input"]
    assert shown["keys"][:3] == [0, 0, 0] and len(shown["weights"]) == len(shown["keys"])
    assert shown["weights_dtype"] in ("float32", "float64") and shown["num_bins"] >= 1


def test_harness_cases_skew_and_fence_both_ends_apart_from_the_user_cases():
    from histkit.conformance.weighted_cases import harness_cases, weighted_cases

    harness, user = harness_cases(), weighted_cases()
    assert len({c.name for c in harness}) == len(harness)
    assert not {c.name for c in harness} & {c.name for c in user}
    assert not any(c.skewed or c.fenced for c in user)  # a user's callable: plain cases
    assert {c.fenced for c in harness} == {"", "end", "start"} and any(c.skewed for c in harness)
    for case in harness:
        assert len(case.keys) == len(case.weights) and not case.keys.flags.writeable
        assert ((case.keys >= 0) & (case.keys < case.num_bins)).all()
        assert np.isfinite(case.weights).all()
        if case.fenced:  # the last vector of keys or weights ends mid-vector
            assert case.keys.nbytes % 16 or case.weights.nbytes % 16


def _reporting_the_last_bad_key(keys, weights, num_bins):
    bad = np.flatnonzero((keys < 0) | (keys >= num_bins))
    if len(bad):
        raise ValueError(f"key {keys[bad[-1]]} at index {bad[-1]} is outside the bins")
    return weighted_fsum(keys, weights, num_bins)


def _zero_weights_read_as_the_smallest_normal(keys, weights, num_bins):
    _reporting_the_last_bad_key(keys, weights, num_bins)
    tiny = np.finfo(np.float64).tiny
    return weighted_fsum(keys, np.where(weights == 0, tiny, weights), num_bins)


def _minus_zero_as_nan(keys, weights, num_bins):
    _reporting_the_last_bad_key(keys, weights, num_bins)
    sums = weighted_fsum(keys, weights, num_bins)
    sums[np.unique(keys[np.signbit(weights) & (weights == 0)])] = np.nan
    return sums


def _every_overflow_positive(keys, weights, num_bins):
    _reporting_the_last_bad_key(keys, weights, num_bins)
    sums = weighted_fsum(keys, weights, num_bins)
    return np.where(np.isinf(sums), np.inf, sums)


def _bins_as_16_bit_indexes(keys, weights, num_bins):
    _reporting_the_last_bad_key(keys, weights, num_bins)
    sums = np.zeros(num_bins)
    low = weighted_fsum(keys.astype(np.int64) % 65536, weights, min(num_bins, 65536))
    sums[:len(low)] = low
    return sums


@pytest.mark.parametrize("callable_, where", [
    (_zero_weights_read_as_the_smallest_normal, "ieee/float64/zeros-of-both-signs"),
    (_minus_zero_as_nan, "ieee/float64/zeros-of-both-signs"),
    (_every_overflow_positive, "overflow/negative/exact-sum-overflows"),
    (_reporting_the_last_bad_key, "bad/two-bad-keys"),
    (_bins_as_16_bit_indexes, "bulk/float32/n=70001/K=131075"),
], ids=["zeros_as_tiny", "minus_zero_as_nan", "overflow_positive", "last_bad_key",
        "bins_as_16_bits"])
def test_slips_beside_the_sum_itself_fail_on_the_case_built_for_them(callable_, where):
    # zeros of either sign, overflow of either sign, the first of several bad
    # keys, and bins past 16-bit indexes: each slip fails its case, and
    # nothing else in the sums is wrong
    cases = {case.name: case for case in weighted_cases()}
    report = check(callable_, "weighted-histogram", in_process=True, cases=[cases[where]])
    assert [f.case.name for f in report.failures] == [where]
    ordinary = [cases[name] for name in ("cancel/1e16-1-minus-1e16", "bulk/float64/n=33/K=7")]
    assert check(callable_, "weighted-histogram", in_process=True, cases=ordinary).passed
