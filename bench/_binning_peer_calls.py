"""The peers bench/binning_peers.py judges: one callable per library, each
returning counts for a Job (samples, bins, range, convention), or raising
Unavailable (it cannot run here) or NotApplicable (its API cannot express
the input)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from _binning_rules import _quiet


class Unavailable(Exception):
    """The peer cannot run here; the message says why."""


class NotApplicable(Exception):
    """The peer's API cannot express this input (explicit edges for an even-bins call)."""


@dataclass
class Job:
    """One call for a peer: range as the case gives it, span the (lo, hi) it resolves
    to (numpy's min and max for range=None), for peers that need a range."""

    samples: np.ndarray
    bins: object
    range: tuple | None
    span: tuple[float, float] | None
    closed_last: bool

    @property
    def even(self) -> bool:
        return np.ndim(self.bins) == 0

    def lo_hi(self) -> tuple[float, float]:
        if not self.even:
            raise NotApplicable("explicit edges: this call takes even bins only")
        return float(self.span[0]), float(self.span[1])


@dataclass
class Peer:
    """A library's binning call. setup() imports it and returns (call, version), or
    raises Unavailable; call(job) returns the counts of job.bins bins."""

    name: str
    where: str  # "CPU" or "GPU"
    setup: Callable[[], tuple[Callable[[Job], object], str]]
    note: str = ""
    takes_convention: bool = False  # called with right_closed_last=, so /cub cases apply
    call: Callable[[Job], object] | None = field(default=None, repr=False)
    version: str = ""


def _import(name: str):
    try:
        return importlib.import_module(name)
    except Exception as error:  # ImportError, or a missing CUDA library at import
        raise Unavailable(f"{name} does not import: {type(error).__name__}: {error}") from None


def _host(counts) -> np.ndarray:
    """Counts from any framework as an int64 NumPy array."""
    if isinstance(counts, tuple):
        counts = counts[0]
    if not isinstance(counts, np.ndarray):
        if hasattr(counts, "get"):  # CuPy
            counts = counts.get()
        elif hasattr(counts, "cpu"):  # PyTorch
            counts = counts.cpu().numpy()
    return np.asarray(counts).astype(np.int64)


def _numpy():
    return (lambda job: np.histogram(job.samples, job.bins, job.range)[0]), np.__version__


def _oracle():
    histkit = _import("histkit")
    oracles = _import("histkit.oracles")

    def call(job):
        return oracles.bin_histogram(job.samples, job.bins, job.range,
                                     right_closed_last=job.closed_last)[0]

    return call, histkit.__version__


def _histkit_gpu():
    histkit = _import("histkit")
    gpu = _import("histkit.gpu")
    run = getattr(gpu, "bin_histogram", None)
    if run is None:
        raise Unavailable("histkit.gpu has no bin_histogram")
    reason = gpu.gpu_unavailable_reason()
    if reason is not None:
        raise Unavailable(f"no GPU: {reason}")
    return (lambda job: run(job.samples, job.bins, job.range,
                            right_closed_last=job.closed_last)), histkit.__version__


def _fast_histogram():
    fh = _import("fast_histogram")

    def call(job):
        lo_hi = job.lo_hi()
        return fh.histogram1d(job.samples, bins=int(job.bins), range=lo_hi)

    return call, fh.__version__


def _boost_regular():
    bh = _import("boost_histogram")

    def call(job):
        lo, hi = job.lo_hi()
        hist = bh.Histogram(bh.axis.Regular(int(job.bins), lo, hi))
        hist.fill(job.samples)
        return hist.view(flow=False)  # the flow bins hold what the counts leave out

    return call, bh.__version__


def _boost_variable():
    bh = _import("boost_histogram")

    def call(job):
        if job.even:  # numpy's edges for this call, as a user would pass them
            with _quiet():
                edges = np.histogram_bin_edges(job.samples, job.bins, job.range)
        else:
            edges = np.asarray(job.bins)
        hist = bh.Histogram(bh.axis.Variable(np.asarray(edges, np.float64)))
        hist.fill(job.samples)
        return hist.view(flow=False)

    return call, bh.__version__


def _torch_device(device: str):
    torch = _import("torch")
    if device == "cuda" and not torch.cuda.is_available():
        raise Unavailable("torch.cuda.is_available() is False")
    return torch


def _torch_histc(device: str):
    def setup():
        torch = _torch_device(device)

        def call(job):
            lo, hi = job.lo_hi()
            tensor = torch.from_numpy(np.ascontiguousarray(job.samples)).to(device)
            return torch.histc(tensor, bins=int(job.bins), min=lo, max=hi)

        return call, torch.__version__

    return setup


def _torch_histogram(device: str):
    def setup():
        torch = _torch_device(device)

        def call(job):
            tensor = torch.from_numpy(np.ascontiguousarray(job.samples)).to(device)
            if job.even:
                return torch.histogram(tensor, bins=int(job.bins), range=job.lo_hi())[0]
            # torch wants edges of the samples' dtype: a user converts them
            edges = torch.from_numpy(np.asarray(job.bins)).to(device=device, dtype=tensor.dtype)
            return torch.histogram(tensor, bins=edges)[0]

        return call, torch.__version__

    return setup


