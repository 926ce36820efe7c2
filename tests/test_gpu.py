"""histkit.gpu against the oracles on a real GPU (marker ``gpu``).

Without a GPU every test here skips with the reason, except the ones that pin
what happens without one.
"""

import re

import numpy as np
import pytest

from histkit import gpu, oracles
from histkit.distributions import make_keys

REASON = gpu.gpu_unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")
pytestmark = pytest.mark.gpu

CASES = [("uniform", 100_003, 256), ("onebin", 65_537, 16), ("zipf", 1 << 20, 4096),
         ("sorted", 33, 10), ("round-robin", 1 << 18, 65536), ("uniform", 5000, 1 << 20),
         # many bins: the partitioned kernel, and two or three sort digits
         ("uniform", 3_000_017, 1 << 20), ("zipf", 500_001, 3 * 16384 + 5),
         ("onebin", 1 << 20, 1 << 20), ("sorted", 70_000, 257), ("uniform", 100_000, 1 << 22)]


@pytest.mark.skipif(REASON is None, reason="a GPU is present")
def test_without_a_gpu_calls_raise_gpu_unavailable_naming_why():
    with pytest.raises(gpu.GpuUnavailableError) as caught:
        gpu.histogram(np.arange(4), 4)
    assert str(caught.value)


@needs_gpu
@pytest.mark.parametrize("method", ["auto", "atomic", "privatized", "partitioned"])
@pytest.mark.parametrize("distribution,n,num_bins", CASES)
def test_exact_methods_equal_the_oracle(method, distribution, n, num_bins):
    keys = make_keys(distribution, n, num_bins, seed=n)
    if method == "privatized" and num_bins > 50_000:
        pytest.skip("privatized keeps every bin in one block's shared memory")
    got = gpu.histogram(keys, num_bins, method=method)
    assert isinstance(got, np.ndarray) and got.dtype == np.int64
    np.testing.assert_array_equal(got, oracles.histogram(keys, num_bins))


@needs_gpu
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_every_key_dtype_and_misaligned_start(dtype):
    keys = make_keys("uniform", 10_007, 100, seed=3, dtype=dtype)
    for view in (keys, keys[1:], keys[3:]):
        np.testing.assert_array_equal(gpu.histogram(view, 100), oracles.histogram(view, 100))


@needs_gpu
def test_partitioned_names_its_bin_limit():
    with pytest.raises(ValueError, match=r"num_bins <= 4194304; got 4194305"):
        gpu.histogram(np.arange(10), (1 << 22) + 1, method="partitioned")
    keys = np.array([0, (1 << 22) + 3], np.int64)  # auto falls back to the fast kernel
    np.testing.assert_array_equal(gpu.histogram(keys, (1 << 22) + 4),
                                  oracles.histogram(keys, (1 << 22) + 4))


@needs_gpu
@pytest.mark.parametrize("distribution", ["uniform", "onebin", "sorted"])
def test_auto_on_many_bins_and_keys_equals_the_oracle_whichever_kernel_it_samples(distribution):
    keys = make_keys(distribution, 1 << 25, 1 << 20, seed=8)  # auto samples from 2^25 keys
    np.testing.assert_array_equal(gpu.histogram(keys, 1 << 20),
                                  oracles.histogram(keys, 1 << 20))


@needs_gpu
@pytest.mark.parametrize("num_bins", [1 << 20, 40_000])
def test_partitioned_bad_key_in_a_later_tile_raises_the_first_index(num_bins):
    keys = make_keys("uniform", 100_000, num_bins, seed=9)
    keys[99_999] = -5
    keys[60_000] = num_bins
    with pytest.raises(ValueError, match=rf"index 60000 is {num_bins}, outside"):
        gpu.histogram(keys, num_bins, method="partitioned")


@needs_gpu
def test_naive_method_never_overcounts():
    keys = make_keys("onebin", 1 << 20, 8, seed=0)
    got = gpu.histogram(keys, 8, method="naive")
    assert np.all(got <= oracles.histogram(keys, 8))


@needs_gpu
@pytest.mark.parametrize("method", ["auto", "atomic", "privatized", "partitioned", "naive"])
def test_an_out_of_range_key_raises_the_oracles_error(method):
    keys = make_keys("uniform", 300_000, 50, seed=1)
    keys[123_456] = 50
    keys[200_000] = -1
    with pytest.raises(ValueError, match=r"index 123456 is 50, outside \[0, 50\)"):
        gpu.histogram(keys, 50, method=method)


@needs_gpu
@pytest.mark.parametrize("distribution,n,num_bins", CASES)
def test_stable_counting_sort_equals_the_oracle(distribution, n, num_bins):
    keys = make_keys(distribution, n, num_bins, seed=n)
    got_keys, got_index = gpu.counting_sort(keys, num_bins)
    want_keys, want_index = oracles.counting_sort(keys, num_bins)
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got_index, want_index)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("num_bins", [200, 1000, 70_000])
def test_stable_sort_of_every_dtype_over_one_to_three_digits(dtype, num_bins):
    high = min(num_bins, int(np.iinfo(dtype).max) + 1)
    keys = np.random.default_rng(num_bins).integers(0, high, 50_001).astype(dtype)
    got_keys, got_index = gpu.counting_sort(keys, num_bins)
    want_keys, want_index = oracles.counting_sort(keys, num_bins)
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got_index, want_index)


@needs_gpu
def test_a_sort_whose_tiles_all_fit_runs_resident_and_a_larger_one_onesweep():
    from histkit.gpu.device import runtime
    from histkit.gpu.launch import resident as launch_resident
    from histkit.gpu.launch.common import Keys

    rt = runtime()
    small = Keys(0, 1 << 16, np.dtype(np.int32))
    large = Keys(0, 1 << 26, np.dtype(np.int32))  # 16384 tiles: never all at once
    assert launch_resident.resident_fits(rt, small, 256) == rt.cooperative
    assert not launch_resident.resident_fits(rt, large, 256)


@needs_gpu
def test_a_cooperative_grid_too_large_to_be_resident_is_refused_by_name():
    # A grid whose blocks cannot all be resident at once is refused (the
    # driver says COOPERATIVE_LAUNCH_TOO_LARGE; cuda.core's launch, the path
    # without the C one, checks the occupancy first),
    # never left to wait forever at the kernel's first grid-wide barrier; and
    # the call after it runs.
    from dataclasses import replace

    from histkit.gpu.device import runtime
    from histkit.gpu.errors import CudaError
    from histkit.gpu.launch import resident as launch_resident
    from histkit.gpu.launch.common import Keys

    rt = runtime()
    if not rt.cooperative:
        pytest.skip("no cooperative launches here")
    keys = rt.to_device(make_keys("uniform", 1 << 12, 256, seed=1))
    shape = launch_resident.resident_shape(rt, Keys(keys.ptr, 1 << 12, np.dtype(np.int32)), 256)
    too_many = replace(shape.geometry, grid=rt.sm_count * 64)
    with pytest.raises(CudaError, match=r"resident_sort.*(exceeds the limit|TOO_LARGE)"):
        rt.launch(shape.kernel, too_many, *[0] * 10)
    host = make_keys("uniform", 5000, 300, seed=2)
    np.testing.assert_array_equal(gpu.counting_sort(host, 300)[1],
                                  oracles.counting_sort(host, 300)[1])


