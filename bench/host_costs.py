"""Where a checked public call spends its host time, and what shortens it
(issue 11; bench/NOTES.md, sessions 31 and 32).

    python bench/host_costs.py [--calls 40] [--rounds 5] [--ways lane,python]
                               [--shapes 2^28x2^20,...] [--out bench/results]

- marks: the host's clock at the entry and exit of each step of a
  gpu.histogram call (api's steps, cupy.empty, and the C path's memset,
  launch and sync), medians over the calls, per shape and way of calling,
  the ways in alternating rounds:
  - lane: the call as users make it (the compiled lane, histkit.gpu._lane,
    where it serves the shape; its steps show as cupy.empty and the driver
    calls alone);
  - python: the Python path (api.python_path_only);
  - unrecorded: the lane running auto's launcher where it would replay its
    recording (session 32's lane; histkit.gpu.recording);
  - AUTO, SPIN, BLOCKING_SYNC (cuCtxSetFlags; AUTO again at the end) and
    polled (the sync replaced by a Python loop on cuStreamQuery): the Python
    path with the context's scheduling set so: does the way the host waits
    change how fast it runs the next call's Python? (session 31: no);
- launch: cuLaunchKernel handed cuda.core's CUkernel (what Runtime.launch
  passes) or the context's CUfunction (cuKernelGetFunction), alone and
  inside calls;
- memset: host time of cuMemsetD8Async and cuMemsetD32Async by size (both
  through cuda.bindings, so the binding's cost is the same) and the C path's.

Printed as it comes and written to <out>/host-costs-<arch>-<today>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import statistics
import time

import numpy as np
from _shared import poll_stream, wrapped, write_results

SHAPES = ((1 << 12, 256), (1 << 20, 256), (1 << 24, 1 << 20), (1 << 28, 256), (1 << 28, 65536),
          (1 << 28, 1 << 20))
SCHEDULES = {"AUTO": 0, "SPIN": 1, "BLOCKING_SYNC": 4}
WAYS = ("lane", "python", "unrecorded", "AUTO", "SPIN", "BLOCKING_SYNC", "polled")
MEMSET_BYTES = (2048, 1 << 19, 1 << 23)


def median_us(values) -> float:
    return round(statistics.median(values) * 1e6, 2)


def clocked(marks: list, label: str, call):
    """call, noting the host's clock in marks as it is entered (label>) and
    as it returns (label<)."""
    def step(*args, **kwargs):
        marks.append((label + ">", time.perf_counter()))
        result = call(*args, **kwargs)
        marks.append((label + "<", time.perf_counter()))
        return result
    return step


class MarkedCalls:
    """Runtime.per_call.calls with the memset, launch and sync clocked, and
    the sync made by polling when `polled` is set."""

    def __init__(self, inner, marks: list, driver):
        self.inner, self.driver = inner, driver
        self.polled = False
        self.launch = clocked(marks, "launch", inner.launch)
        self.memset = clocked(marks, "memset", inner.memset)
        self.sync = clocked(marks, "sync", self._wait)

    def read_word(self, ptr, host, stream):
        status = self.driver.cuMemcpyDtoHAsync(host, ptr, 8, stream)[0]
        if status:
            return int(status), 0
        status = self.sync(stream)
        return status, ctypes.c_uint64.from_address(host).value

    def _wait(self, stream):
        return poll_stream(self.driver, stream) if self.polled else self.inner.sync(stream)


def clocked_steps(marks: list, api, cupy) -> list:
    """api's steps and cupy.empty, clocked: (owner, name, wrap) for wrapped()."""
    return [(owner, name, lambda original, name=name: clocked(marks, name, original))
            for owner, name in ((api, "_open"), (api, "_first_bad_word"), (api, "_allocate"),
                                (api, "_raise_if_bad"), (api, "_hand_back"), (cupy, "empty"))]


@contextlib.contextmanager
def lane_unrecorded(api):
    """Within: a new lane, for which no launcher can be recorded (it runs
    auto's launcher where it would replay it); the lane before, after."""
    saved_lane, saved_replay = api._LANE[:], api._lane_replay
    api._lane_replay = lambda *args: None
    api._LANE[:] = [None, None]
    try:
        yield
    finally:
        api._lane_replay = saved_replay
        api._LANE[:] = saved_lane


def parse_shapes(text: str) -> tuple[tuple[int, int], ...]:
    """"2^28x2^20,4096x256" -> ((2**28, 2**20), (4096, 256))."""
    def number(part: str) -> int:
        base, _, power = part.partition("^")
        return int(base) ** int(power) if power else int(base)

    return tuple(tuple(number(p) for p in shape.split("x")) for shape in text.split(","))


