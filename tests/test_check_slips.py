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
    privatized,
    wave_histogram,
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


def _stable_by(keys, sort_key):
    """A stable sort of keys (checked first) by sort_key, the slip's view of them."""
    order = np.argsort(sort_key, kind="stable")
    return keys[order], order


def _checked_stable_by(keys, num_bins, sort_key):
    _reject_bad_keys(keys, num_bins)
    return _stable_by(keys, sort_key)


def _keys_ordered_as_float32(keys, num_bins):
    """Keys compared as float32 values: past 2^24 neighbours tie."""
    return _checked_stable_by(keys, num_bins, keys.astype(np.float32))


def _key_packed_in_24_bits(keys, num_bins):
    """Key and index packed in one word that leaves the key 24 bits."""
    return _checked_stable_by(keys, num_bins, keys.astype(np.int64) & 0xFFFFFF)


def _uint32_keys_as_uint16(keys, num_bins):
    """uint32 keys dispatched to the kernel built for unsigned short."""
    narrow = keys.astype(np.uint16) if keys.dtype == np.uint32 else keys
    return _checked_stable_by(keys, num_bins, narrow)


def _digit_pass_skipped_where_the_ends_share_it(keys, num_bins):
    """An 8-bit digit pass skipped where the smallest and largest keys share
    that digit (as if every key did)."""
    _reject_bad_keys(keys, num_bins)
    wide = keys.astype(np.int64)
    order = np.arange(len(keys))
    for shift in range(0, max(int(num_bins - 1).bit_length(), 1), 8):
        digit = (wide[order] >> shift) & 0xFF
        if len(keys) and (wide.min() >> shift) & 0xFF == (wide.max() >> shift) & 0xFF:
            continue
        order = order[np.argsort(digit, kind="stable")]
    return keys[order], order


def _alike_test_reads_whole_vectors_only(keys, num_bins):
    """Keys taken as already sorted when every key of the whole 4-key vectors
    is alike: the scalar tail is left out of the test."""
    _reject_bad_keys(keys, num_bins)
    body = keys[:len(keys) - len(keys) % 4]
    if len(body) and (body == body[0]).all():
        return keys.copy(), np.arange(len(keys))
    return _stable_by(keys, keys)


