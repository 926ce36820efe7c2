"""The grids and tiles each launcher plans, pinned on the recording fake runtime.

A grid too small or too large still counts right (every kernel walks its
keys grid-stride, and the conformance suite runs forced grids), so only
speed shows a slip here: these tests state each launch-shape decision as the
numbers it gives on an H200-like device (132 SMs; the fake says 2 resident
blocks per SM for every kernel), written out rather than recomputed from
the constants they come from.
"""

import numpy as np
import pytest
from test_api_calls import FakeArray, FakeRuntime
from test_gpu_layout import fast_plan_on_fake

from histkit.gpu.launch import common, partitioned, scan, sort
from histkit.gpu.launch import histogram as launch_histogram
from histkit.gpu.launch.common import Keys

SMS = 132


def keys_of(n, dtype=np.int32):
    return Keys(0x1000, n, np.dtype(dtype))


@pytest.mark.parametrize("n,blocks", [(1000, 4), (10_000, 40), (10**9, SMS * 8)])
def test_the_chapter_kernels_take_a_block_per_256_keys_up_to_8_per_sm(n, blocks):
    rt = FakeRuntime()
    assert common.grid_stride_blocks(rt, n, None) == blocks
    assert launch_histogram.privatized_geometry(rt, n, 256).grid == blocks


@pytest.mark.parametrize("n,blocks", [
    (50_000, 4),  # a block per 16384 keys (1024 threads x 16) ...
    (1 << 28, SMS * 2),  # ... up to one wave of resident blocks
])
def test_the_fast_kernel_takes_a_block_per_16384_keys_up_to_one_resident_wave(n, blocks):
    geometry, _ = fast_plan_on_fake(256, n=n)
    assert geometry.grid == blocks


@pytest.mark.parametrize("share,shared_bins", [(None, 256), (0.5, 128), (0.0, 0)])
def test_a_forced_shared_share_keeps_that_share_of_the_bins_in_shared_memory(share,
                                                                          shared_bins):
    # the conformance rows that reach the fast kernel's global paths at small K
    _, got = fast_plan_on_fake(256, shared_share=share)
    assert got == shared_bins


@pytest.mark.parametrize("n,blocks", [(10_000, 5), (1 << 28, SMS * 2)])
def test_the_sorts_digit_histograms_take_a_block_per_2048_keys_up_to_one_wave(n, blocks):
    shape = sort._sort_shape(FakeRuntime(), keys_of(n), 256, None, False, np.int64)
    assert shape.histogram.grid == blocks


@pytest.mark.parametrize("n,tiles", [(2048, 1), (2049, 2), (1 << 20, 512)])
def test_a_scan_tile_is_256_threads_of_8_values(n, tiles):
    planned_tiles, _, (_, geometry), _ = scan._scan_plan(FakeRuntime(), n, 256, 8)
    assert planned_tiles == tiles and geometry.grid == tiles


@pytest.mark.parametrize("n,tiles,split_blocks", [
    (100_000, 13, 13),  # a tile is 1024 threads x 8 keys: a block per tile ...
    (1 << 28, 32768, SMS * 2),  # ... up to one resident wave
])
def test_the_partitioned_kernel_tiles_8192_keys_and_counts_in_one_wave(n, tiles,
                                                                    split_blocks):
    parts = 64  # 2^20 bins in partitions of 2^14
    split, _, merge, entries, scalars, _ = partitioned._partitioned_plan(
        FakeRuntime(), keys_of(n), 1 << 20, None, 14)[1:]
    assert split.grid == split_blocks
    assert merge.grid == SMS * 2 and merge.shared_bytes == (1 << 14) * 4
    assert int(scalars[-1]) == tiles and entries == parts * tiles


@pytest.mark.parametrize("num_bins,parts", [((1 << 20) + 1, 65), (3 << 14, 3), (5, 1)])
def test_the_last_partition_of_bins_is_counted_when_it_is_partial(num_bins, parts):
    # partitions of 2^14 bins: ceil(K / 2^14) of them, or the top bins' keys
    # would be partitioned nowhere
    tiles = 13
    *_, entries, scalars, _ = partitioned._partitioned_plan(
        FakeRuntime(), keys_of(100_000), num_bins, None, 14)
    assert int(scalars[2]) == parts and entries == parts * tiles


