"""Named cases that judge a weighted histogram: each bin's sum of weights,
exact and correctly rounded (``oracles.histogram(keys, num_bins, weights)``).

A kernel is right on a case when every bin equals the oracle's sum as a
float64 value (NaN equal to NaN; the sign of a zero is not judged). The
cases set the traps where a plausible kernel parts from the exact sum:

- ``cancel/``: weights that cancel, ``[1e16, 1.0, -1e16]`` and the like in
  one bin, in orders where left-to-right addition (``np.bincount``), atomics
  in any order, or pairwise sums lose the small ones;
- ``overflow/``: partial sums that pass the largest float64 only in some
  orders (the exact sum is finite), and exact sums past it, of either sign;
- ``range/``: huge and subnormal weights in one bin; float32 weights whose
  exact sum needs more than float32 (2^24 + 1 ones);
- ``ieee/``: NaN weights, +inf and -inf in one bin, infinities of one sign,
  zero weights of both signs;
- ``spread/``, ``carry/``: a weight of every binade in a few bins;
  70001 weights with every mantissa bit set in one; and every binade's
  largest value, repeated, in one (a kernel that splits the sum into words
  must carry them all);
- ``bulk/``: seeded uniform, normal and hot keys with float32 and float64
  weights, 0, 1, 33, 4097 and 2^16 + 3 of them, K from 1 to 4097, and
  2^17 + 3 bins (past a 16-bit bin index);
- ``runs/``: a warp's last runs of one bin summed into one lane: that lane's
  own run a single weight, runs starting a digit apart, and too far apart;
- ``bad/``: keys outside ``[0, num_bins)``, of which the first must be
  reported at its index, as the histogram kind reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIZES = (0, 1, 33, 4097, 2**16 + 3)
BINS = (1, 7, 256, 4097)


@dataclass(frozen=True)
class WeightedCase:
    """One call of ``f(keys, weights, num_bins)``."""

    name: str
    keys: np.ndarray  # 1-d integers
    weights: np.ndarray  # 1-d float32 or float64, one per key
    num_bins: int
    note: str = ""
    # Under histkit's own judge only (harness_cases): the kernels built with
    # schedule skew (warps out of step, shared memory poisoned; schedule_skew.cuh),
    # and the inputs placed against unmapped memory, "end" or "start", so a
    # read past either end faults.
    skewed: bool = False
    fenced: str = ""

    @property
    def n(self) -> int:
        return len(self.keys)

    @property
    def dtype(self) -> str:
        return f"{self.keys.dtype.name} keys, {self.weights.dtype.name} weights"

    def describe_input(self, shown: int) -> str:
        if self.n <= shown:
            return (f"keys = {self.keys.tolist()} ({self.keys.dtype.name}), weights = "
                    f"{self.weights.tolist()} ({self.weights.dtype.name}), "
                    f"num_bins = {self.num_bins}")
        return f"{self.n} keys and weights ({self.dtype}), num_bins = {self.num_bins}"


def _one_bin(name: str, weights, dtype="float64", note: str = "", num_bins: int = 1,
             key: int = 0) -> WeightedCase:
    weights = np.asarray(weights, dtype=dtype)
    keys = np.full(len(weights), key, dtype=np.int32)
    return WeightedCase(name, keys, weights, num_bins, note)


def _cancel_cases():
    yield _one_bin("cancel/1e16-1-minus-1e16", [1e16, 1.0, -1e16],
                   note="left to right: 0.0; the exact sum is 1.0")
    yield _one_bin("cancel/minus-1e16-1e16-1", [-1e16, 1e16, 1.0],
                   note="left to right is exact here; an order that adds 1.0 early is not")
    yield _one_bin("cancel/ones-beside-2pow53", [2.0**53] + [1.0] * 10 + [-(2.0**53)],
                   note="each 1.0 rounds away against 2^53: the exact sum is 10.0")
    yield _one_bin("cancel/float32/1e8-ones", [1e8] + [1.0] * 7 + [-1e8], "float32",
                   note="float32 addition loses each 1.0 against 1e8")
    rng = np.random.default_rng(7)
    big = rng.standard_normal(500) * 1e18
    small = rng.standard_normal(500)
    mixed = np.concatenate([big, small, -big])
    rng.shuffle(mixed)
    yield _one_bin("cancel/shuffled-1e18-pairs", mixed,
                   note="500 pairs of +-1e18 around 500 normal weights, shuffled")
    keys = np.tile(np.arange(4, dtype=np.int32), 3)
    weights = np.repeat(np.array([1e16, 1.0, -1e16]), 4)
    yield WeightedCase("cancel/four-bins-interleaved", keys, weights, 4,
                       "every bin 1e16, 1.0, -1e16, the keys interleaved")


def _overflow_cases():
    top = np.finfo(np.float64).max
    yield _one_bin("overflow/max-max-minus-max", [top, top, -top],
                   note="left to right the partial sum is inf; the exact sum is max")
    yield _one_bin("overflow/float32/max-max-minus-max",
                   [np.finfo(np.float32).max] * 2 + [-np.finfo(np.float32).max], "float32",
                   note="in float32 the partial sum overflows; in float64 it does not")
    yield _one_bin("overflow/exact-sum-overflows", [top, top],
                   note="the exact sum rounds past max: +inf")
    yield _one_bin("overflow/negative/max-max-minus-max", [-top, -top, top],
                   note="below -max left to right; the exact sum is -max")
    yield _one_bin("overflow/negative/exact-sum-overflows", [-top, -top],
                   note="the exact sum rounds past -max: -inf")


def _range_cases():
    tiny = np.finfo(np.float64).smallest_subnormal
    yield _one_bin("range/huge-and-subnormal", [1e308, tiny, -1e308, tiny],
                   note="the exact sum is two subnormals")
    yield _one_bin("range/subnormals-only", [tiny] * 9, note="nine smallest subnormals")
    yield _one_bin("range/float32/subnormals-only",
                   [1.4e-45] * 5 + [1e-40, -3e-42, 1.1754942e-38], "float32",
                   note="float32 subnormals alone (no normal weight hides their bits)")
    yield _one_bin("range/float32/smallest-subnormals-alone", [1.4e-45] * 3 + [2.8e-45],
                   "float32", note="a sum below 2^-146: its leading bit in the row's lowest "
                                   "32-bit word, with no word below it")
    yield _one_bin("range/tiny-normals-low-words-zero",
                   [2.0**-1010, 2.0**-1020, -(2.0**-1015), 2.0**-1040, 3 * 2.0**-1016],
                   note="weights below 2^-1006 whose bits all lie above the low 32 bits of "
                        "their unit-aligned mantissa (the low word of each is zero)")
    yield _one_bin("range/one-and-two-subnormals", [1.0, tiny, tiny],
                   note="1.0 beside the smallest subnormals, adjacent weights: runs of one "
                        "bin whose magnitudes lie 2^1073 apart; the sum rounds to 1.0")
    yield _one_bin("range/tiny-normal-sum-rounds-down", [2.0**-1012, tiny],
                   note="2^62 + 1 units of 2^-1074: the sum needs 63 bits and rounds down")
    yield _one_bin("range/tiny-normal-sum-rounds-up", [2.0**-1012, 2.0**-1065, tiny],
                   note="2^62 + 2^9 + 1 units: just past the half-way point, it rounds up")
    yield _one_bin("range/float32/2pow24-plus-one-ones", np.ones(2**24 + 1), "float32",
                   note="a float32 accumulator stops at 2^24; the sum is 2^24 + 1")
    yield _one_bin("range/half-ulp-ties", [1.0, 2.0**-53, 2.0**-53 * 1.0000001],
                   note="the tail decides the rounding: sums that drop it round down")
    yield _one_bin("range/tie-then-tail", [2.0**53, 1.0, 2.0**-60],
                   note="2^53 + 1 is a tie and the tail breaks it: 2^53 + 2; a compensated "
                        "sum rounds its 1 + 2^-60 to 1 and the tie to even, 2^53")
    yield _one_bin("range/tie-then-negative-tail", [2.0**53, 1.0, -(2.0**-60)],
                   note="just below the tie: 2^53")


def _ieee_cases():
    inf, nan = np.inf, np.nan
    yield _one_bin("ieee/nan-weight", [1.0, nan, 2.0], num_bins=2,
                   note="a NaN weight makes its bin NaN; bin 1 stays 0.0")
    yield _one_bin("ieee/plus-and-minus-inf", [inf, 1.0, -inf], note="+inf + -inf: NaN")
    yield _one_bin("ieee/infinities-of-one-sign", [inf, 5.0, inf], note="+inf")
    yield _one_bin("ieee/inf-beside-overflow", [np.finfo(np.float64).max] * 2 + [-inf],
                   note="-inf wins over a finite sum that would round to +inf")
    for dtype in ("float64", "float32"):
        keys = np.array([0, 0, 0, 1, 1, 2, 2, 2], dtype=np.int32)
        weights = np.array([0.0, 1.5, -0.0, -0.0, -0.0, 0.0, -0.0, 0.0], dtype=dtype)
        yield WeightedCase(f"ieee/{dtype}/zeros-of-both-signs", keys, weights, 4,
                           "+0.0 and -0.0 weights add nothing: bin 0 is 1.5, bins 1-3 "
                           "zero (a zero's sign is not judged)")


def _bulk_cases():
    for dtype in ("float32", "float64"):
        for n in SIZES:
            for num_bins in BINS:
                if n == 0 and num_bins != 7:
                    continue
                rng = np.random.default_rng(n * 31 + num_bins)
                keys = rng.integers(0, num_bins, n, dtype=np.int32)
                weights = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 6, n)).astype(dtype)
                yield WeightedCase(f"bulk/{dtype}/n={n}/K={num_bins}", keys, weights, num_bins,
                                   "normal weights over eleven decades, uniform keys")
        rng = np.random.default_rng(3)
        keys = np.where(rng.random(4097) < 0.9, 3, rng.integers(0, 256, 4097)).astype(np.uint8)
        weights = rng.standard_normal(4097).astype(dtype) * 1e6
        yield WeightedCase(f"bulk/{dtype}/hot-bin/uint8-keys", keys, weights, 256,
                           "nine keys in ten in bin 3, uint8 keys")
        rng = np.random.default_rng(5)
        num_bins = 2**17 + 3
        keys = rng.integers(0, num_bins, 70_001, dtype=np.int32)
        weights = (rng.standard_normal(70_001) * 1e3).astype(dtype)
        yield WeightedCase(f"bulk/{dtype}/n=70001/K={num_bins}", keys, weights, num_bins,
                           "more bins than a 16-bit bin index holds")


def _spread_cases():
    """Weights of every magnitude in a few bins: a GPU kernel that keeps some
    chunks of its sums in shared memory sends the rest elsewhere; and
    thousands of weights with every mantissa bit set, whose partial sums carry
    out of every 32-bit word again and again."""
    rng = np.random.default_rng(11)
    # Up to 2^-3 of the largest finite value: the sums stay finite.
    for dtype, low, high in (("float32", -149, 125), ("float64", -1074, 1021)):
        exponents = np.arange(low, high)
        magnitudes = np.ldexp(1.0 + rng.random(len(exponents)), exponents)
        weights = (magnitudes * rng.choice([-1.0, 1.0], len(exponents))).astype(dtype)
        keys = np.where(rng.random(len(weights)) < 0.5, 2,
                        rng.integers(0, 7, len(weights))).astype(np.int32)
        yield WeightedCase(f"spread/{dtype}/every-exponent", keys, weights, 7,
                           "a weight of each binade, signs mixed; half the keys in bin 2")
        below_one = np.nextafter(np.array(1.0, dtype), np.array(0.0, dtype))
        weights = np.full(70_001, below_one, dtype=dtype)
        weights[::7] = -weights[::7] * 3
        yield _one_bin(f"carry/{dtype}/every-mantissa-bit", weights, dtype,
                       note="70001 weights of +-(1 - ulp) and 3x that: words wrap often")
    # Every digit of a row overflows: each binade's largest value (every
    # mantissa bit set), repeated, shuffled so that every launch of a few
    # thousand weights reaches every digit. The sum stays finite (in float32
    # too, for float32 weights).
    for dtype, low, high, repeats in (("float32", -149, 120, 32), ("float64", -1074, 1017, 8)):
        tops = np.nextafter(np.ldexp(1.0, np.arange(low, high) + 1).astype(dtype),
                            np.array(0.0, dtype))
        weights = np.repeat(tops, repeats)
        rng.shuffle(weights)
        yield _one_bin(f"carry/{dtype}/every-digit-carries", weights, dtype,
                       note=f"the largest value of every binade, {repeats} times each, "
                            "shuffled: every digit of the sum carries")


def _run_cases():
    """4096 weights of bin 0 (of 256), so that the warp walking the last of
    them (the last of 32 warps of 128 weights in the default launch, the one
    warp of the long-runs column) ends with every lane in a run of bin 0 from
    the digit of 1.0, which the warp sums into lane 0: lane 0's run one weight
    (a huge weight and its negation before it break its run, and cancel, so
    that the sum rounds to an integer), lane 1's holding 2^17 a digit up. A
    kernel that flushes lane 0 as one weight loses lane 1's 2^17."""
    for dtype, huge in (("float32", 2.0**100), ("float64", 2.0**200)):
        weights = np.ones(4096, dtype=dtype)
        weights[4096 - 96] = huge  # lane 0's two weights before its last
        weights[4096 - 64] = -huge
        weights[4096 - 31] = 2.0**17  # lane 1's last
        yield _one_bin(f"runs/{dtype}/warp-sum-lane-0-alone", weights, dtype, num_bins=256,
                       note="ones in bin 0; lane 0's last run one weight, lane 1's a digit wider")
    # The warp sums its lanes' runs digit by digit, aligned: lane 1's last run
    # starts at 2^17 (a digit above 1.0, then its ones), the others' at 1.0;
    # then lane 1's last run is one weight too far above the others' to align
    # (the warp must flush lane by lane).
    for dtype, far in (("float32", 2.0**120), ("float64", 2.0**300)):
        weights = np.ones(4096, dtype=dtype)
        weights[4096 - 127] = 2.0**17  # lane 1's first of the last warp
        yield _one_bin(f"runs/{dtype}/warp-sum-starts-a-digit-apart", weights, dtype,
                       num_bins=256, note="ones in bin 0; lane 1's last run starts at 2^17")
        weights = np.ones(4096, dtype=dtype)
        weights[4096 - 31] = far  # lane 1's last of the last warp
        yield _one_bin(f"runs/{dtype}/warp-sum-starts-far-apart", weights, dtype,
                       num_bins=256, note=f"ones in bin 0; lane 1's last run {far:g} alone")