def marks_and_waits(cupy, driver, calls: int, rounds: int, ways: tuple,
                    shapes=SHAPES) -> list[dict]:
    from histkit import gpu
    from histkit.gpu import api
    from histkit.gpu.device import runtime

    rt = runtime()
    marks: list = []

    @contextlib.contextmanager
    def use(way):
        """Within: calls made in this way (see the module's docstring)."""
        rt.per_call.calls.polled = way == "polled"
        schedule = SCHEDULES.get(way, SCHEDULES["AUTO"])
        status = driver.cuCtxSetFlags(schedule)[0]
        if status != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuCtxSetFlags({schedule}): {status}")
        if way == "lane":
            context = contextlib.nullcontext()
        elif way == "unrecorded":
            context = lane_unrecorded(api)
        else:
            context = api.python_path_only()
        with context:
            yield

    rows = []
    with wrapped([(rt.per_call, "calls", lambda inner: MarkedCalls(inner, marks, driver)),
                  *clocked_steps(marks, api, cupy)]):
        try:
            for n, num_bins in shapes:
                rows.append(shape_marks(cupy, gpu, n, num_bins, marks, use, calls, rounds,
                                        ways))
        finally:
            with use("lane"):
                pass
    return rows


def shape_marks(cupy, gpu, n: int, num_bins: int, marks: list, use, calls: int,
                rounds: int, ways: tuple) -> dict:
    """One shape's calls in every way, alternating rounds: the median call
    and the median time of each step's first entry and exit."""
    keys = cupy.random.RandomState(n % 97).randint(0, num_bins, n, dtype=cupy.int32)
    want = cupy.bincount(keys, minlength=num_bins)
    for way in ways:
        with use(way):
            if not bool((gpu.histogram(keys, num_bins) == want).all()):
                raise AssertionError(f"wrong counts with {way}")
    walls = {way: [] for way in ways}
    steps = {way: {} for way in ways}
    for _ in range(rounds):
        for way in ways:
            with use(way):
                gpu.histogram(keys, num_bins)
                for _ in range(calls):
                    marks.clear()
                    start = time.perf_counter()
                    gpu.histogram(keys, num_bins)
                    walls[way].append(time.perf_counter() - start)
                    seen = set()
                    for label, at in marks:  # each step's first entry and exit
                        if label not in seen:
                            seen.add(label)
                            steps[way].setdefault(label, []).append(at - start)
    row = {"N": n, "K": num_bins}
    for way in ways:
        at = sorted((median_us(v), label) for label, v in steps[way].items())
        row[way] = {"call us": median_us(walls[way]),
                    "steps us": {label: us for us, label in at}}
        print(f"2^{n.bit_length() - 1} x {num_bins} {way:13s} call "
              f"{row[way]['call us']:8.1f}: "
              + " ".join(f"{label} {us:.1f}" for us, label in at), flush=True)
    return row


def launch_handles(cupy, driver, calls: int, rounds: int) -> dict:
    from histkit import gpu
    from histkit.gpu.device import runtime

    rt = runtime()
    results = {"isolated us": {}, "calls us": []}
    for n, num_bins in SHAPES[:1] + SHAPES[4:]:
        keys = cupy.random.RandomState(n % 91).randint(0, num_bins, n, dtype=cupy.int32)
        want = cupy.bincount(keys, minlength=num_bins)
        gpu.histogram(keys, num_bins)
        as_kernel = dict(rt._ready)
        as_function = {key: (config, int(driver.cuKernelGetFunction(key[0].handle)[1]))
                       for key, (config, _) in as_kernel.items()}
        tables = {"CUkernel": as_kernel, "CUfunction": as_function}
        if not results["isolated us"]:
            results["isolated us"] = isolated_launches(rt, tables, rounds)
        times = {name: [] for name in tables}
        for _ in range(rounds):
            for name, table in tables.items():
                rt._ready.clear()
                rt._ready.update(table)
                if not bool((gpu.histogram(keys, num_bins) == want).all()):
                    raise AssertionError(f"wrong counts launching through {name}")
                for _ in range(calls):
                    start = time.perf_counter()
                    gpu.histogram(keys, num_bins)
                    times[name].append(time.perf_counter() - start)
        rt._ready.clear()
        rt._ready.update(as_kernel)
        row = {"N": n, "K": num_bins, **{name: median_us(v) for name, v in times.items()}}
        results["calls us"].append(row)
        print(f"launch via: 2^{n.bit_length() - 1} x {num_bins} calls "
              + "  ".join(f"{name} {median_us(v):.1f} us" for name, v in times.items()),
              flush=True)
        del keys, want
    return results


