"""``histkit verify``'s own verdicts, in process: the oracle self-checks fail a
wrong oracle, and the job fails when any part fails (histkit.verify)."""

import io

import numpy as np
import pytest
from rich.console import Console

from histkit import verify
from histkit.distributions import GENERATORS


def quiet():
    return Console(file=io.StringIO(), width=200)


def wrong_atomics(keys, num_bins, block=256):
    counts, atomics = ORIGINAL["privatized_histogram"](keys, num_bins)
    return counts, atomics + 1


def index_of_the_unstable_sort(keys, num_bins):
    sorted_keys, _ = ORIGINAL["counting_sort"](keys, num_bins)
    return sorted_keys, np.argsort(keys, kind="quicksort")[::-1].copy()


def unsigned_argsort(keys):
    # negative keys sorted after the positive ones
    return np.argsort(np.asarray(keys).view(np.uint64), kind="stable")


def top_edge_left_out(samples, bins, range=None):
    # CUB's convention where numpy's is asked for: the top edge not counted
    return ORIGINAL["bin_histogram"](samples, bins, range, right_closed_last=False)


def weights_summed_in_order(keys, num_bins, weights=None):
    if weights is None:
        return ORIGINAL["histogram"](keys, num_bins)
    return np.bincount(np.asarray(keys, np.int64), weights, minlength=num_bins)


ORIGINAL = {name: getattr(verify.oracles, name)
            for name in ("privatized_histogram", "counting_sort", "argsort", "bin_histogram",
                         "histogram")}


@pytest.mark.parametrize("oracle,wrong,name", [
    ("privatized_histogram", wrong_atomics, "privatized_histogram"),
    ("counting_sort", index_of_the_unstable_sort, "counting_sort"),
    ("argsort", unsigned_argsort, "radix_sort"),
    ("bin_histogram", top_edge_left_out, "bin_histogram"),
    ("histogram", weights_summed_in_order, "histogram (weights)")])
def test_the_oracle_self_checks_fail_an_oracle_that_is_wrong_in_one_output(monkeypatch, oracle,
                                                                          wrong, name):
    monkeypatch.setattr(verify.oracles, oracle, wrong)
    failures = verify.oracle_self_checks(quiet())
    assert failures[name], f"the self-check passed a wrong {oracle}"
    assert [other for other, failed in failures.items() if failed] == [name]


def test_the_self_check_table_counts_its_seeded_cases():
    console = quiet()
    verify.oracle_self_checks(console)
    cases = len(GENERATORS) * len(verify.SELF_CHECK_SIZES) * len(verify.SELF_CHECK_BINS)
    assert f"oracle self-checks ({cases} seeded cases each)" in console.file.getvalue()


def test_verify_fails_when_an_oracle_fails_though_the_demo_passes(monkeypatch, tmp_path):
    monkeypatch.setattr(verify, "oracle_self_checks", lambda console: {"histogram": ["a case"]})
    monkeypatch.setattr(verify, "run_demo", lambda console: True)
    assert verify.run_verify(quiet(), gpu="off", json_path=str(tmp_path / "r.json")) is False


def test_verify_fails_when_the_demo_fails_though_the_oracles_pass(monkeypatch, tmp_path):
    monkeypatch.setattr(verify, "oracle_self_checks", lambda console: {"histogram": []})
    monkeypatch.setattr(verify, "run_demo", lambda console: False)
    assert verify.run_verify(quiet(), gpu="off", json_path=str(tmp_path / "r.json")) is False


def test_verify_without_a_console_prints_to_its_own(monkeypatch, capsys):
    monkeypatch.setattr(verify, "oracle_self_checks", lambda console: {"histogram": []})
    monkeypatch.setattr(verify, "run_demo", lambda console: True)
    assert verify.run_verify(None, gpu="off", json_path=None) is True
    assert "GPU conformance: skipped (--gpu off)" in capsys.readouterr().out


def test_gpu_on_without_a_gpu_fails_and_names_why(monkeypatch):
    from histkit import gpu

    monkeypatch.setattr(gpu, "gpu_unavailable_reason", lambda: "no GPU [here] (test)")
    console = quiet()
    ok, summary = verify._gpu_conformance(console, "on", quick=True, json_path=None)
    assert ok is False and summary == {"ran": False, "why": "no GPU [here] (test)"}
    assert "requested but unavailable: no GPU [here] (test)" in console.file.getvalue()


