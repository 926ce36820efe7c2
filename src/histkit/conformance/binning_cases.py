"""Named cases that judge the binning of real-valued samples (``np.histogram``'s rule).

A kernel that bins samples is right on a case when its counts equal
``oracles.bin_histogram(samples, bins, range, right_closed_last=...)``, which
equals ``np.histogram`` bit for bit. The cases set the traps where a plausible
kernel parts from numpy:

- ``edges/``: samples on every edge and one ulp either side, even bins and
  the same edges given explicitly, float16/32/64;
- ``naive/``: samples the estimate ``(x - lo) * (1 / (hi - lo)) * bins`` (or
  ``(x - lo) / (hi - lo) * bins`` in float32) puts one bin off: published
  reproducers, and configurations `naive_misses` finds;
- ``span/``, ``zero/``, ``nonfinite/``: spans 1e-300 to 1e300 wide, near and
  far from 0, subnormal samples and spans, signed zeros, NaN and infinities;
- ``nep50/``, ``float16/``: the edges' dtype follows NEP 50 promotion of the
  samples and the bounds (float16 samples with float16, float32, float64 edges);
- ``int/``: every integer dtype; 64-bit values past 2^53, whose cast rounds;
- ``shape/``: lo == hi, one bin, range=None, repeated edges, no bins, 2^16 bins;
- ``size/``, ``bulk/``, ``view/``: 0, 1, 31, 32, 33, 4097 and 2^16 + 3
  samples, seeded uniform, normal and all-equal samples with traps sprinkled
  in, and views whose data starts one element into their allocation;
- ``large/`` (full set only): 2^24 to 2^26 samples, 2^20 bins.

A name ending in ``/cub`` is CUB's convention (``right_closed_last=False``).
Every case is one np.histogram gives a result for; samples and edges are read-only.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from histkit.conformance._binning_samples import (
    draw,
    misaligned,
    naive_misses,
    name_number,
    near,
    numpy_edges,
    seeded,
    sprinkle,
    traps,
)

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
SIZES = (0, 1, 31, 32, 33, 4097, 2**16 + 3)  # empty, one, a warp +- 1, a block of 4096 + 1
BULK = 2**17
NAME = re.compile(r"[A-Za-z0-9_/=.\-]+")
# Published naive-estimate misses: (name, bins, range, samples, the trap).
KNOWN_MISSES = (
    ("fast-histogram-45", 126, (0.0, 126.0), [33.0],
     "33.0 is edge 33; (x - lo) * (1 / (hi - lo)) * bins gives 32.99..., bin 32"),
    ("fast-histogram-63", 10, (0.9, 1.1), [1.0],
     "1.0 is edge 5; the naive estimate gives 4.99..., bin 4"),
    ("max-equals-hi", 4, (0.0, 0.3), [0.3, 0.15],
     "the maximum equals hi: the estimate is bins, yet it belongs in the last bin"),
    ("polars-22234", 2, (-1.0, 1.0), [1.0 - 1e-17, 1e-17, -1e-17, 1.3e-16, -1.3e-15],
     "1.0 - 1e-17 rounds to 1.0, the top edge; x - lo rounds -1e-17 up onto edge 1"),
)


@dataclass(frozen=True)
class BinCase:
    """One call of ``np.histogram(samples, bins, range)``, under a convention."""

    name: str  # unique, -k-safe id: letters, digits, '-', '_', '/', '=', '.' only
    samples: np.ndarray  # 1-d, native byte order
    bins: object  # an int (even bins) or a 1-d np.ndarray of edges
    range: tuple | None  # (lo, hi) as np.histogram takes it, or None
    right_closed_last: bool = True  # False: CUB's convention (every bin half-open)
    note: str = ""  # one line: the trap it sets
    # Under histkit's own judge only (harness_cases): the kernels built with
    # schedule skew (warps out of step, shared memory poisoned), and the
    # samples placed against unmapped memory, "end" or "start".
    skewed: bool = False
    fenced: str = ""

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def num_bins(self) -> int:
        return self.bins if isinstance(self.bins, int) else max(len(self.bins) - 1, 0)

    @property
    def dtype(self) -> str:
        return self.samples.dtype.name

    def describe_input(self, shown: int) -> str:
        """The call, as a person reads it: the samples themselves when there
        are at most `shown`, else their number."""
        if self.n <= shown:
            values = "[" + ", ".join(repr(v) for v in self.samples.tolist()) + "]"
            what = f"samples = {values} ({self.dtype})"
        elif self.n and np.all(self.samples == self.samples[0]):  # one run: its value
            what = f"samples = [{self.samples[0].item()!r}] * {self.n} ({self.dtype})"
        else:
            what = f"{self.n} samples ({self.dtype})"
        if isinstance(self.bins, int):
            what += f", bins = {self.bins}"
        else:
            bins = "1 bin" if self.num_bins == 1 else f"{self.num_bins} bins"
            what += f", {bins} by edges ({self.bins.dtype.name})"
        if self.range is not None:
            what += f", range = {self.range!r}"
        return what + ("" if self.right_closed_last else ", every bin half-open")


def _with_cub(case: BinCase) -> Iterator[BinCase]:
    """The case, then the same under CUB's convention (the top edge excluded)."""
    yield case
    yield replace(case, name=f"{case.name}/cub", right_closed_last=False)


