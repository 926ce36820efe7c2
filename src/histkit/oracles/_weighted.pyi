import numpy as np
import numpy.typing as npt

def weighted_sums(
    keys: npt.NDArray[np.integer],
    weights: npt.NDArray[np.float32 | np.float64 | np.int64 | np.uint64],
    num_bins: int,
    max_threads: int,
) -> tuple[npt.NDArray[np.float64] | None, int]: ...

CHUNK_SPAN: dict[str, tuple[int, int]]
SPECIAL_FLAGS: dict[str, int]
IN_PLACE_MAX_BINS: dict[str, int]
ROW_LEN: dict[str, int]
