"""A launcher's driver calls, recorded once per shape, for the compiled lane
(histkit.gpu._lane) to replay.

Where method="auto" samples the keys (2^25+ keys over many bins) its
launcher queues a choosing kernel, the partitioned kernel's two passes, a
scan and two gated fast candidates, and allocates seven scratch arrays, in
about 120 us of Python on the H200: the GPU read the keys' first pass 62 us
into a call, having waited for the host since the choice (an event before
each launch against the host's clock). None of it depends on the keys'
values (auto decides on the device; the host reads nothing back), so it can
be worked out once per shape.

record() runs the launcher once against a Recorder: a stand-in for the
runtime that notes the launcher's memsets and launches instead of making
them, and hands out addresses in a region of its own for each role (the
keys, the counts, the first_bad word, the scratch), so every pointer among
the arguments is named by its role and offset. The scratch arrays are laid
out in one block, each at an offset aligned as a device allocation is. The
lane replays the script with the call's pointers: one scratch allocation,
then the driver calls in the launcher's order, from C.

A launcher that asks the runtime for anything else (a read back, a wait, the
stream's kept scratch, whether it is captured) is not recorded: the lane
runs it as it is. The kernels, their geometries and every scalar argument
come from the runtime itself, through the launchers' own plans.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.launch.common import Keys

# The roles of the pointers a script names, in the order the lane lays the
# call's pointers out (histkit.gpu._lane reads these).
KEYS, COUNTS, FIRST_BAD, SCRATCH = range(4)
ROLE_NAMES = ("keys", "counts", "first_bad", "scratch")
# Where the recorded addresses lie: one region of 2^48 bytes per role, far
# above any device address and any scalar a launcher passes (sizes, counts,
# sentinels such as 2^64 - 1 lie outside it).
FAKE_BASE = 0xFA << 56
REGION_BITS = 48
# Scratch offsets are aligned as the driver aligns an allocation's start, so
# a kernel's vector loads of scratch find the alignment they would have.
SCRATCH_ALIGN = 256
# The runtime's members a launcher may read while recorded: its kernels,
# plans and device limits, and the constant zero word (never written, valid
# on every stream). Anything else it asks for makes the launch unrecordable.
PASSED_THROUGH = frozenset({"plan", "kernel", "allow_shared", "max_dynamic_shared",
                            "max_shared_per_block", "resident_blocks", "sm_count",
                            "zero_word", "arch", "device"})


class NotRecordable(Exception):
    """The launcher asked the runtime for something a script cannot replay."""


class Memset(NamedTuple):
    role: int
    offset: int
    byte: int
    nbytes: int


class Launch(NamedTuple):
    """One launch: the kernel's raw handle, its geometry, its arguments as
    integers (a pointer's slot holds 0) and the pointers to fill in
    ((argument index, role, offset) each)."""

    kernel: int
    geometry: object
    args: tuple[int, ...]
    pointers: tuple[tuple[int, int, int], ...]


class Script(NamedTuple):
    scratch_bytes: int
    steps: tuple[Memset | Launch, ...]


def role_address(role: int) -> int:
    """The recorded address of a role's first byte."""
    return FAKE_BASE + (role << REGION_BITS)


class _Address:
    """A DeviceArray's buffer at a recorded address."""

    __slots__ = ("handle",)

    def __init__(self, handle: int):
        self.handle = handle


class Recorder:
    """The runtime a recorded launcher runs against (the module's docstring)."""

    def __init__(self, rt: Runtime, keys_address: int):
        self._rt = rt
        self._starts = {KEYS: keys_address, COUNTS: role_address(COUNTS),
                        FIRST_BAD: role_address(FIRST_BAD), SCRATCH: role_address(SCRATCH)}
        self._scratch_bytes = 0
        self._steps: list[Memset | Launch] = []

    def __getattr__(self, name: str):
        if name in PASSED_THROUGH:
            return getattr(self._rt, name)
        raise NotRecordable(f"the launcher asked the runtime for {name}")

    def empty(self, n: int, dtype, pooled: bool = True) -> DeviceArray:
        dtype = np.dtype(dtype)
        offset = -(-self._scratch_bytes // SCRATCH_ALIGN) * SCRATCH_ALIGN
        self._scratch_bytes = offset + max(1, n * dtype.itemsize)
        return DeviceArray(_Address(self._starts[SCRATCH] + offset), n, dtype)

    def memset(self, ptr: int, byte: int, nbytes: int) -> None:
        role, offset = self._named(ptr)
        if role is None:
            raise NotRecordable("a memset of memory the call does not own")
        self._steps.append(Memset(role, offset, int(byte), int(nbytes)))

    def launch(self, kernel, geometry, *args) -> None:
        values, pointers = [], []
        for index, arg in enumerate(args):
            try:
                value = operator.index(arg)  # as the C path packs it: integers only
            except TypeError:
                raise NotRecordable(f"a launch argument the C path does not pack: "
                                    f"{arg!r}") from None
            role, offset = self._named(value)
            if role is None:
                values.append(value)
            else:
                values.append(0)
                pointers.append((index, role, offset))
        self._steps.append(Launch(self._rt.launch_handle(kernel, geometry), geometry,
                                  tuple(values), tuple(pointers)))

    def _named(self, value: int) -> tuple[int | None, int]:
        """(role, offset from the role's recorded start) of a recorded address;
        (None, value) for anything else."""
        if not isinstance(value, int) or not (
                FAKE_BASE <= value < role_address(len(ROLE_NAMES))):
            return None, value
        role = (value - FAKE_BASE) >> REGION_BITS
        return role, value - self._starts[role]

    def script(self) -> Script:
        return Script(self._scratch_bytes, tuple(self._steps))


def record(rt: Runtime, launcher, dtype, n: int, num_bins: int,
           keys_residue: int = 0) -> Script | None:
    """launcher(rt, keys, num_bins, counts, first_bad)'s driver calls for n
    keys of dtype at an address keys_residue past an aligned one (a launch
    may depend on it: the fast kernel's scalar head), into num_bins int64
    counts; None where it cannot be recorded (NotRecordable)."""
    recorder = Recorder(rt, role_address(KEYS) + keys_residue)
    keys = Keys(role_address(KEYS) + keys_residue, n, np.dtype(dtype))
    counts = DeviceArray(_Address(role_address(COUNTS)), num_bins, np.dtype(np.int64))
    first_bad = DeviceArray(_Address(role_address(FIRST_BAD)), 1, np.dtype(np.uint64))
    try:
        launcher(recorder, keys, num_bins, counts, first_bad)
    except NotRecordable:
        return None
    return recorder.script()