def _span_name(bins, span) -> str:
    return f"bins={bins}/range={name_number(span[0])}..{name_number(span[1])}"


def _edge_cases() -> Iterator[BinCase]:
    spans = {"float16": [(10, (0.9, 1.1)), (7, (-3.3, 1e-3)), (126, (0.0, 126.0)),
                         (50, (-1000.0, 3000.0))],
             "float32": [(10, (0.9, 1.1)), (7, (-3.3, 1e-3)), (126, (0.0, 126.0)),
                         (1000, (-1e10, 3e10)), (3, (1e-30, 1e30))],
             "float64": [(10, (0.9, 1.1)), (7, (-3.3, 1e-3)), (126, (0.0, 126.0)),
                         (1000, (-1e10, 3e10)), (3, (1e-300, 1e300)), (255, (-0.7, 0.2))]}
    for dtype, configs in spans.items():
        for bins, span in configs:
            edges, note = numpy_edges(dtype, bins, span), "every edge and one ulp either side"
            samples = traps(dtype, edges)
            yield BinCase(f"edges/{dtype}/{_span_name(bins, span)}", samples, bins, span, note=note)
            yield BinCase(f"edges/{dtype}/explicit/{_span_name(bins, span)}", samples, edges, None,
                          note=f"{note}; the same edges given as an array")


def _naive_cases() -> Iterator[BinCase]:
    for dtype in ("float32", "float64"):
        for name, bins, span, xs, note in KNOWN_MISSES:
            edges = numpy_edges(dtype, bins, span)
            samples = np.concatenate([near(xs, dtype), traps(dtype, edges)])
            yield from _with_cub(BinCase(f"naive/{dtype}/{name}", samples, bins, span, note=note))
            yield BinCase(f"naive/{dtype}/{name}/explicit", samples, edges, None, note=note)
        top = draw(dtype, 100, 0.0, 3.0, "uniform", seeded(dtype))
        top[[7, 50]] = 3.0
        yield from _with_cub(BinCase(f"naive/{dtype}/max-equals-hi/range-none", top, 9, None,
                                     note="range=None: the maximum is the top edge"))
        for side, bins, lo, hi, x in naive_misses(dtype):
            yield BinCase(f"naive/{dtype}/search-{side}/{_span_name(bins, (lo, hi))}",
                          traps(dtype, numpy_edges(dtype, bins, (lo, hi))), bins, (lo, hi),
                          note=f"x = {x!r} ({side} an edge): the naive estimate misses by one")


