"""histkit.gpu.recording: a launcher's driver calls recorded with every
pointer named by its role, or refused where a replay could not repeat them."""

import numpy as np
import pytest

from histkit.gpu import recording
from histkit.gpu.geometry import Geometry
from histkit.gpu.recording import COUNTS, FIRST_BAD, KEYS, SCRATCH, Launch, Memset


class Kernel:
    def __init__(self, name):
        self.name = name


class Runtime:
    """What a recorded launcher may read of the runtime, and what it may not."""

    sm_count = 132
    max_shared_per_block = 227 * 1024

    def __init__(self):
        self.asked = []

    def plan(self, shape, make):
        return make()

    def kernel(self, source, name, defines):
        return Kernel(name)

    def launch_handle(self, kernel, geometry):
        self.asked.append(("launch_handle", kernel.name, geometry))
        return hash(kernel.name) & 0xFFFF

    def zero_word(self):
        return type("Word", (), {"ptr": 0x1234})()

    def sync(self, what):
        raise AssertionError("a recorder must not wait")

    def copy_to_host(self, ptr, host):
        raise AssertionError("a recorder must not read back")

    def barrier_scratch(self, words):
        raise AssertionError("a recorder must not hand out the stream's kept scratch")


GEOMETRY = Geometry("k", 4, 128)


def two_arrays_and_a_launch(rt, keys, num_bins, counts, first_bad):
    small = rt.empty(10, np.uint8)
    words = rt.empty(3, np.uint64)
    rt.memset(counts.ptr, 0, num_bins * 8)
    kernel = rt.kernel("x.cu", "k", {})
    rt.launch(kernel, GEOMETRY, keys.ptr, keys.ptr + 8, np.int64(keys.n), np.uint64(2**64 - 1),
              np.int32(-3), small.ptr, words.ptr + 16, counts.ptr, first_bad.ptr,
              rt.zero_word().ptr, rt.sm_count)


def test_scratch_arrays_are_laid_out_in_one_block_at_allocation_aligned_offsets():
    rt = Runtime()
    script = recording.record(rt, two_arrays_and_a_launch, np.int32, 1000, 50)
    assert recording.SCRATCH_ALIGN == 256
    assert script.scratch_bytes == 256 + 3 * 8
    memset, launch = script.steps
    assert memset == Memset(COUNTS, 0, 0, 400)
    assert launch.kernel == hash("k") & 0xFFFF and launch.geometry is GEOMETRY
    assert rt.asked == [("launch_handle", "k", GEOMETRY)]  # its shared memory allowed there
    assert launch.pointers == ((0, KEYS, 0), (1, KEYS, 8), (5, SCRATCH, 0), (6, SCRATCH, 256 + 16),
                               (7, COUNTS, 0), (8, FIRST_BAD, 0))


def test_scalars_and_the_constant_zero_word_stay_as_the_c_path_packs_them():
    launch = recording.record(Runtime(), two_arrays_and_a_launch, np.int32, 1000, 50).steps[1]
    assert isinstance(launch, Launch)
    assert launch.args == (0, 0, 1000, 2**64 - 1, -3, 0, 0, 0, 0, 0x1234, 132)
    assert all(type(arg) is int for arg in launch.args)


def test_the_keys_are_named_from_their_own_address_whatever_their_residue():
    # A launch may depend on the address's residue (the fast kernel's
    # scalar head); the keys' offsets are from the keys' first byte.
    for residue in (0, 4, 12):
        launch = recording.record(Runtime(), two_arrays_and_a_launch, np.int32, 1000, 50,
                                  keys_residue=residue).steps[1]
        assert launch.pointers[:2] == ((0, KEYS, 0), (1, KEYS, 8))


def test_every_recorded_address_lies_above_any_scalar_a_launcher_passes():
    assert recording.role_address(KEYS) > 2**56
    top = recording.role_address(len(recording.ROLE_NAMES))
    assert top < 2**64 - 1  # NO_BAD_KEY and EVERY_KEY stay scalars


def test_values_just_outside_the_recorded_regions_stay_scalars():
    top = recording.role_address(len(recording.ROLE_NAMES))
    below = recording.FAKE_BASE - 1

    def passes_edges(rt, keys, num_bins, counts, first_bad):
        rt.launch(Kernel("k"), GEOMETRY, below, top, top - 1)

    launch = recording.record(Runtime(), passes_edges, np.int32, 100, 10).steps[0]
    assert launch.args == (below, top, 0)
    assert launch.pointers == ((2, SCRATCH, (1 << recording.REGION_BITS) - 1),)


@pytest.mark.parametrize("launcher, why", [
    (lambda rt, keys, n, counts, bad: rt.sync("x"), "a wait"),
    (lambda rt, keys, n, counts, bad: rt.copy_to_host(0, np.empty(1)), "a read back"),
    (lambda rt, keys, n, counts, bad: rt.barrier_scratch(4), "the stream's kept scratch"),
    (lambda rt, keys, n, counts, bad: rt.capturing(), "whether it is captured"),
    (lambda rt, keys, n, counts, bad: rt.zeros(4, np.uint64), "zeroed scratch (unused by auto)"),
    (lambda rt, keys, n, counts, bad: rt.memset(0x5000, 0, 8), "memory it does not own"),
    (lambda rt, keys, n, counts, bad: rt.launch(Kernel("k"), GEOMETRY, 1.5), "a float"),
])
def test_a_launcher_that_asks_what_a_replay_cannot_repeat_is_not_recorded(launcher, why):
    assert recording.record(Runtime(), launcher, np.int32, 100, 10) is None, why


def test_a_launcher_that_fails_for_its_own_reasons_raises_as_it_would_unrecorded():
    def refuses(rt, keys, num_bins, counts, first_bad):
        raise ValueError("too many bins for this kernel")

    with pytest.raises(ValueError, match="too many bins"):
        recording.record(Runtime(), refuses, np.int32, 100, 10)


def test_auto_at_a_sampled_shape_records_the_python_paths_launch_order():
    from histkit.gpu import registry

    class Real(Runtime):
        def resident_blocks(self, kernel, block, shared_bytes):
            return 2

        def allow_shared(self, kernel, nbytes):
            pass

        def max_dynamic_shared(self, kernel):
            return self.max_shared_per_block

    script = recording.record(Real(), registry.serving("histogram", "auto").run, np.int32,
                              1 << 26, 1 << 20)
    names = [step.geometry.kernel.split("[")[0] if isinstance(step, Launch) else "memset"
             for step in script.steps]
    assert names == ["auto_choice", "partition_tiles", "memset", "scan_tile_sums", "scan_tiles",
                     "scan_tiles", "count_partitions", "fast_histogram", "fast_histogram"]
    assert script.steps[2] == Memset(COUNTS, 0, 0, (1 << 20) * 8)
    # The first pass's low bins (2 bytes a key) are among the scratch.
    assert script.scratch_bytes > 2 * (1 << 26)
