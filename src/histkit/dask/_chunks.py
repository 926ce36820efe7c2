"""What every Dask computation of histkit shares: the chunks' array module, the
threads a task takes, the reduction tree and the chunks' offsets."""

from __future__ import annotations

import numpy as np

from histkit.oracles._inputs import as_weight_array

# A task counts or sorts its chunk on one thread: Dask runs chunks in parallel
# (a worker's threads, many workers), and an oracle that also took every idle
# CPU per chunk would oversubscribe them.
THREADS_PER_TASK = 1

TREE_WIDTH = 8  # partial histograms summed per task of the reduction tree


def dask_array_module():
    """dask.array, or an ImportError that says how to install it."""
    try:
        import dask.array as da
    except ImportError:
        raise ImportError('histkit.dask needs Dask: python3 -m pip install "histkit[dask]"') \
            from None
    return da


def require_dask_array(keys):
    """dask.array, once keys are checked: 1-d integer keys of known chunk sizes."""
    da = dask_array_module()
    if not isinstance(keys, da.Array):
        raise TypeError(f"keys must be a dask.array.Array; got {type(keys).__name__} "
                        f"(use histkit.oracles or histkit.gpu for in-memory arrays)")
    if keys.ndim != 1:
        raise ValueError(f"keys must be one-dimensional; got shape {keys.shape}")
    if np.dtype(keys.dtype).kind not in "iu":
        raise TypeError(f"keys must have an integer dtype (int8 ... uint64); got {keys.dtype}")
    require_known_chunks(keys, "keys")
    return da


def require_known_chunks(array, name: str) -> None:
    """Chunk sizes are known (the global indices and the sort's placement need them)."""
    if any(np.isnan(c) for axis in array.chunks for c in axis):
        raise ValueError(f"{name} must have known chunk sizes (call "
                         f"{name}.compute_chunk_sizes())")


def weights_chunked_as(da, weights, like, name: str):
    """Weights (Dask or NumPy) as a Dask array chunked as `like` (the keys or
    the samples, called `name`), once their shape and dtype are checked as
    the oracles check them."""
    if not isinstance(weights, da.Array):
        weights = np.asarray(weights)
    if weights.shape != like.shape:
        raise ValueError(f"weights must have the {name}' shape {like.shape}; got "
                         f"{weights.shape}")
    as_weight_array(np.empty(0, weights.dtype), 0)  # the oracles' dtype check
    if not isinstance(weights, da.Array):
        return da.from_array(weights, chunks=like.chunks)
    return weights if weights.chunks == like.chunks else weights.rechunk(like.chunks)


def is_device_chunk(block) -> bool:
    return type(block).__module__.split(".")[0] == "cupy"


def xp_of(array):
    """The array module of a chunk: CuPy for CuPy chunks, else NumPy."""
    if is_device_chunk(array):
        import cupy

        return cupy
    return np


def to_host(array) -> np.ndarray:
    return array.get() if is_device_chunk(array) else np.asarray(array)


def tree(parts: list, combine):
    """Parts combined TREE_WIDTH at a time, down to at most TREE_WIDTH of them."""
    import dask

    while len(parts) > TREE_WIDTH:
        parts = [dask.delayed(combine)(*parts[i:i + TREE_WIDTH])
                 for i in range(0, len(parts), TREE_WIDTH)]
    return parts


def offsets_of(keys) -> list[int]:
    return [int(o) for o in np.concatenate([[0], np.cumsum(keys.chunks[0])])]
