"""How a checked call can learn its bad-key verdict fastest (issue 11): after
the same histogram launch, wait for it and read the first-bad word

  - "DtoH copy + sync": what Runtime.read_word does today (an 8-byte
    asynchronous copy into a pinned host word, then a stream sync);
  - "kernel to mapped word + sync": a one-thread kernel copies the word into
    mapped pinned host memory (and resets it), then a stream sync and a plain
    host read: no copy engine;
  - "sync alone": the floor (the verdict not read at all).

Median wall time per launch + verdict of many, on 2^12 CuPy int32 keys, K = 256
and 65536 (a GPU host with CuPy).

    python bench/verdict_readback.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import ctypes

import numpy as np
from _shared import median_seconds

TAKE_VERDICT = r"""
extern "C" __global__ void take_verdict(unsigned long long* slot,
                                        volatile unsigned long long* host_word) {
    *host_word = *slot;
    *slot = 0xffffffffffffffffULL;
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    import cupy
    from cuda.bindings import driver

    from histkit.gpu.device import check, runtime

    rt = runtime()
    take = cupy.RawKernel(TAKE_VERDICT, "take_verdict")
    flags = driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE
    host_ptr = check(driver.cuMemHostAlloc(8, flags), "cuMemHostAlloc")
    device_word = int(check(driver.cuMemHostGetDevicePointer(host_ptr, 0),
                            "cuMemHostGetDevicePointer"))
    host_word = np.ctypeslib.as_array((ctypes.c_uint64 * 1).from_address(int(host_ptr)))
    for num_bins in (256, 65536):
        for name, us in time_verdicts(cupy, rt, take, device_word, host_word, num_bins,
                                      args.calls):
            print(f"N=2^12 K={num_bins:>6}  {us:7.2f} us  launch + {name}", flush=True)
    check(driver.cuMemFreeHost(host_ptr), "cuMemFreeHost")


def time_verdicts(cupy, rt, take, device_word: int, host_word, num_bins: int, calls: int):
    """(how, median us) for each way of reading the verdict after a launch."""
    from histkit.gpu import registry
    from histkit.gpu.api import _begin, cupy_stream

    keys = cupy.random.RandomState(0).randint(0, num_bins, 1 << 12, dtype=cupy.int32)
    call = _begin(rt, keys, None, True)
    crt, call_keys = call.rt, call.keys
    hist = cupy.zeros(num_bins, cupy.int64)
    slot = crt.bad_key_slot()
    auto = registry.serving("histogram", "auto")
    stream = cupy_stream(cupy, crt.handle)

    def launch():
        auto.run(crt, call_keys, num_bins, hist.data, slot)

    def by_copy():
        launch()
        return crt.read_word(slot.ptr)

    def by_mapped_word():
        launch()
        with stream:
            take((1,), (1,), (np.uint64(slot.ptr), np.uint64(device_word)))
        crt.sync("verdict")
        return int(host_word[0])

    def sync_alone():
        launch()
        crt.sync("floor")

    assert by_copy() == by_mapped_word() == 2**64 - 1  # no bad key: the slot stays clean
    return [(name, median_seconds(step, calls, warm_up=100) * 1e6)
            for name, step in (("DtoH copy + sync", by_copy),
                               ("kernel to mapped word + sync", by_mapped_word),
                               ("sync alone", sync_alone))]


if __name__ == "__main__":
    main()
