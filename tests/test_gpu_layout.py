"""The host's picture of the kernels' layout, checked without a GPU."""

import numpy as np
import pytest

from histkit.distributions import make_keys
from histkit.gpu import contract, errors, policy
from histkit.gpu.launch import resident as launch_resident
from histkit.gpu.launch import sort as launch_sort
from histkit.gpu.launch.common import EVERY_KEY, Keys


@pytest.mark.parametrize("num_bins,passes", [(1, 1), (2, 1), (256, 1), (257, 2), (65536, 2),
                                             (65537, 3), (1 << 20, 3), (1 << 24, 3),
                                             ((1 << 24) + 1, 4), (1 << 32, 4)])
def test_sort_takes_one_8_bit_digit_pass_per_byte_of_the_largest_bin(num_bins, passes):
    shifts = policy.digit_shifts(num_bins)
    assert shifts == tuple(8 * p for p in range(passes))
    # every bin below num_bins is covered by the digits, and no digit is idle
    assert (num_bins - 1) >> (shifts[-1] + 8) == 0
    assert num_bins == 1 or (num_bins - 1) >> shifts[-1] > 0


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint64])
def test_a_radix_sort_takes_a_full_256_digit_pass_per_key_byte_and_reads_no_bound(dtype):
    from test_api_calls import FakeRuntime

    keys = Keys(0x1000, 100_000, np.dtype(dtype))
    shape = launch_sort._sort_shape(FakeRuntime(), keys, EVERY_KEY, None, True, np.int64)
    width = np.dtype(dtype).itemsize
    assert [p.kernel for p in shape.passes] == [f"onesweep_scatter[shift={8 * b}]"
                                             for b in range(width)]
    assert shape.digits == (256,) * width
    assert shape.full_width and int(shape.n_and_bins[1]) == 2**64 - 1
    assert shape.tiles == -(-keys.n // policy.tile_keys(dtype))
    # a block per tile: no block waits on a tile no running block has taken
    assert all(p.grid == shape.tiles for p in shape.passes)
    # dynamic shared memory: the staged tile's keys, then their int64 indices
    assert all(p.shared_bytes == policy.tile_keys(dtype) * (width + 8) for p in shape.passes)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_int32_indices_halve_the_staged_indices(dtype):
    from test_api_calls import FakeRuntime

    keys = Keys(0x1000, 100_000, np.dtype(dtype))
    shape = launch_sort._sort_shape(FakeRuntime(), keys, EVERY_KEY, None, True, np.int32)
    tile = policy.tile_keys(dtype)
    assert shape.passes[0].shared_bytes == tile * (np.dtype(dtype).itemsize + 4)


@pytest.mark.parametrize("items", [4, 8, 20])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64])
def test_a_staged_tile_also_holds_every_warps_digit_masks_while_it_is_ranked(dtype, items):
    # counting_sort.cu ranks a tile with each warp's 256 32-bit digit masks in
    # the staged tile's memory: a small tile of narrow keys gets at least that
    keys_and_indices = policy.tile_keys(dtype, items) * (np.dtype(dtype).itemsize + 4)
    masks = 8 * 256 * 4
    assert policy.staged_tile_bytes(np.dtype(dtype), np.dtype(np.int32), items) == max(
        keys_and_indices, masks)


@pytest.mark.parametrize("num_bins,digits", [(1, (1,)), (256, (256,)), (300, (256, 2)),
                                             (65536, (256, 256)), (70_000, (256, 256, 2))])
def test_a_stable_sort_pass_sees_only_the_digits_its_bins_can_have(num_bins, digits):
    from test_api_calls import FakeRuntime

    keys = Keys(0x1000, 100_000, np.dtype(np.int32))
    shape = launch_sort._sort_shape(FakeRuntime(), keys, num_bins, None, False, np.int64)
    assert shape.digits == digits and not shape.full_width


