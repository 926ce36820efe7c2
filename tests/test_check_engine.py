"""histkit check's engine on tiny inputs and plain NumPy callables (seconds,
no GPU): which implementations it accepts, how a crash, a fault or a hang
counts, how a failing input shrinks, what its report and reproducer say.
tests/test_check_examples.py runs the full quick matrix on the examples."""

import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from histkit.conformance import check_judge, check_shrink, check_verdict
from histkit.conformance.cases import Case
from histkit.conformance.check import check, make_impl, reproducer
from histkit.conformance.check_judge import Judge
from histkit.conformance.check_shrink import SHRINK_MAX_N, shrink
from histkit.conformance.check_verdict import CheckReport
from histkit.conformance.foreign import CudaFileImpl, PythonImpl


def first_bad(keys, num_bins):
    bad = np.flatnonzero((keys < 0) | (keys >= num_bins))
    return int(bad[0]) if len(bad) else None


def exact(keys, num_bins):
    """Correct: raises on a bad key, naming the first one's index, as the rule asks."""
    bad = first_bad(keys, num_bins)
    if bad is not None:
        raise ValueError(f"key {keys[bad]} at index {bad} is out of range")
    return np.bincount(keys.astype(np.int64), minlength=num_bins)


def loses_a_count_from_five_keys(keys, num_bins):
    counts = exact(keys, num_bins)
    if len(keys) >= 5:
        counts[int(keys[0])] -= 1
    return counts


def loses_a_count_past_16_bins(keys, num_bins):
    counts = exact(keys, num_bins)
    if num_bins > 16 and len(keys):
        counts[int(keys[0])] -= 1
    return counts


def crashes(keys, num_bins):
    raise ZeroDivisionError("a bug in the callable")


def small(n, num_bins=8, distribution="uniform"):
    return Case(distribution, n, num_bins, seed=n)


def test_an_unknown_kind_a_cuda_kind_without_an_abi_and_a_non_callable_are_refused():
    with pytest.raises(ValueError, match="kind must be one of .*histogram"):
        make_impl(exact, "histogrm")
    with pytest.raises(ValueError, match="the kernel ABI has no radix-sort kernels"):
        make_impl("my_kernel.cu", "radix-sort")
    with pytest.raises(TypeError, match="a .cu path or a callable; 42 is of type int"):
        make_impl(42, "histogram")


def test_a_callable_is_judged_on_numpy_keys_and_a_cuda_file_by_its_entries(tmp_path):
    impl = make_impl(exact, "histogram")
    assert isinstance(impl, PythonImpl) and impl.inputs == "numpy" and impl.block == 256
    assert make_impl(exact, "histogram", inputs="cupy").inputs == "cupy"
    assert make_impl(impl, "scan") is impl  # an implementation is taken as it is
    kernel = tmp_path / "k.cu"
    kernel.write_text('extern "C" __global__ void histogram() {}\n')
    cuda = make_impl(f"{kernel}", "histogram", defines={"B": 2, "A": 1}, block=128, grid=3,
                     count_bits=64)
    assert isinstance(cuda, CudaFileImpl) and cuda.defines == (("A", 1), ("B", 2))
    assert (cuda.block, cuda.grid, cuda.count_bits) == (128, 3, 64)


def test_keys_need_num_bins_except_for_full_width_kinds():
    with pytest.raises(ValueError, match="keys= needs num_bins="):
        check(exact, "histogram", keys=np.array([1, 2]))
    report = check(np.argsort, "radix-sort", keys=np.array([3, -1, 2], np.int16))
    (case,) = [c for c, _, _ in report.cells]
    assert case.full_width and case.literal == (3, -1, 2) and case.dtype == "int16"