def _bad_key_cases():
    keys = np.array([0, 1, 2, 5, 1], dtype=np.int32)
    yield WeightedCase("bad/key-equal-to-num-bins", keys, np.ones(5), 5, "key 5 at index 3")
    yield WeightedCase("bad/negative-key", np.array([1, -1, 0], dtype=np.int64),
                       np.ones(3, np.float32), 2, "key -1 at index 1")
    keys = np.arange(5000, dtype=np.int64) % 9
    keys[4500] = 9
    yield WeightedCase("bad/late-key", keys, np.full(5000, 0.5), 9,
                       "key 9 (num_bins) at index 4500, after many valid keys")
    yield WeightedCase("bad/two-bad-keys", np.array([5, 0, 7], dtype=np.int32),
                       np.array([1.0, 2.0, 3.0]), 2, "keys 5 and 7: the first at index 0")
    keys = np.arange(70_001, dtype=np.int64) % 9
    keys[[33_000, 52_000, 69_999]] = (9, -1, 1000)
    yield WeightedCase("bad/keys-far-apart", keys, np.full(70_001, 0.25), 9,
                       "keys 9, -1 and 1000 at 33000, 52000 and 69999: the first at 33000")


def harness_cases() -> list[WeightedCase]:
    """Cases for histkit's own weighted kernels under the conformance harness
    (``histkit.conformance.weighted``; a user's callable is judged on
    ``weighted_cases``): skewed, where a warp that starts adding before
    another has zeroed its shared sums loses weights, and fenced, where a
    load one past the last key or weight (or before the first) faults. Each
    with keys over a few hundred bins, so the shared sums are in use."""
    found = []
    for dtype, n, num_bins in (("float64", 20_011, 256), ("float32", 70_001, 4097),
                               ("float64", 4_099, 7)):
        rng = np.random.default_rng(n)
        keys = rng.integers(0, num_bins, n, dtype=np.int32)
        weights = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
        found.append(WeightedCase(f"skewed/{dtype}/n={n}/K={num_bins}", keys, weights,
                                  num_bins, "warps out of step", skewed=True))
    for fence, dtype, n, num_bins in (("end", "float64", 10_007, 256),
                                      ("end", "float32", 4_097, 7),
                                      ("start", "float32", 5_003, 256)):
        rng = np.random.default_rng(n + 1)
        keys = rng.integers(0, num_bins, n, dtype=np.int64 if n % 2 else np.int32)
        weights = rng.standard_normal(n).astype(dtype)
        found.append(WeightedCase(f"fenced-at-{fence}/{dtype}/n={n}/K={num_bins}", keys,
                                  weights, num_bins, f"unmapped memory at the {fence}",
                                  fenced=fence))
    for case in found:
        case.keys.flags.writeable = case.weights.flags.writeable = False
    return found


def weighted_cases() -> list[WeightedCase]:
    """The named cases, in a fixed order (each call regenerates the same arrays)."""
    cases = [case for group in (_cancel_cases, _overflow_cases, _range_cases, _ieee_cases,
                                _bulk_cases, _spread_cases, _run_cases, _bad_key_cases)
             for case in group()]
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        raise ValueError("duplicate weighted case names")
    for case in cases:
        case.keys.flags.writeable = case.weights.flags.writeable = False
    return cases
