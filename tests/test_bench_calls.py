"""The whole-call benchmark's bookkeeping, without a GPU: a wrong result is
never timed, a failing peer is noted with its reason, times are medians."""

import numpy as np
import pytest

from histkit.bench import calls as bench_calls


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
    assert calls == {"call": 1, "sync": 0}  # checked now, timed with the row's others
    bench_calls._time_in_rounds(row)
    assert row["us_per_call"]["ours"] > 0 and not row["notes"]
    assert len(row["rounds_us"]["ours"]) == bench_calls.ROUNDS
    # every timed call is followed by its sync (the first, checked, call has none)
    assert calls["call"] - 1 == calls["sync"] >= bench_calls.ROUNDS * bench_calls.MIN_CALLS


def test_a_rows_contenders_take_turns_leading_a_round_and_keep_the_median_round(monkeypatch):
    clock, order = _Clock(), []
    monkeypatch.setattr(bench_calls.time, "perf_counter", clock)
    monkeypatch.setattr(bench_calls, "calls_per_round", lambda call, sync: 1)
    pace = {"a": [5e-6, 1e-6, 3e-6], "b": [2e-6, 2e-6, 9e-6], "c": [4e-6, 4e-6, 4e-6]}

    def contender(name):
        def call():
            order.append(name)
            clock.now += pace[name][sum(1 for n in order if n == name) - 1]
            return np.array([1])
        return call

    row = _row()
    for name in "abc":
        row.setdefault("contenders", []).append((name, contender(name), lambda: None))
    bench_calls._time_in_rounds(row)
    assert order == list("abcbcacab")  # each round one further round
    for name, paces in pace.items():
        assert row["rounds_us"][name] == pytest.approx([s * 1e6 for s in paces])
    assert row["us_per_call"] == pytest.approx({"a": 3.0, "b": 2.0, "c": 4.0})


def test_a_contender_failing_in_a_later_round_is_noted_and_given_no_figure(monkeypatch):
    monkeypatch.setattr(bench_calls, "calls_per_round", lambda call, sync: 2)
    made = []

    def flaky():
        made.append(1)
        if len(made) > 3:
            raise MemoryError("out of memory")

    row = _row()
    row["contenders"] = [("flaky", flaky, lambda: None), ("steady", lambda: None, lambda: None)]
    bench_calls._time_in_rounds(row)
    assert row["notes"] == {"flaky": "skipped: MemoryError: out of memory"}
    assert list(row["us_per_call"]) == list(row["rounds_us"]) == ["steady"]
    assert len(row["rounds_us"]["steady"]) == bench_calls.ROUNDS


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


def test_histkits_call_on_torch_keys_is_held_to_the_same_fastest_peer():
    row = _timed(1 << 12, 256, **{"histkit gpu.histogram": 25.0,
                                  "histkit gpu.histogram (torch keys)": 60.0,
                                  "torch.bincount": 65.0})
    mine, torch_keys = bench_calls.against_targets("histogram", row)
    assert mine["what"] == "x torch.bincount" and mine["met"]
    assert torch_keys["what"] == "torch keys x torch.bincount"
    assert torch_keys["value"] == round(60 / 65, 2) and not torch_keys["met"]
    sort = _timed(1 << 20, 256, **{"histkit gpu.counting_sort": 81.0, "torch.sort(stable)": 113.0,
                                   "histkit gpu.counting_sort (torch keys)": 85.0})
    assert [t["what"] for t in bench_calls.against_targets("sort", sort)] == [
        "x torch.sort(stable)", "torch keys x torch.sort(stable)"]


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
    assert "call targets: 5 of 8 met" in out and out.count("[targets:") == 5
    (written,) = tmp_path.glob("calls-gpu-*.json")
    rows = json.loads(written.read_text())
    assert [len(r["targets"]) for r in rows["histogram"] + rows["sort"]] == [2, 2, 2, 1, 1]


def test_a_figure_exactly_on_its_target_meets_it(monkeypatch):
    # the targets are "<= 25 us over", "<= 0.8x the fastest peer", ">= 3.8 TB/s"
    row = _timed(1 << 20, 256, **{"histkit gpu.histogram": 40.0, "histkit kernel alone": 15.0,
                                  "torch.bincount": 50.0})
    over, peer = bench_calls.against_targets("histogram", row)
    assert (over["value"], over["met"]) == (25.0, True)
    assert (peer["value"], peer["met"]) == (0.8, True)
    sort = _timed(1 << 20, 256, **{"histkit gpu.counting_sort": 80.0,
                                   "torch.sort(stable)": 100.0})
    assert bench_calls.against_targets("sort", sort)[0]["met"]
    at_2_28 = _timed(1 << 28, 256, **{"histkit gpu.histogram": 250.0})
    exact = (1 << 28) * 4 / (250.0 * 1e-6) / 1e12  # this row's TB/s, made the target
    monkeypatch.setattr(bench_calls, "MIN_TBPS_AT_2_28", exact)
    (tbps,) = bench_calls.against_targets("histogram", at_2_28)
    assert tbps["met"]