def test_a_report_counts_every_cell_and_moves_the_smallest_failure_first():
    cases = [small(40), small(3), small(20)]
    seen = []
    report = check(loses_a_count_from_five_keys, "histogram", cases=cases,
                   progress=lambda case, cell: seen.append((case.n, cell.status)))
    assert seen == [(40, "FAIL"), (3, "pass"), (20, "FAIL")]
    assert report.counts() == {"pass": 1, "FAIL": 2, "finding": 0, "skip": 0}
    assert not report.passed and [f.case.n for f in report.failures] == [20, 40]
    assert report.seconds > 0
    as_json = report.to_json()
    assert as_json["passed"] is False and as_json["counts"]["FAIL"] == 2
    assert [f["case"] for f in as_json["failures"]] == [f.case.name for f in report.failures]
    assert as_json["failures"][0]["input"]["keys"] == list(report.failures[0].shrunk.literal)
    assert as_json["failures"][0]["shrunk"] and not as_json["failures"][1]["shrunk"]
    assert as_json["failures"][1]["input"]["case"] == report.failures[1].case.name
    assert [c["status"] for c in as_json["cells"]] == ["FAIL", "pass", "FAIL"]
    assert CheckReport("x", "histogram").passed


def test_a_failing_input_shrinks_to_the_fewest_keys_that_still_fail():
    report = check(loses_a_count_from_five_keys, "histogram", cases=[small(1000, 64)])
    failure = report.failures[0]
    assert failure.shrunk.n == 5 and failure.shrunk.distribution == "literal"
    assert "smallest failing input" in str(failure) and "keys = [" in str(failure)
    assert "reproduce: " in str(failure) and failure.reproducer.startswith("histkit check")
    assert failure.python_reproducer.startswith("python3 -c")
    assert "from histkit.conformance import check;" in failure.python_reproducer  # no Case
    again = check(loses_a_count_from_five_keys, "histogram",
                  keys=np.array(failure.shrunk.literal, failure.shrunk.dtype),
                  num_bins=failure.shrunk.num_bins)
    assert not again.passed


def drops_the_keys_past_256(keys, num_bins):
    return exact(keys[:256], num_bins)


def test_an_input_that_cannot_get_shorter_shrinks_to_equal_values_written_as_one_run():
    # any 257 keys fail and 256 pass: too many to write out key by key, but
    # equal keys are one run, so the reproducer gives the input itself
    report = check(drops_the_keys_past_256, "histogram", cases=[small(300, 64)])
    shrunk = report.failures[0].shrunk
    assert 257 <= shrunk.n < 300 and set(shrunk.literal) == {0} and shrunk.num_bins == 1
    assert f"--keys '0*{shrunk.n}' --num-bins 1" in report.failures[0].reproducer


def test_a_failing_input_shrinks_its_bins_too_but_not_below_what_fails():
    report = check(loses_a_count_past_16_bins, "histogram", cases=[small(300, 4096)])
    shrunk = report.failures[0].shrunk
    assert shrunk.n == 1 and 16 < shrunk.num_bins < 4096


def test_a_scan_or_full_width_input_shrinks_only_to_fewer_values():
    def drops_the_last_of_four(keys):
        order = np.argsort(keys, kind="stable")
        if len(keys) >= 4:
            order = order[:-1]
        return keys[order], order

    report = check(drops_the_last_of_four, "radix-sort",
                   cases=[Case("uniform", 300, 0, seed=1, dtype="int32", full_width=True)])
    shrunk = report.failures[0].shrunk
    assert shrunk.full_width and shrunk.n == 4


def test_an_input_too_large_is_not_shrunk():
    judge = Judge(make_impl(loses_a_count_from_five_keys, "histogram"), 60)
    assert shrink(judge, small(SHRINK_MAX_N + 1)) is None


def test_a_callable_that_crashes_fails_its_cell_with_the_error():
    report = check(crashes, "histogram", cases=[small(10)], shrink_failures=False)
    (failure,) = report.failures
    assert failure.detail.startswith(
        "raised on valid input: ZeroDivisionError: a bug in the callable (at ")
    assert failure.detail.endswith(" in crashes)")  # the line of the callable that raised
    assert failure.shrunk is None and failure.reproducer


