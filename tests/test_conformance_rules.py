"""The conformance rules can fail: each check is fed a kernel result that
breaks it and one that keeps it. No GPU needed."""

import numpy as np
import pytest

from histkit import oracles
from histkit.conformance import checks
from histkit.conformance.cases import EDGE_SIZES, Case, all_cases, large_cases, plant_bad_keys
from histkit.conformance.pytest_plugin import case_id
from histkit.gpu import registry


def test_equal_names_the_first_differing_bin():
    cell = checks.equal(np.array([1, 2, 3, 4]), np.array([1, 2, 9, 0]))
    assert cell.status == "FAIL"
    assert "2 differing; first at 2: expected 9, got 3" in cell.detail
    assert checks.equal(np.arange(5), np.arange(5)).status == "pass"


def test_equal_fails_on_a_shape_mismatch():
    assert checks.equal(np.arange(3), np.arange(4)).status == "FAIL"


def test_racy_histogram_above_exact_is_a_failure_not_a_finding():
    cell = checks.at_most_exact(np.array([5, 1]), np.array([4, 3]))
    assert cell.status == "FAIL" and "bin 0 counted 5 > exact 4" in cell.detail


def test_racy_histogram_below_exact_is_a_finding_with_the_loss():
    cell = checks.at_most_exact(np.array([1, 1]), np.array([4, 3]))
    assert cell.status == "finding"
    assert cell.figures == {"lost": 5, "total": 7}


def test_privatized_fails_when_its_atomic_count_differs_from_the_model():
    exact = np.array([2, 2])
    assert checks.privatized(exact, exact, 12, 12).status == "pass"
    cell = checks.privatized(exact, exact, 11, 12)
    assert cell.status == "FAIL"
    assert "global atomics differ: expected 12 (the model's), got 11" in cell.detail


def test_stability_violations_count_equal_neighbours_out_of_order():
    keys = np.array([0, 0, 0, 1, 1])
    assert checks.stability_violations(keys, np.array([0, 2, 1, 3, 4])) == 1
    assert checks.stability_violations(keys, np.array([0, 1, 2, 4, 3])) == 1
    assert checks.stability_violations(keys, np.array([0, 1, 2, 3, 4])) == 0


def test_atomic_cursor_sort_reports_instability_as_a_finding():
    keys = np.array([1, 0, 1, 0])
    want = np.sort(keys)
    cell = checks.atomic_cursor_sort(want, np.array([3, 1, 0, 2]), keys, want)
    assert cell.status == "finding" and cell.figures == {"stability_violations": 1}
    assert checks.atomic_cursor_sort(want, np.array([1, 3, 0, 2]), keys, want).status == "pass"


def test_atomic_cursor_sort_fails_on_a_repeated_index():
    keys = np.array([1, 0, 1, 0])
    want = np.sort(keys)
    cell = checks.atomic_cursor_sort(want, np.array([1, 1, 0, 2]), keys, want)
    assert cell.status == "FAIL" and "not a permutation" in cell.detail


def test_atomic_cursor_sort_fails_when_a_key_does_not_match_its_index():
    keys = np.array([1, 0, 1, 0])
    want = np.sort(keys)
    cell = checks.atomic_cursor_sort(want, np.array([1, 0, 3, 2]), keys, want)
    assert cell.status == "FAIL"


def test_cases_have_unique_names_and_cover_the_edge_sizes():
    cases = all_cases(quick=False)
    assert len({c.name for c in cases}) == len(cases)
    sizes = {c.n for c in cases}
    assert set(EDGE_SIZES) <= sizes and (1 << 28) in sizes and max(sizes) > 2**31


def test_a_full_run_is_the_quick_matrix_plus_the_large_only_part():
    full = [c.name for c in all_cases(quick=False)]
    split = [c.name for c in all_cases(quick=True) + large_cases()]
    assert full == split and all(c.n >= 1 << 28 for c in large_cases())


def test_case_keys_are_reproducible_and_in_range():
    for case in all_cases(quick=True):
        if case.n > 5000:
            continue
        keys = case.keys()
        assert keys.dtype == np.dtype(case.dtype) and len(keys) == case.n
        assert np.array_equal(keys, case.keys())
        if case.n and not case.bad and not case.full_width and not case.scan_counts:
            assert keys.min() >= 0 and keys.max() < case.num_bins


def test_scan_count_cases_are_empty_or_sum_past_2_32_and_only_the_scans_take_them():
    # a key case's counts sum to at most 2^28 (its N): a scan keeping a 32-bit
    # running sum or tile sum passes every one of them
    from histkit.conformance.cases import HUGE, cases_for, huge_cases, judges

    counted = [c for c in all_cases(quick=True) if c.scan_counts]
    assert counted == [c for c in cases_for("scan") if c.scan_counts]
    # the first holds no counts: no key case (K >= 1) gives a scan an empty input
    assert counted[0].n == 0 and len(counted[0].keys()) == 0
    counted = counted[1:]
    assert len(counted) >= 2
    for case in counted:
        counts = case.keys()
        assert counts.dtype == np.uint64 and len(counts) == case.n == case.num_bins
        assert int(counts.sum(dtype=np.uint64)) > 2**32 and np.array_equal(counts, case.keys())
        assert [kind for kind in registry.KINDS if judges(case, kind)] == ["scan"]
    assert max(c.n for c in counted) > 2048 * 2048  # two levels of tile sums
    assert any(c.scan_counts and c.n == HUGE for c in huge_cases())


