"""``histkit bench --calls``: what a user waits for, one public call at a time.

``histkit bench`` times kernels back to back on pre-allocated buffers; users
call ``gpu.histogram(x, K)`` and wait for the answer. Here each contender is a
whole call as a user writes it, ending with the result ready on the device
(histkit's calls return synchronised; a peer's call is followed by a
synchronise of its stream), timed on the host clock one call at a time:

- histkit: ``gpu.histogram(keys, K)`` and ``gpu.counting_sort(keys, K)`` on a
  CuPy array (results come back as CuPy arrays), and the same calls on the
  keys as a PyTorch tensor (results come back as tensors);
- histkit's kernel alone: the kernel ``auto`` picks, launched on
  pre-allocated buffers (with the zeroing of its counts where it adds into
  them) and timed with CUDA events (the floor a call can reach), in the same
  rounds as the calls;
- histkit with ``check=False`` (no wait inside the call; the bench's sync
  waits), and histkit per call in a CUDA graph: GRAPH_CALLS calls with
  ``out=`` and ``first_bad=`` captured once on a CuPy stream, the graph
  replayed and synchronised, divided by GRAPH_CALLS (their results checked
  against the oracle after a replay);
- ``torch.bincount``, ``cupy.bincount``, ``torch.sort(stable=True)``;
- CUB through cuda.compute, with its temporary storage sized and allocated
  in the call, as a user would (the algorithm object is built once: its JIT
  compile is not a per-call cost).

Every result is checked against the CPU oracle before it is timed; a peer
that is missing or wrong is recorded with the reason, never estimated. A
row's contenders are timed in ROUNDS rounds, each round timing every one of
them for many calls, in an order turned by one each round (whoever ran
first in one round runs last in the next): each figure is the median of its
round medians, so a transient on the machine (clocks settling after a heavy
row, another process) weighs on one round of every contender rather than on
whichever was timed at that moment.
"""

from __future__ import annotations

import json
import platform
import time
from datetime import date
from functools import partial
from pathlib import Path

import numpy as np

from histkit import __version__, oracles
from histkit.bench.common import (
    optional_torch,
    replace_older_results,
    result_stem,
    right_result,
    skip_note,
)

CALL_SIZES = (1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 28)
CALL_BINS = (256, 65536, 1 << 20)
CALL_SORT_BINS = (256, 65536)
GRAPH_CALLS = 100
# The figures to reach, each row judged against them (against_targets): a
# histogram call within CALL_OVER_KERNEL_US of its kernel alone; histkit's
# call at most PEER_RATIO x the fastest peer's call measured in the same run
# (a sort: torch.sort(stable=True)'s); at 2^28 int32 keys and K <= 4096, a
# histogram call at MIN_TBPS_AT_2_28 or more.
CALL_OVER_KERNEL_US = 25.0
PEER_RATIO = 0.8
MIN_TBPS_AT_2_28 = 3.8
HISTOGRAM_PEERS = ("torch.bincount", "cupy.bincount", "CUB HistogramEven")
SORT_PEERS = ("torch.sort(stable)",)
# histkit's calls on the keys as a PyTorch tensor, judged by the same targets
TORCH_KEYS = {"histogram": "histkit gpu.histogram (torch keys)",
              "sort": "histkit gpu.counting_sort (torch keys)"}
WARM_UP_CALLS = 3
ROUNDS = 3
# Calls timed per contender and round, and the time they may take per round.
MIN_CALLS, MAX_CALLS = 15, 400
SECONDS_PER_ROUND = 0.15


def calls_per_round(call, sync) -> int:
    """After WARM_UP_CALLS calls, how many calls (each followed by sync()) one
    round times: as many as SECONDS_PER_ROUND holds at the pace of one timed
    call, within [MIN_CALLS, MAX_CALLS]."""
    for _ in range(WARM_UP_CALLS):
        call()
        sync()
    start = time.perf_counter()
    call()
    sync()
    first = time.perf_counter() - start
    return int(min(MAX_CALLS, max(MIN_CALLS, SECONDS_PER_ROUND / max(first, 1e-6))))