def test_a_reproducer_names_the_keys_or_the_case_and_every_launch_option(tmp_path,
                                                                        monkeypatch):
    from histkit.conformance.reproduce import INLINE_KEYS, python_call

    # this module is imported from tests/ (pytest's path): from the repository's
    # root a command line names it by its file
    monkeypatch.chdir(Path(__file__).parents[1])
    literal = Case.of_keys(np.array([3, 1], np.int32), 4)
    python = make_impl(exact, "histogram")
    line = python_call(python, "histogram", literal)
    assert "keys=np.array([3, 1], dtype='int32'), num_bins=4" in line
    assert "'tests/test_check_engine.py:exact', 'histogram'" in line
    assert reproducer(python, "histogram", literal) == (
        "histkit check tests/test_check_engine.py:exact --kind histogram --keys 3,1 "
        "--num-bins 4 --dtype int32")
    sort = python_call(make_impl(np.argsort, "radix-sort"), "radix-sort",
                       Case.of_keys(np.array([3, 1], np.int64), 0, full_width=True))
    assert "num_bins" not in sort and "dtype='int64'" in sort
    # a small plain matrix case is written out as its keys, a larger one named
    keys = ",".join(map(str, small(10).keys()))
    assert f"--keys {keys} --num-bins 8 " in reproducer(python, "histogram", small(10))
    assert f"--case {small(100).name}" in reproducer(python, "histogram", small(100))
    assert f"case={small(100).name!r}" in python_call(python, "histogram", small(100))
    too_many = Case.of_keys(np.arange(INLINE_KEYS + 1, dtype=np.int32) % 4, 4)
    assert f"case={small(10).name!r}" in python_call(python, "histogram", too_many, small(10))
    kernel = tmp_path / "k.cu"
    kernel.write_text("")
    cuda = make_impl(f"{kernel}:my_hist", "histogram", defines={"X": 1}, block=64,
                     count_bits=64)
    line = reproducer(cuda, "histogram", Case.of_keys(np.array([2], np.int8), 3, grid=5))
    assert line.startswith(f"histkit check {cuda.path}:my_hist --kind histogram --keys 2")
    assert ("--num-bins 3 --dtype int8 --define X=1 --block 64 --grid 5 --counts 64"
            in line)
    no_grid = reproducer(cuda, "histogram", Case.of_keys(np.array([2], np.int8), 3))
    assert "--grid" not in no_grid
    negative = reproducer(cuda, "histogram", Case.of_keys(np.array([-1, 2], np.int8), 3))
    assert "--keys=-1,2 " in negative


def test_past_their_limits_hangs_and_faults_skip_the_cases_like_them_and_run_the_rest():
    # an isolated judge stand-in: hangs or faults on every case past 100 keys
    class Worker:
        def __init__(self, outcome):
            self.outcome, self.hung, self.faulted, self.ran = outcome, [], [], []

        def judge(self, impl, case):
            from histkit.conformance.checks import Cell

            self.ran.append(case.name)
            if case.n <= 100:
                return Cell("pass"), ""
            getattr(self, self.outcome).append(case.name)
            return Cell("FAIL", self.outcome), ""

        def close(self):
            pass

    # a callable: past the limit, cases as large in the same dtype and number of
    # bins are skipped; a smaller one (20 keys), one of another dtype and one of
    # another number of bins still run, and may show another bug
    cases = [small(n) for n in (10, 200, 300, 400, 500, 600, 700, 800, 20)]
    cases.insert(8, dataclasses.replace(cases[1], dtype="int64"))
    cases.append(dataclasses.replace(cases[1], num_bins=cases[1].num_bins * 2))
    for outcome, limit, says in (("hung", check_judge.MAX_HANGS, "hung on"),
                                 ("faulted", check_judge.MAX_FAULTS, "faulted on")):
        worker = Worker(outcome)
        report = check(exact, "histogram", cases=cases, shrink_failures=False, worker=worker)
        statuses = [cell.status for _, cell, _ in report.cells]
        assert statuses == (["pass"] + ["FAIL"] * limit + ["skip"] * (7 - limit)
                            + ["FAIL", "pass", "FAIL"]), outcome
        assert all(says in cell.detail
                   and "at least as large as a case of its dtype and number of bins that "
                       "the kernel" in cell.detail
                   for _, cell, _ in report.cells[1 + limit:8])
        assert len(getattr(worker, outcome)) == limit + 2
        if outcome == "hung":  # 2 * MAX_HANGS hangs stop a callable altogether
            continue
        # once stopped cases span two numbers of bins, any number is alike
        later = dataclasses.replace(cases[7], num_bins=cases[1].num_bins * 4)
        report = check(exact, "histogram", cases=cases + [later], shrink_failures=False,
                       worker=Worker(outcome))
        assert report.cells[-1][1].status == "skip", report.cells[-1]
        assert "a case of its dtype that the kernel" in report.cells[-1][1].detail