def isolated_launches(rt, tables: dict, rounds: int) -> dict:
    """Host time of one launch of the first kernel planned (a 2^12-key fast
    histogram into scratch counts), through each handle."""
    plan = next(value for key, value in rt._plans.items() if key[0] == "fast")
    kernel, geometry, n_and_bins, shared_bins, overwrite = plan
    counts = rt.empty(int(n_and_bins[1]), np.int64)
    keys = rt.empty(int(n_and_bins[0]), np.int32)
    rt.memset(keys.ptr, 0, int(n_and_bins[0]) * 4)
    slot = rt.bad_key_slot()
    args = (keys.ptr, *n_and_bins, np.int64(0), shared_bins, overwrite, counts.ptr, slot.ptr)
    calls = rt.per_call.calls
    times = {name: [] for name in tables}
    for _ in range(rounds):
        for name, table in tables.items():
            handle = table[kernel, geometry][1]
            for _ in range(10):
                for _ in range(50):
                    start = time.perf_counter()
                    status = calls.launch(handle, geometry.grid, geometry.block,
                                          geometry.shared_bytes, rt.handle, False, args)
                    times[name].append(time.perf_counter() - start)
                    if status:
                        raise RuntimeError(f"launch through {name}: {status}")
                rt.sync("isolated launches")
    rt.read_bad_key(slot)
    out = {name: median_us(v) for name, v in times.items()}
    print("launch via, isolated: " + "  ".join(f"{k} {v:.2f} us" for k, v in out.items()),
          flush=True)
    return out


def memsets(driver, rt, ptr: int, nbytes: int) -> dict:
    """Ways to zero nbytes at ptr on rt's stream, each returning its CUresult."""
    handle = rt.handle
    return {"D8 (bindings)": lambda: driver.cuMemsetD8Async(ptr, 0, nbytes, handle)[0],
            "D32 (bindings)": lambda: driver.cuMemsetD32Async(ptr, 0, nbytes // 4, handle)[0],
            "D8 (histkit's C path)": lambda: rt.per_call.calls.memset(ptr, 0, nbytes, handle)}


def memset_costs(driver, rounds: int) -> list[dict]:
    from histkit.gpu.device import runtime

    rt = runtime()
    rows = []
    for nbytes in MEMSET_BYTES:
        target = rt.empty(nbytes // 8, np.int64)
        ways = memsets(driver, rt, target.ptr, nbytes)
        times = {name: [] for name in ways}
        for _ in range(rounds):
            for name, way in ways.items():
                for _ in range(8):
                    for _ in range(25):
                        start = time.perf_counter()
                        status = way()
                        times[name].append(time.perf_counter() - start)
                        if status:
                            raise RuntimeError(f"{name}: {status}")
                    rt.sync("memsets")
        row = {"bytes": nbytes, **{name: median_us(v) for name, v in times.items()}}
        rows.append(row)
        print(f"memset {nbytes:>8} B host: "
              + "  ".join(f"{name} {row[name]:.2f} us" for name in ways), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--ways", default="lane,python",
                        help=f"ways of calling to compare, of {','.join(WAYS)}")
    parser.add_argument("--skip-launch-and-memset", action="store_true",
                        help="the marks alone (session 31 measured the rest)")
    parser.add_argument("--shapes", type=parse_shapes, default=SHAPES,
                        help="N x K shapes, e.g. 2^28x2^20,4096x256 (default: six)")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    ways = tuple(args.ways.split(","))
    unknown = set(ways) - set(WAYS)
    if unknown:
        parser.error(f"unknown --ways {sorted(unknown)}; choose from {WAYS}")

    import cupy
    from cuda.bindings import driver

    from histkit.gpu.device import runtime

    rt = runtime()
    results = {"device": rt.device.name,
               "context flags at start": int(driver.cuCtxGetFlags()[1]),
               "marks and waits": marks_and_waits(cupy, driver, args.calls, args.rounds, ways,
                                                  args.shapes)}
    if not args.skip_launch_and_memset:
        results["launch handles"] = launch_handles(cupy, driver, args.calls, args.rounds)
        results["memset host us"] = memset_costs(driver, args.rounds)
    arch = "h200" if "H200" in rt.device.name else rt.arch
    write_results(args.out, f"host-costs-{arch}", results)


if __name__ == "__main__":
    main()