def _span_cases() -> Iterator[BinCase]:
    tiny = {d: np.finfo(d).smallest_subnormal.item() for d in FLOATS}
    spans = {"float16": [(4, (0.0, 6e-5)), (3, (-30 * tiny["float16"], 30 * tiny["float16"])),
                         (5, (-3e4, 3e4)), (4, (2048.0, 2056.0))],
             "float32": [(5, (0.0, 1e-44)), (7, (-40 * tiny["float32"], 40 * tiny["float32"])),
                         (9, (-1e38, 1e38)), (8, (1e7, 1e7 + 8)), (4, (0.0, 1e-38)),
                         (3, (-2e-38, 1e-38))],
             "float64": [(3, (0.0, 1e-320)), (7, (-40 * tiny["float64"], 40 * tiny["float64"])),
                         (340, (3.26e-322, 4.056e-321)), (4, (0.0, 1e-300)),
                         (5, (-1e-300, 1e-300)), (6, (1e-300, 1e300)), (9, (-1e300, 1e300)),
                         (8, (1e15, 1e15 + 1)), (4, (-1e15 - 1, -1e15)), (3, (1e300, 1.2e300)),
                         (10, (1e-300, 1e-299))]}
    for dtype, configs in spans.items():
        info = np.finfo(dtype)
        for bins, (lo, hi) in configs:
            name = f"span/{dtype}/{_span_name(bins, (lo, hi))}"
            samples = np.concatenate([
                traps(dtype, numpy_edges(dtype, bins, (lo, hi))),
                draw(dtype, 64, lo, hi, "uniform", seeded(name)),
                (np.arange(-40, 41) * tiny[dtype]).astype(dtype),  # subnormals and zero
                np.array([info.max, -info.max, info.tiny, -info.tiny], dtype)])
            yield BinCase(name, samples, bins, (lo, hi),
                          note="a tiny, huge, subnormal or far-from-0 span; subnormal samples")


def _zero_and_nonfinite_cases() -> Iterator[BinCase]:
    for dtype in FLOATS:
        zeros = np.array([-0.0, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0], dtype)
        for lo, hi in ((-0.0, 1.0), (0.0, 1.0), (-1.0, -0.0), (-1.0, 0.0), (-0.0, 0.0)):
            yield BinCase(f"zero/{dtype}/range={name_number(lo)}..{name_number(hi)}", zeros, 2,
                          (lo, hi), note="-0.0 == 0.0, as a bound and as a sample")
        yield BinCase(f"zero/{dtype}/range-none", zeros[:3], 3, None,
                      note="only zeros: lo == hi == 0, widened by 0.5")
        for i, edges in enumerate(([-0.0, 0.0, 1.0], [-1.0, -0.0], [0.0, -0.0, 0.0])):
            yield BinCase(f"zero/{dtype}/explicit-{i}", zeros, np.array(edges, dtype), None,
                          note="signed zeros as edges (-0.0 after 0.0 is no decrease)")
        odd = np.array([np.nan, 0.25, np.inf, -np.inf, -np.nan, 1.0, -1.0, np.nan], dtype)
        yield from _with_cub(BinCase(f"nonfinite/{dtype}", odd, 4, (-1.0, 1.0),
                                     note="NaN is never counted; infinities lie outside"))
        infinite = np.array([-np.inf, -1.0, 0.0, 1.0, np.inf], dtype)
        yield from _with_cub(BinCase(f"nonfinite/{dtype}/infinite-edges", odd, infinite, None,
                                     note="+inf on an infinite top edge: counted only if closed"))


def _nep50_cases() -> Iterator[BinCase]:
    pairs = [("float16", np.float16), ("float16", np.float32), ("float16", np.float64),
             ("float16", float), ("float32", np.float64), ("float32", float),
             ("float64", np.float32), ("int8", np.float16), ("int16", np.float32),
             ("int32", np.float32), ("uint8", float)]
    for dtype, bound in pairs:
        span = (bound(-0.1), bound(0.3)) if dtype[0] == "f" else (bound(-7.3), bound(100.7))
        edges = numpy_edges(dtype, 11, span)
        name = bound.__name__ if bound is not float else "python-float"
        yield BinCase(f"nep50/{dtype}/range-{name}", traps(dtype, edges), 11, span,
                      note=f"{dtype} samples, {name} bounds: {edges.dtype} edges")
    x = np.array([0.0005646, 0.000883, 0.000778], np.float16)
    inner = numpy_edges(x, 143, None)[1:-1]  # inner edges only: the min and max stay
    yield BinCase("float16/estimate-misses-two-bins",
                  np.concatenate([x, traps(np.float16, inner, nonfinite=False)]), 143, None,
                  note="uneven float16 edges: numpy's estimate lands a bin below the edges' bin")
    yield BinCase("float16/range-none", near(np.linspace(-3, 5, 40), np.float16), 17, None,
                  note="float16 min and max: edges and estimate in float16")


