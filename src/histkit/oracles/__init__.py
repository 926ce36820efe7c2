"""CPU oracles: the ground truth every histkit GPU kernel is judged against.

Each function models one thing the chapter (Chapter 7: Histograms) describes:

- `histogram` -- the exact count, what ``atomicAdd`` achieves (7.1); with
  weights, each bin's exact sum rounded once to float64;
- `naive_wave_histogram` -- the lockstep-wave model of a non-atomic
  ``hist[b]++`` (7.1);
- `privatized_histogram` -- the shared-memory privatized kernel and the
  number of global atomics it issues (7.2);
- `exclusive_scan` -- counts to offsets (7.3, via Chapter 5);
- `counting_sort` -- the stable counting sort (7.3);
- `radix_sort`, `argsort` -- the counting sort once per digit, for
  full-width keys (7.3's pointer to radix sort);
- `bin_histogram` -- real-valued samples into bins by range or edges,
  bin-exactly as ``np.histogram`` bins them (`Flow` names its flow tallies);
- `release_pages` -- hands the pages pooled for the sorts' results back to
  the operating system.

Keys may have any integer dtype and any stride; counts and indices are int64.
A key outside ``[0, num_bins)`` raises ``BadKeyError`` (a ``ValueError``)
naming the first bad index and value; nothing is clipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from histkit.oracles import _pages
from histkit.oracles._bin_rule import Flow, NumpyFailsError, as_sample_array
from histkit.oracles._binned import TALLIES, bin_samples
from histkit.oracles._histogram import histogram_counts
from histkit.oracles._inputs import (
    BadKeyError,
    as_array,
    as_key_array,
    as_weight_array,
    bad_key_before_counters,
    bin_count,
    boolean,
    flat_sample_weights,
    positive_int,
    raise_bad_key,
    refuse_bad_counts,
    require_memory,
    values_per_key_error,
)
from histkit.oracles._scan import exclusive_scan_counts
from histkit.oracles._sort import counting_sort_arrays
from histkit.oracles._threads import idle_cpus
from histkit.oracles._wave import naive_wave_counts
from histkit.oracles._weighted import weighted_sums

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BadKeyError",
    "Flow",
    "NumpyFailsError",
    "argsort",
    "bin_histogram",
    "counting_sort",
    "exclusive_scan",
    "histogram",
    "naive_wave_histogram",
    "privatized_histogram",
    "radix_sort",
    "release_pages",
]


def __dir__() -> list[str]:
    """The public names (what tab completion offers), not the imports."""
    return sorted(__all__)


WARP_SIZE = 32
BLOCK_SIZE = 256


def _counts_fit(num_bins: int) -> None:
    require_memory(8 * num_bins, f"num_bins={num_bins} (int64 counts)")


@overload
def histogram(keys: ArrayLike, num_bins: int, weights: None = None) -> NDArray[np.int64]: ...
@overload
def histogram(keys: ArrayLike, num_bins: int, weights: ArrayLike) -> NDArray[np.float64]: ...


def histogram(keys: ArrayLike, num_bins: int,
              weights: ArrayLike | None = None) -> NDArray[np.int64] | NDArray[np.float64]:
    """Exact histogram of keys into num_bins bins: int64 counts, or with
    `weights` each bin's exact sum of weights rounded once to float64.

    The counts are what ``atomicAdd`` (or any lossless kernel) must give (7.1).
    NumPy equivalent: ``np.bincount(keys, weights, minlength=num_bins)``.

    With `weights`, ``sums[b]`` is the exact sum of the weights of the keys
    equal to ``b``, correctly rounded (half to even) to float64: what
    ``math.fsum`` returns for them. It does not depend on the order of the
    keys or on how many threads add them, so it has the same bits on every
    run and machine; ``np.bincount`` adds left to right and keeps every
    step's rounding. NaN and infinities follow IEEE addition: a NaN weight
    makes its bin NaN, +inf and -inf in one bin make it NaN, infinities of one
    sign make it that infinity, and a bin whose exact sum rounds past the
    largest float64 is +-inf. A bin that sums to exactly zero (an empty bin
    included) is +0.0.

    Parameters
    ----------
    keys : array_like
        One-dimensional integer keys of any integer dtype (int8 ... uint64),
        contiguous or strided.
    num_bins : int
        The number of bins, K >= 1. Every key must lie in ``[0, num_bins)``.
    weights : array_like, optional
        One weight per key, one-dimensional, any stride: float16, float32,
        float64 or any integer dtype, each summed exactly (integers too, past
        2^53). float16 and integers narrower than 64 bits are widened first,
        a copy.

    Returns
    -------
    numpy.ndarray
        Without `weights`, int64 counts of length `num_bins`: ``counts[b]``
        keys equal ``b``. With `weights`, float64 sums of length `num_bins`.

    Raises
    ------
    BadKeyError
        A key outside ``[0, num_bins)``; names the first such index and value.
    TypeError
        Keys that are not integers (float, bool, complex, object); weights
        that are neither floats of up to 64 bits nor integers (bool, complex,
        long double, object).
    ValueError
        Keys or weights that are not one-dimensional, weights not one per
        key, or `num_bins` out of range. Raised before any work.
    MemoryError
        The counts or the sums' working memory would not fit.

    Notes
    -----
    The weights are summed as integers in units of 2^-1074, the smallest
    subnormal, which every float64, float32 and integer weight is a multiple
    of; integer addition does not round, so any order and any split over
    threads gives the same integer, which is rounded once at the end. Float
    weights are first tried in two 128-bit integers per bin (positive and
    negative weights) within a window of binades placed from a sample of
    the weights, with headroom for every add; the few weights outside it
    are added exactly when the bin is rounded. Otherwise each bin's integer
    is held in 32-bit chunks, one per int64 slot, as many as its weights can
    reach (67 for float64, 11 for float32, 4 for 64-bit integers), plus a
    slot of NaN and infinity flags. Up to 131072 bins, and with at least as
    many weights as bins, each thread adds into its own accumulators or
    rows and they are summed at the end; past that, the weights are first
    grouped by bin, which costs a copy of the weights and two int64 per bin,
    and each bin's run is summed in a single row.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import oracles
    >>> oracles.histogram(np.array([0, 1, 1, 3]), 4)
    array([1, 2, 0, 1])
    >>> oracles.histogram([0, 5, 1, 7], 4)
    Traceback (most recent call last):
    ...
    histkit.oracles.BadKeyError: key at index 1 is 5, outside [0, 4)

    Weights that cancel: the exact sum, where summing in order loses the 1.0.

    >>> keys = np.array([0, 0, 0, 1])
    >>> weights = np.array([1e16, 1.0, -1e16, 0.5])
    >>> oracles.histogram(keys, 2, weights)
    array([1. , 0.5])
    >>> np.bincount(keys, weights, minlength=2)
    array([0. , 0.5])
    >>> oracles.histogram(keys, 2, [np.inf, 1.0, -np.inf, np.inf])
    array([nan, inf])
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    if weights is not None:
        weights = as_weight_array(weights, len(keys))
    bad_key_before_counters(keys, num_bins)
    if weights is not None:
        require_memory(8 * num_bins, f"num_bins={num_bins} (float64 sums)")
        sums, bad = weighted_sums(keys, weights, num_bins, idle_cpus(len(keys)))
        if bad >= 0:
            raise_bad_key(keys, bad, num_bins)
        return sums
    _counts_fit(num_bins)
    counts, bad = histogram_counts(keys, num_bins, idle_cpus(len(keys)))
    if bad >= 0:
        raise_bad_key(keys, bad, num_bins)
    return counts