# The shrinker, on inputs whose outcome is worked out by hand from its
# candidates (check_shrink._candidates: halves, then a cut of n // 8 from either end;
# with every key valid, the bins cut to just past the largest key, the keys'
# gaps closed up, the values above the second capped to it; with no key past
# half the bins, half the bins). Each test counts the callable's calls too.

class Counted:
    """A histogram callable that loses one count exactly when `fails(keys,
    num_bins)`, and raises on a bad key unless `clips` (the bug of clipping
    bad keys into the edge bins)."""

    def __init__(self, fails, clips=False):
        self.fails, self.clips, self.calls = fails, clips, 0

    def __call__(self, keys, num_bins):
        self.calls += 1
        if self.clips:
            keys = np.clip(keys, 0, num_bins - 1)
        counts = exact(keys, num_bins)
        if self.fails(keys, num_bins):
            counts[int(keys[0])] -= 1
        return counts


def shrunk(function, keys, num_bins, dtype=np.int32):
    found, _ = shrink(Judge(make_impl(function, "histogram"), 60),
                      Case.of_keys(np.array(keys, dtype), num_bins))
    return list(found.literal), found.num_bins


def test_the_bins_shrink_to_just_past_the_largest_key_that_fails():
    # [5, 9] K=64: half [5] fails; bins cut to 6; gaps closed ([0], K=1) and
    # the key lowered ([0], K=6) pass
    loses_bin_5 = Counted(lambda keys, k: 5 in keys)
    assert shrunk(loses_bin_5, [5, 9], 64) == ([5], 6) and loses_bin_5.calls == 4


def test_gaps_between_keys_close_up_but_an_input_is_never_tried_twice():
    # [0, 5] K=64: halves, cuts and equal keys (5 calls) pass; bins cut to 6
    # fails; five more pass, then the ranks [0, 1] K=2 fail; five more pass
    # and nothing smaller is left (capping [0, 1] at 1 is the input itself,
    # not tried)
    two_values = Counted(lambda keys, k: len(np.unique(keys)) >= 2)
    assert shrunk(two_values, [0, 5], 64) == ([0, 1], 2) and two_values.calls == 17


def test_a_bad_key_stays_bad_while_the_bins_halve():
    # [0, 8] K=8: the half [8] (a bad key, clipped) fails; with no valid key
    # the bins halve to 4, 2, 1, each still failing; the bad key stays 8
    clipped = Counted(lambda keys, k: False, clips=True)
    assert shrunk(clipped, [0, 8], 8) == ([8], 1) and clipped.calls == 5


def test_the_bins_halve_only_while_every_valid_key_stays_valid():
    # a bug that skips a bad key silently beside two valid ones (and raises as
    # it should otherwise): [1, 3, 9] K=8: halves, cuts and equal keys pass (5
    # calls); the bins halve to 4 (3 < 4) and fail; five more pass, and halving
    # again would make the 3 bad; deleting any one key passes (3 calls):
    # ([1, 3, 9], 4) in 14 calls
    calls = []

    def skips_a_bad_key_beside_two_valid(keys, num_bins):
        calls.append(len(keys))
        valid = keys[(keys >= 0) & (keys < num_bins)]
        if len(valid) < 2:
            return exact(keys, num_bins)
        return np.bincount(valid.astype(np.int64), minlength=num_bins)

    assert shrunk(skips_a_bad_key_beside_two_valid, [1, 3, 9], 8) == ([1, 3, 9], 4)
    assert len(calls) == 14


def test_the_shrinker_stops_at_its_attempts_and_size_limits(monkeypatch):
    monkeypatch.setattr(check_shrink, "SHRINK_ATTEMPTS", 2)
    two_values = Counted(lambda keys, k: len(np.unique(keys)) >= 2)
    assert shrunk(two_values, [0, 5], 64) == ([0, 5], 64) and two_values.calls == 2
    monkeypatch.setattr(check_shrink, "SHRINK_ATTEMPTS", 3)
    always = Counted(lambda keys, k: True)
    shrunk(always, list(range(40)), 64)
    assert always.calls == 3
    monkeypatch.setattr(check_shrink, "SHRINK_MAX_N", 40)
    judge = Judge(make_impl(always, "histogram"), 60)
    assert shrink(judge, small(40)) is not None and shrink(judge, small(41)) is None