@needs_gpu
def test_calls_take_the_c_path_where_it_is_built_and_both_paths_equal_the_oracle():
    import contextlib
    import importlib.util

    from histkit.gpu.device import runtime

    rt = runtime()
    built = importlib.util.find_spec("histkit.gpu._driver_calls") is not None
    # never a silent fall-back: a build with the extension launches through it
    assert (rt.per_call.calls is not None) == built
    host = make_keys("zipf", 100_003, 4096, seed=5)
    bad = host.copy()
    bad[77_777] = 4096
    for path in (contextlib.nullcontext(), rt.through_python()):
        with path:
            np.testing.assert_array_equal(gpu.histogram(host, 4096),
                                          oracles.histogram(host, 4096))
            for got, want in zip(gpu.counting_sort(host, 4096),
                                 oracles.counting_sort(host, 4096), strict=True):
                np.testing.assert_array_equal(got, want)
            with pytest.raises(oracles.BadKeyError, match="77777"):
                gpu.histogram(bad, 4096)


@needs_gpu
def test_calls_from_another_thread_equal_the_oracle():
    import threading

    host = make_keys("uniform", 5000, 300, seed=3)
    got = {}

    def work():
        got["sort"] = gpu.counting_sort(host, 300)[1]
        got["histogram"] = gpu.histogram(host, 300)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    np.testing.assert_array_equal(got["sort"], oracles.counting_sort(host, 300)[1])
    np.testing.assert_array_equal(got["histogram"], oracles.histogram(host, 300))


@needs_gpu
def test_resident_sorts_on_two_streams_at_once_each_equal_the_oracle():
    # Each fills most of the GPU (512 tiles of 2048 keys): together they do not
    # fit at once, and each stream keeps its own barrier scratch.
    cupy = pytest.importorskip("cupy")
    host = [make_keys("uniform", 1 << 20, 256, seed=seed) for seed in (1, 2)]
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in host]
    results = []
    for keys, stream in zip(host, streams, strict=True):
        with stream:
            results.append(gpu.counting_sort(cupy.asarray(keys), 256, check=False))
    for stream in streams:
        stream.synchronize()
    for keys, (got_keys, got_index, first_bad) in zip(host, results, strict=True):
        want_keys, want_index = oracles.counting_sort(keys, 256)
        np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
        np.testing.assert_array_equal(cupy.asnumpy(got_index), want_index)
        assert int(first_bad[0]) == 2**64 - 1


@needs_gpu
def test_sorts_on_callers_streams_destroyed_before_exit_leave_a_clean_exit():
    # histkit keeps each stream's barrier scratch across calls; kept on a
    # caller's stream, it was freed on that stream after the caller had
    # destroyed it, and the interpreter's exit segfaulted
    pytest.importorskip("cupy")
    code = (
        "import gc, cupy, numpy as np\n"
        "from histkit import gpu, oracles\n"
        "keys = np.random.default_rng(3).integers(0, 256, 1 << 20)\n"
        "want = oracles.counting_sort(keys, 256)[1]\n"
        "for round in range(3):\n"
        "    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]\n"
        "    for stream in streams:\n"
        "        with stream:\n"
        "            got = gpu.counting_sort(cupy.asarray(keys), 256)[1]\n"
        "            assert (cupy.asnumpy(got) == want).all()\n"
        "    del streams, stream\n"
        "    gc.collect()\n"
        "print('sorted')\n")
    done = in_a_child(code)
    assert done.returncode == 0 and "sorted" in done.stdout, done.stderr[-3000:]
    assert "failed during resource destruction" not in done.stderr, done.stderr[-3000:]


@needs_gpu
def test_atomic_cursor_sort_is_sorted_and_a_permutation():
    keys = make_keys("uniform", 1 << 20, 256, seed=5)
    got_keys, got_index = gpu.counting_sort(keys, 256, stable=False)
    np.testing.assert_array_equal(got_keys, np.sort(keys))
    np.testing.assert_array_equal(np.sort(got_index), np.arange(len(keys)))
    np.testing.assert_array_equal(keys[got_index], got_keys)


@needs_gpu
def test_sort_rejects_bad_keys_before_scattering():
    keys = np.array([0, 1, 2, 7], dtype=np.int16)
    for stable in (True, False):
        with pytest.raises(ValueError, match=r"index 3 is 7, outside \[0, 4\)"):
            gpu.counting_sort(keys, 4, stable=stable)


@needs_gpu
def test_exclusive_scan_equals_the_oracle_past_one_tile():
    counts = np.random.default_rng(0).integers(0, 1000, 1_000_003)
    np.testing.assert_array_equal(gpu.exclusive_scan(counts), oracles.exclusive_scan(counts))


@needs_gpu
def test_empty_keys():
    assert gpu.histogram(np.array([], np.int32), 3).tolist() == [0, 0, 0]
    sorted_keys, index = gpu.counting_sort(np.array([], np.int32), 3)
    assert sorted_keys.size == 0 and index.size == 0


@needs_gpu
def test_cupy_keys_stay_on_the_device_and_come_back_as_cupy():
    cupy = pytest.importorskip("cupy")
    host = make_keys("zipf", 1 << 20, 1000, seed=2)
    keys = cupy.asarray(host)
    got = gpu.histogram(keys, 1000)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(got), oracles.histogram(host, 1000))
    sorted_keys, index = gpu.counting_sort(keys, 1000)
    assert isinstance(index, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(index), oracles.counting_sort(host, 1000)[1])


@needs_gpu
def test_torch_keys_stay_on_the_device_and_come_back_as_torch():
    torch = pytest.importorskip("torch")
    host = make_keys("uniform", 1 << 20, 300, seed=4)
    keys = torch.as_tensor(host, device="cuda")
    got = gpu.histogram(keys, 300)
    assert isinstance(got, torch.Tensor) and got.is_cuda
    np.testing.assert_array_equal(got.cpu().numpy(), oracles.histogram(host, 300))
    with pytest.raises(TypeError, match="integer dtype"):
        gpu.histogram(keys.float(), 300)


def test_bad_arguments_raise_like_the_oracles_with_or_without_a_gpu():
    # Host input is checked before the GPU is touched.
    with pytest.raises(ValueError, match="num_bins must be >= 1"):
        gpu.histogram(np.arange(3), 0)
    with pytest.raises(ValueError, match="method must be one of"):
        gpu.histogram(np.arange(3), 3, method="fastest")
    with pytest.raises(TypeError, match="integer dtype"):
        gpu.histogram(np.array([0.5]), 3)
    with pytest.raises(TypeError, match="integer dtype"):
        gpu.counting_sort(np.array([True]), 2)
    with pytest.raises(ValueError, match="one-dimensional"):
        gpu.counting_sort(np.zeros((2, 2), dtype=np.int32), 2)


