"""What a public GPU call asks of the runtime, on a recording fake (no GPU).

histkit.gpu.api and the launch wrappers run for real; the runtime under them
(driver calls: allocations, memsets, launches, waits) and CuPy are stand-ins
that record what they are asked. This pins, in CI, the properties a GPU run
cannot show by its results alone: which calls wait, which allocate, which
stream the work goes on, what is prepared once.
"""

import contextlib
import ctypes
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from histkit.conformance.cuda_abi import HISTOGRAM_KINDS
from histkit.gpu import _arrays, _calls, _lane_calls, api, errors, policy, recording, registry
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.launch.common import Keys

CUPY_STREAM = 0x5000  # the fake CuPy's current stream


class FakeKernel:
    def __init__(self, name, defines=None):
        self.name = name
        self.defines = dict(defines or {})
        self.handle = id(self)


class FakeArray:
    """Device memory the fake runtime hands out: just a pointer."""

    def __init__(self, ptr, n, dtype):
        self.ptr, self.n, self.dtype = ptr, n, np.dtype(dtype)


class FakeRuntime:
    def __init__(self):
        self.log: list[tuple] = []
        self.handle = 0xA000
        self.sm_count = 132
        self.max_shared_per_block = 227 * 1024
        self.cooperative = True
        self.device = types.SimpleNamespace(device_id=0, sync=lambda: None)
        self.hung = None  # no wait outlasted a bound (Runtime.hung)
        self.compiled: list[tuple] = []
        self.builds: list[tuple] = []  # (entry, the defines it was built with)
        self._plans: dict = {}
        self._next = 0x10000
        self._slot = FakeArray(0x8, 1, np.uint64)
        self.launched: list[tuple] = []  # (kernel name, geometry, arguments)
        self.allocated: list[FakeArray] = []  # every empty(), in order
        self.memsets: list[tuple] = []  # (ptr, byte, nbytes), with the launches in `log`
        # No C path: the compiled lane declines, and every call takes the
        # Python path these fakes record (the `lane` fixture turns it on).
        self.per_call = types.SimpleNamespace(calls=None)

    # streams
    def on(self, handle):
        """The runtime on that stream (one object here: calls run one at a time)."""
        self.log.append(("on", handle))
        self.handle = 0xA000 if handle is None else handle
        return self

    def wait_for(self, foreign_stream):
        """Logs the waits the real runtime makes (none on its own stream)."""
        if foreign_stream != self.handle:
            self.log.append(("wait_for", foreign_stream))

    def capturing(self):
        return False

    def sticky_error(self):
        """No fault ever spoils the fake's context."""
        return None

    # memory
    def empty(self, n, dtype, pooled=True):
        self.log.append(("empty", n))
        self._next += 1 << 20
        self.allocated.append(FakeArray(self._next, n, dtype))
        self.allocated[-1].pooled = pooled
        return self.allocated[-1]

    def zeros(self, n, dtype):
        array = self.empty(n, dtype)
        self.memset(array.ptr, 0, n * array.dtype.itemsize)
        return array

    def zero_word(self):
        return FakeArray(0x10, 1, np.uint64)

    def barrier_scratch(self, words):
        """The stream's kept scratch: zeroed once, when first made."""
        if getattr(self, "_kept", None) is None or self._kept.n < words:
            self._kept = self.empty(words, np.uint64)
            self.memset(self._kept.ptr, 0, 8)
        return self._kept

    def memset(self, ptr, byte, nbytes):
        self.log.append(("memset", byte, nbytes))
        self.memsets.append((ptr, byte, nbytes))

    def to_device(self, host):
        self.log.append(("to_device", len(host)))
        return self.empty(len(host), host.dtype)

    def copy_to_host(self, ptr, host):
        self.log.append(("sync", "copy_to_host"))
        host[...] = 0
        return host

    def read_word(self, ptr):
        self.log.append(("sync", "read_word"))
        return NO_BAD_KEY

    def bad_key_slot(self):
        return self._slot

    def read_bad_key(self, slot):
        self.log.append(("sync", "read_bad_key"))
        return NO_BAD_KEY

    def sync(self, what):
        self.log.append(("sync", what))

    def free_bytes(self):
        return None

    # kernels
    def kernel(self, source, name, defines):
        self.compiled.append((source, name))
        self.builds.append((name, dict(defines)))
        return FakeKernel(name, defines)

    def plan(self, shape, make):
        if shape not in self._plans:
            self._plans[shape] = make()
        return self._plans[shape]

    def resident_blocks(self, kernel, block, shared_bytes):
        return 2

    def allow_shared(self, kernel, nbytes):
        pass

    def max_dynamic_shared(self, kernel):
        return self.max_shared_per_block - self.static_shared_bytes

    static_shared_bytes = 0  # what each kernel declares statically

    def launch(self, kernel, geometry, *args):
        self.log.append(("launch", kernel.name))
        self.launched.append((kernel.name, geometry, args))

    def kinds(self, kind):
        return [entry for entry in self.log if entry[0] == kind]


class FakeCupyArray:
    __module__ = "cupy"

    def __init__(self, n, dtype, ptr, strides=None):
        self.n, self.dtype = n, np.dtype(dtype)
        self.shape = (n,)
        self.strides = strides or (self.dtype.itemsize,)
        self.data = types.SimpleNamespace(ptr=ptr, device_id=0, memset_async=self._memset)
        self.memsets = []

    def _memset(self, byte, nbytes):
        self.memsets.append((byte, nbytes))

    def __getitem__(self, index):  # a view, as CuPy's slicing gives (its bins of a result)
        return self


@pytest.fixture
def fake(monkeypatch):
    """A recording runtime under histkit.gpu.api, and a fake CuPy."""
    rt = FakeRuntime()
    allocated = []

    def empty(n, dtype):
        array = FakeCupyArray(n, dtype, 0x900000 + len(allocated) * 4096)
        allocated.append(array)
        return array

    cupy = types.ModuleType("cupy")
    cupy.empty = empty

    class Stream:
        @staticmethod
        def from_external(obj):  # CuPy 14: a foreign stream through the CUDA stream protocol
            version, handle = obj.__cuda_stream__()
            assert version == 0
            rt.log.append(("cupy stream", handle))
            return contextlib.nullcontext()  # a context that makes it CuPy's current stream

    def external_stream(handle):  # what CuPy 13 and older offer (deprecated in 14)
        rt.log.append(("cupy ExternalStream", handle))
        return contextlib.nullcontext()

    cupy.cuda = types.SimpleNamespace(
        get_current_stream=lambda: types.SimpleNamespace(ptr=CUPY_STREAM),
        Stream=Stream, ExternalStream=external_stream)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    for module in (api, _calls, _lane_calls):
        monkeypatch.setattr(module, "runtime", lambda: rt)
    rt.cupy_allocated = allocated
    return rt


def cupy_keys(n=4096, dtype=np.int32):
    return FakeCupyArray(n, dtype, 0x700000)


def test_a_cupy_call_runs_on_cupys_current_stream_without_waiting_on_another(fake):
    api.histogram(cupy_keys(), 256)
    assert ("on", CUPY_STREAM) in fake.log and not fake.kinds("wait_for")


def test_an_explicit_stream_wins_over_cupys_current_one_after_waiting_for_it_once(fake):
    # CuPy orders the keys' pending writes on its current stream: the call on
    # another stream waits for that one first
    api.histogram(cupy_keys(), 256, stream=0x7000)
    assert ("on", 0x7000) in fake.log
    assert fake.kinds("wait_for") == [("wait_for", CUPY_STREAM)]
    # CuPy allocates the result on that stream too, so its pool orders reuse there.
    assert fake.kinds("cupy stream") == [("cupy stream", 0x7000)]


def test_a_cupy_without_from_external_gets_the_stream_as_an_external_stream(fake, monkeypatch):
    import cupy

    monkeypatch.setattr(cupy.cuda, "Stream", type("Stream", (), {}))
    api.histogram(cupy_keys(), 256, stream=0x7000)
    assert fake.kinds("cupy ExternalStream") == [("cupy ExternalStream", 0x7000)]


TORCH_STREAM = 0x5100


class _TorchDtype:
    """A PyTorch dtype stand-in: hashable, named."""

    def __init__(self, name):
        self.name = name


class FakeCudaTensor:
    __module__ = "torch"
    is_cuda = True

    def __init__(self, n, dtype, ptr, strides=(1,), device_index=0, conj=False, neg=False):
        self.dtype, self.shape, self._strides, self._ptr = dtype, (n,), strides, ptr
        self.device = types.SimpleNamespace(index=device_index)
        self._conj, self._neg = conj, neg

    def is_conj(self):
        return self._conj

    def is_neg(self):
        return self._neg

    def get_device(self):
        return self.device.index

    def dim(self):
        return len(self.shape)

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def data_ptr(self):
        return self._ptr

    def new_empty(self, n, dtype):
        """A tensor on this one's device, as PyTorch's Tensor.new_empty makes it."""
        return sys.modules["torch"].empty(n, dtype=dtype, device=self.device)


@pytest.fixture
def fake_torch(fake, monkeypatch):
    """The recording runtime, and a fake PyTorch whose current stream is TORCH_STREAM."""
    torch = types.ModuleType("torch")
    for name in ("int8", "int16", "int32", "int64", "uint64", "float32", "bfloat16"):
        setattr(torch, name, _TorchDtype(name))
    allocated = []

    def empty(n, dtype, device):
        tensor = FakeCudaTensor(n, dtype, 0xB00000 + len(allocated) * 4096)
        allocated.append(tensor)
        return tensor

    def external_stream(handle, device):
        fake.log.append(("torch stream", handle))
        return handle

    torch.empty = empty
    torch.Tensor = FakeCudaTensor
    # the raw current-stream handle the compiled lane reads (PyTorch's own helper)
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: TORCH_STREAM)
    torch.cuda = types.SimpleNamespace(
        current_stream=lambda device: types.SimpleNamespace(cuda_stream=TORCH_STREAM),
        ExternalStream=external_stream, stream=lambda s: contextlib.nullcontext())
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(_arrays, "_TORCH_DTYPES", {})
    monkeypatch.setattr(_arrays, "_NUMPY_TO_TORCH", {})
    fake.torch = torch
    fake.torch_allocated = allocated
    return fake


def torch_keys(fake, n=4096, dtype="int32", **more):
    return FakeCudaTensor(n, getattr(fake.torch, dtype), 0x600000, **more)


