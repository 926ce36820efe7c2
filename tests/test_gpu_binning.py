"""gpu.bin_histogram and the binning kernel against oracles.bin_histogram (and
np.histogram) on a real GPU (marker ``gpu``); its argument checks without one."""

from __future__ import annotations

import numpy as np
import pytest

from histkit import gpu, oracles
from histkit.conformance.binning_cases import bin_cases
from histkit.conformance.pytest_plugin import k_safe_id

REASON = gpu.gpu_unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")
pytestmark = pytest.mark.gpu


def _same(got, want):
    counts, edges, flow = got
    want_counts, want_edges, want_flow = want
    np.testing.assert_array_equal(np.asarray(counts), want_counts)
    assert edges.dtype == want_edges.dtype and edges.tobytes() == want_edges.tobytes()
    assert flow == want_flow


@pytest.mark.parametrize(("bins", "range", "message"), [
    (3, (1, 0), "lo <= hi"),
    (3, (0, float("nan")), "finite"),
    (0, (0, 1), "bins must be >= 1"),
    ([0, 2, 1], None, "increase monotonically"),
    ("auto", None, "estimator names"),
])
def test_bad_arguments_raise_before_a_gpu_is_looked_for(bins, range, message):
    with pytest.raises((ValueError, TypeError), match=message):
        gpu.bin_histogram(np.float32([0.5, 1.5]), bins, range)


def test_bool_and_complex_samples_raise_type_error_before_a_gpu_is_looked_for():
    for samples in (np.array([True]), np.array([1j])):
        with pytest.raises(TypeError, match="samples must have"):
            gpu.bin_histogram(samples, 3, (0, 1))


def test_bad_weights_raise_before_a_gpu_is_looked_for():
    samples = np.float32([0.5, 1.5])
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        gpu.bin_histogram(samples, 3, (0, 2), weights=np.array([1, 2]))
    with pytest.raises(ValueError, match="the samples' shape"):
        gpu.bin_histogram(samples, 3, (0, 2), weights=np.float32([1.0]))
    with pytest.raises(TypeError, match="same kind of array"):
        gpu.bin_histogram(samples, 3, (0, 2), weights=_DeviceLike())


class _DeviceLike:
    """Looks like a device array (it speaks __cuda_array_interface__)."""

    __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False),
                                "version": 3}


def _same_bits(got, want):
    """Float64 sums equal bit for bit (NaN and -0.0 included)."""
    got = np.asarray(got, dtype=np.float64)
    assert got.tobytes() == np.asarray(want, dtype=np.float64).tobytes(), (got, want)


def _weights_for(case, rng, dtype):
    shape = np.shape(case.samples)
    magnitude = 10.0 ** rng.integers(-20, 20, shape)
    return (rng.standard_normal(shape) * magnitude).astype(dtype)


@needs_gpu
@pytest.mark.parametrize("case", bin_cases(quick=True)[::5], ids=lambda c: k_safe_id(c.name))
def test_weighted_sums_equal_the_oracle_with_the_same_weights(case):
    rng = np.random.default_rng(len(case.name))
    for dtype in (np.float32, np.float64):
        weights = _weights_for(case, rng, dtype)
        want = oracles.bin_histogram(case.samples, case.bins, case.range, weights=weights,
                                     right_closed_last=case.right_closed_last, flow=True)
        got = gpu.bin_histogram(case.samples, case.bins, case.range, weights=weights,
                                right_closed_last=case.right_closed_last, flow=True)
        _same_bits(got[0], want[0])
        _same_bits(list(got[2]), list(want[2]))
        assert got[1].tobytes() == want[1].tobytes()


@needs_gpu
def test_weighted_sums_are_exact_where_a_float64_running_sum_loses_them():
    samples = np.float32([0.1, 0.2, 0.3, 0.9, 2.0])
    weights = np.float64([1e16, 1.0, -1e16, 0.5, 7.0])
    sums, _, flow = gpu.bin_histogram(samples, 2, (0, 1), weights=weights, flow=True)
    np.testing.assert_array_equal(sums, [1.0, 0.5])  # np.histogram's weights: [0.0, 0.5]
    assert flow.overflow == 7.0


