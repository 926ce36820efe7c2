# cython: language_level=3
"""The compiled lane of gpu.histogram and gpu.counting_sort: their common
call, without the Python glue.

The common call: CuPy or PyTorch keys (1-d, contiguous, an integer dtype, on
histkit's device, not empty) on their framework's current stream, given
nothing else but check=
(a histogram's method="auto", no out=, stream= or first_bad=; a sort's
stable=True and int64 indices), with no conformance harness on, and, when
checked, on a thread whose bad-key slot is clean. There the Python path
(histkit.gpu.api, _calls) spent about 14 us of a fast host's time between its driver
calls, more than the calls themselves (measured on the H200's host), and
about 1.6x that on a slower host.

Where auto launches the fast kernel alone (a LanePlan), the lane makes the
Python path's driver calls in its order: the keys' framework allocates the
counts, the C
path (histkit.gpu._driver_calls) zeroes them where the kernel adds into
them, launches the fast kernel with the arguments fast_launch packs, and
waits; then the slot's flag on the verdict board says whether any key was
bad. Where auto does more (its sample and gated candidates, at 2^25+ keys
over many bins; the atomic kernel past 2^32 bins), its launcher is recorded
once per shape and keys address modulo the vector width
(histkit.gpu.recording; a Recorded plan): the lane replays the recording
(a Replay) with the call's pointers, its seven scratch arrays in one
allocation by the runtime on the call's stream, and waits and reads the flag
as above. A launcher that cannot be recorded gets a Python callable instead,
which runs auto's launcher on the lane's stream and slot. Plans are kept
here per (dtype, N, num_bins).

A sort's launches are queued by the Python launcher (_lane_calls._lane_sort, the
same allocations and registry row as the Python path); the lane waits and
reads the flag as for a histogram.

An unchecked call (check=False) gets a new first_bad word, allocated by the
keys' framework and set to all ones on their stream as the Python path does,
in place of the slot, and returns without waiting.

A framework is served once the Python side hands the lane its module
(serve_cupy, serve_torch), on its first call with that framework's keys:
importing PyTorch for a CuPy caller would cost a second.

Anything else, it declines (returns None) before it allocates or launches:
the Python path then runs the call, and names every problem. A bad key found
after the wait is handed to the Python path's reader (bad_key), which raises
the oracles' BadKeyError. tests/test_api_calls.py pins the lane against the
Python path: the same allocation, memset and launch, argument for argument.
"""

from libc.stdint cimport uint32_t, uintptr_t

import numpy as np

from histkit.gpu.recording import COUNTS, FIRST_BAD, KEYS, SCRATCH


cdef class LanePlan:
    """One shape's launch, as the lane makes it: the kernel's raw handle and
    geometry, its scalar arguments as fast_plan packs them, how many bytes of
    counts to zero first (0: the kernel stores every bin), and the scalar
    head for each key address modulo the kernel's vector width, heads[i] for
    addresses i modulo len(heads) (launch.histogram's vector_head, worked out
    once per plan)."""

    cdef readonly object kernel, geometry, n_and_bins, shared_bins, overwrite
    cdef readonly unsigned int grid, block, shared_bytes
    cdef readonly size_t zero_bytes
    cdef readonly tuple heads

    def __init__(self, kernel: int, geometry, tuple n_and_bins, shared_bins, overwrite,
                 size_t zero_bytes, tuple heads):
        if not heads:
            raise ValueError("a plan holds one scalar head per address modulo the vector width")
        self.kernel, self.geometry = kernel, geometry
        self.grid, self.block = geometry.grid, geometry.block
        self.shared_bytes = geometry.shared_bytes
        self.n_and_bins, self.shared_bins, self.overwrite = n_and_bins, shared_bins, overwrite
        self.zero_bytes, self.heads = zero_bytes, heads


cdef class ReplayMemset:
    """A recorded memset: nbytes of byte at offset past the call's pointer of
    role (histkit.gpu.recording's roles)."""

    cdef readonly Py_ssize_t role
    cdef readonly object offset
    cdef readonly unsigned char byte
    cdef readonly size_t nbytes

    def __init__(self, Py_ssize_t role, offset, unsigned char byte, size_t nbytes):
        self.role, self.offset, self.byte, self.nbytes = role, offset, byte, nbytes


cdef class ReplayLaunch:
    """A recorded launch: the kernel's raw handle and geometry, its arguments
    (a pointer's slot holds 0) and the pointers to fill in, (argument index,
    role, offset) each."""

    cdef readonly object kernel, geometry
    cdef readonly unsigned int grid, block, shared_bytes
    cdef readonly bint cooperative
    cdef readonly tuple args, pointers

    def __init__(self, kernel, geometry, tuple args, tuple pointers):
        self.kernel, self.geometry = kernel, geometry
        self.grid, self.block = geometry.grid, geometry.block
        self.shared_bytes, self.cooperative = geometry.shared_bytes, geometry.cooperative
        self.args, self.pointers = args, pointers