def test_the_quick_matrix_goes_past_2_31_keys_with_the_histograms_and_fenced_the_stable_sorts():
    # a key index kept in 32 bits wraps only past 2^31 keys: the quick matrix
    # has such cases for the kinds the host answers without a sort: a counting
    # pass for the histograms; for the stable sorts, on the fenced case (no bad
    # key), the closed form of round-robin keys' sort
    from histkit.conformance.cases import (
        COUNTED_PAST_2_31,
        HUGE,
        SORTED_PAST_2_31,
        cases_for,
        huge_cases,
        judges,
    )

    quick = all_cases(quick=True)
    *bad, clean = [c for c in quick if c.n >= HUGE]
    assert not clean.bad and [c.bad for c in bad] == ["last-vector", "past-2^31"]
    # the one with no bad key is fenced, and last: a fault spoils the context
    assert clean.fenced and not any(c.fenced for c in bad) and quick[-1] == clean
    assert not any(k in registry.SORTING_KINDS for k in COUNTED_PAST_2_31)
    assert SORTED_PAST_2_31 == ("stable-sort", "sort")
    full = huge_cases()
    for case in (clean, *bad):
        kinds = set(COUNTED_PAST_2_31) | (set(SORTED_PAST_2_31) if case.fenced else set())
        assert case.dtype == "uint8" and case.num_bins % 2 and case.n % 16 == 1
        # a sample run of 32 keys and 4 x 2^17 threads' vectors fit past 2^31
        assert case.n - 32 >= 2**31 and case.n - 2**31 > 4 * 2**17 * 16
        assert {kind for kind in registry.KINDS if judges(case, kind)} == kinds
        assert "/kinds=histogram+privatized+racy-histogram" in case.name
        assert case.sorted_in_closed_form == case.fenced  # round-robin, no bad key
        # a user's .cu kernel of those kinds gets it; a Python callable, other kinds do not
        for kind in registry.KINDS:
            assert (case in cases_for(kind, fenced=True, skewed=True)) == (kind in kinds)
            assert case not in cases_for(kind)
        # the mutation harness's full judge meets it before the keys every kind takes
        assert full.index(case) < min(i for i, c in enumerate(full)
                                      if c.kinds is None and not c.scan_counts)
        assert full.count(case) == 1 and all_cases(quick=False).count(case) == 1


def test_a_past_2_31_bad_key_is_the_sixth_key_past_2_31_and_needs_that_many_keys():
    for bits in (31, 32):
        keys = np.zeros(2**bits + 6, np.uint8)  # (untouched zero pages: no memory)
        plant_bad_keys(keys, f"past-2^{bits}", 10, seed=0)
        assert keys[2**bits + 5] >= 10 and keys[2**bits + 4] == 0 and keys[2**bits] == 0
        assert np.count_nonzero(keys) == 1
        del keys
    with pytest.raises(ValueError, match="more than 2\\^31 \\+ 5 keys"):
        plant_bad_keys(np.zeros(40, np.uint8), "past-2^31", 10, seed=0)
    with pytest.raises(ValueError, match="more than 2\\^32 \\+ 5 keys"):
        plant_bad_keys(np.zeros(2**31 + 6, np.uint8), "past-2^32", 10, seed=0)


def test_the_full_matrix_goes_past_2_32_keys_with_a_bad_key_and_fenced_for_the_stable_sorts():
    # an index narrowed to int, then added to an unsigned int, is right
    # modulo 2^32: only a case past 2^32 keys shows it. The histograms take
    # one with a bad key past 2^32; they and the stable sorts, a fenced one
    from histkit.conformance.cases import (
        COUNTED_PAST_2_31,
        HUGE,
        SORTED_PAST_2_31,
        huge_cases,
        judges,
        large_cases,
    )

    bad, fenced = [c for c in large_cases() if c.n > 2**32]
    assert bad.bad == "past-2^32" and bad.n - (2**32 + 5) > 4 * 2**17 * 16
    assert fenced.fenced and not fenced.bad and fenced.n == bad.n
    assert {kind for kind in registry.KINDS if judges(bad, kind)} == set(COUNTED_PAST_2_31)
    assert {kind for kind in registry.KINDS if judges(fenced, kind)} == set(
        COUNTED_PAST_2_31 + SORTED_PAST_2_31)
    full = huge_cases()
    for case in (bad, fenced):
        assert case.dtype == "uint8" and case.num_bins % 2 and case.n % 16 == 1
        assert case not in all_cases(quick=True) and all_cases(quick=False).count(case) == 1
        # the mutation harness's full judge meets it before the cases every kind takes
        assert full.index(case) < min(i for i, c in enumerate(full)
                                      if c.kinds is None and not c.scan_counts)
    assert all(c.n >= HUGE for c in full)


def test_a_last_vector_bad_key_sits_in_the_last_whole_vector_not_the_tail():
    # 2^31 + 2^24 + 17 one-byte keys: 16-byte vectors end one key before the
    # end, so "last" is the scalar tail's key and "last-vector" is a vector's
    from histkit.conformance.cases import COUNTED_HUGE

    keys = np.zeros(33, np.uint8)  # 33 = 1 (mod 16), like the cases past 2^31
    plant_bad_keys(keys, "last-vector", 10, seed=0)
    (index,) = np.flatnonzero(keys)
    assert 16 <= index < 32 and keys[index] >= 10
    n = COUNTED_HUGE
    assert n % 16 == 1 and n - 12 > 2**31 and (n - 12) // 16 == n // 16 - 1


def test_a_bad_key_cases_valid_part_is_its_keys_without_the_bad_ones_made_once():
    keys = np.array([3, 9, 1, 12, 0, 3], np.int64)
    expected = checks.Expected(keys, 4)
    valid = expected.valid_part()
    assert valid is expected.valid_part() and np.array_equal(valid.keys, [3, 1, 0, 3])
    assert np.array_equal(valid.exact, np.bincount([3, 1, 0, 3], minlength=4))
    assert np.array_equal(expected.bad_positions(), [1, 3])
    assert expected.bad_positions() is expected.bad_positions()


