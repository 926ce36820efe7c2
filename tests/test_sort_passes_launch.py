"""The onesweep passes' launch protocol, on a recording runtime (no GPU): the
buffers, offsets and arguments counting_sort.cu's digit_histograms and
onesweep_scatter read, recomputed here from the kernels' comments. The GPU
judges the sorted result; these pin, in CI, the host side that a slip in
launch/sort.py would break (a counter word off by one, a look-back left
unzeroed, a pass writing where the next does not read)."""

import numpy as np
import pytest
from test_api_calls import FakeArray, FakeRuntime

from histkit.gpu import policy
from histkit.gpu.contract import MAX_KEYS_PER_BLOCK
from histkit.gpu.launch import sort as launch_sort
from histkit.gpu.launch.common import Keys

DIGITS = policy.MAX_DIGITS
FIRST_BAD = 0x77


def sort_on_a_recording_runtime(n, num_bins, dtype=np.int32, full_width=False, grid=None):
    rt = FakeRuntime()
    keys = Keys(0x1000, n, np.dtype(dtype))
    out_keys, out_index = FakeArray(0xB000, n, dtype), FakeArray(0xC000, n, np.int64)
    if full_width:
        launch_sort.radix_sort(rt, keys, out_keys, out_index, [], grid)
    else:
        plan = launch_sort.stable_count(rt, keys, num_bins, FIRST_BAD, [], grid)
        launch_sort.stable_scatter(rt, keys, plan, out_keys, out_index)
    return rt, keys, out_keys, out_index


def events(rt):
    """The memsets and launches in the order they were queued."""
    memsets, launches = iter(rt.memsets), iter(rt.launched)
    return [("memset", next(memsets)) if kind == "memset" else ("launch", next(launches))
            for kind, *_ in rt.log if kind in ("memset", "launch")]


@pytest.mark.parametrize("num_bins,dtype,full_width", [
    (256, np.int32, False), (65536, np.int32, False), (1 << 20, np.int32, False),
    (None, np.int32, True), (None, np.int16, True)])
def test_each_pass_reads_what_the_last_wrote_and_the_last_writes_the_outputs(
        num_bins, dtype, full_width):
    tile = policy.tile_keys(np.dtype(dtype))
    n = 3 * tile + 1  # four tiles, the last of one key
    rt, keys, out_keys, out_index = sort_on_a_recording_runtime(
        n, num_bins, dtype, full_width)
    bits = 8 * np.dtype(dtype).itemsize if full_width else int(np.ceil(np.log2(num_bins)))
    passes = -(-bits // 8)  # a pass per 8-bit digit
    queued = events(rt)
    histogram = [e for kind, e in queued if kind == "launch" and e[0] == "digit_histograms"]
    scatters = [e for kind, e in queued if kind == "launch" and e[0] == "onesweep_scatter"]
    assert len(histogram) == 1 and len(scatters) == passes

    # digit_histograms: every pass's digit starts, each pass's tile counter and
    # the blocks-done word, in one zeroed buffer, blocks-done last
    counters = rt.allocated[0]
    words = passes * DIGITS + passes + 1
    assert counters.n == words
    assert queued[0] == ("memset", (counters.ptr, 0, 8 * words))
    args = histogram[0][2]
    assert args[0] == keys.ptr and int(args[1]) == n and int(args[3]) == passes
    assert args[4] == counters.ptr and args[5] == counters.ptr + 8 * (words - 1)
    if not full_width:  # full-width keys have no bad ones to report
        assert args[6] == FIRST_BAD

    lookback = next(a for a in rt.allocated if a.n == 4 * DIGITS)  # a word a digit a tile
    source_keys, source_index = keys.ptr, 0
    previous = queued.index(("launch", histogram[0]))
    for number, (_, _, args) in enumerate(scatters):
        at = queued.index(("launch", scatters[number]))
        assert queued[at - 1] == ("memset", (lookback.ptr, 0, 8 * lookback.n))
        assert args[0] == source_keys and args[1] == source_index
        assert int(args[4]) == 8 * number  # shift
        assert int(args[6]) == 4  # tiles
        assert args[7] == counters.ptr + 8 * DIGITS * number  # this pass's digit starts
        assert args[8] == counters.ptr + 8 * (passes * DIGITS + number)  # its tile counter
        assert args[9] == lookback.ptr
        last = number == passes - 1
        # never in place, never onto the input; the last pass writes the outputs
        assert args[10] not in (source_keys, keys.ptr) and args[11] != source_index
        if last:
            assert (args[10], args[11]) == (out_keys.ptr, out_index.ptr)
        # a pass before the last leaves skipped bad keys' slots all ones for
        # the next to skip (full-width keys have none)
        fills = [e for kind, e in queued[previous:at] if kind == "memset"
                 and e[0] == args[10] and e[1] == 0xFF]
        assert len(fills) == (0 if last or full_width else 1)
        if fills:
            assert fills[0][2] == n * np.dtype(dtype).itemsize
        source_keys, source_index, previous = args[10], args[11], at
    # counters and look-back, and a spare pair only when there is a pass to
    # ping-pong with (10 bytes a key the memory estimate counts only then)
    assert len(rt.allocated) == (2 if passes == 1 else 4)


def test_a_forced_grid_too_small_for_32_bit_counters_grows_the_digit_count():
    n = MAX_KEYS_PER_BLOCK + 1  # one block's shared counters would overflow
    rt, *_ = sort_on_a_recording_runtime(n, 256, np.int8, grid=1)
    (_, geometry, _), = [e for e in rt.launched if e[0] == "digit_histograms"]
    assert geometry.grid == 2


def test_the_chapters_count_and_scan_returns_every_launch_it_queued():
    rt = FakeRuntime()
    keys = Keys(0x1000, 1 << 20, np.dtype(np.int32))
    cursor, geometries = launch_sort.atomic_cursor_count(rt, keys, 1000, FakeArray(0x8, 1,
                                                                                   np.uint64), [])
    assert [g.kernel for g in geometries] == [name for name, *_ in rt.launched]
    assert geometries[0].kernel == "atomic_histogram" and len(geometries) >= 2
