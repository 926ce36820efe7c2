import numpy as np
import numpy.typing as npt

def histogram_counts(
    keys: npt.NDArray[np.integer], num_bins: int, max_threads: int
) -> tuple[npt.NDArray[np.int64], int]: ...