def test_a_case_judged_by_some_kinds_names_them_to_the_others():
    from histkit.conformance.cases import Case, judges, not_judged_because

    case = Case("uniform", 10, 4, kinds=("histogram",))
    assert judges(case, "histogram") and not judges(case, "stable-sort")
    assert "only histogram" in not_judged_because(case)


def test_a_scan_count_case_is_judged_against_the_scan_of_its_counts():
    case = next(c for c in all_cases(quick=True) if c.scan_counts and c.n)
    counts = case.keys()
    expected = checks.Expected(counts, case.num_bins, scan_counts=True)
    want = np.concatenate([[0], np.cumsum(counts.astype(object))[:-1]]).astype(np.int64)
    assert np.array_equal(expected.offsets(), want)
    wrapped = (want.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.int64)
    assert checks.judge("scan", expected, checks.Outcome(offsets=want)).status == "pass"
    assert checks.judge("scan", expected, checks.Outcome(offsets=wrapped)).status == "FAIL"


def test_full_width_cases_span_negative_and_high_keys_of_every_dtype():
    wide = [c for c in all_cases(quick=True) if c.full_width]
    assert {c.dtype for c in wide} == {"int8", "uint8", "int16", "uint16", "int32", "uint32",
                                       "int64", "uint64"}
    for case in wide:
        if case.distribution != "uniform" or case.n < 50_000:
            continue
        keys = case.keys()
        info = np.iinfo(keys.dtype)
        # keys in the lowest and the highest sixteenth of the range: the top byte decides
        span = float(info.max) - float(info.min)
        assert keys.astype(float).min() < float(info.min) + span / 16
        assert keys.astype(float).max() > float(info.max) - span / 16
        assert (keys.min() < 0) == (info.min < 0)
    for case in (c for c in wide if c.distribution == "extremes"):
        keys = case.keys()
        info = np.iinfo(keys.dtype)
        assert keys.min() == info.min and keys.max() == info.max
        assert (info.min < 0) == bool(np.any(keys == -1))


@pytest.mark.parametrize("case", [c for c in all_cases(quick=True) if c.bad and c.n < 2**31],
                         ids=case_id)  # (past 2^31: the last-vector test's pattern)
def test_bad_key_cases_hold_out_of_range_keys_the_oracle_reports(case):
    keys = case.keys()
    bad = np.flatnonzero((keys.astype(np.float64) < 0) | (keys.astype(np.float64) >= case.num_bins))
    assert bad.size >= {"several": 3, "spread": 2, "negative": 2}.get(case.bad, 1)
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.histogram(keys, case.num_bins)
    assert caught.value.index == bad[0]
    if case.bad == "negative":
        assert (keys[bad] < 0).all()


def test_the_lowest_bad_key_of_several_is_not_the_first_planted():
    keys = np.zeros(300, np.int32)
    plant_bad_keys(keys, "several", 10, seed=0)
    assert list(np.flatnonzero(keys >= 10)) == [107, 201, 299]


def test_guard_keys_are_out_of_range_whenever_the_dtype_allows():
    assert Case("uniform", 10, 100, dtype="int8").guard_value() == 100
    assert Case("uniform", 10, 256, dtype="uint8").guard_value() == 255


def test_quick_cases_reach_every_case_dimension():
    cases = all_cases(quick=True)
    assert {c.grid for c in cases} >= {1, 2, 3}
    assert {c.offset for c in cases if c.dtype == "int8"} >= {1, 5, 15}
    assert {c.bad for c in cases} >= {"first", "last", "several", "spread", "negative"}
    signed_negative = {c.dtype for c in cases if c.bad == "negative"}
    assert signed_negative == {"int8", "int16", "int32", "int64"}
    assert any(c.dtype == "uint8" and c.num_bins == 256 and not c.bad for c in cases)


def test_the_racy_rule_fails_a_bin_with_keys_counted_zero():
    exact = np.array([3, 1, 0, 2])
    cell = checks.at_most_exact(np.array([1, 0, 0, 2]), exact)
    assert cell.status == "FAIL" and "bin 1 has 1 key but counted 0" in cell.detail
    assert checks.at_most_exact(np.array([1, 1, 0, 1]), exact).status == "finding"


def test_the_racy_rule_fails_a_negative_bin():
    # a u64 counter decremented from zero reads back as int64 -1: below exact,
    # and not zero, so only its own rule sees it (the generated naive
    # 'racy[b] - 1' survived the H200 run without it)
    exact = np.array([3, 1, 0, 2])
    cell = checks.at_most_exact(np.array([2, -1, 0, 2]), exact)
    assert cell.status == "FAIL" and "bin 1 counted -1 < 0" in cell.detail


def test_a_run_of_bad_keys_starts_at_an_odd_index_and_each_bad_value_stands_alone():
    keys = np.zeros(100, np.int64)
    plant_bad_keys(keys, "run", 10, seed=0)
    bad = np.flatnonzero(keys >= 10)
    assert len(bad) == 7 and bad[0] % 2 == 1 and np.all(np.diff(bad) == 1)
    keys = np.zeros(100_003, np.int8)
    plant_bad_keys(keys, "vector-run", 100, seed=0)
    bad = np.flatnonzero(keys >= 100)
    assert len(bad) == 15 and bad[0] % 16 == 1 and (bad[-1] + 1) % 16 == 0
    from histkit.conformance.cases import bad_values

    for j, value in enumerate(bad_values(np.dtype(np.int64), 10)):
        keys = np.zeros(100, np.int64)
        plant_bad_keys(keys, f"value{j}", 10, seed=0)
        assert keys[50] == value and np.count_nonzero(keys) == 1