@needs_gpu
def test_a_histogram_too_large_for_the_gpu_names_num_bins_and_the_runtime_stays_usable():
    with pytest.raises(gpu.DeviceMemoryError, match=r"num_bins=2199023255552 .* needs"):
        gpu.histogram(np.array([0, 1]), 2**41)
    np.testing.assert_array_equal(gpu.histogram(np.array([0, 1, 1]), 2), [1, 2])


@needs_gpu
def test_a_bad_key_on_the_gpu_is_the_oracles_bad_key_error():
    keys = np.array([0, 5, 1, 9], np.int32)
    with pytest.raises(oracles.BadKeyError) as caught:
        gpu.histogram(keys, 4)
    assert (caught.value.index, caught.value.value) == (1, 5)


@needs_gpu
@pytest.mark.parametrize("call", ["histogram", "counting_sort"])
def test_a_bad_key_in_one_call_does_not_leak_into_the_next(call):
    # Calls share one cached bad-key slot per thread: each call must reset it.
    run = getattr(gpu, call)
    with pytest.raises(oracles.BadKeyError):
        run(np.array([1, 2, 300, 4]), 256)
    keys = make_keys("uniform", 10_001, 256, seed=3)
    got = run(keys, 256)
    want = (oracles.histogram(keys, 256) if call == "histogram"
            else oracles.counting_sort(keys, 256))
    for g, w in zip(got if call == "counting_sort" else [got],
                    want if call == "counting_sort" else [want], strict=True):
        np.testing.assert_array_equal(g, w)


@needs_gpu
@pytest.mark.parametrize("call", ["atomic", "privatized", "partitioned", "naive", "auto",
                                  "stable", "unstable"])
def test_a_checked_call_copies_its_bad_key_word_back_only_when_a_kernel_flagged_it(
        call, monkeypatch):
    # The verdict board (histkit.gpu.verdict): every module the call loads
    # must have been given the board, and a call with no bad key must not
    # copy its word back (the copy is what the board saves); one with a bad
    # key must still raise it, and the next call must not see it again.
    from histkit.gpu.device import runtime

    rt = runtime()
    copies = []
    read_word = rt.read_word
    monkeypatch.setattr(rt, "read_word", lambda ptr: copies.append(ptr) or read_word(ptr))
    if call in ("stable", "unstable"):
        def run(keys):
            return gpu.counting_sort(keys, 256, stable=call == "stable")[0]
        want = np.sort
    else:
        def run(keys):
            return gpu.histogram(keys, 256, method=call)
        want = (lambda keys: oracles.histogram(keys, 256)) if call != "naive" else None
    keys = make_keys("uniform", 3000, 256, seed=5)
    for _ in range(2):
        got = run(keys)
        if want is not None:
            np.testing.assert_array_equal(got, want(keys))
    assert rt.verdicts.usable and rt._scratch.board_slot is not None
    assert copies == []
    bad = keys.copy()
    bad[[700, 2000]] = [256, -1]
    with pytest.raises(oracles.BadKeyError, match="index 700 is 256"):
        run(bad)
    assert len(copies) == 1
    run(keys)
    assert len(copies) == 1


@needs_gpu
def test_repeated_calls_set_kernel_attributes_and_ask_occupancy_once():
    from histkit.gpu.device import runtime

    keys = make_keys("uniform", 1 << 16, 40_000, seed=4)  # > 48 KiB of shared bins
    gpu.histogram(keys, 40_000)
    rt = runtime()
    asked, allowed = dict(rt._resident), dict(rt._shared_allowed)
    for _ in range(3):
        np.testing.assert_array_equal(gpu.histogram(keys, 40_000), oracles.histogram(keys, 40_000))
    assert rt._resident == asked and rt._shared_allowed == allowed and allowed


@needs_gpu
def test_cupy_keys_written_on_another_stream_are_read_after_that_work():
    cupy = pytest.importorskip("cupy")
    n = 1 << 24
    with cupy.cuda.Stream(non_blocking=True):
        keys = cupy.zeros(n, dtype=cupy.int32)
        for _ in range(8):  # long enough to still run when histkit's call starts
            keys = (keys + 1) % 7
        got = gpu.histogram(keys, 7)
    want = np.zeros(7, np.int64)
    want[8 % 7] = n
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


@needs_gpu
def test_strided_cupy_keys_are_refused_naming_the_stride():
    cupy = pytest.importorskip("cupy")
    keys = cupy.arange(100, dtype=cupy.int32)[::2]
    with pytest.raises(ValueError, match="must be contiguous"):
        gpu.histogram(keys, 100)
    with pytest.raises(TypeError, match="integer dtype"):
        gpu.histogram(cupy.zeros(4, dtype=cupy.float32), 4)
    with pytest.raises(ValueError, match="one-dimensional"):
        gpu.histogram(cupy.zeros((2, 2), dtype=cupy.int32), 4)


# --- streams, check=False, out=, CUDA graphs ------------------------------------

def test_stream_and_check_options_are_refused_before_a_gpu_is_looked_for():
    with pytest.raises(TypeError, match="stream must be a CUDA stream"):
        gpu.histogram(np.arange(3), 3, stream="default")
    with pytest.raises(TypeError, match="got a bool"):
        gpu.histogram(np.arange(3), 3, stream=True)
    with pytest.raises(ValueError, match="stream handle must be >= 0"):
        gpu.counting_sort(np.arange(3), 3, stream=-1)
    with pytest.raises(TypeError, match="check must be True or False"):
        gpu.histogram(np.arange(3), 3, check="no")
    with pytest.raises(ValueError, match="pass check=False with it"):
        gpu.histogram(np.arange(3), 3, first_bad=np.zeros(1, np.uint64))


@needs_gpu
@pytest.mark.parametrize("stable", [True, False])
def test_check_false_sort_returns_the_first_bad_index_and_writes_within_bounds(stable):
    keys = make_keys("uniform", 200_003, 300, seed=6)
    keys[[17, 150_000]] = [300, -2]
    sorted_keys, index, first_bad = gpu.counting_sort(keys, 300, stable=stable, check=False)
    assert int(first_bad[0]) == 17
    # Bad keys are skipped: the valid keys' sort fills the first slots (300
    # bins: two digit passes, the second reading what the first left).
    valid = np.flatnonzero((keys >= 0) & (keys < 300))
    front = slice(0, len(valid))
    np.testing.assert_array_equal(sorted_keys[front], np.sort(keys[valid], kind="stable"))
    if stable:
        np.testing.assert_array_equal(index[front],
                                      valid[np.argsort(keys[valid], kind="stable")])
    else:
        np.testing.assert_array_equal(np.sort(index[front]), valid)
    with pytest.raises(oracles.BadKeyError, match=r"index 17 is 300"):
        gpu.raise_if_bad(first_bad, keys, 300)
    good = make_keys("uniform", 10_000, 300, seed=7)  # and the next call is clean
    np.testing.assert_array_equal(gpu.counting_sort(good, 300, stable=stable)[0], np.sort(good))


