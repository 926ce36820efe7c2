"""What a public call reads back, and how cheaply: this thread's bad-key slot
(a word of the verdict board, or one of its own), read back through one
pinned host word, and the compiled lane's view of that slot.
"""

from __future__ import annotations

import ctypes

import numpy as np

from histkit.gpu import contract
from histkit.gpu.device import bindings
from histkit.gpu.device.bindings import check
from histkit.gpu.device.memory import BufferWindow, DeviceArray
from histkit.gpu.verdict import SlotLease


class CallSlots:
    """Runtime's per-call scratch methods (the state is set in Runtime.__init__)."""

    def bad_key_slot(self) -> DeviceArray:
        """This thread's cached first-bad-key word on the device, holding
        NO_BAD_KEY: a slot of the verdict board (verdict.py) while one is
        free, else a word of its own. Valid until this thread's next call:
        public calls use it synchronously, one at a time. It is reset only
        when a kernel may have written it since read_bad_key last found it
        untouched."""
        scratch = self._scratch
        slot = getattr(scratch, "slot", None)
        if slot is None:
            board_slot = scratch.board_slot = self.verdicts.claim()
            if board_slot is None:
                # On histkit's own stream, which outlives every caller's, and
                # ready before any stream uses it.
                slot = self._base.empty(1, np.uint64)
                self._base.sync("allocating the bad-key slot")
            else:
                scratch.lease = SlotLease(self.verdicts, board_slot)  # back when the thread ends
                slot = self.board_word(board_slot)
                scratch.flag_address = self.verdicts.flag_address(board_slot)
            scratch.slot = slot
            scratch.slot_ptr = slot.ptr
            scratch.slot_clean = False
        if not scratch.slot_clean:
            self.memset(slot.ptr, 0xFF, 8)
        scratch.slot_clean = False  # kernels launched from here on may write it
        return slot

    def lane_slot(self):
        """This thread's scratch when the compiled lane (histkit.gpu._lane) may
        check a call through its bad-key slot as it stands, else None: the
        context is current on this thread, the slot is on the verdict board
        and clean (holds NO_BAD_KEY, its flag down), the C path is built, and
        no conformance harness is on (bounded waits, skewed builds, poisoned
        scratch: the Python path serves those). The slot is marked as one
        kernels may write from here on; the lane marks it clean again
        (scratch.slot_clean) when the flag at scratch.flag_address is still
        down after the call's sync, and otherwise hands the call to
        read_bad_key through the Python path."""
        scratch = self._scratch
        if (not getattr(scratch, "slot_clean", False) or scratch.board_slot is None
                or not self.verdicts.usable or not self.lane_open()):
            return None
        scratch.slot_clean = False
        return scratch

    def lane_open(self) -> bool:
        """Whether the compiled lane may run a call on this thread at all: the
        context is current here, the C path is built, and no conformance
        harness is on (an unchecked call needs no slot: lane_slot asks the
        rest for a checked one)."""
        return (getattr(self._scratch, "bound", False) and self.per_call.calls is not None
                and not self.waits.active and not self.skew.depth and not self.poison.depth)

    def board_word(self, slot: int) -> DeviceArray:
        """A verdict board slot's word (a margin word's too) as a one-element array."""
        return DeviceArray(BufferWindow(self.verdicts.buffer, self.verdicts.offset(slot)), 1,
                           np.dtype(np.uint64))

    def read_bad_key(self, slot: DeviceArray) -> int:
        """The first bad index a call's kernels noted in slot (NO_BAD_KEY: none),
        after waiting for them. This thread's board slot is copied back only
        when its flag says a kernel lowered it."""
        scratch = self._scratch
        if slot is not getattr(scratch, "slot", None):
            return self.read_word(slot.ptr)
        board_slot = scratch.board_slot
        if board_slot is not None and self.verdicts.usable:
            self.sync("waiting for the call's kernels")
            if not self.verdicts.flagged(board_slot):
                scratch.slot_clean = True
                return contract.NO_BAD_KEY
            self.verdicts.lower(board_slot)
        index = self.read_word(slot.ptr)
        scratch.slot_clean = index == contract.NO_BAD_KEY
        return index

    def wait_for(self, foreign_stream: int) -> None:
        """Order this runtime's stream after the work pending on another stream
        (a raw CUstream handle; 1 and 2 are the legacy and per-thread defaults);
        nothing to do when it is this runtime's own stream."""
        if foreign_stream == self.handle:
            return
        driver = bindings.driver
        event = getattr(self._scratch, "event", None)
        if event is None:
            flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
            event = self._scratch.event = check(driver.cuEventCreate(flags), "cuEventCreate")
        check(driver.cuEventRecord(event, driver.CUstream(foreign_stream)), "cuEventRecord")
        check(driver.cuStreamWaitEvent(self.handle, event, 0), "cuStreamWaitEvent")

    def read_word(self, ptr: int) -> int:
        """One uint64 from the device, through this thread's pinned host word
        (an asynchronous copy, then a stream sync)."""
        word = getattr(self._scratch, "pinned", None)
        if word is None:
            host_ptr = int(check(bindings.driver.cuMemHostAlloc(8, 0), "cuMemHostAlloc"))
            word = self._scratch.pinned = (ctypes.c_uint64 * 1).from_address(host_ptr)
            self._scratch.pinned_ptr = host_ptr
        calls = self.per_call.calls
        if calls is not None and not self.waits.active:  # a bounded wait polls
            status, value = calls.read_word(ptr, self._scratch.pinned_ptr, self.handle)
            check(status, "reading a result word back (cuMemcpyDtoHAsync, cuStreamSynchronize)")
            return value
        check(bindings.driver.cuMemcpyDtoHAsync(self._scratch.pinned_ptr, ptr, 8, self.handle),
              "cuMemcpyDtoHAsync")
        self.sync("reading a result word back")
        return int(word[0])
