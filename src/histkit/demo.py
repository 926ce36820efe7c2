"""``histkit demo``: the chapter's three sections, run on the oracles.

With no options each section uses the chapter's own sample input and prints
the numbers the chapter prints (7.1: 318 of 1000 counted; 7.2: 2048 vs 128
global atomics; 7.3: the sorted, ranged and stable checks). Every option
overrides that section's default, so a reader can explore past the book.
Reference columns come from NumPy, never from the oracle being shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table

from histkit import oracles
from histkit.distributions import make_keys

SHOW_FIRST = 16
SHOW_BUCKETS = 64  # table rows; the rest are summarised in one line


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    n: int
    num_bins: int
    distribution: str


CHAPTER_SECTIONS = {
    "7.1": Section("7.1", "the histogram race, and why atomicAdd fixes it", 1000, 10,
                   "round-robin"),
    "7.2": Section("7.2", "privatized histograms", 2048, 16, "round-robin"),
    "7.3": Section("7.3", "histogram + scan = counting sort", 256, 8, "strided-31"),
}


@dataclass(frozen=True)
class DemoOptions:
    n: int | None = None
    num_bins: int | None = None
    distribution: str | None = None
    warp_size: int = oracles.WARP_SIZE
    block_size: int = oracles.BLOCK_SIZE
    seed: int = 0

    def keys_for(self, section: Section) -> tuple[np.ndarray, int]:
        n = section.n if self.n is None else self.n
        num_bins = section.num_bins if self.num_bins is None else self.num_bins
        distribution = self.distribution or section.distribution
        return make_keys(distribution, n, num_bins, self.seed), num_bins


def _count(n: int, noun: str) -> str:
    """n and the noun, plural unless n is 1: "1 block", "8 blocks"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _bucket_rows(table: Table, num_bins: int, *columns) -> None:
    """Rows of the first SHOW_BUCKETS buckets, and a note for the rest."""
    for b in range(min(num_bins, SHOW_BUCKETS)):
        table.add_row(str(b), *(str(column[b]) for column in columns))
    if num_bins > SHOW_BUCKETS:
        table.add_row("...", *("" for _ in columns))
        table.caption = (f"{_count(num_bins - SHOW_BUCKETS, 'more bucket')} not shown; "
                         f"the checks below cover all {num_bins}")


def _verdict(ok: bool) -> str:
    return "[green]confirmed[/]" if ok else "[bold red]MISMATCH[/]"


def section_7_1(console: Console, options: DemoOptions) -> bool:
    keys, num_bins = options.keys_for(CHAPTER_SECTIONS["7.1"])
    naive = oracles.naive_wave_histogram(keys, num_bins, options.warp_size)
    atomic = oracles.histogram(keys, num_bins)
    reference = np.bincount(keys, minlength=num_bins)
    table = Table(title=f"N = {_count(len(keys), 'key')}, {_count(num_bins, 'bucket')}, "
                        f"waves of {_count(options.warp_size, 'lane')}")
    for column in ("bucket", "naive_count", "atomic_count", "reference"):
        table.add_column(column, justify="right")
    _bucket_rows(table, num_bins, naive, atomic, reference)
    console.print(table)
    n = len(keys)
    naive_total = int(naive.sum())
    console.print(f"total counted: naive = {naive_total}, atomic = {int(atomic.sum())}, "
                  f"actual N = {n}")
    console.print(f"naive (non-atomic) increment LOSES {n - naive_total} of "
                  f"{_count(n, 'increment')}")
    atomic_exact = bool(np.array_equal(atomic, reference))
    # A wave with no repeated bucket loses nothing, so "strictly undercounts"
    # is only a claim when some wave does repeat one.
    waves_repeat = naive_total < n
    console.print("self-check: atomic matches the reference exactly"
                  + (", naive strictly undercounts" if waves_repeat else "")
                  + f": {_verdict(atomic_exact)}")
    return atomic_exact


