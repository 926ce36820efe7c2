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


def _verdict(ok: bool) -> str:
    return "[green]confirmed[/]" if ok else "[bold red]MISMATCH[/]"


def section_7_1(console: Console, options: DemoOptions) -> bool:
    keys, num_bins = options.keys_for(CHAPTER_SECTIONS["7.1"])
    naive = oracles.naive_wave_histogram(keys, num_bins, options.warp_size)
    atomic = oracles.histogram(keys, num_bins)
    reference = np.bincount(keys, minlength=num_bins)
    table = Table(title=f"N = {len(keys)} keys, {num_bins} buckets, "
                        f"waves of {options.warp_size} lanes")
    for column in ("bucket", "naive_count", "atomic_count", "reference"):
        table.add_column(column, justify="right")
    for b in range(num_bins):
        table.add_row(str(b), str(naive[b]), str(atomic[b]), str(reference[b]))
    console.print(table)
    n = len(keys)
    naive_total = int(naive.sum())
    console.print(f"total counted: naive = {naive_total}, atomic = {int(atomic.sum())}, "
                  f"actual N = {n}")
    console.print(f"naive (non-atomic) increment LOSES {n - naive_total} of {n} increments")
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
    num_blocks = -(-n // options.block_size)
    private, global_atomics = oracles.privatized_histogram(
        keys, num_bins, options.block_size, num_blocks)
    global_only = oracles.histogram(keys, num_bins)
    reference = np.bincount(keys, minlength=num_bins)
    table = Table(title=f"N = {n} keys, {num_bins} buckets, "
                        f"{num_blocks} blocks x {options.block_size} threads")
    for column in ("bucket", "global_atomic_hist", "privatized_hist", "reference"):
        table.add_column(column, justify="right")
    for b in range(num_bins):
        table.add_row(str(b), str(global_only[b]), str(private[b]), str(reference[b]))
    console.print(table)
    same = bool(np.array_equal(private, reference) and np.array_equal(global_only, reference))
    console.print(f"both histograms are identical and correct: {'yes' if same else 'NO -- BUG'}")
    console.print("global atomic operations issued:")
    console.print(f"  global-atomics kernel: {n} (one per element)")
    console.print(f"  privatized kernel:     {global_atomics} "
                  f"({num_blocks} blocks x {num_bins} buckets, regardless of N)")
    if global_atomics:
        console.print(f"  reduction factor: {n / global_atomics:.1f}x fewer global atomics")
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
    table = Table(title=f"N = {len(keys)} keys in [0, {num_bins})")
    for column in ("bucket", "count", "offset"):
        table.add_column(column, justify="right")
    for b in range(num_bins):
        table.add_row(str(b), str(counts[b]), str(offsets[b]))
    console.print(table)
    shown = min(SHOW_FIRST, len(keys))
    console.print(f"first {shown} output values:    "
                  + " ".join(map(str, sorted_keys[:shown])))
    console.print(f"first {shown} original indices: "
                  + " ".join(map(str, original_index[:shown])))
    # The three checks are made on the output itself, as the chapter makes them.
    is_sorted = bool(np.all(sorted_keys[:-1] <= sorted_keys[1:]))
    ranged = all(np.all(sorted_keys[offsets[b]:offsets[b] + counts[b]] == b)
                 for b in range(num_bins))
    same_bin = sorted_keys[:-1] == sorted_keys[1:]
    stable = bool(np.all(original_index[:-1][same_bin] < original_index[1:][same_bin]))
    permutation = bool(np.array_equal(np.sort(original_index), np.arange(len(keys))))
    yes = {True: "yes", False: "NO -- BUG"}
    console.print(f"output is fully sorted by key: {yes[is_sorted]}")
    console.print(f"every bucket occupies exactly its [offset, offset+count) range: {yes[ranged]}")
    console.print(f"within each bucket, original relative order is preserved (stable): "
                  f"{yes[stable]}")
    ok = is_sorted and ranged and stable and permutation
    console.print(f"self-check: sorted, correctly ranged, and stable: {_verdict(ok)}")
    return ok


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
