"""The verdict board: how a checked call learns "no bad key" without a copy.

A checked call (``check=True``) could end with an 8-byte device-to-host
copy of its first_bad word and a sync, but the copy is queued behind the
kernels on the copy engine: 3-4 us of every call (docs/performance.md). Most
calls have no bad key, so the board turns the question around: the kernels
say when there is one.

- The slots: SLOT_COUNT uint64 words in device memory, each NO_BAD_KEY until
  a kernel notes a bad key in it. Each thread's checked calls take one
  (``claim``) as their first_bad word.
- The flags: one uint32 per slot in mapped (page-locked, device-visible) host
  memory. The kernel thread whose atomicMin finds a slot still at NO_BAD_KEY
  sets its flag (common.cuh's ``hk_note_bad_key``): one flag per call with
  bad keys, however many keys are bad.

After the call's stream sync the host reads the flag: 0 means no kernel
lowered the word, so the call is done; 1 means copy the word (the first bad
index) back as before, and lower the flag. A word outside the slots (a
``check=False`` caller's own) flags nothing.

The kernels find the board through ``hk_verdicts``, a global of every module
built with common.cuh, which ``install`` writes when the module is loaded.
A module whose board could not be written would note bad keys without
flagging them, so then the board is switched off (``usable``) and every call
copies its word back, as before: slower, never wrong.

The conformance runner judges every cell of histkit's own kernels on the
board, its first_bad word in turn at each of judge_positions: the last slot
(its flag must be set exactly when the kernels report a bad key:
checks.published_rule), and the words just past and just before the slots
(no flag may be set: the kernels' range test). Both ends of the slots' and
flags' memory hold GUARD_SLOTS + 1 words more than the kernels are told of,
so that each judged word has GUARD_SLOTS guard words on either side, and a
flag set out of range lands in memory the judge reads.
"""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np

from histkit.gpu.contract import NO_BAD_KEY

# The global every module built with common.cuh has, and its layout there
# (struct hk_verdict_board: the slots' device address, their count, the
# flags' device address).
BOARD_SYMBOL = b"hk_verdicts"
BOARD_LAYOUT = struct.Struct("<QQQ")
# The header that defines it: a module built from a source that includes it
# may note bad keys, so the board must be written into that module.
COMMON_HEADER = "common.cuh"

SLOT_COUNT = 1024
GUARD_SLOTS = 8
# Words beyond the slots at either end (slot numbers -MARGIN ... -1 and
# slot_count ... slot_count + MARGIN - 1), never handed to a thread.
MARGIN = GUARD_SLOTS + 1
# Threads take the slots clear of the judge's stretches (below).
FIRST_THREAD_SLOT = GUARD_SLOTS


def judge_positions(slot_count: int) -> tuple[int, int, int]:
    """The judge's first_bad words, as slot numbers: the last slot (flagged
    exactly when a bad key is reported), the word just past the slots and
    the one just before them (never flagged)."""
    return slot_count - 1, slot_count, -1


