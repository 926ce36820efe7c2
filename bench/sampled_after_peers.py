"""Does a peer's call between ours slow gpu.histogram's sampled path? (issue
11; bench/NOTES.md, session 32: at 2^28 keys over 2^20 bins the calls bench
timed the call 70-130 us above its CUDA graph, host_costs.py, with no peer
between calls, 36 above.)

    python bench/sampled_after_peers.py [--calls 20] [--rounds 5] [--out bench/results]

In alternating rounds, each timed checked call (the compiled lane) comes
after an untimed: nothing (alone), cupy.bincount of the same keys,
torch.bincount of them, or a 1 GiB CuPy allocation freed again; each time
synchronised. Per way: the median call, and how many device allocations
histkit's runtime made per call (its pool missing, where that is above 0).
Printed as it comes and written to <out>/sampled-after-peers-<arch>-<today>.json.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _shared import uniform_keys, wrapped, write_results

N, NUM_BINS = 1 << 28, 1 << 20


def ways(cupy, keys):
    """What runs, untimed, before each timed call."""
    found = {"alone": lambda: None,
             "after cupy.bincount": lambda: cupy.bincount(keys, minlength=NUM_BINS),
             "after a 1 GiB CuPy array": lambda: cupy.empty(1 << 27, cupy.int64)}
    try:
        import torch

        tensor = torch.from_dlpack(keys)
        found["after torch.bincount"] = lambda: torch.bincount(tensor, minlength=NUM_BINS)
    except ImportError:
        pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20, help="timed calls per way and round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()

    import cupy

    from histkit import gpu
    from histkit.gpu.device import Runtime, runtime

    rt = runtime()
    keys = uniform_keys(cupy, N, NUM_BINS)
    want = cupy.bincount(keys, minlength=NUM_BINS)
    if not bool((gpu.histogram(keys, NUM_BINS) == want).all()):
        raise AssertionError("wrong counts")
    allocations = [0]

    def counted(original):  # Runtime._allocate, on the class: every stream view's too
        def allocate(*args):
            allocations[0] += 1
            return original(*args)
        return allocate

    before = ways(cupy, keys)
    times = {way: [] for way in before}
    allocated = {way: [] for way in before}
    stream = cupy.cuda.get_current_stream()
    with wrapped([(Runtime, "_allocate", counted)]):
        for _ in range(args.rounds):
            for way, run in before.items():
                for _ in range(args.calls):
                    run()
                    stream.synchronize()
                    allocations[0] = 0
                    start = time.perf_counter()
                    gpu.histogram(keys, NUM_BINS)
                    times[way].append(time.perf_counter() - start)
                    allocated[way].append(allocations[0])
    rows = []
    for way in before:
        row = {"way": way, "call us": round(statistics.median(times[way]) * 1e6, 1),
               "allocations per call": statistics.mean(allocated[way])}
        rows.append(row)
        print(f"2^28 x 2^20 {way:26s} call {row['call us']:8.1f} us  "
              f"device allocations per call {row['allocations per call']:.2f}", flush=True)
    arch = "h200" if "H200" in rt.device.name else rt.arch
    write_results(args.out, f"sampled-after-peers-{arch}", {"device": rt.device.name,
                                                            "rows": rows})


if __name__ == "__main__":
    main()
