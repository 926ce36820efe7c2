import numpy as np
import pytest
from conftest import DISTRIBUTIONS, EDGE_SIZES
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from histkit import oracles
from histkit.distributions import make_keys


def bincount(keys, num_bins):
    return np.bincount(np.asarray(keys, dtype=np.int64), minlength=num_bins)


@pytest.mark.parametrize("n", EDGE_SIZES)
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("num_bins", [1, 10, 100])
def test_histogram_equals_bincount_on_every_dtype(key_dtype, n, distribution, num_bins):
    keys = make_keys(distribution, n, num_bins, seed=n, dtype=key_dtype)
    got = oracles.histogram(keys, num_bins)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, bincount(keys, num_bins),
                                  err_msg=f"{distribution} N={n} K={num_bins}")


@pytest.mark.parametrize("num_bins", [10, 256, 4096, 4097, 65536])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_histogram_equals_bincount_on_inputs_large_enough_to_use_threads(idle_machine,
                                                                         distribution, num_bins):
    keys = make_keys(distribution, 1 << 20, num_bins, seed=3)
    got = oracles.histogram(keys, num_bins)
    assert got.dtype == np.int64  # whatever the chunks counted in
    np.testing.assert_array_equal(got, bincount(keys, num_bins))


@pytest.mark.parametrize("num_bins", [4097, 65536, (1 << 22), (1 << 22) + 1])
def test_many_bins_on_32_bit_chunk_counters_equal_bincount_and_report_the_first_bad_key(
        idle_machine, num_bins):
    # Up to 2^22 bins each chunk counts in uint32 and the chunks are summed in
    # int64; one hot bin past 2^16 keys per chunk would show a narrow total.
    keys = make_keys("uniform", 1 << 21, num_bins, seed=4)
    keys[: 1 << 17] = num_bins - 1
    got = oracles.histogram(keys, num_bins)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, bincount(keys, num_bins))
    keys[(1 << 21) - 3] = num_bins  # in the last chunk, after an earlier one below
    keys[1_500_001] = -1
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.histogram(keys, num_bins)
    assert caught.value.index == 1_500_001


def test_histogram_reads_strided_and_reversed_views_without_copying_wrongly():
    base = make_keys("uniform", 300_001, 77, seed=5, dtype=np.int16)
    for view in (base[::3], base[::-1], base[5:-7:2]):
        np.testing.assert_array_equal(oracles.histogram(view, 77), bincount(view, 77))


def test_histogram_accepts_readonly_and_big_endian_keys():
    keys = make_keys("zipf", 5000, 50, seed=1)
    readonly = keys.copy()
    readonly.flags.writeable = False
    np.testing.assert_array_equal(oracles.histogram(readonly, 50), bincount(keys, 50))
    np.testing.assert_array_equal(oracles.histogram(keys.astype(">i4"), 50), bincount(keys, 50))


def test_histogram_counts_a_hot_bin_exactly_under_every_lane_layout():
    # One bin far more often than the rest, at every phase of the 4-way unroll.
    for offset in range(5):
        keys = np.zeros(1_000_003 + offset, dtype=np.int32)
        keys[offset::97] = 3
        np.testing.assert_array_equal(oracles.histogram(keys, 4), bincount(keys, 4))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.int64, st.integers(0, 3000), elements=st.integers(0, 40)),
       st.integers(41, 300))
def test_histogram_equals_bincount_on_arbitrary_keys(keys, num_bins):
    np.testing.assert_array_equal(oracles.histogram(keys, num_bins), bincount(keys, num_bins))


def test_privatized_histogram_reproduces_the_chapters_128_global_atomics():
    keys = np.arange(2048) % 16
    counts, atomics = oracles.privatized_histogram(keys, 16, block_size=256)
    np.testing.assert_array_equal(counts, np.full(16, 128))
    assert atomics == 128  # the chapter: 8 blocks x 16 buckets


@pytest.mark.parametrize("n,block_size,num_blocks,expected_atomics",
                         [(0, 256, None, 0), (1, 256, None, 10), (257, 256, None, 20),
                          (10_000, 128, 3, 30), (5, 256, 7, 70)])
