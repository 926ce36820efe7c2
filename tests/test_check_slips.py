"""histkit check on slips a port of the chapter's kernels makes beside the
counting itself (no GPU): each is planted in a correct example callable,
fails on the matrix case built for it, and passes ordinary cases, so that
the case, not some other, is what catches it."""

import sys
from pathlib import Path

import numpy as np
import pytest

from histkit.conformance import check
from histkit.conformance.binning_cases import bin_cases
from histkit.conformance.cases import all_cases, cases_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples.python_kernels import (  # noqa: E402
    _reject_bad_keys,
    bin_by_edges,
    exclusive_scan,
    histogram,
)


def _bad_from_two_words(keys, num_bins):
    """Bad keys noted in two words, one per sign; the too-large one reported first."""
    wide = keys.astype(np.int64) if keys.dtype.kind == "i" else keys.astype(np.uint64)
    large = np.flatnonzero(wide >= num_bins)
    negative = np.flatnonzero(wide < 0) if keys.dtype.kind == "i" else []
    for found in (large, negative):
        if len(found):
            raise ValueError(f"key at index {found[0]} is outside [0, {num_bins})")
    return histogram(keys, num_bins)


def _no_check_where_the_dtype_cannot_pass_k(keys, num_bins):
    """The bound check skipped when K >= the dtype's largest value (it should be >)."""
    if num_bins < np.iinfo(keys.dtype).max:
        _reject_bad_keys(keys, num_bins)
    return np.bincount(keys.astype(np.int64) % num_bins, minlength=num_bins)


def _narrowed_to_32_bits(keys, num_bins):
    """64-bit keys narrowed to 32 bits before the bound check."""
    if keys.dtype.itemsize == 8:
        keys = keys.astype(np.uint32 if keys.dtype.kind == "u" else np.int32)
    return histogram(keys, num_bins)


def _unchecked_tail(keys, num_bins):
    """The scalar tail after 16-byte vectors (keys past the last whole vector)
    drops bad keys instead of reporting them; int32 keys take another path."""
    if keys.dtype == np.int32:
        return histogram(keys, num_bins)
    whole = len(keys) - len(keys) % (16 // keys.dtype.itemsize)
    _reject_bad_keys(keys[:whole], num_bins)
    tail = keys[whole:]
    kept = tail[(tail >= 0) & (tail < num_bins)]
    return np.bincount(np.concatenate([keys[:whole], kept]).astype(np.int64),
                       minlength=num_bins)


def _grid_capped(keys, num_bins):
    """One key a thread on at most 65535 blocks of 256: the rest never counted."""
    return histogram(keys[:65535 * 256], num_bins)


def _float32_counts(keys, num_bins):
    """Counts accumulated in float32, exact up to 2^24."""
    counts = histogram(keys, num_bins).astype(np.float32)
    return counts.astype(np.int64)


def _two_level_scan_of_8192_count_tiles(counts):
    """Tiles of 8192 counts, whose sums one block of 1024 threads scans: tiles
    past the 1024th get no carry."""
    offsets = exclusive_scan(counts)
    tile = 8192
    past = 1024 * tile
    if len(counts) > past:
        offsets[past:] -= offsets[past]
    return offsets


@pytest.mark.parametrize("callable_, kind, where", [
    (_bad_from_two_words, "histogram",
     "uniform/N=20011/K=100/int8/bad=negative-before-large"),
    (_no_check_where_the_dtype_cannot_pass_k, "histogram",
     "uniform/N=20011/K=255/uint8/bad=spread"),
    (_narrowed_to_32_bits, "histogram", "uniform/N=5003/K=1000/uint64/bad=value3"),
    (_unchecked_tail, "histogram", "uniform/N=100003/K=100/int8/bad=last"),
    (_grid_capped, "histogram", "onebin/N=16777217/K=1/uint8"),
    (_float32_counts, "histogram", "onebin/N=16777217/K=1/uint8"),
    (_two_level_scan_of_8192_count_tiles, "scan", "uniform/N=8388609/scan-counts"),
], ids=["two_sign_words", "k_at_dtype_max", "narrowed_64_bit_keys", "unchecked_tail",
        "grid_capped", "float32_counts", "two_level_scan"])
def test_a_slip_beside_the_counting_fails_on_the_case_built_for_it(callable_, kind, where):
    named = {case.name: case for case in cases_for(kind)}
    matches = [name for name in named if name.startswith(where)]
    assert matches, f"no {kind} case named {where}*: {sorted(named)[:5]}"
    report = check(callable_, kind, in_process=True, cases=[named[matches[0]]],
                   shrink_failures=False)
    assert not report.passed
    ordinary = [named[name] for name in named if name.startswith("uniform/N=257/K=10/int32")]
    assert ordinary and check(callable_, kind, in_process=True, cases=ordinary).passed


def _bins_as_exact_fractions(samples, bins, range):
    """Integer samples binned as floor((x - lo) * bins / (hi - lo)) exactly,
    as CUB's integer levels are; numpy bins against float64 edges."""
    if samples.dtype.kind in "iu" and isinstance(bins, int) and range is not None:
        lo, hi = range
        x = samples.astype(np.int64)
        inside = (x >= lo) & (x <= hi)
        index = np.minimum((x[inside] - lo) * bins // (hi - lo), bins - 1)
        return np.bincount(index, minlength=bins)
    return bin_by_edges(samples, bins, range)


def _edges_in_the_samples_dtype(samples, bins, range):
    """Explicit edges cast to the samples' float dtype (one type for both)."""
    if samples.dtype.kind == "f" and not isinstance(bins, int):
        bins = np.asarray(bins).astype(samples.dtype)
    return bin_by_edges(samples, bins, range)


def _bin_index_in_16_bits(samples, bins, range):
    counts = bin_by_edges(samples, bins, range)
    if len(counts) > 65536:
        counts[0] += counts[65536:].sum()
        counts[65536:] = 0
    return counts


@pytest.mark.parametrize("callable_, where", [
    (_bins_as_exact_fractions, "mixed/uint8/integers-on-edges-past-whole"),
    (_edges_in_the_samples_dtype, "mixed/float32/float64-edges"),
    (_bin_index_in_16_bits, "mixed/float64/bins=65537"),
], ids=["exact_fractions", "edges_in_samples_dtype", "bin_index_16_bits"])
def test_a_binning_slip_of_precision_fails_on_the_case_built_for_it(callable_, where):
    named = {case.name: case for case in bin_cases()}
    report = check(callable_, "bin-histogram", in_process=True, cases=[named[where]],
                   shrink_failures=False)
    assert not report.passed
    assert check(callable_, "bin-histogram", in_process=True,
                 cases=[named["int/int8/range-python-int"]]).passed


def test_every_new_bad_pattern_plants_one_key_of_each_sign_in_order():
    for case in all_cases(True):
        if case.bad in ("negative-before-large", "large-before-negative"):
            keys = case.keys()
            bad = np.flatnonzero((keys < 0) | (keys >= case.num_bins))
            assert len(bad) == 2
            assert (keys[bad[0]] < 0) == (case.bad == "negative-before-large")
