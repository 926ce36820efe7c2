"""``histkit bench``: GPU throughput of histkit's kernels against CUB, CuPy and
PyTorch, and against the read and copy rooflines, all in one process.

Method: int32 keys (N = 2^28 unless --quick) generated on the device; every
result is checked against the CPU oracle before anything is timed; each
figure is the median over several batches of back-to-back calls timed with
CUDA events around the batch (host overhead stays off the GPU clock).
Effective bandwidth = 4 bytes x N / time. A peer that is missing or fails is
recorded as skipped with the reason, never estimated.
"""

from __future__ import annotations

import functools
import json
import platform
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from histkit import __version__, oracles
from histkit.bench.binning import binning_rows
from histkit.bench.common import (
    Timer,
    keys_of,
    optional_torch,
    replace_older_results,
    result_stem,
    right_result,
    skip_note,
)
from histkit.bench.weighted import weighted_rows
from histkit.conformance.cases import DISTRIBUTIONS
from histkit.distributions import ZIPF_EXPONENT
from histkit.gpu import errors, registry
from histkit.gpu.device import runtime
from histkit.gpu.geometry import Geometry

HISTOGRAM_BINS = (16, 256, 4096, 65536, 1 << 20)
SORT_BINS = (256, 65536)  # 8 and 16 key bits
RADIX_DTYPES = ("int32", "uint32", "int64")  # full-width keys: gpu.radix_sort