@needs_gpu
def test_check_false_histogram_counts_the_valid_keys_and_leaves_the_first_bad_index():
    cupy = pytest.importorskip("cupy")
    host = make_keys("zipf", 1 << 18, 1000, seed=2)
    host[[5, 90_000]] = [1000, -1]
    keys = cupy.asarray(host)
    counts, first_bad = gpu.histogram(keys, 1000, check=False)
    assert isinstance(counts, cupy.ndarray) and first_bad.dtype == cupy.uint64
    valid = host[(host >= 0) & (host < 1000)]
    np.testing.assert_array_equal(cupy.asnumpy(counts), oracles.histogram(valid, 1000))
    assert int(first_bad[0]) == 5
    with pytest.raises(oracles.BadKeyError) as caught:
        gpu.raise_if_bad(first_bad, keys, 1000)
    assert (caught.value.index, caught.value.value) == (5, 1000)
    clean = gpu.histogram(keys[6:90_000], 1000, check=False)[1]
    gpu.raise_if_bad(clean, keys[6:90_000], 1000)  # no bad key: no error


@needs_gpu
def test_out_receives_the_counts_and_is_returned():
    cupy = pytest.importorskip("cupy")
    host = make_keys("uniform", 100_000, 500, seed=3)
    out = cupy.full(500, 7, dtype=cupy.int64)
    assert gpu.histogram(cupy.asarray(host), 500, out=out) is out
    np.testing.assert_array_equal(cupy.asnumpy(out), oracles.histogram(host, 500))
    again = cupy.full(500, 3, dtype=cupy.int64)  # NumPy keys, a device out: out comes back
    assert gpu.histogram(host, 500, out=again) is again
    np.testing.assert_array_equal(cupy.asnumpy(again), oracles.histogram(host, 500))
    with pytest.raises(ValueError, match=r"out must hold 500 int64; got 499 int64"):
        gpu.histogram(cupy.asarray(host), 500, out=out[1:])
    with pytest.raises(ValueError, match=r"out must hold 500 int64; got 500 int32"):
        gpu.histogram(cupy.asarray(host), 500, out=cupy.zeros(500, cupy.int32))
    with pytest.raises(TypeError, match="out must be a device array"):
        gpu.histogram(host, 500, out=np.zeros(500, np.int64))


@needs_gpu
@pytest.mark.parametrize("method", ["auto", "atomic", "privatized", "partitioned"])
@pytest.mark.parametrize("n, num_bins", [(4096, 256), (4096, 65536), (30_000, 3000),
                                         (300_000, 256)])
def test_a_call_overwrites_whatever_out_held_with_the_exact_counts(method, n, num_bins):
    # one block with every bin shared stores its counts (no zeroing); the
    # others zero them first: either way nothing of out's old bytes survives
    cupy = pytest.importorskip("cupy")
    if method == "privatized" and num_bins > 50_000:
        pytest.skip("privatized keeps every bin in one block's shared memory")
    host = make_keys("zipf", n, num_bins, seed=5)
    out = cupy.full(num_bins, -123456789, dtype=cupy.int64)
    gpu.histogram(cupy.asarray(host), num_bins, method, out=out)
    np.testing.assert_array_equal(cupy.asnumpy(out), oracles.histogram(host, num_bins))


@needs_gpu
def test_cupy_calls_run_on_cupys_current_stream_without_a_wait():
    cupy = pytest.importorskip("cupy")
    n = 1 << 24
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        keys = cupy.zeros(n, dtype=cupy.int32)
        for _ in range(8):  # long enough to still run when histkit's call starts
            keys = (keys + 1) % 7
        counts, first_bad = gpu.histogram(keys, 7, check=False)
        total = counts.sum()  # queued after histkit's kernels on the same stream
    stream.synchronize()
    assert int(total) == n and int(counts[8 % 7]) == n and int(first_bad[0]) == 2**64 - 1


@needs_gpu
def test_stream_argument_takes_cupy_torch_cuda_core_streams_and_raw_handles():
    cupy = pytest.importorskip("cupy")
    host = make_keys("uniform", 300_000, 256, seed=11)
    want = oracles.histogram(host, 256)
    streams = [cupy.cuda.Stream(non_blocking=True)]
    streams.append(streams[0].ptr)
    try:
        import torch

        streams.append(torch.cuda.Stream())
    except ImportError:
        pass
    from histkit.gpu.device import runtime

    streams.append(runtime().device.create_stream())
    for stream in streams:
        for keys in (host, cupy.asarray(host)):
            got = gpu.histogram(keys, 256, stream=stream)
            np.testing.assert_array_equal(got if isinstance(got, np.ndarray)
                                          else cupy.asnumpy(got), want)
        sorted_keys, _ = gpu.counting_sort(cupy.asarray(host), 256, stream=stream)
        np.testing.assert_array_equal(cupy.asnumpy(sorted_keys), np.sort(host))


@needs_gpu
def test_torch_calls_allocate_results_on_torchs_stream():
    torch = pytest.importorskip("torch")
    host = make_keys("uniform", 1 << 20, 300, seed=4)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        keys = torch.as_tensor(host, device="cuda")
        counts, first_bad = gpu.histogram(keys, 300, check=False)
        doubled = counts * 2  # torch work on the same stream, after histkit's
    stream.synchronize()
    np.testing.assert_array_equal(doubled.cpu().numpy(), 2 * oracles.histogram(host, 300))
    assert first_bad.dtype == torch.uint64


@needs_gpu
def test_a_loop_of_1000_calls_captured_in_a_cuda_graph_replays_correctly():
    cupy = pytest.importorskip("cupy")
    calls, n, num_bins = 1000, 4096, 256
    host = np.random.default_rng(12).integers(0, num_bins, (calls, n)).astype(np.int32)
    host[3, 100] = num_bins  # one call meets a bad key
    keys = cupy.asarray(host)
    counts = cupy.empty((calls, num_bins), dtype=cupy.int64)
    words = cupy.empty((calls, 1), dtype=cupy.uint64)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        gpu.histogram(keys[0], num_bins, out=counts[0], first_bad=words[0], check=False)
        stream.begin_capture()
        for i in range(calls):
            gpu.histogram(keys[i], num_bins, out=counts[i], first_bad=words[i], check=False)
        graph = stream.end_capture()
        counts.fill(-1)
        words.fill(0)
        graph.launch(stream)
    stream.synchronize()
    got, bad = cupy.asnumpy(counts), cupy.asnumpy(words)[:, 0]
    for i in range(calls):
        valid = host[i][host[i] < num_bins]
        np.testing.assert_array_equal(got[i], oracles.histogram(valid, num_bins))
    assert bad[3] == 100 and np.all(np.delete(bad, 3) == 2**64 - 1)


