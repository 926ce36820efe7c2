import numpy as np
import numpy.typing as npt

def sampled_positions(
    weights: npt.NDArray[np.float32 | np.float64], kind: str, sample_size: int
) -> npt.NDArray[np.int64]: ...
def wide_window(
    weights: npt.NDArray[np.float32 | np.float64], kind: str
) -> tuple[int, int] | None: ...
def wide_sums(
    keys: npt.NDArray[np.integer],
    weights: npt.NDArray[np.float32 | np.float64],
    num_bins: int,
    most: int,
    outside_per_worker: int | None = ...,
) -> tuple[npt.NDArray[np.float64] | None, int] | None: ...

MANTISSA_BITS: dict[str, int]
LARGEST_P: dict[str, int]
P_OFFSET: dict[str, int]
WIDE_SAMPLE: int
TOP_SLACK: int
MIN_WEIGHTS: int