def test_a_scans_counts_shrink_to_fewer_and_smaller_counts():
    def wrong_from_four(counts):
        out = np.concatenate(([0], np.cumsum(counts, dtype=np.uint64)[:-1])).astype(np.uint64)
        if len(counts) >= 4:
            out[-1] += np.uint64(1)
        return out

    case = Case.counts(300, seed=1)
    assert max(case.keys()) > 1
    report = check(wrong_from_four, "scan", cases=[case])
    first = report.failures[0].shrunk
    found = list(first.literal)
    assert first.scan_counts and len(found) == 4
    assert max(found) <= 1  # [1, 1, 1, 1], not four counts in the thousands


def test_a_failure_reads_fail_then_its_smallest_input_keys_shown_up_to_64():
    base = check_verdict.Failure(small(10), "1 x 2", "bin 3 is 1, want 2")
    shown = check_verdict.SHOWN_KEYS
    for n, listed in ((shown, True), (shown + 1, False)):
        base.shrunk = Case.of_keys(np.zeros(n, np.int32), 4)
        text = str(base)
        assert text.startswith(f"FAIL on {small(10).name} [1 x 2]: bin 3 is 1, want 2")
        assert "smallest failing input: " in text and ("keys = [" in text) is listed


def test_a_literal_of_inline_keys_is_inlined_one_more_is_named_as_a_case():
    from histkit.conformance.reproduce import INLINE_KEYS, python_call

    python = make_impl(exact, "histogram")
    at = python_call(python, "histogram",
                     Case.of_keys(np.arange(INLINE_KEYS, dtype=np.int32) % 4, 4))
    past = Case.of_keys(np.arange(INLINE_KEYS + 1, dtype=np.int32) % 4, 4)
    assert "keys=np.array([0, 1, 2, 3, 0," in at
    # shrunk from a matrix case: named as that case; given as keys: written out
    assert f"case={small(10).name!r}" in python_call(python, "histogram", past, small(10))
    assert "keys=np.array([0, 1, 2, 3, 0," in python_call(python, "histogram", past)


def test_many_keys_of_few_runs_are_written_out_as_runs_by_both_reproducers(tmp_path,
                                                                          monkeypatch):
    from histkit.conformance.reproduce import INLINE_KEYS, MAX_RUNS, python_call

    monkeypatch.chdir(Path(__file__).parents[1])
    python = make_impl(exact, "histogram")
    keys = np.array([5] * 200 + [-1] + [7] * 3, np.int32)
    runs = Case.of_keys(keys, 8)
    assert "keys=np.array([5] * 200 + [-1] + [7] * 3, dtype='int32')" in python_call(
        python, "histogram", runs, small(10))
    assert reproducer(python, "histogram", runs) == (
        "histkit check tests/test_check_engine.py:exact --kind histogram --keys "
        "'5*200,-1,7*3' --num-bins 8 --dtype int32")
    # one run more than MAX_RUNS: named as the case it was shrunk from
    many = Case.of_keys(np.arange(INLINE_KEYS + 1, dtype=np.int32) % (MAX_RUNS + 1), 32)
    assert len(set(many.literal)) == MAX_RUNS + 1
    assert f"case={small(10).name!r}" in python_call(python, "histogram", many, small(10))


def test_the_command_line_reads_runs_of_keys_as_the_reproducer_writes_them(capsys):
    from histkit.cli import main

    code = main(["check", "examples.python_kernels:histogram", "--kind", "histogram",
                 "--keys", "2*100,0,1*3", "--num-bins", "4"])
    out = capsys.readouterr().out
    assert code == 0 and "PASS" in out
    for bad in ("2*0", "2*x", "x*2"):
        with pytest.raises(SystemExit) as stop:
            main(["check", "examples.python_kernels:histogram", "--kind", "histogram",
                  "--keys", bad, "--num-bins", "4"])
        assert stop.value.code == 2
    assert "--keys run '2*0': a count of at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["examples.python_kernels", ":histogram", "histogram:"])
def test_a_python_kernel_without_module_and_function_is_refused_saying_how(spec):
    from histkit.conformance.foreign import load_callable

    with pytest.raises(ValueError, match="given as package.module:function"):
        load_callable(spec)