@needs_gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_device_weights_give_sums_of_their_kind_equal_to_the_oracle(framework):
    lib = pytest.importorskip(framework)
    rng = np.random.default_rng(11)
    host = (rng.normal(size=100_003) * 40).astype(np.float32)
    weights = rng.normal(size=host.size).astype(np.float32)

    def device(a):
        return lib.asarray(a) if framework == "cupy" else lib.from_numpy(a).cuda()

    for bins, range in ((37, (-50, 50)), (np.linspace(-60, 60, 65), None)):
        want = oracles.bin_histogram(host, bins, range, weights=weights, flow=True)
        sums, _, flow = gpu.bin_histogram(device(host), bins, range, weights=device(weights),
                                          flow=True)
        assert type(sums).__module__.split(".")[0] == framework
        _same_bits(sums.get() if framework == "cupy" else sums.cpu().numpy(), want[0])
        _same_bits(list(flow), list(want[2]))
    with pytest.raises(ValueError, match="one weight per sample"):
        gpu.bin_histogram(device(host), 37, (-50, 50), weights=device(weights[:-1]))


@needs_gpu
def test_weighted_binning_names_the_sample_numpy_fails_on():
    samples = np.float32([0, 1, 3e38, -3e38])
    with pytest.raises(ValueError) as want:
        oracles.bin_histogram(samples, 4, (-3.4e38, 3.4e38), weights=np.ones(4))
    with pytest.raises(ValueError) as got:
        gpu.bin_histogram(samples, 4, (-3.4e38, 3.4e38), weights=np.ones(4))
    assert str(got.value) == str(want.value)


@needs_gpu
def test_every_binning_column_equals_the_oracle_on_every_quick_case():
    from histkit.conformance import binning
    from histkit.gpu.device import runtime

    failures = [r for r in binning.judge(runtime(), quick=True) if r.status != "pass"]
    assert not failures, "\n".join(f"{r.case} {r.column}: {r.detail}" for r in failures[:20])


@needs_gpu
@pytest.mark.parametrize("case", bin_cases(quick=True)[::7], ids=lambda c: k_safe_id(c.name))
def test_the_public_call_equals_the_oracle_on_host_samples(case):
    want = oracles.bin_histogram(case.samples, case.bins, case.range,
                                 right_closed_last=case.right_closed_last, flow=True)
    got = gpu.bin_histogram(case.samples, case.bins, case.range,
                            right_closed_last=case.right_closed_last, flow=True)
    _same(got, want)


@needs_gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64", "uint8"])
def test_device_samples_give_counts_of_their_kind_equal_to_the_oracle(framework, dtype):
    lib = pytest.importorskip(framework)
    rng = np.random.default_rng(7)
    host = (rng.normal(size=100_003) * 40).astype(dtype)
    device = lib.asarray(host) if framework == "cupy" else lib.from_numpy(host).cuda()
    for bins, range in ((37, (-50, 50)), (256, None), (np.linspace(-60, 60, 65), None)):
        want = oracles.bin_histogram(host, bins, range, flow=True)
        counts, edges, flow = gpu.bin_histogram(device, bins, range, flow=True)
        assert type(counts).__module__.split(".")[0] == framework
        got = counts.get() if framework == "cupy" else counts.cpu().numpy()
        np.testing.assert_array_equal(got, want[0])
        assert edges.tobytes() == want[1].tobytes() and flow == want[2]


@needs_gpu
def test_a_sample_numpy_fails_on_is_named_as_the_oracle_names_it():
    # x - lo overflows float32 for the third sample: numpy's index is garbage
    samples = np.float32([0, 1, 3e38, -3e38])
    with pytest.raises(ValueError, match="index 2") as want:
        oracles.bin_histogram(samples, 4, (-3.4e38, 3.4e38))
    with pytest.raises(ValueError) as got:
        gpu.bin_histogram(samples, 4, (-3.4e38, 3.4e38))
    assert str(got.value) == str(want.value)