def test_privatized_global_atomics_are_blocks_times_bins_whatever_the_data(
        n, block_size, num_blocks, expected_atomics):
    keys = make_keys("uniform", n, 10, seed=2)
    counts, atomics = oracles.privatized_histogram(keys, 10, block_size, num_blocks)
    assert atomics == expected_atomics
    np.testing.assert_array_equal(counts, bincount(keys, 10))


def test_a_thread_cap_set_by_a_caller_bounds_the_oracles_threads_and_ends_with_it(monkeypatch):
    from histkit.oracles import _threads

    monkeypatch.setattr(_threads, "_cpus", lambda: 8)
    monkeypatch.setattr(_threads, "_others_running", lambda: 0)  # no one else runs
    assert _threads.idle_cpus(1 << 24) == 8
    with _threads.at_most(2):
        assert _threads.idle_cpus(1 << 24) == 2
        with _threads.at_most(1):
            assert _threads.idle_cpus(1 << 24) == 1
        assert _threads.idle_cpus(1 << 24) == 2
    assert _threads.idle_cpus(1 << 24) == 8


def _fake_proc(monkeypatch, runnable: int, running_here: int) -> list[str]:
    """/proc/loadavg reporting `runnable` runnable threads, this process running
    `running_here` of them; returns the list of files read."""
    from histkit.oracles import _threads

    reads: list[str] = []

    def read(path):
        reads.append(path)
        return f"0.50 0.40 0.30 {runnable}/300 4242\n".encode()

    monkeypatch.setattr(_threads, "_read", read)
    monkeypatch.setattr(_threads, "_running_here", lambda: running_here)
    monkeypatch.setattr(_threads, "_cpus", lambda: 8)
    monkeypatch.setattr(_threads, "_idle_look_at", float("-inf"))
    return reads


def test_other_processes_runnable_threads_take_cpus_from_the_oracles(monkeypatch):
    from histkit.oracles import _threads

    _fake_proc(monkeypatch, runnable=5, running_here=2)  # 3 threads of others
    assert _threads.idle_cpus(1 << 24) == 5
    _fake_proc(monkeypatch, runnable=40, running_here=1)
    assert _threads.idle_cpus(1 << 24) == 1  # never fewer than one
    assert _threads.idle_cpus(1 << 10) == 8  # too few keys to look


def test_a_look_that_finds_the_machine_idle_is_kept_for_a_moment(monkeypatch):
    from histkit.oracles import _threads

    clock = [100.0]
    monkeypatch.setattr(_threads.time, "monotonic", lambda: clock[0])
    reads = _fake_proc(monkeypatch, runnable=1, running_here=1)
    assert _threads.idle_cpus(1 << 24) == 8 and len(reads) == 1
    monkeypatch.setattr(_threads, "_running_here", lambda: 0)  # another process starts
    clock[0] += _threads.LOOK_EVERY_SECONDS * 0.9
    assert _threads.idle_cpus(1 << 24) == 8 and len(reads) == 1  # kept
    # a kept look is not renewed by using it: 1.25 windows after the look, a new one
    clock[0] += _threads.LOOK_EVERY_SECONDS * 0.35
    assert _threads.idle_cpus(1 << 24) == 7 and len(reads) == 2  # looked again


def test_a_look_that_finds_others_running_is_taken_again_at_the_next_call(monkeypatch):
    # (such a look can be wrong for a moment: it is not kept)
    from histkit.oracles import _threads

    clock = [100.0]
    monkeypatch.setattr(_threads.time, "monotonic", lambda: clock[0])
    reads = _fake_proc(monkeypatch, runnable=3, running_here=1)
    assert _threads.idle_cpus(1 << 24) == 6 and len(reads) == 1
    monkeypatch.setattr(_threads, "_running_here", lambda: 3)  # they were this process's
    assert _threads.idle_cpus(1 << 24) == 8 and len(reads) == 2


def test_where_the_load_cannot_be_read_every_cpu_is_taken(monkeypatch):
    from histkit.oracles import _threads

    _fake_proc(monkeypatch, runnable=3, running_here=1)

    def unreadable(path):
        raise OSError(f"no {path} here")

    monkeypatch.setattr(_threads, "_read", unreadable)
    assert _threads.idle_cpus(1 << 24) == 8


def test_this_process_running_threads_are_read_from_proc():
    # the calling thread itself is running while it reads
    from histkit.oracles import _threads

    assert _threads._running_here() >= 1


