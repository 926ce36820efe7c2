"""Every argument is checked, and named, before any work: on the CPU oracles
and on the GPU calls alike (whose argument errors come before a GPU is looked
for, so these tests run on any machine)."""

import re
from contextlib import nullcontext

import numpy as np
import pytest

import histkit.oracles as oracles_module
from histkit import gpu, oracles

KEYS = np.array([0, 1, 1, 3])
SAMPLES = np.array([0.5, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("binning", [oracles.bin_histogram, gpu.bin_histogram],
                         ids=["oracle", "gpu"])
@pytest.mark.parametrize("flag", ["right_closed_last", "flow"])
@pytest.mark.parametrize("value", [None, "yes", 0, 2.5, []])
def test_a_binning_flag_that_is_not_a_bool_is_refused(binning, flag, value):
    # right_closed_last=None, taken as falsy, would drop the sample on the last edge
    with pytest.raises(TypeError, match=rf"{flag} must be True or False; got"):
        binning(SAMPLES, 3, (0, 3), **{flag: value})


def test_python_ints_past_int64_are_sorted_as_uint64():
    keys = [2**63, 1, 2**64 - 1, 0]
    want = np.argsort(np.array(keys, dtype=np.uint64), kind="stable")
    assert oracles.argsort(keys).tolist() == want.tolist() == [3, 1, 0, 2]
    assert oracles.radix_sort(keys)[0].tolist() == sorted(keys)


def test_a_python_int_key_past_int64_is_a_bad_key_not_a_dtype_error():
    with pytest.raises(oracles.BadKeyError, match=r"index 1 is 9223372036854775808, outside"):
        oracles.histogram([0, 2**63], 4)


def test_python_ints_no_dtype_holds_are_named_without_num_bins_where_there_is_none():
    with pytest.raises(ValueError, match=r"keys hold integers from -1 to 2\*\*63|"
                                         r"keys hold integers from -1 to 9223372036854775808"):
        oracles.argsort([-1, 2**63])


def test_python_int_weights_past_int64_are_summed_exactly():
    weights = [2**63 + 1, 2**63 - 1, 3]
    exact = sum(weights)  # Python ints: the exact sum, 2**64 + 3
    # float() of a Python int rounds correctly; numpy's float64 list would not be exact
    assert oracles.histogram([0, 0, 0], 1, weights).tolist() == [float(exact)]
    assert oracles.histogram([0, 0], 1, [2**64 - 1, 2**64 - 1]).tolist() == [float(2**65 - 2)]


@pytest.mark.parametrize("weights, low, high", [([2**64, 1], 1, 2**64),
                                                 ([2**63 + 1, -(2**63)], -(2**63), 2**63 + 1)])
def test_python_int_weights_no_dtype_holds_are_named(weights, low, high):
    # numpy would make float64 of them and lose the low bits silently
    with pytest.raises(ValueError, match=rf"weights hold integers from {low} to {high}, which"):
        oracles.histogram([0, 0], 1, weights)


def test_weights_given_where_gpu_histogram_takes_its_method_say_to_pass_them_by_keyword():
    with pytest.raises(TypeError, match=r"method must be one of .*got ndarray.*weights=w"):
        gpu.histogram(KEYS, 4, np.ones(4))


@pytest.mark.parametrize("call, error, match", [
    (lambda: gpu.radix_sort(KEYS, stream="x"), TypeError, "stream must be"),
    (lambda: gpu.argsort(KEYS, stream=-1), ValueError, "stream handle must be >= 0"),
    (lambda: gpu.histogram(KEYS, 4, weights=np.ones(4), stream="x"), TypeError,
     "stream must be"),
    (lambda: gpu.histogram(KEYS, 4, out=np.zeros(4, np.int64)), TypeError,
     "out must be a device array"),
    (lambda: gpu.histogram(KEYS, 4, weights=np.ones(4), out="x"), TypeError,
     "out must be a device array"),
    (lambda: gpu.histogram(KEYS, 4, check=False, first_bad=np.zeros(1, np.uint64)),
     TypeError, "first_bad must be a device array"),
    (lambda: gpu.counting_sort(KEYS, 4, stable=None), TypeError,
     "stable must be True or False; got None"),
    (lambda: gpu.counting_sort(KEYS, 4, index_dtype=None), TypeError,
     "index_dtype must be int32 or int64; got None"),
    (lambda: gpu.counting_sort(KEYS, 4, index_dtype="bogus"), TypeError,
     "index_dtype must be int32 or int64; got 'bogus'"),
    (lambda: gpu.bin_histogram(np.array([0.5]), 2**62), MemoryError,
     r"bins=4611686018427387904 \(edges and int64 counts\) needs"),
], ids=["radix-stream", "argsort-stream", "weighted-stream", "out-host", "weighted-out",
        "first-bad-host", "stable-none", "index-dtype-none", "index-dtype-bogus",
        "bins-past-memory"])
def test_gpu_arguments_are_refused_before_a_gpu_is_looked_for(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("args", [(None, 0), (np.array([0.5]), 0)], ids=["none", "float"])
@pytest.mark.parametrize("name", ["histogram", "counting_sort"])
def test_gpu_names_the_keys_before_num_bins_as_the_oracle_does(name, args):
    with pytest.raises(TypeError) as on_cpu:
        getattr(oracles, name)(*args)
    with pytest.raises(TypeError) as on_gpu:
        getattr(gpu, name)(*args)
    assert str(on_gpu.value) == str(on_cpu.value)


def test_gpu_radix_sort_refuses_values_of_another_length_with_the_oracles_message():
    keys, values = np.array([3, 1, 2]), np.zeros(2)
    with pytest.raises(ValueError) as on_cpu:
        oracles.radix_sort(keys, values=values)
    with pytest.raises(ValueError) as on_gpu:
        gpu.radix_sort(keys, values)
    assert str(on_gpu.value) == str(on_cpu.value)
    assert "3 keys, values of shape (2,)" in str(on_gpu.value)


@pytest.mark.parametrize("values", [
    np.array(5.0),                                    # 0-d: not one entry per key
    np.ma.array([1.0, 2.0, 3.0], mask=[1, 0, 0]),     # masked entries would move as data
    [[1], [1, 2], []],                                # ragged
], ids=["0-d", "masked", "ragged"])
def test_gpu_radix_sort_refuses_values_the_oracle_refuses_with_its_error(values):
    keys = np.array([3, 1, 2])
    with pytest.raises((TypeError, ValueError)) as on_cpu:
        oracles.radix_sort(keys, values=values)
    with pytest.raises((TypeError, ValueError)) as on_gpu:
        gpu.radix_sort(keys, values)
    assert type(on_gpu.value) is type(on_cpu.value)
    assert str(on_gpu.value) == str(on_cpu.value)


@pytest.mark.parametrize("counts, error, match", [
    ([2**62, 2**62, 2**62], OverflowError, "offsets pass int64 at the count at index 1"),
    ([2**62, 2**62, 2**62, -1], OverflowError, "at the count at index 1"),
    ([5, -1, 2**62, 2**62, 2**62], ValueError, "count at index 1 is -1"),
    ([2, 2**63 - 2, 7], OverflowError, "at the count at index 1"),
])
def test_gpu_scan_refuses_offsets_past_int64_as_the_oracle_does(counts, error, match):
    # the kernel adds in 64 bits: past int64 it would wrap, where the oracle raises
    counts = np.array(counts, dtype=np.int64)
    # an independent reference: Python's unbounded ints, the running sum before each count
    running = np.cumsum([0] + [int(c) for c in counts[:-1]], dtype=object)
    assert any(r > 2**63 - 1 for r in running) or (counts < 0).any()
    with pytest.raises(error, match=match):
        oracles.exclusive_scan(counts)
    with pytest.raises(error, match=match):
        gpu.exclusive_scan(counts)


def test_gpu_scan_takes_offsets_up_to_the_last_int64():
    # the last count enters no offset: these end exactly at 2**63 - 1
    counts = np.array([2**62, 2**62 - 1, 2**63 - 1], dtype=np.int64)
    assert oracles.exclusive_scan(counts).tolist() == [0, 2**62, 2**63 - 1]
    with pytest.raises(gpu.GpuUnavailableError) if gpu.gpu_unavailable_reason() else nullcontext():
        gpu.exclusive_scan(counts)


@pytest.mark.parametrize("args, kwargs", [
    ((None, 0), {}),
    ((np.array(["a"]), 0), {}),
    ((np.array([0.5, 1.5]), 0), {"weights": np.ones(3)}),
], ids=["none", "strings", "weights-length"])
def test_gpu_binning_names_the_samples_and_weights_before_the_bins_as_the_oracle_does(args,
                                                                                    kwargs):
    with pytest.raises((TypeError, ValueError)) as on_cpu:
        oracles.bin_histogram(*args, **kwargs)
    with pytest.raises((TypeError, ValueError)) as on_gpu:
        gpu.bin_histogram(*args, **kwargs)
    assert type(on_gpu.value) is type(on_cpu.value)
    assert str(on_gpu.value) == str(on_cpu.value)


@pytest.mark.parametrize("word, match", [
    (np.array([10], np.uint64), "neither an index of the 3 keys"),
    (np.array([-1]), "neither an index of the 3 keys"),
    (np.array([0], np.uint64), r"names index 0, whose key 0 lies in \[0, 4\)"),
    (np.array([], np.uint64), "one-element word .* of 0 elements"),
])
def test_raise_if_bad_refuses_a_word_that_names_no_bad_key(word, match):
    with pytest.raises(ValueError, match=match):
        gpu.raise_if_bad(word, np.array([0, 7, 1]), 4)


@pytest.mark.parametrize("word", [np.array([1.7]), np.array([True]), 1, None],
                         ids=["float", "bool", "scalar", "none"])
def test_raise_if_bad_refuses_a_word_that_is_not_an_integer_array(word):
    # a float would be truncated into some index, and name a key as bad
    with pytest.raises(TypeError, match="first_bad must be the one-element uint64 array"):
        gpu.raise_if_bad(word, np.array([0, 9, 1]), 4)


def test_raise_if_bad_still_raises_the_bad_key_a_word_names():
    with pytest.raises(oracles.BadKeyError, match=r"index 1 is 7, outside \[0, 4\)"):
        gpu.raise_if_bad(np.array([1], np.uint64), np.array([0, 7, 1]), 4)


def test_the_oracle_radix_sort_checks_its_values_before_sorting(monkeypatch):
    def no_sort(keys):
        raise AssertionError("sorted before the values were checked")

    monkeypatch.setattr(oracles_module, "argsort", no_sort)
    with pytest.raises(ValueError, match="values must hold one entry per key: 3 keys"):
        oracles.radix_sort(np.array([3, 1, 2]), values=np.zeros(2))


@pytest.mark.parametrize("num_keys", [1, 5])  # fewer and more keys than bins
def test_the_wave_model_names_a_bad_warp_size_before_a_bad_key(num_keys):
    with pytest.raises(ValueError, match="warp_size must be >= 1; got 0"):
        oracles.naive_wave_histogram([9] * num_keys, 4, 0)


def test_a_bad_key_among_few_keys_is_named_before_the_counters_are_set_up(monkeypatch):
    def no_counting(*args):
        raise AssertionError("counters set up for a call with a bad key")

    monkeypatch.setattr(oracles_module, "histogram_counts", no_counting)
    with pytest.raises(oracles.BadKeyError, match=r"index 1 is -1, outside \[0, 1073741824\)"):
        oracles.histogram(np.array([0, -1]), 2**30)


@pytest.mark.parametrize("binning", [oracles.bin_histogram, gpu.bin_histogram],
                         ids=["oracle", "gpu"])
def test_more_float16_bins_than_float16_has_values_are_refused_as_numpy_refuses_them(binning):
    samples = np.array([0, 1], dtype=np.float16)
    with pytest.raises(ValueError, match="(?i)too many bins"), np.errstate(all="ignore"):
        np.histogram(samples, 2**16)
    with pytest.raises(ValueError, match=r"65536 bins over \[0.0, 1.0\] do not fit in float16"):
        binning(samples, 2**16)


@pytest.mark.parametrize("call, name", [
    (lambda: oracles.histogram([[0, 1], [2]], 4), "keys"),
    (lambda: oracles.bin_histogram([[0.5, 1.5], [2.5]], 4, (0, 3)), "samples"),
    (lambda: oracles.histogram([0, 1], 4, [[1.0], [2.0, 3.0]]), "weights"),
])
def test_a_ragged_list_is_named_as_the_argument_it_was_given_for(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must be a 1-d array; "):
        call()


@pytest.mark.parametrize("call, says", [
    (lambda: oracles.bin_histogram([0.5, 1.5], 1, weights=[[1.0], [1.0, 2.0]]),
     "weights must be an array of the samples' shape; "),
    (lambda: oracles.radix_sort([1, 0], [[1], [1, 2]]),
     "values must be an array of one entry per key; "),
    (lambda: oracles.bin_histogram([1.0], [[0.0], [1.0, 2.0]]),
     "bins must be an int or a 1-d array of edges; "),
])
def test_a_ragged_list_of_weights_values_or_edges_is_named_too(call, says):
    with pytest.raises(ValueError, match=f"^{re.escape(says)}"):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda m: oracles.histogram(m, 3), "keys"),
    (lambda m: oracles.histogram([0, 1, 1], 3, m.astype(float)), "weights"),
    (lambda m: oracles.bin_histogram(m.astype(float), 2), "samples"),
    (lambda m: oracles.radix_sort(m), "keys"),
])
def test_a_masked_array_with_masked_entries_is_refused_not_counted_whole(call, name):
    masked = np.ma.array([0, 1, 2], mask=[False, True, False])
    assert np.bincount(np.asarray(masked)).tolist() == [1, 1, 1]  # NumPy counts the masked 1
    with pytest.raises(TypeError, match=rf"^{name} is a masked array with masked entries.*"
                                        rf"{name}\.compressed\(\)"):
        call(masked)
    np.testing.assert_array_equal(oracles.histogram(np.ma.array([0, 1, 2]), 3), [1, 1, 1])


def test_integer_weights_in_a_nested_list_or_as_numpy_scalars_are_read_exactly():
    huge = 2**63 + 1  # float64 would round it to 2**63
    assert float(np.ravel([[huge, -2**63]]).sum()) == 0.0  # what NumPy alone makes of it
    counts, _ = oracles.bin_histogram([[0.0, 1.0]], 1, weights=[[huge, 3]])
    assert counts.tolist() == [float(huge + 3)]
    with pytest.raises(ValueError, match="which no integer dtype holds together"):
        oracles.bin_histogram([[0.0, 1.0]], 1, weights=[[huge, -2**63]])
    with pytest.raises(ValueError, match="which no integer dtype holds together"):
        oracles.histogram([0, 0], 1, [np.uint64(huge), np.int64(-2**63)])
    assert oracles.histogram([0, 0], 1, [np.uint64(huge), np.uint64(3)]).tolist() == [
        float(huge + 3)]
    with pytest.raises(oracles.BadKeyError, match=r"index 1 is 9223372036854775808"):
        oracles.histogram([np.int64(1), 2**63], 3)  # not "float64 keys": NumPy's promotion


def test_a_bool_in_a_list_of_integer_keys_is_refused_not_counted_as_one():
    assert np.asarray([True, 2]).dtype.kind == "i"  # what NumPy alone would make of it
    with pytest.raises(TypeError, match=r"keys must not hold bools; got True at index 0"):
        oracles.histogram([True, 2], 4)


@pytest.mark.parametrize("call", [
    lambda w: gpu.histogram([0, 0], 1, weights=w),
    lambda w: gpu.bin_histogram([0.0, 1.0], 1, weights=w),
], ids=["histogram", "bin_histogram"])
def test_gpu_weights_given_as_python_ints_are_refused_never_rounded_to_float64(call):
    assert np.asarray([2**63 + 1, -2**63]).dtype == np.float64  # NumPy alone rounds them
    with pytest.raises(ValueError, match="which no integer dtype holds together"):
        call([2**63 + 1, -2**63])
    with pytest.raises(TypeError, match="GPU weights must be float16, float32 or float64; "
                                        "got int64"):
        call([2**62, 3])
