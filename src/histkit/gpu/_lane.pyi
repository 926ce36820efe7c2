from collections.abc import Callable

import numpy as np

class LanePlan:
    kernel: int
    geometry: object
    n_and_bins: tuple
    shared_bins: object
    overwrite: object
    grid: int
    block: int
    shared_bytes: int
    zero_bytes: int
    heads: tuple[int, ...]
    def __init__(self, kernel: int, geometry: object, n_and_bins: tuple, shared_bins: object,
                 overwrite: object, zero_bytes: int, heads: tuple[int, ...]) -> None: ...

class Lane:
    def __init__(self, rt: object, cupy: object,
                 plan_for: Callable[[object, int, int], LanePlan | None],
                 check: Callable[[int, str], object],
                 bad_key: Callable[[object, int, int, object], None], max_bins: int) -> None: ...
    def histogram(self, keys: object, num_bins: object) -> np.ndarray | None: ...