def test_a_torch_call_reads_the_tensor_and_runs_on_torchs_stream_without_waiting(fake_torch):
    api.histogram(torch_keys(fake_torch), 256)
    assert ("on", TORCH_STREAM) in fake_torch.log and not fake_torch.kinds("wait_for")
    (name, _, args), = fake_torch.launched
    assert name == "fast_histogram" and args[0] == 0x600000 and int(args[1]) == 4096


def test_a_torch_call_on_another_stream_waits_once_for_torchs(fake_torch):
    api.histogram(torch_keys(fake_torch), 256, stream=0x7000)
    assert ("on", 0x7000) in fake_torch.log
    assert fake_torch.kinds("wait_for") == [("wait_for", TORCH_STREAM)]
    assert fake_torch.kinds("torch stream") == [("torch stream", 0x7000)]  # results there too


def test_torch_keys_are_held_to_the_same_layout_dtype_and_device_rules(fake_torch):
    with pytest.raises(ValueError, match=r"contiguous; got strides \(2,\) \(in elements\)"):
        api.histogram(torch_keys(fake_torch, 10, strides=(2,)), 4)
    api.histogram(torch_keys(fake_torch, 1, strides=(2,)), 4)  # one element: any stride
    with pytest.raises(TypeError, match="integer dtype"):
        api.histogram(torch_keys(fake_torch, 10, "float32"), 4)
    with pytest.raises(ValueError, match="live on device 1"):
        api.histogram(torch_keys(fake_torch, 10, device_index=1), 4)


def test_a_torch_out_array_is_checked_and_written_after_torchs_pending_work(fake_torch):
    out = FakeCudaTensor(256, fake_torch.torch.int64, 0x1000)
    assert api.histogram(np.zeros(100, np.int32), 256, out=out) is out
    assert fake_torch.kinds("wait_for") == [("wait_for", TORCH_STREAM)]
    with pytest.raises(ValueError, match="out must hold 256 int64; got 256 int32"):
        api.histogram(np.zeros(100, np.int32), 256,
                      out=FakeCudaTensor(256, fake_torch.torch.int32, 0x1000))


def test_a_torch_dtype_numpy_lacks_goes_through_the_general_view(fake_torch, monkeypatch):
    viewed = []

    def view(rt, obj, name, integer=True):
        viewed.append(name)
        raise TypeError(f"{name} must have an integer dtype (int8 ... uint64); got bfloat16")

    monkeypatch.setattr(_calls, "interface_view", view)
    with pytest.raises(TypeError, match="got bfloat16"):
        api.histogram(torch_keys(fake_torch, 10, "bfloat16"), 4)
    assert viewed == ["keys"]


@pytest.mark.parametrize("lazy", [{"conj": True}, {"neg": True}])
def test_a_lazily_conjugated_or_negated_torch_view_is_not_read_raw(fake_torch, monkeypatch,
                                                                    lazy):
    # its memory holds the values before the conjugation or negation: the
    # general view (DLPack, which refuses such a tensor by name) reads it
    viewed = []

    def view(rt, obj, name, integer=True):
        viewed.append(name)
        raise BufferError("Can't export tensors with the conjugate bit set")

    monkeypatch.setattr(_calls, "interface_view", view)
    keys = torch_keys(fake_torch, 10_000, **lazy)
    values = FakeCudaTensor(10_000, fake_torch.torch.float32, 0x800000, **lazy)
    with pytest.raises(BufferError):
        api.histogram(keys, 4)
    with pytest.raises(BufferError):
        api.radix_sort(torch_keys(fake_torch, 10_000), values)
    assert viewed == ["keys", "values"]


def test_a_checked_histogram_waits_exactly_once(fake):
    api.histogram(cupy_keys(), 256)
    assert fake.kinds("sync") == [("sync", "read_bad_key")]
    assert [e[1] for e in fake.kinds("launch")] == ["fast_histogram"]


def test_check_false_queues_the_work_and_waits_for_nothing(fake):
    counts, first_bad = api.histogram(cupy_keys(1 << 20), 256, check=False)
    assert not fake.kinds("sync")
    assert first_bad.memsets == [(0xFF, 8)]
    # the launcher zeroes the counts it adds into, on the call's stream, before its launch
    assert fake.log.index(("memset", 0, 256 * 8)) < fake.log.index(("launch", "fast_histogram"))


HISTOGRAM_ROWS = [k.row for k in registry.KERNELS if k.kind in HISTOGRAM_KINDS]


@pytest.mark.parametrize("row", HISTOGRAM_ROWS)
def test_every_histogram_launcher_zeroes_its_counts_before_its_kernels_add_into_them(row):
    # the public calls and the suite hand launchers counts holding anything
    rt = FakeRuntime()
    zeroed = []
    rt.memset = lambda ptr, byte, nbytes: zeroed.append((ptr, byte, nbytes, len(rt.launched)))
    kernel = registry.by_row(row)
    hist = FakeArray(0x5000000, 3000, np.uint64)
    extra = {"atomics": FakeArray(0x6000000, 1, np.uint64)} if kernel.kind == "privatized" else {}
    kernel.run(rt, Keys(0x700000, 1 << 20, np.dtype(np.int32)), 3000, hist, rt._slot, **extra)
    zeroings = [before for ptr, byte, nbytes, before in zeroed
                if (ptr, byte, nbytes) == (hist.ptr, 0, 3000 * 8)]
    assert len(zeroings) == 1
    # No launch queued before the zeroing is handed the counts (one that does
    # not touch them, like the partitioned kernel's first pass, may go first);
    # one after it is.
    handed_hist = [hist.ptr in args for _, _, args in rt.launched]
    assert not any(handed_hist[:zeroings[0]]) and any(handed_hist[zeroings[0]:])


def test_a_sampled_call_queues_the_choice_and_first_pass_before_allocating_its_counts(fake):
    # The counts are allocated when the launcher first needs them (their
    # zeroing), so the host's allocation overlaps the GPU's first pass.
    def allocating(n, dtype, real=sys.modules["cupy"].empty):
        fake.log.append(("cupy.empty", n))
        return real(n, dtype)

    sys.modules["cupy"].empty = allocating
    counts, _ = api.histogram(cupy_keys(1 << 26), 1 << 20, check=False)
    log = [entry[:2] for entry in fake.log if entry[0] in ("launch", "cupy.empty")]
    allocated = log.index(("cupy.empty", 1 << 20))
    launched_before = [entry for entry in log[:allocated] if entry[0] == "launch"]
    assert launched_before == [("launch", "auto_choice"), ("launch", "partition_tiles")]
    assert counts.n == 1 << 20 and counts in fake.cupy_allocated


def test_a_small_call_allocates_its_counts_before_its_launch_and_hands_them_back(fake):
    counts = api.histogram(cupy_keys(4096), 256)
    assert counts is fake.cupy_allocated[0] and counts.n == 256
    assert fake.launched[-1][2][-2] == counts.data.ptr  # the fast kernel's counts


def test_a_call_on_no_keys_hands_back_zeroed_counts_without_a_launch(fake):
    counts, _ = api.histogram(cupy_keys(0), 256, check=False)
    assert counts.memsets == [(0, 256 * 8)] and not fake.kinds("launch")


def fast_launch_args(fake):
    """(overwrite flag, counts pointer) of the last fast_histogram launch."""
    name, _, args = fake.launched[-1]
    assert name == "fast_histogram"
    *_, overwrite, hist_ptr, _first_bad = args
    return int(overwrite), hist_ptr


def test_a_one_block_call_with_every_bin_shared_stores_its_counts_instead_of_zeroing_them(fake):
    counts, _ = api.histogram(cupy_keys(4096), 256, check=False)
    assert fast_launch_args(fake) == (1, counts.data.ptr)
    assert not fake.kinds("memset") and not counts.memsets


@pytest.mark.parametrize("n, num_bins", [(1 << 20, 256), (4096, 1 << 20)],
                         ids=["many-blocks", "bins-past-shared-memory"])
def test_a_call_whose_blocks_add_into_the_counts_zeroes_them_first(fake, n, num_bins):
    counts, _ = api.histogram(cupy_keys(n), num_bins, check=False)
    assert fast_launch_args(fake) == (0, counts.data.ptr)
    assert ("memset", 0, num_bins * 8) in fake.log


def test_with_out_and_first_bad_a_call_allocates_nothing_so_it_can_be_captured(fake):
    out = FakeCupyArray(256, np.int64, 0x1000)
    word = FakeCupyArray(1, np.uint64, 0x2000)
    for _ in range(3):
        got = api.histogram(cupy_keys(), 256, out=out, first_bad=word, check=False)
        assert got[0] is out and got[1] is word
    assert not fake.cupy_allocated and not fake.kinds("empty") and not fake.kinds("sync")


def test_a_sort_whose_tiles_all_fit_on_the_gpu_is_one_launch_that_waits_once(fake):
    for _ in range(3):
        api.counting_sort(cupy_keys(10_000), 300)  # 3 tiles, two digit passes
    assert [e[1] for e in fake.kinds("launch")] == ["resident_sort"] * 3
    # The stream's kept scratch is zeroed once, when made (the kernel leaves
    # its arrivals word zero); nothing else is set (no bad-key marks).
    assert [e for e in fake.kinds("memset") if e[1] != 0xFF] == [("memset", 0, 8)]
    assert fake.log[-1] == ("sync", "read_bad_key") and len(fake.kinds("sync")) == 3


def test_a_checked_sort_too_large_to_be_resident_waits_once_after_its_scatter(fake):
    # 3e6 keys: more tiles than the fake GPU holds at once (132 SMs x 2 blocks)
    api.counting_sort(cupy_keys(3_000_000), 256)
    launches = [e[1] for e in fake.kinds("launch")]
    assert launches == ["digit_histograms", "onesweep_scatter"]
    # One wait, after every launch: no read-back between count and scatter.
    assert fake.log[-1] == ("sync", "read_bad_key") and len(fake.kinds("sync")) == 1


def test_a_sort_of_two_digits_marks_its_intermediate_keys_as_bad_keys(fake):
    api.counting_sort(cupy_keys(3_000_000), 300, check=False)
    # The first pass writes the spare buffers: they start as all-ones (bad keys).
    assert ("memset", 0xFF, 3_000_000 * 4) in fake.log and not fake.kinds("sync")


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64])
def test_a_radix_sort_makes_one_pass_per_key_byte_and_waits_for_nothing(fake, dtype):
    keys, index = api.radix_sort(cupy_keys(10_000, dtype=dtype))
    launches = [e[1] for e in fake.kinds("launch")]
    passes = np.dtype(dtype).itemsize
    assert launches == ["digit_histograms"] + ["onesweep_scatter"] * passes
    # every key is valid: no read-back, and no bad-key marks between passes
    assert not fake.kinds("sync") and ("memset", 0xFF, 10_000 * passes) not in fake.log
    assert keys.dtype == np.dtype(dtype) and index.dtype == np.int64


