"""histkit: reference oracles, CUDA kernels and a conformance suite for GPU
histograms and counting sort (Chapter 7: Histograms).

``histkit.oracles`` is the CPU ground truth; ``histkit.gpu`` runs the CUDA
kernels (imported lazily: it needs cuda-python and a GPU);
``histkit.conformance`` diffs the two (and judges users' kernels);
``histkit.dask`` runs the oracles and kernels over chunked Dask arrays.
"""

from importlib.metadata import version

from histkit import oracles

__version__ = version("histkit")  # meson.build's project version, as installed
__all__ = ["__version__", "oracles", "gpu", "conformance", "dask"]


def __getattr__(name):
    # The GPU layers import cuda-python on first use only, so
    # ``import histkit`` works on machines without it.
    if name in ("gpu", "conformance", "dask"):
        import importlib

        return importlib.import_module(f"histkit.{name}")
    raise AttributeError(f"module 'histkit' has no attribute {name!r}")