@pytest.mark.parametrize("n,ok", [(2**31, True), (2**31 + 1, False)])
def test_int32_indices_number_up_to_2_31_keys(n, ok):
    if ok:
        assert policy.check_index_dtype(n, np.int32) == np.int32
    else:
        with pytest.raises(errors.UnsupportedShape, match="int32 indices"):
            policy.check_index_dtype(n, np.int32)
    assert policy.check_index_dtype(n, "int64") == np.int64


def runs_of(keys, width=32):
    keys = np.asarray(keys, np.uint64)
    return keys[: len(keys) // width * width].reshape(-1, width)


# As measured at 2^20 bins (docs/performance.md): partitioned wins on uniform keys,
# the fast kernel holding runs on one-bin keys, the plain fast kernel on Zipf,
# sorted and round-robin keys.
@pytest.mark.parametrize("distribution,kernel", [("uniform", "partitioned"),
                                                 ("onebin", "fast-hold"), ("zipf", "fast"),
                                                 ("sorted", "fast"), ("round-robin", "fast")])
def test_auto_picks_the_kernel_measured_fastest_for_the_sampled_keys(distribution, kernel):
    num_bins, shared_bins = 1 << 20, 58_112
    keys = make_keys(distribution, 1 << 16, num_bins, seed=3)
    if distribution == "sorted":  # a long sorted input: equal neighbours
        keys = np.repeat(keys[:: 256][:256], 256)
    assert policy.auto_choice(runs_of(keys), shared_bins, num_bins) == kernel


@pytest.mark.parametrize("n,num_bins,samples", [
    (1 << 25, 1 << 20, True),   # many keys over many bins: the choice pays for its sample
    (1 << 26, 256, False),      # few bins: the fast kernel, no sample (no extra sync)
    (1 << 20, 1 << 20, False),  # few keys: the sample would cost more than it saves
    (1 << 25, 1 << 22, False),  # past auto's bins: the partitioned kernel alone
])
def test_auto_samples_the_keys_only_with_both_many_keys_and_a_partitionable_bin_count(
        n, num_bins, samples):
    # (docs/performance.md, "The partitioned histogram, and how auto chooses"): a
    # sample is a launch and a host wait, paid by every call it is taken in
    assert policy.DEFAULT_POLICY.samples(n, num_bins) is samples


def test_one_hot_bin_in_shared_memory_does_not_count_as_hot_global():
    runs = runs_of(np.full(64 * 32, 7))
    assert policy.hot_global_count(runs, 1_000, 1 << 20) == 0
    assert policy.hot_global_count(runs, 5, 1 << 20) == 64 * 32


def test_keys_in_shared_memory_or_out_of_range_count_as_not_scattered():
    runs = np.array([[5] * 16 + [70_000 + 4 * j for j in range(16)]], np.uint64)
    assert policy.scattered_sectors(runs, 1_000, 1 << 20) == 16  # half of the 32 keys
    assert policy.scattered_sectors(runs, 100_000, 1 << 20) == 0
    assert policy.scattered_sectors(runs, 1_000, 60_000) == 0


# The host's rule is the oracle of auto's choice on the device (the
# conformance suite's checks.choice_rule): its edges are pinned here, each
# sample built by hand. 64 runs of 32 = 2048 sampled keys; bins below 1000
# are shared, 1000 ... 2^20 - 1 global.
SHARED, BINS = 1_000, 1 << 20


def sample_of(global_per_run, fill=5):
    """64 runs whose first lanes hold global_per_run(run) (a list of bins),
    the rest the shared bin `fill`."""
    runs = np.full((64, 32), fill, np.uint64)
    for run in range(64):
        taken = global_per_run(run)
        runs[run, :len(taken)] = taken
    return runs


@pytest.mark.parametrize("extra,kernel", [(0, "fast"), (1, "partitioned")])
def test_auto_partitions_only_past_half_the_sample_in_distinct_global_sectors(extra, kernel):
    # 16 distinct sectors (4 bins each) in every run: 1024 of 2048, exactly
    # half, is not scattered; one run with a 17th makes 1025
    def run_bins(run):
        count = 16 + (extra if run == 0 else 0)
        return [SHARED + 4 * (run * 32 + j) for j in range(count)]
    assert policy.auto_choice(sample_of(run_bins), SHARED, BINS) == kernel


@pytest.mark.parametrize("extra,kernel", [(0, "fast"), (1, "fast-hold")])
def test_auto_holds_runs_only_past_half_the_sample_in_one_global_bin(extra, kernel):
    # one global bin in 16 lanes of every run (one sector a run: not scattered)
    hot = SHARED + 40
    def run_bins(run):
        return [hot] * (16 + (extra if run == 0 else 0))
    assert policy.auto_choice(sample_of(run_bins), SHARED, BINS) == kernel


def test_the_hot_bin_is_the_sampleds_most_frequent_global_bin():
    # 17 keys of one global bin and 2 of another in every run: 1088 of 2048
    def run_bins(run):
        return [SHARED + 40] * 17 + [SHARED + 400] * 2
    runs = sample_of(run_bins)
    assert policy.hot_global_count(runs, SHARED, BINS) == 1088
    assert policy.auto_choice(runs, SHARED, BINS) == "fast-hold"


@pytest.mark.parametrize("bin_,global_", [(SHARED - 1, False), (SHARED, True),
                                          (BINS - 1, True), (BINS, False)])
def test_the_global_bins_are_from_the_first_past_shared_memory_to_the_last(bin_, global_):
    runs = np.full((64, 32), bin_, np.uint64)
    assert policy.hot_global_count(runs, SHARED, BINS) == (2048 if global_ else 0)
    assert policy.auto_choice(runs, SHARED, BINS) == ("fast-hold" if global_ else "fast")


def test_a_sector_is_four_neighbouring_bins():
    runs = np.array([[4000, 4001, 4002, 4003, 4004, 4003, 4000, 4007]], np.uint64)
    assert policy.scattered_sectors(runs, SHARED, BINS) == 2
    assert policy.scattered_sectors(runs[:, :4], SHARED, BINS) == 1


def test_the_device_codes_of_autos_choices_are_the_contracts():
    from histkit.gpu import contract

    assert policy.AUTO_CHOICE_CODES == {"fast": contract.AUTO_FAST,
                                        "fast-hold": contract.AUTO_FAST_HOLD,
                                        "partitioned": contract.AUTO_PARTITIONED}
    assert len(set(policy.AUTO_CHOICE_CODES.values())) == 3


def test_pool_size_classes_round_up_by_at_most_an_eighth():
    from histkit.gpu.device import size_class

    assert [size_class(n) for n in (1, 512, 513, 65536)] == [512, 512, 1024, 65536]
    for nbytes in (65537, 100_000, 3 << 20, (1 << 26) + 1):
        got = size_class(nbytes)
        assert nbytes <= got <= nbytes * 1.125 + 1
    assert size_class(100_000) == size_class(100_001)  # nearby sizes share blocks


def test_pool_hands_back_a_freed_block_of_the_same_stream_and_size_only():
    from histkit.gpu.device import POOL_MAX_BYTES, BufferPool

    pool = BufferPool()
    pool.give_back((7, 1024), "block")
    assert pool.take((8, 1024)) is None and pool.take((7, 2048)) is None
    assert pool.take((7, 1024)) == "block" and pool.take((7, 1024)) is None
    pool.give_back((7, POOL_MAX_BYTES), "big")
    pool.give_back((7, 1024), "over the cap")  # dropped, not kept
    assert pool.kept == POOL_MAX_BYTES and pool.take((7, 1024)) is None


def test_a_buffer_given_back_by_a_finaliser_in_the_middle_of_take_does_not_deadlock():
    # The garbage collector can run PooledBuffer.__del__ (give_back) while the
    # same thread is inside take(); a lock there hung the conformance run.
    from histkit.gpu.device import BufferPool

    pool = BufferPool()

    class StackCollectedMidPop(list):
        def pop(self):
            pool.give_back((1, 512), "freed by a finaliser")
            return super().pop()

    pool.free[(1, 1024)] = StackCollectedMidPop(["block"])
    pool.kept = 1024
    assert pool.take((1, 1024)) == "block"
    assert pool.take((1, 512)) == "freed by a finaliser" and pool.kept == 0


def test_conformance_scratch_arrives_as_zeros_and_all_ones_by_turns_and_only_inside_a_cell():
    from histkit.gpu.device import ScratchPoison

    poison = ScratchPoison()
    assert poison.next_byte() is None  # outside a conformance cell: untouched
    poison.depth += 1
    assert [poison.next_byte() for _ in range(4)] == [0xFF, 0x00, 0xFF, 0x00]
    poison.depth -= 1
    assert poison.next_byte() is None


@pytest.mark.parametrize("n,items", [(1, 4), (4096, 4), (528 * 1024, 4), (528 * 1024 + 1, 8),
                                     (528 * 2048 + 1, None), (528 * 4096 + 1, None)])
def test_the_resident_sort_takes_the_smallest_tile_whose_tiles_all_fit(n, items):
    from test_api_calls import FakeRuntime

    rt = FakeRuntime()
    rt.resident_blocks = lambda kernel, block, shared: 4  # 132 SMs x 4 = 528 tiles at once
    shape = launch_resident.resident_shape(rt, Keys(0x1000, n, np.dtype(np.int32)), 256)
    built = [defines.get("TILE_ITEMS") for name, defines in rt.builds
             if name == "resident_sort"]
    if n > 528 * 4096:  # not even resident_sort's largest tile fits: onesweep's job
        assert shape.geometry is None
        return
    assert shape.geometry is not None and shape.geometry.cooperative
    # the report names a smaller tile's build; the largest is plain resident_sort
    assert shape.geometry.kernel == ("resident_sort" if items is None
                                     else f"resident_sort[TILE_ITEMS={items}]")
    items = items or contract.RESIDENT_TILE_ITEMS  # 16 rounds: 4096 keys a tile
    assert built[-1] == str(items)
    tile = policy.tile_keys(np.dtype(np.int32), items)
    tiles = shape.geometry.grid
    assert tiles == -(-n // tile) <= 528
    # its scratch: the arrivals word, 32-bit counts of every digit of every tile,
    # then the digit totals
    assert shape.scratch_words * 8 >= 8 + (tiles + 1) * policy.MAX_DIGITS * 4


def test_the_quick_matrix_sorts_resident_inputs_on_both_sides_of_the_direct_prefix_limit():
    # resident_sort reaches a tile's digit offsets two ways: every block sums
    # the tile counts itself up to contract.RESIDENT_DIRECT_PREFIX_TILES
    # tiles, a column scan and one more grid-wide wait above. Each way must
    # meet cases, one-pass (K <= 256) and two-pass ones, on an H200 (528
    # tiles at once), or a slip in it goes unseen.
    from histkit.conformance import cases

    capacity, limit = 132 * 4, contract.RESIDENT_DIRECT_PREFIX_TILES
    seen = set()
    for case in cases.all_cases(quick=True):
        if not cases.judges(case, "stable-sort") or case.full_width or case.n < 2:
            continue
        dtype = np.dtype(case.dtype)
        items = (policy.resident_tile_items(case.n, dtype, capacity)
                 or contract.resident_tile_items(dtype.itemsize))
        tiles = -(-case.n // policy.tile_keys(dtype, items))
        if tiles <= capacity:
            seen.add((tiles > limit, case.num_bins > 256))
    assert seen >= {(False, False), (False, True), (True, False), (True, True)}


def test_an_input_too_large_for_any_resident_launch_compiles_no_resident_kernel():
    from test_api_calls import FakeRuntime

    rt = FakeRuntime()  # 132 SMs: at most 132 x 2048 / 256 = 1056 tiles at once on any GPU
    shape = launch_resident.resident_shape(rt, Keys(0x1000, 1 << 26, np.dtype(np.int32)), 256)
    assert shape.geometry is None and shape.passes == 1
    assert not [name for name, _ in rt.builds if name == "resident_sort"]


def test_schedule_skew_adds_its_define_only_while_on():
    from histkit.gpu import contract
    from histkit.gpu.device import ScheduleSkew

    skew = ScheduleSkew()
    assert skew.defines() == {}
    skew.depth += 1
    assert skew.defines() == {"HK_SKEW_NS": str(contract.SCHEDULE_SKEW_NS),
                              "HK_STRAGGLE_NS": str(contract.SCHEDULE_STRAGGLE_NS),
                              "HK_SHARED_POISON": str(contract.SCHEDULE_SHARED_POISON)}
    skew.depth -= 1
    assert skew.defines() == {}


def test_every_kernel_with_a_block_barrier_starts_its_schedule_skew_before_the_first():
    # The skewed builds count each thread's barriers from hk_skew_warps() (the
    # stragglers wait after one numbered barrier): a kernel that reaches a
    # barrier without calling it first would count from whatever shared
    # memory held.
    import re

    from histkit.conformance import mutagen
    from histkit.gpu import compiler

    for path in sorted(compiler.kernel_dir().glob("*.cu")):
        units = mutagen.units_of(path.read_text())
        with_barrier = {u.name for u in units if "__syncthreads" in u.body}
        changed = True
        while changed:  # functions that call one with a barrier have one too
            changed = False
            for unit in units:
                if unit.name not in with_barrier and any(
                        re.search(rf"\b{name}\b", unit.body) for name in with_barrier):
                    with_barrier.add(unit.name)
                    changed = True
        for unit in units:
            if not unit.entry or unit.name not in with_barrier:
                continue
            first_barrier = min(m.start() for name in with_barrier | {"__syncthreads"}
                                for m in re.finditer(rf"\b{name}\b", unit.body))
            skew = unit.body.find("hk_skew_warps()")
            assert 0 <= skew < first_barrier, f"{path.name}: {unit.name}"


def fast_plan_on_fake(num_bins: int, static_bytes: int = 0, narrow: bool = False,
                      n: int = 50_000, shared_share: float | None = None):
    """(geometry, shared_bins) the fast launcher plans for n int32 keys on the
    recording fake runtime (the H200's 227 KiB per block), whose kernels
    declare static_bytes of static shared memory."""
    from test_api_calls import FakeRuntime

    from histkit.gpu.launch import histogram as launch_histogram

    rt = FakeRuntime()
    rt.static_shared_bytes = static_bytes
    _, geometry, _, shared_bins, _ = launch_histogram._fast_plan(
        rt, Keys(0x1000, n, np.dtype(np.int32)), num_bins, False, None, shared_share, "",
        narrow=narrow)
    return geometry, int(shared_bins)


@pytest.mark.parametrize("static_bytes", [0, 1024])
def test_the_fast_kernels_one_large_copy_leaves_room_for_the_kernels_static_shared_memory(
        static_bytes):
    # the skewed builds declare static shared memory (their barrier counts):
    # a copy as large as a block may have would not launch beside it
    max_shared = 227 * 1024  # FakeRuntime's, the H200's
    for num_bins in (200_000, 1 << 20):  # past what even 16-bit counters hold
        geometry, shared_bins = fast_plan_on_fake(num_bins, static_bytes)
        assert geometry.shared_bytes + static_bytes <= max_shared
        assert geometry.shared_bytes + static_bytes > max_shared - 8  # all of it
        assert geometry.shared_bytes == (shared_bins + 1) * 4


# H200: 227 KiB of shared memory per block; the budget of two blocks per SM is 100 KiB.
@pytest.mark.parametrize("num_bins,layout", [
    (256, policy.FastLayout(32, 256)),
    (25_000, policy.FastLayout(1, 25_000)),  # one 32-bit copy, two blocks per SM
    (40_000, policy.FastLayout(1, 40_000)),  # one per SM: 32-bit beat 16-bit at two
    (58_111, policy.FastLayout(1, 58_111)),  # the largest 32-bit copy
    (58_112, policy.FastLayout(1, 58_112, narrow=True)),
    (65_536, policy.FastLayout(1, 65_536, narrow=True)),  # all of a 16-bit key's bins
    (116_000, policy.FastLayout(1, 116_000, narrow=True)),
    (1 << 20, policy.FastLayout(1, 227 * 256 - 1)),  # past shared memory: the rest global
])
def test_the_fast_kernel_keeps_as_many_bins_in_shared_memory_as_fit(num_bins, layout):
    assert policy.fast_layout(227 * 1024, num_bins) == layout
    assert layout.shared_bytes <= 227 * 1024


@pytest.mark.parametrize("num_bins,shared_bins,shared_bytes", [
    (3, 3, (2 + 1) * 4),  # the narrow row at small K: bins 0 and 2 share word 0
    (1 << 20, 2 * (227 * 256 - 1), 227 * 1024),  # past what they hold: as many as fit
])
def test_the_narrow_row_forces_sixteen_bit_counters_at_any_k_within_shared_memory(
        num_bins, shared_bins, shared_bytes):
    geometry, got_bins = fast_plan_on_fake(num_bins, narrow=True)
    assert "NARROW_COUNTERS=1" in geometry.kernel and "COPIES=1" in geometry.kernel
    assert (got_bins, geometry.shared_bytes) == (shared_bins, shared_bytes)


@pytest.mark.parametrize("static_bytes", [0, 1024])
def test_sixteen_bit_counters_keep_every_one_of_65536_bins_in_shared_memory(static_bytes):
    geometry, shared_bins = fast_plan_on_fake(65_536, static_bytes)
    assert shared_bins == 65_536 and "NARROW_COUNTERS=1" in geometry.kernel
    assert geometry.shared_bytes == (65_536 // 2 + 1) * 4


def test_each_launcher_takes_the_edge_of_what_it_may_take():
    # the last shape inside each refusal rule runs: one-lane waves, the most
    # bins a block's shared memory holds, the most bins the partitions cover
    from test_api_calls import FakeArray, FakeRuntime

    from histkit.gpu.launch import histogram as launch_histogram
    from histkit.gpu.launch import partitioned as launch_partitioned

    rt = FakeRuntime()
    keys = Keys(0x1000, 10_000, np.dtype(np.int32))
    hist, bad = FakeArray(0x2000, 1, np.uint64), FakeArray(0x3000, 1, np.uint64)
    assert launch_histogram.naive_histogram_one_warp(rt, keys, 8, hist, bad, 1).block == 1
    most = rt.max_shared_per_block // 4
    assert launch_histogram.privatized_geometry(rt, keys.n, most).shared_bytes == most * 4
    with pytest.raises(errors.UnsupportedShape):
        launch_histogram.privatized_geometry(rt, keys.n, most + 1)
    from histkit.gpu import contract

    covered = (1 << contract.PART_LOW_BITS) * contract.MAX_PARTS
    launch_partitioned.partitioned_histogram(rt, keys, covered, hist, bad)
    with pytest.raises(errors.UnsupportedShape):
        launch_partitioned.partitioned_histogram(rt, keys, covered + 1, hist, bad)


def test_the_conformance_runner_accepts_only_the_refusals_a_row_declares():
    # a launcher that refuses what it should run would pass as a column of skips
    import types

    from histkit.conformance.cases import Case
    from histkit.conformance.runner import refusal_allowed
    from histkit.gpu import registry

    rt = types.SimpleNamespace(max_shared_per_block=227 * 1024, sm_count=132, cooperative=True)
    plain, int32 = registry.DEFAULT, registry.INT32_INDEX
    privatized = registry.by_row("privatized")
    assert refusal_allowed(rt, privatized, plain, Case("uniform", 1000, 70_000))
    assert not refusal_allowed(rt, privatized, plain, Case("uniform", 1000, 50_000))
    fits = rt.max_shared_per_block // 4  # the most bins that fit: no refusal
    assert not refusal_allowed(rt, privatized, plain, Case("uniform", 1000, fits))
    assert refusal_allowed(rt, privatized, plain, Case("uniform", 1000, fits + 1))
    for row in ("atomic", "fast", "auto", "sort-stable", "sort-stable-auto", "exclusive-scan",
                "radix-sort"):
        assert not refusal_allowed(rt, registry.by_row(row), plain,
                                   Case("uniform", 1000, 1 << 20)), row
    sort = registry.by_row("sort-stable")
    assert refusal_allowed(rt, sort, int32, Case("uniform", 2**31 + 1, 256))
    assert not refusal_allowed(rt, sort, int32, Case("uniform", 2**31, 256))
    resident = registry.by_row("sort-stable-resident")
    assert not refusal_allowed(rt, resident, plain, Case("uniform", 132 * 4096, 256))
    assert refusal_allowed(rt, resident, plain, Case("uniform", 4_194_305, 256))
    partitioned = registry.by_row("partitioned")
    wide = registry.Variant("64-bin-parts", {"low_bits": 6})
    assert refusal_allowed(rt, partitioned, wide, Case("uniform", 1000, 20_000))
    assert not refusal_allowed(rt, partitioned, plain, Case("uniform", 1000, 20_000))
    assert not refusal_allowed(rt, partitioned, wide, Case("uniform", 1000, 64 * 256))
    assert refusal_allowed(rt, partitioned, wide, Case("uniform", 1000, 64 * 256 + 1))


@pytest.mark.parametrize("label", ["", "auto -> fast: "])
def test_past_2_32_bins_the_fast_launch_hands_over_to_the_atomic_kernel_under_its_label(label):
    # the fast kernel's warp reductions take 32-bit bin numbers
    from test_api_calls import FakeArray, FakeRuntime

    from histkit.gpu.launch import histogram as launch_histogram

    rt = FakeRuntime()
    keys = Keys(0x1000, 10_000, np.dtype(np.int64))
    hist, bad = FakeArray(0x2000, 1, np.uint64), FakeArray(0x3000, 1, np.uint64)
    geometry = launch_histogram.fast_launch(rt, keys, 2**32, hist, bad, False, None, None, label)
    assert geometry.kernel == label + "atomic_histogram"
    assert [name for _, name in rt.compiled] == ["atomic_histogram"]
    below = launch_histogram.fast_launch(rt, keys, 2**32 - 1, hist, bad, False, None, None, label)
    assert below.kernel.startswith(label + "fast_histogram")


@pytest.mark.parametrize("n, num_bins, blocks, layout, stores", [
    (4096, 256, 1, policy.FastLayout(32, 256), True),
    (4096, 256, 2, policy.FastLayout(32, 256), False),  # blocks add into one histogram
    (4096, 1 << 20, 1, policy.FastLayout(1, 58111), False),  # bins past shared: global atomics
    (4096, 65536, 1, policy.FastLayout(1, 65536, narrow=True), True),
    # a 16-bit counter of NARROW_SPILL keys spills into its global bin
    (0x8000 - 1, 65536, 1, policy.FastLayout(1, 65536, narrow=True), True),
    (0x8000, 65536, 1, policy.FastLayout(1, 65536, narrow=True), False),
    (0x8000, 256, 1, policy.FastLayout(32, 256), True),  # 32-bit counters never spill
])
def test_the_fast_kernel_stores_its_counts_only_when_one_block_holds_every_keys_count(
        n, num_bins, blocks, layout, stores):
    from histkit.gpu import contract
    from histkit.gpu.launch.histogram import overwrites_counts

    assert contract.FAST_NARROW_SPILL == 0x8000
    assert overwrites_counts(n, num_bins, blocks, layout) is stores


@pytest.mark.parametrize("bins,num_bins,edges", [
    ([5] * 40 + [9] * 24, 100, (0, 5)),  # the most frequent valid bin
    ([7] * 10 + [100] * 54, 100, (0, 7)),  # a bad key (num_bins or past) is no bin
    ([0] * 64, 100, (0,)),  # the hot bin is bin 0: one edge
    ([2**64 - 1] * 64, 100, (0,)),  # nothing sampled
])
def test_autos_choice_edges_are_every_bin_global_and_the_hot_bin_first_global(bins, num_bins,
                                                                              edges):
    assert policy.choice_edges(np.array(bins, np.uint64).reshape(2, 32), num_bins) == edges