def test_radix_sort_values_follow_their_keys_through_one_gather(fake):
    values = FakeCupyArray(10_000, np.float32, 0x800000)
    keys, moved = api.radix_sort(cupy_keys(10_000), values)
    assert [e[1] for e in fake.kinds("launch")][-1] == "gather_values"
    assert moved.dtype == np.float32 and len(fake.cupy_allocated) == 3
    assert ("gather_values.cu", "gather_values") in fake.compiled


@pytest.mark.parametrize("call", ["counting_sort", "counting_sort_unstable", "radix_sort"])
def test_int32_indices_are_allocated_as_int32_and_every_index_kernel_is_built_for_them(
        fake, call):
    keys = cupy_keys(10_000)
    values = FakeCupyArray(10_000, np.float32, 0x800000)
    if call == "radix_sort":
        _, index = api.radix_sort(keys, index_dtype=np.int32)
        api.radix_sort(keys, values, index_dtype=np.int32)
    else:
        _, index = api.counting_sort(keys, 300, stable=call == "counting_sort",
                                     index_dtype=np.int32)
    assert index.dtype == np.int32
    writers = {"resident_sort", "onesweep_scatter", "scatter_atomic_cursor", "gather_values"}
    built = [defines for name, defines in fake.builds if name in writers]
    assert built and all(d.get("INDEX_T") == "int" for d in built)


def test_index_dtype_is_checked_before_a_gpu_is_looked_for(fake):
    with pytest.raises(TypeError, match="index_dtype must be int32 or int64; got int16"):
        api.counting_sort(np.arange(5), 5, index_dtype=np.int16)
    with pytest.raises(ValueError, match="int32 indices number up to 2"):
        api.radix_sort(FakeCupyArray(2**31 + 1, np.uint8, 0x100), index_dtype=np.int32)
    assert not fake.kinds("launch") and not fake.kinds("to_device") and not fake.cupy_allocated


def test_repeated_calls_prepare_each_launch_once(fake):
    for _ in range(5):
        api.histogram(cupy_keys(), 256)
    assert fake.compiled == [("fast_histogram.cu", "fast_histogram")]


@pytest.mark.parametrize("num_bins", [256, 70_000])
def test_repeated_sorts_prepare_their_passes_and_scans_once(fake, num_bins):
    api.counting_sort(cupy_keys(3_000_000), num_bins)
    first = list(fake.compiled)
    for _ in range(3):
        api.counting_sort(cupy_keys(3_000_000), num_bins)
    assert fake.compiled == first


def test_numpy_keys_use_histkits_stream_and_come_back_as_numpy(fake):
    got = api.histogram(np.arange(100) % 7, 7)
    assert isinstance(got, np.ndarray) and ("on", None) in fake.log


def test_launch_plans_differ_by_shape(fake):
    api.histogram(cupy_keys(4096), 256)
    api.histogram(cupy_keys(4096, dtype=np.int16), 256)
    api.histogram(cupy_keys(1 << 20), 256)
    shapes = [key for key in fake._plans if key[0] == "fast"]
    assert len(shapes) == 3 and len(fake.compiled) == 3  # each shape asked once
    assert policy.fast_layout(fake.max_shared_per_block, 256) == policy.FastLayout(32, 256)


# --- every launch's arguments against its kernel's C signature -----------------

_ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?'
                    r'(\w+)\s*\(([^)]*)\)', re.S)
# How each C parameter type must arrive from Python (cuda.core passes a plain
# int as a pointer, so every scalar must be the numpy scalar of its width).
_SCALARS = {"i64": np.int64, "u64": np.uint64, "unsigned": np.uint32, "int": np.int32,
            "long long": np.int64, "unsigned long long": np.uint64, "unsigned int": np.uint32,
            "double": np.float64}
ROOT = Path(__file__).parent.parent


# What common.cuh's HK_GATE_ARG adds to a gated build's parameters (its last).
GATE_PARAM = "const unsigned*"


def kernel_signatures(paths=None, gated: bool = False) -> dict[str, list[str]]:
    """entry name -> its parameter types, read from the .cu files (cuda/*.cu);
    gated: as built with HK_GATE (the entries that take HK_GATE_ARG only)."""
    signatures = {}
    for path in paths or sorted((ROOT / "cuda").glob("*.cu")):
        for name, params in _ENTRY.findall(Path(path).read_text()):
            takes_gate = "HK_GATE_ARG" in params
            if gated and not takes_gate:
                continue
            params = params.replace("HK_GATE_ARG", "")
            signatures[name] = [re.sub(r"\s*\b\w+$", "", p.strip()) for p in params.split(",")]
            if gated:
                signatures[name].append(GATE_PARAM)
    return signatures


def mismatches(launches, signatures) -> list[str]:
    found = []
    for name, args in launches:
        want = signatures[name]
        if len(args) != len(want):
            found.append(f"{name}: {len(args)} arguments for {len(want)} parameters")
            continue
        for position, (arg, ctype) in enumerate(zip(args, want, strict=True)):
            ok = (type(arg) is int if ctype.endswith("*")
                  else type(arg) is _SCALARS[ctype])
            if not ok:
                found.append(f"{name} parameter {position} ({ctype}): got {type(arg).__name__}")
    return found


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint64])
def test_every_registry_launch_passes_the_types_its_kernel_declares(dtype):
    from histkit.gpu import registry

    rt = FakeRuntime()
    rt.launches, gated_launches = [], []
    rt.launch = lambda kernel, geometry, *args: (
        gated_launches if {"HK_GATE", "HK_GATE_UNLESS"} & set(kernel.defines)
        else rt.launches).append((kernel.name, args))
    signatures = kernel_signatures()
    for n, num_bins in [(5000, 100), (100_000, 300), (5_000_000, 70_000)]:
        keys = Keys(0x700000, n, np.dtype(dtype))
        for kernel in registry.KERNELS:
            for _, variant in kernel.columns():
                options = dict(variant.options)
                if kernel.kind == "scan":
                    kernel.run(rt, 0x1000, num_bins, 0x2000, [], **options)
                    continue
                if kernel.kind == "radix-sort":
                    kernel.run(rt, keys, FakeArray(0x3000, n, dtype),
                               FakeArray(0x4000, n, np.int64), [],
                               values=(0x7000, 8, 0x8000), **options)
                    continue
                if kernel.kind in ("sort", "stable-sort"):
                    with contextlib.suppress(errors.UnsupportedShape):  # not resident
                        kernel.run(rt, keys, num_bins, FakeArray(0x3000, n, dtype),
                                   FakeArray(0x4000, n, np.int64), rt._slot, [], **options)
                    continue
                if kernel.kind == "privatized":
                    options["atomics"] = FakeArray(0x5000, 1, np.uint64)
                with contextlib.suppress(errors.UnsupportedShape):  # privatized, many bins
                    kernel.run(rt, keys, num_bins, FakeArray(0x6000, num_bins, np.uint64),
                               rt._slot, **options)
    # the binning row, with an even rule and with each kind of explicit edges
    from histkit.gpu.binning import kernel_rule_for
    from histkit.gpu.launch.binning import weighted_bin_histogram
    from histkit.gpu.launch.weighted import Weights

    samples = np.zeros(3, np.float32)
    for bins, range_ in ((100, (0.0, 1.0)), (np.linspace(0, 1, 65), None),
                         (np.array([0.0, 1, 10, 100]), None)):
        num_bins, edges = (bins, None) if np.ndim(bins) == 0 else (None, bins)
        rule = kernel_rule_for(samples, num_bins, edges, range_, True)[0]
        for _, variant in registry.binning_kernel().columns():
            registry.binning_kernel().run(
                rt, Keys(0x700000, 100_000, np.dtype(np.float32)), rule,
                FakeArray(0x6000, rule.num_bins + 3, np.uint64), rt._slot,
                FakeArray(0x9000, rule.num_bins + 1, rule.edges.dtype), **variant.options)
        # gpu.bin_histogram's weighted path: each sample's counter, then the sums
        weighted_bin_histogram(
            rt, Keys(0x700000, 100_000, np.dtype(np.float32)), rule,
            Weights(0xA000, np.dtype(np.float32)), FakeArray(0xB000, rule.num_bins + 3, np.uint64),
            rt._slot, FakeArray(0x9000, rule.num_bins + 1, rule.edges.dtype))
    # the weighted row, with each weight type, at each shared-memory layout

    for weight_dtype in (np.float32, np.float64):
        for num_bins in (7, 4096, 70_000):
            for _, variant in registry.weighted_kernel().columns():
                registry.weighted_kernel().run(
                    rt, Keys(0x700000, 100_000, np.dtype(dtype)),
                    Weights(0xA000, np.dtype(weight_dtype)), num_bins,
                    FakeArray(0xB000, num_bins, np.uint64), rt._slot, **variant.options)
        # auto's choice over several launches: the rows carried between them, gated
        registry.weighted_kernel().run(
            rt, Keys(0x700000, 100_000, np.dtype(dtype)), Weights(0xA000, np.dtype(weight_dtype)),
            70_000, FakeArray(0xB000, 70_000, np.uint64), rt._slot, layout="sampled",
            launch_weights=4096)
    ran = {name for name, _ in rt.launches}
    assert ran >= set(signatures) - {"read_roofline"}, sorted(ran)  # roofline: bench only
    assert mismatches(rt.launches, signatures) == []
    # auto's gated builds (5 million keys, 70000 bins, always sampled): every
    # entry that takes the gate, with the gate word last
    gated = kernel_signatures(gated=True)
    assert {name for name, _ in gated_launches} == set(gated)
    assert mismatches(gated_launches, gated) == []


def test_a_launch_with_a_plain_int_for_a_scalar_is_named():
    signatures = {"k": ["const hk_key*", "i64", "u64"]}
    assert mismatches([("k", (1, np.int64(2), 3))], signatures) == [
        "k parameter 2 (u64): got int"]
    assert mismatches([("k", (1, np.int64(2)))], signatures) == [
        "k: 2 arguments for 3 parameters"]


# The user-kernel ABI (docs/check.md, "The kernel ABI"): the example kernels'
# signatures against what histkit check's launcher passes them.
EXAMPLE_KINDS = {"atomic_histogram.cu": "histogram", "naive_histogram.cu": "racy-histogram",
                 "wave_histogram.cu": "wave", "privatized_histogram.cu": "privatized",
                 "exclusive_scan.cu": "scan", "counting_sort.cu": "stable-sort"}