@needs_gpu
def test_autos_sampled_choice_is_made_on_the_device_when_a_captured_graph_replays():
    # From 2^25 keys over 2^17 ... 2^21 bins auto samples the keys; it judges
    # the sample on the device, so a captured call chooses again at every
    # replay: keys rewritten after the capture (uniform, then one bin, then
    # Zipf: partitioned, fast-hold, fast) are each counted exactly.
    cupy = pytest.importorskip("cupy")
    n, num_bins = 1 << 25, 1 << 20
    keys = cupy.empty(n, dtype=cupy.int32)
    counts = cupy.empty(num_bins, dtype=cupy.int64)
    word = cupy.empty(1, dtype=cupy.uint64)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        keys.fill(0)
        gpu.histogram(keys, num_bins, out=counts, first_bad=word, check=False)  # builds
        stream.begin_capture()
        gpu.histogram(keys, num_bins, out=counts, first_bad=word, check=False)
        graph = stream.end_capture()
    for distribution in ("uniform", "onebin", "zipf"):
        host = make_keys(distribution, n, num_bins, seed=21).astype(np.int32)
        with stream:
            keys.set(host)
            counts.fill(-1)
            graph.launch(stream)
        stream.synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(counts), oracles.histogram(host, num_bins),
                                      err_msg=distribution)
        assert int(word[0]) == 2**64 - 1


@needs_gpu
def test_calls_on_torch_keys_are_captured_in_a_torch_cuda_graph_on_torchs_stream():
    # torch.cuda.graph captures its own current stream: a call that ran on
    # any other stream would break the capture or run outside the graph.
    torch = pytest.importorskip("torch")
    calls, n, num_bins = 8, 4096, 256
    host = np.random.default_rng(14).integers(0, num_bins, (calls, n)).astype(np.int32)
    host[5, 77] = -3
    keys = torch.as_tensor(host, device="cuda")
    counts = torch.full((calls, num_bins), -1, dtype=torch.int64, device="cuda")
    words = torch.empty((calls, 1), dtype=torch.uint64, device="cuda")
    gpu.histogram(keys[0], num_bins, out=counts[0], first_bad=words[0], check=False)  # builds
    torch.cuda.synchronize()
    counts.fill_(-1)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            gpu.histogram(keys[i], num_bins, out=counts[i], first_bad=words[i], check=False)
    assert int(counts.min()) == -1  # captured, not run
    graph.replay()
    torch.cuda.synchronize()
    got = counts.cpu().numpy()
    bad = words.view(torch.int64).cpu().numpy().view(np.uint64)[:, 0]
    for i in range(calls):
        valid = host[i][(host[i] >= 0) & (host[i] < num_bins)]
        np.testing.assert_array_equal(got[i], oracles.histogram(valid, num_bins))
    assert bad[5] == 77 and np.all(np.delete(bad, 5) == 2**64 - 1)


@needs_gpu
def test_strided_torch_keys_are_refused_and_a_one_element_view_is_read():
    torch = pytest.importorskip("torch")
    keys = torch.arange(10, dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match="must be contiguous"):
        gpu.histogram(keys[::2], 10)
    one = keys[::3][1:2]  # the key 3, with a stride of 3 that does not matter
    assert gpu.histogram(one, 10).cpu().tolist() == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]


class _OtherLibraryArray:
    """A device array of a library histkit does not know (only the CUDA array
    interface): results come back as histkit's own DeviceArray."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return self.array.__cuda_array_interface__


@needs_gpu
def test_raise_if_bad_reads_the_bad_key_from_histkits_own_device_arrays():
    cupy = pytest.importorskip("cupy")
    host = (np.arange(1000) % 10).astype(np.int32)
    sorted_keys, _ = gpu.counting_sort(_OtherLibraryArray(cupy.asarray(host)), 10)
    assert type(sorted_keys).__name__ == "DeviceArray"
    # Keys 9 are bad for 9 bins; the sorted keys put the first at index 900.
    _, first_bad = gpu.histogram(sorted_keys, 9, check=False)
    with pytest.raises(oracles.BadKeyError) as caught:
        gpu.raise_if_bad(first_bad, sorted_keys, 9)
    assert (caught.value.index, caught.value.value) == (900, 9)


@needs_gpu
def test_pooled_scratch_is_reused_and_stale_data_never_reaches_a_result():
    from histkit.gpu.device import POOL_MAX_BYTES, runtime

    rng = np.random.default_rng(13)
    for n, num_bins in [(70_001, 70_000), (5_000, 300), (70_001, 70_000), (123, 7)] * 2:
        keys = rng.integers(0, num_bins, n).astype(np.int32)
        got_keys, got_index = gpu.counting_sort(keys, num_bins)
        want_keys, want_index = oracles.counting_sort(keys, num_bins)
        np.testing.assert_array_equal(got_index, want_index)
        np.testing.assert_array_equal(gpu.histogram(keys, num_bins),
                                      oracles.histogram(keys, num_bins))
    pool = runtime().pool
    kept = dict((key, len(stack)) for key, stack in pool.free.items())
    gpu.counting_sort(keys, num_bins)  # the same call again takes what it gave back
    assert dict((key, len(stack)) for key, stack in pool.free.items()) == kept
    assert pool.kept <= POOL_MAX_BYTES


# --- full-width keys: gpu.radix_sort and gpu.argsort (judged against NumPy) ----

WIDTHS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@needs_gpu
@pytest.mark.parametrize("dtype", WIDTHS)
def test_radix_sort_of_full_width_keys_is_numpys_stable_argsort(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    keys = rng.integers(info.min, info.max, 100_003, endpoint=True, dtype=dtype)
    keys[::7] = keys[3]  # runs of equal keys: stability shows
    want = np.argsort(keys, kind="stable")
    got_keys, got_index = gpu.radix_sort(keys)
    np.testing.assert_array_equal(got_index, want)
    np.testing.assert_array_equal(got_keys, keys[want])
    np.testing.assert_array_equal(gpu.argsort(keys), want)


@needs_gpu
def test_radix_sort_moves_values_of_any_width_with_their_keys():
    keys = np.random.default_rng(3).integers(-(2**40), 2**40, 70_001)
    for values in (np.linspace(0, 1, len(keys), dtype=np.float32),
                   np.arange(len(keys), dtype=np.uint8), np.arange(len(keys)) * 3.5):
        got_keys, got_values = gpu.radix_sort(keys, values)
        order = np.argsort(keys, kind="stable")
        np.testing.assert_array_equal(got_values, values[order])
        np.testing.assert_array_equal(got_keys, keys[order])


@needs_gpu
def test_radix_sort_of_cupy_keys_stays_on_the_device_and_equals_the_oracle():
    cupy = pytest.importorskip("cupy")
    host = np.random.default_rng(8).integers(-(2**31), 2**31, 1 << 20).astype(np.int32)
    keys = cupy.asarray(host)
    values = cupy.arange(len(host), dtype=cupy.float64)
    got_keys, got_values = gpu.radix_sort(keys, values, stable=False)
    assert isinstance(got_keys, cupy.ndarray) and isinstance(got_values, cupy.ndarray)
    want_keys, want_index = oracles.radix_sort(host)
    np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
    np.testing.assert_array_equal(cupy.asnumpy(got_values), want_index.astype(np.float64))
    assert int(gpu.argsort(keys)[0]) == int(want_index[0])


def test_radix_sort_refuses_bad_arguments_naming_them_with_or_without_a_gpu():
    keys = np.array([3, -1, 2])
    says = "one entry per key: 3 keys, values of shape (2,)"
    with pytest.raises(ValueError, match=re.escape(says)):
        gpu.radix_sort(keys, np.zeros(2))
    with pytest.raises(TypeError, match="1, 2, 4 or 8 bytes"):
        gpu.radix_sort(keys, np.zeros(3, np.complex128))
    with pytest.raises(TypeError, match="stable must be True or False"):
        gpu.radix_sort(keys, stable="yes")
    with pytest.raises(TypeError, match="integer"):
        gpu.radix_sort(np.array([0.5, 1.5]))


@needs_gpu
@pytest.mark.parametrize("num_bins", [200, 70_000])
def test_int32_indices_equal_the_oracles_int64_ones(num_bins):
    keys = np.random.default_rng(num_bins).integers(0, num_bins, 300_007).astype(np.int32)
    want_keys, want_index = oracles.counting_sort(keys, num_bins)
    got_keys, got_index = gpu.counting_sort(keys, num_bins, index_dtype=np.int32)
    assert got_index.dtype == np.int32
    np.testing.assert_array_equal(got_index, want_index)
    np.testing.assert_array_equal(got_keys, want_keys)
    _, unstable = gpu.counting_sort(keys, num_bins, stable=False, index_dtype=np.int32)
    assert unstable.dtype == np.int32
    np.testing.assert_array_equal(keys[unstable], want_keys)
    wide = np.random.default_rng(1).integers(-(2**62), 2**62, 300_007)
    values = np.arange(len(wide), dtype=np.float32)
    got = gpu.argsort(wide, index_dtype=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.argsort(wide, kind="stable"))
    _, moved = gpu.radix_sort(wide, values, index_dtype=np.int32)
    np.testing.assert_array_equal(moved, values[np.argsort(wide, kind="stable")])


@needs_gpu
@pytest.mark.parametrize("where", ["before", "past"])
def test_scratch_guard_names_a_write_just_outside_poisoned_scratch(where):
    from histkit.gpu.device import SCRATCH_GUARD_BYTES, runtime

    rt = runtime()
    with rt.poisoned_scratch():
        scratch = rt.empty(10, np.uint32)
        untouched = rt.empty(3, np.uint64)
    rt.memset(untouched.ptr, 7, 24)  # inside its bounds: no finding
    rt.memset(scratch.ptr - 1 if where == "before" else scratch.ptr + 40,
              rt.poison.canary ^ 0xFF, 1)
    found = rt.scratch_overruns()
    assert len(found) == 1 and "40-byte scratch" in found[0]
    assert ("before the start" in found[0]) == (where == "before")
    assert rt.scratch_overruns() == []  # each guard is read once, then let go
    assert SCRATCH_GUARD_BYTES % 256 == 0


def in_a_child(code: str):
    """Run code in a fresh interpreter (a fault may spoil this process's CUDA
    context): its CompletedProcess, output captured as text."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


