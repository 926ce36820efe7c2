import numpy as np
import numpy.typing as npt

def exclusive_scan_counts(
    counts: npt.NDArray[np.integer],
) -> tuple[npt.NDArray[np.int64], int, int]: ...
