"""Runs every registry column (kernel row x variant) on every case, applies
the rule of its kind, and reports.

The oracles run on the host; the kernels on the device, fed the same keys
(uploaded once per case, between guard keys). Every output is allocated with
guard elements before and after it that must come back untouched, and so is
every scratch array a launcher allocates (Runtime.scratch_overruns). Skewed
cases run histkit's kernels built with schedule skew (Runtime.skewed_schedule).
Nothing here decides what is correct: that is checks.py, against
histkit.oracles.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

try:
    import fcntl
except ImportError:  # not POSIX: huge cases are not serialised across processes
    fcntl = None

from histkit import __version__
from histkit.conformance import checks
from histkit.conformance.cases import (
    GUARD,
    HUGE,
    LARGE,
    Case,
    all_cases,
    judges,
    not_judged_because,
)
from histkit.conformance.checks import Cell
from histkit.conformance.report import print_report
from histkit.gpu import registry
from histkit.gpu.contract import MAX_INT32_INDEX_KEYS, NO_BAD_KEY, SCAN_ITEMS, SCAN_THREADS, WARP
from histkit.gpu.device import BufferWindow, DeviceArray, FenceUnavailable, Runtime, runtime
from histkit.gpu.errors import SkewUnavailable, UnsupportedShape
from histkit.gpu.launch.common import Keys
from histkit.gpu.policy import LOOK_BACK_BYTES_PER_TILE, digit_shifts, tile_keys
from histkit.gpu.registry import FULL_WIDTH_KINDS, SORTING_KINDS, TAKES_KEYS, Kernel, Variant
from histkit.gpu.verdict import judge_reading
from histkit.oracles._inputs import available_memory

# One warp walks the whole input alone: past these it is only slow, not new.
ONE_WARP_MAX_N = (1 << 20) + (1 << 13)
NARROW_WAVE_MAX_N = 1 << 17
# Variant columns (forced layouts, small tiles, ...) skip the 2^28-key cases:
# they exist to reach paths, which smaller cases do. Past 2^31 all run again.
VARIANT_MAX_N = 1 << 24
# A host wait on the device longer than this in the matrix is a hang: the
# kernel never ends (a loop bound that wrapped, a look-back that waits for a
# tile nobody publishes). The longest wait of an unmutated matrix, a stable
# sort of 2^31 + 17 keys and its 18 GiB read back, takes a few seconds on an
# H200. HISTKIT_WAIT_LIMIT_S sets another (0: unbounded, as under
# compute-sanitizer, which slows kernels by orders of magnitude).
WAIT_LIMIT_S = 60.0
POISON = 0xA5  # sort outputs start as this byte: an unwritten slot shows
COUNTS_GUARD = 0x5A  # the byte after a scan's input counts


def columns(rows=None) -> list[tuple[str, Kernel, Variant]]:
    """Every (column name, kernel, variant) of the registry, or of the named rows."""
    kernels = registry.KERNELS if rows is None else [registry.by_row(r) for r in rows]
    return [(name, kernel, variant) for kernel in kernels
            for name, variant in kernel.columns()]


@dataclass
class Result:
    case: Case
    kernel: str
    cell: Cell
    geometry: str = ""
    seconds: float = 0.0


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)
    # Why the run ended before its last case (a kernel that never ended), if it did.
    stopped: str | None = None

    @property
    def passed(self) -> bool:
        return not any(r.cell.status == "FAIL" for r in self.results)

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.cell.status == "FAIL"]

    def to_json(self) -> dict:
        return {
            "histkit": __version__,
            "host": platform.node(),
            "passed": self.passed,
            "stopped": self.stopped,
            "results": [result_json(r) for r in self.results],
        }


def result_json(r: Result) -> dict:
    return {"case": r.case.name, **asdict(r.case), "kernel": r.kernel,
            "status": r.cell.status, "detail": r.cell.detail, "figures": r.cell.figures,
            "geometry": r.geometry, "seconds": round(r.seconds, 4)}


class GuardViolation(AssertionError):
    pass


class CaseRun:
    """One case: its keys on host and device, and the oracle's answers (computed once)."""

    def __init__(self, rt: Runtime, case: Case):
        self.rt = rt
        self.case = case
        self.host = case.keys()
        dtype = self.host.dtype
        self.fenced: set[int] = set()  # pointers of inputs placed against unmapped memory
        self.fenced_at_start: set[int] = set()  # outputs with unmapped memory before them
        self.judge_word: DeviceArray | None = None  # the verdict board's (first_bad_slot)
        self.judged = 0  # its slot number
        if case.scan_counts:  # no keys: the scans upload the counts themselves
            self.device_array, self.keys = None, None
        elif case.fenced:
            self.device_array = self.fenced_input(self.host)
            self.keys = Keys(self.device_array.ptr, case.n, dtype)
        else:
            padded = np.full(case.offset + case.n + GUARD, case.guard_value(), dtype=dtype)
            padded[case.offset:case.offset + case.n] = self.host
            self.device_array = rt.to_device(padded)
            self.keys = Keys(self.device_array.ptr + case.offset * dtype.itemsize, case.n,
                             dtype)
        self.expected = checks.Expected(self.host, case.num_bins, case.full_width,
                                        radix_values(case), case.scan_counts,
                                        round_robin=case.sorted_in_closed_form)

    # --- device buffers, each between GUARD elements on either side -------------
    def output(self, n: int, dtype, fill: int = 0) -> DeviceArray:
        """n elements for a kernel to write, between GUARD elements of the byte
        fill; in a fenced case, flush against unmapped memory at its start
        instead of a front guard: a kernel that touches the word before its
        output faults, even with an access no guard sees (an atomic adding 0)."""
        dtype = np.dtype(dtype)
        if self.case.fenced:
            whole = self.rt.fenced_at_start(n + GUARD, dtype)
            self.rt.memset(whole.ptr, fill, (n + GUARD) * dtype.itemsize)
            self.fenced_at_start.add(whole.ptr)
            return DeviceArray(BufferWindow(whole.buffer, 0), n, dtype)
        whole = self.rt.empty(GUARD + n + GUARD, dtype)
        self.rt.memset(whole.ptr, fill, (GUARD + n + GUARD) * dtype.itemsize)
        return DeviceArray(BufferWindow(whole.buffer, GUARD * dtype.itemsize), n, dtype)

    def read(self, array: DeviceArray, fill: int = 0) -> np.ndarray:
        """array's elements, after checking that its guards still hold fill
        (a fenced input has none: a write past it faults; an output fenced at
        its start has its guard after it only)."""
        if array.ptr in self.fenced:
            return self.rt.copy_to_host(array.ptr, np.empty(array.n, array.dtype))
        size = array.dtype.itemsize
        front = self._front_guard(array)
        whole = self.rt.copy_to_host(array.ptr - front * size,
                                     np.empty(front + array.n + GUARD, array.dtype))
        self._check_guards(array, whole[:front], whole[front + array.n:], fill)
        return whole[front:front + array.n]

    def read_in_slices(self, array: DeviceArray, fill: int = 0):
        """array's guards checked now (as read() does), its elements read
        later, a slice at a time: (start, stop) -> those elements (a sort's
        outputs past 2^31 keys, never whole on the host)."""
        size = array.dtype.itemsize
        if array.ptr not in self.fenced:
            front = self._front_guard(array)
            before = self.rt.copy_to_host(array.ptr - front * size, np.empty(front, array.dtype))
            after = self.rt.copy_to_host(array.ptr + array.n * size,
                                         np.empty(GUARD, array.dtype))
            self._check_guards(array, before, after, fill)

        def elements(start: int, stop: int) -> np.ndarray:
            return self.rt.copy_to_host(array.ptr + start * size,
                                        np.empty(stop - start, array.dtype))
        return elements

    def _front_guard(self, array: DeviceArray) -> int:
        """The guard elements before an output: none where it is fenced at its start."""
        return 0 if array.ptr in self.fenced_at_start else GUARD

    @staticmethod
    def _check_guards(array: DeviceArray, before: np.ndarray, after: np.ndarray,
                      fill: int) -> None:
        size = array.dtype.itemsize
        wrong = np.flatnonzero(before.view(np.uint8) != fill)
        if wrong.size:
            raise GuardViolation(f"wrote before the start of a {array.n}-element output "
                                 f"(element {int(wrong[0]) // size - GUARD})")
        wrong = np.flatnonzero(after.view(np.uint8) != fill)
        if wrong.size:
            raise GuardViolation(f"wrote past the end of a {array.n}-element output "
                                 f"(element {array.n + int(wrong[0]) // size})")

    def guarded_input(self, host: np.ndarray, fill: int) -> DeviceArray:
        """host on the device between GUARD elements of the byte fill: a kernel
        that reads outside its input reads them, and read(array, fill) says
        whether one wrote there. In a fenced case: against unmapped memory."""
        if self.case.fenced:
            return self.fenced_input(host)
        padded = np.empty(GUARD + len(host) + GUARD, host.dtype)
        padded.view(np.uint8)[:] = fill
        padded[GUARD:GUARD + len(host)] = host
        whole = self.rt.to_device(padded)
        return DeviceArray(BufferWindow(whole.buffer, GUARD * host.dtype.itemsize), len(host),
                           host.dtype)

    def fenced_input(self, host: np.ndarray) -> DeviceArray:
        array = self.rt.fenced_copy(host, at_start=self.case.fenced_at_start)
        self.fenced.add(array.ptr)
        return array

    def first_bad_slot(self, kernel: Kernel) -> DeviceArray:
        """Where the kernels note the first bad key: for histkit's own kernels
        a word of the verdict board between guard words, in turn its last
        slot and the words just past and just before its slots (their flags
        are judged too: verdict.judge_reading, checks.published_rule); else,
        and in a fenced case (its word against unmapped memory), a guarded
        output."""
        board = self.rt.verdicts
        if not (kernel.publishes_verdict and board.usable and not self.case.fenced):
            return self.output(1, np.uint64, fill=0xFF)
        self.judged = board.next_judged()
        start, words = board.stretch(self.judged)
        self.rt.memset(start, 0xFF, words * 8)
        self.judge_word = self.rt.board_word(self.judged)
        return self.judge_word

    def verdict(self, slot: DeviceArray) -> tuple[int | None, bool | None]:
        """(the first bad index reported in slot, or None; whether the verdict
        board flagged it, None where that is not judged)."""
        if slot is not self.judge_word:
            index = int(self.read(slot, fill=0xFF)[0])
            return (None if index == NO_BAD_KEY else index), None
        board = self.rt.verdicts
        start, words = board.stretch(self.judged)
        stretch = self.rt.copy_to_host(start, np.empty(words, np.uint64))  # waits
        index, flagged, wrong = judge_reading(stretch, board.stretch_flags(self.judged),
                                              on_board=board.holds(self.judged))
        if wrong:
            raise GuardViolation(wrong)
        return index, flagged

    def reported_bad(self, slot: DeviceArray) -> int | None:
        return self.verdict(slot)[0]

    # --- one launcher per family of kinds: each returns (Outcome, geometry) ------
    def run_histogram(self, kernel: Kernel, variant: Variant) -> tuple[checks.Outcome, str]:
        # Poisoned, not zeroed: a launcher leaves the exact counts whatever
        # the buffer held (the public calls hand it uninitialised memory).
        hist = self.output(self.case.num_bins, np.dtype(kernel.count_dtype), fill=POISON)
        slot = self.first_bad_slot(kernel)
        extra = {"atomics": self.output(1, np.uint64)} if kernel.kind == "privatized" else {}
        geometry = kernel.run(self.rt, self.keys, self.case.num_bins, hist, slot,
                              grid=self.case.grid, **variant.options, **extra)
        first_bad, published = self.verdict(slot)
        outcome = checks.Outcome(counts=self.read(hist, fill=POISON).astype(np.int64),
                                 first_bad=first_bad, published=published,
                                 block=geometry.block, grid=geometry.grid)
        if extra:
            outcome.global_atomics = int(self.read(extra["atomics"])[0])
        if kernel.choice_probe is not None:
            outcome.sample, outcome.auto_choice = kernel.choice_probe(self.rt, self.keys,
                                                                      self.case.num_bins)
        return outcome, str(geometry)

    def run_scan(self, kernel: Kernel, variant: Variant) -> tuple[checks.Outcome, str]:
        # The counts' guard is non-zero: a scan that reads past its input miscounts.
        counts = self.guarded_input(self.expected.exact.view(np.uint64), COUNTS_GUARD)
        out = self.output(self.case.num_bins, np.uint64, fill=POISON)
        geometries = kernel.run(self.rt, counts.ptr, self.case.num_bins, out.ptr, [],
                                **variant.options)
        offsets = self.read(out, fill=POISON).view(np.int64)  # 2^31 of them: no copy
        self.read(counts, fill=COUNTS_GUARD)  # nor may the scan write past its input
        return checks.Outcome(offsets=offsets), " + ".join(map(str, geometries))

    def run_sort(self, kernel: Kernel, variant: Variant) -> tuple[checks.Outcome, str]:
        n = self.case.n
        if n == 0:
            empty = np.empty(0, self.host.dtype)
            return checks.Outcome(sorted_keys=empty, original_index=empty.astype(np.int64)), ""
        out_keys = self.output(n, self.host.dtype, fill=POISON)
        out_index = self.output(n, variant.options.get("index_dtype", np.int64), fill=POISON)
        slot = self.first_bad_slot(kernel)

        def between() -> bool:
            # Scatter only when the count's verdict is the oracle's. A bad-key
            # case is scattered too, as gpu.counting_sort(check=False) does
            # without waiting: the scatter must skip bad keys within bounds
            # (the guards judge it). A count that missed a bad key would send
            # the scatter out of bounds: that case stops here.
            return (self.reported_bad(slot) is None) == (self.expected.bad is None)

        geometries = kernel.run(self.rt, self.keys, self.case.num_bins, out_keys, out_index,
                                slot, [], grid=self.case.grid, between=between,
                                **variant.options)
        first_bad, published = self.verdict(slot)
        outcome = checks.Outcome(first_bad=first_bad, published=published)
        shape = " + ".join(map(str, geometries))
        if (self.expected.bad is None) != (outcome.first_bad is None):
            return outcome, shape  # a wrong bad-key verdict: the rule FAILs it on that alone
        if self.case.sorted_in_closed_form:
            keys_at = self.read_in_slices(out_keys, fill=POISON)  # guards checked here
            index_at = self.read_in_slices(out_index, fill=POISON)
            outcome.sorted_slices = lambda start, stop: (
                keys_at(start, stop), index_at(start, stop).astype(np.int64, copy=False))
        else:
            outcome.sorted_keys = self.read(out_keys, fill=POISON)  # guards checked here
            # (int64 indices are used as read: past 2^31 keys a copy is 16 GiB more)
            outcome.original_index = self.read(out_index, fill=POISON).astype(np.int64,
                                                                             copy=False)
        return outcome, shape

    def run_radix(self, kernel: Kernel, variant: Variant) -> tuple[checks.Outcome, str]:
        n = self.case.n
        values = self.expected.values
        out_keys = self.output(n, self.host.dtype, fill=POISON)
        out_index = self.output(n, variant.options.get("index_dtype", np.int64), fill=POISON)
        out_values = self.output(n, values.dtype, fill=POISON)
        # the values sit before a guard too: a gather reading past them misplaces one
        on_device = self.guarded_input(values, POISON)
        geometries = kernel.run(self.rt, self.keys, out_keys, out_index, [],
                                grid=self.case.grid,
                                values=(on_device.ptr, values.dtype.itemsize, out_values.ptr),
                                **variant.options) if n else []
        if self.case.sorted_in_closed_form:  # read and judged a slice at a time
            keys_at = self.read_in_slices(out_keys, fill=POISON)  # guards checked here
            index_at = self.read_in_slices(out_index, fill=POISON)
            values_at = self.read_in_slices(out_values, fill=POISON)
            self.read_in_slices(on_device, fill=POISON)  # nor may it write to its input
            radix = checks.Outcome(radix_slices=lambda start, stop: (
                keys_at(start, stop), index_at(start, stop).astype(np.int64, copy=False),
                values_at(start, stop)))
            return radix, " + ".join(map(str, geometries))
        outcome = checks.Outcome(sorted_keys=self.read(out_keys, fill=POISON),
                                 original_index=self.read(out_index, fill=POISON).astype(
                                     np.int64),
                                 sorted_values=self.read(out_values, fill=POISON))
        self.read(on_device, fill=POISON)  # nor may it write to its input
        return outcome, " + ".join(map(str, geometries))

    def judge(self, kernel: Kernel, variant: Variant) -> tuple[Cell, str]:
        if self.case.grid is not None and not kernel.takes_grid:
            return Cell("skip", "fixed geometry: a forced grid does not apply"), ""
        if not judges(self.case, kernel.kind):
            return Cell("skip", not_judged_because(self.case)), ""
        if kernel.kind in FULL_WIDTH_KINDS and self.expected.values is None:
            return Cell("skip", "radix sort: past 2^31 keys the stable sort judges its passes; "
                                "at 2^28 the full-width cases judge it"), ""
        if self.expected.bad is not None and kernel.kind not in TAKES_KEYS:
            return Cell("skip", f"{kernel.kind} kernels do not check keys"), ""
        if variant.name and VARIANT_MAX_N < self.case.n < HUGE:
            return Cell("skip", "variants reach their paths at small N; the 2^28 cases "
                                "judge what users run"), ""
        lanes = variant.options.get("lanes", WARP)
        if kernel.kind == "wave":
            limit = ONE_WARP_MAX_N if lanes == WARP else NARROW_WAVE_MAX_N
            if self.case.n > limit:
                return Cell("skip", f"one warp over N > {limit} is only slow"), ""
        family = {"scan": self.run_scan, "sort": self.run_sort, "stable-sort": self.run_sort,
                  "radix-sort": self.run_radix}
        try:
            outcome, geometry = family.get(kernel.kind, self.run_histogram)(kernel, variant)
        except UnsupportedShape as error:
            if not refusal_allowed(self.rt, kernel, variant, self.case):
                return Cell("FAIL", f"refused a case it must run: {error}"), ""
            return Cell("skip", str(error).split(";")[0]), ""
        except GuardViolation as error:
            return Cell("FAIL", str(error)), ""
        except SkewUnavailable as error:  # a user's kernel: no skewed build of it
            return Cell("skip", str(error)), ""
        return checks.judge(kernel.kind, self.expected, outcome, warp_size=lanes,
                            skips_bad_keys=kernel.skips_bad_keys), geometry


