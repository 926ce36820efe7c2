"""The Python side of the compiled lane (histkit.gpu._lane): the lane is made
per runtime, handed each framework's module on its first call, and calls back
here for what it cannot do in C: a shape's plan (one launch) or its recorded
launches (histkit.gpu.recording), a sort's launcher, and a bad key's error.
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np

from histkit.gpu import recording, registry
from histkit.gpu._arrays import framework_of, read_in_place, torch_dtypes
from histkit.gpu._calls import Call, Deferred, allocate, raise_noted_bad_key
from histkit.gpu.device import Runtime, runtime
from histkit.gpu.device import check as check_driver_result
from histkit.gpu.launch.common import Keys
from histkit.gpu.launch.histogram import VECTOR_BYTES, vector_head
from histkit.oracles._inputs import MAX_BINS

# (runtime, its lane): the lane is made on the first CuPy or PyTorch call of a
# runtime (None where it cannot be: no C path, or the extension not built),
# and handed each framework's module on its first call.
_LANE: list = [None, None]
# The frameworks whose keys the lane takes.
LANE_FRAMEWORKS = ("cupy", "torch")


def lane_for(rt: Runtime, framework: str):
    """rt's compiled lane (histkit.gpu._lane) serving framework, or None."""
    if _LANE[0] is not rt:
        _LANE[:] = [rt, _make_lane(rt)]
    lane = _LANE[1]
    if lane is not None and framework not in lane.served:
        # the caller's keys are of this framework: its module is imported
        module = sys.modules[framework]
        if framework == "cupy":
            lane.serve_cupy(module)
        else:  # the integer dtypes alone: the lane takes keys
            lane.serve_torch(module, {torch_dtype: dtype for torch_dtype, dtype
                                      in torch_dtypes(module).items() if dtype.kind in "iu"})
    return lane


@contextlib.contextmanager
def python_path_only():
    """Within: every call takes the Python path, the compiled lane off (for
    A/B measurements of the lane)."""
    saved = _LANE[:]
    _LANE[:] = [runtime(), None]
    try:
        yield
    finally:
        _LANE[:] = saved


def _make_lane(rt: Runtime):
    if rt.per_call.calls is None:
        return None
    try:
        from histkit.gpu._lane import Lane
    except ImportError:  # a build without it: every call takes the Python path
        return None
    return Lane(rt, lambda keys, n, num_bins: _lane_plan(rt, keys, n, num_bins),
                _lane_sort, check_driver_result, _lane_bad_key, MAX_BINS)


def _lane_plan(rt: Runtime, keys, n: int, num_bins: int):
    """The lane's plan for keys of this dtype, length and num_bins: a LanePlan
    from the auto row's lane_plan where auto makes one launch, else auto's
    launcher recorded for the lane to replay (histkit.gpu.recording), with
    _lane_auto (the launcher itself) where it cannot be."""
    from histkit.gpu._lane import LanePlan, Recorded

    ptr, _, dtype = read_in_place(framework_of(keys), keys, rt, "keys")
    plan = registry.serving("histogram", "auto").lane_plan(rt, Keys(ptr, n, dtype), num_bins)
    if plan is None:
        return Recorded(lambda residue: _lane_replay(rt, dtype, n, num_bins, residue),
                        _lane_auto, VECTOR_BYTES)
    kernel, geometry, n_and_bins, shared_bins, overwrite = plan
    # A head depends on the address only modulo the vector width (which every
    # itemsize divides): one per residue.
    heads = tuple(vector_head(address, n, dtype.itemsize) for address in range(VECTOR_BYTES))
    return LanePlan(rt.launch_handle(kernel, geometry), geometry, tuple(n_and_bins),
                    shared_bins, overwrite, 0 if overwrite else num_bins * 8, heads)


def _lane_replay(rt: Runtime, dtype, n: int, num_bins: int, residue: int):
    """auto's launches for n keys of dtype at an address residue past a
    VECTOR_BYTES-aligned one, recorded as the lane replays them; None where
    the launcher cannot be recorded."""
    from histkit.gpu._lane import Replay, ReplayLaunch, ReplayMemset

    script = recording.record(rt, registry.serving("histogram", "auto").run, dtype, n,
                              num_bins, residue)
    if script is None:
        return None
    steps = tuple(ReplayMemset(*step) if isinstance(step, recording.Memset)
                  else ReplayLaunch(*step) for step in script.steps)
    return Replay(script.scratch_bytes, steps)


def _lane_call(keys, n: int, stream: int) -> Call:
    """A lane call's keys (checked by the lane) as the launchers take them, on
    their framework's current stream (stream)."""
    rt = runtime().on(stream)
    framework = framework_of(keys)
    ptr, _, dtype = read_in_place(framework, keys, rt, "keys")
    return Call(rt, Keys(ptr, n, dtype), framework, keys, stream)


def _lane_auto(keys, n: int, num_bins: int, stream: int, slot):
    """Queue auto's launches for a lane call's keys on stream, their bad keys noted in
    slot, as the Python path does (its counts allocated once auto's first
    passes are queued); the lane waits and reads the verdict."""
    call = _lane_call(keys, n, stream)
    hist = Deferred(call, num_bins, np.int64, "num_bins={} (int64 counts)", num_bins)
    registry.serving("histogram", "auto").run(call.rt, call.keys, num_bins, hist, slot)
    return hist.handed


def _lane_sort(keys, keys_ptr: int, n: int, dtype: np.dtype, num_bins: int, stream: int, slot):
    """Queue gpu.counting_sort's launches (stable, int64 indices) for a lane
    call's keys (as the lane read them: their address and dtype) on stream,
    their bad keys noted in slot, as the Python path does; the lane waits and
    reads the verdict."""
    call = Call(runtime().on(stream), Keys(keys_ptr, n, dtype), framework_of(keys), keys, stream)
    out_keys = allocate(call, n, call.keys.dtype, "sorting {} keys", n)
    out_index = allocate(call, n, np.int64, "sorting {} keys", n)
    keep_alive: list = []  # scratch, freed on the call's stream after its kernels
    registry.serving("counting_sort", True).run(call.rt, call.keys, num_bins, out_keys,
                                                out_index, slot, keep_alive,
                                                index_dtype=_INT64)
    return out_keys.handed, out_index.handed


_INT64 = np.dtype(np.int64)


def _lane_bad_key(keys, num_bins: int, stream: int, slot) -> None:
    """A lane call's kernels flagged a bad key: raise it as the Python path does."""
    rt = runtime().on(stream)
    ptr, n, dtype = read_in_place(framework_of(keys), keys, rt, "keys")
    raise_noted_bad_key(rt, slot, Keys(ptr, n, dtype), num_bins)