cdef class Replay:
    """One recorded script (histkit.gpu.recording.Script): the scratch it
    needs, in one block, and its memsets and launches in order."""

    cdef readonly size_t scratch_bytes
    cdef readonly tuple steps

    def __init__(self, size_t scratch_bytes, tuple steps):
        for step in steps:
            if type(step) is not ReplayMemset and type(step) is not ReplayLaunch:
                raise TypeError(f"a replay's steps are ReplayMemset or ReplayLaunch; got {step!r}")
        self.scratch_bytes, self.steps = scratch_bytes, steps


cdef class Recorded:
    """One shape's replays, one per keys address modulo `modulus` (a launch
    may depend on it: the fast kernel's scalar head), each recorded by
    record(residue) when first met; where that gives None, launcher (the
    callable a plan_for may return) runs the call instead."""

    cdef readonly object record, launcher
    cdef readonly Py_ssize_t modulus
    cdef dict replays

    def __init__(self, record, launcher, Py_ssize_t modulus):
        if modulus < 1:
            raise ValueError(f"modulus must be at least 1; got {modulus}")
        self.record, self.launcher, self.modulus = record, launcher, modulus
        self.replays = {}

    cdef object replay_for(self, keys_ptr):
        """The Replay for keys at keys_ptr, or None (not recordable)."""
        residue = keys_ptr % self.modulus
        found = self.replays.get(residue, self)
        if found is self:
            found = self.replays[residue] = self.record(residue)
        return found


cdef class DeviceWord:
    """An unchecked call's first_bad word as the launchers take it (its ptr)."""

    cdef readonly object ptr

    def __init__(self, ptr):
        self.ptr = ptr