def _cupy():
    cupy = _import("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise Unavailable("CuPy sees no GPU")
    except Unavailable:
        raise
    except Exception as error:
        raise Unavailable(f"CuPy sees no GPU: {error}") from None
    return cupy


def _cupy_histogram(accelerators: list[str]):
    """cupy.histogram with CuPy's routine accelerators set to `accelerators` for the call
    (["cub"], CuPy's default on CUDA, sends it to CUB HistogramRange; [] to CuPy's kernel)."""

    def setup():
        cupy = _cupy()
        from cupy._core import _accelerator

        def call(job):
            saved = list(_accelerator.get_routine_accelerators())
            _accelerator.set_routine_accelerators(accelerators)
            try:
                bins = int(job.bins) if job.even else cupy.asarray(job.bins)
                return cupy.histogram(cupy.asarray(job.samples), bins, job.range)[0]
            finally:
                _accelerator.set_routine_accelerators(saved)

        names = {_accelerator.ACCELERATOR_CUB: "cub"}
        default = [names.get(a, str(a)) for a in _accelerator.get_routine_accelerators()]
        return call, f"{cupy.__version__}, routine accelerators by default: {default}"

    return setup


def _cccl_version() -> str:
    from importlib.metadata import version

    return f"cuda-cccl {version('cuda-cccl')}"


def _cub_even():
    """CUB HistogramEven through cuda.compute, as histkit.bench reaches it: levels of
    the dtype numpy's edges would have, int32 counts, temporary storage per call."""
    cupy = _cupy()
    compute = _import("cuda.compute")

    def call(job):
        lo, hi = job.lo_hi()
        samples = cupy.asarray(job.samples)
        level_dtype = np.result_type(job.samples.dtype, 0.0)  # float32 for float32, as numpy
        hist = cupy.zeros(int(job.bins), dtype=cupy.int32)
        arguments = {"d_samples": samples, "d_histogram": hist,
                     "h_num_output_levels": np.array([int(job.bins) + 1], np.int32),
                     "h_lower_level": np.array([lo], level_dtype),
                     "h_upper_level": np.array([hi], level_dtype),
                     "num_samples": int(samples.size)}
        algorithm = compute.make_histogram_even(**arguments)  # cached by cuda.compute
        temp_bytes = algorithm(temp_storage=None, **arguments)
        algorithm(temp_storage=cupy.empty(max(1, temp_bytes), dtype=cupy.uint8), **arguments)
        return hist

    return call, _cccl_version()


def _cub_range():
    cupy = _cupy()
    compute = _import("cuda.compute")
    make = getattr(compute, "make_histogram_range", None)
    if make is None:
        raise Unavailable(f"cuda.compute ({_cccl_version()}) has no HistogramRange, only "
                          f"HistogramEven; CuPy's CUB accelerator row reaches HistogramRange")

    def call(job):
        # the same call shape as make_histogram_even, levels on the device
        edges = np.asarray(job.bins) if not job.even else numpy_edges(job)
        samples = cupy.asarray(job.samples)
        hist = cupy.zeros(len(edges) - 1, dtype=cupy.int32)
        arguments = {"d_samples": samples, "d_histogram": hist,
                     "h_num_output_levels": np.array([len(edges)], np.int32),
                     "d_levels": cupy.asarray(edges), "num_samples": int(samples.size)}
        algorithm = make(**arguments)
        temp_bytes = algorithm(temp_storage=None, **arguments)
        algorithm(temp_storage=cupy.empty(max(1, temp_bytes), dtype=cupy.uint8), **arguments)
        return hist

    return call, _cccl_version()


def numpy_edges(job: Job) -> np.ndarray:
    with _quiet():
        return np.histogram_bin_edges(job.samples, job.bins, job.range)


def all_peers() -> list[Peer]:
    """Every peer this script knows, CPU ones first."""
    half_open = "every bin half-open: a sample on hi is not counted"
    return [
        Peer("numpy.histogram", "CPU", _numpy),
        Peer("histkit.oracles.bin_histogram", "CPU", _oracle, takes_convention=True),
        Peer("fast_histogram.histogram1d", "CPU", _fast_histogram, note=half_open),
        Peer("boost_histogram Regular axis", "CPU", _boost_regular,
             note=f"{half_open}: it lands in the overflow bin"),
        Peer("boost_histogram Variable axis, numpy's edges", "CPU", _boost_variable,
             note=f"{half_open}: it lands in the overflow bin"),
        Peer("torch.histc (CPU)", "CPU", _torch_histc("cpu")),
        Peer("torch.histogram (CPU)", "CPU", _torch_histogram("cpu")),
        Peer("torch.histc (CUDA)", "GPU", _torch_histc("cuda")),
        Peer("torch.histogram (CUDA)", "GPU", _torch_histogram("cuda")),
        Peer("cupy.histogram, CuPy's kernel", "GPU", _cupy_histogram([]),
             note="routine accelerators off: CuPy's binary search over cupy.linspace edges"),
        Peer("cupy.histogram, CUB accelerator (HistogramRange)", "GPU", _cupy_histogram(["cub"]),
             note="CuPy's default on CUDA: CUB HistogramRange, the top edge moved up one ulp"),
        Peer("CUB HistogramEven (cuda.compute)", "GPU", _cub_even, note=half_open),
        Peer("CUB HistogramRange (cuda.compute)", "GPU", _cub_range, note=half_open),
        Peer("histkit.gpu.bin_histogram", "GPU", _histkit_gpu, takes_convention=True),
    ]


def ready(peer: Peer) -> str | None:
    """Set the peer up and try it on one sample; None when it runs, else why not."""
    try:
        peer.call, peer.version = peer.setup()
        probe = Job(np.array([0.25]), 2, (0.0, 1.0), (0.0, 1.0), True)
        _host(peer.call(probe))
    except Unavailable as why:
        return str(why)
    except Exception as error:
        return f"fails on [0.25], 2 bins on (0, 1): {type(error).__name__}: {error}"
    return None