def _integer_cases() -> Iterator[BinCase]:
    for dtype in INTS:
        info = np.iinfo(dtype)
        whole = seeded(dtype).integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
        whole[:2] = info.min, info.max
        edges = numpy_edges(np.float64, 7, (float(info.min), float(info.max)))
        yield BinCase(f"int/{dtype}/range-none", np.concatenate([whole, near(edges, dtype)]), 7,
                      None, note="the dtype's min and max: float64 edges (past 2^53 they round)")
        lo = -100 if info.min < 0 else 3
        for name, span in (("python-int", (lo, 100)), ("float", (lo - 0.5, 99.5))):
            yield from _with_cub(BinCase(
                f"int/{dtype}/range-{name}", near(numpy_edges(np.float64, 9, span), dtype), 9,
                span, note="integers on floor(edge) and one either side"))
        cuts = np.array(sorted({int(info.min), lo, 0, 1, 7, 8, 100, int(info.max)}), dtype)
        yield BinCase(f"int/{dtype}/explicit-int-edges", np.concatenate([whole, near(cuts, dtype)]),
                      cuts, None, note="integer edges: compared exactly")
    yield BinCase("int/int8/negative", np.arange(-128, 128, dtype=np.int8), 5, (-128, -1),
                  note="negative int8 samples")
    big = np.array([2**54 - 1, 2**54, 2**54 + 1, 2**55 - 1, 2**55, 2**55 + 1, 2**55 + 8, -1, 0],
                   np.int64)
    yield BinCase("int/int64/past-2pow53/python-int-range", big, 2, (0, 2**55),
                  note="2^55 + 1 rounds onto the top edge but lies past hi: not counted")
    yield BinCase("int/int64/past-2pow53/float-edges", big, np.array([0.0, 2.0**54, 2.0**55]),
                  None, note="2^54 - 1 rounds onto the edge 2^54: the upper bin")
    yield BinCase("int/int64/past-2pow53/int-edges", big, np.array([0, 2**54, 2**55]), None,
                  note="the same against integer edges: compared exactly")
    for dtype, base in (("int64", 2**62), ("int64", -(2**63)), ("uint64", 2**64 - 2**41)):
        x = (np.array(base, object) + seeded(f"{base}").integers(0, 2**40, 400)).astype(dtype)
        for bins, span in ((1000, None), (17, (x[5], x.max()))):
            yield BinCase(f"int/{dtype}/past-2pow53/base={base}/bins={bins}", x, bins, span,
                          note="64-bit samples near 2^63 or 2^64: float64 edges round")
    u = np.array([2**63 + 1, 2**64 - 1, 5, 2**62 - 1, 2**62, 2**62 + 1], np.uint64)
    yield BinCase("int/uint64/int64-edges", u, np.array([0, 2**62, 2**63 - 1], np.int64), None,
                  note="uint64 samples against int64 edges compare in float64")