def _equal_keys_reversed_in_fours_on_the_one_block_path(keys, num_bins):
    """Between 1024 and 4096 keys (one block, 4 keys a thread), each thread
    ranks its own equal keys from its last one back."""
    _reject_bad_keys(keys, num_bins)
    i = np.arange(len(keys))
    if not 1024 < len(keys) <= 4096:
        return _stable_by(keys, keys)
    order = np.lexsort((i // 4 * 4 + 3 - i % 4, keys.astype(np.int64)))
    return keys[order], order


def _sorted_input_checked_by_its_last_key(keys, num_bins):
    """An already sorted input returned as it is once its last key is < K (its
    first key, which could be negative, unchecked)."""
    if len(keys) and (np.diff(keys.astype(np.int64)) >= 0).all() and keys[-1] < num_bins:
        return keys.copy(), np.arange(len(keys))
    return _checked_stable_by(keys, num_bins, keys)


def _one_bin_unchecked(keys, num_bins):
    """K = 1 counted as len(keys) in bin 0, no key read."""
    return np.array([len(keys)]) if num_bins == 1 else histogram(keys, num_bins)


def _negative_tail_unchecked(keys, num_bins):
    """The scalar tail after 16-byte vectors checks keys against K but not
    against 0 (negative tail keys dropped)."""
    whole = len(keys) - len(keys) % (16 // keys.dtype.itemsize)
    _reject_bad_keys(keys[:whole], num_bins)
    tail = keys[whole:]
    _reject_bad_keys(tail[tail >= 0], num_bins)
    return np.bincount(np.concatenate([keys[:whole], tail[tail >= 0]]).astype(np.int64),
                       minlength=num_bins)


def _bins_past_4096_not_zeroed(keys, num_bins):
    """A shared-memory zeroing loop bounded by a fixed 4096 bins, on the path
    for 4096 < K <= 6144: the bins past it start from a stale 1."""
    counts = histogram(keys, num_bins)
    if 4096 < num_bins <= 6144:
        counts[4096:] += 1
    return counts


def _counts_loaded_as_32_bits(counts):
    """Counts loaded as 32 bits (summed in 64): a count past 2^32 wraps."""
    return exclusive_scan(counts.astype(np.uint32).astype(np.int64))


def _two_levels_of_4096_count_tiles(counts):
    """Tiles of 4096 counts and one level of tile sums, which a tile scans:
    past 4096 x 4096 counts the tiles get no carry."""
    offsets = exclusive_scan(counts)
    past = 4096 * 4096
    if len(counts) > past:
        offsets[past:] -= offsets[past]
    return offsets


def _radix_alike_test_reads_whole_vectors_only(keys):
    """A radix sort that returns its input as sorted when the whole 4-key
    vectors are alike (the scalar tail unread)."""
    body = keys[:len(keys) - len(keys) % 4]
    if len(body) and (body == body[0]).all():
        return keys.copy(), np.arange(len(keys))
    return _stable_by(keys, keys)


def _radix_keys_returned_as_float64(keys):
    """Sorted keys handed back as float64: past 2^53 they round."""
    sorted_keys, order = _stable_by(keys, keys)
    return sorted_keys.astype(np.float64), order


def _bad_index_within_its_chunk(keys, num_bins):
    """Keys checked in chunks of 2^20, a bad key reported by its index in its chunk."""
    bad = np.flatnonzero((keys < 0) | (keys >= num_bins))
    if len(bad):
        raise ValueError(f"key at index {bad[0] % (1 << 20)} is outside [0, {num_bins})")
    return histogram(keys, num_bins)


@pytest.mark.parametrize("callable_, kind, where", [
    (_bad_index_within_its_chunk, "histogram", "uniform/N=1048579/K=256/int32/bad=last"),
    (_keys_ordered_as_float32, "stable-sort", "powers/N=3001/K=16777221/int32"),
    (_key_packed_in_24_bits, "stable-sort", "powers/N=3001/K=16777221/int32"),
    (_uint32_keys_as_uint16, "stable-sort", "powers/N=3001/K=65537/uint32"),
    (_digit_pass_skipped_where_the_ends_share_it, "stable-sort",
     "powers/N=3001/K=257/uint16"),
    (_alike_test_reads_whole_vectors_only, "stable-sort", "last-apart/N=4095/K=2/int32"),
    (_equal_keys_reversed_in_fours_on_the_one_block_path, "stable-sort",
     "last-apart/N=4095/K=2/int32"),
    (_sorted_input_checked_by_its_last_key, "stable-sort",
     "sorted/N=4099/K=100/int32/bad=first-negative"),
    (_one_bin_unchecked, "histogram", "uniform/N=257/K=1/int32/bad=last"),
    (_negative_tail_unchecked, "histogram", "uniform/N=100003/K=100/int32/bad=last-negative"),
    (_bins_past_4096_not_zeroed, "histogram", "uniform/N=20011/K=6000/int32"),
    (_counts_loaded_as_32_bits, "scan", "powers/N=3001/scan-counts"),
    (_two_levels_of_4096_count_tiles, "scan", "uniform/N=16777217/scan-counts"),
], ids=["bad_index_in_chunk", "float32_keys", "packed_24_bits", "uint32_as_uint16",
        "digit_skipped_by_ends",
        "alike_test_without_tail", "equal_keys_reversed", "sorted_checked_by_last_key",
        "one_bin_unchecked", "negative_tail_unchecked", "bins_not_zeroed",
        "counts_as_32_bits", "two_level_4096_tiles"])
def test_a_shortcut_s_slip_fails_on_the_case_built_for_it(callable_, kind, where):
    test_a_slip_beside_the_counting_fails_on_the_case_built_for_it(callable_, kind, where)


@pytest.mark.parametrize("callable_, where", [
    (_radix_alike_test_reads_whole_vectors_only, "last-apart/N=4099/full-width/int32"),
    (_radix_keys_returned_as_float64, "uniform/N=70001/full-width/int64"),
], ids=["alike_test_without_tail", "float64_keys"])
def test_a_radix_sort_slip_fails_on_the_case_built_for_it(callable_, where):
    named = {case.name: case for case in cases_for("radix-sort")}
    report = check(callable_, "radix-sort", in_process=True, cases=[named[where]],
                   shrink_failures=False)
    assert not report.passed
    assert check(callable_, "radix-sort", in_process=True,
                 cases=[named["uniform/N=257/full-width/int32"]]).passed


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


def _unaligned_head(array) -> int:
    """How many elements a 16-byte vector walk leaves before its first vector."""
    return (-array.ctypes.data % 16) // array.itemsize


def _histogram_of_the_vectors_only(keys, num_bins):
    """The scalar head before the first 16-byte-aligned vector never counted."""
    return histogram(keys[_unaligned_head(keys):], num_bins)


def _binning_of_the_vectors_only(samples, bins, range):
    return bin_by_edges(samples[_unaligned_head(samples):], bins, range)


def test_a_callable_meets_a_misaligned_case_as_a_misaligned_array():
    named = {case.name: case for case in cases_for("histogram")}
    misaligned, ordinary = named["uniform/N=10008/K=100/int8/offset=1"], named[
        "uniform/N=257/K=10/int32"]
    assert not check(_histogram_of_the_vectors_only, "histogram", cases=[misaligned],
                     shrink_failures=False).passed
    assert check(_histogram_of_the_vectors_only, "histogram", cases=[ordinary]).passed
    named = {case.name: case for case in bin_cases()}
    assert not check(_binning_of_the_vectors_only, "bin-histogram", in_process=True,
                     cases=[named["view/float32/normal/n=4097/even/misaligned"]],
                     shrink_failures=False).passed
    assert check(_binning_of_the_vectors_only, "bin-histogram", in_process=True,
                 cases=[named["int/int8/range-python-int"]]).passed


def _wave_index_by_shift(keys, num_bins, warp_size=32):
    """A key's wave taken as i >> int(log2(warp_size)): waves of the power of two below."""
    return wave_histogram(keys, num_bins, 1 << int(np.log2(warp_size)))


def _lanes_in_a_32_bit_mask(keys, num_bins, warp_size=32):
    """Lanes deduplicated through a 32-bit mask: a wider wave counted as 32-lane ones."""
    return wave_histogram(keys, num_bins, min(warp_size, 32))


@pytest.mark.parametrize("callable_, width", [(_wave_index_by_shift, 24),
                                              (_lanes_in_a_32_bit_mask, 64)])
def test_a_wave_callable_is_judged_at_widths_beside_its_own(callable_, width):
    keys = np.zeros(200, np.int32)
    told = f"when called with warp_size={width}, right at warp_size=32"
    report = check(callable_, "wave", in_process=True, keys=keys, num_bins=1)
    assert not report.passed and told in report.failures[0].detail
    assert check(wave_histogram, "wave", in_process=True, keys=keys, num_bins=1).passed


def _stride_of_256_blocks(keys, num_bins, block_size=256, num_blocks=1):
    """Block b starts at b * block_size but strides by 256 * num_blocks."""
    starts = [s for b in range(num_blocks) for s in range(b * block_size, len(keys),
                                                         256 * num_blocks)]
    covered = np.concatenate([keys[s:s + block_size] for s in starts] or [keys[:0]])
    return histogram(covered, num_bins), num_blocks * num_bins


def _idle_blocks_skip_their_merge(keys, num_bins, block_size=256, num_blocks=1):
    """A block past the last key returns before merging its (empty) copy."""
    busy = sum(b * block_size < len(keys) for b in range(num_blocks))
    return histogram(keys, num_bins), busy * num_bins


def _atomics_as_a_float_estimate(keys, num_bins, block_size=256, num_blocks=1):
    counts, atomics = privatized(keys, num_bins, block_size, num_blocks)
    return counts, atomics + 0.5


@pytest.mark.parametrize("callable_, says", [
    (_stride_of_256_blocks, "when called with block_size=128, num_blocks=2"),
    (_idle_blocks_skip_their_merge, "when called with block_size=128, num_blocks=2"),
    (_atomics_as_a_float_estimate, "global_atomics an integer"),
])
def test_a_privatized_callable_is_judged_on_a_second_launch_and_an_integer_count(callable_,
                                                                               says):
    keys = np.arange(512, dtype=np.int32) % 7 if callable_ is _stride_of_256_blocks else \
        np.zeros(1, np.int32)
    report = check(callable_, "privatized", in_process=True, keys=keys, num_bins=7)
    assert not report.passed and says in report.failures[0].detail
    assert check(privatized, "privatized", in_process=True, keys=keys, num_bins=7).passed

