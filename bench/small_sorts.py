"""Small stable sorts: rank_sort (every key compared with every other, up to
RANK_MAX_KEYS keys) and the resident path (one cooperative launch) against
the onesweep passes, and whole gpu.counting_sort calls against
torch.sort(stable=True), at N = 2^10 ... 2^21 and K = 256, 65536.

Each row first checks gpu.counting_sort against cupy.argsort (stable). The
two paths are timed as launcher + stream sync (what they queue, and the wait
for it); the calls as a user makes them. Medians of many; a GPU host with
CuPy (PyTorch optional). bench/NOTES.md, "Session 6", has the figures.

    python bench/small_sorts.py [--repeats 300] [--out bench/results]
"""

from __future__ import annotations

from _shared import gpu_rows_main, median_seconds

SIZES = (10, 11, 12, 13, 14, 16, 18, 20, 21)  # log2 N
BINS = (256, 65536)


def sort_row(cupy, torch, rt, n_log2: int, num_bins: int, repeats: int) -> dict:
    """One (N, K): the call, torch's call, and each path's launch + sync (us)."""
    from histkit import gpu
    from histkit.gpu import registry
    from histkit.gpu.api import _begin
    from histkit.gpu.launch import rank as launch_rank
    from histkit.gpu.launch import resident as launch_resident

    keys = cupy.random.RandomState(1).randint(0, num_bins, 1 << n_log2, dtype=cupy.int32)
    sorted_keys, index = gpu.counting_sort(keys, num_bins)
    expected = cupy.argsort(keys, kind="stable")
    if not (bool((index == expected).all()) and bool((sorted_keys == keys[expected]).all())):
        raise AssertionError(f"gpu.counting_sort is wrong at 2^{n_log2} keys, K={num_bins}")
    us = {"gpu.counting_sort call": median_seconds(
        lambda: gpu.counting_sort(keys, num_bins), repeats, warm_up=30) * 1e6}
    if torch is not None:
        tensor = torch.as_tensor(keys, device="cuda")
        us["torch.sort(stable) call"] = median_seconds(
            lambda: (torch.sort(tensor, stable=True), torch.cuda.synchronize()),
            repeats, warm_up=30) * 1e6
    call = _begin(rt, keys, None, True)
    out_keys = cupy.empty_like(keys)
    out_index = cupy.empty(keys.size, cupy.int64)
    slot = call.rt.bad_key_slot()
    paths = {"onesweep launch + sync": "sort-stable"}
    if launch_rank.rank_fits(call.keys.n, num_bins):
        paths["rank launch + sync"] = "sort-stable-rank"
    if launch_resident.resident_fits(call.rt, call.keys, num_bins):
        paths["resident launch + sync"] = "sort-stable-resident"
    for name, row_name in paths.items():
        kernel = registry.by_row(row_name)

        def run(kernel=kernel):
            kernel.run(call.rt, call.keys, num_bins, out_keys.data, out_index.data, slot, [])
            call.rt.sync("a small sort")

        us[name] = median_seconds(run, repeats, warm_up=30) * 1e6
    return {"N": 1 << n_log2, "K": num_bins, "us": us}


def rows(cupy, torch, rt, repeats: int):
    """(label, row) for every shape, in order (_shared.gpu_rows_main prints and writes them)."""
    for n_log2 in SIZES:
        for num_bins in BINS:
            yield (f"2^{n_log2:<2} K={num_bins:>5}",
                   sort_row(cupy, torch, rt, n_log2, num_bins, repeats))


if __name__ == "__main__":
    gpu_rows_main(__doc__, 300, "small-sorts", rows)
