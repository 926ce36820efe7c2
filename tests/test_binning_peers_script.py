"""bench/binning_peers.py judges binning peers against numpy's rule and the
exact rule. Here it judges numpy alone (no optional peer is needed): numpy
agrees with its own rule and parts from the exact one where its computed
edges are not the exact edges, and the script shrinks that to one sample."""

import importlib.util
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("binning_peers", ROOT / "bench" /
                                                  "binning_peers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def rules(script):
    """bench/_binning_rules.py, which the script put on the path beside itself."""
    import _binning_rules

    return _binning_rules


def exact_by_loop(samples, bins, range):
    """Each sample placed by a plain loop over exact edges, the last bin closed."""
    lo, hi = Fraction(float(range[0])), Fraction(float(range[1]))
    edges = [lo + (hi - lo) * i / bins for i in np.arange(bins + 1).tolist()]
    counts = [0] * bins
    for x in np.asarray(samples).tolist():
        if x != x or x in (float("inf"), float("-inf")):  # NaN and infinities: no bin
            continue
        x = Fraction(x)
        for i in np.arange(bins).tolist():
            last = i == bins - 1
            if edges[i] <= x and (x < edges[i + 1] or (last and x == edges[i + 1])):
                counts[i] += 1
                break
    return counts


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64])
def test_exact_rule_is_a_plain_loop_over_exact_edges(script, dtype):
    rng = np.random.default_rng(3)
    for lo, hi, bins in ((0.9, 1.1, 10), (0.0, 126.0, 126), (-3.3, 1e-3, 7), (-5.0, 40.0, 9)):
        samples = np.concatenate([lo + (hi - lo) * rng.random(200), [lo - 1, hi, hi + 1],
                                  script.edge_neighbours(np.float64, bins, lo, hi)])
        with np.errstate(all="ignore"):
            samples = (np.round(samples) if dtype == np.int64 else samples).astype(dtype)
        got = rules(script).exact_rule(samples, bins, (lo, hi))
        assert got.tolist() == exact_by_loop(samples, bins, (lo, hi)), (dtype, lo, hi, bins)


def test_exact_rule_compares_64_bit_integers_without_rounding(script):
    # 3 bins on (0, 2^55 + 8): edges past 2^53, not integers; the samples
    # around them would round if cast to float64
    span = (0.0, 2.0**55 + 8)
    edges = [Fraction(int(span[1])) * i / 3 for i in (1, 2)]
    samples = np.array([int(e) + d for e in edges for d in (-2, -1, 0, 1, 2)] + [2**55 + 8],
                       np.int64)
    assert rules(script).exact_rule(samples, 3, span).tolist() == exact_by_loop(samples, 3, span)


def test_numpy_agrees_with_its_rule_and_parts_from_the_exact_one(script):
    (numpy_peer,) = [p for p in script.all_peers() if p.name == "numpy.histogram"]
    assert script.ready(numpy_peer) is None
    result = script.judge(numpy_peer, script.trap_cases())

    numpy_rule, exact = result["rules"]["numpy"], result["rules"]["exact"]
    assert numpy_rule["judged"] == numpy_rule["agree"] > 30 and not numpy_rule["differ"]
    assert exact["differ"], "numpy's edges are not the exact edges: some case must differ"

    # 1.0 against 2 even bins on (0.9, 1.1): numpy's middle edge rounds to 1.0,
    # the exact one is 0.9 + 0.1000000000000000888 = 1.0000000000000000555
    smallest = exact["smallest"]["neighbour bin"]
    assert smallest["input"] == {"samples": ["1.0"], "dtype": "float64", "bins": 2,
                                 "range": ["0.9", "1.1"]}
    assert (smallest["expected"], smallest["got"]) == ("bin 0", "bin 1")
    # float32(0.9) lies below the float64 bound 0.9, but on numpy's float32 edge
    outside = exact["smallest"]["counted outside the range"]
    assert outside["input"]["samples"] == [repr(float(np.float32(0.9)))]
    assert (outside["expected"], outside["got"]) == ("no bin", "bin 0")
    # every difference was shrunk to a single sample
    assert all(len(found["input"]["samples"]) == 1 for found in exact["differ"])