@needs_gpu
def test_a_fenced_copy_holds_its_data_and_ends_where_mapped_memory_ends():
    from histkit.gpu.device import runtime

    rt = runtime()
    host = np.arange(1001, dtype=np.int32)
    array = rt.fenced_copy(host)
    np.testing.assert_array_equal(rt.copy_to_host(array.ptr, np.empty(1001, np.int32)), host)
    assert array.ptr + host.nbytes - array.buffer.start == array.buffer.mapped
    # one element past it is not mapped: a copy that reaches it fails (in a
    # child process: a fault may spoil the CUDA context)
    past = ("import numpy as np; from histkit.gpu.device import runtime; rt = runtime(); "
            "a = rt.fenced_copy(np.arange(1001, dtype=np.int32)); "
            "rt.copy_to_host(a.ptr, np.empty(1002, np.int32))")
    done = in_a_child(past)
    assert done.returncode != 0 and "CudaError" in done.stderr


@needs_gpu
def test_fenced_cells_place_scratch_flush_against_unmapped_memory_on_both_sides(tmp_path):
    # a fenced cell's scratch: some arrays start where mapped memory starts,
    # the others end where it ends; a kernel's store just before an array of
    # the first kind faults (in a child process: a fault spoils the context)
    from histkit.gpu.device import FencedBuffer, runtime

    rt = runtime()
    with rt.poisoned_scratch(fenced=True):
        arrays = [rt.empty(1001, np.int32) for _ in range(4)]
    placements = set()
    for array in arrays:
        fenced = array.buffer.whole
        assert isinstance(fenced, FencedBuffer)
        placements.add("start" if array.ptr == fenced.start else "end")
        if array.ptr != fenced.start:
            assert array.ptr + 4004 == fenced.start + fenced.mapped
    assert placements == {"start", "end"}
    assert rt.scratch_overruns() == []
    source = tmp_path / "store_at.cu"
    source.write_text('extern "C" __global__ void store_at(int* out, long long i)'
                      " { ((volatile int*)out)[i] = 7; }\n")
    child = ("import numpy as np; from histkit.gpu.device import runtime; "
             "from histkit.gpu.geometry import Geometry; rt = runtime()\n"
             "with rt.poisoned_scratch(fenced=True):\n"
             "    arrays = [rt.empty(1001, np.int32) for _ in range(4)]\n"
             "a = next(x for x in arrays if x.ptr == x.buffer.whole.start)\n"
             f"k = rt.kernel({str(source)!r}, 'store_at', {{}}); g = Geometry('store_at', 1, 1)\n"
             "for i in (0, -1):\n"
             "    rt.launch(k, g, a.ptr, np.int64(i)); rt.sync(f'storing at {i}')\n"
             "    print('stored', i)")
    done = in_a_child(child)
    assert "stored 0" in done.stdout and "stored -1" not in done.stdout, done.stdout
    assert done.returncode != 0 and "storing at -1" in done.stderr, done.stderr[-2000:]


@needs_gpu
def test_skewed_builds_hand_every_block_shared_memory_full_of_poison(tmp_path):
    # a user's kernel that reads shared memory it never wrote, static and
    # dynamic, reads HK_SHARED_POISON bytes in a skewed build (what lets the
    # skewed cases catch counters that were never zeroed)
    from histkit.gpu import contract
    from histkit.gpu.device import runtime
    from histkit.gpu.geometry import Geometry

    source = tmp_path / "reads_unwritten_shared.cu"
    source.write_text('extern "C" __global__ void dump(unsigned* out) {\n'
                      "    __shared__ unsigned statics[300];\n"
                      "    extern __shared__ unsigned dynamic[];\n"
                      "    out[threadIdx.x] = ((volatile unsigned*)statics)[threadIdx.x];\n"
                      "    out[300 + threadIdx.x] = ((volatile unsigned*)dynamic)[threadIdx.x];\n"
                      "}\n")
    rt = runtime()
    out = rt.empty(600, np.uint32)
    for grid in (1, 3):
        with rt.skewed_schedule():
            kernel = rt.kernel(str(source), "dump", {})
            rt.launch(kernel, Geometry("dump", grid, 300, shared_bytes=1202), out.ptr)
        got = rt.copy_to_host(out.ptr, np.empty(600, np.uint32))
        assert np.all(got == 0x01010101 * contract.SCHEDULE_SHARED_POISON), got[:8]


