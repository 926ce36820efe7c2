"""gpu.histogram with weights= and the weighted kernel against
oracles.histogram(keys, num_bins, weights) and math.fsum on a real GPU
(marker ``gpu``); its argument checks without one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from histkit import gpu, oracles

REASON = gpu.gpu_unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")
pytestmark = pytest.mark.gpu


def _bits(values) -> bytes:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64)).tobytes()


def _fsum_per_bin(keys, weights, num_bins) -> np.ndarray:
    return np.array([math.fsum(weights[keys == b].astype(np.float64).tolist())
                     for b in range(num_bins)])


@pytest.mark.parametrize(("keys", "weights", "kwargs", "error", "message"), [
    ([0, 1], [1, 2], {}, TypeError, "float16, float32 or float64; got int64"),
    ([0, 1], [1.0, 2.0, 3.0], {}, ValueError, "one weight per key: 2 keys, 3"),
    ([0, 1], [[1.0, 2.0]], {}, ValueError, "one-dimensional"),
    ([0.5, 1], [1.0, 2.0], {}, TypeError, "integer dtype"),
    ([0, 1], [1.0, 2.0], {"method": "atomic"}, ValueError, "method must be 'auto'"),
    ([0, 1], [1.0 + 1j, 2.0], {}, TypeError, "float16, float32 or float64"),
])
def test_bad_weighted_arguments_raise_before_a_gpu_is_looked_for(keys, weights, kwargs, error,
                                                                 message):
    with pytest.raises(error, match=message):
        gpu.histogram(np.array(keys), 2, weights=np.array(weights), **kwargs)


def test_host_weights_with_device_keys_are_refused():
    class FakeDeviceArray:
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<i4", "data": (0, False),
                                    "version": 3}

    with pytest.raises(TypeError, match="the same kind of array as keys"):
        gpu.histogram(FakeDeviceArray(), 2, weights=np.ones(2))


@needs_gpu
def test_every_weighted_column_equals_the_oracle_bit_for_bit_on_every_case():
    from histkit.conformance import weighted
    from histkit.gpu.device import runtime

    failures = [r for r in weighted.judge(runtime()) if r.status != "pass"]
    assert not failures, "\n".join(f"{r.case} {r.column}: {r.detail}" for r in failures[:20])


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("num_bins", [1, 256, 4096, 65536])
def test_the_public_call_equals_fsum_per_bin_and_repeats_its_bits(dtype, num_bins):
    rng = np.random.default_rng(num_bins)
    n = 1 << 20
    keys = rng.integers(0, num_bins, n, dtype=np.int32)
    weights = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)).astype(dtype)
    weights[::97] = -weights[::97] * 1e12  # cancellation in every bin
    first = gpu.histogram(keys, num_bins, weights=weights)
    assert first.dtype == np.float64
    want = oracles.histogram(keys, num_bins, weights)
    assert _bits(first) == _bits(want)
    some = rng.integers(0, num_bins, 8)
    np.testing.assert_array_equal(first[some], _fsum_per_bin(keys, weights, num_bins)[some]
                                  if num_bins <= 256 else want[some])
    for _ in range(9):
        assert _bits(gpu.histogram(keys, num_bins, weights=weights)) == _bits(first)


@needs_gpu
def test_cupy_and_torch_arrays_are_summed_in_place_with_results_of_their_kind():
    keys = np.array([0, 0, 0, 1, 2, 2], dtype=np.int64)
    weights = np.array([1e16, 1.0, -1e16, 0.5, np.inf, -np.inf])
    want = _bits([1.0, 0.5, np.nan])
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        got = gpu.histogram(cupy.asarray(keys), 3, weights=cupy.asarray(weights))
        assert isinstance(got, cupy.ndarray) and _bits(cupy.asnumpy(got)) == want
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        got = gpu.histogram(torch.tensor(keys, device="cuda"), 3,
                            weights=torch.tensor(weights, device="cuda"))
        assert isinstance(got, torch.Tensor) and _bits(got.cpu().numpy()) == want
    if cupy is None and torch is None:
        pytest.skip("neither CuPy nor PyTorch is installed")


@needs_gpu
def test_float16_host_weights_are_widened_exactly():
    keys = np.array([0, 0, 1], dtype=np.int32)
    weights = np.array([65504.0, 6e-8, 1.5], dtype=np.float16)
    want = oracles.histogram(keys, 2, weights.astype(np.float32))
    assert _bits(gpu.histogram(keys, 2, weights=weights)) == _bits(want)


@needs_gpu
def test_a_bad_key_raises_with_its_index_or_comes_back_unchecked():
    keys = np.array([0, 1, 7, 1, 9], dtype=np.int32)
    weights = np.ones(5, dtype=np.float32)
    with pytest.raises(oracles.BadKeyError, match="index 2"):
        gpu.histogram(keys, 4, weights=weights)
    sums, first_bad = gpu.histogram(keys, 4, weights=weights, check=False)
    assert int(np.asarray(first_bad)[0]) == 2
    np.testing.assert_array_equal(sums, [1.0, 2.0, 0.0, 0.0])


@needs_gpu
def test_no_keys_give_zero_sums():
    got = gpu.histogram(np.array([], dtype=np.int32), 3, weights=np.array([], np.float32))
    assert _bits(got) == _bits([0.0, 0.0, 0.0])


@needs_gpu
@pytest.mark.large
def test_more_than_2_31_weights_of_one_bin_sum_exactly():
    # 2^31 + 17 keys, every one in bin 1; the weights' exact sum, from the
    # counts of each distinct weight, is known without adding them in order.
    n = 2**31 + 17
    keys = np.ones(n, dtype=np.uint8)
    weights = np.full(n, 0.1, dtype=np.float32)
    weights[::3] = np.float32(-0.3)
    got = gpu.histogram(keys, 2, weights=weights)
    minus = len(range(0, n, 3))
    from fractions import Fraction
    exact = Fraction(float(np.float32(0.1))) * (n - minus) + Fraction(
        float(np.float32(-0.3))) * minus
    assert got[0] == 0.0 and got[1] == float(exact)