# --- kernels that promise to skip bad keys (histkit's own: check=False) -------

BAD_INPUT = np.array([3, 1, 9, 1, 0, 3, 2, 3], np.int64)  # index 2 is bad (K = 4)
VALID = np.array([0, 1, 3, 4, 5, 6, 7])


def _judged(kind, skips=True, **outcome):
    expected = checks.Expected(BAD_INPUT, 4)
    return checks.judge(kind, expected, checks.Outcome(first_bad=2, **outcome),
                        skips_bad_keys=skips)


def test_histogram_of_the_valid_keys_passes_on_a_bad_key_input():
    counts = oracles.histogram(BAD_INPUT[VALID], 4)
    assert _judged("histogram", counts=counts).status == "pass"


def test_a_bad_key_counted_into_a_bin_fails_when_kernels_promise_to_skip_them():
    counts = oracles.histogram(BAD_INPUT[VALID], 4) + np.array([0, 1, 0, 0])
    cell = _judged("histogram", counts=counts)
    assert cell.status == "FAIL" and "bad keys not skipped" in cell.detail
    # A user's kernel promises only the first bad index.
    assert _judged("histogram", skips=False, counts=counts).status == "pass"


def test_stable_sort_front_holds_the_valid_keys_sort_with_original_indices():
    order = VALID[np.argsort(BAD_INPUT[VALID], kind="stable")]
    tail = np.array([-7])  # one unspecified slot per bad key
    keys = np.concatenate([BAD_INPUT[order], tail])
    assert _judged("stable-sort", sorted_keys=keys,
                   original_index=np.concatenate([order, tail])).status == "pass"
    written_bad = np.concatenate([order[:-1], [2], tail])  # the bad key's index placed
    cell = _judged("stable-sort", sorted_keys=keys, original_index=written_bad)
    assert cell.status == "FAIL" and "holds index 2, not a valid key's" in cell.detail
    for outside in (-1, 8):  # no key's index at all
        cell = _judged("stable-sort", sorted_keys=keys,
                       original_index=np.concatenate([order[:-1], [outside], tail]))
        assert cell.status == "FAIL" and f"holds index {outside}," in cell.detail


def test_a_sort_past_several_bad_keys_is_judged_on_the_valid_keys_own_positions():
    keys = np.array([9, 2, 0, 9, 9, 1, 2, 9, 0], np.int64)  # K = 4: four bad keys
    valid = np.flatnonzero(keys < 4)
    order = valid[np.argsort(keys[valid], kind="stable")]
    tail = np.full(4, -7)
    expected = checks.Expected(keys, 4)
    got = checks.Outcome(first_bad=0, sorted_keys=np.concatenate([keys[order], tail]),
                         original_index=np.concatenate([order, tail]))
    assert checks.judge("stable-sort", expected, got, skips_bad_keys=True).status == "pass"
    swapped = order.copy()
    swapped[[1, 2]] = swapped[[2, 1]]  # two valid keys' indices swapped
    got.original_index = np.concatenate([swapped, tail])
    cell = checks.judge("stable-sort", checks.Expected(keys, 4), got, skips_bad_keys=True)
    assert cell.status == "FAIL" and "on the valid keys" in cell.detail
    for stray in (0, 3, 7):  # any of the bad keys' indices, not only the first's
        placed = np.concatenate([order[:-1], [stray], tail])
        got.original_index = placed
        cell = checks.judge("stable-sort", checks.Expected(keys, 4), got, skips_bad_keys=True)
        assert cell.status == "FAIL" and f"holds index {stray}, not a valid key's" in cell.detail


def test_atomic_cursor_sort_on_the_valid_keys_keeps_its_stability_finding():
    order = VALID[np.argsort(BAD_INPUT[VALID], kind="stable")]
    swapped = order.copy()
    swapped[[-1, -2]] = swapped[[-2, -1]]  # the two last are equal keys (3, 3)
    keys = np.concatenate([BAD_INPUT[swapped], [0]])
    cell = _judged("sort", sorted_keys=keys, original_index=np.concatenate([swapped, [0]]))
    assert cell.status == "finding" and "on the valid keys" in cell.detail


def _radix_outcome(keys, values):
    order = np.argsort(keys, kind="stable")  # numpy: independent of the oracle
    return checks.Outcome(sorted_keys=keys[order], original_index=order,
                          sorted_values=values[order])


def test_the_radix_rule_passes_numpys_stable_argsort_of_signed_keys_and_nan_values():
    keys = np.array([5, -3, 5, -128, 7, -3, 0], dtype=np.int8)
    values = np.array([np.nan, 1, 2, 3, np.inf, 5, -0.0], dtype=np.float32)
    expected = checks.Expected(keys, 0, full_width=True, values=values)
    assert checks.judge("radix-sort", expected, _radix_outcome(keys, values)).status == "pass"


def test_the_radix_rule_fails_unstable_order_unsigned_order_and_misplaced_values():
    keys = np.array([5, -3, 5, -128, 7, -3, 0], dtype=np.int8)
    values = np.arange(7, dtype=np.uint16)
    expected = checks.Expected(keys, 0, full_width=True, values=values)
    unstable = _radix_outcome(keys, values)
    unstable.original_index = unstable.original_index.copy()
    unstable.original_index[[1, 2]] = unstable.original_index[[2, 1]]  # the two -3s
    assert checks.judge("radix-sort", expected, unstable).detail.startswith(
        "NOT stable: 1 adjacent equal-key pair out of input order")
    as_unsigned = np.argsort(keys.view(np.uint8), kind="stable")
    unsigned = checks.Outcome(sorted_keys=keys[as_unsigned], original_index=as_unsigned,
                              sorted_values=values[as_unsigned])
    assert checks.judge("radix-sort", expected, unsigned).status == "FAIL"
    misplaced = _radix_outcome(keys, values)
    misplaced.sorted_values = values.copy()  # values left in input order
    assert "values differ" in checks.judge("radix-sort", expected, misplaced).detail