def test_each_input_kind_hands_the_keys_to_its_own_framework(monkeypatch):
    # (stand-ins for CuPy and PyTorch: this machine may have neither)
    import sys
    import types

    from histkit.conformance.foreign import to_input_kind

    made = []
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        asarray=lambda a: made.append(("cupy", a)) or "cupy array"))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        as_tensor=lambda a, device: made.append(("torch", device)) or "tensor"))
    keys = np.arange(3)
    assert to_input_kind(keys, "cupy") == "cupy array" and to_input_kind(keys, "torch") == "tensor"
    assert [m[0] for m in made] == ["cupy", "torch"] and made[1][1] == "cuda"
    copied = to_input_kind(keys, "numpy")
    copied[0] = 7  # the callable may scribble on its copy; the case's keys stay
    assert keys[0] == 0
    with pytest.raises(ValueError, match="inputs must be one of"):
        to_input_kind(keys, "jax")


def test_a_scans_small_counts_are_neither_ranked_nor_capped_as_keys_would_be():
    # counts all below their own number could pass for keys: ranking them or
    # capping them at their second value, as keys are, would make new counts;
    # a scan's counts only get fewer, or smaller each (halved, or at most 1)
    def wrong_from_eight(counts):
        out = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.uint64)
        if len(counts) >= 8:
            out[-1] += np.uint64(1)
        return out

    counts = np.array([0, 5, 5, 7, 1, 1, 1, 1], np.uint64)
    case = Case.of_keys(counts, 0, scan_counts=True)
    found, _ = shrink(Judge(make_impl(wrong_from_eight, "scan"), 60), case)
    assert found.scan_counts and list(found.literal) == [min(int(c), 1) for c in counts]


def test_the_shrinker_gives_up_after_its_own_faults(monkeypatch):
    class FaultsEverywhere:
        def __init__(self):
            self.hung, self.faulted, self.ran = [], [], []

        def judge(self, impl, case):
            from histkit.conformance.checks import Cell

            self.ran.append(case.name)
            self.faulted.append(case.name)
            return Cell("FAIL", "CUDA_ERROR_ILLEGAL_ADDRESS"), ""

    monkeypatch.setattr(check_shrink, "SHRINK_MAX_FAULTS", 2)
    judge = Judge(make_impl(exact, "histogram"), 60)
    judge._isolated = FaultsEverywhere()
    found, _ = shrink(judge, small(100))
    assert len(judge.faulted) == 2 and found.n == 50  # the first fault was a FAIL: taken


def test_a_radix_sort_takes_every_key_of_a_bad_key_case_as_a_key():
    # full-width kinds have no K: keys past it are keys, not bad ones
    def stable_argsort(keys):
        order = np.argsort(keys, kind="stable")
        return keys[order], order

    case = Case("uniform", 100, 10, seed=1, bad="several")
    assert first_bad(case.keys(), 10) is not None
    report = check(stable_argsort, "radix-sort", cases=[case])
    assert report.passed and [cell.status for _, cell, _ in report.cells] == ["pass"]


def test_a_privatized_callable_is_told_its_geometry_and_the_report_names_it():
    seen = []

    def privatized(keys, num_bins, block_size, num_blocks):
        seen.append((block_size, num_blocks))
        counts = exact(keys, num_bins)
        return counts, num_blocks * int(np.count_nonzero(counts))  # an upper bound

    impl = make_impl(privatized, "privatized", block=256)
    assert [impl.geometry(small(n))[1] for n in (0, 1, 256, 257, 1000)] == [1, 1, 1, 2, 4]
    assert impl.geometry(Case("uniform", 1000, 8, seed=1, grid=3)) == (256, 3)
    forced = make_impl(privatized, "privatized", grid=5)
    assert forced.geometry(small(1000))[1] == 5
    assert forced.geometry(Case("uniform", 1000, 8, seed=1, grid=3))[1] == 3
    report = check(privatized, "privatized", cases=[small(1000)], shrink_failures=False,
                   in_process=True)
    # its own launch, then (up to 4096 keys) the second one: half the block, 2 blocks
    assert seen == [(256, 4), (128, 2)] and report.cells[0][2] == "block_size=256, num_blocks=4"
    histogram = check(exact, "histogram", cases=[small(1000)])
    assert histogram.cells[0][2] == ""