def refusal_allowed(rt, kernel: Kernel, variant: Variant, case: Case) -> bool:
    """Whether a launcher's UnsupportedShape on this case is right: int32
    original indices past 2^31 keys, or the row's own rule (Kernel.may_refuse)."""
    if (np.dtype(variant.options.get("index_dtype", np.int64)) == np.int32
            and case.n > MAX_INT32_INDEX_KEYS):
        return True
    return kernel.may_refuse is not None and bool(
        kernel.may_refuse(rt, case.n, case.num_bins, np.dtype(case.dtype), variant.options))


def radix_values(case: Case) -> np.ndarray | None:
    """The values the radix sort moves with the case's keys: random bits of a
    width other than the keys' (every width of the gather across the cases).
    None where the radix sort is not judged: past 2^31 keys but on the cases
    judged in closed form (checks.closed_form_values there), and at 2^28
    keys below a K (the full-width 2^28 cases judge it at that size)."""
    if case.sorted_in_closed_form and case.kinds is not None and "radix-sort" in case.kinds:
        # past 2^31 keys: values whose every slice is known in closed form
        values = np.empty(case.n, np.uint32)
        for start in range(0, case.n, checks.SORT_SLICE):
            stop = min(case.n, start + checks.SORT_SLICE)
            values[start:stop] = checks.closed_form_values(start, stop)
        return values
    if case.scan_counts or case.n >= HUGE or (case.n >= LARGE and not case.full_width):
        return None
    width = {1: np.float32, 2: np.uint8, 4: np.int64, 8: np.uint16}[np.dtype(case.dtype).itemsize]
    dtype = np.dtype(width)
    rng = np.random.default_rng(case.seed + 2)
    return np.frombuffer(rng.bytes(case.n * dtype.itemsize), dtype=dtype)