class VerdictBoard:
    """One device's slots and flags (see the module docstring).

    memory: how the board gets its storage, so that the bookkeeping can be
    tested without a GPU: ``device(nbytes) -> (buffer, ptr)`` (kept, never
    freed), ``fill(ptr, byte, nbytes)`` (done before the first call),
    ``mapped(nbytes) -> (host_ptr, device_ptr)`` (zeroed), and
    ``write_global(module, name, data) -> bool`` (False: the module has no such
    global, or one of another size).
    """

    def __init__(self, memory, slot_count: int = SLOT_COUNT):
        self.memory = memory
        self.slot_count = slot_count
        words = slot_count + 2 * MARGIN
        self.buffer, start = memory.device(words * 8)
        memory.fill(start, 0xFF, words * 8)
        self.slots = start + 8 * MARGIN  # slot 0's address
        host, device = memory.mapped(words * 4)
        self._flags = (ctypes.c_uint32 * words).from_address(host)
        self.image = BOARD_LAYOUT.pack(self.slots, slot_count, device + 4 * MARGIN)
        self.usable = True
        self._next = FIRST_THREAD_SLOT
        self._last = judge_positions(slot_count)[0] - GUARD_SLOTS  # the judge's stretch starts
        self._returned: list[int] = []  # slots of threads that have ended
        self._judged = 0
        self._lock = threading.Lock()

    def install(self, module, reads_board: bool) -> None:
        """Write the board into a newly loaded module. reads_board: the module
        was built with common.cuh, so its kernels may note bad keys; if its
        global cannot be written, the board is switched off."""
        if not self.memory.write_global(module, BOARD_SYMBOL, self.image) and reads_board:
            self.usable = False

    def claim(self) -> int | None:
        """A slot for one thread's checked calls (None: all are taken)."""
        with self._lock:
            if self._returned:
                return self._returned.pop()
            if self._next >= self._last:
                return None
            slot, self._next = self._next, self._next + 1
            return slot

    def give_back(self, slot: int) -> None:
        """A slot whose thread has ended (SlotLease): the next claim takes it.
        Its word and flag may be left set; its next thread's first call
        resets the word and, if flagged, copies it back once."""
        with self._lock:
            self._returned.append(slot)

    def word(self, slot: int) -> int:
        """The device address of a slot's word (a margin word's too)."""
        return self.slots + 8 * slot

    def holds(self, slot: int) -> bool:
        """Whether a slot number is one the kernels are told of (not a margin word)."""
        return 0 <= slot < self.slot_count

    def offset(self, slot: int) -> int:
        """Where a slot's word lies in self.buffer, in bytes."""
        return 8 * (MARGIN + slot)

    def flagged(self, slot: int) -> bool:
        """Whether a kernel noted a bad key in the slot (read after a sync)."""
        return self._flags[MARGIN + slot] != 0

    def flag_address(self, slot: int) -> int:
        """The host address of a slot's flag (the compiled lane reads it there)."""
        return ctypes.addressof(self._flags) + 4 * (MARGIN + slot)

    def lower(self, slot: int) -> None:
        """Clear the slot's flag (its word is reset by the caller)."""
        self._flags[MARGIN + slot] = 0

    # --- the conformance runner's words --------------------------------------
    def next_judged(self) -> int:
        """The judge's next first_bad word (judge_positions in turn), its
        stretch's flags cleared."""
        positions = judge_positions(self.slot_count)
        position = positions[self._judged % len(positions)]
        self._judged += 1
        for i in range(-GUARD_SLOTS, GUARD_SLOTS + 1):
            self.lower(position + i)
        return position

    def stretch(self, position: int) -> tuple[int, int]:
        """(device address, words) of a judged word with its guards."""
        return self.word(position - GUARD_SLOTS), 2 * GUARD_SLOTS + 1

    def stretch_flags(self, position: int) -> list[int]:
        return [self._flags[MARGIN + position + i] for i in range(-GUARD_SLOTS, GUARD_SLOTS + 1)]


class SlotLease:
    """A thread's claim on a slot, kept in its thread-local storage: when the
    thread ends, Python drops its thread-local values, and the slot goes back
    (so a server that runs each request on a new thread does not use up the
    board)."""

    __slots__ = ("board", "slot")

    def __init__(self, board: VerdictBoard, slot: int):
        self.board = board
        self.slot = slot

    def __del__(self):
        try:  # noqa: SIM105 (at interpreter shutdown there is nothing to give back to)
            self.board.give_back(self.slot)
        except Exception:
            pass


def judge_reading(words: np.ndarray, flags: list[int],
                  on_board: bool) -> tuple[int | None, bool | None, str | None]:
    """What a cell left on a judged word's stretch (its 2 * GUARD_SLOTS + 1
    words and their flags): (the first bad index noted, or None; whether the
    word was flagged, None where it lies off the board; what went wrong: a
    guard word written or flagged, or a word off the board flagged, or None)."""
    for i, (word, flag) in enumerate(zip(words.tolist(), flags, strict=True)):
        if i != GUARD_SLOTS and (word != NO_BAD_KEY or flag):
            side = "before" if i < GUARD_SLOTS else "past"
            return None, None, (f"wrote or flagged the verdict board {abs(i - GUARD_SLOTS)} "
                                f"word(s) {side} its first_bad word")
    index = int(words[GUARD_SLOTS])
    reported = None if index == NO_BAD_KEY else index
    flagged = bool(flags[GUARD_SLOTS])
    if on_board:
        return reported, flagged, None
    if flagged:
        return reported, None, ("flagged a bad key on the verdict board for a first_bad word "
                                "just outside its slots (the kernels' range test)")
    return reported, None, None