def bin_histogram(
    samples: ArrayLike,
    bins: int | ArrayLike,
    range: tuple[float, float] | None = None,
    *,
    right_closed_last: bool = True,
    flow: bool = False,
    weights: ArrayLike | None = None,
) -> tuple[NDArray, NDArray] | tuple[NDArray, NDArray, Flow]:
    """Histogram of real-valued samples, bin-exactly as ``np.histogram`` gives it.

    NumPy equivalent: ``np.histogram(samples, bins, range)``; the counts and the
    edges are equal bit for bit wherever numpy gives a result, and where numpy
    fails this raises (NaN edges and bool inputs, which numpy takes, raise
    too). The edges are numpy's: for an
    int `bins`, ``np.linspace(lo, hi, bins + 1)`` in the dtype numpy picks
    (float32 for float32 samples and a Python-float range; float64 for integer
    samples). A sample belongs to bin ``i`` when ``edges[i] <= x < edges[i + 1]``,
    the last bin closed. For even bins numpy estimates the bin as
    ``((x - lo) / (hi - lo)) * bins``, each step in its own dtype, then corrects
    the estimate once down and once up against the edges; that is reproduced
    step for step, so samples are cast to the edges' dtype first (int64 past
    2^53 rounds) exactly where numpy casts them.

    Parameters
    ----------
    samples : array_like
        Values of a float16, float32, float64 or integer dtype, any shape
        (flattened, as numpy does). NaN samples are never counted.
    bins : int or array_like
        The number of even bins over `range`, or a 1-d array of edges, not
        decreasing (then `range` is ignored, as numpy ignores it).
    range : (lo, hi), optional
        The span of the even bins; samples outside it are not counted. Default:
        the samples' min and max, and ``(lo - 0.5, hi + 0.5)`` when they are
        equal (numpy's rule; for float16 samples past 2048 the span does not
        widen and too-many-bins is raised, as numpy does).
    right_closed_last : bool, default True
        False gives CUB's convention (``HistogramEven``, ``HistogramRange``):
        every bin half-open, so a sample on the top edge is not counted. It is
        a parameter of numpy's rule, not another rule: where numpy's even-bin
        estimate places a sample outside its edges (float16 arithmetic,
        subnormal spans), the sample stays where numpy places it.
    flow : bool, default False
        Also return the samples no bin holds, as ``Flow(underflow, overflow,
        nan)``: NaN, and the others by numpy's own test against `range`
        (below its low end, above its high end, or on it when
        `right_closed_last` is False or one edge makes no bin). With explicit
        edges, or a `range` whose ends are the edges' ends, that is below the
        first edge and above the last; where the ends differ from the
        computed edges (int64 bounds past 2^53 that round, float16 edges of a
        float64 `range`), the tallies follow `range`.
    weights : array_like, optional
        One weight per sample, of the samples' shape (float16, float32,
        float64 or integer). Each bin then gets the exact sum of its samples'
        weights rounded once to float64, as `histogram` sums them (numpy adds
        them in float64 in its own order, which rounds: ``[1e16, 1.0,
        -1e16]`` in one bin gives 0.0 there, 1.0 here); the bins are the
        same as without weights.

    Returns
    -------
    counts : numpy.ndarray
        int64, one per bin; with `weights`, float64 sums.
    edges : numpy.ndarray
        The bin edges, one more than the bins, in numpy's dtype (the `bins`
        array itself when edges are given).
    flow : Flow
        Only with ``flow=True``: ``(underflow, overflow, nan)`` counts (with
        `weights`, the exact sums of those samples' weights).

    Raises
    ------
    TypeError
        Samples, `range` or edges of a dtype other than float16/32/64 or
        integer (bool and complex included); `bins` neither an int nor an
        array (a float, a bool, an estimator name such as ``"auto"``).
    ValueError
        A `range` that is NaN, infinite or has ``lo > hi``; NaN or infinite
        samples with no `range`; ``bins < 1``; `bins` of two or more
        dimensions; more bins than the edges' dtype can separate; edges that
        decrease or hold NaN; a span so wide that numpy's estimate overflows
        for some sample (np.histogram raises on it too). All but the last are
        raised before any counting.
    OverflowError
        Python-int bounds whose difference numpy takes in int64 and int64
        cannot hold (np.histogram raises the same).
    MemoryError
        The counts would not fit in memory.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import oracles
    >>> oracles.bin_histogram([0.5, 1.0, 2.0, 3.0], 3, range=(0, 3))
    (array([1, 1, 2]), array([0., 1., 2., 3.]))

    The naive estimate puts 33 into bin 32 here; numpy's rule, and so this
    oracle, puts it into bin 33:

    >>> counts, _ = oracles.bin_histogram([33.0], 126, range=(0, 126))
    >>> int(np.flatnonzero(counts)[0])
    33

    Flow bins, and CUB's convention (the top edge excluded):

    >>> x = [-1.0, 0.0, 0.5, 1.0, np.nan]
    >>> oracles.bin_histogram(x, 2, range=(0, 1), flow=True)
    (array([1, 2]), array([0. , 0.5, 1. ]), Flow(underflow=1, overflow=0, nan=1))
    >>> oracles.bin_histogram(x, 2, range=(0, 1), right_closed_last=False, flow=True)[2]
    Flow(underflow=1, overflow=1, nan=1)
    >>> oracles.bin_histogram(x, [0, 0.5, 1])[0]
    array([1, 2])
    >>> oracles.bin_histogram(x, 2)
    Traceback (most recent call last):
    ...
    ValueError: range=None takes the samples' min and max, [nan, nan], which are not finite ...

    Weights, summed exactly:

    >>> oracles.bin_histogram([0.1, 0.2, 0.3, 0.9], 2, range=(0, 1),
    ...                       weights=[1e16, 1.0, -1e16, 0.5])[0]
    array([1. , 0.5])
    """
    right_closed_last = boolean(right_closed_last, "right_closed_last")
    flow = boolean(flow, "flow")
    if samples is not None:  # a ragged list named as samples, before its shape is read
        samples = as_array(samples, "samples")
    shape = np.shape(samples)
    samples = as_sample_array(samples)
    if weights is not None:
        weights = as_weight_array(flat_sample_weights(weights, shape), len(samples))
    threads = idle_cpus(len(samples))
    binned = bin_samples(samples, bins, range, right_closed_last, threads,
                         counters=weights is not None)
    counts, tallies = binned.counts, binned.flow
    if weights is not None:
        # Each sample's weight summed into its counter, as `histogram` sums them.
        n = len(counts)
        sums, _ = weighted_sums(binned.counters, weights, n + TALLIES, threads)
        counts, tallies = sums[:n], Flow(*(float(v) for v in sums[n:]))
    if flow:
        return counts, binned.edges, tallies
    return counts, binned.edges