def section_7_2(console: Console, options: DemoOptions) -> bool:
    keys, num_bins = options.keys_for(CHAPTER_SECTIONS["7.2"])
    n = len(keys)
    # The chapter's launch: one thread per key, so the block count grows with N.
    num_blocks = -(-n // options.block_size)
    private, global_atomics = oracles.privatized_histogram(keys, num_bins, options.block_size)
    global_only = oracles.histogram(keys, num_bins)
    reference = np.bincount(keys, minlength=num_bins)
    table = Table(title=f"N = {_count(n, 'key')}, {_count(num_bins, 'bucket')}, "
                        f"{_count(num_blocks, 'block')} x "
                        f"{_count(options.block_size, 'thread')}")
    for column in ("bucket", "global_atomic_hist", "privatized_hist", "reference"):
        table.add_column(column, justify="right")
    _bucket_rows(table, num_bins, global_only, private, reference)
    console.print(table)
    same = bool(np.array_equal(private, reference) and np.array_equal(global_only, reference))
    console.print(f"both histograms are identical and correct: {'yes' if same else 'NO -- BUG'}")
    console.print("global atomic operations issued:")
    console.print(f"  global-atomics kernel: {n} (one per element)")
    console.print(f"  privatized kernel:     {global_atomics} "
                  f"({_count(num_blocks, 'block')} x {_count(num_bins, 'bucket')}: "
                  f"every block merges every "
                  f"bucket, whatever the key values)")
    if global_atomics and global_atomics < n:
        console.print(f"  reduction factor: {n / global_atomics:.1f}x fewer global atomics")
    elif global_atomics > n:
        console.print(f"  privatization costs {global_atomics / max(n, 1):.1f}x MORE global "
                      f"atomics here: blocks x buckets exceeds N (larger blocks or fewer "
                      f"buckets make it pay)")
    else:
        console.print("  the same number of global atomics either way")
    fewer = global_atomics < n
    console.print(f"self-check: histograms match the reference"
                  f"{', privatized issues strictly fewer global atomics' if fewer else ''}: "
                  f"{_verdict(same)}")
    return same


def section_7_3(console: Console, options: DemoOptions) -> bool:
    keys, num_bins = options.keys_for(CHAPTER_SECTIONS["7.3"])
    counts = oracles.histogram(keys, num_bins)
    offsets = oracles.exclusive_scan(counts)
    sorted_keys, original_index = oracles.counting_sort(keys, num_bins)
    table = Table(title=f"N = {_count(len(keys), 'key')} in [0, {num_bins})")
    for column in ("bucket", "count", "offset"):
        table.add_column(column, justify="right")
    _bucket_rows(table, num_bins, counts, offsets)
    console.print(table)
    shown = min(SHOW_FIRST, len(keys))
    console.print(f"first {shown} output values:    "
                  + " ".join(map(str, sorted_keys[:shown])))
    console.print(f"first {shown} original indices: "
                  + " ".join(map(str, original_index[:shown])))
    # The checks are made on the output itself, as the chapter makes them, in
    # O(N) passes that allocate at most N bytes (no sort, no N-element copy).
    is_sorted = bool(np.all(sorted_keys[:-1] <= sorted_keys[1:]))
    # Sorted, with each bucket's count equal to np.bincount's: then bucket b
    # occupies exactly [offset_b, offset_b + count_b).
    ranged = is_sorted and bool(np.array_equal(
        np.bincount(sorted_keys, minlength=num_bins), counts))
    stable = bool(np.all((sorted_keys[:-1] != sorted_keys[1:])
                         | (original_index[:-1] < original_index[1:])))
    permutation = _is_permutation(original_index)
    yes = {True: "yes", False: "NO -- BUG"}
    console.print(f"output is fully sorted by key: {yes[is_sorted]}")
    console.print(f"every bucket occupies exactly its [offset, offset+count) range: {yes[ranged]}")
    console.print(f"within each bucket, original relative order is preserved (stable): "
                  f"{yes[stable]}")
    ok = is_sorted and ranged and stable and permutation
    console.print(f"self-check: sorted, correctly ranged, and stable: {_verdict(ok)}")
    return ok


def _is_permutation(index: np.ndarray) -> bool:
    """Every position 0..N-1 exactly once (N bytes of scratch)."""
    n = len(index)
    if n and (index.min() < 0 or index.max() >= n):
        return False
    seen = np.zeros(n, dtype=bool)
    seen[index] = True
    return bool(seen.all())


RUNNERS = {"7.1": section_7_1, "7.2": section_7_2, "7.3": section_7_3}


def run_demo(sections=("7.1", "7.2", "7.3"), options: DemoOptions | None = None,
             console: Console | None = None) -> bool:
    """Print the chosen sections; True when every self-check is confirmed."""
    options = options or DemoOptions()
    console = console or Console()
    ok = True
    for name in sections:
        section = CHAPTER_SECTIONS[name]
        console.rule(f"Section {name}: {section.title}")
        ok &= RUNNERS[name](console, options)
        console.print()
    return ok
