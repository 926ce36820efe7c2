"""Other libraries' histograms as callables for ``histkit check``: how to judge
a library function you call rather than write. On a GPU host:

    histkit check examples/peer_kernels.py:torch_bincount_weights \
        --kind weighted-histogram --inputs torch
    histkit check examples/peer_kernels.py:cupy_histogram --kind bin-histogram --inputs cupy

docs/check.md ("Judging a library's function") lists what each one gets.
"""

from __future__ import annotations


def torch_bincount_weights(keys, weights, num_bins):
    """torch.bincount(keys, weights): float64 sums, added with atomics on a GPU."""
    import torch

    if len(keys) and (int(keys.min()) < 0 or int(keys.max()) >= num_bins):
        bad = int(torch.nonzero((keys < 0) | (keys >= num_bins))[0])
        raise ValueError(f"key at index {bad} is outside [0, {num_bins})")
    return torch.bincount(keys.long(), weights.double(), minlength=num_bins)


def torch_index_add(keys, weights, num_bins):
    """Tensor.index_add_ into float64 zeros (the scatter-add users write)."""
    import torch

    if len(keys) and (int(keys.min()) < 0 or int(keys.max()) >= num_bins):
        bad = int(torch.nonzero((keys < 0) | (keys >= num_bins))[0])
        raise ValueError(f"key at index {bad} is outside [0, {num_bins})")
    sums = torch.zeros(num_bins, dtype=torch.float64, device=weights.device)
    return sums.index_add_(0, keys.long(), weights.double())


def cupy_bincount_weights(keys, weights, num_bins):
    """cupy.bincount(keys, weights): float64 sums, added with atomics."""
    import cupy

    if len(keys) and (int(keys.min()) < 0 or int(keys.max()) >= num_bins):
        bad = int(cupy.flatnonzero((keys < 0) | (keys >= num_bins))[0])
        raise ValueError(f"key at index {bad} is outside [0, {num_bins})")
    return cupy.bincount(keys.astype(cupy.int64), weights.astype(cupy.float64),
                         minlength=num_bins)


def histkit_weighted(keys, weights, num_bins):
    """histkit's own gpu.histogram(keys, num_bins, weights=): exact sums, judged
    as a peer is (it raises BadKeyError, a ValueError naming the index)."""
    from histkit import gpu

    return gpu.histogram(keys, num_bins, weights=weights)


def cupy_histogram(samples, bins, range):
    """cupy.histogram, as np.histogram is called."""
    import cupy

    return cupy.histogram(samples, bins, range)


def torch_histogram(samples, bins, range):
    """torch.histogram (CPU only in PyTorch): float samples, as np.histogram is called."""
    import torch

    samples = samples.cpu().double()
    if isinstance(bins, int):
        low, high = range if range is not None else (float(samples.min()), float(samples.max()))
        return torch.histogram(samples, bins, range=(float(low), float(high)))
    return torch.histogram(samples, bins.cpu().double())
