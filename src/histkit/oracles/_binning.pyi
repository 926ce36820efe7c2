import numpy as np
import numpy.typing as npt

def even_counts(
    samples: npt.NDArray[np.integer | np.floating],
    half: bool,
    edges: npt.NDArray[np.float64],
    lo: float,
    width: float,
    scale: float,
    edge_bits: int,
    diff_bits: int,
    quot_bits: int,
    closed_last: bool,
    keep: tuple[bool, bool, float | int | None, float | int | None],
    max_threads: int,
    per_unit: float = 0.0,
    slots: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.int64], int, int, int, int]: ...
def edge_counts(
    samples: npt.NDArray[np.integer | np.floating],
    half: bool,
    edges: npt.NDArray[np.float64 | np.int64 | np.uint64],
    closed_last: bool,
    max_threads: int,
    slots: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.int64], int, int, int]: ...
def sample_span(
    samples: npt.NDArray[np.integer | np.floating], half: bool, max_threads: int
) -> tuple[float, float, bool] | tuple[int, int, bool]: ...