def _device_keys(cupy, distribution: str, n: int, num_bins: int, seed: int = 0):
    """The histkit.distributions shapes, drawn on the device (int32)."""
    rs = cupy.random.RandomState(seed)
    if distribution == "uniform":
        return rs.randint(0, num_bins, n, dtype=cupy.int32)
    if distribution == "onebin":
        return cupy.full(n, num_bins // 2, dtype=cupy.int32)
    if distribution == "zipf":
        return ((rs.zipf(ZIPF_EXPONENT, n) - 1) % num_bins).astype(cupy.int32)
    if distribution == "sorted":
        return cupy.sort(rs.randint(0, num_bins, n, dtype=cupy.int32))
    if distribution == "round-robin":
        return (cupy.arange(n, dtype=cupy.int64) % num_bins).astype(cupy.int32)
    raise ValueError(distribution)


def rooflines(cupy, timer: Timer, n: int) -> dict:
    rt = runtime()
    data = cupy.zeros(n, dtype=cupy.int32)
    data[::7] = 1
    sink = cupy.zeros(1, dtype=cupy.uint32)
    kernel = rt.kernel("roofline.cu", "read_roofline", {})
    vectors = n * 4 // 16
    blocks = rt.sm_count * rt.resident_blocks(kernel, 512, 0)
    geometry = Geometry("read_roofline", blocks, 512)
    read_s = timer.ours(lambda: rt.launch(kernel, geometry, int(data.data.ptr),
                                          np.int64(vectors), int(sink.data.ptr)))
    copy = cupy.empty_like(data)
    copy_s = timer.cupy_call(lambda: copy.__setitem__(slice(None), data))
    return {"read_TBps": 4 * n / read_s / 1e12, "copy_TBps": 8 * n / copy_s / 1e12}


def _cub_histogram(cupy, keys, num_bins: int):
    from cuda.compute import make_histogram_even

    hist = cupy.zeros(num_bins, dtype=cupy.int32)
    levels = np.array([num_bins + 1], dtype=np.int32)
    lower, upper = np.array([0], np.int32), np.array([num_bins], np.int32)
    algorithm = make_histogram_even(d_samples=keys, d_histogram=hist, h_num_output_levels=levels,
                                    h_lower_level=lower, h_upper_level=upper,
                                    num_samples=keys.size)
    temp_bytes = algorithm(temp_storage=None, d_samples=keys, d_histogram=hist,
                           h_num_output_levels=levels, h_lower_level=lower,
                           h_upper_level=upper, num_samples=keys.size)
    temp = cupy.empty(max(1, temp_bytes), dtype=cupy.uint8)

    def run():
        hist.fill(0)
        algorithm(temp_storage=temp, d_samples=keys, d_histogram=hist,
                  h_num_output_levels=levels, h_lower_level=lower, h_upper_level=upper,
                  num_samples=keys.size)
        return hist

    return run


def _time_peer(row: dict, name: str, time_with, call, exact, to_host, per_call) -> None:
    """Check a peer's result against the oracle, then time it (or note why not)."""
    if not right_result(row, name, call, exact, to_host):
        return
    try:
        row[per_call[0]][name] = per_call[1](time_with(call))
    except Exception as error:  # a peer that fails is reported, never estimated
        row["notes"][name] = skip_note(error)


def _time_ours(row: dict, name: str, timer: Timer, call, right, n: int) -> None:
    """Run one of histkit's kernels once, check its outputs (right()), then time
    it in G keys/s: a wrong result is noted, never timed."""
    call()
    runtime().sync(name)
    if right():
        row["Gkeys_per_s"][name] = n / timer.ours(call) / 1e9
    else:
        row["notes"][name] = "WRONG RESULT: not timed"


def benched_histogram_kernels() -> dict:
    """Every exact histogram kernel the API serves (its method's registry
    row), and the fast kernel auto picks, by the name the bench reports."""
    return {f"histkit {k.row}": k.run for k in registry.KERNELS
            if k.kind == "histogram" and (k.serves or k.row == "fast")}


def histogram_row(cupy, torch, timer: Timer, n: int, num_bins: int, distribution: str) -> dict:
    rt = runtime()
    keys = _device_keys(cupy, distribution, n, num_bins)
    exact = oracles.histogram(cupy.asnumpy(keys), num_bins)
    row = {"K": num_bins, "distribution": distribution, "N": n, "TBps": {}, "notes": {},
           "geometry": {}}
    hist = rt.empty(num_bins, np.uint64)
    first_bad = rt.empty(1, np.uint64)
    rt.memset(first_bad.ptr, 0xFF, 8)
    device_keys = keys_of(keys)

    ours = benched_histogram_kernels()

    def run(launch):  # each launcher zeroes the counts it adds into (one may store them)
        return launch(rt, device_keys, num_bins, hist, first_bad)

    for name, launch in ours.items():
        try:
            used = run(launch)
        except errors.UnsupportedShape as error:
            row["notes"][name] = str(error).split(";")[0]
            continue
        got = rt.copy_to_host(hist.ptr, np.empty(num_bins, np.uint64)).astype(np.int64)
        if not np.array_equal(got, exact):
            row["notes"][name] = "WRONG RESULT: not timed"
            continue
        row["geometry"][name] = str(used)
        row["TBps"][name] = 4 * n / timer.ours(functools.partial(run, launch)) / 1e12

    as_tbps = ("TBps", lambda seconds: 4 * n / seconds / 1e12)
    _time_peer(row, "cupy.bincount", timer.cupy_call,
               lambda: cupy.bincount(keys, minlength=num_bins), exact, cupy.asnumpy, as_tbps)
    if torch is None:
        row["notes"]["torch.bincount"] = "skipped: PyTorch is not installed"
    else:
        tkeys = torch.as_tensor(keys, device="cuda")
        _time_peer(row, "torch.bincount", timer.torch_call,
                   lambda: torch.bincount(tkeys, minlength=num_bins), exact,
                   lambda t: t.cpu().numpy(), as_tbps)
    try:
        cub = _cub_histogram(cupy, keys, num_bins)
    except Exception as error:
        row["notes"]["CUB HistogramEven"] = skip_note(error)
    else:
        _time_peer(row, "CUB HistogramEven", timer.cupy_call, cub, exact, cupy.asnumpy, as_tbps)
    return row


def sort_row(cupy, torch, timer: Timer, n: int, num_bins: int, distribution: str) -> dict:
    rt = runtime()
    bits = int(np.ceil(np.log2(num_bins)))
    keys = _device_keys(cupy, distribution, n, num_bins)
    want_keys, want_index = oracles.counting_sort(cupy.asnumpy(keys), num_bins)
    row = {"K": num_bins, "bits": bits, "distribution": distribution, "N": n,
           "Gkeys_per_s": {}, "notes": {}}
    device_keys = keys_of(keys)
    out_keys = cupy.empty_like(keys)
    first_bad = rt.empty(1, np.uint64)
    rt.memset(first_bad.ptr, 0xFF, 8)

    stable_sort = registry.serving("counting_sort", True)
    # int32 indices: like for like with CUB's int32 pairs
    for index_dtype, name in ((np.int64, "histkit stable"),
                              (np.int32, "histkit stable (int32 index)")):
        out_index = cupy.empty(n, dtype=index_dtype)

        def ours(out_index=out_index, index_dtype=index_dtype):
            stable_sort.run(rt, device_keys, num_bins, _as_array(out_keys),
                            _as_array(out_index), first_bad, [], index_dtype=index_dtype)

        def right(out_index=out_index):
            return (np.array_equal(cupy.asnumpy(out_keys), want_keys)
                    and np.array_equal(cupy.asnumpy(out_index), want_index))

        _time_ours(row, name, timer, ours, right, n)

    as_gkeys = ("Gkeys_per_s", lambda seconds: n / seconds / 1e9)
    if torch is None:
        row["notes"]["torch.sort(stable)"] = "skipped: PyTorch is not installed"
    else:
        tkeys = torch.as_tensor(keys, device="cuda")
        _time_peer(row, "torch.sort(stable)", timer.torch_call,
                   lambda: torch.sort(tkeys, stable=True).indices, want_index,
                   lambda t: t.cpu().numpy(), as_gkeys)
    for index_dtype in (np.int32, np.int64):
        name = f"CUB DeviceRadixSort pairs ({np.dtype(index_dtype).name} index)"
        try:
            cub = _cub_radix_pairs(cupy, keys, bits, index_dtype)
        except Exception as error:
            row["notes"][name] = skip_note(error)
        else:
            _time_peer(row, name, timer.cupy_call, cub, want_index, cupy.asnumpy, as_gkeys)
    return row


def _full_width_device_keys(cupy, n: int, dtype: np.dtype, seed: int = 0):
    """n keys whose every bit is random (the dtype's whole range), on the device."""
    rs = cupy.random.RandomState(seed)
    words = rs.randint(0, 1 << 16, size=n * dtype.itemsize // 2, dtype=cupy.int32)
    return words.astype(cupy.uint16).view(dtype)


def radix_row(cupy, torch, timer: Timer, n: int, dtype: str) -> dict:
    """Full-width keys: histkit's radix sort (the registry's kernel on allocated
    buffers, and the public gpu.argsort call) against CUB pairs, torch, CuPy."""
    rt = runtime()
    dtype = np.dtype(dtype)
    keys = _full_width_device_keys(cupy, n, dtype)
    want_index = oracles.argsort(cupy.asnumpy(keys))
    row = {"K": f"{dtype.name} keys", "bits": 8 * dtype.itemsize, "distribution": "uniform",
           "N": n, "Gkeys_per_s": {}, "notes": {}}
    device_keys = keys_of(keys)
    out_keys = cupy.empty_like(keys)
    radix = registry.serving("radix_sort")
    for index_dtype in (np.int64, np.int32):
        out_index = cupy.empty(n, dtype=index_dtype)

        def ours(out_index=out_index, index_dtype=index_dtype):
            radix.run(rt, device_keys, _as_array(out_keys), _as_array(out_index), [],
                      index_dtype=index_dtype)

        _time_ours(row, f"histkit radix ({np.dtype(index_dtype).name} index)", timer, ours,
                   lambda o=out_index: np.array_equal(cupy.asnumpy(o), want_index), n)

    from histkit import gpu

    as_gkeys = ("Gkeys_per_s", lambda seconds: n / seconds / 1e9)
    _time_peer(row, "histkit gpu.argsort call", timer.cupy_call, lambda: gpu.argsort(keys),
               want_index, cupy.asnumpy, as_gkeys)
    _time_peer(row, "histkit gpu.argsort call (int32 index)", timer.cupy_call,
               lambda: gpu.argsort(keys, index_dtype=np.int32), want_index, cupy.asnumpy,
               as_gkeys)
    if torch is None:
        row["notes"]["torch.sort(stable)"] = "skipped: PyTorch is not installed"
    elif dtype.kind == "u" and dtype.itemsize > 1:
        row["notes"]["torch.sort(stable)"] = f"skipped: torch cannot sort {dtype.name}"
    else:
        tkeys = torch.as_tensor(keys, device="cuda")
        _time_peer(row, "torch.sort(stable)", timer.torch_call,
                   lambda: torch.sort(tkeys, stable=True).indices, want_index,
                   lambda t: t.cpu().numpy(), as_gkeys)
    _time_peer(row, "cupy.argsort", timer.cupy_call, lambda: cupy.argsort(keys), want_index,
               cupy.asnumpy, as_gkeys)
    for index_dtype in (np.int32, np.int64):
        name = f"CUB DeviceRadixSort pairs ({np.dtype(index_dtype).name} index)"
        try:
            cub = _cub_radix_pairs(cupy, keys, 8 * dtype.itemsize, index_dtype)
        except Exception as error:
            row["notes"][name] = skip_note(error)
        else:
            _time_peer(row, name, timer.cupy_call, cub, want_index, cupy.asnumpy, as_gkeys)
    return row


def _as_array(cupy_array) -> SimpleNamespace:
    """A CuPy array seen as the kernel wrappers see outputs: its address and
    element type (a launcher that zeroes counts sizes the fill by the dtype)."""
    return SimpleNamespace(ptr=int(cupy_array.data.ptr), dtype=np.dtype(cupy_array.dtype))


def _cub_radix_pairs(cupy, keys, bits: int, index_dtype=np.int32):
    """CUB DeviceRadixSort of (key, index) pairs on the low `bits` bits; the
    call returns the sorted indices."""
    from cuda.compute import SortOrder, make_radix_sort

    values = cupy.arange(keys.size, dtype=index_dtype)
    out_keys, out_values = cupy.empty_like(keys), cupy.empty_like(values)
    sorter = make_radix_sort(d_in_keys=keys, d_out_keys=out_keys, d_in_values=values,
                             d_out_values=out_values, order=SortOrder.ASCENDING)
    arguments = {"d_in_keys": keys, "d_out_keys": out_keys, "d_in_values": values,
                 "d_out_values": out_values, "num_items": keys.size, "begin_bit": 0,
                 "end_bit": bits}
    temp_bytes = sorter(temp_storage=None, **arguments)
    temp = cupy.empty(max(1, temp_bytes), dtype=cupy.uint8)

    def run():
        sorter(temp_storage=temp, **arguments)
        return out_values

    return run


def _format_row(row: dict, key: str = "TBps", unit: str = "TB/s") -> str:
    figures = "  ".join(f"{name} {value:6.3f}" for name, value in row[key].items())
    notes = "; ".join(f"{k}: {v}" for k, v in row["notes"].items())
    return f"K={row['K']:>7} {row['distribution']:<11} [{unit}] {figures}" + (
        f"  ({notes})" if notes else "")


def plot(results: dict, path: Path) -> None:
    """The histogram rows (TB/s against K, one panel per distribution) and,
    when the run has them, the sort and radix rows below (G keys/s, bars per
    distribution or key type, one per implementation)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    histogram = results.get("histogram", [])
    sorts = [(f"stable sort with indices, K = {k} ({results['N']} keys)",
              [r for r in results.get("sort", []) if r["K"] == k], "distribution")
             for k in dict.fromkeys(r["K"] for r in results.get("sort", []))]
    if results.get("radix"):
        sorts.append((f"radix sort of full-width keys ({results['N']} keys)", results["radix"],
                      "K"))
    distributions = list(dict.fromkeys(r["distribution"] for r in histogram))
    columns = max(len(distributions), len(sorts), 1)
    height = int(bool(histogram)) + int(bool(sorts))
    fig, axes = plt.subplots(height, columns, figsize=(4 * columns, 4.2 * height),
                             squeeze=False)
    row = iter(axes)
    if histogram:
        _plot_histograms(results, histogram, distributions, next(row))
    if sorts:
        _plot_sorts(sorts, next(row))
    fig.suptitle(f"{results['N']} int32 keys (radix: full-width keys) on {results['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _plot_histograms(results: dict, rows: list[dict], distributions: list[str], axes) -> None:
    for ax in axes[len(distributions):]:
        ax.set_visible(False)
    for ax, distribution in zip(axes, distributions, strict=False):
        mine = [r for r in rows if r["distribution"] == distribution]
        names = list(dict.fromkeys(name for r in mine for name in r["TBps"]))
        for name in names:
            xs = [r["K"] for r in mine if name in r["TBps"]]
            ys = [r["TBps"][name] for r in mine if name in r["TBps"]]
            ax.plot(xs, ys, marker="o", label=name, linewidth=2.5 if "histkit" in name else 1.2)
        for label, value in (("read roofline", results["roofline"]["read_TBps"]),
                             ("copy roofline", results["roofline"]["copy_TBps"])):
            ax.axhline(value, linestyle="--", color="gray", linewidth=1)
            ax.text(16, value, label, fontsize=7, va="bottom")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_title(f"histogram, {distribution}")
        ax.set_xlabel("bins K")
    axes[0].set_ylabel("effective TB/s (4 B x N / time)")
    axes[len(distributions) - 1].legend(fontsize=7)


def _plot_sorts(panels: list[tuple[str, list[dict], str]], axes) -> None:
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, (title, rows, group) in zip(axes, panels, strict=False):
        groups = [str(r[group]) for r in rows]
        names = list(dict.fromkeys(name for r in rows for name in r["Gkeys_per_s"]))
        width = 0.8 / max(len(names), 1)
        for j, name in enumerate(names):
            ys = [r["Gkeys_per_s"].get(name, 0.0) for r in rows]
            ax.bar(np.arange(len(rows)) + (j - (len(names) - 1) / 2) * width, ys, width,
                   label=name, hatch="" if "histkit" in name else "//")
        ax.set_xticks(np.arange(len(rows)), groups, fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("G keys/s")
        ax.legend(fontsize=6)


def run_kernel_bench(out_dir: str = "bench/results", quick: bool = False,
                     only: str | None = None) -> int:
    """The kernel bench (the module's docstring): JSON and plot in out_dir."""
    import cupy

    torch = optional_torch()
    rt = runtime()
    n = 1 << (24 if quick else 28)
    timer = Timer(cupy, torch)
    results = {"histkit": __version__, "device": rt.device.name, "arch": rt.arch,
               "N": n, "date": date.today().isoformat(), "host": platform.node(),
               "method": __doc__}
    results["roofline"] = rooflines(cupy, timer, n)
    print(f"rooflines: read {results['roofline']['read_TBps']:.2f} TB/s, "
          f"copy {results['roofline']['copy_TBps']:.2f} TB/s", flush=True)
    results["histogram"], results["sort"] = [], []
    for num_bins in HISTOGRAM_BINS if only in (None, "histogram") else ():
        for distribution in DISTRIBUTIONS:
            results["histogram"].append(histogram_row(cupy, torch, timer, n, num_bins,
                                                      distribution))
            print(_format_row(results["histogram"][-1]), flush=True)
    for num_bins in SORT_BINS if only in (None, "sort") else ():
        for distribution in DISTRIBUTIONS:
            results["sort"].append(sort_row(cupy, torch, timer, n, num_bins, distribution))
            print(_format_row(results["sort"][-1], "Gkeys_per_s", "G keys/s"), flush=True)
    results["radix"] = []
    for dtype in RADIX_DTYPES if only in (None, "radix") else ():
        results["radix"].append(radix_row(cupy, torch, timer, n, dtype))
        print(_format_row(results["radix"][-1], "Gkeys_per_s", "G keys/s"), flush=True)
    results["binning"] = []
    for row in binning_rows(cupy, torch, timer, n, quick) if only in (None, "binning") else ():
        results["binning"].append(row)
        print(f"{row['rule']} {row['dtype']} range {tuple(row['range'])} " + _format_row(row),
              flush=True)
    results["weighted"] = []
    for row in weighted_rows(cupy, torch, timer, n, quick) if only in (None, "weighted") else ():
        results["weighted"].append(row)
        print(f"weighted {row['weights']} " + _format_row(row), flush=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = result_stem(only or "gpu", rt.device.name, results["date"])
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1))
    if only not in ("binning", "weighted"):
        plot(results, out / f"{stem}.png")
    print(f"wrote {out / stem}.json (and .png)")
    for old in replace_older_results(out / f"{stem}.json"):
        print(f"removed {old} (replaced)")
    return 0
