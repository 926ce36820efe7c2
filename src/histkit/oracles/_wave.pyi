import numpy as np
import numpy.typing as npt

def naive_wave_counts(
    keys: npt.NDArray[np.integer], num_bins: int, warp_size: int, max_threads: int
) -> tuple[npt.NDArray[np.int64], int]: ...
