"""The conformance harness's guards, on a pretend device: Runtime's poisoned
scratch and the runner's output guards, with the driver calls they make
(allocate, memset, copy back, copy in) served from host memory. The GPU runs
the same code; here it is checked without one: a write just outside any
array the suite hands a kernel must be named, and nothing else."""

import ctypes

import numpy as np
import pytest

from histkit.conformance.cases import GUARD, Case
from histkit.conformance.runner import CaseRun, GuardViolation
from histkit.gpu.device import (
    SCRATCH_CANARIES,
    SCRATCH_GUARD_BYTES,
    DeviceArray,
    Runtime,
    ScheduleSkew,
    ScratchPoison,
)
from histkit.gpu.verdict import GUARD_SLOTS, MARGIN, VerdictBoard


class HostMemory:
    """Bytes standing for device memory; a buffer is (address, handle)."""

    class Buffer:
        def __init__(self, handle: int):
            self.handle = handle

    def __init__(self, size: int = 1 << 22):
        self.bytes = np.full(size, 0x77, np.uint8)  # what unallocated memory holds
        self.next = 4096

    def allocate(self, nbytes: int) -> "HostMemory.Buffer":
        address = self.next
        self.next += -(-max(1, nbytes) // 256) * 256 + 256  # 256-aligned, with a gap
        assert self.next < len(self.bytes)
        return self.Buffer(address)


@pytest.fixture
def rt(monkeypatch):
    memory = HostMemory()
    runtime = Runtime.__new__(Runtime)  # no device: only the methods under test
    runtime.poison, runtime.skew, runtime.memory = ScratchPoison(), ScheduleSkew(), memory

    def empty(n, dtype, pooled=True):
        dtype = np.dtype(dtype)
        return DeviceArray(memory.allocate(n * dtype.itemsize), n, dtype)

    def memset(ptr, byte, nbytes):
        memory.bytes[ptr:ptr + nbytes] = byte

    def copy_to_host(ptr, host):
        host.view(np.uint8).reshape(-1)[:] = memory.bytes[ptr:ptr + host.nbytes]
        return host

    def to_device(host):
        host = np.ascontiguousarray(host)
        array = runtime.empty(len(host), host.dtype)
        memory.bytes[array.ptr:array.ptr + host.nbytes] = host.view(np.uint8).reshape(-1)
        return array

    runtime._empty, runtime.memset = empty, memset
    runtime.copy_to_host, runtime.to_device = copy_to_host, to_device
    runtime.verdicts = VerdictBoard(HostBoardMemory(memory), slot_count=64)
    return runtime


class HostBoardMemory:
    """The verdict board's storage on HostMemory; its flags in real host memory."""

    def __init__(self, memory):
        self.memory = memory
        self.flags = None

    def device(self, nbytes):
        buffer = self.memory.allocate(nbytes)
        return buffer, buffer.handle

    def fill(self, ptr, byte, nbytes):
        self.memory.bytes[ptr:ptr + nbytes] = byte

    def mapped(self, nbytes):
        self.flags = ctypes.create_string_buffer(nbytes)
        return ctypes.addressof(self.flags), 0xF000_0000

    def write_global(self, module, name, data):
        return True


def test_poisoned_scratch_arrives_filled_between_canaries(rt):
    with rt.poisoned_scratch():
        first, second = rt.empty(10, np.uint32), rt.empty(3, np.uint64)
    memory = rt.memory.bytes
    fills = {memory[first.ptr], memory[second.ptr]}
    assert set(memory[first.ptr:first.ptr + 40]) | set(memory[second.ptr:second.ptr + 24]) \
        == fills == {0x00, 0xFF}  # one array all zeros, the other all ones
    canary = rt.poison.canary
    for array, nbytes in ((first, 40), (second, 24)):
        assert set(memory[array.ptr - SCRATCH_GUARD_BYTES:array.ptr]) == {canary}
        after = array.ptr + nbytes
        assert set(memory[after:after + SCRATCH_GUARD_BYTES]) == {canary}
    assert first.ptr % 256 == 0  # the guard keeps the allocation's alignment
    assert rt.scratch_overruns() == []


def test_over_four_cells_each_array_meets_both_fills_and_both_canaries(rt):
    # a call allocates the same arrays in the same order in every cell
    seen = set()
    for _cell in range(4):
        with rt.poisoned_scratch():
            array = rt.empty(4, np.uint64)
        after = array.ptr + 32
        seen.add((rt.memory.bytes[array.ptr], rt.memory.bytes[after]))
        assert rt.scratch_overruns() == []
    assert seen == {(fill, canary) for fill in (0x00, 0xFF) for canary in SCRATCH_CANARIES}


@pytest.mark.parametrize("offset, says", [(-1, "1 bytes before the start"),
                                          (-SCRATCH_GUARD_BYTES, "256 bytes before"),
                                          (40, "at byte 40"), (40 + 255, "at byte 295")])
def test_a_write_just_outside_scratch_is_named_once(rt, offset, says):
    with rt.poisoned_scratch():
        array = rt.empty(10, np.uint32)
    rt.memory.bytes[array.ptr + offset] = rt.poison.canary ^ 0xFF
    found = rt.scratch_overruns()
    assert len(found) == 1 and says in found[0] and "40-byte scratch" in found[0]
    assert rt.scratch_overruns() == []


def test_outside_a_conformance_cell_scratch_is_plain(rt):
    array = rt.empty(10, np.uint32)
    assert set(rt.memory.bytes[array.ptr:array.ptr + 40]) == {0x77}  # untouched
    assert rt.poison.guarded == [] and rt.scratch_overruns() == []


@pytest.fixture
def case_run(rt):
    with rt.poisoned_scratch():
        yield CaseRun(rt, Case("uniform", 100, 16, seed=1))


@pytest.mark.parametrize("element, says", [(-1, "before the start"), (-GUARD, "before the start"),
                                           (20, "past the end"), (20 + GUARD - 1, "past the end")])
def test_an_output_write_just_outside_is_a_guard_violation(case_run, element, says):
    out = case_run.output(20, np.uint64, fill=0xA5)
    case_run.rt.memory.bytes[out.ptr + element * 8] = 0
    with pytest.raises(GuardViolation, match=says):
        case_run.read(out, fill=0xA5)


def test_an_output_read_back_is_its_elements_and_its_guards_hold(case_run):
    out = case_run.output(20, np.uint64, fill=0)
    values = np.arange(20, dtype=np.uint64) * 3
    case_run.rt.memory.bytes[out.ptr:out.ptr + 160] = values.view(np.uint8)
    np.testing.assert_array_equal(case_run.read(out), values)


def test_a_guarded_input_reads_back_and_names_a_write_before_it(case_run):
    counts = case_run.guarded_input(np.arange(50, dtype=np.uint64), 0x5A)
    np.testing.assert_array_equal(case_run.read(counts, fill=0x5A), np.arange(50))
    case_run.rt.memory.bytes[counts.ptr - 3] = 0
    with pytest.raises(GuardViolation, match="before the start"):
        case_run.read(counts, fill=0x5A)


def test_the_keys_sit_between_guard_keys_that_are_bad_keys(case_run):
    keys = case_run.keys
    stored = case_run.rt.copy_to_host(keys.ptr, np.empty(keys.n + GUARD, keys.dtype))
    np.testing.assert_array_equal(stored[:keys.n], case_run.host)
    assert set(stored[keys.n:]) == {16}  # K: outside [0, K)


def test_a_user_kernel_without_a_skewed_build_is_a_skip_not_a_failure(case_run):
    from histkit.gpu.errors import SkewUnavailable
    from histkit.gpu.registry import DEFAULT, Kernel

    def launcher(*args, **kwargs):
        raise SkewUnavailable("the schedule skew cannot be added to my.cu: too much shared data")

    kernel = Kernel("my.cu", "histogram", "/home/me/my.cu", ("histogram",), launcher)
    cell, _ = case_run.judge(kernel, DEFAULT)
    assert cell.status == "skip" and "too much shared data" in cell.detail


def test_nested_switches_stay_on_until_the_outermost_exits(rt):
    with rt.skewed_schedule():
        with rt.skewed_schedule():
            pass
        assert rt.skew.defines()  # the inner exit leaves the outer one on
        with rt.poisoned_scratch():
            with rt.poisoned_scratch():
                pass
            assert rt.poison.next_byte() is not None
    assert rt.skew.defines() == {} and rt.poison.next_byte() is None


def test_poisoned_scratch_allocates_its_bytes_and_both_guards(rt):
    sizes = []
    plain = rt._empty

    def recording(n, dtype, pooled=True):
        sizes.append(n * np.dtype(dtype).itemsize)
        return plain(n, dtype, pooled)

    rt._empty = recording
    with rt.poisoned_scratch():
        rt.empty(100, np.uint32)
    assert sizes == [400 + 2 * SCRATCH_GUARD_BYTES]


@pytest.mark.parametrize("fenced", [False, True])
def test_memchecks_scratch_is_exactly_its_bytes_poisoned_and_unguarded(rt, fenced):
    # under compute-sanitizer memcheck (sanitize.py) a read one element past
    # scratch must leave its allocation: no guards, no size class, no fence
    asked = []
    plain = rt._empty

    def recording(n, dtype, pooled=True):
        asked.append((n, np.dtype(dtype), pooled))
        return plain(n, dtype, pooled)

    rt._empty, rt.poison.exact = recording, True
    with rt.poisoned_scratch():
        rt.poison.new_cell(fenced)
        scratch = rt.empty(100, np.uint32)
    assert asked == [(100, np.dtype(np.uint32), False)]
    first = rt.copy_to_host(scratch.ptr, np.empty(400, np.uint8))
    assert first[0] in (0x00, 0xFF) and (first == first[0]).all()  # poisoned all through
    guard = rt.poison.guarded[-1]
    assert (guard.ptr, guard.nbytes, guard.before, guard.after) == (scratch.ptr, 400, False,
                                                                      False)
    rt.memset(scratch.ptr + 400, 0x12, 4)  # outside: memcheck's to see, not the guards'
    assert rt.scratch_overruns() == []


def test_the_memcheck_run_asks_for_exact_scratch_and_the_others_keep_guards(monkeypatch):
    from histkit.conformance import runner, sanitize
    from histkit.gpu import device

    seen = {}
    pretend = Runtime.__new__(Runtime)
    pretend.poison = ScratchPoison()
    monkeypatch.setattr(device, "runtime", lambda: pretend)

    class Report:
        passed = True

    def conformance(console, **options):
        seen[options["json_path"]] = pretend.poison.exact
        return Report()

    monkeypatch.setattr(runner, "run_conformance", conformance)
    for tool in ("racecheck", "memcheck"):
        pretend.poison.exact = False
        assert sanitize.main(["sanitize", tool, "fast"]) == 0
    assert seen == {"sanitize-racecheck.json": False, "sanitize-memcheck.json": True}


def test_kept_barrier_scratch_in_a_cell_is_poisoned_guarded_and_must_end_zero(rt):
    # resident_sort's arrivals word: outside a cell the stream keeps one
    # scratch whose first word is zero; in a cell it is poisoned scratch like
    # any other (the words past the first arrive all ones or all zeros), and
    # a kernel that leaves the first word set is named
    rt.handle = 0
    with rt.poisoned_scratch():
        scratch = rt.barrier_scratch(4)
    memory = rt.memory.bytes
    assert set(memory[scratch.ptr:scratch.ptr + 8]) == {0}
    assert len(set(memory[scratch.ptr + 8:scratch.ptr + 32])) == 1
    assert set(memory[scratch.ptr - SCRATCH_GUARD_BYTES:scratch.ptr]) == {rt.poison.canary}
    memory[scratch.ptr] = 1
    found = rt.scratch_overruns()
    assert len(found) == 1 and "left 1 in the first word" in found[0]


class HostFence:
    """A FencedBuffer standing in on host memory: exactly nbytes mapped (so
    either placement starts where the mapping starts), the bytes on both
    sides recorded as unmapped."""

    def __init__(self, memory, nbytes, at_start, made):
        self.handle = memory.allocate(nbytes).handle
        self.unmapped = (self.handle - 1, self.handle + nbytes)  # first byte out, each side
        self.at_start = at_start
        made.append(self)


def test_fenced_cells_place_scratch_flush_against_unmapped_memory_by_turns(rt, monkeypatch):
    from histkit.gpu.device import allocation

    made = []
    monkeypatch.setattr(allocation, "FencedBuffer",
                        lambda _id, nbytes, at_start: HostFence(rt.memory, nbytes, at_start, made))
    rt.device = type("Device", (), {"device_id": 0})()
    with rt.poisoned_scratch(fenced=True):
        arrays = [rt.empty(10, np.uint32) for _ in range(4)]
    assert sorted(f.at_start for f in made) == [False, False, True, True]
    memory, guard = rt.memory.bytes, SCRATCH_GUARD_BYTES
    for array, fence in zip(arrays, made, strict=True):
        if fence.at_start:  # unmapped memory right before it; a guard after
            assert array.ptr == fence.unmapped[0] + 1
            assert set(memory[array.ptr + 40:array.ptr + 40 + guard]) == {rt.poison.canary}
        else:  # a guard before it; unmapped memory right after
            assert array.ptr + 40 == fence.unmapped[1]
            assert set(memory[array.ptr - guard:array.ptr]) == {rt.poison.canary}
    assert rt.scratch_overruns() == []
    # the side with a guard is read back (the other one faults on the GPU)
    for array, fence in zip(arrays[:2], made[:2], strict=True):
        memory[array.ptr + 40 if fence.at_start else array.ptr - 1] ^= 0xFF
    with rt.poisoned_scratch(fenced=True):
        array = rt.empty(10, np.uint32)
    fence = made[-1]
    memory[array.ptr + 40 if fence.at_start else array.ptr - 1] ^= 0xFF
    (found,) = rt.scratch_overruns()
    assert ("past the end" if fence.at_start else "before the start") in found


def test_unfenced_cells_keep_both_guards(rt):
    with rt.poisoned_scratch(fenced=False):
        array = rt.empty(10, np.uint32)
    rt.memory.bytes[array.ptr - 1] ^= 0xFF
    rt.memory.bytes[array.ptr + 40] ^= 0xFF
    assert len(rt.scratch_overruns()) == 2


def _host_scan(kept_bits: int):
    """A scan "kernel" on the pretend device, its offsets kept to kept_bits."""
    def run(rt, counts_ptr, n, out_ptr, keep_alive):
        counts = rt.copy_to_host(counts_ptr, np.empty(n, np.uint64))
        offsets = np.zeros(n, np.uint64)
        np.cumsum(counts[:-1], out=offsets[1:])
        offsets &= np.uint64((1 << kept_bits) - 1)
        rt.memory.bytes[out_ptr:out_ptr + 8 * n] = offsets.view(np.uint8)
        return []
    return run


@pytest.mark.parametrize("kept_bits, status", [(64, "pass"), (32, "FAIL")])
def test_a_scan_count_case_scans_its_counts_and_fails_offsets_kept_in_32_bits(rt, kept_bits,
                                                                             status):
    from histkit.gpu.registry import DEFAULT, Kernel

    with rt.poisoned_scratch():
        run = CaseRun(rt, Case.counts(3_000, seed=1))
        assert run.keys is None  # counts only: no keys uploaded
        scan = Kernel("host-scan", "scan", "host.cu", ("scan",), _host_scan(kept_bits),
                      takes_grid=False)
        cell, _ = run.judge(scan, DEFAULT)
        histogram = Kernel("host-histogram", "histogram", "host.cu", ("histogram",), None)
        skipped, _ = run.judge(histogram, DEFAULT)
    assert cell.status == status, cell.detail
    assert skipped.status == "skip" and "scan's counts" in skipped.detail


# --- a stable sort past 2^31 keys: outputs read a slice at a time --------------------

def _sorting_kernel(memory, slip=None):
    """A stable-sort launcher on host memory; slip(keys, index) may spoil its answer."""
    from histkit.gpu.registry import Kernel

    def run(rt, keys, num_bins, out_keys, out_index, slot, keep_alive, grid=None,
            between=None):
        assert between()
        host = memory.bytes[keys.ptr:keys.ptr + keys.n * keys.dtype.itemsize].view(keys.dtype)
        order = np.argsort(host, kind="stable")
        sorted_keys, index = host[order].copy(), order.astype(np.int64)
        past = slip(sorted_keys, index) if slip else 0
        memory.bytes[out_keys.ptr:out_keys.ptr + keys.n * keys.dtype.itemsize] = \
            sorted_keys.view(np.uint8)
        memory.bytes[out_index.ptr:out_index.ptr + 8 * keys.n + past] = \
            np.concatenate([index, np.zeros(1, np.int64)]).view(np.uint8)[:8 * keys.n + past]
        return []

    return Kernel("sorts.cu", "stable-sort", "sorts.cu", ("sort",), run)


@pytest.fixture
def closed_form_run(rt, monkeypatch):
    """A round-robin case taken as past 2^31 (the threshold lowered), read back
    through a recorder of every copy's size."""
    from histkit.conformance import cases, checks

    monkeypatch.setattr(cases, "HUGE", 1000)
    monkeypatch.setattr(checks, "SORT_SLICE", 256)
    copies = []
    plain = rt.copy_to_host
    rt.copy_to_host = lambda ptr, host: copies.append(host.nbytes) or plain(ptr, host)
    with rt.poisoned_scratch():
        run = CaseRun(rt, Case("round-robin", 3001, 7, seed=1, dtype="uint8"))
    assert run.expected.round_robin and run.case.sorted_in_closed_form
    run.copies = copies
    return run


def test_a_stable_sort_past_2_31_is_judged_from_slices_never_whole_on_the_host(closed_form_run):
    from histkit.gpu.registry import DEFAULT

    cell, _ = closed_form_run.judge(_sorting_kernel(closed_form_run.rt.memory), DEFAULT)
    assert cell.status == "pass", cell.detail
    assert max(closed_form_run.copies) <= 256 * 8  # a slice of int64 indices at most


def test_a_stable_sort_past_2_31_that_misplaces_an_index_fails_by_position(closed_form_run):
    from histkit.gpu.registry import DEFAULT

    def swap_two(keys, index):
        index[[1500, 1501]] = index[[1501, 1500]]
        return 0

    kernel = _sorting_kernel(closed_form_run.rt.memory, swap_two)
    cell, _ = closed_form_run.judge(kernel, DEFAULT)
    assert cell.status == "FAIL" and "original indices differ: 2 differing; first at 1500" in \
        cell.detail


def test_a_stable_sort_past_2_31_writing_past_its_indices_is_a_guard_violation(closed_form_run):
    from histkit.gpu.registry import DEFAULT

    kernel = _sorting_kernel(closed_form_run.rt.memory, lambda keys, index: 1)
    cell, _ = closed_form_run.judge(kernel, DEFAULT)
    assert cell.status == "FAIL" and "wrote past the end of a 3001-element output" in cell.detail


# --- a fenced input's address space, on a pretend virtual memory API ----------------

GRANULE = 2 << 20


class PretendVirtualMemory:
    """The driver's virtual memory calls, recorded: one reservation, one mapping."""

    def __init__(self):
        self.reserved = self.mapped = None
        self.calls = []

    def driver(self):
        from types import SimpleNamespace

        from histkit.gpu.device import bindings

        ok = bindings.SUCCESS

        def reserve(size, alignment, address, flags):
            self.reserved = (0x7F00_0000_0000, size)
            return ok, self.reserved[0]

        def map_(start, size, offset, memory, flags):
            self.mapped = (start, size)
            return (ok,)

        def record(name, result=(ok,)):
            return lambda *args: self.calls.append((name, *args)) or result

        anything = SimpleNamespace(CU_MEM_ALLOCATION_TYPE_PINNED=1, CU_MEM_LOCATION_TYPE_DEVICE=1,
                                   CU_MEM_ALLOC_GRANULARITY_MINIMUM=0,
                                   CU_MEM_ACCESS_FLAGS_PROT_READWRITE=3)
        prop = lambda: SimpleNamespace(type=0, location=SimpleNamespace(type=0, id=0),  # noqa: E731
                                       flags=0)
        return SimpleNamespace(
            CUmemAllocationProp=prop, CUmemAccessDesc=prop, CUmemAllocationType=anything,
            CUmemLocationType=anything, CUmemAllocationGranularity_flags=anything,
            CUmemAccess_flags=anything,
            cuMemGetAllocationGranularity=lambda prop, flags: (ok, GRANULE),
            cuMemCreate=lambda size, prop, flags: (ok, "memory"),
            cuMemAddressReserve=reserve, cuMemMap=map_, cuMemSetAccess=record("access"),
            cuMemUnmap=record("unmap"), cuMemAddressFree=record("free"),
            cuMemRelease=record("release"), cuCtxSynchronize=record("sync"))


@pytest.mark.parametrize("nbytes", [1, GRANULE - 1, GRANULE, GRANULE + 1, 5 * GRANULE + 3])
@pytest.mark.parametrize("at_start", [False, True])
def test_a_fenced_input_is_flush_against_unmapped_space_that_spans_it_on_both_sides(
        monkeypatch, nbytes, at_start):
    # One element past the input (or before it, at_start) must be unmapped; so
    # must an access a whole input or FENCE_GRANULES granules away.
    from histkit.gpu import device
    from histkit.gpu.device import bindings

    memory = PretendVirtualMemory()
    monkeypatch.setattr(bindings, "driver", memory.driver())
    fenced = device.FencedBuffer(0, nbytes, at_start=at_start)
    (base, reserved), (start, mapped) = memory.reserved, memory.mapped
    assert mapped == -(-nbytes // GRANULE) * GRANULE  # whole granules, no more
    assert start <= fenced.handle and fenced.handle + nbytes <= start + mapped
    if at_start:
        assert fenced.handle == start
    else:
        assert fenced.handle + nbytes == start + mapped
    fence = max(device.FENCE_GRANULES * GRANULE, mapped)
    assert start - base >= fence and base + reserved - (start + mapped) >= fence
    del fenced  # freed: what was mapped unmapped, what was reserved given back
    assert ("unmap", start, mapped) in memory.calls and ("free", base, reserved) in memory.calls
    assert ("release", "memory") in memory.calls


# --- which cells a case runs, skips, or fails for refusing it -------------------------

class Ran(Exception):
    """Raised by a pretend row's launcher: the cell ran it."""


def _runs(*args, **kwargs):
    raise Ran(kwargs.get("grid"))


def _refuses(*args, **kwargs):
    from histkit.gpu.errors import UnsupportedShape

    raise UnsupportedShape("pretend: this shape is not supported; details")


def pretend_row(kind="histogram", run=_runs, **more):
    from histkit.gpu.registry import Kernel

    return Kernel("pretend", kind, "pretend.cu", ("k",), run, **more)


def case_run_of(rt, case):
    with rt.poisoned_scratch():
        return CaseRun(rt, case)


def test_a_fenced_cases_outputs_start_against_unmapped_memory_and_keep_their_tail_guard(rt):
    # On a GPU the bytes before such an output are unmapped: a kernel touching
    # them faults, even with an access no guard could see (an atomic adding 0).
    memory, made = rt.memory, []

    def fenced_at_start(n, dtype):
        dtype = np.dtype(dtype)
        buffer = memory.allocate(n * dtype.itemsize)
        made.append((buffer.handle, n))
        return DeviceArray(buffer, n, dtype)

    rt.fenced_at_start = fenced_at_start
    rt.fenced_copy = lambda host, at_start=False: rt.to_device(host)
    run = case_run_of(rt, Case("uniform", 100, 16, seed=1, fenced=True))
    out = run.output(20, np.uint64, fill=0xA5)
    assert made == [(out.ptr, 20 + GUARD)]  # flush at the buffer's start, a guard after
    memory.bytes[out.ptr - 8:out.ptr] = 0  # not the output's: never read back as a guard
    assert (run.read(out, fill=0xA5).view(np.uint8) == 0xA5).all()
    memory.bytes[out.ptr + 20 * 8] = 0
    with pytest.raises(GuardViolation, match="past the end"):
        run.read(out, fill=0xA5)
    with pytest.raises(GuardViolation, match="past the end"):
        run.read_in_slices(out, fill=0xA5)


@pytest.mark.parametrize("at_start", [False, True])
def test_a_fenced_cases_keys_are_placed_against_unmapped_memory_at_the_end_the_case_names(
        rt, at_start):
    placed = []

    def fenced_copy(host, at_start=False):
        placed.append(at_start)
        return rt.to_device(host)

    rt.fenced_copy = fenced_copy
    case = Case("uniform", 100, 16, seed=1, fenced=True, fenced_at_start=at_start)
    run = case_run_of(rt, case)
    assert placed == [at_start] and run.keys.ptr in run.fenced
    assert case.name.endswith("/fenced-at-start" if at_start else "/fenced")


def test_a_refusal_the_rows_rule_does_not_allow_fails_and_one_it_allows_is_a_skip(rt):
    from histkit.gpu.registry import DEFAULT

    run = case_run_of(rt, Case("uniform", 100, 16, seed=1))
    cell, _ = run.judge(pretend_row(run=_refuses), DEFAULT)
    assert cell.status == "FAIL" and "refused a case it must run" in cell.detail
    allowed = pretend_row(run=_refuses, may_refuse=lambda rt, n, k, dtype, options: True)
    cell, _ = run.judge(allowed, DEFAULT)
    assert cell.status == "skip" and cell.detail == "pretend: this shape is not supported"


def test_int32_indices_may_be_refused_only_past_2_31_keys():
    from histkit.conformance.runner import refusal_allowed
    from histkit.gpu.registry import DEFAULT, INT32_INDEX

    row = pretend_row("stable-sort")
    assert refusal_allowed(None, row, INT32_INDEX, Case("uniform", 2**31 + 1, 16))
    assert not refusal_allowed(None, row, INT32_INDEX, Case("uniform", 2**31, 16))
    assert not refusal_allowed(None, row, DEFAULT, Case("uniform", 2**31 + 1, 16))


def test_a_forced_grid_runs_a_row_that_takes_one_and_skips_one_of_fixed_geometry(rt):
    from histkit.gpu.registry import DEFAULT

    run = case_run_of(rt, Case("uniform", 100, 16, seed=1, grid=3))
    with pytest.raises(Ran, match="3"):
        run.judge(pretend_row(), DEFAULT)
    cell, _ = run.judge(pretend_row(takes_grid=False), DEFAULT)
    assert cell.status == "skip" and "forced grid" in cell.detail


def test_a_bad_key_case_runs_every_row_that_reads_keys_and_skips_a_scan(rt):
    from histkit.gpu.registry import DEFAULT

    run = case_run_of(rt, Case("uniform", 100, 16, seed=1, bad="first"))
    for kind in ("histogram", "racy-histogram", "privatized", "sort", "stable-sort"):
        with pytest.raises(Ran):
            run.judge(pretend_row(kind), DEFAULT)
    cell, _ = run.judge(pretend_row("scan"), DEFAULT)
    assert cell.status == "skip" and "do not check keys" in cell.detail


def test_a_variant_is_skipped_only_between_its_limit_and_the_huge_cases(rt, monkeypatch):
    from histkit.conformance import runner
    from histkit.gpu.registry import DEFAULT, Variant

    run = case_run_of(rt, Case("uniform", 100, 16, seed=1))
    variant = Variant("narrow", {}, "a pretend variant")
    with pytest.raises(Ran):
        run.judge(pretend_row(), variant)  # 100 keys: under VARIANT_MAX_N
    monkeypatch.setattr(runner, "VARIANT_MAX_N", 99)
    cell, _ = run.judge(pretend_row(), variant)
    assert cell.status == "skip" and "variants reach their paths at small N" in cell.detail
    with pytest.raises(Ran):
        run.judge(pretend_row(), DEFAULT)  # the default column runs at every N
    monkeypatch.setattr(runner, "HUGE", 100)
    with pytest.raises(Ran):
        run.judge(pretend_row(), variant)  # past HUGE, every column runs


@pytest.mark.parametrize("lanes,limit_name", [(32, "ONE_WARP_MAX_N"), (8, "NARROW_WAVE_MAX_N")])
def test_a_one_warp_wave_kernel_is_skipped_only_past_its_lanes_limit(rt, monkeypatch, lanes,
                                                                       limit_name):
    from histkit.conformance import runner
    from histkit.gpu.registry import Variant

    run = case_run_of(rt, Case("uniform", 100, 16, seed=1))
    variant = Variant("" if lanes == 32 else "lanes", {"lanes": lanes}, "")
    monkeypatch.setattr(runner, limit_name, 100)
    with pytest.raises(Ran):
        run.judge(pretend_row("wave"), variant)  # N = the limit: still run
    monkeypatch.setattr(runner, limit_name, 99)
    cell, _ = run.judge(pretend_row("wave"), variant)
    assert cell.status == "skip" and "only slow" in cell.detail


# --- histogram counts arrive poisoned: a launcher must leave exact counts ----------------

def _host_histogram(memory, zeroes: bool):
    """A histogram launcher on host memory that counts exactly, and either
    stores its counts (zeroes) or adds them into what the buffer held."""
    from histkit.gpu.geometry import Geometry

    def run(rt, keys, num_bins, hist, first_bad, grid=None):
        host = memory.bytes[keys.ptr:keys.ptr + keys.n * keys.dtype.itemsize].view(keys.dtype)
        counts = np.bincount(host, minlength=num_bins).astype(np.uint64)
        window = memory.bytes[hist.ptr:hist.ptr + 8 * num_bins].view(np.uint64)
        window[:] = counts if zeroes else window + counts
        return Geometry("host_histogram", 1, 32)

    return run


@pytest.mark.parametrize("zeroes, status", [(True, "pass"), (False, "FAIL")],
                         ids=["stores-its-counts", "adds-into-unzeroed-counts"])
def test_a_histogram_launcher_that_adds_into_counts_it_never_zeroed_fails(rt, zeroes, status):
    # the public calls hand launchers uninitialised counts: the suite's are poisoned
    from histkit.gpu.registry import DEFAULT, Kernel

    with rt.poisoned_scratch():
        run = CaseRun(rt, Case("uniform", 3_000, 16, seed=1))
        kernel = Kernel("host-histogram", "histogram", "host.cu", ("histogram",),
                        _host_histogram(rt.memory, zeroes))
        cell, _ = run.judge(kernel, DEFAULT)
    assert cell.status == status, cell.detail


# --- the verdict board in a cell: histkit's kernels flag their bad keys -------

def noting_kernel(rt, flag=True, touch=0):
    """A histogram launcher that counts the keys exactly and notes the first
    bad one as common.cuh's hk_note_bad_key does (flag=False: without
    flagging it; touch: also writes the word that many words off)."""

    def run(rt_, keys, num_bins, hist, first_bad, grid=None):
        host = rt.copy_to_host(keys.ptr, np.empty(keys.n, keys.dtype))
        valid = host[(host >= 0) & (host < num_bins)]
        counts = np.bincount(valid, minlength=num_bins).astype(np.uint64)
        rt.memory.bytes[hist.ptr:hist.ptr + 8 * num_bins] = counts.view(np.uint8)
        bad = np.flatnonzero((host < 0) | (host >= num_bins))
        board = rt.verdicts
        if bad.size:
            word = np.array([bad[0]], np.uint64).view(np.uint8)
            rt.memory.bytes[first_bad.ptr:first_bad.ptr + 8] = word
            slot = (first_bad.ptr - board.slots) // 8
            if flag and 0 <= slot < board.slot_count:
                board._flags[MARGIN + slot] = 1
        if touch:
            rt.memory.bytes[first_bad.ptr + 8 * touch] = 0
        from histkit.gpu.geometry import Geometry
        return Geometry("noting", 1, 32)

    return run


def histkit_kernel(run, publishes=True):
    from histkit.gpu.registry import Kernel

    return Kernel("mine", "histogram", "mine.cu", ("mine",), run, publishes_verdict=publishes)


@pytest.fixture
def bad_case(rt):
    def make():
        with rt.poisoned_scratch():
            return CaseRun(rt, Case("uniform", 100, 16, seed=1, bad="several"))
    return make


def test_histkit_kernels_are_judged_on_the_board_in_turn_and_pass_when_they_flag(rt, bad_case):
    from histkit.gpu.registry import DEFAULT

    positions = []
    for _ in range(3):
        run = bad_case()
        cell, _ = run.judge(histkit_kernel(noting_kernel(rt)), DEFAULT)
        positions.append(run.judged)
        assert cell.status == "pass", cell.detail
    assert positions == [63, 64, -1]  # the last slot, just past it, just before the slots


def test_a_bad_key_reported_but_not_flagged_on_the_board_fails(rt, bad_case):
    from histkit.gpu.registry import DEFAULT

    cell, _ = bad_case().judge(histkit_kernel(noting_kernel(rt, flag=False)), DEFAULT)
    assert cell.status == "FAIL" and "without flagging it" in cell.detail


def test_a_flag_set_for_a_word_just_outside_the_slots_fails(rt, bad_case):
    from histkit.gpu.registry import DEFAULT

    def flags_anything(rt_, keys, num_bins, hist, first_bad, grid=None):
        geometry = noting_kernel(rt)(rt_, keys, num_bins, hist, first_bad, grid)
        rt.verdicts._flags[MARGIN + (first_bad.ptr - rt.verdicts.slots) // 8] = 1  # no range test
        return geometry

    cells = [bad_case().judge(histkit_kernel(flags_anything), DEFAULT)[0] for _ in range(3)]
    assert [c.status for c in cells] == ["pass", "FAIL", "FAIL"]
    assert all("just outside its slots" in c.detail for c in cells[1:])


@pytest.mark.parametrize("touch, says", [(1, "1 word(s) past"), (-GUARD_SLOTS, "before")])
def test_a_write_beside_the_boards_first_bad_word_is_named(rt, bad_case, touch, says):
    from histkit.gpu.registry import DEFAULT

    cell, _ = bad_case().judge(histkit_kernel(noting_kernel(rt, touch=touch)), DEFAULT)
    assert cell.status == "FAIL" and says in cell.detail


def test_a_users_kernel_gets_a_guarded_word_off_the_board(rt, bad_case):
    from histkit.gpu.registry import DEFAULT

    run = bad_case()
    cell, _ = run.judge(histkit_kernel(noting_kernel(rt, flag=False), publishes=False), DEFAULT)
    assert cell.status == "pass" and run.judge_word is None