def _mixed_precision_cases() -> Iterator[BinCase]:
    """Where a kernel that keeps one precision for everything parts from
    numpy: integer samples on edges that float64 puts a hair past a whole
    number (exact integer arithmetic, as CUB's integer levels take, or
    float32 edges, bin them one bin up); float32 samples whose min and max
    give the edges (numpy computes them in float32); explicit edges of
    another dtype than the samples (numpy compares in the wider one); one bin
    over a range float32 does not hold; more bins than 16 bits index; and
    lo == hi for integer samples beside it (numpy widens by 0.5)."""
    for dtype in ("uint8", "int16"):
        yield from _with_cub(BinCase(
            f"mixed/{dtype}/integers-on-edges-past-whole", np.arange(59, dtype=dtype), 14,
            (0, 58), note="edge 7 of 14 over (0, 58) is 29.000000000000004: 29 is in bin 6"))
    samples = np.array([-1.0, 0.30000001192092896, -0.3500000238418579], np.float32)
    yield from _with_cub(BinCase(
        "mixed/float32/range-none/min-max-edges", samples, 2, None,
        note="float32 edges from the min and max: -0.35 lies on the middle edge"))
    for dtype in ("float32", "float16"):
        yield from _with_cub(BinCase(
            f"mixed/{dtype}/float64-edges", near([0.1, 0.7, 1.0], dtype),
            np.array([0.1, 0.7, 1.0]), None,
            note=f"{dtype} samples against float64 edges, compared in float64"))
    yield from _with_cub(BinCase(
        "mixed/float64/float32-edges",
        np.concatenate([near(np.array([0.1, 0.5, 1.0], np.float32), np.float64),
                        [0.1, 0.3, 0.7, 1.0 - 2.0**-30]]),
        np.array([0.1, 0.5, 1.0], np.float32), None,
        note="float64 samples against float32 edges, compared in float64: 0.1 lies below "
             "float32(0.1)"))
    yield from _with_cub(BinCase(
        "mixed/float32/one-bin/range-0.7..1", near([0.7, 1.0], np.float32), 1, (0.7, 1.0),
        note="the edge 0.7 in float32 lies below 0.7: float32(0.7) is in the bin"))
    yield from _with_cub(BinCase(
        "mixed/float64/bins=65537", near([0.5, 65535.5, 65536.0, 65536.5, 65537.0], np.float64),
        65537, (0, 65537), note="bin 65536: past a 16-bit bin index"))
    yield from _with_cub(BinCase(
        "mixed/int8/range=7..7", np.array([5, 6, 7, 8, 9], np.int8), 2, (7, 7),
        note="numpy widens lo == hi to (6.5, 7.5): 6 and 8 are outside"))


def _shape_cases() -> Iterator[BinCase]:
    for dtype in ("float32", "float64", "int8", "uint16", "float16"):
        equal = np.full(9, -3 if dtype == "int8" else 7, dtype)
        yield from _with_cub(BinCase(f"shape/{dtype}/lo-equals-hi/range-none", equal, 3, None,
                                     note="all samples equal: the span widens by 0.5 each way"))
        yield BinCase(f"shape/{dtype}/lo-equals-hi/range", equal, 2, (7, 7), note="range (7, 7)")
        mixed = draw(dtype, 50, -10.0, 20.0, "normal", seeded(dtype))
        yield BinCase(f"shape/{dtype}/one-bin", mixed, 1, (-5, 5), note="one bin: [lo, hi]")
        yield BinCase(f"shape/{dtype}/one-bin/range-none", mixed, 1, None, note="[min, max]")
        yield BinCase(f"shape/{dtype}/range-none", mixed, 13, None, note="min and max are edges")
    x = near([0.0, 1.0, 2.0, 3.0, 4.0, -1.0], np.float64)
    for i, edges in enumerate(([0, 1, 1, 2, 3, 3], [0, 0, 1], [2, 2], [1.0], [])):
        yield from _with_cub(BinCase(
            f"shape/repeated-edges-{i}", x, np.array(edges, np.float64 if i % 2 else np.int64),
            None, note="non-decreasing edges: empty [e, e) bins, a closed [3, 3]; no bins"))
    for dtype, span in (("float32", (-3.7, 12.9)), ("float64", (-1.0, 1.0))):
        case = BinCase(f"shape/{dtype}/bins=65536", traps(dtype, numpy_edges(dtype, 2**16, span)),
                       2**16, span, note="2^16 bins, every edge and one ulp either side")
        yield from _with_cub(case) if dtype == "float32" else [case]


def _bulk(prefix, dtype, n, how, bins, span, over=None, view=False) -> BinCase:
    """n seeded samples drawn over span (when span is None: over `over`, by default a
    little past the explicit edges or +-50 for integers), every edge's traps sprinkled
    in; view=True: a misaligned view."""
    wide = (-50.0, 50.0) if np.dtype(dtype).kind in "iu" else (-4.5, 4.5)
    lo, hi = span if span is not None else over or wide
    name = f"{prefix}/{dtype}/{how}/n={n}/{'explicit' if np.ndim(bins) else 'even'}"
    rng = seeded(name)
    samples = draw(dtype, n, lo, hi, how, rng)
    if n:
        # range=None: inner edges only, no NaN or inf, so the min and max stay put
        inner = span is None and np.ndim(bins) == 0
        edges = numpy_edges(samples, bins, span)
        samples = sprinkle(samples, traps(dtype, edges[1:-1] if inner else edges, not inner), rng)
    return BinCase(name + ("/misaligned" if view else ""), misaligned(samples) if view else samples,
                   bins, span, note=f"{how} samples, traps sprinkled" + ", misaligned" * view)


