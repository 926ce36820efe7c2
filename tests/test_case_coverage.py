"""What the quick matrix's cases are for, each purpose stated as a property of
the cases and the kernels' geometry (contract constants), not as the case
list itself: a case dropped or moved off its edge by a slip in cases.py fails
here, while every kernel would still pass the weaker matrix. No GPU needed."""

from __future__ import annotations

import numpy as np
import pytest

from histkit.conformance import cases, checks
from histkit.conformance.cases import MEDIUM, Case, all_cases, large_cases, plant_bad_keys
from histkit.gpu import contract, policy

QUICK = all_cases(quick=True)
WIDTHS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
PARTITIONED_MAX_BINS = contract.MAX_PARTS << contract.PART_LOW_BITS


def keyed(case: Case) -> bool:
    """A histogram's or counting sort's case: keys below K, none bad, unforced."""
    return not (case.full_width or case.scan_counts or case.bad or case.kinds
                or case.skewed or case.fenced or case.grid is not None or case.offset)


def where(**fields) -> list[Case]:
    return [c for c in QUICK if all(getattr(c, k) == v for k, v in fields.items())]


def test_every_distribution_meets_few_and_many_bins_at_a_medium_size():
    for distribution in cases.DISTRIBUTIONS:
        bins = {c.num_bins for c in where(distribution=distribution, n=MEDIUM) if keyed(c)}
        assert {16, 256, 4096, 65536} <= bins, distribution


def test_one_bin_and_two_bins_are_met_at_one_key_and_past_a_block():
    # every other case has at least three bins: a kernel (or a scan of the
    # single count of a one-bin histogram) wrong only at K = 1 or 2 passed
    for num_bins in (1, 2):
        sizes = {c.n for c in QUICK if keyed(c) and c.num_bins == num_bins}
        assert 1 in sizes and any(n > 256 for n in sizes), num_bins


def test_a_callable_wrong_only_at_one_bin_fails_and_so_does_a_scan_of_one_count():
    from histkit.conformance import check

    def histogram(keys, num_bins):
        counts = np.bincount(keys, minlength=num_bins)
        return counts * 0 if num_bins == 1 else counts

    def scan(counts):
        out = np.concatenate([[0], np.cumsum(counts)])[:len(counts)].astype(np.int64)
        return counts.copy() if len(counts) == 1 else out

    for impl, kind in ((histogram, "histogram"), (scan, "scan")):
        # in this process, so no bad keys: np.bincount of a key of 2**63 - 1
        # corrupts the heap (NumPy 2.4), which a worker process would survive
        keyed_only = [c for c in cases.cases_for(kind) if c.bad is None]
        report = check(impl, kind, cases=keyed_only, inputs="numpy", in_process=True,
                       shrink_failures=False)
        assert not report.passed, kind
        assert {failure.case.num_bins for failure in report.failures} == {1}, kind


def test_every_key_width_is_counted_clean_and_the_narrow_ones_over_their_whole_range():
    for width in WIDTHS:
        assert any(keyed(c) and c.distribution == "uniform" and c.n % 16
                   for c in where(dtype=width)), width
    assert {c.dtype for c in QUICK if keyed(c) and c.distribution == "onebin"} >= {
        "int8", "uint16", "int64", "uint64"}
    for width, valid_keys in (("uint8", 256), ("int8", 128), ("uint16", 65536),
                              ("int16", 32768)):
        for distribution in ("uniform", "round-robin"):
            assert any(keyed(c) and c.n > valid_keys
                       for c in where(dtype=width, num_bins=valid_keys,
                                      distribution=distribution)), (width, distribution)


@pytest.mark.parametrize("width, largest", [("uint8", 255), ("int8", 127), ("int16", 32767)])
def test_a_narrow_width_over_its_whole_range_draws_its_largest_key(width, largest):
    case = Case("round-robin", 70_001, largest + 1, seed=5, dtype=width)
    assert case.keys().max() == largest


def test_remainder_sizes_leave_a_remainder_past_a_power_of_two_and_past_2_22():
    sizes = {c.n for c in where(num_bins=256, dtype="int32", distribution="uniform")
             if keyed(c) and c.n > MEDIUM}
    assert any((n - 1) & (n - 2) == 0 for n in sizes)  # one key past a power of two
    assert any(n % 4 == 3 for n in sizes)  # three keys past a whole 16-byte vector
    assert any(n > 1 << 22 for n in sizes)  # more tiles than the resident sort holds
    odd_narrow = {(c.n % 16, c.dtype) for c in where(distribution="round-robin", num_bins=4096)
                  if keyed(c) and c.n > MEDIUM}
    assert {dtype for _, dtype in odd_narrow} == {"int8", "int16"}
    assert all(remainder for remainder, _ in odd_narrow)


