"""The whole-call benchmark's bookkeeping, without a GPU: a wrong result is
never timed, a failing peer is noted with its reason, times are medians."""

import numpy as np

from histkit.gpu import bench_calls


def _row():
    return {"us_per_call": {}, "notes": {}}


def test_a_wrong_result_is_noted_and_not_timed():
    row = _row()
    bench_calls._checked(row, "peer", lambda: np.array([1, 2]), lambda: None, np.asarray,
                         np.array([1, 3]))
    assert row["notes"]["peer"].startswith("WRONG RESULT") and not row["us_per_call"]


def test_a_failing_peer_is_noted_with_its_error():
    def broken():
        raise RuntimeError("no device")

    row = _row()
    bench_calls._checked(row, "peer", broken, lambda: None, np.asarray, np.array([1]))
    assert row["notes"]["peer"] == "skipped: RuntimeError: no device" and not row["us_per_call"]


def test_a_right_result_is_timed_per_call_with_its_sync():
    calls = {"call": 0, "sync": 0}

    def call():
        calls["call"] += 1
        return np.array([2, 0, 1])

    def sync():
        calls["sync"] += 1

    row = _row()
    bench_calls._checked(row, "ours", call, sync, np.asarray, np.array([2, 0, 1]))
    assert row["us_per_call"]["ours"] > 0 and not row["notes"]
    # every timed call is followed by its sync (the first, checked, call has none)
    assert calls["call"] - 1 == calls["sync"] >= bench_calls.MIN_CALLS


def _timed(n, num_bins, **us):
    return {"N": n, "K": num_bins, "us_per_call": dict(us), "notes": {}}


def test_a_histogram_row_is_judged_against_its_kernel_and_the_fastest_peer():
    row = _timed(1 << 12, 256, **{"histkit gpu.histogram": 35.0,
                                  "histkit kernel alone": 11.0, "torch.bincount": 65.0,
                                  "cupy.bincount": 128.0})
    over, peer = bench_calls.against_targets("histogram", row)
    assert over == {"what": "call - kernel alone (us)", "value": 24.0, "target": "<= 25",
                    "met": True}
    assert peer["what"] == "x torch.bincount" and peer["value"] == round(35 / 65, 2)
    assert peer["met"]
    row["us_per_call"]["CUB HistogramEven"] = 40.0  # a faster peer sets the bar
    peer = bench_calls.against_targets("histogram", row)[1]
    assert peer["what"] == "x CUB HistogramEven" and not peer["met"]


def test_only_2_28_keys_over_at_most_4096_bins_are_held_to_the_bandwidth_target():
    # 2^28 int32 keys (1 GiB) in 280 us: 3.83 TB/s
    fast = _timed(1 << 28, 256, **{"histkit gpu.histogram": 280.0})
    (tbps,) = bench_calls.against_targets("histogram", fast)
    assert tbps["what"] == "TB/s" and tbps["value"] == 3.83 and tbps["met"]
    slow = _timed(1 << 28, 4096, **{"histkit gpu.histogram": 290.0})
    assert not bench_calls.against_targets("histogram", slow)[0]["met"]
    assert bench_calls.against_targets("histogram", _timed(1 << 28, 65536, **{
        "histkit gpu.histogram": 280.0})) == []


def test_a_sort_is_held_to_torch_and_a_missing_figure_judges_nothing():
    row = _timed(1 << 20, 256, **{"histkit gpu.counting_sort": 81.0,
                                  "torch.sort(stable)": 113.0, "CUB DeviceRadixSort pairs": 70.0})
    (peer,) = bench_calls.against_targets("sort", row)
    assert peer["what"] == "x torch.sort(stable)" and peer["met"]
    assert bench_calls.against_targets("sort", _timed(1 << 20, 256, **{
        "histkit gpu.counting_sort": 81.0})) == []
    assert bench_calls.against_targets("histogram", _timed(1 << 20, 256)) == []


def test_a_printed_row_says_which_targets_it_missed():
    row = _timed(1 << 12, 65536, **{"histkit gpu.histogram": 45.0, "histkit kernel alone": 16.0,
                                    "torch.bincount": 63.0})
    row["targets"] = bench_calls.against_targets("histogram", row)
    line = bench_calls.format_row(row)
    assert "[targets: call - kernel alone (us) 29 (MISSED); x torch.bincount 0.71 (met)]" in line


def test_the_run_judges_every_row_and_says_how_many_targets_it_met(tmp_path, monkeypatch,
                                                                     capsys):
    import json
    import sys
    import types

    from histkit.gpu import device

    def histogram_row(cupy, torch, n, num_bins):
        return _timed(n, num_bins, **{"histkit gpu.histogram": 30.0,
                                      "histkit kernel alone": 10.0, "torch.bincount": 20.0})

    def sort_row(cupy, torch, n, num_bins):
        return _timed(n, num_bins, **{"histkit gpu.counting_sort": 50.0,
                                      "torch.sort(stable)": 100.0})

    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setattr(bench_calls, "histogram_row", histogram_row)
    monkeypatch.setattr(bench_calls, "sort_row", sort_row)
    monkeypatch.setattr(bench_calls, "optional_torch", lambda: None)
    monkeypatch.setattr(bench_calls, "plot", lambda results, path: None)
    monkeypatch.setattr(device, "runtime", lambda: types.SimpleNamespace(
        device=types.SimpleNamespace(name="a GPU"), arch="sm_90"))
    assert bench_calls.run_call_bench(str(tmp_path), sizes=(1 << 12,)) == 0
    out = capsys.readouterr().out
    # each histogram shape: call - kernel met, 1.5x torch missed; each sort 0.5x met
    assert "issue 11's targets: 5 of 8 met" in out and out.count("[targets:") == 5
    (written,) = tmp_path.glob("calls-gpu-*.json")
    rows = json.loads(written.read_text())
    assert [len(r["targets"]) for r in rows["histogram"] + rows["sort"]] == [2, 2, 2, 1, 1]