def test_the_choosing_kernel_reads_64_runs_of_32_in_one_block_of_1024():
    rt = FakeRuntime()  # its copies read back zeros: every sampled bin 0
    runs, verdicts = partitioned.auto_choice_probe(rt, keys_of(1 << 26), 1 << 20)
    shared_bins = (227 * 1024) // 4 - 1
    assert runs.shape == (64, 32) and [told for _, told in verdicts] == [shared_bins, 0]
    (name, geometry, args), _ = rt.launched
    assert name == "auto_choice" and (geometry.grid, geometry.block) == (1, 1024)
    # it writes 64 x 32 bins and one choice word: the buffers it is handed hold them
    sample, choice = ([a for a in rt.allocated if a.ptr == ptr] for ptr in args[-2:])
    assert sample[0].n == 64 * 32 and choice[0].n == 1
    assert int(args[3]) == shared_bins and int(args[4]) == 1 << 20


def test_the_choice_probe_tells_the_kernel_each_edge_of_the_sample_after_the_layouts_own(
        monkeypatch):
    rt = FakeRuntime()
    hot, codes = 70_001, iter([2, 1, 0])

    def read_back(ptr, host):
        host[...] = hot if host.dtype == np.uint64 else next(codes)
        return host

    monkeypatch.setattr(rt, "copy_to_host", read_back)
    runs, verdicts = partitioned.auto_choice_probe(rt, keys_of(1 << 26), 1 << 20)
    # each verdict is the code read back after the launch told that shared_bins
    assert verdicts == ((2, (227 * 1024) // 4 - 1), (1, 0), (0, hot))
    told = [int(args[3]) for name, _, args in rt.launched]
    assert told == [(227 * 1024) // 4 - 1, 0, hot]
    # the sample is written once, by the first launch; the edges' choices alone after
    assert [args[-2] for _, _, args in rt.launched][1:] == [0, 0]


def test_auto_without_a_sample_launches_the_fast_kernel_alone_ungated():
    rt = FakeRuntime()
    hist = FakeArray(0x9000, 1 << 20, np.uint64)
    geometry = partitioned.auto_histogram(rt, keys_of(1 << 20), 1 << 20, hist,
                                          FakeArray(0x8, 1, np.uint64))
    assert [name for name, _, _ in rt.launched] == ["fast_histogram"]
    assert "HK_GATE" not in rt.builds[-1][1]
    assert geometry.kernel.startswith("auto -> fast: fast_histogram")


def test_sampled_auto_queues_the_partition_pass_first_and_zeroes_once_before_any_add():
    # The host never waits for the choice: the choosing kernel, then each
    # candidate's kernels built with HK_GATE (its AUTO_* code: fast 0,
    # fast-hold 1, partitioned 2) and handed the choice word last. The pass
    # that reads every key comes right behind the choice (an idle GPU starts
    # it while the host queues the rest).
    rt = FakeRuntime()
    hist = FakeArray(0x9000, 1 << 20, np.uint64)
    geometry = partitioned.auto_histogram(rt, keys_of(1 << 26), 1 << 20, hist,
                                          FakeArray(0x8, 1, np.uint64))
    names = [name for name, _, _ in rt.launched]
    # (524288 table entries: 256 scan tiles, whose sums are one tile)
    assert names == ["auto_choice", "partition_tiles", "scan_tile_sums", "scan_tiles",
                     "scan_tiles", "count_partitions", "fast_histogram", "fast_histogram"]
    choice_word = rt.launched[0][2][-1]
    gated = {(name, defines.get("HK_GATE"), defines.get("HOLD_RUNS"))
             for name, defines in rt.builds if name != "auto_choice"}
    assert gated == {("fast_histogram", "0", "0"), ("fast_histogram", "1", "1"),
                     ("partition_tiles", "2", None), ("scan_tile_sums", "2", None),
                     ("scan_tiles", "2", None), ("count_partitions", "2", None)}
    assert all(args[-1] == choice_word for _, _, args in rt.launched[1:])
    # One zeroing of the counts, before every launch that adds into them
    # (count_partitions and both fast candidates), after the partition pass
    # (which does not touch them).
    log = [entry[0] if entry[0] == "memset" else entry[1]
           for entry in rt.log if entry[0] in ("launch", "memset")]
    assert [e for e in rt.log if e[0] == "memset"] == [("memset", 0, (1 << 20) * 8)]
    zeroed = log.index("memset")
    assert log.index("partition_tiles") < zeroed
    assert all(log.index(name) > zeroed for name in ("count_partitions", "fast_histogram"))
    assert geometry.kernel.startswith("auto -> chosen on the device: fast_histogram")


class _Build:
    """A stand-in for a compiled kernel: a name and a raw handle."""

    def __init__(self, name: str, handle: int):
        self.name, self.handle = name, handle

    def __repr__(self) -> str:
        return self.name


def _launch_bookkeeping_runtime(per_call_calls=None):
    from histkit.gpu.device import PerCallPath, Runtime

    rt = Runtime.__new__(Runtime)  # no device: only the launch bookkeeping
    rt.stream, rt.handle, rt._ready = "stream", 77, {}
    rt.per_call = PerCallPath(per_call_calls)
    rt.opted, rt.launched = [], []
    rt.allow_shared = lambda kernel, nbytes: rt.opted.append((kernel.name, nbytes))
    rt._config = lambda geometry: ("config", geometry.grid)
    rt._launch = lambda stream, config, kernel, *args: rt.launched.append(
        (kernel.name, config, args))
    return rt


def test_a_repeated_launch_opts_in_to_shared_memory_and_builds_its_config_once():
    from histkit.gpu.geometry import Geometry

    rt = _launch_bookkeeping_runtime()
    big = Geometry("fast_histogram", 4, 1024, 100_000)
    int32_build, uint8_build = _Build("int32 build", 11), _Build("uint8 build", 12)
    for _ in range(3):
        rt.launch(int32_build, big, 1, 2)
    # Another build of the same kernel (another key dtype) has the same geometry,
    # but its own shared-memory limit: it must opt in for itself.
    rt.launch(uint8_build, big, 3)
    assert rt.opted == [("int32 build", 100_000), ("uint8 build", 100_000)]
    assert rt.launched[-1] == ("uint8 build", ("config", 4), (3,)) and len(rt.launched) == 4


class _RecordingCalls:
    """The C path's launch, recorded; packs only integers, as DriverCalls does."""

    def __init__(self, status: int = 0):
        self.status, self.launches = status, []

    def launch(self, kernel, grid, block, shared_bytes, stream, cooperative, args):
        if not all(isinstance(a, int | np.integer) for a in args):
            raise TypeError("not an integer")
        self.launches.append((kernel, grid, block, shared_bytes, stream, cooperative, args))
        return self.status


def test_the_c_path_launches_the_kernels_handle_on_the_runtimes_stream_with_its_geometry():
    from histkit.gpu.geometry import Geometry

    calls = _RecordingCalls()
    rt = _launch_bookkeeping_runtime(calls)
    rt.launch(_Build("resident_sort", 5), Geometry("resident_sort", 132, 512, 4096,
                                                   cooperative=True), 1, np.int64(2))
    assert calls.launches == [(5, 132, 512, 4096, 77, True, (1, np.int64(2)))]
    assert rt.launched == [] and rt.opted == [("resident_sort", 4096)]


def test_an_argument_the_c_path_cannot_pack_goes_through_cuda_core():
    from histkit.gpu.geometry import Geometry

    calls = _RecordingCalls()
    rt = _launch_bookkeeping_runtime(calls)
    rt.launch(_Build("k", 5), Geometry("k", 1, 32), 1, np.float32(0.5))
    assert calls.launches == [] and rt.launched == [("k", ("config", 1), (1, np.float32(0.5)))]


def test_a_failed_launch_on_the_c_path_names_the_geometry_and_the_cuda_error():
    pytest.importorskip("cuda.bindings")
    from histkit.gpu.errors import CudaError
    from histkit.gpu.geometry import Geometry

    rt = _launch_bookkeeping_runtime(_RecordingCalls(status=720))
    with pytest.raises(CudaError, match=r"launching k<<<1, 32, 0>>> failed: "
                                        r"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"):
        rt.launch(_Build("k", 5), Geometry("k", 1, 32), 1)


# 32-bit shared counters: no block may count 2^32 keys, whatever grid is forced.
PAST_TWO_BLOCKS_OF_KEYS = 2 * (2**32 - 1) + 1


def test_a_forced_grid_too_small_for_32_bit_counters_grows_to_ceil_n_over_2_32():
    rt = FakeRuntime()
    keys = keys_of(PAST_TWO_BLOCKS_OF_KEYS, np.uint8)
    assert launch_histogram.privatized_geometry(rt, keys.n, 256, num_blocks=1).grid == 3
    plan = launch_histogram._fast_plan(rt, keys, 256, False, 1, None, "")
    assert plan[1].grid == 3


def test_the_privatized_kernel_counts_its_global_atomics_only_when_asked():
    rt = FakeRuntime()
    hist, slot = rt.empty(256, np.uint64), rt.empty(1, np.uint64)
    launch_histogram.privatized_histogram(rt, keys_of(10_000), 256, hist, slot)
    launch_histogram.privatized_histogram(rt, keys_of(10_000), 256, hist, slot,
                                          atomics_issued=rt.empty(1, np.uint64))
    counting = [dict(defines).get("COUNT_GLOBAL_ATOMICS") for _, defines in rt.builds]
    assert counting == [None, "1"]


@pytest.mark.parametrize("ptr, n, head", [(0x1000, 100, 0), (0x1004, 100, 3), (0x1004, 2, 2),
                                          (0x1002, 100, 100)])
def test_the_fast_kernels_scalar_head_reaches_the_first_aligned_vector_and_no_further(
        ptr, n, head):
    # misaligned int32 keys (ptr % 4 != 0) are all read one by one
    assert launch_histogram.vector_head(ptr, n, 4) == head


@pytest.mark.parametrize("n,num_bins,path", [
    (1, 256, "rank_sort"),
    (4096, 256, "rank_sort"),  # one resident pass beats n^2 comparisons past 2^12 keys ...
    (4097, 256, "resident_sort"),
    (8192, 65536, "rank_sort"),  # ... two only past 2^13
    (8193, 65536, "resident_sort"),
])
def test_the_stable_sort_takes_rank_sort_up_to_4096_keys_at_one_digit_8192_at_two(
        n, num_bins, path):
    from histkit.gpu import registry

    rt = FakeRuntime()
    out_keys, out_index = FakeArray(0x20000, n, np.int32), FakeArray(0x40000, n, np.int64)
    registry.serving("counting_sort", True).run(rt, keys_of(n), num_bins, out_keys, out_index,
                                                FakeArray(0x8, 1, np.uint64), [])
    assert [name.split("[")[0] for name, _, _ in rt.launched] == [path]


def test_rank_sort_takes_a_block_of_8_warps_per_32_keys_and_refuses_past_8192_keys():
    from histkit.gpu.errors import UnsupportedShape
    from histkit.gpu.launch import rank

    rt = FakeRuntime()
    slot = FakeArray(0x8, 1, np.uint64)
    out_keys, out_index = FakeArray(0x20000, 8192, np.int32), FakeArray(0x40000, 8192, np.int64)
    geometry = rank.rank_sort(rt, keys_of(4099), 300, out_keys, out_index, slot.ptr)
    assert (geometry.grid, geometry.block, geometry.shared_bytes) == (129, 256, 0)
    _, _, arguments = rt.launched[-1]
    assert [int(a) for a in arguments] == [0x1000, 4099, 300, slot.ptr, 0x20000, 0x40000]
    with pytest.raises(UnsupportedShape, match="1 to 8192 keys"):
        rank.rank_sort(rt, keys_of(8193), 300, out_keys, out_index, slot.ptr)
    with pytest.raises(UnsupportedShape, match="num_bins <= 4294967294"):
        rank.rank_sort(rt, keys_of(100), 2**32 - 1, out_keys, out_index, slot.ptr)
    with pytest.raises(UnsupportedShape, match="1 to 8192 keys"):  # no grid of 0 blocks
        rank.rank_sort(rt, keys_of(0), 300, out_keys, out_index, slot.ptr)
    rank.rank_sort(rt, keys_of(8192), 2**32 - 2, out_keys, out_index, slot.ptr)  # its largest
    assert rt.launched[-1][1].grid == 256


def test_the_rank_rows_refusals_are_exactly_what_rank_sort_cannot_take():
    # the conformance runner FAILs any other refusal (Kernel.may_refuse)
    from histkit.gpu import registry

    may_refuse = registry.by_row("sort-stable-rank").may_refuse
    rt, int32 = FakeRuntime(), np.dtype(np.int32)
    assert [may_refuse(rt, n, 256, int32, {}) for n in (0, 1, 8192, 8193)] == [
        True, False, False, True]
    assert [may_refuse(rt, 100, k, int32, {}) for k in (2**32 - 2, 2**32 - 1)] == [False, True]