def test_many_bins_reach_each_of_autos_paths():
    many = [c for c in QUICK if keyed(c) and c.num_bins == 1 << 20]
    # the default policy's fast kernel without a sample: past 2^22 keys, below sampling's
    for distribution in ("uniform", "onebin", "zipf"):
        assert any(1 << 22 < c.n < policy.PARTITION_MIN_KEYS and c.distribution == distribution
                   for c in many), distribution
    # small N, each branch of the sampled choice
    for distribution in ("uniform", "onebin", "sorted", "half-hot", "hot-head",
                         "sixteen-sectors"):
        assert any(c.n < 1 << 16 and c.distribution == distribution for c in many), distribution
    assert any(c.distribution == "round-robin" and c.n >= MEDIUM for c in many)
    # a hot global bin with bit 0 set: K // 2 odd
    assert any(keyed(c) and c.distribution == "onebin" and (c.num_bins // 2) % 2 == 1
               and c.num_bins > 1 << 19 for c in QUICK)


def test_autos_choice_edges_meet_a_bare_majority_among_global_keys_and_a_border_hot_bin():
    # The probe tells the choosing kernel policy.choice_edges too: some
    # sampled case must, at those edges, pick fast-hold by a margin of less
    # than one warp's runs of votes (every bin global: a vote lost or
    # misweighed turns it), and some must put its hot bin exactly on the
    # border (fast-hold there, the fast kernel one bin further)
    bare_majority = border = False
    for case in (c for c in QUICK if keyed(c) and c.num_bins == 1 << 20 and c.n < 1 << 16):
        runs = checks.auto_sample(case.keys(), contract.SAMPLE_RUNS)
        edges = policy.choice_edges(runs, case.num_bins)
        hot = policy.hot_global_count(runs, 0, case.num_bins)
        bare_majority |= (policy.auto_choice(runs, 0, case.num_bins) == "fast-hold"
                          and 2 * (hot - 2 * contract.WARP) <= runs.size)
        border |= len(edges) == 2 and [policy.auto_choice(runs, edges[1] + step, case.num_bins)
                                       for step in (0, 1)] == ["fast-hold", "fast"]
    assert bare_majority and border


def test_the_partitioned_kernel_meets_every_partition_a_forced_grid_and_its_limit():
    assert any(keyed(c) and c.num_bins == PARTITIONED_MAX_BINS for c in QUICK)
    assert any(c.num_bins > PARTITIONED_MAX_BINS and keyed(c) for c in QUICK)
    one_partition = 1 << contract.PART_LOW_BITS
    assert any(c.grid == 2 and c.num_bins == one_partition for c in QUICK)
    # one block counting more (partition, tile) entries than a batch holds
    assert any(c.grid == 1 and c.num_bins == one_partition and c.n > 600 * 8192 for c in QUICK)
    assert any(keyed(c) and 65536 < c.num_bins < 1 << 20 and c.distribution == d
               for c in QUICK for d in ("zipf", "sorted"))


def test_bad_keys_several_and_spread_are_planted_in_a_large_input_one_and_many_blocks():
    for pattern in ("first", "last", "several", "spread"):
        sizes = {c.n for c in where(bad=pattern, dtype="int32", num_bins=256)
                 if c.grid is None}
        assert {33, 100_003} <= sizes, pattern
    assert {1} <= {c.n for c in where(bad="first", num_bins=256)}


def test_a_negative_bad_key_needs_a_signed_dtype():
    with pytest.raises(ValueError, match="no bad key"):
        plant_bad_keys(np.zeros(10, np.uint8), "negative", 10, seed=1)


def test_a_run_of_bad_keys_starts_at_an_odd_index():
    for n in (30_011, 100, 9):
        keys = np.zeros(n, np.int32)
        plant_bad_keys(keys, "run", 1000, seed=1)
        first = int(np.flatnonzero(keys >= 1000)[0])
        assert first % 2 == 1, n


def test_full_width_keys_cover_every_width_its_extremes_and_the_sort_tiles_edges():
    tile = contract.TILE_WARPS * contract.WARP * contract.tile_items(4)
    wide = [c for c in QUICK if c.full_width]
    for width in WIDTHS:
        assert {"uniform", "extremes"} <= {c.distribution for c in wide if c.dtype == width}
    int32_sizes = {c.n for c in wide if c.dtype == "int32" and c.distribution == "uniform"}
    assert {1, 31, 257, tile + 1, 2 * tile + 1} <= int32_sizes
    assert any(c.n > MEDIUM and c.n % 2 for c in wide if c.dtype == "int64")


def test_a_scan_meets_one_tile_and_one_count_more_and_two_levels_of_tile_sums():
    tile = contract.SCAN_THREADS * contract.SCAN_ITEMS
    sizes = {c.n for c in QUICK if c.scan_counts}
    assert tile + 1 in sizes
    assert any(n > tile * tile and n % tile for n in sizes)


def test_a_full_run_adds_2_28_keys_of_every_distribution_and_full_width_keys():
    large = large_cases()
    for distribution in cases.DISTRIBUTIONS:
        assert {256, 65536} <= {c.num_bins for c in large
                                if c.distribution == distribution and c.n == cases.LARGE}
    assert {"int32", "int64"} <= {c.dtype for c in large if c.full_width and c.n == cases.LARGE}
