"""The conformance harness's modes of a runtime, shared by its stream views:
schedule skew (kernels built to shuffle their warps' timing), poisoned and
guarded scratch, and the state of the bounded waits (``waiting``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from histkit.gpu import contract, user_skew


class WaitBound:
    """How long a host wait on the device may take (None: unbounded), and
    the wait that outlasted it, once one has (Runtime.bounded_waits)."""

    def __init__(self):
        self.limit_s: float | None = None
        self.hung: str | None = None

    @property
    def active(self) -> bool:
        """Whether waits go through Runtime._bounded_sync (a bound, or a hang)."""
        return self.limit_s is not None or self.hung is not None

# Guard bytes on each side of a poisoned scratch array (a multiple of 256:
# the array keeps the allocation's alignment), and the bytes they hold, by
# turns from cell to cell: a kernel that reads one past its scratch (a
# search's bound, a table's last entry) gets a large value in some cells and
# zero in others, and a sentinel that works with one fails with the other.
SCRATCH_GUARD_BYTES = 256
SCRATCH_CANARIES = (0x3C, 0x00)


@contextlib.contextmanager
def switched_on(mode):
    """Within: mode (a ScheduleSkew or ScratchPoison, shared by a runtime's
    stream views) is on; nested uses count, so the outermost exit turns it off."""
    mode.depth += 1
    try:
        yield
    finally:
        mode.depth -= 1


class ScheduleSkew:
    """While on (the conformance runner's skewed cases), kernels are built with
    -DHK_SKEW_NS and -DHK_STRAGGLE_NS (common.cuh: warps of a block sleep
    different times at entry and after every barrier, and in the first blocks
    all warps but warp 0 straggle after one barrier each), and launch plans
    made then are kept apart from the plain ones. Shared by a runtime's stream
    views."""

    def __init__(self):
        self.depth = 0
        # a user's kernel: the seed of the warp order at each barrier
        # (Case.skew_seed; schedule_skew.cuh, HK_SKEW_ORDER_SEED)
        self.order_seed: int | None = None

    def defines(self, source: str = "") -> dict[str, str]:
        if not self.depth:
            return {}
        defines = contract.schedule_defines()
        if self.order_seed is not None and user_skew.is_users(source):
            defines["HK_SKEW_ORDER_SEED"] = str(self.order_seed)
        return defines


@dataclass
class GuardedScratch:
    """A poisoned scratch array's guards, read back by Runtime.scratch_overruns:
    `before` and `after` say which sides have SCRATCH_GUARD_BYTES of canary
    (a side flush against unmapped memory has none: a write there faults);
    `ends_zero`: the array's first word must be zero again after the cell
    (a barrier counter its kernel promises to leave as it found it)."""

    owner: object  # keeps the allocation alive until the guards are read
    ptr: int
    nbytes: int
    canary: int
    before: bool = True
    after: bool = True
    ends_zero: bool = False


class ScratchPoison:
    """While on (the conformance runner's cells), every array Runtime.empty
    hands out arrives filled with 0x00 and 0xFF by turns: a kernel may neither
    read scratch it has not written (zeros read as valid keys and counts) nor
    count on it being zeroed (all ones). Each such array also sits between
    SCRATCH_GUARD_BYTES of a canary byte on either side, kept (with the
    array) until Runtime.scratch_overruns reads them back: a kernel that
    writes just before or past its scratch is caught there. A call allocates
    the same arrays in the same order every time, so each cell starts the
    turns one further on: over four cells every array meets both fills and
    both canaries (SCRATCH_CANARIES). In a fenced cell (`fenced`) each array
    is also flush against unmapped memory, before it and after it by turns
    (FencedBuffer): a write or read far outside it, past any guard, faults.
    `exact` (compute-sanitizer memcheck's runs, conformance/sanitize.py): each
    array is instead an allocation of exactly its own bytes, poisoned, with no
    guards, outside histkit's pool: memcheck then reports a read or write one
    element outside it, which guards or a pool's size class would hold and
    hide. Shared by a runtime's stream views."""

    def __init__(self):
        self.depth = 0
        self.cells = 0
        self.turn = 0
        self.exact = False
        self.fenced = False
        self.canary = SCRATCH_CANARIES[0]
        self.guarded: list[GuardedScratch] = []

    def new_cell(self, fenced: bool = False) -> None:
        self.cells += 1
        self.turn = self.cells
        self.fenced = fenced
        self.canary = SCRATCH_CANARIES[self.cells // 2 % 2]

    def next_byte(self) -> int | None:
        if not self.depth:
            return None
        self.turn += 1
        return 0xFF if self.turn % 2 else 0x00

    def fence_at_start(self) -> bool:
        """Which side of the next fenced array is unmapped: by turns, so in
        every fenced cell arrays meet both (whatever their number)."""
        return self.turn // 2 % 2 == 1