def naive_wave_histogram(keys: ArrayLike, num_bins: int,
                         warp_size: int = WARP_SIZE) -> NDArray[np.int64]:
    """The chapter's lockstep model of a non-atomic ``hist[b]++`` (7.1).

    Keys are taken in waves of ``warp_size`` consecutive elements; each wave
    adds exactly one to every distinct bin it touches, however many lanes
    shared it. Equals `histogram` only when no wave repeats a bin.

    Parameters
    ----------
    keys : array_like
        One-dimensional integer keys, as for `histogram`.
    num_bins : int
        The number of bins, K >= 1.
    warp_size : int, default 32
        Lanes per lockstep wave. A wave wider than the input is one wave of
        all of it.

    Returns
    -------
    numpy.ndarray
        int64 counts of length `num_bins`: what a one-warp non-atomic kernel
        leaves, every bin at most `histogram`'s.

    Raises
    ------
    BadKeyError
        A key outside ``[0, num_bins)``.
    TypeError
        Keys that are not integers.
    ValueError
        Keys that are not one-dimensional; `num_bins` or `warp_size` < 1.
    MemoryError
        The counts would not fit in memory.

    Examples
    --------
    The chapter's input: 1000 keys round-robin over 10 buckets, waves of 32.

    >>> import numpy as np
    >>> from histkit import oracles
    >>> counts = oracles.naive_wave_histogram(np.arange(1000) % 10, 10)
    >>> counts
    array([31, 31, 32, 32, 32, 32, 32, 32, 32, 32])
    >>> int(counts.sum())  # 682 of 1000 increments lost
    318
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    warp_size = positive_int(warp_size, "warp_size")  # every argument before the keys
    bad_key_before_counters(keys, num_bins)
    _counts_fit(num_bins)
    # A wave wider than the input is one wave of all of it: same model.
    warp_size = min(warp_size, max(1, len(keys)))
    counts, bad = naive_wave_counts(keys, num_bins, warp_size, idle_cpus(len(keys)))
    if bad >= 0:
        raise_bad_key(keys, bad, num_bins)
    return counts


def privatized_histogram(
    keys: ArrayLike, num_bins: int, block_size: int = BLOCK_SIZE, num_blocks: int | None = None
) -> tuple[NDArray[np.int64], int]:
    """The privatized kernel of 7.2: (histogram, global atomics issued).

    Each block counts its keys in a private shared-memory histogram, then
    merges every one of its bins into global memory with one atomicAdd,
    zeros included. Blocks take keys grid-stride, so any ``num_blocks >= 1``
    covers every key; the default is the chapter's one key per thread,
    ``ceil(N / block_size)`` blocks. The global-atomic count therefore does not
    depend on the data at all: ``num_blocks * num_bins``.

    Parameters
    ----------
    keys : array_like
        One-dimensional integer keys, as for `histogram`.
    num_bins : int
        The number of bins, K >= 1.
    block_size : int, default 256
        Threads per block.
    num_blocks : int or None, default None
        Blocks in the grid; None for ``ceil(N / block_size)``.

    Returns
    -------
    counts : numpy.ndarray
        The exact int64 histogram (shared-memory atomics lose nothing).
    global_atomics : int
        Global atomics the kernel issues: ``num_blocks * num_bins``.

    Raises
    ------
    BadKeyError
        A key outside ``[0, num_bins)``.
    TypeError
        Keys that are not integers.
    ValueError
        Keys that are not one-dimensional; `num_bins`, `block_size` or
        `num_blocks` < 1.
    MemoryError
        The counts would not fit in memory.

    Examples
    --------
    The chapter's 7.2 input: 2048 keys over 16 buckets, blocks of 256.

    >>> import numpy as np
    >>> from histkit import oracles
    >>> counts, atomics = oracles.privatized_histogram(np.arange(2048) % 16, 16)
    >>> atomics  # 8 blocks x 16 bins, where one atomic per key would be 2048
    128
    >>> bool((counts == 128).all())
    True
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    block_size = positive_int(block_size, "block_size")
    if num_blocks is None:
        num_blocks = -(-len(keys) // block_size)
    else:
        num_blocks = positive_int(num_blocks, "num_blocks")
    # Shared-memory atomics lose nothing, so the merged result is the exact
    # histogram whatever the block decomposition.
    return histogram(keys, num_bins), num_blocks * num_bins


def exclusive_scan(counts: ArrayLike) -> NDArray[np.int64]:
    """Exclusive prefix sum of non-negative integer counts, as int64.

    ``out[i] = counts[0] + ... + counts[i - 1]``; ``out[0] = 0``: counts
    become each bin's first output slot (7.3, via Chapter 5).

    Parameters
    ----------
    counts : array_like
        One-dimensional non-negative integer counts of any integer dtype.

    Returns
    -------
    numpy.ndarray
        int64 offsets, one per count.

    Raises
    ------
    ValueError
        A negative count (named by index and value), or counts that are not
        one-dimensional.
    TypeError
        Counts that are not integers.
    OverflowError
        The offsets pass the int64 range.

    Examples
    --------
    >>> from histkit import oracles
    >>> oracles.exclusive_scan([3, 0, 2, 5])
    array([0, 3, 3, 5])
    """
    counts = as_key_array(counts, name="counts")
    offsets, negative_at, overflow_at = exclusive_scan_counts(counts)
    refuse_bad_counts(counts, negative_at, overflow_at)
    return offsets


def counting_sort(keys: ArrayLike, num_bins: int) -> tuple[NDArray, NDArray[np.int64]]:
    """Stable counting sort: (sorted keys, original index of each output slot).

    ``sorted_keys`` has the input's dtype, in native byte order; ``original_index`` is int64 and
    increasing within every run of equal keys. NumPy equivalent:
    ``order = np.argsort(keys, kind="stable"); keys[order], order``.

    Large results are written into pooled pages that earlier, dropped results
    left (see `release_pages`); they are ordinary writable arrays.

    Parameters
    ----------
    keys : array_like
        One-dimensional integer keys, as for `histogram`.
    num_bins : int
        The number of bins, K >= 1. Every key must lie in ``[0, num_bins)``.

    Returns
    -------
    sorted_keys : numpy.ndarray
        The keys in ascending order, in the input's dtype (native byte order).
    original_index : numpy.ndarray
        int64: ``sorted_keys[i] == keys[original_index[i]]``.

    Raises
    ------
    BadKeyError
        A key outside ``[0, num_bins)``.
    TypeError
        Keys that are not integers.
    ValueError
        Keys that are not one-dimensional, or `num_bins` out of range.
    MemoryError
        The results would not fit in memory (raised before any work).

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import oracles
    >>> keys = np.array([2, 0, 2, 1, 0], dtype=np.uint8)
    >>> sorted_keys, original_index = oracles.counting_sort(keys, 3)
    >>> sorted_keys
    array([0, 0, 1, 2, 2], dtype=uint8)
    >>> original_index  # equal keys keep their input order
    array([1, 4, 3, 0, 2])
    """
    keys = as_key_array(keys)
    num_bins = bin_count(num_bins)
    bad_key_before_counters(keys, num_bins)
    # The outputs, and where there are keys a row of counters and the bins' ends.
    counters = 16 * num_bins if len(keys) else 0
    require_memory(counters + (keys.itemsize + 8) * len(keys),
                   f"counting_sort of {len(keys)} keys into num_bins={num_bins}")
    # Pooled pages: a repeated call writes into pages a dropped result left.
    sorted_keys = _pages.empty(len(keys), keys.dtype)
    original_index = _pages.empty(len(keys), np.int64)
    bad = counting_sort_arrays(keys, num_bins, sorted_keys, original_index,
                               idle_cpus(len(keys)))
    if bad >= 0:
        raise_bad_key(keys, bad, num_bins)
    return sorted_keys, original_index


def release_pages() -> int:
    """Return to the OS the pages kept from large results the caller dropped.

    `counting_sort` writes large results into pages that earlier,
    dropped results left (at most 4 blocks and 1/8 of the machine's memory
    are kept), which spares a repeated call its page faults.

    Returns
    -------
    int
        The bytes released.

    Examples
    --------
    >>> from histkit import oracles
    >>> released = oracles.release_pages()
    >>> oracles.release_pages()  # nothing left to release
    0
    """
    return _pages.release_pages()


def argsort(keys: ArrayLike) -> NDArray[np.int64]:
    """Stable sorting permutation of full-width integer keys (int64).

    LSD radix passes of the counting sort, one per 16-bit digit (8-bit for
    1-byte keys). NumPy equivalent: ``np.argsort(keys, kind="stable")``
    (signed keys in signed order).

    Parameters
    ----------
    keys : array_like
        One-dimensional integer keys over the dtype's whole range; every key is
        valid (there is no `num_bins`).

    Returns
    -------
    numpy.ndarray
        int64 indices that sort `keys` stably.

    Raises
    ------
    TypeError
        Keys that are not integers.
    ValueError
        Keys that are not one-dimensional.
    MemoryError
        The passes' buffers would not fit in memory.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import oracles
    >>> oracles.argsort(np.array([5, -3, 70000, -3, 0]))
    array([1, 3, 4, 0, 2])
    """
    from histkit.oracles._radix import radix_order

    return radix_order(keys)


def radix_sort(keys: ArrayLike, values: ArrayLike | None = None) -> tuple[NDArray, NDArray]:
    """Stable sort of full-width integer keys (7.3: the counting sort once per digit).

    One stable counting-sort pass per 16-bit digit (8-bit for 1-byte keys);
    digits every key shares are skipped. Signed keys sort in signed order.

    Parameters
    ----------
    keys : array_like
        One-dimensional integer keys over the dtype's whole range.
    values : array_like or None, default None
        One value per key, moved with it.

    Returns
    -------
    sorted_keys : numpy.ndarray
        The keys in ascending order, in their dtype (native byte order).
    original_index_or_values : numpy.ndarray
        int64 ``original_index`` (``keys[original_index] == sorted_keys``), or
        ``values[original_index]`` when `values` are given.

    Raises
    ------
    TypeError
        Keys that are not integers.
    ValueError
        Keys that are not one-dimensional, or `values` not one per key.
    MemoryError
        The passes' buffers would not fit in memory.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import oracles
    >>> keys = np.array([5, -3, 70000, -3, 0])
    >>> oracles.radix_sort(keys)
    (array([   -3,    -3,     0,     5, 70000]), array([1, 3, 4, 0, 2]))
    >>> oracles.radix_sort(keys, values=np.array(list("abcde")))[1]
    array(['b', 'd', 'e', 'a', 'c'], dtype='<U1')
    """
    keys = as_key_array(keys)
    if values is not None:  # checked before the sort, not after it
        values = as_array(values, "values", "an array of one entry per key")
        if values.shape[:1] != keys.shape:
            raise values_per_key_error(len(keys), values.shape)
    order = argsort(keys)
    if values is None:
        return keys[order], order
    return keys[order], values[order]