class _Clock:
    """time.perf_counter for the bench's timing, advanced only by the calls timed."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _paced(monkeypatch, seconds_per_call):
    clock, calls = _Clock(), []
    monkeypatch.setattr(bench_calls.time, "perf_counter", clock)

    def call():
        calls.append(seconds_per_call)
        clock.now += seconds_per_call

    return call, calls


def test_a_median_is_the_calls_own_time_in_microseconds(monkeypatch):
    call, calls = _paced(monkeypatch, 0.002)
    assert abs(bench_calls.median_of_calls_us(call, lambda: None, 7) - 2000.0) < 1e-6
    assert len(calls) == 7


def test_the_calls_a_round_times_fill_its_time_within_their_bounds(monkeypatch):
    warm_and_first = bench_calls.WARM_UP_CALLS + 1
    # 1 ms a call: as many as SECONDS_PER_ROUND holds
    call, calls = _paced(monkeypatch, 0.001)
    count = bench_calls.calls_per_round(call, lambda: None)
    assert count == round(bench_calls.SECONDS_PER_ROUND / 0.001)
    assert len(calls) == warm_and_first
    call, _ = _paced(monkeypatch, 1.0)  # slow calls: never fewer than MIN_CALLS
    assert bench_calls.calls_per_round(call, lambda: None) == bench_calls.MIN_CALLS
    call, _ = _paced(monkeypatch, 1e-6)  # fast calls: never more than MAX_CALLS
    assert bench_calls.calls_per_round(call, lambda: None) == bench_calls.MAX_CALLS


def test_each_panel_of_the_calls_plot_shows_its_own_bins_rows(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    results = {"device": "a test GPU", "histogram": [], "sort": []}
    for num_bins in bench_calls.CALL_BINS:  # each row's figure names its K
        results["histogram"] += [_timed(n, num_bins, **{"histkit gpu.histogram": num_bins + n})
                                 for n in (1 << 12, 1 << 20)]
    for num_bins in bench_calls.CALL_SORT_BINS:
        results["sort"] += [_timed(n, num_bins, **{"histkit gpu.counting_sort": num_bins + n})
                            for n in (1 << 12, 1 << 20)]
    seen = {}
    real_savefig = plt.Figure.savefig

    def savefig(figure, path, **options):
        seen.update({ax.get_title(): [tuple(line.get_ydata()) for line in ax.get_lines()]
                     for ax in figure.axes})
        return real_savefig(figure, path, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plt.Figure, "savefig", savefig)
        bench_calls.plot(results, tmp_path / "calls.png")
    want = {f"histogram, K = {k}": [(k + (1 << 12), k + (1 << 20))] for k in bench_calls.CALL_BINS}
    want |= {f"sort, K = {k}": [(k + (1 << 12), k + (1 << 20))]
             for k in bench_calls.CALL_SORT_BINS}
    assert seen == want


def test_the_kernel_bench_times_every_exact_histogram_method_and_the_fast_kernel():
    from histkit.bench import kernels as bench
    from histkit.gpu import registry

    exact = [m for m in registry.methods("histogram") if m != "naive"]  # naive loses counts
    want = {f"histkit {registry.serving('histogram', m).row}" for m in exact} | {"histkit fast"}
    assert set(bench.benched_histogram_kernels()) == want


def test_the_kernel_bench_times_a_peer_only_when_its_result_is_the_oracles():
    from histkit.bench import kernels as bench

    timed = []

    def time_with(call):
        timed.append(call)
        return 2.0

    row = {"TBps": {}, "notes": {}}
    right, wrong = (lambda: np.array([1, 2])), (lambda: np.array([1, 3]))
    bench._time_peer(row, "right", time_with, right, np.array([1, 2]), np.asarray,
                     ("TBps", lambda seconds: 1 / seconds))
    bench._time_peer(row, "wrong", time_with, wrong, np.array([1, 2]), np.asarray,
                     ("TBps", lambda seconds: 1 / seconds))
    assert timed == [right] and row["TBps"] == {"right": 0.5}
    assert row["notes"] == {"wrong": "WRONG RESULT: not timed"}


def test_a_contender_that_times_itself_gives_one_figure_a_round_in_the_rotation(monkeypatch):
    # the kernel alone is timed by CUDA events in the same rounds as the calls
    monkeypatch.setattr(bench_calls, "calls_per_round", lambda call, sync: 1)
    order, figures = [], iter([12.0, 10.0, 11.0])

    def self_timed():
        order.append("kernel")
        return next(figures)

    row = _row()
    row["contenders"] = [("call", lambda: order.append("call"), lambda: None),
                         ("kernel", None, None, self_timed)]
    bench_calls._time_in_rounds(row)
    assert order == ["call", "kernel", "kernel", "call", "call", "kernel"]
    assert row["rounds_us"]["kernel"] == [12.0, 10.0, 11.0]
    assert row["us_per_call"]["kernel"] == 11.0


def test_result_files_are_named_by_what_device_date_and_commit(tmp_path, monkeypatch):
    import subprocess

    from histkit.bench.common import result_stem, short_commit

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True,
                              text=True, check=True).stdout.strip()

    monkeypatch.chdir(tmp_path)
    assert result_stem("binning", "NVIDIA H200", "2026-12-03") == "binning-h200-2026-12-03"
    git("init", "-q")
    (tmp_path / "kernel.cu").write_text("// one\n")
    git("add", "kernel.cu")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    commit = git("rev-parse", "--short", "HEAD")
    (tmp_path / "notes.txt").write_text("untracked files change nothing measured\n")
    assert result_stem("binning", "NVIDIA H200", "2026-12-03") == (
        f"binning-h200-2026-12-03-{commit}")
    (tmp_path / "kernel.cu").write_text("// two\n")  # files newer than the commit
    assert short_commit() == f"{commit}-dirty" == short_commit(str(tmp_path))
