import numpy as np
import numpy.typing as npt

MIN_POOLED_BYTES: int
BLOCK_UNIT: int
POOL_BLOCKS: int
POOL_SHARE: float

def empty(n: int, dtype: npt.DTypeLike) -> npt.NDArray[np.generic]: ...
def release_pages() -> int: ...
def pooled_bytes() -> int: ...