def test_a_cuda_file_becomes_a_registry_row_of_its_kind(tmp_path):
    import types

    from histkit.conformance.foreign import DEFAULT_ENTRIES

    def row(kind, **options):
        return CudaFileImpl(str(tmp_path / "k.cu"), kind, DEFAULT_ENTRIES[kind],
                            **options).as_kernel()

    assert row("histogram", grid=4).takes_grid and not row("histogram").takes_grid
    assert not row("scan", grid=4).takes_grid
    assert row("histogram").count_dtype == "uint32"
    assert row("histogram", count_bits=64).count_dtype == "uint64"
    assert row("stable-sort").count_dtype == "uint64" and row("sort").count_dtype == "uint64"
    # the privatized row may refuse bins past a block's shared memory (4 bytes a bin)
    refuses = row("privatized").may_refuse
    tight = types.SimpleNamespace(max_shared_per_block=4000)
    assert refuses(tight, 10, 1000, np.int32, {}) is False
    assert refuses(tight, 10, 1001, np.int32, {}) is True
    wide = row("privatized", count_bits=64).may_refuse
    assert wide(tight, 10, 500, np.int32, {}) is False and wide(tight, 10, 501, np.int32, {})
    assert row("histogram").may_refuse is None and not row("histogram").skips_bad_keys


def test_a_scan_file_reproducer_carries_the_grid_it_was_launched_on(tmp_path):
    from histkit.conformance.foreign import DEFAULT_ENTRIES
    from histkit.conformance.reproduce import command_line

    impl = CudaFileImpl(str(tmp_path / "scan.cu"), "scan", DEFAULT_ENTRIES["scan"], grid=1)
    case = Case.of_keys(np.array([3, 1], np.uint64), 0, scan_counts=True)
    assert command_line(impl, "scan", case).endswith("--grid 1")


def test_a_callable_is_named_for_its_reproducer_when_it_can_be_imported(monkeypatch):
    def local(keys, num_bins):
        return exact(keys, num_bins)

    monkeypatch.chdir(Path(__file__).parent)  # where its module imports from by name
    assert make_impl(exact, "histogram").describe() == "test_check_engine:exact"
    monkeypatch.chdir(Path(__file__).parents[1])  # elsewhere: named by its file
    assert make_impl(exact, "histogram").describe() == "tests/test_check_engine.py:exact"
    assert make_impl(local, "histogram").describe() == local.__qualname__
    assert ":" not in make_impl(local, "histogram").describe()
    assert make_impl("examples.python_kernels:histogram", "histogram").describe() == (
        "examples.python_kernels:histogram")


def test_results_come_back_as_numpy_from_any_framework():
    from histkit.conformance.foreign import to_numpy

    class ArrayLikeWithGet:  # has .get() but is no CuPy array (a pandas Series has one)
        def __init__(self, values):
            self.values = values

        def get(self, key, default=None):
            raise AssertionError("not a CuPy array: .get() must not be called")

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.values, dtype)

    assert list(to_numpy(ArrayLikeWithGet([1, 2]))) == [1, 2]
    assert list(to_numpy([3, 4])) == [3, 4]


def test_reproducers_name_this_python_and_its_histkit_where_the_shell_would_find_others(
        monkeypatch):
    import shlex
    import shutil

    from histkit.conformance import reproduce

    def words(which):
        monkeypatch.setattr(shutil, "which", which)
        reproduce.python_word.cache_clear()
        reproduce.histkit_word.cache_clear()
        try:
            return reproduce.python_word(), reproduce.histkit_word()
        finally:
            reproduce.python_word.cache_clear()
            reproduce.histkit_word.cache_clear()

    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "histkit")
    found_here = {"python3": sys.executable, "histkit": beside}
    assert words(found_here.get) == ("python3", "histkit")
    # an environment not activated: the shell's python3 and histkit are another install's
    elsewhere = {"python3": "/elsewhere/bin/python3", "histkit": "/elsewhere/bin/histkit"}
    this = shlex.quote(sys.executable)
    assert words(elsewhere.get) == (this, f"{this} -m histkit")
    assert words(lambda name: None) == (this, f"{this} -m histkit")