@needs_gpu
@pytest.mark.parametrize("weights", [None, np.ones(3)])
def test_a_kept_sample_past_the_top_edge_numpy_has_no_bin_for_is_named_as_the_oracle_names_it(
        weights):
    # float16(0.9999) == 1.0 keeps the sample 1.0; the float64 edges end at 0.9999
    samples, bounds = np.float16([0.25, 0.5, 1.0]), (np.float64(0.9997), 0.9999)
    with pytest.raises(ValueError, match="index 2") as want:
        oracles.bin_histogram(samples, 3, bounds, weights=weights)
    with pytest.raises(ValueError) as got:
        gpu.bin_histogram(samples, 3, bounds, weights=weights)
    assert str(got.value) == str(want.value)


@needs_gpu
def test_empty_samples_give_zero_counts_and_numpys_edges():
    counts, edges = gpu.bin_histogram(np.array([], np.float32), 5, (0, 1))
    want = np.histogram(np.array([], np.float32), 5, (0, 1))
    np.testing.assert_array_equal(counts, want[0])
    assert edges.tobytes() == want[1].tobytes()


def _random_case(rng, index: int):
    """A random small binning call: dtype, bins or edges, range, convention,
    samples with some on the edges and one ulp either side."""
    from histkit.conformance.binning_cases import BinCase

    dtype = np.dtype(rng.choice(["float16", "float32", "float64", "int8", "uint16", "int32",
                                 "int64", "uint64"]))
    scale = 10.0 ** int(rng.integers(-3, 4)) if dtype.kind == "f" else 100.0
    lo = float(rng.normal() * scale)
    hi = lo + float(rng.exponential() * scale) + scale * 0.01
    if dtype.kind == "u":
        lo, hi = abs(lo), abs(lo) + abs(hi - lo)
    num_bins = int(rng.choice([1, 2, 7, 10, 33, 126, 256, 1000, 4096]))
    explicit = rng.random() < 0.3
    bins = np.sort(rng.uniform(lo, hi, num_bins + 1)) if explicit else num_bins
    grid = np.linspace(lo, hi, num_bins + 1)
    values = np.concatenate([grid, rng.uniform(lo - scale, hi + scale, int(rng.integers(1, 600)))])
    if dtype.kind == "f":
        values = values.astype(dtype)
        values = np.concatenate([values, np.nextafter(values, np.inf),
                                 np.nextafter(values, -np.inf)])
    else:
        info = np.iinfo(dtype)
        values = np.clip(np.round(values), info.min, info.max).astype(dtype)
    return BinCase(f"random-{index}", values, bins, None if explicit else (lo, hi),
                   right_closed_last=bool(rng.random() < 0.8))


@needs_gpu
@pytest.mark.large
def test_every_binning_column_equals_the_oracle_on_ten_thousand_random_calls():
    import warnings

    from histkit.conformance import binning
    from histkit.gpu.device import runtime

    rng = np.random.default_rng(20261203)
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index in range(10_000):
            case = _random_case(rng, index)
            try:
                np.histogram(case.samples, case.bins, case.range)
            except (ValueError, TypeError, OverflowError, IndexError):
                continue  # numpy refuses the call: nothing to compare
            cases.append(case)
        failures = [r for r in binning.judge(runtime(), cases=cases) if r.status != "pass"]
    assert len(cases) > 9_000
    assert not failures, "\n".join(f"{r.case} {r.column}: {r.detail}" for r in failures[:20])


@needs_gpu
@pytest.mark.large
def test_more_than_2_31_samples_are_counted_with_64_bit_indices():
    # uint8 samples i % 251 over 2^31 + 17 of them: the counts have a closed
    # form, and a 32-bit index would lose or repeat samples
    import cupy

    n = 2**31 + 17
    samples = (cupy.arange(n, dtype=cupy.int64) % 251).astype(cupy.uint8)
    counts, _, flow = gpu.bin_histogram(samples, 251, range=(0, 251), flow=True)
    full, rest = divmod(n, 251)
    want = np.full(251, full, np.int64)
    want[:rest] += 1
    np.testing.assert_array_equal(counts.get(), want)
    assert flow == (0, 0, 0)