def median_of_calls_us(call, sync, count: int) -> float:
    """Median wall time of count calls, each followed by sync(), in microseconds."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e6)


def _checked(row: dict, name: str, call, sync, to_host, want) -> None:
    """Check call's result against the oracle's: a right one joins the row's
    contenders (timed by _time_in_rounds), a wrong or failing one is noted,
    never timed."""
    if right_result(row, name, call, want, to_host):
        row.setdefault("contenders", []).append((name, call, sync))


def _time_in_rounds(row: dict) -> None:
    """Time the row's checked contenders (the module's docstring): each
    figure, in us_per_call, the median of its ROUNDS round medians, which
    rounds_us keeps. A contender is (name, call, sync), timed per call, or
    (name, call, sync, round_us) when it times itself (round_us() gives one
    round's figure: the kernel alone, by CUDA events). One that fails while
    timed is noted, never estimated."""
    contenders = []
    for name, call, sync, *own in row.pop("contenders", []):
        try:
            round_us = own[0] if own else partial(median_of_calls_us, call, sync,
                                                  calls_per_round(call, sync))
        except Exception as error:
            row["notes"][name] = skip_note(error)
            continue
        contenders.append((name, round_us))
    medians = {name: [] for name, _ in contenders}
    for turn in range(ROUNDS if contenders else 0):
        start = turn % len(contenders)
        for name, round_us in contenders[start:] + contenders[:start]:
            if name in row["notes"]:
                continue
            try:
                medians[name].append(round_us())
            except Exception as error:
                row["notes"][name] = skip_note(error)
    timed = {name: us for name, us in medians.items() if name not in row["notes"]}
    row["us_per_call"].update({name: float(np.median(us)) for name, us in timed.items()})
    row["rounds_us"] = timed


def _peer(row: dict, name: str, build, sync, to_host, want) -> None:
    """A peer whose call build() makes once (its set-up or import may fail:
    then it is noted as skipped), checked and timed like every contender."""
    try:
        call = build()
    except Exception as error:
        row["notes"][name] = skip_note(error)
        return
    _checked(row, name, call, sync, to_host, want)


def _cub_histogram_call(cupy, keys, num_bins: int):
    """CUB HistogramEven as a user calls it: output and temporary storage per call."""
    from cuda.compute import make_histogram_even

    levels = np.array([num_bins + 1], dtype=np.int32)
    lower, upper = np.array([0], np.int32), np.array([num_bins], np.int32)
    probe = cupy.zeros(num_bins, dtype=cupy.int32)
    algorithm = make_histogram_even(d_samples=keys, d_histogram=probe,
                                    h_num_output_levels=levels, h_lower_level=lower,
                                    h_upper_level=upper, num_samples=keys.size)

    def call():
        hist = cupy.zeros(num_bins, dtype=cupy.int32)
        arguments = {"d_samples": keys, "d_histogram": hist, "h_num_output_levels": levels,
                     "h_lower_level": lower, "h_upper_level": upper,
                     "num_samples": keys.size}
        temp_bytes = algorithm(temp_storage=None, **arguments)
        algorithm(temp_storage=cupy.empty(max(1, temp_bytes), dtype=cupy.uint8), **arguments)
        return hist

    return call


def _cub_sort_call(cupy, keys, bits: int):
    """CUB DeviceRadixSort of (key, int32 index) pairs as a user calls it;
    returns the sorted indices."""
    from cuda.compute import SortOrder, make_radix_sort

    def buffers():
        values = cupy.arange(keys.size, dtype=cupy.int32)
        return values, cupy.empty_like(keys), cupy.empty_like(values)

    values, out_keys, out_values = buffers()
    sorter = make_radix_sort(d_in_keys=keys, d_out_keys=out_keys, d_in_values=values,
                             d_out_values=out_values, order=SortOrder.ASCENDING)

    def call():
        values, out_keys, out_values = buffers()
        arguments = {"d_in_keys": keys, "d_out_keys": out_keys, "d_in_values": values,
                     "d_out_values": out_values, "num_items": keys.size, "begin_bit": 0,
                     "end_bit": bits}
        temp_bytes = sorter(temp_storage=None, **arguments)
        sorter(temp_storage=cupy.empty(max(1, temp_bytes), dtype=cupy.uint8), **arguments)
        return out_values

    return call


def _graph_call(cupy, keys, num_bins: int):
    """GRAPH_CALLS gpu.histogram calls captured in one CUDA graph on a CuPy
    stream; the call replays it and returns the last call's counts (every
    call's counts are checked once here)."""
    from histkit import gpu

    stream = cupy.cuda.Stream(non_blocking=True)
    hist = cupy.empty((GRAPH_CALLS, num_bins), dtype=cupy.int64)
    words = cupy.empty((GRAPH_CALLS, 1), dtype=cupy.uint64)
    with stream:
        gpu.histogram(keys, num_bins, out=hist[0], first_bad=words[0], check=False)
        stream.begin_capture()
        for i in range(GRAPH_CALLS):
            gpu.histogram(keys, num_bins, out=hist[i], first_bad=words[i], check=False)
        graph = stream.end_capture()
        hist.fill(-1)
        graph.launch(stream)
    stream.synchronize()
    if not (hist == hist[0]).all() or int(words.min()) != 2**64 - 1:
        raise AssertionError("the graph's calls disagree with each other")

    def call():
        graph.launch(stream)
        stream.synchronize()
        return hist[-1]

    return call


def _kernel_alone(row: dict, cupy, keys, num_bins: int, want) -> None:
    """The auto kernel on pre-allocated buffers (with the zeroing of its counts
    where it adds into them), its result checked against the oracle's, then
    timed with CUDA events (histkit bench's Timer) in the row's rounds: the
    floor a call can reach, measured beside the calls it is compared with."""
    from histkit.bench.common import Timer, keys_of
    from histkit.gpu import registry
    from histkit.gpu.device import runtime

    rt = runtime()
    hist = rt.empty(num_bins, np.uint64)
    first_bad = rt.bad_key_slot()
    device_keys = keys_of(keys)
    auto = registry.serving("histogram", "auto")

    def launch():
        return auto.run(rt, device_keys, num_bins, hist, first_bad)

    def counts(array) -> np.ndarray:
        rt.sync("the kernel alone")
        return cupy.asnumpy(cupy.asarray(array))

    row["kernel"] = str(launch())
    if right_result(row, "histkit kernel alone", lambda: hist, want, counts):
        row.setdefault("contenders", []).append(
            ("histkit kernel alone", launch, None, lambda: Timer(cupy, None).ours(launch) * 1e6))


def histogram_row(cupy, torch, n: int, num_bins: int) -> dict:
    from histkit import gpu

    keys = cupy.random.RandomState(n ^ num_bins).randint(0, num_bins, n, dtype=cupy.int32)
    want = oracles.histogram(cupy.asnumpy(keys), num_bins)
    row = {"N": n, "K": num_bins, "us_per_call": {}, "notes": {}}
    sync = cupy.cuda.get_current_stream().synchronize
    _checked(row, "histkit gpu.histogram", lambda: gpu.histogram(keys, num_bins),
             lambda: None, cupy.asnumpy, want)
    _checked(row, "histkit check=False", lambda: gpu.histogram(keys, num_bins, check=False)[0],
             sync, cupy.asnumpy, want)
    _peer(row, "histkit in a CUDA graph", lambda: _graph_call(cupy, keys, num_bins), sync,
          cupy.asnumpy, want)
    _checked(row, "cupy.bincount", lambda: cupy.bincount(keys, minlength=num_bins), sync,
             cupy.asnumpy, want)
    _torch_peer(row, "torch.bincount", torch, keys,
                lambda tkeys: torch.bincount(tkeys, minlength=num_bins), want)
    _torch_peer(row, TORCH_KEYS["histogram"], torch, keys,
                lambda tkeys: gpu.histogram(tkeys, num_bins), want, returns_done=True)
    _peer(row, "CUB HistogramEven", lambda: _cub_histogram_call(cupy, keys, num_bins), sync,
          cupy.asnumpy, want)
    _kernel_alone(row, cupy, keys, num_bins, want)
    _time_in_rounds(row)
    if "histkit in a CUDA graph" in row["us_per_call"]:  # a replay is GRAPH_CALLS calls
        row["us_per_call"]["histkit in a CUDA graph"] /= GRAPH_CALLS
        row["rounds_us"]["histkit in a CUDA graph"] = [
            us / GRAPH_CALLS for us in row["rounds_us"]["histkit in a CUDA graph"]]
    return row


def sort_row(cupy, torch, n: int, num_bins: int) -> dict:
    from histkit import gpu

    keys = cupy.random.RandomState(n ^ num_bins).randint(0, num_bins, n, dtype=cupy.int32)
    want_index = oracles.counting_sort(cupy.asnumpy(keys), num_bins)[1]
    row = {"N": n, "K": num_bins, "us_per_call": {}, "notes": {}}
    sync = cupy.cuda.get_current_stream().synchronize
    _checked(row, "histkit gpu.counting_sort", lambda: gpu.counting_sort(keys, num_bins)[1],
             lambda: None, cupy.asnumpy, want_index)
    _checked(row, "histkit check=False",
             lambda: gpu.counting_sort(keys, num_bins, check=False)[1], sync, cupy.asnumpy,
             want_index)
    _torch_peer(row, "torch.sort(stable)", torch, keys,
                lambda tkeys: torch.sort(tkeys, stable=True).indices, want_index)
    _torch_peer(row, TORCH_KEYS["sort"], torch, keys,
                lambda tkeys: gpu.counting_sort(tkeys, num_bins)[1], want_index,
                returns_done=True)
    bits = max(1, int(np.ceil(np.log2(num_bins))))
    _peer(row, "CUB DeviceRadixSort pairs", lambda: _cub_sort_call(cupy, keys, bits), sync,
          cupy.asnumpy, want_index)
    _time_in_rounds(row)
    row["kernel"] = _sort_path(keys, num_bins)
    return row


def _sort_path(keys, num_bins: int) -> str:
    """What gpu.counting_sort(stable=True) runs for these keys: rank_sort, the
    resident launch (its geometry), or the onesweep passes."""
    from histkit.bench.common import keys_of
    from histkit.gpu import registry
    from histkit.gpu.device import runtime
    from histkit.gpu.launch import resident

    rt, device_keys = runtime(), keys_of(keys)
    path = registry.stable_sort_path(rt, device_keys, num_bins)
    if path == "resident":
        return str(resident.resident_shape(rt, device_keys, num_bins).geometry)
    return {"rank": "rank_sort", "onesweep": "onesweep passes"}[path]


def _torch_peer(row: dict, name: str, torch, keys, run, want, returns_done: bool = False) -> None:
    """run(tensor) on the keys as a PyTorch tensor (shared memory), synchronised
    after each call, unless it returns_done: a checked histkit call returns
    once its kernels have finished (it reads their bad-key verdict), so it
    is timed as on CuPy keys, without a device-wide synchronize after it."""
    if torch is None:
        row["notes"][name] = "skipped: PyTorch is not installed"
        return
    tkeys = torch.as_tensor(keys, device="cuda")
    _checked(row, name, lambda: run(tkeys), (lambda: None) if returns_done
             else torch.cuda.synchronize, lambda t: t.cpu().numpy(), want)


def against_targets(job: str, row: dict) -> list[dict]:
    """Row's figures against the call targets: each {"what", "value",
    "target", "met"}; a target whose figures the row lacks (a peer skipped)
    is left out, never guessed."""
    us = row["us_per_call"]
    mine = us.get("histkit gpu.histogram" if job == "histogram" else "histkit gpu.counting_sort")
    if mine is None:
        return []
    judged = []
    if job == "histogram" and "histkit kernel alone" in us:
        over = mine - us["histkit kernel alone"]
        judged.append({"what": "call - kernel alone (us)", "value": round(over, 1),
                       "target": f"<= {CALL_OVER_KERNEL_US:g}",
                       "met": over <= CALL_OVER_KERNEL_US})
    peers = {name: us[name] for name in (HISTOGRAM_PEERS if job == "histogram" else SORT_PEERS)
             if name in us}
    if peers:
        fastest = min(peers, key=peers.get)
        for label, ours in (("", mine), ("torch keys ", us.get(TORCH_KEYS[job]))):
            if ours is None:
                continue
            ratio = ours / peers[fastest]
            judged.append({"what": f"{label}x {fastest}", "value": round(ratio, 2),
                           "target": f"<= {PEER_RATIO:g}", "met": ratio <= PEER_RATIO})
    if job == "histogram" and row["N"] == 1 << 28 and row["K"] <= 4096:
        tbps = row["N"] * np.dtype(np.int32).itemsize / (mine * 1e-6) / 1e12
        judged.append({"what": "TB/s", "value": round(tbps, 2),
                       "target": f">= {MIN_TBPS_AT_2_28:g}", "met": tbps >= MIN_TBPS_AT_2_28})
    return judged


def format_row(row: dict) -> str:
    figures = "  ".join(f"{name} {us:8.1f}" for name, us in row["us_per_call"].items())
    notes = "; ".join(f"{k}: {v}" for k, v in row["notes"].items())
    targets = "; ".join(f"{t['what']} {t['value']:g} ({'met' if t['met'] else 'MISSED'})"
                        for t in row.get("targets", []))
    return (f"N=2^{int(np.log2(row['N'])):<2} K={row['K']:>7} [us/call] {figures}"
            + (f"  ({notes})" if notes else "") + (f"  [targets: {targets}]" if targets else ""))


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("histogram", k) for k in CALL_BINS] + [("sort", k) for k in CALL_SORT_BINS]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.8))
    for ax, (job, num_bins) in zip(axes, panels, strict=True):
        rows = [r for r in results[job] if r["K"] == num_bins]
        names = list(dict.fromkeys(name for r in rows for name in r["us_per_call"]))
        for name in names:
            xs = [r["N"] for r in rows if name in r["us_per_call"]]
            ys = [r["us_per_call"][name] for r in rows if name in r["us_per_call"]]
            ax.plot(xs, ys, marker="o", label=name, linewidth=2.5 if "histkit" in name else 1.2,
                    linestyle=":" if "alone" in name else "-")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{job}, K = {num_bins}")
        ax.set_xlabel("keys N (int32, uniform)")
        ax.legend(fontsize=6)
    axes[0].set_ylabel("microseconds per synchronised call")
    fig.suptitle(f"Whole public calls on {results['device']} (median wall time per call)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run_call_bench(out_dir: str = "bench/results", sizes=CALL_SIZES) -> int:
    import cupy

    from histkit.gpu.device import runtime

    torch = optional_torch()
    rt = runtime()
    results = {"histkit": __version__, "device": rt.device.name, "arch": rt.arch,
               "date": date.today().isoformat(), "host": platform.node(), "method": __doc__,
               "histogram": [], "sort": []}
    for n in sizes:
        for job, bins, make in (("histogram", CALL_BINS, histogram_row),
                                ("sort", CALL_SORT_BINS, sort_row)):
            for num_bins in bins:
                row = make(cupy, torch, n, num_bins)
                row["targets"] = against_targets(job, row)
                results[job].append(row)
                print(f"{job:9s} " + format_row(row), flush=True)
    judged = [t for job in ("histogram", "sort") for r in results[job] for t in r["targets"]]
    print(f"call targets: {sum(t['met'] for t in judged)} of {len(judged)} met")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = result_stem("calls", rt.device.name, results["date"])
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1))
    plot(results, out / f"{stem}.png")
    print(f"wrote {out / stem}.json and .png")
    for old in replace_older_results(out / f"{stem}.json"):
        print(f"removed {old} (replaced)")
    return 0
