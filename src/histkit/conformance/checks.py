"""The comparison rule for each kernel (DESIGN.md's conformance table).

A check returns a Cell: "pass", "FAIL" (the rule is broken), "finding" (the
rule holds and there is something to report, e.g. lost updates or broken
stability in the kernels that are meant to show them) or "skip".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from histkit import oracles


@dataclass(frozen=True)
class Cell:
    status: str  # pass | FAIL | finding | skip
    detail: str = ""
    figures: dict | None = None


def wrong_shape(got: np.ndarray, want: np.ndarray) -> Cell | None:
    """A FAIL naming both shapes where they differ (its own symptom, not "bins
    differ": no bin can be compared), else None."""
    if got.shape == want.shape:
        return None
    return Cell("FAIL", f"wrong shape: expected {want.shape}, got {got.shape}")


def _differing(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The positions where got and want differ as numbers, exactly: NumPy's
    != on integers beside floats compares both as float64, which rounds
    integers past 2^53 (float 2^53 would equal int64 2^53 + 1)."""
    kinds = {got.dtype.kind, want.dtype.kind}
    if "f" in kinds and kinds & {"i", "u"}:
        pairs = zip(got.tolist(), want.tolist(), strict=True)
        return np.flatnonzero([a != b for a, b in pairs])
    return np.flatnonzero(got != want)


def _first_difference(got: np.ndarray, want: np.ndarray) -> str:
    where = _differing(got, want)
    if not where.size:
        return ""
    i = int(where[0])
    return f"{where.size} differing; first at {i}: expected {want[i]}, got {got[i]}"


def _plural(what: str) -> str:
    return what[:-5] + "indices" if what.endswith("index") else what + "s"


SHOWN_DIFFERENCES = 5  # (position, got, expected) triples a FAIL of equal() carries


def equal(got: np.ndarray, want: np.ndarray, what: str = "bin") -> Cell:
    got, want = np.asarray(got), np.asarray(want)
    shape = wrong_shape(got, want)
    if shape is not None:
        return shape
    difference = _first_difference(got, want)
    if not difference:
        return Cell("pass")
    where = _differing(got, want)[:SHOWN_DIFFERENCES]
    figures = {"what": what, "differences": [[int(i), got[i].item(), want[i].item()]
                                             for i in where]}
    return Cell("FAIL", f"{_plural(what)} differ: {difference}", figures)


def at_most_exact(got: np.ndarray, exact: np.ndarray) -> Cell:
    """The racy many-block kernel: no bin above the exact count, and no bin with
    keys left at zero (every racy store writes a loaded value + 1, so a bin that
    any key reached holds at least 1: an empty bin means keys were skipped, not
    lost to the race), and no bin below zero. The loss is reported."""
    shape = wrong_shape(got, exact)
    if shape is not None:
        return shape
    # Counts read back as signed: a decrement from zero shows as a negative
    # count, which neither rule below would see.
    negative = np.flatnonzero(got < 0)
    if negative.size:
        b = int(negative[0])
        return Cell("FAIL", f"bin {b} counted {got[b]} < 0 (a racy store writes a loaded "
                            f"count + 1, never less)")
    over = np.flatnonzero(got > exact)
    if over.size:
        b = int(over[0])
        return Cell("FAIL", f"bin {b} counted {got[b]} > exact {exact[b]}")
    skipped = np.flatnonzero((exact > 0) & (got == 0))
    if skipped.size:
        b = int(skipped[0])
        keys = "1 key" if exact[b] == 1 else f"{exact[b]} keys"
        return Cell("FAIL", f"bin {b} has {keys} but counted 0: keys were skipped "
                            f"(a race loses updates, it cannot empty a bin)")
    lost = int(exact.sum() - got.sum())
    total = int(exact.sum())
    if lost:
        return Cell("finding", f"lost {lost} of {total} updates ({lost / total:.1%})",
                    {"lost": lost, "total": total})
    return Cell("pass", "no update lost on this input", {"lost": 0, "total": total})


def privatized(got: np.ndarray, exact: np.ndarray, atomics: int, model_atomics: int) -> Cell:
    cell = equal(got, exact)
    if cell.status != "pass":
        return cell
    if atomics != model_atomics:
        return Cell("FAIL", f"global atomics differ: expected {model_atomics} (the model's), "
                            f"got {atomics}")
    return Cell("pass", f"{_atomics(atomics)} = model", {"global_atomics": atomics})


def _atomics(n: int) -> str:
    return "1 global atomic" if n == 1 else f"{n} global atomics"


def _pairs(n: int) -> str:
    return f"{n} adjacent equal-key pair{'' if n == 1 else 's'}"


def stability_violations(sorted_keys: np.ndarray, index: np.ndarray) -> int:
    same_key = sorted_keys[1:] == sorted_keys[:-1]
    return int(np.count_nonzero(same_key & (index[1:] < index[:-1])))


def atomic_cursor_sort(got_keys, got_index, keys, want_keys) -> Cell:
    """Sorted and a permutation is the rule; instability is counted, not failed."""
    n = len(keys)
    cell = equal(got_keys, want_keys, "sorted key")
    if cell.status != "pass":
        return cell
    seen = np.zeros(n, dtype=bool)
    if n:
        outside = np.flatnonzero((got_index < 0) | (got_index >= n))
        if outside.size:
            at = int(outside[0])
            return Cell("FAIL", f"original_index out of range: position {at} holds "
                                f"{got_index[at].item()}, outside [0, {n})")
        seen[got_index] = True
    if not seen.all():
        missing = np.flatnonzero(~seen)
        repeated = int(np.flatnonzero(np.bincount(got_index, minlength=n) > 1)[0])
        at = np.flatnonzero(got_index == repeated)[:2].tolist()
        return Cell("FAIL", f"original_index is not a permutation: {len(missing)} "
                            f"{'index' if len(missing) == 1 else 'indices'} missing; index "
                            f"{repeated} appears more than once (at positions {at[0]} and "
                            f"{at[1]}), {missing[0].item()} never")
    wrong = np.flatnonzero(keys[got_index] != got_keys)
    if wrong.size:
        at = int(wrong[0])
        return Cell("FAIL", f"a sorted key differs from the input key at its original index: "
                            f"position {at} holds key {got_keys[at].item()} and index "
                            f"{got_index[at].item()}, but keys[{got_index[at].item()}] = "
                            f"{keys[got_index[at]].item()}")
    violations = stability_violations(got_keys, got_index)
    if violations:
        same_key = got_keys[1:] == got_keys[:-1]
        at = int(np.flatnonzero(same_key & (got_index[1:] < got_index[:-1]))[0])
        return Cell("finding", f"NOT stable: {_pairs(violations)} out of "
                               f"input order; the first at positions {at} and {at + 1}: key "
                               f"{got_keys[at].item()} from input indices "
                               f"{got_index[at].item()} then {got_index[at + 1].item()}",
                    {"stability_violations": violations})
    return Cell("pass", "stable on this input", {"stability_violations": 0})


def stable_index_rule(sorted_keys, index, keys: np.ndarray, want_keys: np.ndarray,
                      want_index: np.ndarray) -> Cell:
    """A stable sort's original indices (its keys already right): equal to
    want_index, and where they are not, why: out of range, not a permutation,
    or (the usual slip) equal keys out of input order."""
    cell = equal(index, want_index, "original index")
    if cell.status == "pass":
        return cell
    why = atomic_cursor_sort(np.asarray(sorted_keys), np.asarray(index), keys, want_keys)
    return Cell("FAIL", why.detail, cell.figures) if why.status != "pass" else cell


# --- one rule per kind, on what an implementation produced --------------------------

NO_REPORT = None  # an implementation that reported no bad key


@dataclass(frozen=True)
class ColumnResult:
    """One column of a kernel table judged on one case by a judge of its own
    (the binning and weighted kernels): pass or FAIL, why, and its launches."""

    case: str
    column: str
    status: str  # pass | FAIL
    detail: str = ""
    geometry: str = ""
    seconds: float = 0.0


def harness_cell(rt, fenced: bool = False, skewed: bool = False) -> contextlib.ExitStack:
    """Within: one cell of a judge of its own as the conformance harness runs
    it: new scratch poisoned and guarded (fenced against unmapped memory where
    ``fenced``), and kernels built with schedule skew where ``skewed``."""
    stack = contextlib.ExitStack()
    stack.enter_context(rt.poisoned_scratch(fenced=fenced))
    if skewed:
        stack.enter_context(rt.skewed_schedule())
    return stack


def with_overruns(rt, status: str, detail: str) -> tuple[str, str]:
    """(status, detail) of a cell, made a FAIL where the kernel wrote outside
    a scratch array handed out since the last call (rt.scratch_overruns)."""
    overruns = rt.scratch_overruns()
    if overruns and status != "FAIL":
        return "FAIL", "; ".join(overruns)
    return status, detail


@dataclass
class Outcome:
    """What an implementation (ours or a user's) produced on one case.

    counts: histogram kinds; offsets: scan; sorted_keys + original_index: sorts
    (and sorted_values: the radix sort's values moved with their keys);
    first_bad: the first bad index it reported (None: it reported none);
    global_atomics with block and grid: privatized.
    """

    counts: np.ndarray | None = None
    offsets: np.ndarray | None = None
    sorted_keys: np.ndarray | None = None
    original_index: np.ndarray | None = None
    sorted_values: np.ndarray | None = None
    first_bad: int | None = NO_REPORT
    # histkit's kernels: whether the verdict board's flag of the first_bad
    # word was set (histkit.gpu.verdict); None: not judged (a user's kernel).
    published: bool | None = None
    global_atomics: int | None = None
    # histkit's method="auto": the key sample its choosing kernel read (runs x
    # lanes), and (the AUTO_* code it wrote, the shared_bins it was told) for
    # each shared_bins it was told. Every pick is exact, so a wrong sample or
    # choice shows in no count.
    sample: np.ndarray | None = None
    auto_choice: tuple[tuple[int, int], ...] = ()
    block: int | None = None
    grid: int | None = None
    # A sort's outputs left on the device, read a slice at a time:
    # (start, stop) -> (sorted keys, original indices) of those positions
    # (sorts of round-robin keys past 2^31: stable_sorted_in_slices).
    sorted_slices: Callable[[int, int], tuple[np.ndarray, np.ndarray]] | None = None
    # ... and a radix sort's, with its values: (keys, indices, values) of those positions
    radix_slices: Callable[[int, int], tuple[np.ndarray, ...]] | None = None


BAD_SCAN_CHUNK = 1 << 24


def bad_positions(keys: np.ndarray, num_bins: int) -> np.ndarray:
    """Where keys lie outside [0, num_bins), scanned a chunk at a time (past
    2^31 keys, whole-array comparisons would make three 2 GiB masks)."""
    found = [np.flatnonzero((chunk < 0) | (chunk >= num_bins)) + start
             for start in range(0, len(keys), BAD_SCAN_CHUNK)
             for chunk in (keys[start:start + BAD_SCAN_CHUNK],)]
    return np.concatenate(found) if found else np.empty(0, np.int64)


class Expected:
    """The oracles' answers for one input, each computed once, on first use."""

    def __init__(self, keys: np.ndarray, num_bins: int, full_width: bool = False,
                 values: np.ndarray | None = None, scan_counts: bool = False,
                 round_robin: bool = False):
        self.keys = keys
        self.num_bins = num_bins
        # keys[i] == i % num_bins (the caller says so): a stable sort's answer
        # is then known in closed form (round_robin_stable_sort)
        self.round_robin = round_robin
        self.values = values  # what a radix sort moves with the keys (None: nothing)
        self.bad = None
        self.exact = None
        if scan_counts:  # the "keys" are a scan's counts (below 2^63): scanned as they are
            self.exact = keys.view(np.int64)
        elif not full_width:  # full-width keys have no K: no histogram of them
            try:
                self.exact = oracles.histogram(keys, num_bins)
            except oracles.BadKeyError as error:
                self.bad = error
        self._sorted = None
        self._order = None
        self._waves: dict[int, np.ndarray] = {}
        self._valid: Expected | None = None
        self._bad_positions: np.ndarray | None = None

    @property
    def sorted(self):
        if self._sorted is None:
            self._sorted = oracles.counting_sort(self.keys, self.num_bins)
        return self._sorted

    @property
    def order(self) -> np.ndarray:
        """The stable sorting permutation of the keys as full-width integers."""
        if self._order is None:
            self._order = oracles.argsort(self.keys)
        return self._order

    def bad_positions(self) -> np.ndarray:
        """Where the bad keys are, ascending (found once)."""
        if self._bad_positions is None:
            self._bad_positions = bad_positions(self.keys, self.num_bins)
        return self._bad_positions

    def valid_part(self) -> Expected:
        """The oracles' answers for the valid keys alone (made once: past 2^31
        keys every column of a bad-key case asks for them). The bad keys are
        found and cut out, never the valid ones' positions listed: a case has
        few bad keys, and 2^31 positions are 16 GiB."""
        if self._valid is None:
            edges = [-1, *self.bad_positions().tolist(), len(self.keys)]
            self._valid = Expected(np.concatenate(
                [self.keys[a + 1:b] for a, b in zip(edges, edges[1:], strict=False)]),
                self.num_bins)
        return self._valid

    def wave(self, warp_size: int) -> np.ndarray:
        if warp_size not in self._waves:
            self._waves[warp_size] = oracles.naive_wave_histogram(
                self.keys, self.num_bins, warp_size)
        return self._waves[warp_size]

    def offsets(self) -> np.ndarray:
        return oracles.exclusive_scan(self.exact)

    def privatized_atomics(self, block: int, grid: int) -> int:
        return oracles.privatized_histogram(self.keys, self.num_bins, block, grid)[1]


def published_rule(reported: int | None, published: bool | None) -> Cell | None:
    """histkit's kernels flag their first_bad word on the verdict board
    exactly when they report a bad key in it (a checked call reads the flag,
    not the word): a FAIL otherwise, None when they agree or it is not judged."""
    if published is None or published == (reported is not NO_REPORT):
        return None
    if published:
        return Cell("FAIL", "flagged a bad key on the verdict board but reported none")
    return Cell("FAIL", f"reported a bad key at index {reported} without flagging it on the "
                        f"verdict board: a checked call would miss it")


def bad_key_rule(bad, reported: int | None) -> Cell | None:
    """FAIL, or a pass cell for a bad-key input, or None when the rule has more
    to check; bad is the input's first bad key (a BadKeyError: its index and
    value) or None."""
    if bad is None:
        if reported is not NO_REPORT:
            return Cell("FAIL", f"reported a bad key at index {reported} on valid input")
        return None
    if reported is NO_REPORT:
        return Cell("FAIL", f"no bad key reported; the first is at index {bad.index} "
                            f"(value {bad.value})")
    if reported != bad.index:
        return Cell("FAIL", f"reported the first bad key at index {reported}; it is at "
                            f"{bad.index} (value {bad.value})")
    return Cell("pass", f"first bad key at {reported}, as the oracle says")


# Kinds whose results on an input with bad keys are judged too, for kernels
# that promise to skip bad keys (histkit's own: gpu calls with check=False
# hand those results back): the results equal the rule's on the valid keys
# alone, and a sort's first n_valid slots hold them.
SKIPPING_KINDS = ("histogram", "privatized", "sort", "stable-sort")


NOT_SAMPLED = (1 << 64) - 1  # a sample slot past the last key


def auto_sample(keys: np.ndarray, runs: int, width: int = 32) -> np.ndarray:
    """The bins auto's sample must hold: `runs` runs of `width` consecutive
    keys, run r starting at max(0, n - width) * r // (runs - 1), each key as
    its 64-bit bin (signed keys sign-extended, as a bad negative key is) and
    NOT_SAMPLED past the end."""
    n = len(keys)
    starts = [max(0, n - width) * r // (runs - 1) if runs > 1 else 0 for r in range(runs)]
    places = np.asarray(starts, dtype=np.int64)[:, None] + np.arange(width, dtype=np.int64)
    bins = np.full(places.shape, NOT_SAMPLED, dtype=np.uint64)
    inside = places < n
    taken = np.asarray(keys)[places[inside]]
    # the 64-bit bin of a key: a signed key sign-extended first (as C's cast)
    bins[inside] = (taken.astype(np.int64) if taken.dtype.kind == "i" else taken).astype(
        np.uint64)
    return bins


def sample_rule(got: np.ndarray, want: np.ndarray) -> Cell | None:
    """None when auto's sample is the keys at its places, else a FAIL naming
    the first wrong slot."""
    got = np.asarray(got, dtype=np.uint64).reshape(want.shape)
    wrong = np.argwhere(got != want)
    if not len(wrong):
        return None
    run, lane = (int(x) for x in wrong[0])
    return Cell("FAIL", f"auto's key sample is not the keys it samples: run {run}, lane "
                        f"{lane} holds {int(got[run, lane])}, not {int(want[run, lane])}")


def choice_rule(code: int, shared_bins: int, want_sample: np.ndarray,
                num_bins: int) -> Cell | None:
    """None when auto's choosing kernel wrote what the host's rule
    (histkit.gpu.policy.auto_choice) picks on the keys' own sample, else a FAIL
    naming both."""
    from histkit.gpu import policy  # pure host code: no GPU needed

    want = policy.auto_choice(want_sample, shared_bins, num_bins)
    if code == policy.AUTO_CHOICE_CODES[want]:
        return None
    names = {value: name for name, value in policy.AUTO_CHOICE_CODES.items()}
    return Cell("FAIL", f"auto chose {names.get(code, f'the unknown code {code}')} on the "
                        f"device where its rule on the sample picks {want} "
                        f"(shared_bins={shared_bins}, num_bins={num_bins})")


def judge(kind: str, expected: Expected, got: Outcome, warp_size: int = 32,
          skips_bad_keys: bool = False) -> Cell:
    """Apply the rule of `kind` (registry.KINDS) to what an implementation produced."""
    if got.sample is not None:
        want_sample = auto_sample(expected.keys, *np.shape(got.sample))
        wrong = sample_rule(got.sample, want_sample)
        for code, shared_bins in got.auto_choice:  # the first wrong choice is named
            wrong = wrong or choice_rule(code, shared_bins, want_sample, expected.num_bins)
        if wrong is not None:
            return wrong
    if kind == "scan":
        return equal(got.offsets, expected.offsets(), "offset")
    if kind == "radix-sort":  # every key is valid: there is no K
        if got.radix_slices is not None:
            return radix_sorted_in_slices(expected, got.radix_slices)
        return radix_sorted(expected, got)
    cell = published_rule(got.first_bad, got.published) or bad_key_rule(expected.bad, got.first_bad)
    if cell is not None:
        if cell.status == "pass" and skips_bad_keys and kind in SKIPPING_KINDS:
            return _judge_valid_part(kind, expected, got, warp_size, cell)
        return cell
    if kind == "histogram":
        return equal(got.counts, expected.exact)
    if kind == "racy-histogram":
        return at_most_exact(np.asarray(got.counts), expected.exact)
    if kind == "wave":
        cell = equal(got.counts, expected.wave(warp_size))
        if cell.status != "pass":
            return cell
        lost = int(expected.exact.sum() - np.asarray(got.counts).sum())
        return Cell("pass", f"= wave model; lost {lost} of {len(expected.keys)}", {"lost": lost})
    if kind == "privatized":
        model = expected.privatized_atomics(got.block, got.grid)
        return privatized(np.asarray(got.counts), expected.exact, int(got.global_atomics), model)
    if kind == "stable-sort":
        if got.sorted_slices is not None:
            return stable_sorted_in_slices(expected, got.sorted_slices)
        want_keys, want_index = expected.sorted
        cell = equal(got.sorted_keys, want_keys, "sorted key")
        if cell.status != "pass":
            return cell
        return stable_index_rule(got.sorted_keys, got.original_index, expected.keys,
                                 want_keys, want_index)
    if kind == "sort":
        if got.sorted_slices is not None:
            return unstable_sorted_in_slices(expected, got.sorted_slices)
        return atomic_cursor_sort(np.asarray(got.sorted_keys), np.asarray(got.original_index),
                                  expected.keys, expected.sorted[0])
    raise ValueError(f"unknown kind {kind!r}")


def round_robin_stable_sort(start: int, stop: int, n: int, num_bins: int,
                            key_dtype=np.int64) -> tuple[np.ndarray, np.ndarray]:
    """Positions start .. stop - 1 of the stable sort of n round-robin keys
    (key i is i % num_bins), in closed form: key v occurs ceil((n - v) / K)
    times, at original indices v, v + K, v + 2K, ... Past 2^31 keys the
    oracle's whole answer would be 18 GiB of host memory; this is a slice."""
    stop = max(start, min(stop, n))
    keys = np.empty(stop - start, key_dtype)
    index = np.empty(stop - start, np.int64)
    for v, first, last, rank in _segments(start, stop, n, num_bins):
        keys[first - start:last - start] = v
        ranks = index[first - start:last - start]  # v + K * rank, made in place
        ranks[:] = np.arange(rank, rank + last - first, dtype=np.int64)
        ranks *= num_bins
        ranks += v
    return keys, index


def _segments(start: int, stop: int, n: int, num_bins: int):
    """(v, first, last, rank) for each key v whose run in the stable sort of
    n round-robin keys meets positions start .. stop - 1: positions first ..
    last - 1 hold v, the first of them its rank-th occurrence (original index
    v + K * rank)."""
    values = np.arange(num_bins, dtype=np.int64)
    ends = np.cumsum(np.maximum(0, (n - values + num_bins - 1) // num_bins))
    v = int(np.searchsorted(ends, start, side="right"))
    while v < num_bins and start < stop:
        begin = int(ends[v - 1]) if v else 0
        last = min(stop, int(ends[v]))
        if last > start:
            yield v, start, last, start - begin
        start, v = max(start, last), v + 1


def run_starts(n: int, num_bins: int) -> np.ndarray:
    """Where each key's run starts in the stable sort of n round-robin keys."""
    values = np.arange(num_bins, dtype=np.int64)
    counts = np.maximum(0, (n - values + num_bins - 1) // num_bins)
    return np.cumsum(counts) - counts


SORT_SLICE = 1 << 25  # positions a sort judged in slices reads at a time


def stable_sorted_in_slices(expected: Expected,
                            read: Callable[[int, int], tuple[np.ndarray, np.ndarray]]) -> Cell:
    """A stable sort of round-robin keys, read a slice at a time from where
    it left its outputs and judged against the closed form
    (round_robin_stable_sort): neither answer is ever whole on the host
    (past 2^31 keys, 18 GiB each). Each run of one key is compared in place
    (its keys all v, its indices v + K * rank in steps of K), with no slice
    of the answer made: the answer is built only to name a difference."""
    if not expected.round_robin:
        raise ValueError("a sort is judged in slices only on round-robin keys "
                         "(Expected(round_robin=True)), whose answer has a closed form")
    n, num_bins = len(expected.keys), expected.num_bins
    wrong: dict[str, list] = {"sorted key": [0, ""], "original index": [0, ""]}
    steps = np.arange(min(n, SORT_SLICE), dtype=np.int64) * num_bins  # K * rank, from 0
    for start in range(0, n, SORT_SLICE):
        stop = min(n, start + SORT_SLICE)
        got = read(start, stop)
        if _runs_hold_the_closed_form(got, start, stop, n, num_bins, steps):
            continue
        want = round_robin_stable_sort(start, stop, n, num_bins, got[0].dtype)
        for tally, got_part, want_part in zip(wrong.values(), got, want, strict=True):
            differs = got_part != want_part
            if not differs.any():
                continue
            where = np.flatnonzero(differs)
            if not tally[0]:
                i = int(where[0])
                tally[1] = f"first at {start + i}: expected {want_part[i]}, got {got_part[i]}"
            tally[0] += where.size
    for what, (count, first) in wrong.items():
        if count:
            return Cell("FAIL", f"{_plural(what)} differ: {count} differing; {first}")
    return Cell("pass")


def _runs_hold_the_closed_form(got, start: int, stop: int, n: int, num_bins: int,
                               steps: np.ndarray) -> bool:
    """Whether a slice read back (keys, indices) is the closed form's, checked
    run by run: the keys all v, and indices - (v + K * rank) equal to steps."""
    got_keys, got_index = got
    if len(got_keys) != stop - start or len(got_index) != stop - start:
        return False
    for v, first, last, rank in _segments(start, stop, n, num_bins):
        keys = got_keys[first - start:last - start]
        index = got_index[first - start:last - start]
        if keys.min() != v or keys.max() != v:
            return False
        if not np.array_equal(index - (v + num_bins * rank), steps[:last - first]):
            return False
    return True


def unstable_sorted_in_slices(expected: Expected,
                              read: Callable[[int, int], tuple[np.ndarray, np.ndarray]]) -> Cell:
    """The atomic-cursor rule (sorted, the index a permutation, each sorted
    key the input's key at its index) on round-robin keys read a slice at a
    time: the sorted keys have a closed form (round_robin_stable_sort), the
    key at index i is i % K, and the permutation is kept as one byte a key.
    Broken stability is counted, as atomic_cursor_sort does.

    The permutation is marked where each index would stand in the stable
    sort (the start of its key's run + index // K), not at the index
    itself: near the slice being read, so the marks stay in cache. Once
    every index holds its position's key, the map is one to one."""
    if not expected.round_robin:
        raise ValueError("a sort is judged in slices only on round-robin keys")
    n, num_bins = len(expected.keys), expected.num_bins
    starts = run_starts(n, num_bins)
    seen = np.zeros(n, dtype=bool)
    violations = 0
    last_key = last_index = None
    for start in range(0, n, SORT_SLICE):
        stop = min(n, start + SORT_SLICE)
        got_keys, got_index = read(start, stop)
        want_keys = round_robin_stable_sort(start, stop, n, num_bins, got_keys.dtype)[0]
        cell = equal(got_keys, want_keys, "sorted key")
        if cell.status != "pass":
            return Cell("FAIL", f"{cell.detail.split(';')[0]}; first at "
                                f"{start + cell.figures['differences'][0][0]}", cell.figures)
        if len(got_index) and (got_index.min() < 0 or got_index.max() >= n):
            outside = np.flatnonzero((got_index < 0) | (got_index >= n))
            return Cell("FAIL", f"original_index out of range: position "
                                f"{start + int(outside[0])} holds {int(got_index[outside[0]])}, "
                                f"outside [0, {n})")
        rank = got_index // num_bins
        if not np.array_equal(got_index - rank * num_bins, got_keys):
            j = int(np.flatnonzero(got_index % num_bins != got_keys)[0])
            return Cell("FAIL", f"a sorted key differs from the input key at its original "
                                f"index: position {start + j} holds key {got_keys[j]}, index "
                                f"{got_index[j]} (whose key is {got_index[j] % num_bins})")
        rank += starts[got_keys]
        seen[rank] = True
        same = got_keys[1:] == got_keys[:-1]
        violations += int(np.count_nonzero(same & (got_index[1:] < got_index[:-1])))
        if last_key is not None and len(got_keys) and got_keys[0] == last_key:
            violations += int(got_index[0] < last_index)
        if len(got_keys):
            last_key, last_index = got_keys[-1], got_index[-1]
    missing = n - int(np.count_nonzero(seen))
    if missing:
        return Cell("FAIL", f"original_index is not a permutation: {missing} "
                            f"{'index' if missing == 1 else 'indices'} missing")
    if violations:
        return Cell("finding", f"NOT stable: {_pairs(violations)} out of "
                               f"input order", {"stability_violations": violations})
    return Cell("pass", "stable on this input", {"stability_violations": 0})


def closed_form_values(start: int, stop: int) -> np.ndarray:
    """The radix sort's values at input positions start .. stop - 1 of a case
    judged in closed form: the low 32 bits of i x 0x9E3779B1 (odd: positions
    2^31 apart hold different values, so a gather whose index wrapped at 32
    bits moves a wrong one)."""
    positions = np.arange(start, stop, dtype=np.uint64)
    return (positions * np.uint64(0x9E3779B1)).astype(np.uint32)


def radix_sorted_in_slices(expected: Expected, read) -> Cell:
    """The radix sort of round-robin keys (with closed_form_values moved with
    them) read a slice at a time: keys and indices equal the stable sort's
    closed form, each value the one at its original index."""
    n, num_bins = len(expected.keys), expected.num_bins
    for start in range(0, n, SORT_SLICE):
        stop = min(n, start + SORT_SLICE)
        got_keys, got_index, got_values = read(start, stop)
        want_keys, want_index = round_robin_stable_sort(start, stop, n, num_bins,
                                                        got_keys.dtype)
        want_values = (want_index.astype(np.uint64) * np.uint64(0x9E3779B1)).astype(np.uint32)
        for what, got, want in (("sorted key", got_keys, want_keys),
                                ("original index", got_index, want_index),
                                ("value", got_values, want_values)):
            cell = equal(got, want, what)
            if cell.status != "pass":
                first = start + cell.figures["differences"][0][0]
                return Cell("FAIL", f"{cell.detail.split(';')[0]}; first at {first}",
                            cell.figures)
    return Cell("pass")


def radix_sorted(expected: Expected, got: Outcome) -> Cell:
    """Keys, original indices and values all in the oracle's stable order."""
    order = expected.order
    cell = equal(got.sorted_keys, expected.keys[order], "sorted key")
    if cell.status == "pass":
        cell = stable_index_rule(got.sorted_keys, got.original_index, expected.keys,
                                 expected.keys[order], order)
    if cell.status == "pass" and expected.values is not None:
        # compared as bits: float values may be NaNs
        bits = np.dtype(f"u{expected.values.dtype.itemsize}")
        want = expected.values[order].view(bits)
        cell = equal(np.asarray(got.sorted_values).view(bits), want, "value")
    return cell


def _judge_valid_part(kind: str, expected: Expected, got: Outcome, warp_size: int,
                      reported: Cell) -> Cell:
    """A bad-key input's results, judged on its valid keys (see SKIPPING_KINDS)."""
    valid = expected.valid_part()
    part = Outcome(counts=got.counts, block=got.block, grid=got.grid,
                   global_atomics=got.global_atomics)
    if kind in ("sort", "stable-sort"):
        if got.sorted_keys is None:
            return reported  # not scattered: nothing more to judge
        bad = expected.bad_positions()
        n = len(expected.keys) - len(bad)
        index = np.asarray(got.original_index[:n])
        # Original indices count every key; the valid part's rule counts valid
        # keys: an index less the bad keys before it. Found through the bad
        # positions (a case has few), not the valid ones (past 2^31 keys, 16
        # GiB of positions and a search of 2^31 indices among them: minutes).
        before = np.searchsorted(bad, index)
        on_bad = bad[np.minimum(before, max(len(bad) - 1, 0))] == index if len(bad) else False
        stray = np.flatnonzero(on_bad | (index < 0) | (index >= len(expected.keys)))
        if stray.size:
            return Cell("FAIL", f"bad keys not skipped: slot {stray[0]} holds index "
                                f"{index[stray[0]]}, not a valid key's")
        part.sorted_keys, part.original_index = got.sorted_keys[:n], np.subtract(
            index, before, out=before)
    elif got.counts is None:
        return reported
    if kind == "privatized":
        kind = "histogram"  # the atomics model counts every key's block: counts only
    cell = judge(kind, valid, part, warp_size)
    if cell.status == "FAIL":
        return Cell("FAIL", f"bad keys not skipped: on the valid keys, {cell.detail}")
    if cell.status != "pass":  # a finding (the atomic-cursor sort's order) stays one
        return Cell(cell.status, f"{reported.detail}; on the valid keys, {cell.detail}",
                    cell.figures)
    return Cell("pass", f"{reported.detail}; the valid keys' results exact")