def sorted_by_a_column(case: Case) -> bool:
    """Whether any column may sort the case's keys (a case naming only
    histogram kinds is never sorted: its bytes are the keys')."""
    return case.kinds is None or any(kind in SORTING_KINDS for kind in case.kinds)


def device_bytes_needed(case: Case) -> int:
    """GPU memory the case's widest column holds at once: the keys, and a
    stable sort's outputs (keys and int64 indices), twice when it takes more
    than one digit pass (the spare buffers the passes ping-pong through),
    and its passes' look-back words (one per digit per tile). A scan's
    counts: the counts and their offsets, and a tile sum and offset per tile."""
    dtype = np.dtype(case.dtype)
    if case.scan_counts:
        return 2 * (case.n + 2 * GUARD) * 8 + 2 * -(-case.n // (SCAN_THREADS * SCAN_ITEMS)) * 8
    if not sorted_by_a_column(case):  # the keys, and K counts
        return (case.n + case.offset + GUARD) * dtype.itemsize + (case.num_bins + 2 * GUARD) * 8
    # (full-width keys have no K to count digits of: they are counted at two)
    buffers = 2 if case.full_width or len(
        digit_shifts(min(case.num_bins, int(np.iinfo(dtype).max) + 1))) > 1 else 1
    look_back = -(-case.n // tile_keys(dtype)) * LOOK_BACK_BYTES_PER_TILE
    return ((case.n + case.offset + GUARD) * dtype.itemsize
            + buffers * (case.n + 2 * GUARD) * (dtype.itemsize + 8) + look_back
            + _radix_value_bytes(case, copies=2))


def _radix_value_bytes(case: Case, copies: int) -> int:
    """The closed-form radix values' bytes (4 a key), `copies` times, where a
    case past 2^31 judges the radix sort (radix_values)."""
    judged = case.sorted_in_closed_form and case.kinds is not None and "radix-sort" in case.kinds
    return copies * (case.n + 2 * GUARD) * 4 if judged else 0


def host_bytes_needed(case: Case) -> int:
    """Host memory the case's widest column holds at once: the keys, the
    oracle's sorted keys and int64 indices, and a sort's outputs read back
    (or, while they upload, the keys' padded copy: less). A scan's counts:
    the counts, both read back (the offsets, and the input for its guards),
    and the oracle's offsets."""
    if case.scan_counts:
        return 4 * (case.n + 2 * GUARD) * 8
    itemsize = np.dtype(case.dtype).itemsize
    if case.sorted_in_closed_form:
        # the keys, their padded copy (unless fenced), and a slice of the
        # answer, read and expected, at a time
        # and an unstable sort's permutation, a byte a key, and the radix values
        copies = 1 + (not case.fenced)
        return (copies * (case.n + case.offset + 2 * GUARD) * itemsize
                + 2 * checks.SORT_SLICE * 2 * (itemsize + 8) + case.n
                + _radix_value_bytes(case, copies=2))
    if not sorted_by_a_column(case):
        # the keys, their padded copy (a fenced case uploads them as they are),
        # and the valid ones of a bad-key case
        copies = 1 + (not case.fenced) + bool(case.bad)
        return copies * (case.n + case.offset + 2 * GUARD) * itemsize
    return (case.n + 2 * GUARD) * (itemsize + 2 * (itemsize + 8))


def too_large_here(rt: Runtime, case: Case) -> str | None:
    """Why a 2^31-key case cannot run here (None: it can, or it is not that
    large): a smaller GPU, or a host with less memory, gets a skip naming the
    bytes, not a FAIL (nor, on the host, the whole run killed for memory)."""
    if case.n < HUGE:
        return None
    needed, free = device_bytes_needed(case), rt.free_bytes()
    if free is not None and needed > free:
        return (f"needs about {needed / 2**30:.1f} GiB of GPU memory; "
                f"{free / 2**30:.1f} GiB free here")
    needed, available = host_bytes_needed(case), available_memory()
    if available is not None and needed > available:
        return (f"needs about {needed / 2**30:.1f} GiB of host memory; "
                f"{available / 2**30:.1f} GiB available here")
    return None


def wait_limit_s() -> float | None:
    """The matrix's bound on a host wait on the device (WAIT_LIMIT_S, or
    HISTKIT_WAIT_LIMIT_S; None: unbounded)."""
    text = os.environ.get("HISTKIT_WAIT_LIMIT_S", "").strip()
    if not text:
        return WAIT_LIMIT_S
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"HISTKIT_WAIT_LIMIT_S must be a number of seconds (0: unbounded), "
                         f"not {text!r}") from None
    return seconds if seconds > 0 else None


def gpu_unusable(rt: Runtime, after_failure: bool) -> str | None:
    """Why no more work can run on rt's context, if none can: a kernel that
    never ended still holds the GPU, or (asked only after a FAIL, so that a
    passing run never depends on the answer) a fault left its sticky error."""
    if rt.hung is not None:
        return f"the GPU is still running a kernel that never ended ({rt.hung})"
    if after_failure:
        error = rt.sticky_error()
        if error is not None:
            return f"a fault left the CUDA context unusable ({error})"
    return None


def _count(n: int, noun: str) -> str:
    """n and the noun, plural unless n is 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _not_run(why: str) -> Cell:
    return Cell("skip", f"not run: {why}")


def run_case(rt: Runtime, case: Case, selected=None) -> list[Result]:
    selected = selected or columns()
    if rt.hung is not None:
        why = gpu_unusable(rt, after_failure=False)
        return [Result(case, name, _not_run(why)) for name, _, _ in selected]
    if not any(judges(case, kernel.kind) for _, kernel, _ in selected):
        # (nothing to build: a scan's 2^31 counts are 16 GiB, and no histogram takes them)
        cell = Cell("skip", not_judged_because(case))
        return [Result(case, name, cell) for name, _, _ in selected]
    with one_huge_case_at_a_time(rt, case):
        return _judge_case(rt, case, selected)


@contextlib.contextmanager
def one_huge_case_at_a_time(rt: Runtime, case: Case):
    """Past 2^31 keys a case holds up to tens of GiB: histkit processes on one
    machine (a mutation run's parallel judges, two runs of verify) take such
    cases in turn, under an exclusive lock on a file in the temp directory,
    so that none finds the memory another holds and skips the case. The
    device syncs before the lock goes: the driver's memory pool hands freed
    memory back at a synchronisation."""
    if case.n < HUGE or fcntl is None:
        yield
        return
    with open(Path(tempfile.gettempdir()) / "histkit-huge-case.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            # (the case's arrays are gone: _judge_case returned). A context a
            # fault spoiled fails this sync too: its cells already say so.
            with contextlib.suppress(Exception):
                if rt.hung is None:
                    rt.device.sync()
            fcntl.flock(lock, fcntl.LOCK_UN)


def _judge_case(rt: Runtime, case: Case, selected) -> list[Result]:
    reason = too_large_here(rt, case)
    if reason is not None:
        return [Result(case, name, Cell("skip", reason)) for name, _, _ in selected]
    try:
        run = CaseRun(rt, case)
    except FenceUnavailable as error:  # no virtual memory API: not the kernels' fault
        cell = Cell("skip", f"fenced inputs cannot be made here: {error}")
        return [Result(case, name, cell) for name, _, _ in selected]
    except Exception as error:  # the case itself could not be set up
        cell = Cell("FAIL", f"setting up case {case.name} failed: {type(error).__name__}: {error}")
        return [Result(case, name, cell) for name, _, _ in selected]
    results = []
    unusable = None  # why an earlier column left the GPU unable to run this one
    for name, kernel, variant in selected:
        if unusable is not None:
            results.append(Result(case, name, _not_run(unusable)))
            continue
        start = time.perf_counter()
        skew = (rt.skewed_schedule(case.skew_seed) if case.skewed
                else contextlib.nullcontext())
        try:
            # scratch never arrives clean, nor zeroed (nor, in a fenced case, unfenced)
            with rt.poisoned_scratch(fenced=case.fenced), skew:
                cell, geometry = run.judge(kernel, variant)
        except Exception as error:  # a crash is a failure of that cell, reported in full
            cell, geometry = Cell("FAIL", f"{type(error).__name__}: {error}"), ""
        try:  # and nothing was written around it (not readable behind a hang)
            overruns = rt.scratch_overruns() if rt.hung is None else []
        except Exception as error:
            overruns = [f"reading the scratch guards failed: {type(error).__name__}: {error}"]
        if overruns and cell.status != "FAIL":
            cell = Cell("FAIL", "; ".join(overruns))
        if cell.status == "FAIL" and case.fenced and "ILLEGAL_ADDRESS" in cell.detail:
            cell = Cell("FAIL", f"{cell.detail} (a fenced case: the inputs end where mapped "
                                f"memory ends, so the kernel read or wrote past one of them)")
        if cell.status == "FAIL":
            cell = Cell("FAIL", f"{cell.detail} [case {case.name}, seed {case.seed}, "
                                f"kernel {name}, geometry {geometry or 'n/a'}]", cell.figures)
        results.append(Result(case, name, cell, geometry, time.perf_counter() - start))
        unusable = gpu_unusable(rt, after_failure=cell.status == "FAIL")
    return results


def run_conformance(console: Console | None = None, quick: bool = False,
                    json_path: str | Path | None = "conformance-results.json",
                    cases: list[Case] | None = None, rows=None,
                    stop_at_first_fail: bool = False,
                    progress_path: str | Path | None = None,
                    bounded_waits: bool = True) -> Report:
    """The matrix: every case x every column (of `rows`, default all).

    With progress_path, each result is appended there (one JSON line) as soon
    as its case is done: a run that is cut off or killed keeps what it judged.
    With bounded_waits, every host wait on the device is bounded
    (wait_limit_s()): a kernel that never ends is a FAIL of its cell, and the
    run stops there, since its launch holds the GPU until the process exits
    (Report.stopped says so). So it does after a fault that leaves the
    context unusable: every later cell would FAIL for it, in another's name.
    """
    console = console or Console()
    rt = runtime()
    cases = cases if cases is not None else all_cases(quick)
    selected = columns(rows)
    report = Report()
    console.print(f"GPU conformance on {rt.device.name} ({rt.arch}, {rt.sm_count} SMs): "
                  f"{_count(len(cases), 'case')} x {_count(len(selected), 'kernel column')}")
    start = time.perf_counter()
    progress_log = open(progress_path, "w") if progress_path else None  # noqa: SIM115
    limit = wait_limit_s() if bounded_waits else None
    with (Progress(console=console, transient=True, disable=not console.is_terminal)
          as progress, rt.bounded_waits(limit)):
        task = progress.add_task("conformance", total=len(cases))
        for number, case in enumerate(cases):
            progress.update(task, description=case.name)
            results = run_case(rt, case, selected)
            report.results += results
            if progress_log:
                progress_log.writelines(json.dumps(result_json(r), default=str) + "\n"
                                        for r in results)
                progress_log.flush()
            progress.advance(task)
            why = gpu_unusable(rt, after_failure=any(r.cell.status == "FAIL" for r in results))
            if why is not None:
                report.stopped = (f"stopped after case {case.name}: {why}; "
                                  f"{_count(len(cases) - number - 1, 'case')} not run")
                break
            if stop_at_first_fail and not report.passed:
                break
    if progress_log:
        progress_log.close()
    print_report(console, report, time.perf_counter() - start)
    if json_path:
        Path(json_path).write_text(json.dumps(report.to_json(), indent=1, default=str))
        console.print(f"wrote {json_path}")
    return report