def loads_from_a_fenced_copy(tmp_path, n: int, indices: tuple[int, ...]):
    """A child process (a fault may spoil the CUDA context) in which a kernel
    loads element i of a fenced copy of arange(n) int32 for each i of indices,
    printing 'loaded <value>' after each load that worked."""
    source = tmp_path / "load_at.cu"
    source.write_text('extern "C" __global__ void load_at(const int* in, long long i, int* out)'
                      " { out[0] = ((const volatile int*)in)[i]; }\n")
    child = ("import numpy as np; from histkit.gpu.device import runtime; "
             "from histkit.gpu.geometry import Geometry; rt = runtime(); "
             f"a = rt.fenced_copy(np.arange({n}, dtype=np.int32)); out = rt.empty(1, np.int32); "
             f"k = rt.kernel({str(source)!r}, 'load_at', {{}}); g = Geometry('load_at', 1, 1)\n"
             f"for i in {indices!r}:\n"
             "    rt.launch(k, g, a.ptr, np.int64(i), out.ptr); rt.sync(f'loading {i}')\n"
             "    print('loaded', int(rt.copy_to_host(out.ptr, np.empty(1, np.int32))[0]))")
    return in_a_child(child)


@needs_gpu
def test_a_kernel_that_loads_one_element_past_a_fenced_copy_faults(tmp_path):
    # what the fenced cases rely on: a kernel's load (not only a copy) of the
    # element after the array faults; the last element itself reads fine
    done = loads_from_a_fenced_copy(tmp_path, 1001, (1000, 1001))
    assert "loaded 1000" in done.stdout and "loaded 1001" not in done.stdout, done.stdout
    assert done.returncode != 0 and "loading 1001" in done.stderr, done.stderr[-2000:]


@needs_gpu
def test_a_load_a_whole_input_before_a_fenced_copy_faults(tmp_path):
    # an index past 2^31 narrowed to a negative int reads up to a whole input
    # before the keys: the address space there is reserved and unmapped too
    # (64 MiB of keys: more than the fixed fence of 16 granules alone)
    from histkit.gpu.device import runtime

    rt = runtime()
    fenced = rt.fenced_copy(np.zeros(2**24, np.int32)).buffer
    assert fenced.start - int(fenced.base) >= fenced.mapped >= 2**26
    assert int(fenced.base) + fenced.reserved - (fenced.start + fenced.mapped) >= fenced.mapped
    done = loads_from_a_fenced_copy(tmp_path, 2**24, (0, -2**24))
    assert done.stdout.count("loaded") == 1 and "loaded 0" in done.stdout, done.stdout
    assert done.returncode != 0 and "loading -16777216" in done.stderr, done.stderr[-2000:]


@needs_gpu
def test_a_user_kernel_that_hangs_costs_two_fail_cells_and_seconds_not_the_run(tmp_path):
    import time

    from histkit.conformance import check
    from histkit.conformance.check_judge import MAX_HANGS

    source = tmp_path / "hangs_past_64_keys.cu"
    source.write_text(
        "extern \"C\" __global__ void histogram(const KEY_T* keys, long long n,\n"
        "    unsigned long long num_bins, COUNT_T* hist, unsigned long long* first_bad) {\n"
        "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    // past 64 keys, wait for a count no one writes: a loop that never ends\n"
        "    while (n > 64 && ((volatile unsigned int*)hist)[0] != 0xdeadbeefu) { }\n"
        "    if (i < n) {\n"
        "        unsigned long long b = (unsigned long long)(long long)keys[i];\n"
        "        if (b < num_bins) atomicAdd(&hist[b], (COUNT_T)1);\n"
        "        else atomicMin(first_bad, (unsigned long long)i);\n"
        "    }\n"
        "}\n")
    start = time.perf_counter()
    report = check(str(source), "histogram", timeout=20)
    hangs = [f for f in report.failures if f.detail.startswith("hang")]
    assert not report.passed and len(hangs) == MAX_HANGS
    assert all(cell.status != "FAIL" for case, cell, _ in report.cells if case.n <= 64)
    assert time.perf_counter() - start < 20 + 10 + 60  # two timeouts and the other cases


@needs_gpu
def test_a_kernel_of_ours_that_never_ends_fails_its_cell_and_the_matrix_stops(tmp_path):
    # a planted bug that hangs: the atomic kernel's grid-stride step made an
    # assignment (`i = hk_thread_count()`), judged on the quick matrix with
    # waits bounded at 5 s: a FAIL naming the hang, the run stopped, the
    # process gone in seconds (its exit skips the driver's teardown, which
    # would wait for the kernel), not a judge that never ends
    import os
    import subprocess
    import sys
    import time

    from histkit.conformance import mutagen, mutation
    from histkit.gpu.compiler import kernel_dir

    mutant = next(m for m in mutagen.generate(kernel_dir(), ["atomic_histogram.cu"])
                  if "accumulate-made-assign" in m.id and "hk_thread_count" in m.find)
    mutation.apply(mutant, kernel_dir(), tmp_path / "cuda")
    env = {**os.environ, "HISTKIT_CUDA_DIR": str(tmp_path / "cuda"),
           "HISTKIT_CACHE_DIR": str(tmp_path / "cache"), "HISTKIT_WAIT_LIMIT_S": "5"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "histkit.conformance.mutation", "judge",
                           "quick", "atomic"], env=env, capture_output=True, text=True,
                          timeout=300)
    took = time.perf_counter() - start
    output = done.stdout + done.stderr
    assert done.returncode == mutation.EXIT_CAUGHT, output[-3000:]
    assert "DeviceHang" in output and "did not finish within 5 s" in output, output[-3000:]
    assert "cases not run" in output and took < 200, (took, output[-3000:])


