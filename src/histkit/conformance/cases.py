"""Named, seeded conformance cases.

A case is (distribution, N, K, seed, dtype) plus the dimensions that reach a
kernel's less travelled paths:

- ``offset``: the keys start ``offset`` elements into their allocation (a
  misaligned start for 16-byte vector loads); the elements before and after
  the keys hold guard keys, so a kernel that reads outside [0, N) miscounts;
- ``grid``: a forced block count (1, 2, 3, ...): grid-stride loops, blocks
  that own several tiles and carries between tiles at small N;
- ``bad``: out-of-range keys planted by a named pattern; the rule is then the
  oracle's error: the first bad index, exactly;
- ``full_width``: keys over the dtype's whole range, negatives included (no
  K: only the radix sort takes them; it also sorts every other case's keys);
- ``scan_counts``: no keys at all but a scan's input, N uint64 counts (only
  scan kernels take them): counts large enough that the offsets pass 2^32,
  which the counts of any key case never do;
- ``kinds``: only kernels of these kinds take the case (the quick matrix's
  cases past 2^31 keys and the full matrix's past 2^32: the histograms',
  whose answer costs the host one counting pass, where a sort's costs a sort
  of 2^31 keys and 18 GiB of results read back).

Every case regenerates the same keys from its fields, so its name is enough
to reproduce it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import numpy as np

from histkit.distributions import full_width_keys, make_keys
from histkit.gpu.contract import (
    RANK_MAX_KEYS,
    SCAN_ITEMS,
    SCAN_THREADS,
    TILE_WARPS,
    WARP,
    tile_items,
)
from histkit.gpu.registry import FULL_WIDTH_KINDS

DISTRIBUTIONS = ("uniform", "onebin", "zipf", "sorted", "round-robin")
EDGE_SIZES = (0, 1, 31, 32, 33, 255, 256, 257)  # the block is 256: block +/- 1
MEDIUM = 1 << 20
LARGE = 1 << 28
HUGE = (1 << 31) + 17  # past 32-bit indexing
# The quick matrix's cases past 2^31 (histograms only): 2^24 keys more, so a
# 32-key sample run and a batched vector walk both start past 2^31 (N = 1
# mod 16 still: one-byte keys end in a one-key scalar tail).
COUNTED_HUGE = HUGE + (1 << 24)
# The full matrix's histogram case past 2^32 keys: an index narrowed to 32 bits
# but then mixed with an unsigned int is right modulo 2^32, so it wraps only here.
COUNTED_PAST_2_32 = COUNTED_HUGE + (1 << 31)
GUARD = 64  # guard keys after (and, with an offset, before) the keys
SORT_TILE_KEYS = TILE_WARPS * WARP * tile_items(4)  # the stable sort's tile of int32 keys
# A scan_counts case's counts are below this: 2^31 + 17 of them sum to about
# 2^62, inside the oracle's int64 offsets, while a few already pass 2^32.
SCAN_COUNT_LIMIT = 1 << 32
# ... and a few thousand counts of the "powers" pattern reach up to this: single
# counts past 2^32, which a count loaded as 32 bits (and summed in 64) wraps.
POWERS_COUNT_LIMIT = 1 << 40
BAD_PATTERNS = ("first", "last", "last-vector", "past-2^31", "past-2^32", "several", "spread",
                "negative", "first-negative", "last-negative", "run", "vector-run",
                "negative-before-large", "large-before-negative")
NEGATIVE_PATTERNS = ("negative", "first-negative", "last-negative")  # negative bad keys only
# plus "value<j>": one bad key, mid-input, of the j-th value of bad_values()
PAST = {"past-2^31": 2**31, "past-2^32": 2**32}  # one bad key just past these indices


@dataclass(frozen=True)
class Case:
    """One seeded input of integer keys (the module's docstring names its
    dimensions): ``name`` is its id (``--case`` takes it), ``keys()`` makes
    its keys, ``num_bins`` is its K. A failure's shrunk input is a Case of
    ``literal`` keys. The binning and weighted kinds have cases of their own
    (``BinCase``: ``samples``, ``bins``, ``range``; ``WeightedCase``:
    ``keys``, ``weights``, ``num_bins``, arrays)."""

    distribution: str
    n: int
    num_bins: int
    seed: int = 0
    dtype: str = "int32"
    offset: int = 0
    grid: int | None = None
    bad: str | None = None
    # Explicit keys (a shrunk reproducer); then distribution is "literal".
    literal: tuple[int, ...] | None = None
    # Keys over the dtype's whole range (num_bins is then 0: there is no K).
    full_width: bool = False
    # histkit's kernels built with schedule skew (Runtime.skewed_schedule):
    # warps out of step wherever no barrier puts them in step.
    skewed: bool = False
    # The inputs (keys, a scan's counts, the radix sort's values) end where
    # mapped memory ends (Runtime.fenced_copy): a read one past them faults.
    fenced: bool = False
    # With fenced: the inputs start where mapped memory starts instead
    # (Runtime.fenced_copy(at_start=True)): a read one before them faults.
    fenced_at_start: bool = False
    # The "keys" are a scan's N counts (num_bins is N: the scan's length),
    # each below SCAN_COUNT_LIMIT; only scan kernels judge them.
    scan_counts: bool = False
    # Only kernels of these kinds take the case (None: every kind its keys suit).
    kinds: tuple[str, ...] | None = None
    # A user's kernel in a skewed case: which warps go first after each block
    # barrier, drawn per block and per barrier from this seed
    # (schedule_skew.cuh, HK_SKEW_ORDER_SEED); seeds 2m and 2m + 1 give the
    # opposite order at every barrier, so a pair of cases meets both.
    skew_seed: int | None = None

    @classmethod
    def of_keys(cls, keys, num_bins: int, grid: int | None = None,
                full_width: bool = False, scan_counts: bool = False) -> Case:
        keys = np.asarray(keys)
        return cls("literal", len(keys), len(keys) if scan_counts else num_bins,
                   dtype=keys.dtype.name, grid=grid, literal=tuple(int(k) for k in keys),
                   full_width=full_width, scan_counts=scan_counts)

    @classmethod
    def counts(cls, n: int, seed: int, **more) -> Case:
        """A scan's input alone: n random uint64 counts below SCAN_COUNT_LIMIT."""
        return cls("uniform", n, n, seed=seed, dtype="uint64", scan_counts=True, **more)

    @property
    def sorted_in_closed_form(self) -> bool:
        """Whether a stable sort of this case is judged against its closed
        form, a slice at a time (checks.stable_sorted_in_slices), rather
        than the oracle's whole answer: round-robin keys, none bad, past
        2^31 of them (where the whole answer is 18 GiB or more)."""
        return (self.distribution == "round-robin" and self.bad is None and self.n >= HUGE
                and not (self.full_width or self.scan_counts))

    @property
    def name(self) -> str:
        width = ("full-width" if self.full_width else "scan-counts" if self.scan_counts
                 else f"K={self.num_bins}")
        name = f"{self.distribution}/N={self.n}/{width}/{self.dtype}"
        if self.offset:
            name += f"/offset={self.offset}"
        if self.grid is not None:
            name += f"/grid={self.grid}"
        if self.bad:
            name += f"/bad={self.bad}"
        if self.skewed:
            name += "/skewed" if self.skew_seed is None else f"/skewed-order={self.skew_seed}"
        if self.fenced:
            name += "/fenced-at-start" if self.fenced_at_start else "/fenced"
        if self.kinds is not None:
            name += f"/kinds={'+'.join(self.kinds)}"
        return name

    def keys(self) -> np.ndarray:
        dtype = np.dtype(self.dtype)
        if self.literal is not None:
            return np.array(self.literal, dtype=dtype)
        if self.full_width:
            return full_width_keys(self.distribution, self.n, self.seed, dtype)
        if self.scan_counts:
            limit = POWERS_COUNT_LIMIT if self.distribution == "powers" else SCAN_COUNT_LIMIT
            return make_keys(self.distribution, self.n, limit, self.seed, dtype)
        # K may pass the dtype's largest key (int8 keys, K = 256): draw from what
        # fits. Large inputs are drawn in chunks, in the narrow dtype, on every CPU.
        key_range = min(self.num_bins, int(np.iinfo(dtype).max) + 1)
        keys = make_keys(self.distribution, self.n, key_range, self.seed, dtype)
        if self.bad:
            plant_bad_keys(keys, self.bad, self.num_bins, self.seed)
        return keys

    def guard_value(self) -> int:
        """A key outside [0, K) where the dtype has one, else the dtype's largest."""
        info = np.iinfo(np.dtype(self.dtype))
        return self.num_bins if self.num_bins <= info.max else int(info.max)