def _integer_matrix_passes(monkeypatch):
    """A GPU that is there, and an integer matrix that passes, without running it."""
    from histkit import gpu
    from histkit.conformance import runner
    from histkit.gpu import device

    class Passed:
        passed = True

        def to_json(self):
            return {"results": []}

    monkeypatch.setattr(gpu, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(runner, "run_conformance", lambda **kwargs: Passed())
    monkeypatch.setattr(device, "runtime", lambda: None)


def test_a_binning_failure_fails_the_gpu_conformance_and_is_named(monkeypatch):
    # the binning judge runs after the integer matrix; its FAIL is the job's
    from histkit.conformance import binning, weighted

    _integer_matrix_passes(monkeypatch)
    judged = [binning.BinResult("edges/float32/on-edge", "bin-histogram", "pass"),
              binning.BinResult("edges/float32/on-edge", "bin-histogram/split", "FAIL",
                                "1 counters differ; first bin 3: expected 2, got 1")]
    monkeypatch.setattr(binning, "judge", lambda rt, cases=None, quick=True: judged)
    monkeypatch.setattr(weighted, "judge", lambda rt: [])
    console = quiet()
    ok, summary = verify._gpu_conformance(console, "auto", quick=True, json_path=None)
    assert ok is False
    assert summary["binning"]["cells"] == 2
    assert summary["binning"]["failures"][0]["column"] == "bin-histogram/split"
    assert "FAIL edges/float32/on-edge bin-histogram/split: 1 counters differ" in (
        console.file.getvalue())
    monkeypatch.setattr(binning, "judge", lambda rt, cases=None, quick=True: judged[:1])
    assert verify._gpu_conformance(quiet(), "auto", quick=True, json_path=None)[0] is True


def test_a_weighted_failure_fails_the_gpu_conformance_and_is_named(monkeypatch):
    # the weighted judge runs after the binning one; its FAIL is the job's too
    from histkit.conformance import binning, weighted

    _integer_matrix_passes(monkeypatch)
    monkeypatch.setattr(binning, "judge", lambda rt, cases=None, quick=True: [])
    judged = [weighted.WeightedResult("cancel/1e16-1-minus-1e16", "weighted", "FAIL",
                                      "1 bins differ; first bin 0: expected 1.0, got 0.0")]
    monkeypatch.setattr(weighted, "judge", lambda rt: judged)
    console = quiet()
    ok, summary = verify._gpu_conformance(console, "auto", quick=True, json_path=None)
    assert ok is False and summary["weighted"]["cells"] == 1
    assert "FAIL cancel/1e16-1-minus-1e16 weighted: 1 bins differ" in console.file.getvalue()
    monkeypatch.setattr(weighted, "judge", lambda rt: [])
    assert verify._gpu_conformance(quiet(), "auto", quick=True, json_path=None)[0] is True


@pytest.mark.parametrize("quick, large_only", [(True, False), (False, True), (False, False)])
def test_a_split_run_judges_the_quick_binning_cases_in_one_half_and_the_large_in_the_other(
        monkeypatch, quick, large_only):
    import dataclasses

    from histkit.conformance import binning, binning_cases, weighted
    from histkit.conformance.binning_cases import bin_cases

    # Stand-ins for the large cases, whose samples (2^24-2^26) take half a
    # minute to build: the split is judged by name.
    few = list(binning_cases._bulk_cases())[:2]
    monkeypatch.setattr(binning_cases, "_large_cases", lambda: (
        dataclasses.replace(case, name=f"large/{i}") for i, case in enumerate(few)))
    _integer_matrix_passes(monkeypatch)
    asked = {}
    monkeypatch.setattr(binning, "judge", lambda rt, cases=None, quick=True: asked.update(
        names=[c.name for c in (bin_cases(quick) if cases is None else cases)]) or [])
    monkeypatch.setattr(weighted, "judge", lambda rt: [])
    verify._gpu_conformance(quiet(), "auto", quick=quick, json_path=None, large_only=large_only)
    small = {case.name for case in bin_cases(quick=True)}
    every = {case.name for case in bin_cases(quick=False)}
    assert len(every) > len(small)
    wanted = small if quick else every - small if large_only else every
    assert sorted(asked["names"]) == sorted(wanted)