def _bulk_cases() -> Iterator[BinCase]:
    explicit = np.sort(seeded("edges").uniform(-4.0, 4.0, 257))
    setups = [("float32", 1000, (-3.0, 3.0)), ("float64", explicit, None),
              ("float16", 50, (-2.0, 2.0)), ("int32", 40, None), ("uint8", 16, (0, 255))]
    for (dtype, bins, span), n in itertools.product(setups, SIZES):
        yield from _with_cub(_bulk("size", dtype, n, "uniform", bins, span))
    # Past 2^22 samples, as the integer matrix goes: a kernel whose grid is a
    # fixed 2^20 or 2^21 threads, one sample each, misses the tail.
    yield from _with_cub(_bulk("size", "float32", 2**22 + 3, "uniform", 1000, (-3.0, 3.0)))
    for (dtype, bins, span), how in itertools.product(setups[:4], ("uniform", "normal", "equal")):
        case = _bulk("bulk", dtype, BULK, how, bins, span)
        yield from _with_cub(case) if how == "uniform" and dtype == "float32" else [case]
    for dtype, n in itertools.product(("float16", "float32", "float64", "int8", "int16",
                                       "uint64"), (33, 4097)):
        yield _bulk("view", dtype, n, "normal", 31, (-2, 2), view=True)
    # Few bins: most 16-byte vectors of samples hold two or three bins, which
    # the estimate alone places in one step (counting.cuh's quick path).
    for dtype, bins in (("float32", 3), ("float64", 2)):
        yield _bulk("few-bins", dtype, BULK, "uniform", bins, (-1.0, 2.0))
    # Explicit edges near an even grid, samples past both ends: the quick path
    # of the bracketing walk, which tallies samples outside the edges itself
    # (a dyadic grid, whose estimate is exact, and one whose estimate rounds).
    # The edges are of the samples' dtype, so samples lie on the first and last;
    # under CUB's rule a sample on the top edge is past every bin.
    for dtype, (lo, hi) in (("float32", (-0.1, 1.3)), ("float64", (-2.0, 2.0))):
        pad = (hi - lo) / 8
        yield from _with_cub(_bulk("near-even-edges", dtype, BULK, "normal",
                                   np.linspace(lo, hi, 65, dtype=dtype), None,
                                   over=(lo - pad, hi + pad)))


def _large_cases() -> Iterator[BinCase]:
    yield from _with_cub(_bulk("large", "float32", 2**24, "uniform", 2**20, (-3.7, 12.9)))
    yield _bulk("large", "float64", 2**24, "normal", 2**20, (-1.0, 1.0), view=True)
    yield _bulk("large", "float64", 2**24, "normal", numpy_edges("float64", 2**20, (-2.0, 2.0)),
                None)
    yield _bulk("large", "float16", 2**24, "equal", 100, (-1.0, 1.0))
    yield _bulk("large", "uint8", 2**26, "uniform", 256, None, over=(0, 255))
    yield _bulk("large", "int64", 2**24, "normal", 2**20, None)


