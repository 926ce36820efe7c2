"""histkit.gpu: the CUDA kernels of cuda/, compiled with NVRTC and launched
through cuda-python (cuda.core).

``import histkit.gpu`` works without a GPU or cuda-python; the functions then
raise GpuUnavailableError saying why, and ``gpu_unavailable_reason()`` returns
it without raising.
"""

from histkit.gpu.api import (
    METHODS,
    argsort,
    counting_sort,
    exclusive_scan,
    histogram,
    radix_sort,
    raise_if_bad,
)
from histkit.gpu.binning import bin_histogram
from histkit.gpu.device import gpu_unavailable_reason
from histkit.gpu.errors import (
    CudaError,
    DeviceMemoryError,
    GpuUnavailableError,
    KernelCompileError,
)

__all__ = [
    "METHODS",
    "CudaError",
    "DeviceMemoryError",
    "GpuUnavailableError",
    "KernelCompileError",
    "argsort",
    "bin_histogram",
    "counting_sort",
    "exclusive_scan",
    "gpu_unavailable_reason",
    "histogram",
    "radix_sort",
    "raise_if_bad",
]


def __dir__() -> list[str]:
    """The public names (what tab completion offers), not the imports."""
    return sorted(__all__)