def bad_values(dtype: np.dtype, num_bins: int) -> list[int]:
    """Out-of-range keys this dtype can hold: K, K + 1, the largest, negatives;
    and, for 32- and 64-bit keys, +-2^16 and +-2^32, which a key narrowed to
    half its width before the bound check takes for 0."""
    info = np.iinfo(dtype)
    values = [v for v in (num_bins, num_bins + 1, int(info.max)) if num_bins <= v <= info.max]
    if info.min < 0:
        values += [-1, int(info.min)]
    if dtype.itemsize >= 4:
        half = 1 << (4 * dtype.itemsize)
        values += [v for v in (half, -half)
                   if (v >= num_bins or v < 0) and info.min <= v <= info.max]
    return list(dict.fromkeys(values))


def plant_bad_keys(keys: np.ndarray, pattern: str, num_bins: int, seed: int) -> None:
    """Overwrite some keys with out-of-range ones, in place."""
    n = len(keys)
    values = bad_values(keys.dtype, num_bins)
    if pattern in NEGATIVE_PATTERNS:
        values = [v for v in values if v < 0]
    if not n or not values:
        raise ValueError(f"no bad key of {keys.dtype} for K={num_bins} (pattern {pattern})")
    rng = np.random.default_rng(seed + 1)
    if pattern.startswith("value"):
        # one bad key of one chosen value: a kernel that mistakes that value
        # for a valid key (a truncated or zero-extended key) misses the report
        keys[n // 2] = values[int(pattern[5:]) % len(values)]
        return
    if pattern == "run":
        # consecutive bad keys from an odd index: a vector walk must report the
        # first key of the run, not the last
        start = min(n - 1, (n // 3) | 1)
        keys[start:start + 7] = values[0]
        return
    if pattern == "vector-run":
        # 15 bad keys from an index = 1 (mod 16): for 1-, 2- and 4-byte keys the
        # run ends on the last key of a 16-byte vector, so a walk that reports
        # a vector's last run at its end, not its start, reports the wrong index
        start = min(n - 15, 16 * (n // 48) + 1)
        keys[start:start + 15] = values[0]
        return
    if pattern in ("negative-before-large", "large-before-negative"):
        # one key of each sign: a kernel that keeps a word for each and
        # reports one of them first whatever their order names the later one
        negative, large = min(values), max(values)
        if negative >= 0 or large < 0:
            raise ValueError(f"pattern {pattern} needs a key of each sign; {keys.dtype} for "
                             f"K={num_bins} has {values}")
        first, second = ((negative, large) if pattern == "negative-before-large"
                         else (large, negative))
        keys[n // 3 + 7], keys[2 * n // 3 + 1] = first, second
        return
    if pattern in ("first", "first-negative"):
        where = [0]
    elif pattern in ("last", "last-negative"):
        where = [n - 1]
    elif pattern == "last-vector":
        # 12 keys before the end: for one-byte keys from an aligned start and
        # N = 1 (mod 16) (COUNTED_HUGE), inside the last whole 16-byte vector, not
        # the scalar tail "last" reaches: past 2^31, a vector's first key index
        # kept in 32 bits misreports it
        where = [max(0, n - 12)]
    elif pattern in PAST:
        # the sixth key past 2^31 (2^32): with 2^24 keys more after it, inside
        # the fast kernel's batched vector walk (the last vectors are left to a
        # one-at-a-time loop, which "last-vector" reaches). Past 2^32, an index
        # that wrapped to 32 bits, signed or unsigned, names key 5 instead.
        where = [PAST[pattern] + 5]
        if n <= where[0]:
            raise ValueError(f"pattern {pattern} needs more than {pattern[5:]} + 5 keys; "
                             f"got {n}")
    elif pattern == "several":  # the lowest of them is not the first one planted
        where = [n - 1, 2 * n // 3 + 1, n // 3 + 7]
    elif pattern in ("spread", "negative"):  # many, everywhere
        where = sorted(rng.choice(n, size=max(2, n // 500), replace=False).tolist())
    else:
        raise ValueError(f"unknown bad-key pattern {pattern!r}; known: {BAD_PATTERNS}")
    for k, i in enumerate(where):
        keys[min(i, n - 1)] = values[k % len(values)]


def _edge_cases() -> list[Case]:
    return [Case(d, n, k, seed=n) for d in DISTRIBUTIONS for n in EDGE_SIZES for k in (10, 256)]


def _few_bins_cases() -> list[Case]:
    """One and two bins, which no other case has (the fewest elsewhere is 3):
    a kernel wrong only there, and a scan of a single count (a one-bin
    histogram's), would pass everything else."""
    cases = [Case("uniform", n, k, seed=18) for k in (1, 2) for n in (1, 257, 70_001)]
    return cases + [Case("round-robin", 4099, 2, seed=18)]


def _medium_cases() -> list[Case]:
    cases = [Case(d, MEDIUM, k, seed=1) for d in DISTRIBUTIONS for k in (16, 256, 4096, 65536)]
    cases += [Case("uniform", MEDIUM, 1 << 20, seed=1), Case("onebin", MEDIUM, 1 << 20, seed=1)]
    return cases


def _dtype_cases() -> list[Case]:
    """Every key width, and the narrow ones over their whole valid range."""
    cases = [Case(d, 4099, 100, seed=2, dtype=t)
             for d in ("uniform", "onebin") for t in ("int8", "uint16", "int64", "uint64")]
    cases += [Case("uniform", 4099, 100, seed=2, dtype=t) for t in ("uint8", "int16", "uint32")]
    # uint8 keys up to 255, int8 up to 127, 16-bit up to their largest.
    cases += [Case(d, 70_001, k, seed=5, dtype=t)
              for t, k in (("uint8", 256), ("int8", 128), ("uint16", 65536), ("int16", 32768))
              for d in ("uniform", "round-robin")]
    return cases


def _remainder_cases() -> list[Case]:
    """Sizes that leave a remainder in every loop at the default geometry."""
    sizes = (MEDIUM + 1, MEDIUM + 4 * 1024 + 3, 1_000_003, (1 << 22) + 1)
    cases = [Case("uniform", n, 256, seed=6) for n in sizes]
    # narrow keys by turns (every size here is odd: choosing by n % 2, as this
    # once did, never gave int16 keys; tests/test_case_coverage.py)
    cases += [Case("round-robin", n, 4096, seed=6, dtype=("int8", "int16")[i % 2])
              for i, n in enumerate(sizes[:3])]
    # 2^22 + 1 keys over 2^20 bins: auto's default policy takes the fast kernel
    # without a sample (below PARTITION_MIN_KEYS); /sampled samples them.
    cases += [Case(d, (1 << 22) + 1, 1 << 20, seed=6) for d in ("uniform", "onebin", "zipf")]
    # many bins at small N: each branch of auto's sampled choice, 3-digit sorts
    cases += [Case(d, 20_011, 1 << 20, seed=7) for d in ("uniform", "onebin", "sorted")]
    # auto's choice on the device, judged against the host's rule: neighbouring
    # global bins four to a sector (round-robin keys past shared memory: a
    # sector taken per bin would partition them), and a hot global bin with
    # bit 0 set (K // 2 odd: a vote that skips a bit misses it)
    cases += [Case("round-robin", MEDIUM, 1 << 20, seed=7),
              Case("onebin", 20_011, (1 << 20) - 1, seed=7)]
    # and on the edges of its rule, each sampled run holding exactly the share
    # that decides (distributions.py): a hot bin in exactly half the sample
    # (the fast kernel: a majority is more than half; 1001 keys, so that a
    # 65th run would reach keys), a bare majority led by the first run (a
    # warp's votes or counts lost, and it ties), and exactly half of each
    # run's keys in sectors of their own (not scattered: more than half is)
    cases += [Case("half-hot", 1001, 1 << 20, seed=7), Case("hot-head", 20_011, 1 << 20, seed=7),
              Case("sixteen-sectors", 20_011, 1 << 20, seed=7)]
    cases += [Case("zipf", 100_003, 100_000, seed=7), Case("sorted", 300_007, 1 << 18, seed=7)]
    # every partition in use (256 of them), with a partial last tile
    cases += [Case("uniform", 100_003, 1 << 22, seed=7), Case("zipf", 70_001, 1 << 14, seed=7),
              Case("uniform", 70_001, 1 << 14, seed=7, grid=2)]
    # one block counting more of a partition than one batch of entries holds
    # (count_partitions hands out 32 x warps (partition, tile) entries at a
    # time): 611 tiles of a single partition, all counted by one block
    cases += [Case("uniform", 5_000_011, 1 << 14, seed=7, grid=1)]
    # more than 4M bins: past the partitioned kernel's limit
    cases += [Case("uniform", 100_000, (1 << 22) + 5, seed=7)]
    return cases


def _misaligned_cases() -> list[Case]:
    offsets = {"int8": (1, 5, 15), "uint16": (1, 7), "int32": (1, 3), "int64": (1,)}
    return [Case(d, 10_007 + off, 100, seed=8, dtype=t, offset=off)
            for t, offs in offsets.items() for off in offs for d in ("uniform", "sorted")]


def _forced_grid_cases() -> list[Case]:
    shapes = [("uniform", 300_007, 256, "int32"), ("sorted", 300_007, 4096, "int32"),
              ("onebin", 50_021, 100_000, "int32"), ("uniform", 70_001, 256, "int8"),
              ("round-robin", 40_003, 300, "uint16"), ("zipf", 90_001, 70_000, "int64")]
    cases = [Case(d, n, k, seed=9, dtype=t, grid=g)
             for d, n, k, t in shapes for g in (1, 2, 3)]
    # more blocks than the keys fill: idle blocks still merge their (empty)
    # copy, and a launcher may not shrink the grid it was given
    return cases + [Case("uniform", 33, 10, seed=22, grid=3)]


def _narrow_counter_cases() -> list[Case]:
    """The fast kernel's 16-bit shared counters (past the 58,111 bins one 32-bit
    copy holds, up to about 116,000: fast_histogram.cu's NARROW_COUNTERS; the
    fast row's "narrow" variant uses them at any K) spilling 2^15 at a time
    into the global bin: one block counting far more than 2^15 keys of one
    bin in the high half of its word (onebin's bin is K / 2: 32768 of 65536
    sits past the low_bins = 32768 of the low halves), in the low half
    (32767 of 65535), Zipf's head in runs of up to 8 equal keys per 16-byte
    vector, and (in the narrow variant, K = 3) both halves of one word
    spilling side by side (bins 0 and 2)."""
    return [Case("onebin", 200_003, 65_536, seed=15, grid=1),
            Case("onebin", 200_003, 65_535, seed=15, grid=2),
            Case("zipf", 400_003, 65_536, seed=15, dtype="uint16", grid=1),
            Case("uniform", 200_003, 3, seed=15, grid=1)]


def _bad_key_cases() -> list[Case]:
    cases = [Case("uniform", n, 256, seed=10, bad=p)
             for p in ("first", "last", "several", "spread") for n in (1, 33, 100_003)
             if not (n == 1 and p in ("several", "spread"))]
    cases += [Case("uniform", 100_003, 256, seed=10, bad="several", grid=g) for g in (1, 3)]
    cases += [Case("uniform", 30_011, 100, seed=10, dtype="int64", bad="spread", offset=1)]
    # negative keys of every signed dtype; K = 2^bits for the narrow ones, so a
    # zero-extended negative key would land in a valid bin
    cases += [Case("uniform", 20_011, k, seed=11, dtype=t, bad="negative")
              for t, k in (("int8", 256), ("int16", 65536), ("int32", 1000), ("int64", 1000))]
    cases += [Case("uniform", 20_011, 100, seed=11, dtype=t, bad="spread")
              for t in ("uint8", "uint16", "uint32", "uint64")]
    cases += [Case("uniform", 30_011, 1000, seed=12, dtype=t, bad="run")
              for t in ("int8", "int32", "int64")]
    # the same at a grid of 1, where each thread walks batches of vectors
    cases += [Case("uniform", 100_003, 100, seed=12, dtype=t, bad="vector-run", grid=g)
              for t in ("int8", "int16", "int32") for g in (None, 1)]
    # a key of each sign, in either order (the first is the one to report)
    cases += [Case("uniform", 20_011, 100, seed=14, dtype=t, bad=p)
              for t in ("int8", "int32", "int64")
              for p in ("negative-before-large", "large-before-negative")]
    # K the dtype's largest value, so that the largest key is the bad one: a
    # bound check skipped because no key of the dtype can pass K misses it
    cases += [Case("uniform", 20_011, int(np.iinfo(t).max), seed=14, dtype=t, bad="spread")
              for t in ("uint8", "int8", "uint16", "int16")]
    # the first and the last key bad in every width but int32's (above): a
    # scalar head or tail loop around the vector walk that skips the check
    cases += [Case("uniform", 100_003, 100, seed=14, dtype=t, bad=p)
              for t in ("int8", "uint16", "int64", "uint64") for p in ("first", "last")]
    cases += [Case("uniform", 10_007 + off, 100, seed=14, dtype=t, offset=off, bad="first")
              for t, off in (("int8", 5), ("uint16", 3), ("int32", 1), ("int64", 1))]
    # bad keys where K is 1 or 2 (a shortcut for one or two bins that skips
    # the check, or takes any key but 0 for bin 1); a negative one last (the
    # "last" pattern plants K), in a short input and first in a sorted one (a
    # sorted input judged by its first and last keys alone)
    cases += [Case("uniform", 257, 1, seed=21, bad="last"),
              Case("uniform", 257, 2, seed=21, bad="spread"),
              Case("uniform", 100_003, 100, seed=21, bad="last-negative"),
              Case("uniform", 31, 10, seed=21, bad="negative"),
              Case("sorted", 4099, 100, seed=21, bad="first-negative")]
    # the last of 2^20 + 3 keys bad: an index reported relative to a chunk of
    # 2^20 keys (or any power of two up to it) names key 2
    cases += [Case("uniform", (1 << 20) + 3, 256, seed=21, bad="last")]
    # each bad value alone, in every wide dtype (int8 ... uint16 are covered above)
    for t in ("int32", "uint32", "int64", "uint64"):
        count = len(bad_values(np.dtype(t), 1000))
        cases += [Case("uniform", 5_003, 1000, seed=13, dtype=t, bad=f"value{j}")
                  for j in range(count)]
    return cases


def _full_width_cases() -> list[Case]:
    """Keys over the whole range of every dtype (the radix sort's own cases):
    every byte of the key decides, negative keys sort first."""
    def wide(distribution, n, dtype, **more) -> Case:
        return Case(distribution, n, 0, seed=14, dtype=dtype, full_width=True, **more)

    widths = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
    cases = [wide("uniform", 70_001, t) for t in widths]
    # the dtype's edges: its largest key's image is all ones (a 64-bit one is
    # the u64 maximum), its smallest all zeros; -1 next to 0
    cases += [wide("extremes", 5_003, t) for t in widths]
    # keys all alike but the last, the smallest: a pass skipped because whole
    # vectors share its digit (the scalar tail unread) leaves it unsorted
    cases += [wide("last-apart", 4099, t) for t in ("int32", "uint64")]
    cases += [wide(d, 100_003, t) for d in DISTRIBUTIONS[1:]
              for t in ("int32", "uint32", "int64", "uint64")]
    # one key, a partial warp, a block + 1, a tile + 1, two tiles + 1 (a 1-key tile)
    cases += [wide("uniform", n, "int32")
              for n in (1, 31, 257, SORT_TILE_KEYS + 1, 2 * SORT_TILE_KEYS + 1)]
    cases += [wide("uniform", MEDIUM + 3, t) for t in ("int32", "int64")]
    cases += [wide("uniform", 300_007, t, grid=g) for t in ("int64", "int16") for g in (1, 3)]
    cases += [wide("zipf", 10_007 + 1, t, offset=1) for t in ("int8", "uint16", "int64")]
    return cases


def _skewed_cases() -> list[Case]:
    """Shapes whose kernels run with warps out of step (schedule_skew.cuh, HK_SKEW_NS;
    a user's .cu kernel too, through histkit.gpu.user_skew):
    a barrier that is missing shows as a wrong count or order, not only under
    racecheck. Two or three blocks each (even and odd blocks skew their warps
    in opposite orders), a single block, many tiles (the resident sort's
    column scans), many bins (the fast kernel's split, both partitioned
    passes), one hot bin past shared memory (auto's choice), a multi-tile
    scan, 8-bit keys and bad keys; and a forced grid
    of more blocks than a block has threads (1100), with more bins than that
    too (3000: the privatized, fast and partitioned kernels all keep them in
    shared memory): a loop over shared counters that strides by gridDim.x
    where blockDim.x was meant leaves some unzeroed only then, and the
    shared-memory poison of these builds shows it (no launcher picks so many
    blocks here: the fast kernel runs at most 2 x SMs blocks of 1024
    threads)."""
    return [Case("uniform", 5_003, 256, seed=13, grid=2, skewed=True),
            Case("onebin", 70_001, 4096, seed=13, grid=3, skewed=True),
            Case("zipf", 20_011, 70_000, seed=13, grid=2, skewed=True),
            Case("uniform", 300_007, 65536, seed=13, skewed=True),
            Case("sorted", 100_003, 300, seed=13, grid=1, skewed=True),
            Case("uniform", 40_009, 256, seed=13, dtype="uint8", skewed=True),
            Case("uniform", 50_021, 1 << 20, seed=13, bad="several", grid=2, skewed=True),
            # one hot global bin: auto's one-block choosing kernel, its warps
            # out of step and its shared memory poisoned, must still see it
            Case("onebin", 20_011, 1 << 20, seed=13, skewed=True),
            Case("uniform", 30_011, 3_000, seed=13, grid=1100, skewed=True)]


def _fenced_cases() -> list[Case]:
    """Inputs flush against unmapped memory: a kernel that loads even one
    element past its keys (or a scan past its counts) faults, although it
    would drop the value (the guard keys of the other cases only catch reads
    whose value is used). Sizes at and off the tile, vector and warp
    multiples, one block and several, many bins (K is the scan's length: at
    least one scanned K is off every scan tile, or a load one past the last
    tile's counts stays inside it).
    Last in the matrix: a fault spoils the CUDA context for what follows.
    One more input starts against unmapped memory instead (a kernel that
    loads the key before its first faults), and two are rank_sort's: a
    partial last chunk (a load past the keys by its staging or its lanes)."""
    return [Case("uniform", 10_007, 256, seed=14, fenced=True),
            Case("uniform", 5_003, 1_000, seed=14, fenced=True, fenced_at_start=True),
            Case("zipf", 4_099, 300, seed=14, dtype="int16", fenced=True),
            Case("sorted", 4_096, 4_096, seed=14, dtype="int8", fenced=True),
            Case("uniform", 65_536, 70_000, seed=14, dtype="uint16", grid=2, fenced=True),
            Case("zipf", 100_003, 1_000, seed=14, dtype="int64", grid=1, fenced=True),
            Case("round-robin", 20_011, 65_539, seed=14, fenced=True)]


def _shortcut_cases() -> list[Case]:
    """Keys a sort's shortcuts get wrong (distributions.powers_at): 3001 of them
    (a one-block path between 1024 and 4096 keys; each value about 60 times,
    in descending cycles: stability), over K = 2^24 + 5 (past float32's exact
    integers and 24-bit packed keys; its largest key rounds up to K as a
    float32), K = 2^16 + 1 in uint32 and uint64 keys (a largest key sharing every low
    digit with 0, and keys past a 16-bit type) and K = 257 in uint16; keys
    all alike but the last, 4095 of them (a tail left out of an "every key
    shares this digit" test; runs of equal keys on the one-block path); K
    between 4096 and 16384 (a shared-memory loop bounded by a fixed 4096
    bins)."""
    return [Case("powers", 3001, (1 << 24) + 5, seed=20),
            Case("powers", 3001, (1 << 16) + 1, seed=20, dtype="uint32"),
            Case("powers", 3001, (1 << 16) + 1, seed=20, dtype="uint64"),
            Case("powers", 3001, 257, seed=20, dtype="uint16"),
            Case("last-apart", 4095, 2, seed=20),
            Case("last-apart", 4095, 1 << 16, seed=20, dtype="uint16"),
            Case("uniform", 20_011, 6000, seed=20)]


def _small_sort_cases() -> list[Case]:
    """rank_sort's edges (the stable sort of up to RANK_MAX_KEYS keys, each
    compared with every other): its largest input, where its warps' runs end
    at its staged array's end, and one key more (the resident sort's, which
    rank_sort must refuse); every key in one bin there (the index alone
    orders them); many bins; bad keys spread through a full-size input; and
    warps out of step at an input whose chunks leave the last warp short,
    and at one whose last warp's run ends at the staged array's end."""
    top = RANK_MAX_KEYS
    return [Case("uniform", top, 65536, seed=17), Case("onebin", top, 256, seed=17),
            Case("zipf", top - 1, 1 << 20, seed=17), Case("round-robin", top + 1, 256, seed=17),
            Case("uniform", top, 1000, seed=17, bad="spread"),
            Case("sorted", 3_001, 300, seed=17, skewed=True),
            Case("uniform", top - 5, 70_000, seed=17, skewed=True)]


def _many_keys_cases() -> list[Case]:
    """2^24 + 1 keys in one bin: more than float32 counts hold exactly
    (2^24), and more than a grid of 65535 blocks of 256 threads covers
    with one key a thread (16,776,960), which drops the rest."""
    return [Case("onebin", (1 << 24) + 1, 1, seed=19, dtype="uint8")]


def _scan_count_cases() -> list[Case]:
    """A scan's own inputs: no counts at all (every key case has K >= 1 of
    them, so only this one shows a scan that writes an offset for nothing);
    counts summing past 2^32 (a 32-bit running sum, tile sum or offset
    wraps), over one tile and one more count, many tiles (one level of tile
    sums), more tiles than a tile holds (two levels), 2^23 + 1 counts: past
    two levels of a user's larger tiles (1024 threads x 8 counts, whose tile
    sums one block of 1024 threads scans), 2^24 + 1 (past two levels of
    4096-count tiles); and single counts past 2^32 (the "powers" pattern, up
    to POWERS_COUNT_LIMIT), which a count loaded as 32 bits wraps."""
    tile = SCAN_THREADS * SCAN_ITEMS
    cases = [Case.counts(n, seed=16)
             for n in (0, tile + 1, 100_003, tile * tile + tile + 3, (1 << 23) + 1)]
    return cases + [Case.counts((1 << 24) + 1, seed=20),
                    Case("powers", 3001, 3001, seed=20, dtype="uint64", scan_counts=True)]


def all_cases(quick: bool = False) -> list[Case]:
    cases = (_edge_cases() + _few_bins_cases() + _medium_cases() + _dtype_cases()
             + _remainder_cases() + _misaligned_cases() + _forced_grid_cases()
             + _narrow_counter_cases() + _bad_key_cases() + _many_keys_cases()
             + _small_sort_cases() + _shortcut_cases()
             + _scan_count_cases() + _full_width_cases() + _counted_past_2_31_cases()
             + _skewed_cases() + _fenced_cases() + [_fenced_past_2_31_case()])
    return cases if quick else cases + large_cases()


# The kinds that judge the quick matrix's cases past 2^31 keys (and the full
# matrix's past 2^32): a counting pass on the host answers them all (the
# one-warp "wave" kernel is never run past ONE_WARP_MAX_N keys: not listed).
COUNTED_PAST_2_31 = ("histogram", "privatized", "racy-histogram")
# ... and, on the fenced ones (no bad key), the sorts: the stable sort of
# round-robin keys is known in closed form (checks.round_robin_stable_sort)
# and judged a slice at a time, with no host sort of 2^31 keys; so is an
# unstable sort's (sorted, key i is i % K, a permutation: one byte a key).
SORTED_PAST_2_31 = ("stable-sort", "sort")
# The radix sort past 2^31 keys, with values of a closed form
# (checks.closed_form_values), so that its gather of values meets a 32-bit
# index too: a case of its own in the full matrix, since the values take
# 8 bytes a key more on the GPU (about 38 GiB in all) and on the host.
RADIX_PAST_2_31 = ("radix-sort",)


def _counted_past_2_31_cases() -> list[Case]:
    """2^31 + 2^24 + 17 one-byte keys, for the histograms only: a key index, stride or
    loop bound kept in 32 bits (int where i64 was meant) wraps here and
    nowhere else in the quick matrix, and the histograms' answer is one
    counting pass on the host (seconds), not a sort of 2^31 keys. Round-robin
    keys over an odd K are cheap to draw and leave every bin's count
    sensitive to a key counted twice or not at all. These two have one bad
    key past 2^31 each, reported by index: in the last whole vector (a
    one-at-a-time loop's) and in the batched vector walk before it (one bad
    key a case: a misreported index past the first bad one would not show).
    The third, with no bad key, is _fenced_past_2_31_case()."""
    return [_counted(COUNTED_HUGE, bad=bad) for bad in ("last-vector", "past-2^31")]


def _counted(n: int, kinds: tuple[str, ...] = COUNTED_PAST_2_31, **more) -> Case:
    """A case past 2^31 for some kinds: n round-robin one-byte keys over K = 251."""
    return Case("round-robin", n, 251, seed=5, dtype="uint8", kinds=kinds, **more)


def _fenced_past_2_31_case() -> Case:
    """The same keys, none bad, flush against unmapped address space as large
    as themselves on either side (device.FencedBuffer): an index that wrapped
    to a negative 32-bit int reads up to 2 GiB before the keys, where the
    unfenced cases' allocation may have a neighbour to read without a fault,
    and the value read may not matter (auto's key sample only picks a
    kernel). The racy kernel's counts are judged on this case alone, and the
    stable sorts on it (SORTED_PAST_2_31: in closed form, a slice at a time;
    about 21 GiB of GPU memory). Last in the quick matrix, as every fenced
    case: a fault spoils the CUDA context."""
    return _counted(COUNTED_HUGE, COUNTED_PAST_2_31 + SORTED_PAST_2_31, fenced=True)


def _counted_past_2_32_case() -> Case:
    """The full matrix's histogram case past 2^32 keys (4 GiB of one-byte keys,
    one bad key past 2^32): an index narrowed to int but then added to an
    unsigned int (a loop counter, threadIdx.x) is right modulo 2^32, so
    every case below 2^32 keys passes it."""
    return _counted(COUNTED_PAST_2_32, bad="past-2^32")


def _fenced_past_2_32_case() -> Case:
    """The past-2^32 keys, none bad, fenced, for the histograms and the
    stable sorts (judged in closed form: 4 GiB of keys, 34 GiB of int64
    indices left on the GPU and read a slice at a time): a sort's index
    kept in int, then added to an unsigned warp or lane offset, is right
    modulo 2^32, so only this case shows it."""
    return _counted(COUNTED_PAST_2_32, COUNTED_PAST_2_31 + SORTED_PAST_2_31, fenced=True)


def _counted_huge_cases() -> list[Case]:
    """Every round-robin case past 2^31 keys, the cheapest first."""
    return [*_counted_past_2_31_cases(), _fenced_past_2_31_case(), _counted_past_2_32_case(),
            _fenced_past_2_32_case()]


# Why a case is not run for a kind (judges() is False).
NEEDS_A_K = "full-width keys have no K: the radix sort's cases"
NOT_KEYS = "a scan's counts, not keys: the scan kernels' cases"
ONLY_SOME_KINDS = ("only {}: the cases past 2^31 keys that one counting pass (or, for a "
                   "stable sort, a closed form) answers on the host (the full matrix's "
                   "2^31 + 17-key cases judge every kind)")


def judges(case: Case, kind: str) -> bool:
    """Whether case's keys suit kind: a case naming its kinds only those;
    full-width keys (no K) only the kinds that sort full-width keys, a scan's
    counts only scans; every other case every kind."""
    if case.kinds is not None and kind not in case.kinds:
        return False
    if case.scan_counts:
        return kind == "scan"
    return not case.full_width or kind in FULL_WIDTH_KINDS


def not_judged_because(case: Case) -> str:
    """Why judges(case, kind) is False for a kind."""
    if case.kinds is not None:
        return ONLY_SOME_KINDS.format(", ".join(case.kinds))
    return NOT_KEYS if case.scan_counts else NEEDS_A_K


def cases_for(kind: str, quick: bool = True, fenced: bool = False,
              skewed: bool = False) -> list[Case]:
    """The cases that judge one kind, for a user's kernel: the fenced ones only
    for kernels the runner feeds from device memory (fenced=True: a .cu kernel;
    a Python callable gets its inputs as host or framework arrays), the skewed
    ones and the quick cases past 2^31 keys only for kernels built from CUDA
    source (skewed=True: a .cu kernel, given the schedule skew by
    histkit.gpu.user_skew; a 32-bit index is a slip of CUDA C++, and a
    Python callable handed 2 GiB of keys on the host might take minutes). A
    scan is not handed the bad-key cases: its input is their counts, which
    bad keys have none of."""
    chosen = [c for c in all_cases(quick) if judges(c, kind)
              and (skewed or not (c.skewed or c.kinds)) and (fenced or not c.fenced)
              and not (kind == "scan" and c.bad is not None)]
    return [paired for c in chosen for paired in _with_both_orders(c)]


def _with_both_orders(case: Case) -> list[Case]:
    """A skewed case as a user's kernel gets it: twice, with skew seeds 2m and
    2m + 1 (m from the case's shape), whose warp orders are opposite at every
    barrier of every block. A missing barrier whose race only one order
    shows is met by one of the two, wherever in the kernel it is."""
    if not case.skewed:
        return [case]
    first = 2 * (zlib.crc32(case.name.encode()) & 0xFFFF)
    return [replace(case, skew_seed=first), replace(case, skew_seed=first + 1)]


def large_cases() -> list[Case]:
    """What a full run adds to the quick matrix: 2^28 keys, and past 2^31."""
    cases = [Case(d, LARGE, k, seed=3) for d in DISTRIBUTIONS for k in (256, 65536)]
    cases += [Case("uniform", LARGE, 0, seed=3, dtype=t, full_width=True)
              for t in ("int32", "int64")]
    return cases + _huge_full_cases() + [_counted_past_2_32_case(), _fenced_past_2_32_case(),
                                         radix_past_2_31_case()]


def radix_past_2_31_case() -> Case:
    """The fenced round-robin keys past 2^31 for the radix sort alone, its
    values and outputs judged a slice at a time (RADIX_PAST_2_31)."""
    return _counted(COUNTED_HUGE, RADIX_PAST_2_31, fenced=True)


def _huge_full_cases() -> list[Case]:
    """A scan of 2^31 + 17 counts (16 GiB in, 16 GiB out), and past 2^31 keys
    (uint8, so the sorts' indices fit the H200's memory) for every kind."""
    return [Case.counts(HUGE, seed=4),
            Case("uniform", HUGE, 256, seed=4, dtype="uint8"),
            Case("uniform", HUGE, 200, seed=4, dtype="uint8", bad="last")]


def huge_cases() -> list[Case]:
    """Every case past 2^31 (the mutation harness's full judge), the quickest
    for each kind first, since a judge stops at its first FAIL: the scan's
    counts (no sort of 2^31 keys on the host), then the histograms' own
    cases (one counting pass), then the keys every kind takes."""
    counts, *keyed = _huge_full_cases()
    return [counts, *_counted_huge_cases(), *keyed, radix_past_2_31_case()]