def _numpy_takes(case: BinCase) -> bool:
    """np.histogram gives this case a result (no exception)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            np.histogram(case.samples, case.bins, case.range)
    except Exception:
        return False
    return True


def harness_cases() -> list[BinCase]:
    """Cases for histkit's own binning kernels under the conformance harness
    (``histkit.conformance.binning``; a user's kernel is judged on
    ``bin_cases``): skewed, where a warp that counts before another has
    zeroed the shared counters, or merges before another has counted, loses
    samples; fenced, where a 16-byte vector read past the last sample (or
    before the first) faults. Even bins and edges, in shared memory, with
    sample counts whose bytes end mid-vector."""
    edges = np.sort(seeded("harness-edges").uniform(-4.0, 4.0, 65))
    skewed = [("float32", 20_011, 256, (-4.0, 4.0)), ("float64", 30_011, edges, None),
              ("int16", 40_009, 100, (-50, 50))]
    fenced = [("end", "float32", 10_007, 1000, (-3.0, 3.0)), ("end", "int8", 4_099, 31, (-2, 2)),
              ("end", "float64", 5_003, edges, None), ("start", "float16", 3_001, 50, (-2.0, 2.0)),
              ("start", "uint8", 4_097, 16, (0, 255))]
    found = [replace(_bulk("skewed", dtype, n, "normal", bins, span), skewed=True)
             for dtype, n, bins, span in skewed]
    found += [replace(_bulk(f"fenced-at-{fence}", dtype, n, "uniform", bins, span),
                      fenced=fence) for fence, dtype, n, bins, span in fenced]
    for case in found:
        case.samples.flags.writeable = False
    return found


def failing_cases() -> list[BinCase]:
    """Cases np.histogram raises on, for histkit's own binning kernels
    (``histkit.conformance.binning``): numpy's even-bin estimate has no bin
    for some kept samples, so the kernels must name the first of them, as
    the oracle does (a user's kernel is not asked to, so ``bin_cases`` holds
    none). Float32 samples whose x - lo overflows float32, and float16
    samples kept by a range bound that rounds up past the top edge; each
    with two such samples past its start, NaN and samples outside the range
    among the rest."""
    rng = seeded("numpy-fails")
    wide = rng.uniform(-3.4e38, -1e38, 5_003).astype(np.float32)
    wide[[17, 3_000]] = np.float32(-3.4028e38), np.float32("nan")  # underflow, NaN
    wide[[1_234, 4_000]] = np.float32(3e38), np.float32(2e38)  # x - lo overflows
    palette = np.float16([0.25, 0.5, 0.99951, 1.5, np.nan])
    half = palette[rng.integers(0, len(palette), 3_001)]
    half[[1_500, 2_999]] = np.float16(1.0)  # kept: float16(0.9999) == 1.0 > the top edge
    found = [*_with_cub(BinCase("numpy-fails/float32/span-overflows", wide, 100,
                                (-3.4e38, 3.4e38), note="x - lo overflows float32")),
             *_with_cub(BinCase("numpy-fails/float16/kept-past-top-edge", half, 3,
                                (np.float64(0.9997), 0.9999),
                                note="float16(0.9999) keeps 1.0, above the float64 top edge"))]
    for case in found:
        case.samples.flags.writeable = False
    return found


def bin_cases(quick: bool = True) -> list[BinCase]:
    """The named cases, in a fixed order; each call regenerates the same samples.

    Parameters
    ----------
    quick : bool, default True
        True: small cases (one of 2^22 + 3 samples, the rest under 2^22 in all;
        built in about 2 s).
        False: also large ones (2^24 to 2^26 samples, 2^20 bins).

    Returns
    -------
    list of BinCase
        Only cases np.histogram gives a result for; names unique and -k-safe.
    """
    groups = [_edge_cases, _naive_cases, _span_cases, _zero_and_nonfinite_cases, _nep50_cases,
              _integer_cases, _mixed_precision_cases, _shape_cases, _bulk_cases]
    groups += [] if quick else [_large_cases]
    kept, taken = [], {}
    for case in itertools.chain.from_iterable(group() for group in groups):
        if not NAME.fullmatch(case.name):
            raise ValueError(f"case name {case.name!r} is not -k-safe")
        # A case and its CUB twin share their arrays: numpy is asked once. The
        # first case is kept with its answer, so the ids cannot be reused.
        key = (id(case.samples), id(case.bins), repr(case.range))
        if key not in taken:
            taken[key] = (case, _numpy_takes(case))
        if taken[key][1]:
            for array in (case.samples, case.bins):
                if isinstance(array, np.ndarray):
                    array.flags.writeable = False
            kept.append(case)
    names = [case.name for case in kept]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise ValueError(f"duplicate case names: {twice}")
    return kept