def assert_first_bad_key_named(keys, num_bins, first):
    """Both counting oracles name the key at index first, and its value."""
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.histogram(keys, num_bins)
    assert (caught.value.index, caught.value.value) == (first, int(keys[first]))
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.counting_sort(keys, num_bins)
    assert caught.value.index == first


# Up to 16 bins, contiguous 32-bit keys are counted two to a counter while every
# key is below 16 (_count.count_by_pairs); keys in [num_bins, 16) pass that test
# and are found when the pairs are folded.
@pytest.mark.parametrize("key_dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("num_bins", [1, 2, 10, 15, 16])
def test_keys_counted_by_pairs_equal_bincount_on_every_distribution(key_dtype, num_bins):
    for distribution in DISTRIBUTIONS:
        keys = make_keys(distribution, 20_003, num_bins, seed=num_bins, dtype=key_dtype)
        assert np.array_equal(oracles.histogram(keys, num_bins),
                              np.bincount(keys.astype(np.int64), minlength=num_bins)), distribution


@pytest.mark.parametrize("key_dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("num_bins", [1, 10, 15])
@pytest.mark.parametrize("bad_keys", [
    {5001: "K"},                 # just past the bins, below 16: found at the fold
    {5001: 15},                  # the largest key the pair index takes
    {3000: 16, 5001: "K"},       # one that stops the pairs first, then one they passed
    {5001: "K", 7000: 16},       # one they passed, then one that stops them
    {4096: "K", 4097: 200},      # two in one group of eight
    {20_002: "K"},               # in the tail the pairs leave to the plain loop
])
def test_the_first_bad_key_is_named_whether_the_pairs_pass_it_or_stop_at_it(
        key_dtype, num_bins, bad_keys):
    keys = make_keys("uniform", 20_003, num_bins, seed=3, dtype=key_dtype)
    for index, value in bad_keys.items():
        keys[index] = num_bins if value == "K" else value
    assert_first_bad_key_named(keys, num_bins, min(bad_keys))


@pytest.mark.parametrize("index", [5000, 5001])  # the low and the high key of a load
@pytest.mark.parametrize("value", [16, 17, 31, 2**31 + 16])
def test_a_key_of_16_or_more_among_zeros_stops_the_pairs_and_is_named(index, value):
    # zeros keep every pair index small: only the mask can tell 16 from 0
    keys = np.zeros(20_003, dtype=np.uint32)
    keys[index] = value
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.histogram(keys, 10)
    assert (caught.value.index, caught.value.value) == (index, value)


# With lanes (17 to 4096 bins), contiguous 32-bit keys are checked eight at a
# time against the bins rounded up to a power of two (_count.lane_width); a key
# in [num_bins, width) is counted in the lanes' spare counters and found after
# the loop, a key of width or more (or a negative one) stops it.
@pytest.mark.parametrize("key_dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("num_bins", [17, 200, 256, 3000])
@pytest.mark.parametrize("bad_keys", [
    {5001: "K"},                  # just past the bins: a spare counter
    {5001: "W-1"},                # the last spare counter
    {3000: "W", 5001: "K"},       # one that stops the loop, then one it passed
    {5001: "K", 7000: "W"},       # one it passed, then one that stops it
    {4096: "K", 4097: "HUGE"},    # two in one group of eight
    {20_002: "K"},                # in the tail the loop leaves to the plain one
])
def test_the_first_bad_key_is_named_whether_the_lanes_spare_counters_take_it_or_not(
        key_dtype, num_bins, bad_keys):
    width = 1 << (num_bins - 1).bit_length()
    # (W-1 is a bin, not a bad key, where num_bins is a power of two)
    values = {"K": num_bins, "W": width, "W-1": max(width - 1, num_bins),
              "HUGE": -1 if key_dtype == np.int32 else 2**31 + 5}
    keys = make_keys("uniform", 20_003, num_bins, seed=5, dtype=key_dtype)
    for index, value in bad_keys.items():
        keys[index] = values[value]
    assert_first_bad_key_named(keys, num_bins, min(bad_keys))
    keys[list(bad_keys)] = 0  # and without them, the counts of every lane
    assert np.array_equal(oracles.histogram(keys, num_bins),
                          np.bincount(keys.astype(np.int64), minlength=num_bins))