@pytest.mark.parametrize("name,kind", sorted(EXAMPLE_KINDS.items()))
def test_histkit_checks_launcher_passes_the_types_the_abi_documents(name, kind):
    from histkit.conformance.foreign import DEFAULT_ENTRIES, CudaFileImpl

    path = ROOT / "examples" / "cuda" / name
    row = CudaFileImpl(str(path), kind, DEFAULT_ENTRIES[kind]).as_kernel()
    rt = FakeRuntime()
    rt.launches = []
    rt.launch = lambda kernel, geometry, *args: rt.launches.append((kernel.name, args))
    keys = Keys(0x700000, 10_000, np.dtype(np.int32))
    if kind == "scan":
        row.run(rt, 0x1000, 300, 0x2000, [])
    elif kind == "stable-sort":
        row.run(rt, keys, 300, FakeArray(0x3000, 10_000, np.int32),
                FakeArray(0x4000, 10_000, np.int64), rt._slot, [])
    else:
        extra = {"atomics": FakeArray(0x5000, 1, np.uint64)} if kind == "privatized" else {}
        row.run(rt, keys, 300, FakeArray(0x6000, 300, np.uint32), rt._slot, **extra)
    signatures = kernel_signatures([path])
    signatures.update(kernel_signatures())  # the scan the sort launcher runs is histkit's
    assert {name for name, _ in rt.launches} >= set(DEFAULT_ENTRIES[kind])
    assert mismatches(rt.launches, signatures) == []


def _user_row(kind, **fields):
    from histkit.conformance.foreign import DEFAULT_ENTRIES, CudaFileImpl

    name = {v: k for k, v in EXAMPLE_KINDS.items()}[kind]
    impl = CudaFileImpl(str(ROOT / "examples" / "cuda" / name), kind, DEFAULT_ENTRIES[kind],
                        **fields)
    return impl.as_kernel()


@pytest.mark.parametrize("kind,fields,n,grid,want", [
    # one thread per key: ceil(n / block) blocks of the row's block
    ("histogram", {}, 10_000, None, (40, 256)),
    ("histogram", {"block": 128}, 10_001, None, (79, 128)),
    ("histogram", {}, 0, None, (1, 256)),  # no keys: still one block
    # a fixed grid (the file's, or the suite's forced one)
    ("histogram", {"grid": 6}, 10_000, None, (6, 256)),
    ("racy-histogram", {}, 10_000, 3, (3, 256)),
    # a wave kernel: one block of warp_size lanes
    ("wave", {"warp_size": 7}, 10_000, None, (1, 7)),
    ("wave", {}, 10_000, None, (1, 32)),
])
def test_a_user_kernels_launch_shape_is_the_abis(kind, fields, n, grid, want):
    rt = FakeRuntime()
    geometry = _user_row(kind, **fields).run(rt, Keys(0x700000, n, np.dtype(np.int32)), 300,
                                             FakeArray(0x6000, 300, np.uint32), rt._slot,
                                             grid=grid)
    assert (geometry.grid, geometry.block) == want


@pytest.mark.parametrize("count_bits", [32, 64])
def test_a_user_privatized_kernel_gets_its_bins_shared_memory_up_to_a_blocks(count_bits):
    rt = FakeRuntime()
    row = _user_row("privatized", count_bits=count_bits)
    keys = Keys(0x700000, 10_000, np.dtype(np.int32))
    atomics = FakeArray(0x5000, 1, np.uint64)
    geometry = row.run(rt, keys, 300, FakeArray(0x6000, 300, np.uint64), rt._slot,
                       atomics=atomics)
    assert geometry.shared_bytes == 300 * count_bits // 8
    fits = rt.max_shared_per_block * 8 // count_bits  # exactly a block's shared memory
    assert row.run(rt, keys, fits, FakeArray(0x6000, fits, np.uint64), rt._slot,
                   atomics=atomics).shared_bytes == rt.max_shared_per_block
    with pytest.raises(errors.UnsupportedShape, match=f"{fits + 1} bins need"):
        row.run(rt, keys, fits + 1, FakeArray(0x6000, fits + 1, np.uint64), rt._slot,
                atomics=atomics)


def test_a_user_sorts_scratch_stays_in_the_callers_keep_alive_list():
    # the counts and cursors are freed on the stream once the caller drops the
    # list, after the kernels it queued: the launcher must not drop them first
    rt = FakeRuntime()
    keep_alive = []
    _user_row("stable-sort").run(rt, Keys(0x700000, 10_000, np.dtype(np.int32)), 300,
                                 FakeArray(0x3000, 10_000, np.int32),
                                 FakeArray(0x4000, 10_000, np.int64), rt._slot, keep_alive)
    scratch = [a for a in rt.allocated if a.n == 300]
    assert len(scratch) == 2 and all(any(a is k for k in keep_alive) for a in scratch)


def test_the_fake_offers_only_what_the_real_runtime_has_with_the_same_parameters():
    import inspect

    from histkit.gpu.device import Runtime

    for name, member in vars(FakeRuntime).items():
        if name.startswith("_") or not callable(member) or name == "kinds":
            continue
        real = getattr(Runtime, name, None)
        assert real is not None, f"Runtime has no {name}"
        fake_params = list(inspect.signature(member).parameters)
        real_params = list(inspect.signature(real).parameters)
        assert fake_params == real_params, (name, fake_params, real_params)


def test_a_2_31_key_case_too_large_for_the_gpu_is_a_named_skip_not_a_fail(monkeypatch):
    from histkit.conformance import runner
    from histkit.conformance.cases import huge_cases

    rt = FakeRuntime()
    rt.free_bytes = lambda: 8 << 30  # an 8 GiB GPU
    keys_case = next(c for c in huge_cases() if not c.scan_counts and c.kinds is None)
    results = runner.run_case(rt, keys_case, runner.columns(["atomic", "sort-stable"]))
    assert {r.cell.status for r in results} == {"skip"}  # sort-stable's columns too
    # 2^31 uint8 keys, one digit pass: keys + sorted keys + int64 indices
    # (20 GiB), and 2 KiB of look-back words per 5120-key tile (0.8 GiB).
    assert "needs about 20.8 GiB of GPU memory; 8.0 GiB free here" in results[0].cell.detail
    rt.free_bytes = lambda: 24 << 30  # a 24 GiB GPU: the case runs (no skip decided here)
    monkeypatch.setattr(runner, "available_memory", lambda: 100 << 30)
    assert runner.too_large_here(rt, keys_case) is None


def test_a_2_31_count_scan_needs_32_gib_of_gpu_and_64_of_host_memory_or_is_a_named_skip(
        monkeypatch):
    from histkit.conformance import runner
    from histkit.conformance.cases import huge_cases

    rt = FakeRuntime()
    counts = next(c for c in huge_cases() if c.scan_counts)
    rt.free_bytes = lambda: 24 << 30
    monkeypatch.setattr(runner, "available_memory", lambda: 100 << 30)
    # counts and offsets, 16 GiB each, and a tile sum and offset per 2048 counts
    assert "needs about 32.0 GiB of GPU memory; 24.0 GiB free here" in runner.too_large_here(
        rt, counts)
    rt.free_bytes = lambda: 140 << 30
    assert runner.too_large_here(rt, counts) is None
    monkeypatch.setattr(runner, "available_memory", lambda: 48 << 30)
    assert runner.too_large_here(rt, counts) == (
        "needs about 64.0 GiB of host memory; 48.0 GiB available here")
    results = runner.run_case(rt, counts, runner.columns(["exclusive-scan", "atomic"]))
    assert [r.cell.status for r in results] == ["skip"] * 3  # (atomic: not a scan's case)
    monkeypatch.setattr(runner, "available_memory", lambda: None)  # memory unknown
    assert runner.too_large_here(rt, counts) is None


def test_the_host_memory_a_2_31_key_case_needs_counts_the_oracles_sort_and_the_read_back():
    from histkit.conformance import runner
    from histkit.conformance.cases import huge_cases

    keys_case = next(c for c in huge_cases() if not c.scan_counts and c.kinds is None)
    # uint8 keys: the keys, the oracle's sorted keys + int64 indices, the same read
    # back: 1 + 2 x 9 bytes a key, 38 GiB
    assert 37 << 30 < runner.host_bytes_needed(keys_case) < 39 << 30
    assert runner.available_memory() is None or runner.available_memory() > 0


