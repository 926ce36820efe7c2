"""The fast kernel's 16-bit shared counters (fast_histogram.cu, NARROW_COUNTERS):
their spill protocol, modelled step by step on the host.

Two 16-bit counters share one 32-bit word. A thread's add is one atomicAdd
on the word; if the counter's top bit (NARROW_SPILL = 0x8000) is set after
it, the thread's next step is an atomicAnd clearing that bit, and the one
whose atomicAnd finds the bit still set adds 0x8000 to the global bin. The
claim: whatever the interleaving, no counter reaches 0x10000 (so no carry
crosses into its neighbour) and shared + global counts equal the keys. The
GPU conformance cases judge the kernel itself; this pins the argument it
rests on, with a scheduler that stalls the thread that should clear the bit.
"""

from __future__ import annotations

import random

import pytest

SPILL = 0x8000
MASK32 = 0xFFFFFFFF


class Word:
    """One shared word of two counters, with the true (unwrapped) halves kept
    beside it so a carry between them is seen the moment it happens."""

    def __init__(self):
        self.bits = 0
        self.halves = [0, 0]
        self.global_bins = [0, 0]
        self.peak = 0

    def atomic_add(self, half: int, count: int) -> int:
        old = self.bits
        self.bits = (self.bits + (count << (16 * half))) & MASK32
        self.halves[half] += count
        self.peak = max(self.peak, self.halves[half])
        return old

    def atomic_and(self, mask: int) -> int:
        old = self.bits
        self.bits &= mask
        for half in (0, 1):
            if not (mask >> (16 * half)) & SPILL and (old >> (16 * half)) & SPILL:
                self.halves[half] -= SPILL
        return old

    def consistent(self) -> bool:
        return self.bits == (self.halves[0] | self.halves[1] << 16) and max(self.halves) < 0x10000


def thread(word: Word, half: int, adds: list[int], every_setter_clears: bool = True):
    """One thread's steps as a generator: each next() is one atomic operation,
    and yields whether the thread's next step clears a spill bit."""
    spill_bit = SPILL << (16 * half)
    for count in adds:
        old = word.atomic_add(half, count)
        after = (old + (count << (16 * half))) & MASK32
        crossed = not old & spill_bit and after & spill_bit
        if after & spill_bit and (every_setter_clears or crossed):
            yield True
            if word.atomic_and(~spill_bit & MASK32) & spill_bit:
                word.global_bins[half] += SPILL
        yield False


def interleave(word: Word, runners: list, rng: random.Random, stall_clearers: bool) -> None:
    """Run the threads' steps in a random order to the end; stall_clearers: a
    thread whose next step clears a spill bit runs only when no thread is
    about to add (the most adds a set bit can see before it is cleared)."""
    clears_next = [False] * len(runners)
    live = list(range(len(runners)))
    while live:
        ready = live
        if stall_clearers:
            ready = [t for t in live if not clears_next[t]] or live
        t = rng.choice(ready)
        try:
            clears_next[t] = next(runners[t])
        except StopIteration:
            live.remove(t)
        assert word.consistent(), f"a counter carried into its neighbour: {word.halves}"


def run(threads: int, adds_per_thread: int, seed: int, stall_clearers: bool,
        every_setter_clears: bool = True) -> tuple[Word, list[int]]:
    """Threads adding 1 to 16 at a time to the two counters of one word (even
    threads the low one, odd threads the high one); (word, true counts)."""
    rng = random.Random(seed)
    word = Word()
    truth = [0, 0]
    runners = []
    for t in range(threads):
        half = t % 2
        adds = [rng.choice((1, 2, 4, 8, 16)) for _ in range(adds_per_thread)]
        truth[half] += sum(adds)
        runners.append(thread(word, half, adds, every_setter_clears))
    interleave(word, runners, rng, stall_clearers)
    return word, truth


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("stall_clearers", [False, True])
def test_shared_plus_spilled_counts_equal_the_keys_whatever_the_interleaving(seed,
                                                                             stall_clearers):
    word, truth = run(threads=64, adds_per_thread=600, seed=seed, stall_clearers=stall_clearers)
    for half in (0, 1):
        assert word.global_bins[half] + word.halves[half] == truth[half]
        assert word.global_bins[half] > 0  # the spill path was taken


def test_a_counter_stays_below_the_bound_the_kernel_comment_gives():
    # 1024 threads (a fast_histogram block) adding 16 at a time, all to one
    # counter, the thread that must clear the bit stalled as long as can be.
    word = Word()
    interleave(word, [thread(word, 0, [16] * 40) for _ in range(1024)], random.Random(1),
               stall_clearers=True)
    assert word.peak <= 0xC010
    assert word.global_bins[0] + word.halves[0] == 1024 * 40 * 16


def test_clearing_only_by_the_thread_that_set_the_bit_can_carry_into_the_neighbour():
    # The model can fail: had only the crossing thread cleared the bit, a stall
    # of that one thread lets the counter run past 0xFFFF.
    with pytest.raises(AssertionError, match="carried into its neighbour"):
        run(threads=64, adds_per_thread=2000, seed=0, stall_clearers=True,
            every_setter_clears=False)
