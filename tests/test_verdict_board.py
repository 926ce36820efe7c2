"""The verdict board (histkit.gpu.verdict) and the bad-key slot protocol of
the real Runtime on it, their device memory pretended (no GPU).

A checked call copies its first_bad word back only when a kernel flagged
its slot. These pin what a GPU run shows only when it goes wrong: a call
never reports a bad key an earlier call found, never misses one a kernel
flagged, copies nothing when nothing was flagged, and falls back to copying
whenever the board cannot be trusted.
"""

import ctypes
import threading
import types

import numpy as np

from histkit.conformance import checks
from histkit.gpu import verdict
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.verdict import (
    BOARD_LAYOUT,
    FIRST_THREAD_SLOT,
    GUARD_SLOTS,
    MARGIN,
    VerdictBoard,
    judge_positions,
    judge_reading,
)

MEMORY_AT = 0x7000_0000  # the pretended device address of the board's words
SLOTS_AT = MEMORY_AT + 8 * MARGIN  # slot 0's
FLAGS_ON_DEVICE = 0x9000_0000  # the pretended device address of the flags' memory


class FakeBoardMemory:
    """VerdictBoard's memory: slots as a NumPy array, flags as real host memory."""

    def __init__(self, globals_in=None):
        self.words = None
        self.host_flags = None
        self.modules = globals_in if globals_in is not None else {}

    def device(self, nbytes):
        self.words = np.zeros(nbytes // 8, np.uint64)
        return types.SimpleNamespace(handle=MEMORY_AT), MEMORY_AT

    def fill(self, ptr, byte, nbytes):
        assert ptr == MEMORY_AT and nbytes == 8 * len(self.words)
        self.words[:] = int.from_bytes(bytes([byte]) * 8, "little")

    def mapped(self, nbytes):
        self.host_flags = ctypes.create_string_buffer(nbytes)  # zeroed, kept alive here
        return ctypes.addressof(self.host_flags), FLAGS_ON_DEVICE

    def write_global(self, module, name, data):
        if name not in module:
            return False
        if module[name] is not None and len(module[name]) != len(data):
            return False
        module[name] = data
        return True


def test_the_board_starts_with_every_word_at_no_bad_key_and_no_flag():
    memory = FakeBoardMemory()
    board = VerdictBoard(memory, slot_count=64)
    assert (memory.words == NO_BAD_KEY).all() and len(memory.words) == 64 + 2 * MARGIN
    assert not any(board.flagged(slot) for slot in range(-MARGIN, 64 + MARGIN))
    assert board.usable


def test_a_module_gets_the_slots_their_count_and_the_flags_device_address():
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    module = {verdict.BOARD_SYMBOL: None}
    board.install(module, reads_board=True)
    # The kernels are told of the slots alone, not of the margins either side.
    assert BOARD_LAYOUT.unpack(module[verdict.BOARD_SYMBOL]) == (
        SLOTS_AT, 64, FLAGS_ON_DEVICE + 4 * MARGIN)
    assert board.usable


def test_a_module_that_may_note_bad_keys_without_the_board_switches_it_off():
    # Its kernels would lower words without flagging them: a checked call
    # reading flags would miss their bad keys, so every call copies instead.
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    board.install({}, reads_board=False)  # a user's file without common.cuh: no matter
    assert board.usable
    board.install({}, reads_board=True)
    assert not board.usable


def test_a_board_global_of_another_layout_is_not_written_and_switches_the_board_off():
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    module = {verdict.BOARD_SYMBOL: b"\0" * 16}
    board.install(module, reads_board=True)
    assert module[verdict.BOARD_SYMBOL] == b"\0" * 16 and not board.usable


def test_threads_claim_distinct_slots_clear_of_the_judges_words_until_none_is_left():
    count = 2 * GUARD_SLOTS + 4  # three slots for threads
    board = VerdictBoard(FakeBoardMemory(), slot_count=count)
    claimed = []
    workers = [threading.Thread(target=lambda: claimed.append(board.claim())) for _ in range(5)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    taken = sorted(c for c in claimed if c is not None)
    assert taken == [FIRST_THREAD_SLOT + i for i in range(3)] and claimed.count(None) == 2
    for judged in judge_positions(count):  # no thread's slot in a judged word's stretch
        assert all(abs(slot - judged) > GUARD_SLOTS for slot in taken)


def test_the_judge_turns_through_the_last_slot_and_the_words_just_outside():
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    assert [board.next_judged() for _ in range(6)] == [63, 64, -1, 63, 64, -1]
    assert [board.holds(slot) for slot in (0, 63, 64, -1)] == [True, True, False, False]
    for judged in (64, -1):  # every stretch's words and flags lie in the board's memory
        start, words = board.stretch(judged)
        assert start >= MEMORY_AT and start + 8 * words <= MEMORY_AT + 8 * (64 + 2 * MARGIN)
        assert len(board.stretch_flags(judged)) == words


def test_the_judge_clears_a_stretchs_flags_before_its_cell():
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    board._flags[MARGIN + 63] = 1
    board._flags[MARGIN + 63 + GUARD_SLOTS] = 1
    assert board.next_judged() == 63 and not any(board.stretch_flags(63))


# --- the judge's stretch -------------------------------------------------------

def stretch(judge_word=NO_BAD_KEY, **others):
    words = np.full(2 * GUARD_SLOTS + 1, NO_BAD_KEY, np.uint64)
    words[GUARD_SLOTS] = judge_word
    for offset, value in others.items():
        words[GUARD_SLOTS + int(offset.removeprefix("at"))] = value
    return words


def test_the_judge_reads_the_reported_index_and_the_flag_of_a_slot():
    flags = [0] * (2 * GUARD_SLOTS + 1)
    assert judge_reading(stretch(), flags, on_board=True) == (None, False, None)
    flags[GUARD_SLOTS] = 1
    assert judge_reading(stretch(7), flags, on_board=True) == (7, True, None)


def test_the_judge_fails_a_flag_set_for_a_word_just_outside_the_slots():
    flags = [0] * (2 * GUARD_SLOTS + 1)
    assert judge_reading(stretch(7), flags, on_board=False) == (7, None, None)
    flags[GUARD_SLOTS] = 1
    assert "just outside its slots" in judge_reading(stretch(7), flags, on_board=False)[2]


def test_the_judge_names_a_guard_word_written_or_flagged_on_either_side():
    flags = [0] * (2 * GUARD_SLOTS + 1)
    words = stretch()
    words[GUARD_SLOTS + 1] = 3
    assert "1 word(s) past" in judge_reading(words, flags, on_board=True)[2]
    flags[0] = 1
    assert f"{GUARD_SLOTS} word(s) before" in judge_reading(stretch(), flags, on_board=False)[2]


def test_the_published_rule_fails_a_flag_without_a_report_and_a_report_without_a_flag():
    assert checks.published_rule(None, None) is None  # not judged (a user's kernel)
    assert checks.published_rule(5, None) is None
    assert checks.published_rule(None, False) is None
    assert checks.published_rule(5, True) is None
    assert checks.published_rule(None, True).status == "FAIL"
    cell = checks.published_rule(5, False)
    assert cell.status == "FAIL" and "index 5" in cell.detail and "would miss" in cell.detail


def test_judge_rejects_an_unflagged_bad_key_even_when_the_index_is_right():
    keys = np.array([1, 9, 2], np.int32)
    expected = checks.Expected(keys, 4)
    got = checks.Outcome(counts=np.array([0, 1, 1, 0]), first_bad=1, published=False)
    assert checks.judge("histogram", expected, got).status == "FAIL"
    got.published = True
    assert checks.judge("histogram", expected, got).status == "pass"


# --- the real Runtime's slot protocol on a pretended board ------------------

def runtime_on(board, monkeypatch, kernels_write):
    """A Runtime whose device is pretended: the board's words and flags, a
    memset, and kernels that note a bad key as hk_note_bad_key does (the
    first to lower a word flags its slot, if it is one)."""
    from histkit.gpu.device import Runtime

    rt = Runtime.__new__(Runtime)
    rt._scratch, rt._base, rt.verdicts = threading.local(), rt, board
    memory = board.memory
    own_word = {"value": 0}  # a word off the board: what fresh memory happens to hold
    copies = []

    def word_at(ptr):  # (the words, the index of ptr's) on the board, else None
        if MEMORY_AT <= ptr < MEMORY_AT + 8 * len(memory.words):
            return (memory.words, (ptr - MEMORY_AT) // 8)
        return None

    def memset(ptr, byte, nbytes):
        value = int.from_bytes(bytes([byte]) * nbytes, "little")
        found = word_at(ptr)
        if found:
            found[0][found[1]] = value
        else:
            own_word["value"] = value

    def read_word(ptr):
        copies.append(ptr)
        found = word_at(ptr)
        return int(found[0][found[1]]) if found else own_word["value"]

    def note_bad_key(ptr, index):  # common.cuh's hk_note_bad_key
        found = word_at(ptr)
        old = int(found[0][found[1]]) if found else own_word["value"]
        if found:
            found[0][found[1]] = min(old, index)
        else:
            own_word["value"] = min(old, index)
        slot = (ptr - SLOTS_AT) // 8
        if old == NO_BAD_KEY and found and 0 <= slot < board.slot_count:
            board._flags[MARGIN + slot] = 1

    monkeypatch.setattr(rt, "empty", lambda n, dtype: __import__(
        "histkit.gpu.device", fromlist=["DeviceArray"]).DeviceArray(
        types.SimpleNamespace(handle=0x1000), n, np.dtype(dtype)), raising=False)
    monkeypatch.setattr(rt, "sync", lambda what: None, raising=False)
    monkeypatch.setattr(rt, "memset", memset, raising=False)
    monkeypatch.setattr(rt, "read_word", read_word, raising=False)

    def call(*bad_indices):
        slot = rt.bad_key_slot()
        for index in bad_indices:
            (kernels_write or note_bad_key)(slot.ptr, index)
        return rt.read_bad_key(slot)

    return rt, call, copies


def test_a_call_on_a_board_slot_copies_its_word_back_only_when_a_kernel_flagged_it(monkeypatch):
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    rt, call, copies = runtime_on(board, monkeypatch, None)
    assert call() == NO_BAD_KEY and copies == []
    assert call() == NO_BAD_KEY and copies == []
    assert call(9, 4, 6) == 4 and len(copies) == 1  # the first bad index, one copy
    assert not board.flagged(FIRST_THREAD_SLOT)  # lowered for the next call
    assert call() == NO_BAD_KEY and len(copies) == 1  # reset: the old bad key is gone
    assert call(3) == 3


def test_a_call_off_the_board_copies_its_word_and_is_reset_exactly_when_written(monkeypatch):
    # Every slot taken: the thread keeps a word of its own, as before the board.
    board = VerdictBoard(FakeBoardMemory(), slot_count=FIRST_THREAD_SLOT + GUARD_SLOTS + 1)
    memsets = []
    rt, call, copies = runtime_on(board, monkeypatch, None)
    real_memset = rt.memset
    monkeypatch.setattr(rt, "memset", lambda *a: (memsets.append(a[1]), real_memset(*a)),
                        raising=False)
    assert call() == NO_BAD_KEY and memsets == [0xFF]  # set once, when made
    assert call() == NO_BAD_KEY and memsets == [0xFF]  # clean: not set again
    assert call(5) == 5
    assert call() == NO_BAD_KEY and memsets == [0xFF, 0xFF]  # reset after a bad key
    assert len(copies) == 4


def test_a_board_switched_off_makes_every_call_copy_its_word(monkeypatch):
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    rt, call, copies = runtime_on(board, monkeypatch, None)
    assert call() == NO_BAD_KEY and copies == []
    board.usable = False  # a module loaded since could not be given the board

    def unflagging_kernel(ptr, index):  # a kernel that lowers the word, flags nothing
        board.memory.words[(ptr - MEMORY_AT) // 8] = index

    rt2, call2, copies2 = runtime_on(board, monkeypatch, unflagging_kernel)
    assert call2(8) == 8 and len(copies2) == 1


def test_each_thread_has_its_own_slot_and_sees_only_its_own_bad_keys(monkeypatch):
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    rt, call, _ = runtime_on(board, monkeypatch, None)
    results = {}

    def worker(name, bad):
        results[name] = [call(*bad), call()]

    threads = [threading.Thread(target=worker, args=("bad", (11,))),
               threading.Thread(target=worker, args=("good", ()))]
    for thread in threads:
        thread.start()
        thread.join()
    assert results == {"bad": [11, NO_BAD_KEY], "good": [NO_BAD_KEY, NO_BAD_KEY]}


def test_a_slot_goes_back_to_the_board_when_its_thread_ends(monkeypatch):
    # A server running each request on a new thread must not use up the
    # board: the slot is leased in the thread's local storage.
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    rt, call, _ = runtime_on(board, monkeypatch, None)
    seen = []

    def request():
        call()
        seen.append(rt._scratch.board_slot)

    for _ in range(3):
        worker = threading.Thread(target=request)
        worker.start()
        worker.join()
    assert seen == [FIRST_THREAD_SLOT] * 3


def test_a_returned_slot_left_flagged_costs_its_next_thread_one_copy_not_a_stale_error(
        monkeypatch):
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    rt, call, copies = runtime_on(board, monkeypatch, None)

    def abandoned():  # a kernel flags the slot, and the thread ends before reading it
        slot = rt.bad_key_slot()
        board.memory.words[(slot.ptr - MEMORY_AT) // 8] = 3
        board._flags[MARGIN + FIRST_THREAD_SLOT] = 1

    worker = threading.Thread(target=abandoned)
    worker.start()
    worker.join()
    results = []
    worker = threading.Thread(target=lambda: results.extend([call(), call()]))
    worker.start()
    worker.join()
    assert results == [NO_BAD_KEY, NO_BAD_KEY] and len(copies) == 1


def test_a_slots_address_and_its_place_in_the_boards_memory_agree():
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    for slot in (-MARGIN, -1, 0, 1, FIRST_THREAD_SLOT, 63, 64, 64 + GUARD_SLOTS):
        assert board.word(slot) == MEMORY_AT + board.offset(slot) == SLOTS_AT + 8 * slot
    start, words = board.stretch(63)
    assert (start, words) == (board.word(63 - GUARD_SLOTS), 2 * GUARD_SLOTS + 1)


def test_a_stretchs_flags_are_read_in_address_order_around_the_judged_word():
    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    for judged in judge_positions(64):
        board._flags[MARGIN + judged + 2] = 1  # two words past it
        flags = board.stretch_flags(judged)
        assert flags.index(1) == GUARD_SLOTS + 2 and sum(flags) == 1
        board.lower(judged + 2)


def test_the_lane_gets_a_threads_slot_only_while_it_is_clean_on_the_board_and_unharnessed(
        monkeypatch):
    from histkit.gpu.device import PerCallPath, ScheduleSkew, ScratchPoison, WaitBound

    board = VerdictBoard(FakeBoardMemory(), slot_count=64)
    rt, call, _ = runtime_on(board, monkeypatch, None)
    rt.per_call, rt.waits = PerCallPath(object()), WaitBound()
    rt.skew, rt.poison = ScheduleSkew(), ScratchPoison()
    rt._scratch.bound = True
    assert rt.lane_slot() is None  # no slot yet: the thread's first call is the Python path's
    assert call() == NO_BAD_KEY
    scratch = rt.lane_slot()
    assert scratch.slot_ptr == board.word(FIRST_THREAD_SLOT) == scratch.slot.ptr
    flag = ctypes.c_uint32.from_address(scratch.flag_address)
    board._flags[MARGIN + FIRST_THREAD_SLOT] = 1  # the lane reads the slot's own flag
    assert flag.value == 1 and not board._flags[MARGIN + FIRST_THREAD_SLOT + 1]
    board.lower(FIRST_THREAD_SLOT)
    assert rt.lane_slot() is None  # taken: kernels may write it until the lane finds it clean
    scratch.slot_clean = True

    def harnessed(switch_on, switch_off):
        switch_on()
        try:
            return rt.lane_slot()
        finally:
            switch_off()

    assert harnessed(lambda: setattr(rt.waits, "limit_s", 5.0),
                     lambda: setattr(rt.waits, "limit_s", None)) is None
    for mode in (rt.skew, rt.poison):
        assert harnessed(lambda m=mode: setattr(m, "depth", 1),
                         lambda m=mode: setattr(m, "depth", 0)) is None
    assert harnessed(lambda: setattr(rt.per_call, "calls", None),
                     lambda: setattr(rt.per_call, "calls", object())) is None
    assert harnessed(lambda: setattr(board, "usable", False),
                     lambda: setattr(board, "usable", True)) is None
    assert scratch.slot_clean  # a refusal leaves the slot as it was
    assert rt.lane_slot() is scratch and not scratch.slot_clean
    other_thread = []
    worker = threading.Thread(target=lambda: other_thread.append(rt.lane_slot()))
    worker.start()
    worker.join()
    assert other_thread == [None]  # not bound there, and no slot of its own yet


def test_a_thread_off_the_board_never_gets_the_lane(monkeypatch):
    # Every slot taken: the thread's word has no flag, so only the Python
    # path (which copies the word back) can check its calls.
    from histkit.gpu.device import PerCallPath, ScheduleSkew, ScratchPoison, WaitBound

    board = VerdictBoard(FakeBoardMemory(), slot_count=FIRST_THREAD_SLOT + GUARD_SLOTS + 1)
    rt, call, _ = runtime_on(board, monkeypatch, None)
    rt.per_call, rt.waits = PerCallPath(object()), WaitBound()
    rt.skew, rt.poison = ScheduleSkew(), ScratchPoison()
    rt._scratch.bound = True
    assert call() == NO_BAD_KEY and call() == NO_BAD_KEY
    assert rt._scratch.slot_clean and rt.lane_slot() is None
