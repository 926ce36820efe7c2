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
