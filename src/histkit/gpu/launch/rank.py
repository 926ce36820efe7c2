"""The smallest stable sorts in one launch: counting_sort.cu's rank_sort, each
key's output slot counted by comparing it with every other key."""

from __future__ import annotations

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import RANK_MAX_BINS, RANK_MAX_KEYS, RANK_WARPS, WARP
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.errors import UnsupportedShape
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import Keys, key_args
from histkit.gpu.policy import check_index_dtype


def rank_fits(n: int, num_bins: int) -> bool:
    """Whether rank_sort takes n keys over num_bins bins (its staged keys fit
    a block's shared memory; its bins compare as 32 bits)."""
    return 0 < n <= RANK_MAX_KEYS and num_bins <= RANK_MAX_BINS


def rank_sort(rt: Runtime, keys: Keys, num_bins: int, out_keys: DeviceArray,
              out_index: DeviceArray, first_bad_ptr: int, index_dtype=np.int64) -> Geometry:
    """The stable sort of up to RANK_MAX_KEYS keys in one launch, no scratch:
    UnsupportedShape past rank_fits."""
    if not rank_fits(keys.n, num_bins):
        raise UnsupportedShape(f"rank_sort takes 1 to {RANK_MAX_KEYS} keys and num_bins <= "
                               f"{RANK_MAX_BINS}; got {keys.n} keys, num_bins={num_bins}")
    kernel, geometry = rt.plan(("rank", keys.dtype, keys.n, np.dtype(index_dtype)),
                               lambda: _rank_plan(rt, keys, index_dtype))
    rt.launch(kernel, geometry, *key_args(keys, num_bins), first_bad_ptr, out_keys.ptr,
              out_index.ptr)
    return geometry


def _rank_plan(rt: Runtime, keys: Keys, index_dtype):
    index_dtype = check_index_dtype(keys.n, index_dtype)
    kernel = rt.kernel("counting_sort.cu", "rank_sort",
                       keys.defines(**contract.index_defines(index_dtype)))
    return kernel, Geometry("rank_sort", -(-keys.n // WARP), RANK_WARPS * WARP)
