"""Where a large call's time goes beyond its kernel's (issue 11: at 2^28 keys a
gpu.histogram call is 29-59 us above its kernel alone, against 16-23 us at
every smaller N).

    python bench/call_gap.py [--calls 40] [--out bench/results]

Three parts, printed as they come and written to
<out>/call-gap-<arch>-<today>.json:

- context: the context's scheduling flags (how a host wait waits) and the
  release threshold of the memory pool cuda.core allocates from (0 would give
  freed memory back to the driver at every sync);
- waits: a one-thread kernel that spins on the GPU's clock for d us, launched
  and waited for by cuStreamSynchronize and by polling cuStreamQuery: the
  host's wall time minus the kernel's GPU time is what a wait costs beyond
  the work, as a function of how long the work runs;
- profile (--profile): cProfile of the public call at the largest shape
  (where the host's time goes), and that call timed with histkit's pool
  taking scratch of any size against its default (POOL_MAX_BLOCK), in
  alternating rounds;
- timeline (--timeline): one call at each large shape taken step by step
  (on the Python path, api.python_path_only: the compiled lane's steps are
  bench/host_costs.py's):
  an event recorded before each launch, memset and the final wait, beside
  the host's clock at that moment (medians over the calls), so a step the
  GPU reaches as soon as the host queues it shows where the GPU waited for
  the host (the events add a few microseconds of host time each); the host's
  clock alone as the call enters its argument checks, allocations and plan
  lookups;
- shapes: at large N, the public call; the call into out= and first_bad=
  with check=False, then a sync; auto's launch alone then a sync, and then a
  polled wait; the GPU time of auto's launches when they start on an idle
  GPU (events around one launch) and back to back (histkit bench's timer).
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import (
    auto_launch,
    event_seconds,
    median_seconds,
    poll_stream,
    profile_calls,
    uniform_keys,
    wrapped,
    write_results,
)

SPIN_SOURCE = r"""
extern "C" __global__ void spin_for(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""
WAIT_US = (5, 20, 50, 100, 250, 400, 1000, 2000)
SHAPES = ((1 << 24, 1 << 20), (1 << 28, 256), (1 << 28, 65536), (1 << 28, 1 << 20))


def context_facts() -> dict:
    from cuda.bindings import driver

    from histkit.gpu.device import check, runtime

    rt = runtime()
    flags = int(check(driver.cuCtxGetFlags(), "cuCtxGetFlags"))
    schedule = {0: "AUTO", 1: "SPIN", 2: "YIELD", 4: "BLOCKING_SYNC"}.get(flags & 7, str(flags))
    facts = {"context flags": flags, "schedule": schedule,
             "memory resource": type(rt.device.memory_resource).__name__}
    try:
        pool = check(driver.cuDeviceGetMemPool(rt.device.device_id), "cuDeviceGetMemPool")
        attribute = driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
        facts["current pool release threshold"] = int(
            check(driver.cuMemPoolGetAttribute(pool, attribute), "cuMemPoolGetAttribute"))
    except Exception as error:  # a device without memory pools
        facts["current pool release threshold"] = f"not read: {error}"
    return facts


def wait_costs(cupy, calls: int) -> list[dict]:
    """Host wall time minus GPU time of a d-us kernel, per way of waiting."""
    from cuda.bindings import driver

    spin = cupy.RawKernel(SPIN_SOURCE, "spin_for")
    stream = cupy.cuda.Stream(non_blocking=True)
    handle = stream.ptr

    def launch(ns):
        spin((1,), (1,), (np.uint64(ns),), stream=stream)

    rows = []
    for us in WAIT_US:
        ns = us * 1000
        gpu_us = event_seconds(cupy, lambda ns=ns: launch(ns), stream, repeats=15) * 1e6
        row = {"spin us": us, "GPU us": gpu_us}
        for name, wait in (("cuStreamSynchronize", lambda: driver.cuStreamSynchronize(handle)),
                           ("polled cuStreamQuery", lambda: poll_stream(driver, handle))):
            wall = median_seconds(lambda ns=ns, wait=wait: (launch(ns), wait()), calls,
                                  warm_up=3) * 1e6
            row[f"{name} - GPU"] = wall - gpu_us
        rows.append(row)
        print("wait " + "  ".join(f"{k} {v:7.1f}" for k, v in row.items()), flush=True)
    return rows


def shape_costs(cupy, calls: int) -> list[dict]:
    rows = []
    for n, num_bins in SHAPES:
        row = shape_row(cupy, n, num_bins, calls)
        rows.append(row)
        print(f"N=2^{n.bit_length() - 1} K={num_bins} "
              + "  ".join(f"{k} {v:7.1f}" for k, v in row.items() if k not in ("N", "K")),
              flush=True)
    return rows


def shape_row(cupy, n: int, num_bins: int, calls: int) -> dict:
    from cuda.bindings import driver

    from histkit import gpu
    from histkit.gpu.bench import Timer
    from histkit.gpu.device import runtime

    keys = uniform_keys(cupy, n, num_bins)
    auto = auto_launch(cupy, keys, num_bins)
    crt = auto.rt
    steps = {
        "call": lambda: gpu.histogram(keys, num_bins),
        "out= check=False +sync": lambda: (
            gpu.histogram(keys, num_bins, out=auto.hist, first_bad=auto.word, check=False),
            crt.sync("x")),
        "launch+sync": lambda: (auto.launch(), crt.sync("x")),
        "launch+poll": lambda: (auto.launch(), poll_stream(driver, crt.handle)),
    }
    row = {"N": n, "K": num_bins}
    row.update({name: median_seconds(step, calls, warm_up=3) * 1e6
                for name, step in steps.items()})
    crt.sync("after the steps")
    stream = cupy.cuda.get_current_stream()
    row["GPU from idle (events)"] = event_seconds(cupy, auto.launch, stream, repeats=15) * 1e6
    # Timer.ours times histkit's own stream: the launches go there too.
    row["GPU back to back"] = Timer(cupy, None).ours(lambda: auto.launch(runtime())) * 1e6
    return row


def call_timeline(cupy, calls: int) -> list[dict]:
    """Per large shape, each step of a gpu.histogram call: the host's time
    when it queued the step and the GPU's when it reached it, in us from the
    call's start (medians over calls)."""
    import time

    from histkit import gpu
    from histkit.gpu import api
    from histkit.gpu.device import Runtime

    stream = cupy.cuda.get_current_stream()  # where a call on CuPy keys runs
    marks: list = []

    def mark(label: str, with_event: bool = True) -> None:
        event = None
        if with_event:
            event = cupy.cuda.Event()
            event.record(stream)
        marks.append((label, time.perf_counter_ns(), event))

    # (owner, method, its step's label from its arguments, an event too?):
    # what the GPU is handed gets an event, the host's own steps the clock only.
    patches = [(Runtime, "launch", lambda rt, kernel, geometry, *_: geometry.kernel.split("[")[0],
              True),
             (Runtime, "memset", lambda rt, ptr, byte, nbytes: f"memset {nbytes} B", True),
             (Runtime, "sync", lambda rt, what: "wait", True)]
    patches += [(owner, name, lambda *_, name=name: f"({name})", False)
                for owner, name in ((api, "_open"), (api, "_allocate"), (api, "_first_bad_word"),
                                    (api, "_raise_if_bad"), (Runtime, "empty"), (Runtime, "plan"))]

    def marked(inner, label, with_event):
        def step(*args, **kwargs):
            mark(label(*args), with_event)
            return inner(*args, **kwargs)
        return step

    rows = []
    for n, num_bins in SHAPES:
        keys = uniform_keys(cupy, n, num_bins)
        runs = []
        # The Python path's steps: the compiled lane makes its driver calls
        # without Runtime's methods (bench/host_costs.py marks those).
        with api.python_path_only(), wrapped(
                (owner, name, lambda inner, label=label, with_event=with_event:
                 marked(inner, label, with_event))
                for owner, name, label, with_event in patches):
            gpu.histogram(keys, num_bins)
            marks.clear()
            for _ in range(calls):
                marks.clear()
                mark("call")
                gpu.histogram(keys, num_bins)
                mark("returned")
                marks[-1][2].synchronize()
                start_ns, start_event = marks[0][1], marks[0][2]
                runs.append([(label, (ns - start_ns) / 1e3,
                              np.nan if event is None
                              else cupy.cuda.get_elapsed_time(start_event, event) * 1e3)
                             for label, ns, event in marks])
        steps = [{"step": label,
                  "host us": float(np.median([run[i][1] for run in runs])),
                  "GPU us": float(np.median([run[i][2] for run in runs]))}
                 for i, (label, _, _) in enumerate(runs[0])]
        print(f"timeline N=2^{n.bit_length() - 1} K={num_bins} (us from the call's start)")
        for step in steps:
            gpu_us = "" if np.isnan(step["GPU us"]) else f"  GPU {step['GPU us']:8.1f}"
            print(f"  {step['step']:<32} host {step['host us']:8.1f}{gpu_us}")
        rows.append({"N": n, "K": num_bins, "steps": steps})
    return rows


def profile_largest(cupy, calls: int, top: int = 22) -> dict:
    from histkit import gpu
    from histkit.gpu import device

    n, num_bins = SHAPES[-1]
    keys = uniform_keys(cupy, n, num_bins)
    for _ in range(3):
        gpu.histogram(keys, num_bins)
    print(f"cProfile of {calls} calls at N=2^{n.bit_length() - 1}, K={num_bins}:")
    profile_calls(lambda: gpu.histogram(keys, num_bins), calls, top, ("tottime", "cumtime"))
    default = device.POOL_MAX_BLOCK
    figures = {"default pool": [], "pool takes any size": []}
    for _ in range(4):
        for name, limit in (("default pool", default), ("pool takes any size", 1 << 40)):
            device.POOL_MAX_BLOCK = limit
            figures[name].append(median_seconds(lambda: gpu.histogram(keys, num_bins), calls,
                                                warm_up=3) * 1e6)
    device.POOL_MAX_BLOCK = default
    print("pool A/B [us per call, rounds] " + "  ".join(
        f"{name} {' '.join(f'{us:.1f}' for us in rounds)}" for name, rounds in figures.items()),
        flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--profile", action="store_true", help="the profile part only")
    parser.add_argument("--timeline", action="store_true", help="the timeline part only")
    args = parser.parse_args()
    import cupy

    from histkit.gpu.device import runtime

    if args.profile:
        profile_largest(cupy, args.calls)
        return
    if args.timeline:
        write_results(args.out, f"call-timeline-{runtime().arch}",
                      {"device": runtime().device.name,
                       "timeline": call_timeline(cupy, args.calls)})
        return
    facts = context_facts()
    print("context " + "  ".join(f"{k}: {v}" for k, v in facts.items()), flush=True)
    results = {"device": runtime().device.name, "context": facts,
               "waits": wait_costs(cupy, args.calls), "shapes": shape_costs(cupy, args.calls)}
    write_results(args.out, f"call-gap-{runtime().arch}", results)


if __name__ == "__main__":
    main()