@needs_gpu
def test_a_kernel_of_ours_that_faults_fails_once_and_the_matrix_stops(tmp_path):
    # a planted bug that faults (the atomic kernel's counter 2^40 elements
    # past its histogram: an illegal address, which leaves the CUDA context
    # unusable): one FAIL in the atomic kernel's name, and the run stops,
    # rather than every later cell failing in another kernel's name
    import os
    import shutil
    import subprocess
    import sys

    from histkit.gpu.compiler import kernel_dir

    shutil.copytree(kernel_dir(), tmp_path / "cuda")
    source = tmp_path / "cuda" / "atomic_histogram.cu"
    text = source.read_text()
    assert text.count("atomicAdd(&hist[b], 1ULL);") == 1
    source.write_text(text.replace("atomicAdd(&hist[b], 1ULL);",
                                   "atomicAdd(&hist[b + (1ULL << 40)], 1ULL);"))
    code = ("from rich.console import Console\n"
            "from histkit.conformance.cases import all_cases\n"
            "from histkit.conformance.runner import run_conformance\n"
            "report = run_conformance(Console(width=300), cases=all_cases(quick=True)[:20],\n"
            "                         rows=['atomic', 'fast'], json_path=None)\n"
            "print('FAILS', len(report.failures), report.failures[0].kernel)\n"
            "print('STOPPED', report.stopped)\n")
    env = {**os.environ, "HISTKIT_CUDA_DIR": str(tmp_path / "cuda"),
           "HISTKIT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    output = done.stdout + done.stderr
    assert "FAILS 1 atomic" in output, output[-3000:]
    assert "a fault left the CUDA context unusable (CUDA_ERROR_" in output, output[-3000:]


@needs_gpu
def test_the_compiled_lane_serves_common_cupy_calls_and_equals_the_oracle(monkeypatch):
    # The common call (CuPy keys, auto, checked, nothing else given) runs in
    # histkit.gpu._lane where it is built: the Python path's _open is never
    # reached. Shapes: one block storing its counts, many blocks adding,
    # bins past shared memory, starts off the vectors, a 1-byte dtype, and
    # shapes where auto samples the keys (their launches recorded once and
    # replayed: auto's launcher never runs from the lane).
    cupy = pytest.importorskip("cupy")
    import importlib.util

    from histkit.gpu import _lane_calls, api

    assert importlib.util.find_spec("histkit.gpu._lane") is not None  # meson builds it
    gpu.histogram(cupy.zeros(8, cupy.int32), 4)  # the thread's first call sets its slot up
    python_path = []
    real_open = api.open_call
    monkeypatch.setattr(api, "open_call", lambda *a: python_path.append(a) or real_open(*a))
    monkeypatch.setattr(_lane_calls, "_lane_auto", lambda *a: pytest.fail("auto's launcher ran"))
    for distribution, n, num_bins, offset, dtype in [
            ("uniform", 4096, 256, 0, np.int32), ("zipf", 1 << 20, 256, 1, np.int32),
            ("uniform", 50_000, 1 << 20, 3, np.int32), ("onebin", 300_001, 4096, 0, np.int32),
            ("round-robin", 1 << 18, 65536, 2, np.int64), ("uniform", 99_999, 200, 5, np.uint8),
            # auto samples: the lane replays auto's launches (the partitioned kernel
            # chosen, or the fast one for skewed keys; a start off the vectors)
            ("uniform", (1 << 25) + 7, 1 << 20, 0, np.int32),
            ("onebin", 1 << 25, 1 << 18, 1, np.int32),
            ("zipf", (1 << 25) + 5, 1 << 19, 3, np.int64)]:
        host = make_keys(distribution, n + offset, num_bins, seed=n).astype(dtype)
        keys = cupy.asarray(host)[offset:]
        got = gpu.histogram(keys, num_bins)
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_array_equal(cupy.asnumpy(got), oracles.histogram(host[offset:],
                                                                           num_bins))
    assert python_path == []
    for resets, (n, num_bins) in enumerate([(100_000, 256), ((1 << 25) + 7, 1 << 20)], 1):
        bad = cupy.asarray(make_keys("uniform", n, num_bins, seed=2))
        bad[[40_000, 90_000]] = cupy.asarray([num_bins + 44, -2], dtype=bad.dtype)
        with pytest.raises(oracles.BadKeyError, match=f"index 40000 is {num_bins + 44}"):
            gpu.histogram(bad, num_bins)
        bad[[40_000, 90_000]] = 0
        want = oracles.histogram(cupy.asnumpy(bad), num_bins)
        np.testing.assert_array_equal(cupy.asnumpy(gpu.histogram(bad, num_bins)), want)
        assert len(python_path) == resets  # the call after a bad key resets the slot there
        np.testing.assert_array_equal(cupy.asnumpy(gpu.histogram(bad, num_bins)), want)
        assert len(python_path) == resets


@needs_gpu
def test_the_compiled_lane_serves_common_cupy_sorts_and_equals_the_oracle(monkeypatch):
    # gpu.counting_sort's common call (CuPy keys, stable, int64 indices,
    # checked) runs its launcher from the lane: rank_sort, the resident sort
    # and the passes alike, the Python path's _open never reached.
    cupy = pytest.importorskip("cupy")
    from histkit.gpu import api

    gpu.counting_sort(cupy.zeros(8, cupy.int32), 4)  # the thread's first call sets its slot up
    python_path = []
    real_open = api.open_call
    monkeypatch.setattr(api, "open_call", lambda *a: python_path.append(a) or real_open(*a))
    for distribution, n, num_bins, offset in [("uniform", 3000, 256, 1),
                                               ("zipf", 1 << 20, 65536, 0),
                                               ("sorted", 3_000_017, 1 << 20, 2)]:
        host = make_keys(distribution, n + offset, num_bins, seed=n)
        got_keys, got_index = gpu.counting_sort(cupy.asarray(host)[offset:], num_bins)
        want_keys, want_index = oracles.counting_sort(host[offset:], num_bins)
        np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
        np.testing.assert_array_equal(cupy.asnumpy(got_index), want_index)
    assert python_path == []
    bad = cupy.asarray(make_keys("uniform", 200_000, 1000, seed=4))
    bad[150_000] = 1000
    with pytest.raises(oracles.BadKeyError, match="index 150000 is 1000"):
        gpu.counting_sort(bad, 1000)


@needs_gpu
@pytest.mark.parametrize("n, num_bins", [(4096, 256), (1 << 20, 65536), ((1 << 25) + 3, 1 << 20)])
def test_an_unchecked_lane_call_counts_the_valid_keys_and_leaves_the_first_bad_index(
        monkeypatch, n, num_bins):
    cupy = pytest.importorskip("cupy")
    from histkit.gpu import _lane_calls, api

    monkeypatch.setattr(api, "open_call", lambda *a: pytest.fail("the Python path's _open ran"))
    monkeypatch.setattr(_lane_calls, "_lane_auto", lambda *a: pytest.fail("auto's launcher ran"))
    host = make_keys("uniform", n, num_bins, seed=7)
    counts, first_bad = gpu.histogram(cupy.asarray(host), num_bins, check=False)
    np.testing.assert_array_equal(cupy.asnumpy(counts), oracles.histogram(host, num_bins))
    assert int(first_bad[0]) == 2**64 - 1
    host[[n - 1, 1000]] = [num_bins, -1]
    counts, first_bad = gpu.histogram(cupy.asarray(host), num_bins, check=False)
    assert int(first_bad[0]) == 1000
    valid = host[(host >= 0) & (host < num_bins)]
    np.testing.assert_array_equal(cupy.asnumpy(counts), oracles.histogram(valid, num_bins))
    sorted_keys, index, first_bad = gpu.counting_sort(cupy.asarray(host[:4096]), num_bins,
                                                      check=False)
    assert int(first_bad[0]) == 1000