def test_the_quick_cases_past_2_31_keys_need_the_memory_of_their_keys_or_the_sort_on_the_gpu():
    # the bad-key ones, no column sorts: the keys and their padded copy on the
    # host, the keys and K counts on the GPU. The fenced one the stable sorts
    # take too: their outputs on the GPU (keys and int64 indices), read back a
    # slice at a time, so the host holds the keys and two slices (a 24 GiB
    # GPU and a 16 GiB host run them all)
    from histkit.conformance import runner
    from histkit.conformance.cases import HUGE, all_cases
    from histkit.conformance.checks import SORT_SLICE

    *bad, clean = [c for c in all_cases(quick=True) if c.n >= HUGE]
    assert runner.sorted_by_a_column(clean) and clean.sorted_in_closed_form
    assert not any(runner.sorted_by_a_column(c) for c in bad)
    slices = 2 * SORT_SLICE * 2 * 9  # a slice read and expected, keys and indices
    # (the fenced one is uploaded as it is: no padded copy), and the unstable
    # sort's permutation, a byte a key
    assert clean.fenced and 4 << 30 < runner.host_bytes_needed(clean) - slices < (4 << 30) + (
        1 << 26)
    # keys, sorted keys and int64 indices (10 B a key), and a 2 KiB look-back
    # row per tile of the sort: 20.96 GiB with 5120-key tiles
    tiles = -(-clean.n // policy.tile_keys(np.dtype(clean.dtype)))
    expected = 10 * clean.n + tiles * policy.LOOK_BACK_BYTES_PER_TILE
    assert expected <= runner.device_bytes_needed(clean) < expected + (1 << 25)
    assert 20 << 30 < expected < 22 << 30
    for case in bad:  # (a bad-key case also keeps its valid keys, cut out once)
        assert 6 << 30 < runner.host_bytes_needed(case) < (6 << 30) + (1 << 26)
        assert 2 << 30 < runner.device_bytes_needed(case) < (2 << 30) + (1 << 25)


def test_the_full_matrix_cases_past_2_32_keys_need_4_or_41_gib_on_the_gpu_and_12_or_5_on_the_host():
    from histkit.conformance import runner
    from histkit.conformance.cases import large_cases

    bad, fenced = [c for c in large_cases() if c.n > 2**32]
    assert 4 << 30 < runner.device_bytes_needed(bad) < (4 << 30) + (1 << 25)
    assert 12 << 30 < runner.host_bytes_needed(bad) < (12 << 30) + (1 << 27)
    # the stable sorts' keys and int64 indices stay on the GPU, read a slice at
    # a time (10 B a key), with 2 KiB of look-back words per 5120-key tile
    assert 41 << 30 < runner.device_bytes_needed(fenced) < 42 << 30
    assert fenced.n * 10.4 < runner.device_bytes_needed(fenced) < fenced.n * 10.4 + (1 << 25)
    # the keys and the unstable sort's permutation, a byte a key each
    assert 9 << 30 < runner.host_bytes_needed(fenced) < 10 << 30


def test_the_radix_sorts_case_past_2_31_keys_adds_its_values_on_both_sides():
    from histkit.conformance import runner
    from histkit.conformance.cases import radix_past_2_31_case

    radix = radix_past_2_31_case()
    # keys, sorted keys, int64 indices (10 B a key) and uint32 values in and out (8 B)
    assert radix.n * 18 < runner.device_bytes_needed(radix) < radix.n * 18.5 + (1 << 25)
    # the keys, the values and their copy for the upload, a byte a key more,
    # and the slices read and expected
    assert 20 << 30 < runner.host_bytes_needed(radix) < 22 << 30


def test_the_memory_a_full_width_case_needs_is_estimated_without_a_k():
    from histkit.conformance import runner
    from histkit.conformance.cases import HUGE, Case

    wide = Case("uniform", HUGE, 0, dtype="int32", full_width=True)
    narrow = Case("uniform", HUGE, 200, dtype="int32")
    assert runner.device_bytes_needed(wide) > runner.device_bytes_needed(narrow)


@pytest.mark.parametrize("values,error,says", [
    (np.zeros(9, np.float32), ValueError, "one entry per key: 10 keys, values of shape (9,)"),
    (np.zeros((10, 2), np.float32), ValueError, "one-dimensional"),
    (np.zeros(10, np.complex128), TypeError, "1, 2, 4 or 8 bytes"),
    (np.array([object()] * 10), TypeError, "numeric dtype"),
])
def test_numpy_values_for_a_radix_sort_are_checked_before_any_gpu_work(fake, values, error,
                                                                         says):
    with pytest.raises(error, match=re.escape(says)):
        api.radix_sort(np.arange(10, dtype=np.int32), values)
    assert not fake.kinds("launch")


def test_numpy_values_of_every_width_move_with_their_keys(fake):
    for dtype in (np.int8, np.float16, np.uint32, np.float64):
        keys, moved = api.radix_sort(np.arange(10, dtype=np.int32), np.zeros(10, dtype))
        assert moved.dtype == np.dtype(dtype) and len(moved) == 10


def test_zero_counts_are_scanned_and_only_a_negative_count_is_refused(fake):
    assert len(api.exclusive_scan(np.array([0, 3, 0, 0], dtype=np.int64))) == 4
    with pytest.raises(ValueError, match="count at index 2 is -1"):
        api.exclusive_scan(np.array([0, 3, -1, 0], dtype=np.int64))


def test_strided_cupy_keys_are_refused_but_packed_strides_and_single_keys_are_not(fake):
    with pytest.raises(ValueError, match="must be contiguous; got strides"):
        api.histogram(FakeCupyArray(10, np.int32, 0x700000, strides=(8,)), 4)
    api.histogram(FakeCupyArray(10, np.int32, 0x700000, strides=(4,)), 4)
    api.histogram(FakeCupyArray(1, np.int32, 0x700000, strides=(8,)), 4)


def test_a_cupy_out_array_is_written_after_cupys_pending_work_on_it(fake):
    # NumPy keys run on histkit's own stream, which waits for CuPy's current one
    out = FakeCupyArray(256, np.int64, 0x1000)
    api.histogram(np.zeros(4096, np.int32), 256, out=out)
    assert fake.kinds("wait_for") == [("wait_for", CUPY_STREAM)]


def test_results_for_a_stream_cupy_is_not_on_are_zeroed_on_that_stream(fake):
    # CuPy's own memset would run on CuPy's current stream, unordered with ours
    counts, word = api.histogram(cupy_keys(1 << 20), 256, stream=0x7000,
                                 check=False)
    assert counts.memsets == word.memsets == []
    assert ("memset", 0, 256 * 8) in fake.log and ("memset", 0xFF, 8) in fake.log


def test_cupys_out_of_memory_becomes_histkits_error_naming_what_did_not_fit(fake, monkeypatch):
    import cupy

    class OutOfMemoryError(Exception):
        pass

    def full(n, dtype):
        raise OutOfMemoryError("out of memory")

    monkeypatch.setattr(cupy, "empty", full)
    with pytest.raises(errors.DeviceMemoryError, match=r"num_bins=256 \(int64 counts\) needs 2048"):
        api.histogram(cupy_keys(), 256)

    def broken(n, dtype):
        raise RuntimeError("something else went wrong")

    monkeypatch.setattr(cupy, "empty", broken)  # any other error is the caller's to see
    with pytest.raises(RuntimeError, match="something else went wrong"):
        api.histogram(cupy_keys(), 256)


def test_counts_that_do_not_fit_after_the_first_pass_is_queued_are_named_and_nothing_waits(
        fake, monkeypatch):
    # auto's sampled path allocates the counts after queuing its choice and
    # first pass: the error still names what did not fit, and the call ends
    # there (its queued passes write scratch and the bad-key slot only).
    import cupy

    class OutOfMemoryError(Exception):
        pass

    def full(n, dtype):
        raise OutOfMemoryError("out of memory")

    monkeypatch.setattr(cupy, "empty", full)
    with pytest.raises(errors.DeviceMemoryError,
                       match=r"num_bins=1048576 \(int64 counts\) needs 8388608"):
        api.histogram(cupy_keys(1 << 26), 1 << 20)
    assert [name for name, _, _ in fake.launched] == ["auto_choice", "partition_tiles"]
    assert not fake.kinds("sync")


def test_a_bad_key_is_read_back_from_its_own_place_in_the_keys(fake, monkeypatch):
    read = []

    def copy_to_host(ptr, host):
        read.append(ptr)
        host[...] = 999
        return host

    monkeypatch.setattr(fake, "read_bad_key", lambda slot: 5)
    monkeypatch.setattr(fake, "copy_to_host", copy_to_host)
    keys = cupy_keys()
    with pytest.raises(ValueError, match=r"index 5 is 999, outside \[0, 256\)"):
        api.histogram(keys, 256)
    assert read == [keys.data.ptr + 5 * 4]


def test_stream_handles_come_from_every_kind_of_stream_object():
    stream_handle = api.stream_handle

    class CoreStream:  # cuda.core: the __cuda_stream__ protocol
        def __cuda_stream__(self):
            return (0, 0x1234)

    class TorchStream:
        cuda_stream = 0x2000

    class CupyStream:
        ptr = 0x3000

    class HandleOnly:
        handle = 0x4000

    assert [stream_handle(s) for s in (None, 7, np.int64(9), CoreStream(), TorchStream(),
                                       CupyStream(), HandleOnly())] == [
        None, 7, 9, 0x1234, 0x2000, 0x3000, 0x4000]
    assert stream_handle(0) == stream_handle(1) == 1  # both name the legacy default stream
    for bad, error in ((-1, ValueError), (True, TypeError), (object(), TypeError)):
        with pytest.raises(error, match="stream"):
            stream_handle(bad)


class FakeTorchTensor:
    __module__ = "torch"

    def __init__(self, is_cuda):
        self.is_cuda = is_cuda


def test_a_torch_tensor_is_a_device_array_exactly_when_it_lives_on_a_gpu():
    assert api.is_device_array(FakeTorchTensor(is_cuda=True))
    assert not api.is_device_array(FakeTorchTensor(is_cuda=False))
    assert not api.is_device_array(np.zeros(3))



def test_raise_if_bad_reads_the_index_and_names_the_key_or_stays_quiet():
    keys = np.array([0, 7, 9], dtype=np.int32)
    api.raise_if_bad(np.array([NO_BAD_KEY], dtype=np.uint64), keys, 4)  # nothing bad
    with pytest.raises(ValueError, match=r"index 1 is 7, outside \[0, 4\)"):
        api.raise_if_bad(np.array([1], dtype=np.uint64), keys, 4)


@pytest.mark.parametrize("n,dtype", [(256, np.int32), (255, np.int64), (257, np.int64)])
def test_an_out_array_of_the_wrong_dtype_or_length_is_refused(fake, n, dtype):
    with pytest.raises(ValueError, match="out must hold 256 int64"):
        api.histogram(cupy_keys(), 256, out=FakeCupyArray(n, dtype, 0x1000))


def test_device_values_of_a_dtype_no_gather_moves_are_refused(fake):
    values = FakeCupyArray(4096, np.complex128, 0x800000)
    with pytest.raises(TypeError, match="values must have a numeric dtype of 1, 2, 4 or 8"):
        api.radix_sort(cupy_keys(), values)


def test_each_thread_makes_the_devices_context_current_once_before_its_first_call():
    import threading

    from histkit.gpu.device import Runtime

    rt = Runtime.__new__(Runtime)  # no device: only the per-thread binding
    made_current = []
    rt.device = types.SimpleNamespace(set_current=lambda: made_current.append(
        threading.get_ident()))
    rt._scratch = threading.local()
    for _ in range(3):
        rt.bind_to_this_thread()
    worker = threading.Thread(target=lambda: [rt.bind_to_this_thread() for _ in range(3)])
    worker.start()
    worker.join()
    assert made_current == [threading.get_ident(), worker.ident]


def test_work_on_another_stream_is_waited_for_through_one_event_and_none_on_its_own(
        monkeypatch):
    # The real Runtime's wait_for, its driver pretended: keys written on the
    # caller's other stream must be read after that work, with no host wait.
    import threading

    from histkit.gpu.device import Runtime, bindings

    calls = []
    fake = types.SimpleNamespace(
        CUevent_flags=types.SimpleNamespace(CU_EVENT_DISABLE_TIMING=2),
        CUstream=lambda handle: ("stream", handle),
        cuEventCreate=lambda flags: (bindings.SUCCESS, "event"),
        cuEventRecord=lambda event, stream: calls.append(("record", event, stream))
        or (bindings.SUCCESS,),
        cuStreamWaitEvent=lambda stream, event, flags: calls.append(("wait", stream, event))
        or (bindings.SUCCESS,))
    monkeypatch.setattr(bindings, "driver", fake)
    rt = Runtime.__new__(Runtime)
    rt._scratch, rt.handle, rt.stream = threading.local(), 0x7000, types.SimpleNamespace(
        handle=0x7000)
    rt.wait_for(0x7000)
    assert calls == []
    rt.wait_for(0x6000)
    assert calls == [("record", "event", ("stream", 0x6000)), ("wait", 0x7000, "event")]


def test_a_runtime_on_another_stream_is_one_view_per_handle_with_its_own_stream(monkeypatch):
    # The real Runtime.on: work for a caller's stream must go on that stream
    # (never histkit's own), through one view per handle sharing the caches.
    import threading

    from histkit.gpu.device import Runtime, core

    monkeypatch.setattr(core, "foreign_stream", lambda handle: ("stream", handle))
    rt = Runtime.__new__(Runtime)
    rt._scratch, rt._views, rt._plans = threading.local(), {}, {}
    rt._base, rt.handle, rt.stream, rt._barrier_scratch = rt, 0xA000, "own", "kept"
    view = rt.on(0x6000)
    assert view is not rt and view.handle == 0x6000 and view.stream == ("stream", 0x6000)
    assert view._barrier_scratch is None  # the stream's own, made when first needed
    assert view._plans is rt._plans  # caches shared
    assert rt.on(0x6000) is view and view.on(0x6000) is view
    assert rt.on(None) is rt and view.on(None) is rt and rt.on(0xA000) is rt


@pytest.mark.parametrize("result,expected", [((0, 5), 5), ((0, 1, 2), (1, 2)), ((0,), ()),
                                             (0, ())])
def test_a_driver_result_that_succeeded_unpacks_to_its_values(monkeypatch, result, expected):
    from histkit.gpu.device import bindings

    monkeypatch.setattr(bindings, "driver", types.SimpleNamespace(
        CUresult=types.SimpleNamespace(CUDA_SUCCESS=0)))
    monkeypatch.setattr(bindings, "SUCCESS", 0)
    assert bindings.check(result, "cuSomething") == expected


@pytest.mark.parametrize("result", [(700, 5), (700,), 700])
def test_a_driver_result_that_failed_raises_naming_the_call_and_the_error(monkeypatch, result):
    from histkit.gpu.device import bindings

    monkeypatch.setattr(bindings, "driver", types.SimpleNamespace(
        CUresult=types.SimpleNamespace(CUDA_SUCCESS=0),
        cuGetErrorName=lambda status: (0, b"CUDA_ERROR_ILLEGAL_ADDRESS"),
        cuGetErrorString=lambda status: (0, b"an illegal memory access was encountered")))
    monkeypatch.setattr(bindings, "SUCCESS", 0)
    with pytest.raises(errors.CudaError, match=r"cuMemcpy failed: CUDA_ERROR_ILLEGAL_ADDRESS "
                                               r"\(an illegal memory access"):
        bindings.check(result, "cuMemcpy")


# --- device arrays of other frameworks, seen through cuda.core's StridedMemoryView ---

class FakeDlpackArray:
    """A device array of a framework histkit does not know: DLPack on CUDA.
    `view` is what StridedMemoryView.from_any_interface makes of it."""

    def __init__(self, n, dtype=np.int32, strides=None):
        self.view = types.SimpleNamespace(ptr=0x600000, shape=(n,), strides=strides,
                                          dtype=np.dtype(dtype), device_id=0)

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0


@pytest.fixture
def dlpack_views(fake, monkeypatch):
    import cuda.core.utils

    seen = types.SimpleNamespace(from_any_interface=lambda obj, stream_ptr: obj.view)
    monkeypatch.setattr(cuda.core.utils, "StridedMemoryView", seen)
    return fake


def test_strided_dlpack_keys_are_refused_naming_the_stride_but_packed_and_single_ones_are_not(
        dlpack_views):
    # a strided view read as packed keys would count the wrong elements, silently
    with pytest.raises(ValueError, match=r"must be contiguous; got strides \(2,\) \(in elements"):
        api.histogram(FakeDlpackArray(10, strides=(2,)), 4)
    for packed in (FakeDlpackArray(10, strides=(1,)), FakeDlpackArray(10, strides=None),
                   FakeDlpackArray(1, strides=(2,))):
        api.histogram(packed, 4)


def test_a_dlpack_call_runs_on_the_stream_passed_else_histkits_and_hands_back_unpooled_memory(
        dlpack_views):
    fake = dlpack_views
    counts = api.histogram(FakeDlpackArray(100), 4, stream=0x7100)
    assert ("on", 0x7100) in fake.log
    # the caller keeps the counts: never memory the pool may hand to the next call
    assert counts.pooled is False
    fake.log.clear()
    api.histogram(FakeDlpackArray(100), 4)
    assert ("on", None) in fake.log  # histkit's own stream: no framework names one


def test_raise_if_bad_reads_histkit_device_arrays_at_the_index_they_name(monkeypatch):
    from histkit.gpu.device import DeviceArray

    memory = {0x8000: 3}  # first_bad holds index 3
    memory.update({0x5000 + 4 * i: 10 * i for i in range(8)})  # keys[i] = 10 i
    rt = types.SimpleNamespace(
        device=types.SimpleNamespace(sync=lambda: None),
        copy_to_host=lambda ptr, host: np.array([memory[ptr]], dtype=host.dtype))
    for module in (api, _calls, _lane_calls):
        monkeypatch.setattr(module, "runtime", lambda: rt)
    first_bad = DeviceArray(types.SimpleNamespace(handle=0x8000), 1, np.dtype(np.uint64))
    keys = DeviceArray(types.SimpleNamespace(handle=0x5000), 8, np.dtype(np.int32))
    with pytest.raises(ValueError, match=r"index 3 is 30, outside \[0, 4\)"):
        api.raise_if_bad(first_bad, keys, 4)


# --- the compiled lane (histkit.gpu._lane) -------------------------------------

class FakeDriverCalls:
    """The C path's per-call driver calls, recorded (what the lane makes)."""

    def __init__(self):
        self.log: list[tuple] = []

    def memset(self, ptr, byte, nbytes, stream):
        self.log.append(("memset", ptr, byte, nbytes, stream))
        return 0

    def launch(self, kernel, grid, block, shared_bytes, stream, cooperative, args):
        self.log.append(("launch", kernel, grid, block, shared_bytes, stream, cooperative,
                         tuple(int(arg) for arg in args)))
        return 0

    def sync(self, stream):
        self.log.append(("sync", stream))
        return 0


@pytest.fixture
def lane(fake, monkeypatch):
    """The fake runtime with the C path on and a clean bad-key slot on the
    board (its flag in real host memory), and a fake CuPy whose arrays are
    its ndarray: the compiled lane serves the common call."""
    pytest.importorskip("histkit.gpu._lane")
    calls = FakeDriverCalls()
    calls.flag = (ctypes.c_uint32 * 1)()
    scratch = types.SimpleNamespace(slot=fake._slot, slot_ptr=fake._slot.ptr,
                                    flag_address=ctypes.addressof(calls.flag), slot_clean=True)
    calls.scratch = scratch

    def lane_slot():  # Runtime.lane_slot's protocol (tests/test_verdict_board.py pins it)
        if not scratch.slot_clean or fake.per_call.calls is None:
            return None
        scratch.slot_clean = False
        return scratch

    fake.per_call = types.SimpleNamespace(calls=calls)
    fake.lane_slot = lane_slot
    fake.lane_open = lambda: fake.per_call.calls is not None
    fake.launch_handle = lambda kernel, geometry: kernel.handle
    sys.modules["cupy"].ndarray = FakeCupyArray
    monkeypatch.setattr(_lane_calls, "_LANE", [None, None])
    return calls


def through_python(fake, keys, num_bins, check=True):
    """(counts, [memsets and launches as the C path would be asked them]) of
    the same call on the Python path (the lane switched off)."""
    made = []
    fake.memset = lambda ptr, byte, nbytes: made.append(("memset", ptr, byte, nbytes,
                                                         fake.handle))
    fake.launch = lambda kernel, geometry, *args: made.append(
        ("launch", kernel.handle, geometry.grid, geometry.block, geometry.shared_bytes,
         fake.handle, geometry.cooperative, tuple(int(arg) for arg in args)))
    calls, fake.per_call.calls = fake.per_call.calls, None
    try:
        counts = api.histogram(keys, num_bins, check=check)
    finally:
        fake.per_call.calls = calls
    return counts, made


def address(array) -> int:
    """A fake CuPy array's or PyTorch tensor's device address."""
    return array.data_ptr() if isinstance(array, FakeCudaTensor) else array.data.ptr


def as_asked(log, counts, first_bad=None):
    """Driver calls with the counts' pointer named (each path allocates its
    own), and an unchecked call's first_bad word's."""
    def named(value):
        if value == address(counts):
            return "counts"
        return "first_bad" if first_bad is not None and value == address(first_bad) else value

    return [tuple(named(v) if not isinstance(v, tuple) else tuple(named(a) for a in v)
                  for v in entry) for entry in log]


@pytest.mark.parametrize("n, num_bins", [(4096, 256), (1 << 20, 256), (4096, 1 << 20)],
                         ids=["stores", "zeroes", "global-bins"])
def test_an_unchecked_lane_call_asks_what_the_python_path_asks_and_waits_for_nothing(
        fake, lane, n, num_bins):
    keys = cupy_keys(n)
    counts, first_bad = api.histogram(keys, num_bins, check=False)
    assert lane.log and not any(entry[0] == "sync" for entry in lane.log)
    assert first_bad in fake.cupy_allocated and (first_bad.n, first_bad.dtype) == (1, np.uint64)
    assert first_bad.memsets == [(0xFF, 8)]  # CuPy's memset, on CuPy's stream
    assert lane.scratch.slot_clean  # the thread's slot is not this call's
    (python_counts, python_word), python_asked = through_python(fake, keys, num_bins, False)
    assert python_word.memsets == [(0xFF, 8)]
    assert as_asked(lane.log, counts, first_bad) == as_asked(python_asked, python_counts,
                                                             python_word)
    assert [entry[-1] for entry in as_asked(lane.log, counts, first_bad)
            if entry[0] == "launch"][0][-1] == "first_bad"


def test_an_unchecked_lane_sort_hands_back_its_first_bad_word_unwaited(fake, lane):
    sorted_keys, index, first_bad = api.counting_sort(cupy_keys(1 << 20), 65536, check=False)
    assert not lane.log and not fake.kinds("sync")  # its launches go through the runtime
    assert first_bad.memsets == [(0xFF, 8)] and first_bad.dtype == np.uint64
    assert any(first_bad.data.ptr in args for _, _, args in fake.launched)
    assert {sorted_keys.n, index.n} == {1 << 20} and index.dtype == np.int64


@pytest.mark.parametrize("n, num_bins, dtype, ptr", [
    (4096, 256, np.int32, 0x700000),  # one block storing every bin: no zeroing
    (1 << 20, 256, np.int32, 0x700000),  # many blocks add into the counts: zeroed first
    (4096, 1 << 20, np.int32, 0x700000),  # bins past shared memory: global atomics
    (10_000, 3000, np.int32, 0x700004),  # a start off the 16-byte vectors: a scalar head
    (1 << 16, 65536, np.uint8, 0x700003),
    (1 << 16, 256, np.int64, 0x700008),
    (3, 5, np.int16, 0x700002),
], ids=["stores", "zeroes", "global-bins", "scalar-head", "uint8-odd-start", "int64", "tiny"])
def test_the_lane_asks_the_driver_what_the_python_path_asks_argument_for_argument(
        fake, lane, n, num_bins, dtype, ptr):
    keys = FakeCupyArray(n, dtype, ptr)
    counts = api.histogram(keys, num_bins)
    assert counts in fake.cupy_allocated and (counts.n, counts.dtype) == (num_bins, np.int64)
    *asked, waited = lane.log
    assert waited == ("sync", CUPY_STREAM)
    python_counts, python_asked = through_python(fake, keys, num_bins)
    assert python_asked and as_asked(asked, counts) == as_asked(python_asked, python_counts)
    assert {entry[-3] if entry[0] == "launch" else entry[-1] for entry in asked} == {CUPY_STREAM}


def test_a_clean_lane_call_waits_once_reads_nothing_back_and_leaves_the_slot_clean(fake, lane):
    for _ in range(3):
        api.histogram(cupy_keys(1 << 20), 256)
    assert [entry[0] for entry in lane.log] == ["memset", "launch", "sync"] * 3
    assert lane.scratch.slot_clean and not fake.log  # the Python path never ran


def test_a_lane_call_whose_slot_was_flagged_raises_the_bad_key_through_the_python_reader(
        fake, lane, monkeypatch):
    def copy_to_host(ptr, host):
        host[...] = 999
        return host

    found = [5, NO_BAD_KEY]  # the flagged word, then the next call's clean one
    monkeypatch.setattr(fake, "read_bad_key", lambda slot: found.pop(0))
    monkeypatch.setattr(fake, "copy_to_host", copy_to_host)
    lane.flag[0] = 1  # what hk_note_bad_key sets
    with pytest.raises(ValueError, match=r"index 5 is 999, outside \[0, 256\)"):
        api.histogram(cupy_keys(), 256)
    assert not lane.scratch.slot_clean  # the next call resets the slot on the Python path
    lane.log.clear()
    api.histogram(cupy_keys(), 256)
    assert not lane.log and fake.launched


@pytest.mark.parametrize("n, num_bins", [(4096, 256), (1 << 20, 256), (4096, 1 << 20)],
                         ids=["stores", "zeroes", "global-bins"])
def test_torch_keys_take_the_lane_asking_the_driver_what_the_python_path_asks_on_torchs_stream(
        fake_torch, lane, n, num_bins):
    keys = torch_keys(fake_torch, n)
    counts = api.histogram(keys, num_bins)
    assert counts in fake_torch.torch_allocated and counts.shape == (num_bins,)
    assert counts.dtype is fake_torch.torch.int64
    *asked, waited = lane.log
    assert waited == ("sync", TORCH_STREAM)
    python_counts, python_asked = through_python(fake_torch, keys, num_bins)
    assert python_asked and as_asked(asked, counts) == as_asked(python_asked, python_counts)
    assert {entry[-3] if entry[0] == "launch" else entry[-1] for entry in asked} == {TORCH_STREAM}


def test_an_unchecked_torch_lane_call_hands_back_a_torch_word_set_on_torchs_stream(
        fake_torch, lane):
    keys = torch_keys(fake_torch, 1 << 20)
    counts, first_bad = api.histogram(keys, 256, check=False)
    assert not any(entry[0] == "sync" for entry in lane.log)
    assert first_bad in fake_torch.torch_allocated and first_bad.dtype is fake_torch.torch.uint64
    assert lane.log[0] == ("memset", first_bad.data_ptr(), 0xFF, 8, TORCH_STREAM)
    assert lane.scratch.slot_clean  # the thread's slot is not this call's
    (python_counts, python_word), python_asked = through_python(fake_torch, keys, 256, False)
    assert as_asked(lane.log, counts, first_bad) == as_asked(python_asked, python_counts,
                                                             python_word)


def test_a_torch_sort_takes_the_lane_and_hands_back_torch_tensors(fake_torch, lane):
    keys = torch_keys(fake_torch, 1 << 20)
    sorted_keys, index = api.counting_sort(keys, 256)
    assert lane.log == [("sync", TORCH_STREAM)]  # its launches go through the runtime
    assert {sorted_keys.shape, index.shape} == {(1 << 20,)}
    assert (sorted_keys.dtype, index.dtype) == (keys.dtype, fake_torch.torch.int64)


def test_the_lane_takes_a_frameworks_keys_only_once_they_come(fake, lane):
    api.histogram(cupy_keys(), 256)
    assert _lane_calls._LANE[1].served == {"cupy"}  # a CuPy caller is not made to import PyTorch


@pytest.mark.parametrize("more, error", [
    ({"strides": (2,)}, ValueError),
    ({"device_index": 1}, ValueError),
    ({"dtype": "float32"}, TypeError),
    ({"n": 0}, None),
    ({"neg": True}, BufferError),
], ids=["strided", "other-device", "float-keys", "no-keys", "negated-view"])
def test_the_lane_declines_torch_keys_but_the_common_call_before_asking_the_driver_anything(
        fake_torch, lane, monkeypatch, more, error):
    def view(rt, obj, name, integer=True):  # the general view, which a negated view needs
        raise BufferError("Can't export tensors with the negative bit set")

    monkeypatch.setattr(_calls, "interface_view", view)
    keys = torch_keys(fake_torch, **more)
    if error is None:
        api.histogram(keys, 256)
    else:
        with pytest.raises(error):
            api.histogram(keys, 256)
    assert not lane.log


def declined_calls():
    """Calls the lane must leave to the Python path: (id, the call, what that path does)."""
    keys = cupy_keys
    other_device = keys()
    other_device.data.device_id = 1
    two_d = keys()
    two_d.shape = (64, 64)
    return [
        ("strided", lambda: api.histogram(FakeCupyArray(4096, np.int32, 0x700000, (8,)), 256),
         ValueError),
        ("float-keys", lambda: api.histogram(FakeCupyArray(64, np.float32, 0x700000), 256),
         TypeError),
        ("other-device", lambda: api.histogram(other_device, 256), ValueError),
        ("two-d", lambda: api.histogram(two_d, 256), ValueError),
        ("no-bins", lambda: api.histogram(keys(), 0), ValueError),
        ("too-many-bins", lambda: api.histogram(keys(), 2**63), ValueError),
        ("bool-bins", lambda: api.histogram(keys(), True), TypeError),
        ("numpy-int-bins", lambda: api.histogram(keys(), np.int64(256)), "launch"),
        ("no-keys", lambda: api.histogram(keys(0), 256), "no launch"),
        ("method", lambda: api.histogram(keys(), 256, "atomic"), "launch"),
        ("out", lambda: api.histogram(keys(), 256, out=FakeCupyArray(256, np.int64, 0x1000)),
         "launch"),
        ("stream", lambda: api.histogram(keys(), 256, stream=CUPY_STREAM), "launch"),
        ("numpy-keys", lambda: api.histogram(np.arange(10) % 4, 4), "launch"),
    ]


@pytest.mark.parametrize("case", declined_calls(), ids=lambda case: case[0])
def test_the_lane_declines_every_call_but_the_common_one_before_asking_the_driver_anything(
        fake, lane, case):
    _, call, python_path = case
    if isinstance(python_path, type):
        with pytest.raises(python_path):
            call()
    else:
        call()
        assert bool(fake.launched) == (python_path == "launch")
    assert not lane.log and not fake.kinds("cupy.empty")


def python_launches(fake, keys, num_bins):
    """The launches of the same call on the Python path (the lane off)."""
    calls, fake.per_call.calls = fake.per_call.calls, None
    fake.launched.clear()
    try:
        counts = api.histogram(keys, num_bins)
    finally:
        fake.per_call.calls = calls
    return counts, list(fake.launched)


def named_launches(launched, counts, keys):
    """(kernel, geometry, where the keys and counts are among its arguments)
    of each launch (scratch pointers differ from call to call)."""
    return [(name, geometry, tuple(i for i, a in enumerate(args) if a == keys.data.ptr),
             tuple(i for i, a in enumerate(args) if a == counts.data.ptr))
            for name, geometry, args in launched]


def by_role(log, keys, counts, slot, scratch):
    """Driver calls with every pointer named by its role: the keys (and an
    offset into them), the counts, the slot, and each scratch array by the
    order it first appears in (each path allocates its own: the Python path
    an array each, the lane one block)."""
    scratch_names: dict[int, str] = {}

    def named(value):
        if value == counts.data.ptr:
            return "counts"
        if value == slot.ptr:
            return "slot"
        if keys.data.ptr <= value < keys.data.ptr + keys.n * keys.dtype.itemsize:
            return ("keys", value - keys.data.ptr)
        if any(a.ptr <= value < a.ptr + max(1, a.n * a.dtype.itemsize) for a in scratch):
            return scratch_names.setdefault(value, f"scratch {len(scratch_names)}")
        return value

    return [(kind, named(ptr), *rest) if kind == "memset"
            else (kind, KERNEL_NAMES.get(ptr, ptr), *rest[:-1],
                  tuple(named(arg) for arg in rest[-1]))
            for kind, ptr, *rest in log]


# Every FakeKernel's name by its handle, the kernels kept alive (the fake
# builds a new one per build, where the runtime's cache hands back one).
KERNEL_NAMES: dict[int, str] = {}
_KERNELS_KEPT: list = []


def _named_kernel(kernel):
    KERNEL_NAMES[kernel.handle] = kernel.name
    _KERNELS_KEPT.append(kernel)
    return kernel


# Far above the fake runtime's scratch, which starts far above any scalar
# argument: by_role names pointers by the range they fall in.
HIGH_KEYS, HIGH_SCRATCH = 1 << 44, 1 << 40


@pytest.mark.parametrize("n, num_bins, dtype, residue", [
    (1 << 26, 1 << 20, np.int32, 0),  # auto samples: choice, two passes, scan, gated fast
    (1 << 26, 1 << 20, np.int32, 4),  # the gated fast kernel's scalar head
    ((1 << 25) + 7, 1 << 19, np.int64, 8),
    ((1 << 25) + 1, 1 << 18, np.uint8, 3),
    (4096, 2**32, np.int32, 0),  # 2^32 bins: the atomic kernel, its counts zeroed
], ids=["sampled", "sampled-scalar-head", "sampled-int64", "sampled-uint8-odd", "2_32-bins"])
def test_where_auto_launches_more_the_lane_replays_its_recorded_launches_argument_for_argument(
        fake, lane, monkeypatch, n, num_bins, dtype, residue):
    fake._next = HIGH_SCRATCH
    ptr = HIGH_KEYS + residue
    build = fake.kernel
    monkeypatch.setattr(fake, "kernel", lambda *args: _named_kernel(build(*args)))
    real_open = api.open_call
    monkeypatch.setattr(api, "open_call", lambda *a: pytest.fail("the Python path's _open ran"))
    monkeypatch.setattr(_lane_calls, "_lane_auto",
                        lambda *a: pytest.fail("the launcher ran unrecorded"))
    keys = FakeCupyArray(n, dtype, ptr)
    counts = api.histogram(keys, num_bins)
    assert counts in fake.cupy_allocated and (counts.n, counts.dtype) == (num_bins, np.int64)
    *asked, waited = lane.log
    assert waited == ("sync", CUPY_STREAM) and lane.scratch.slot_clean
    # At most one scratch allocation (the sampled launch's seven arrays in
    # one block; the atomic kernel needs none), by the runtime on CuPy's stream.
    assert len(fake.allocated) == (num_bins < 2**32)
    assert [e for e in fake.log if e[0] in ("on", "empty")] == (
        [("on", CUPY_STREAM), ("empty", fake.allocated[0].n)] if fake.allocated else [])
    lane_scratch = list(fake.allocated)
    assert {entry[-3] if entry[0] == "launch" else entry[-1] for entry in asked} == {CUPY_STREAM}
    fake.allocated.clear()
    monkeypatch.setattr(api, "open_call", real_open)
    python_counts, python_asked = through_python(fake, keys, num_bins)
    assert len(python_asked) > 1
    assert (by_role(asked, keys, counts, fake._slot, lane_scratch)
            == by_role(python_asked, keys, python_counts, fake._slot, fake.allocated))


def test_a_replay_fills_in_each_pointer_at_its_role_and_offset(fake, lane, monkeypatch):
    from histkit.gpu._lane import Replay, ReplayLaunch, ReplayMemset
    from histkit.gpu.geometry import Geometry

    steps = (ReplayMemset(recording.SCRATCH, 512, 7, 64),
             ReplayMemset(recording.COUNTS, 8, 0, 16),
             ReplayLaunch(77, Geometry("k", 3, 64, 128), (0, 5, 0, 0, 9),
                          ((0, recording.KEYS, 4), (2, recording.SCRATCH, 256),
                           (3, recording.FIRST_BAD, 0))))
    monkeypatch.setattr(_lane_calls, "_lane_replay", lambda *args: Replay(1024, steps))
    keys = cupy_keys(1 << 26)
    counts = api.histogram(keys, 1 << 20)
    scratch = fake.allocated[-1].ptr
    assert fake.allocated[-1].n == 1024
    assert lane.log == [
        ("memset", scratch + 512, 7, 64, CUPY_STREAM),
        ("memset", counts.data.ptr + 8, 0, 16, CUPY_STREAM),
        ("launch", 77, 3, 64, 128, CUPY_STREAM, False,
         (keys.data.ptr + 4, 5, scratch + 256, fake._slot.ptr, 9)),
        ("sync", CUPY_STREAM)]


def test_a_replay_holds_only_memsets_and_launches():
    from histkit.gpu._lane import Replay

    with pytest.raises(TypeError, match="ReplayMemset or ReplayLaunch"):
        Replay(0, (("launch", 1),))


def test_a_recorded_shape_is_recorded_once_per_key_address_modulo_the_vector_width(
        fake, lane, monkeypatch):
    recorded = []
    real = recording.record
    monkeypatch.setattr(recording, "record",
                        lambda *args: recorded.append(args[2:]) or real(*args))
    for ptr in (0x700000, 0x700010, 0x700004, 0x700000, 0x700024):
        api.histogram(FakeCupyArray(1 << 26, np.int32, ptr), 1 << 20)
    assert recorded == [(np.int32, 1 << 26, 1 << 20, 0), (np.int32, 1 << 26, 1 << 20, 4)]


def test_where_auto_cannot_be_recorded_the_lane_runs_its_launcher_and_waits_once(
        fake, lane, monkeypatch):
    monkeypatch.setattr(recording, "record", lambda *args: None)
    real_open = api.open_call
    monkeypatch.setattr(api, "open_call", lambda *a: pytest.fail("the Python path's _open ran"))
    keys = cupy_keys(1 << 26)
    counts = api.histogram(keys, 1 << 20)
    assert lane.log == [("sync", CUPY_STREAM)] and not fake.kinds("sync")
    assert counts in fake.cupy_allocated and counts.n == 1 << 20
    assert lane.scratch.slot_clean
    launched = list(fake.launched)
    assert launched and fake.handle == CUPY_STREAM  # the runtime on CuPy's stream
    monkeypatch.setattr(api, "open_call", real_open)
    python_counts, python_launched = python_launches(fake, keys, 1 << 20)
    assert (named_launches(launched, counts, keys)
            == named_launches(python_launched, python_counts, keys))


def test_a_replay_whose_scratch_does_not_fit_queues_nothing_and_the_python_path_names_it(
        fake, lane, monkeypatch):
    def full(n, dtype, pooled=True):
        raise errors.DeviceMemoryError(n, 0)

    monkeypatch.setattr(fake, "empty", full)
    with pytest.raises(errors.DeviceMemoryError):
        api.histogram(cupy_keys(1 << 26), 1 << 20)
    assert not lane.log  # the lane queued nothing before declining


def test_a_thread_whose_slot_is_not_clean_takes_the_python_path(fake, lane):
    lane.scratch.slot_clean = False  # a bad key last time, or the thread's first call
    api.histogram(cupy_keys(), 256)
    assert not lane.log and [e[1] for e in fake.kinds("launch")] == ["fast_histogram"]


def test_the_lane_makes_each_shapes_plan_once(fake, lane, monkeypatch):
    made = []
    real = _lane_calls._lane_plan
    monkeypatch.setattr(_lane_calls, "_lane_plan",
                        lambda *args: made.append(args[2:]) or real(*args))
    for n in (4096, 4096, 1 << 20, 4096):
        api.histogram(cupy_keys(n), 256)
    assert made == [(4096, 256), (1 << 20, 256)]


def sort_launches(launched, outputs, keys):
    """(kernel, geometry, where the keys and each output are among its
    arguments) of each launch (scratch pointers differ from call to call)."""
    ptrs = [keys.data.ptr, *(out.data.ptr for out in outputs)]
    return [(name, geometry, tuple(tuple(i for i, a in enumerate(args) if a == ptr)
                                   for ptr in ptrs))
            for name, geometry, args in launched]


@pytest.mark.parametrize("n, num_bins", [(3000, 256), (1 << 20, 65536), (1 << 24, 256)],
                         ids=["rank", "resident-or-passes", "large"])
def test_a_common_sort_runs_its_launcher_from_the_lane_and_waits_once(fake, lane, monkeypatch,
                                                                     n, num_bins):
    real_open = api.open_call
    monkeypatch.setattr(api, "open_call", lambda *a: pytest.fail("the Python path's _open ran"))
    keys = cupy_keys(n)
    sorted_keys, index = api.counting_sort(keys, num_bins)
    assert lane.log == [("sync", CUPY_STREAM)] and not fake.kinds("sync")
    assert (sorted_keys.n, sorted_keys.dtype, index.n, index.dtype) == (n, keys.dtype, n,
                                                                        np.int64)
    assert sorted_keys in fake.cupy_allocated and index in fake.cupy_allocated
    assert lane.scratch.slot_clean and fake.handle == CUPY_STREAM
    launched = list(fake.launched)
    monkeypatch.setattr(api, "open_call", real_open)
    fake.launched.clear()
    calls, fake.per_call.calls = fake.per_call.calls, None
    try:
        python_outputs = api.counting_sort(keys, num_bins)
    finally:
        fake.per_call.calls = calls
    assert launched and (sort_launches(launched, (sorted_keys, index), keys)
                         == sort_launches(fake.launched, python_outputs, keys))


@pytest.mark.parametrize("call", [
    lambda keys: api.counting_sort(keys, 256, stable=False),
    lambda keys: api.counting_sort(keys, 256, index_dtype=np.int32),
    lambda keys: api.counting_sort(keys, 256, stream=CUPY_STREAM),
    lambda keys: api.counting_sort(keys, np.int64(256)),
    lambda keys: api.counting_sort(cupy_keys(0), 256),
    lambda keys: api.counting_sort(np.arange(10) % 4, 4),
], ids=["unstable", "int32-index", "stream", "numpy-int-bins", "no-keys", "numpy-keys"])
def test_the_lane_leaves_every_other_sort_to_the_python_path(fake, lane, call):
    call(cupy_keys())
    assert not lane.log


def test_a_lane_sort_whose_slot_was_flagged_raises_the_bad_key(fake, lane, monkeypatch):
    def copy_to_host(ptr, host):
        host[...] = -3
        return host

    monkeypatch.setattr(fake, "read_bad_key", lambda slot: 17)
    monkeypatch.setattr(fake, "copy_to_host", copy_to_host)
    lane.flag[0] = 1
    with pytest.raises(ValueError, match=r"index 17 is -3, outside \[0, 256\)"):
        api.counting_sort(cupy_keys(), 256)
    assert lane.log == [("sync", CUPY_STREAM)] and not lane.scratch.slot_clean


@pytest.mark.parametrize(("bins", "range_", "waits"), [
    (16, (0.0, 1.0), False),  # numpy's estimate bounded within one bin: no sample can fail
    (np.linspace(0.0, 1.0, 9), None, False),  # explicit edges: every search ends in a counter
    (4, (-3.4e38, 3.4e38), True),  # x - lo may overflow float32: numpy may fail on a sample
])
def test_a_binning_call_waits_to_read_back_a_failing_sample_only_where_one_can_fail(
        fake, monkeypatch, bins, range_, waits):
    from histkit.gpu import binning

    monkeypatch.setattr(binning, "runtime", lambda: fake)
    binning.bin_histogram(FakeCupyArray(4096, np.float32, 0x700000), bins, range_)
    assert fake.kinds("launch"), "the kernel was launched"
    assert (("sync", "read_bad_key") in fake.log) == waits