cdef class Lane:
    """The lane of one runtime (rt), for CuPy and PyTorch keys.

    plan_for(keys, n, num_bins) -> a LanePlan, or a callable
    (keys, n, num_bins, stream, slot) -> counts that queues auto's launches;
    sort(keys, keys_ptr, n, dtype, num_bins, stream, slot) -> (sorted keys,
    original indices) queues gpu.counting_sort's launches (stable, int64
    indices) for keys as the lane read them (their address and NumPy dtype);
    check(status, what) raises the error naming a driver call's failure
    (histkit.gpu.device.check); bad_key(keys, num_bins, stream, slot) raises
    the oracles' error for the bad key a kernel flagged; num_bins above
    max_bins are declined (the Python path refuses them). Keys of a
    framework not yet served (serve_cupy, serve_torch) are declined.
    """

    # rt's driver calls and the frameworks' functions are looked up at each
    # call (a dict lookup each), not kept: a measurement that wraps them sees
    # the lane's calls too.
    cdef object rt, per_call, int64, uint64, uint8, plan_for, sort
    cdef object cupy, cupy_cuda, ndarray
    cdef object torch, tensor, torch_int64, torch_uint64, torch_stream
    cdef dict torch_dtypes
    cdef readonly set served  # the frameworks whose keys the lane takes
    cdef object check
    cdef object bad_key
    cdef dict plans
    cdef long long device_id
    cdef unsigned long long max_bins

    def __init__(self, rt, plan_for, sort, check, bad_key, unsigned long long max_bins):
        self.rt, self.per_call = rt, rt.per_call
        self.int64, self.uint64 = np.dtype(np.int64), np.dtype(np.uint64)
        self.uint8 = np.dtype(np.uint8)
        self.plan_for, self.sort, self.check, self.bad_key = plan_for, sort, check, bad_key
        self.plans = {}
        self.device_id = rt.device.device_id
        self.max_bins = max_bins
        self.served = set()

    def serve_cupy(self, cupy):
        """Take CuPy arrays from here on."""
        self.cupy, self.cupy_cuda, self.ndarray = cupy, cupy.cuda, cupy.ndarray
        self.served.add("cupy")

    def serve_torch(self, torch, dict dtypes):
        """Take PyTorch CUDA tensors from here on, of the dtypes in `dtypes`
        (PyTorch's integer dtype -> NumPy's), their stream read as a raw
        handle."""
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        if raw is None:  # the public way: a Stream object made per call, then its handle
            current = torch.cuda.current_stream

            def raw(index):
                return current(index).cuda_stream
        self.torch, self.tensor, self.torch_dtypes = torch, torch.Tensor, dtypes
        self.torch_int64 = torch.int64
        self.torch_uint64 = getattr(torch, "uint64", None)
        self.torch_stream = raw
        self.served.add("torch")

    def histogram(self, keys, num_bins, bint check):
        """keys' counts, an int64 array of their framework (check=False: with
        the first_bad word, unwaited), or None (declined: nothing done)."""
        cdef bint torch_keys = type(keys) is self.tensor
        keys_ptr = self._keys_ptr(keys, num_bins, torch_keys)
        if keys_ptr is None:
            return None
        scratch = self._scratch_for(check)
        if scratch is None:
            return None
        n = keys.shape[0]
        key = (keys.dtype, n, num_bins)
        made = self.plans.get(key)
        if made is None:  # made once the harness is known to be off (lane_slot)
            if len(self.plans) > 4096:  # many distinct shapes: keep the table bounded
                self.plans.clear()
            made = self.plans[key] = self.plan_for(keys, n, num_bins)
        stream = self._stream_of(keys, torch_keys)
        words = self._words_for(check, scratch, keys, torch_keys, stream)
        if words is None:
            return None
        slot, first_bad = words
        replay = None
        if type(made) is Recorded:
            replay = (<Recorded>made).replay_for(keys_ptr)
            if replay is None:
                made = (<Recorded>made).launcher
        if type(made) is LanePlan:
            counts = self._launch(made, keys, keys_ptr, torch_keys, num_bins, slot.ptr, stream)
        elif replay is not None:
            counts = self._replay(replay, keys, keys_ptr, torch_keys, num_bins, slot.ptr,
                                  stream)
        else:
            counts = made(keys, n, num_bins, stream, slot)
        if counts is None:
            return None
        if not check:
            return counts, first_bad
        return self._checked(counts, keys, num_bins, scratch, stream)

    def counting_sort(self, keys, num_bins, bint check):
        """(sorted keys, original int64 indices), arrays of the keys' framework, of a stable sort
        (check=False: with the first_bad word, unwaited), or None (declined:
        nothing done)."""
        cdef bint torch_keys = type(keys) is self.tensor
        keys_ptr = self._keys_ptr(keys, num_bins, torch_keys)
        if keys_ptr is None:
            return None
        scratch = self._scratch_for(check)
        if scratch is None:
            return None
        stream = self._stream_of(keys, torch_keys)
        words = self._words_for(check, scratch, keys, torch_keys, stream)
        if words is None:
            return None
        slot, first_bad = words
        # The keys as read above, so the launcher need not read them again
        # (a tensor's attributes cost a few us of a small call's host time).
        dtype = self.torch_dtypes[keys.dtype] if torch_keys else keys.dtype
        result = self.sort(keys, keys_ptr, keys.shape[0], dtype, num_bins, stream, slot)
        if not check:
            return (*result, first_bad)
        return self._checked(result, keys, num_bins, scratch, stream)

    cdef object _scratch_for(self, bint check):
        """A checked call's slot scratch (Runtime.lane_slot); for an unchecked
        one, True where the lane is open (Runtime.lane_open); None: declined."""
        if check:
            return self.rt.lane_slot()
        return True if self.rt.lane_open() else None

    cdef object _words_for(self, bint check, scratch, keys, bint torch_keys, stream):
        """(where the kernels note the first bad index, what the caller gets
        back as first_bad): a checked call's slot (scratch.slot) and None; for
        an unchecked one a new uint64 of the keys' framework holding
        NO_BAD_KEY (all ones), set on the call's stream as the Python path
        sets it. None (declined) where it cannot be allocated."""
        if check:
            return scratch.slot, None
        cdef int status
        try:
            if not torch_keys:
                word = self.cupy.empty(1, self.uint64)
                word.data.memset_async(0xFF, 8)
                return DeviceWord(word.data.ptr), word
            if self.torch_uint64 is None:  # a PyTorch before 2.3: the Python path says so
                return None
            word = self.torch.empty(1, dtype=self.torch_uint64, device=keys.device)
        except Exception:  # out of memory, say: the Python path names it
            return None
        status = self.per_call.calls.memset(word.data_ptr(), 0xFF, 8, stream)
        if status:
            self.check(status, "cuMemsetD8Async")
        return DeviceWord(word.data_ptr()), word

    cdef object _keys_ptr(self, keys, num_bins, bint torch_keys):
        """keys' device address where the lane takes keys and num_bins: a 1-d
        contiguous array of an integer dtype on rt's device, not empty, of a
        framework the lane serves (a CuPy ndarray; a PyTorch CUDA tensor, not
        a lazily negated view), and an int in [1, max_bins]; else None."""
        if type(num_bins) is not int or not 1 <= num_bins <= self.max_bins:
            return None
        if torch_keys:
            dtype = self.torch_dtypes.get(keys.dtype)
            if dtype is None or not keys.is_cuda or keys.is_neg():
                return None
            if keys.get_device() != self.device_id or keys.dim() != 1:
                return None
            n = keys.shape[0]
            if n == 0 or (n > 1 and keys.stride(0) != 1):
                return None
            return keys.data_ptr()
        if type(keys) is not self.ndarray:
            return None
        dtype = keys.dtype
        if dtype.kind not in ("i", "u"):
            return None
        shape = keys.shape
        if len(shape) != 1:
            return None
        n = shape[0]
        cdef Py_ssize_t itemsize = dtype.itemsize
        if n == 0 or (n > 1 and keys.strides[0] != itemsize):
            return None
        memory = keys.data
        if memory.device_id != self.device_id:
            return None
        return memory.ptr

    cdef object _stream_of(self, keys, bint torch_keys):
        """The keys' framework's current stream, a raw handle (0 and 1 both
        name the legacy default stream: 1 here, as the Python path has it)."""
        if torch_keys:
            return self.torch_stream(keys.get_device()) or 1
        return self.cupy_cuda.get_current_stream().ptr or 1

    cdef object _counts_for(self, keys, bint torch_keys, num_bins):
        """(a new int64 array of num_bins of the keys' framework, its address)."""
        if torch_keys:
            counts = self.torch.empty(num_bins, dtype=self.torch_int64, device=keys.device)
            return counts, counts.data_ptr()
        counts = self.cupy.empty(num_bins, self.int64)
        return counts, counts.data.ptr

    cdef object _checked(self, result, keys, num_bins, scratch, stream):
        """result, once the call's work on stream is done and the slot's flag
        is still down (the slot marked clean again); else the bad key raised."""
        cdef int status = self.per_call.calls.sync(stream)
        if status:
            self.check(status, "waiting for the call's kernels: cuStreamSynchronize")
        cdef uintptr_t flag = scratch.flag_address
        if (<volatile uint32_t*>flag)[0] == 0:
            scratch.slot_clean = True
            return result
        self.bad_key(keys, num_bins, stream, scratch.slot)
        return result  # the word said no bad key after all

    cdef object _launch(self, LanePlan plan, keys, keys_ptr, bint torch_keys, num_bins,
                        slot_ptr, stream):
        """Allocate the counts and queue plan's memset and launch: the counts,
        or None (declined: nothing queued) where they cannot be allocated."""
        try:
            counts, counts_ptr = self._counts_for(keys, torch_keys, num_bins)
        except Exception:  # out of memory, say: the Python path names it
            return None
        args = (keys_ptr, *plan.n_and_bins, plan.heads[keys_ptr % len(plan.heads)],
                plan.shared_bins, plan.overwrite, counts_ptr, slot_ptr)
        calls = self.per_call.calls
        cdef int status
        if plan.zero_bytes:
            status = calls.memset(counts_ptr, 0, plan.zero_bytes, stream)
            if status:
                self.check(status, "cuMemsetD8Async")
        status = calls.launch(plan.kernel, plan.grid, plan.block, plan.shared_bytes, stream,
                              False, args)
        if status:
            self.check(status, f"launching {plan.geometry}")
        return counts

    cdef object _replay(self, Replay replay, keys, keys_ptr, bint torch_keys, num_bins,
                        slot_ptr, stream):
        """Allocate the counts and the replay's scratch, then queue its memsets
        and launches with the call's pointers: the counts, or None (declined:
        nothing queued) where either allocation fails."""
        try:
            counts, counts_ptr = self._counts_for(keys, torch_keys, num_bins)
            # The runtime's allocation on the call's stream, as the launcher's
            # own scratch is (pooled there, or graph memory while captured).
            scratch = (self.rt.on(stream).empty(replay.scratch_bytes, self.uint8)
                       if replay.scratch_bytes else None)
        except Exception:  # out of memory, say: the Python path names it
            return None
        bases = [0, 0, 0, 0]
        bases[KEYS] = keys_ptr
        bases[COUNTS] = counts_ptr
        bases[FIRST_BAD] = slot_ptr
        bases[SCRATCH] = 0 if scratch is None else scratch.ptr
        calls = self.per_call.calls
        cdef int status
        cdef ReplayMemset memset
        cdef ReplayLaunch launch
        cdef list args
        for step in replay.steps:
            if type(step) is ReplayMemset:
                memset = <ReplayMemset>step
                status = calls.memset(bases[memset.role] + memset.offset, memset.byte,
                                      memset.nbytes, stream)
                if status:
                    self.check(status, "cuMemsetD8Async")
                continue
            launch = <ReplayLaunch>step
            args = list(launch.args)
            for index, role, offset in launch.pointers:
                args[index] = bases[role] + offset
            status = calls.launch(launch.kernel, launch.grid, launch.block, launch.shared_bytes,
                                  stream, launch.cooperative, tuple(args))
            if status:
                self.check(status, f"launching {launch.geometry}")
        return counts  # the scratch goes back on the stream, after the queued work
