import numpy as np
import numpy.typing as npt

def counting_sort_arrays(
    keys: npt.NDArray[np.integer],
    num_bins: int,
    sorted_keys: npt.NDArray[np.integer],
    original_index: npt.NDArray[np.int64],
    max_threads: int,
) -> int: ...