def test_only_the_radix_sort_is_judged_on_full_width_keys():
    from histkit.conformance.cases import cases_for

    quick = [c for c in all_cases(quick=True)  # (histkit only; scans only; histograms only)
             if not (c.skewed or c.fenced or c.scan_counts or c.kinds)]
    assert cases_for("radix-sort") == quick
    histogram_cases = cases_for("histogram")
    assert not any(c.full_width for c in histogram_cases)
    assert len(histogram_cases) == sum(not c.full_width for c in quick)


def test_a_quick_case_has_one_block_count_more_than_a_batch_of_one_partitions_entries():
    # count_partitions walks a partition's (partition, tile) entries 32 x warps
    # at a time; a block whose share is longer loops over batches (a bug there
    # survived every other case).
    from histkit.gpu import contract

    tile = contract.PART_THREADS * contract.PART_ITEMS
    batch = 32 * (contract.PART_COUNT_THREADS // 32)
    assert any(c.grid == 1 and c.num_bins <= 1 << contract.PART_LOW_BITS
               and -(-c.n // tile) > batch for c in all_cases(quick=True))


@pytest.mark.parametrize("n", [0, 5, 32, 33, 1000, 100_003])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "uint64"])
def test_auto_sample_model_is_the_keys_at_evenly_spread_runs(n, dtype):
    info = np.iinfo(dtype)
    keys = np.random.default_rng(n).integers(info.min, info.max, n, dtype=dtype,
                                             endpoint=True)
    runs, width = 7, 32
    want = []
    for r in range(runs):  # a plain loop: start, then 32 consecutive keys or "none"
        start = max(0, n - width) * r // (runs - 1)
        for lane in range(width):
            i = start + lane
            want.append(int(keys[i]) % 2**64 if i < n else 2**64 - 1)
    got = checks.auto_sample(keys, runs, width)
    assert got.dtype == np.uint64 and got.shape == (runs, width)
    assert [int(x) for x in got.ravel()] == want


def test_a_wrong_sample_slot_is_a_failure_naming_run_and_lane():
    want = checks.auto_sample(np.arange(100, dtype=np.int32), 4)
    got = want.copy()
    got[2, 5] += 1
    assert checks.sample_rule(want.ravel(), want) is None
    cell = checks.sample_rule(got.ravel(), want)
    assert cell.status == "FAIL" and "run 2, lane 5" in cell.detail


def test_skewed_cases_reach_one_and_several_blocks_and_only_histkits_own_kernels():
    from histkit.conformance.cases import cases_for

    skewed = [c for c in all_cases(quick=True) if c.skewed]
    assert len(skewed) >= 5 and all(c.name.endswith("/skewed") for c in skewed)
    assert {1, 2, 3} <= {c.grid for c in skewed}  # odd blocks skew the other way
    assert any(c.bad for c in skewed) and any(c.grid is None for c in skewed)
    # more blocks, and more bins, than any kernel's block has threads: a
    # stride by gridDim.x meant as blockDim.x leaves gaps only then
    assert any((c.grid or 0) > 1024 and c.num_bins > 1024 for c in skewed)
    assert not any(c.skewed for c in cases_for("histogram") + cases_for("stable-sort"))


def test_fenced_cases_come_last_in_the_quick_matrix_and_only_histkits_runner_places_fences():
    from histkit.conformance.cases import cases_for

    quick = all_cases(quick=True)
    fenced = [c for c in quick if c.fenced]
    assert len(fenced) >= 4 and quick[-len(fenced):] == fenced  # a fault spoils what follows
    assert all(c.n > 0 and c.offset == 0 and not c.bad for c in fenced)
    assert {c.dtype for c in fenced} >= {"int8", "uint16", "int32", "int64"}
    assert not any(c.fenced for c in cases_for("histogram") + cases_for("scan"))
    # a user's .cu kernel reads device memory the runner places: it gets them
    assert set(fenced) <= set(cases_for("histogram", fenced=True, skewed=True))


def test_the_scan_meets_a_fenced_length_off_every_tile_it_is_built_with():
    # a scan that loads the element after its counts drops it: only a fenced
    # length that ends inside a tile (not on its boundary) makes that a fault
    from histkit.conformance.cases import cases_for
    from histkit.gpu import contract, registry

    tiles = {int(b.get("SCAN_THREADS", contract.SCAN_THREADS))
             * int(b.get("SCAN_ITEMS", contract.SCAN_ITEMS))
             for k in registry.KERNELS if k.source == "exclusive_scan.cu" for b in k.builds}
    scanned = [c for c in cases_for("scan", fenced=True) if c.fenced and c.grid is None]
    assert len(tiles) >= 2 and any(all(c.num_bins % t for t in tiles) for c in scanned)


def test_a_histogram_whose_auto_sample_is_wrong_fails_though_its_counts_are_exact():
    keys = np.arange(100, dtype=np.int32) % 7
    expected = checks.Expected(keys, 7)
    sample = checks.auto_sample(keys, 4)
    right = checks.Outcome(counts=expected.exact, first_bad=None, sample=sample)
    assert checks.judge("histogram", expected, right).status == "pass"
    sample = sample.copy()
    sample[3, 0] = 6 - sample[3, 0]  # another valid bin: only the sample says so
    wrong = checks.Outcome(counts=expected.exact, first_bad=None, sample=sample)
    cell = checks.judge("histogram", expected, wrong)
    assert cell.status == "FAIL" and "run 3, lane 0" in cell.detail


@pytest.mark.parametrize("num_bins,keys_at,want", [
    # 2^20 bins past 1000 shared ones: every sampled key in one global bin -> hold runs
    (1 << 20, lambda i: np.full_like(i, 5000), "fast-hold"),
    # each key its own sector of global bins -> partition
    (1 << 20, lambda i: 1000 + 4 * i, "partitioned"),
    # every key in shared memory -> the fast kernel
    (1 << 20, lambda i: i % 1000, "fast"),
])
def test_autos_device_choice_is_judged_against_the_hosts_rule_on_the_keys(num_bins, keys_at,
                                                                          want):
    from histkit.gpu import policy

    keys = keys_at(np.arange(4096, dtype=np.int64)).astype(np.int32)
    expected = checks.Expected(keys, num_bins)
    sample = checks.auto_sample(keys, 64)
    codes = policy.AUTO_CHOICE_CODES
    for name, code in codes.items():
        got = checks.Outcome(counts=expected.exact, first_bad=None, sample=sample,
                             auto_choice=((code, 1000),))
        cell = checks.judge("histogram", expected, got)
        if name == want:
            assert cell.status == "pass", cell.detail
        else:
            assert cell.status == "FAIL"
            assert f"auto chose {name} on the device where its rule on the sample picks {want}" \
                in cell.detail


def test_an_unknown_device_choice_is_named_as_a_code():
    keys = np.arange(4096, dtype=np.int32) % 1000
    expected = checks.Expected(keys, 1 << 20)
    got = checks.Outcome(counts=expected.exact, first_bad=None,
                         sample=checks.auto_sample(keys, 64), auto_choice=((7, 1000),))
    cell = checks.judge("histogram", expected, got)
    assert cell.status == "FAIL" and "the unknown code 7" in cell.detail


def test_autos_choice_is_judged_at_every_shared_bins_it_was_told():
    # a hot-head sample (distributions.hot_head_at): bin 2^19 holds a bare
    # majority, bin 0 the rest. With 1000 bins shared only the hot bin is
    # global; told 0, every bin is: the hot bin must still win the votes.
    from histkit.distributions import hot_head_at
    from histkit.gpu import policy

    keys = hot_head_at(0, 20_011, 1 << 20).astype(np.int32)
    expected = checks.Expected(keys, 1 << 20)
    sample = checks.auto_sample(keys, 64)
    hold, fast = policy.AUTO_CHOICE_CODES["fast-hold"], policy.AUTO_CHOICE_CODES["fast"]
    right = checks.Outcome(counts=expected.exact, first_bad=None, sample=sample,
                           auto_choice=((hold, 1000), (hold, 0), (hold, 1 << 19)))
    assert checks.judge("histogram", expected, right).status == "pass"
    # the votes of one warp's runs lost: the hot bin's bit falls to a minority
    # only where every bin is global, so only the edge's verdict is wrong
    wrong = checks.Outcome(counts=expected.exact, first_bad=None, sample=sample,
                           auto_choice=((hold, 1000), (fast, 0), (hold, 1 << 19)))
    cell = checks.judge("histogram", expected, wrong)
    assert cell.status == "FAIL"
    assert "auto chose fast on the device where its rule on the sample picks fast-hold " \
        "(shared_bins=0," in cell.detail


def test_bad_positions_scanned_in_chunks_are_every_bad_key_in_order(monkeypatch):
    monkeypatch.setattr(checks, "BAD_SCAN_CHUNK", 7)
    keys = np.array([0, -1, 5, 9, 3, 4, 4, 10, 2, 0, 0, 0, 0, 0, 11, -3], np.int64)
    want = np.flatnonzero((keys < 0) | (keys >= 4))
    assert np.array_equal(checks.bad_positions(keys, 4), want)
    assert np.array_equal(checks.Expected(keys, 4).valid_part().keys, np.delete(keys, want))
    assert checks.bad_positions(np.empty(0, np.int8), 4).size == 0


# --- stable sorts past 2^31, judged in closed form a slice at a time -------------

@pytest.mark.parametrize("n, k", [(0, 3), (1, 251), (5, 7), (100, 7), (1001, 251), (997, 1)])
def test_the_closed_form_of_a_round_robin_stable_sort_is_the_oracles_and_numpys(n, k):
    keys = np.arange(n, dtype=np.int64) % k
    order = np.argsort(keys, kind="stable")  # independent of both
    oracle_keys, oracle_index = oracles.counting_sort(keys, k)
    assert np.array_equal(oracle_index, order)
    for start, stop in ((0, n), (n // 3, 2 * n // 3 + 1), (n // 2, n // 2), (max(0, n - 1), n)):
        got_keys, got_index = checks.round_robin_stable_sort(start, stop, n, k)
        assert np.array_equal(got_keys, keys[order][start:stop]), (start, stop)
        assert np.array_equal(got_index, order[start:stop]), (start, stop)


def _read_from(sorted_keys, index):
    return lambda start, stop: (sorted_keys[start:stop], index[start:stop])


def test_a_stable_sort_judged_in_slices_counts_every_difference_across_slices(monkeypatch):
    monkeypatch.setattr(checks, "SORT_SLICE", 7)  # many slices, a bucket across them
    n, k = 103, 5
    keys = np.arange(n) % k
    order = np.argsort(keys, kind="stable")
    expected = checks.Expected(keys, k, round_robin=True)
    good = checks.Outcome(first_bad=None, sorted_slices=_read_from(keys[order], order))
    assert checks.judge("stable-sort", expected, good).status == "pass"
    wrong = order.copy()
    wrong[[20, 21]] = wrong[[21, 20]]  # two equal keys' indices swapped: unstable
    wrong[90] += 1
    cell = checks.judge("stable-sort", expected, checks.Outcome(
        first_bad=None, sorted_slices=_read_from(keys[order], wrong)))
    assert cell.status == "FAIL" and cell.detail.startswith(
        f"original indices differ: 3 differing; first at 20: expected {order[20]}, "
        f"got {order[21]}")
    unsorted = keys[order].copy()
    unsorted[-1] = 0
    cell = checks.judge("stable-sort", expected, checks.Outcome(
        first_bad=None, sorted_slices=_read_from(unsorted, order)))
    assert cell.status == "FAIL" and "sorted keys differ: 1 differing; first at 102" in cell.detail


def test_only_round_robin_keys_are_judged_in_closed_form():
    keys = np.array([2, 0, 1, 1])
    with pytest.raises(ValueError, match="round-robin"):
        checks.judge("stable-sort", checks.Expected(keys, 3), checks.Outcome(
            first_bad=None, sorted_slices=_read_from(keys, keys)))


def test_only_round_robin_cases_past_2_31_without_bad_keys_are_sorted_in_closed_form():
    from histkit.conformance.cases import HUGE, Case

    assert Case("round-robin", HUGE, 251, dtype="uint8").sorted_in_closed_form
    assert not Case("round-robin", HUGE, 251, dtype="uint8", bad="last").sorted_in_closed_form
    assert not Case("uniform", HUGE, 251, dtype="uint8").sorted_in_closed_form
    assert not Case("round-robin", HUGE - 18, 251, dtype="uint8").sorted_in_closed_form


# --- gaps the harness mutants found (mutants/harness_mutants.py) -----------------

def test_a_wave_kernel_whose_counts_differ_from_the_wave_model_fails():
    keys = np.zeros(64, np.int32)  # one bucket: the model loses 31 of each 32-lane wave
    expected = checks.Expected(keys, 4)
    model = expected.wave(32)
    assert checks.judge("wave", expected, checks.Outcome(counts=model)).status == "pass"
    exact = expected.exact  # an atomic kernel's counts are not the wave model's
    cell = checks.judge("wave", expected, checks.Outcome(counts=exact))
    assert cell.status == "FAIL" and "differing" in cell.detail


@pytest.mark.parametrize(("index", "named"), [([0, 1, 2, 4], "position 3 holds 4"),
                                              ([-1, 1, 2, 3], "position 0 holds -1")])
def test_an_unstable_sorts_index_outside_the_input_fails_naming_where(index, named):
    keys = np.array([0, 0, 0, 0])
    cell = checks.atomic_cursor_sort(keys, np.array(index), keys, keys)
    assert cell.status == "FAIL"
    assert cell.detail == f"original_index out of range: {named}, outside [0, 4)"


def test_an_index_named_twice_fails_naming_the_repeated_and_the_missing_index():
    keys = np.array([0, 0, 0, 0])
    cell = checks.atomic_cursor_sort(keys, np.array([0, 1, 1, 3]), keys, keys)
    assert cell.status == "FAIL"
    assert cell.detail.endswith("1 index missing; index 1 appears more than once (at positions "
                                "1 and 2), 2 never")


def test_an_index_whose_key_is_another_fails_naming_the_position_and_both_keys():
    keys = np.array([5, 7, 7])
    cell = checks.atomic_cursor_sort(np.array([5, 7, 7]), np.array([1, 0, 2]), keys,
                                     np.array([5, 7, 7]))
    assert cell.status == "FAIL"
    assert cell.detail.endswith("position 0 holds key 5 and index 1, but keys[1] = 7")


def test_autos_sample_of_one_run_is_the_first_keys_and_of_two_the_ends():
    keys = np.arange(100, dtype=np.int32)
    assert checks.auto_sample(keys, 1, width=4).tolist() == [[0, 1, 2, 3]]
    assert checks.auto_sample(keys, 2, width=4).tolist() == [[0, 1, 2, 3], [96, 97, 98, 99]]


def _round_robin(n, num_bins, monkeypatch):
    monkeypatch.setattr(checks, "SORT_SLICE", 7)  # many slices on a small input
    keys = (np.arange(n) % num_bins).astype(np.uint8)
    return checks.Expected(keys, num_bins, round_robin=True)


def test_an_unstable_sort_past_2_31_is_judged_a_slice_at_a_time_with_the_atomic_cursor_rule(
        monkeypatch):
    n, num_bins = 40, 3
    expected = _round_robin(n, num_bins, monkeypatch)
    order = np.argsort(expected.keys, kind="stable")
    keys = expected.keys[order]

    def reading(index):
        return lambda start, stop: (keys[start:stop], index[start:stop])

    assert checks.judge("sort", expected, checks.Outcome(sorted_slices=reading(order))
                        ).status == "pass"
    swapped = order.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # equal keys out of input order: a finding
    cell = checks.judge("sort", expected, checks.Outcome(sorted_slices=reading(swapped)))
    assert cell.status == "finding" and "NOT stable: 1 adjacent" in cell.detail
    # an index kept in too few bits: two slots name one key, one key is never named
    wrapped = order.copy()
    wrapped[wrapped == 30] = 30 - 3 * 8
    cell = checks.judge("sort", expected, checks.Outcome(sorted_slices=reading(wrapped)))
    assert cell.status == "FAIL" and "not a permutation: 1 index missing" in cell.detail
    wrong_key = order.copy()
    wrong_key[5] += 1  # an index whose key is another
    cell = checks.judge("sort", expected, checks.Outcome(sorted_slices=reading(wrong_key)))
    assert cell.status == "FAIL" and "position 5 holds key" in cell.detail


def test_a_radix_sort_past_2_31_moves_closed_form_values_judged_a_slice_at_a_time(
        monkeypatch):
    n, num_bins = 40, 3
    expected = _round_robin(n, num_bins, monkeypatch)
    order = np.argsort(expected.keys, kind="stable")
    values = checks.closed_form_values(0, n)
    assert len(set(values.tolist())) == n  # every position its own value

    def reading(moved):
        return lambda start, stop: (expected.keys[order][start:stop], order[start:stop],
                                    moved[start:stop])

    assert checks.judge("radix-sort", expected, checks.Outcome(
        radix_slices=reading(values[order]))).status == "pass"
    gathered_wrong = values[order].copy()
    gathered_wrong[33] = values[order[33] - 8]  # a gather whose index wrapped
    cell = checks.judge("radix-sort", expected, checks.Outcome(
        radix_slices=reading(gathered_wrong)))
    assert cell.status == "FAIL" and "values differ" in cell.detail and "first at 33" in cell.detail
    # positions 2^31 apart hold different values: a 32-bit index shows
    far = checks.closed_form_values(2**31 + 5, 2**31 + 6)[0]
    assert far != checks.closed_form_values(5, 6)[0]


def test_the_sorts_are_judged_past_2_31_keys_on_the_fenced_case_with_radix_values():
    from histkit.conformance.cases import all_cases, huge_cases, large_cases
    from histkit.conformance.runner import radix_values

    (fenced,) = [c for c in all_cases(quick=True) if c.fenced and c.kinds]
    assert {"sort", "stable-sort"} <= set(fenced.kinds) and "radix-sort" not in fenced.kinds
    assert fenced.sorted_in_closed_form
    (radix,) = [c for c in large_cases() if c.kinds == ("radix-sort",)]
    assert radix in huge_cases() and radix.sorted_in_closed_form and radix.n > 2**31
    small = checks.closed_form_values(0, 100)
    shrunk = type(fenced)("round-robin", 100, 251, seed=5, dtype="uint8", kinds=fenced.kinds,
                          fenced=True)
    assert radix_values(shrunk).dtype == np.float32  # below 2^31 the usual random values
    assert list(small[:3]) == [0, 0x9E3779B1, (2 * 0x9E3779B1) & 0xFFFFFFFF]


def test_a_users_skewed_case_comes_twice_with_opposite_warp_orders():
    from histkit.conformance.cases import all_cases, cases_for, judges
    from histkit.gpu.device.harness import ScheduleSkew

    skewed = [c for c in all_cases(quick=True) if c.skewed and judges(c, "histogram")]
    users = [c for c in cases_for("histogram", skewed=True, fenced=True) if c.skewed]
    assert len(users) == 2 * len(skewed)
    for first, second in zip(users[::2], users[1::2], strict=True):
        assert first.skew_seed % 2 == 0 and second.skew_seed == first.skew_seed + 1
        assert f"/skewed-order={first.skew_seed}" in first.name
    assert all(c.skew_seed is None for c in all_cases(quick=True))  # histkit's own: fixed
    skew = ScheduleSkew()
    skew.depth, skew.order_seed = 1, 6
    assert skew.defines("/home/me/scan.cu")["HK_SKEW_ORDER_SEED"] == "6"
    assert "HK_SKEW_ORDER_SEED" not in skew.defines("exclusive_scan.cu")  # histkit's own


def test_a_case_id_is_its_name_in_a_form_pytest_k_takes_whole():
    # "N=33" or "a/b" in an id breaks `pytest -k`; the plugin's ids read as the names do
    import re

    from histkit.conformance.pytest_plugin import conformance_cases, k_safe_id

    assert case_id(Case("uniform", 33, 10)) == "uniform-N33-K10-int32"
    assert (k_safe_id("round-robin/N=5/K=3/uint8/grid=2/bad=past-2^31/kinds=histogram+wave")
            == "round-robin-N5-K3-uint8-grid2-bad-past-2_31-kinds-histogram+wave")
    for kind in registry.KINDS:
        mark = conformance_cases(kind, cuda_file=kind != "radix-sort")
        ids = mark.kwargs["ids"]
        assert len(set(ids)) == len(ids) == len(mark.args[1]), kind  # one per case, distinct
        assert all(re.fullmatch(r"[\w.+-]+", i) for i in ids), kind


def test_a_stable_sort_with_equal_keys_out_of_input_order_fails_saying_not_stable():
    keys = np.array([3, 1, 3, 1], dtype=np.int32)
    expected = checks.Expected(keys, 4)
    swapped = checks.Outcome(sorted_keys=np.array([1, 1, 3, 3]),
                             original_index=np.array([3, 1, 0, 2]))
    cell = checks.judge("stable-sort", expected, swapped)
    assert cell.status == "FAIL"
    assert cell.detail.startswith("NOT stable: 1 adjacent equal-key pair out of input order; "
                                  "the first at positions 0 and 1: key 1 from input indices 3 "
                                  "then 1")
    assert cell.figures["differences"][0] == [0, 3, 1]  # (the indices, as numbers)


def test_a_scan_that_writes_an_offset_for_no_counts_fails_on_the_empty_scan_case():
    empty = next(c for c in all_cases(quick=True) if c.scan_counts and c.n == 0)
    expected = checks.Expected(empty.keys(), empty.num_bins, scan_counts=True)
    one_offset = np.zeros(1, np.int64)  # offsets[0] = 0 written whatever n is
    cell = checks.judge("scan", expected, checks.Outcome(offsets=one_offset))
    assert cell.status == "FAIL" and "wrong shape" in cell.detail
    assert checks.judge("scan", expected, checks.Outcome(
        offsets=np.zeros(0, np.int64))).status == "pass"
