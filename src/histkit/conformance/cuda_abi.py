"""Launching a user's .cu file by the kernel ABI of its kind (docs/check.md:
"The kernel ABI"). Every entry is ``extern "C"``; the key type is ``KEY_T``,
the counter type ``COUNT_T`` (32-bit as the chapter writes them, or 64-bit),
both passed as -D defines, with ``WARP_SIZE``:

- histogram, racy-histogram, wave, privatized::

    histogram(const KEY_T* keys, long long n, unsigned long long num_bins,
              COUNT_T* hist, unsigned long long* first_bad
              [, unsigned long long* global_atomics])   // privatized only

  hist starts zeroed; first_bad starts at ~0ULL and a kernel that meets keys
  outside [0, num_bins) lowers it to the first such index (atomicMin). A
  privatized kernel gets num_bins * sizeof(COUNT_T) bytes of dynamic shared
  memory and adds the global atomics it issues to *global_atomics.
- scan: ``scan(const unsigned long long* counts, long long n, unsigned long long* offsets)``
- sort, stable-sort: the chapter's recipe. ``count`` has the histogram
  signature (COUNT_T is unsigned long long); histkit scans the counts into
  per-bin cursors; then
  ``scatter(const KEY_T* keys, long long n, unsigned long long* cursor,
  KEY_T* out_keys, long long* out_index)``, launched only when the count
  reported no bad key (it has no num_bins to skip one by).

Geometry: blocks of ``block`` threads (a wave kernel: one block of
``warp_size``); ``grid=None`` launches one thread per key (ceil(n / block)
blocks); a fixed grid means the kernel walks the keys grid-stride, and the
suite's forced small grids apply to it too.
"""

from __future__ import annotations

import numpy as np

from histkit.gpu import compiler, contract, errors
from histkit.gpu.contract import KEY_C_TYPES, NO_BAD_KEY
from histkit.gpu.errors import KernelCompileError, SkewUnavailable
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch import scan as launch_scan
from histkit.gpu.launch.common import zero_counts

HISTOGRAM_KINDS = ("histogram", "racy-histogram", "wave", "privatized")
# COUNT_T of a histogram kernel by --counts: (C type, NumPy dtype)
COUNT_TYPES = {32: ("unsigned int", "uint32"), 64: ("unsigned long long", "uint64")}


def launcher(impl):
    if impl.kind in HISTOGRAM_KINDS:
        return _histogram_launcher(impl)
    if impl.kind == "scan":
        return _scan_launcher(impl)
    return _sort_launcher(impl)


def _build(rt, impl, entry: str, defines: dict[str, str]):
    """The user's entry, built by rt (in a skewed case, with the schedule
    skew). A skewed build that fails where the file as written compiles
    (the skew's 1 KiB of shared memory past a full 48 KiB, say) is not the
    kernel's fault: SkewUnavailable, which makes its skewed cases skips."""
    try:
        return rt.kernel(impl.path, entry, defines)
    except KernelCompileError as error:
        if not rt.skew.depth:
            raise
        try:
            compiler.compile_cubin(impl.path, contract.defines_for(impl.path, dict(defines)),
                                   rt.arch)
        except KernelCompileError:
            raise error from None  # it does not compile at all: the kernel's own error
        reason = next((line.strip() for line in error.log.splitlines() if "error" in line),
                      error.log.strip()[:200])
        raise SkewUnavailable(f"the schedule skew cannot be added to {impl.path}: "
                              f"{reason}") from None


def _defines(impl, dtype, count_type: str) -> dict[str, str]:
    return {"KEY_T": KEY_C_TYPES[np.dtype(dtype)], "COUNT_T": count_type,
            "WARP_SIZE": str(impl.warp_size), **dict(impl.defines)}


def _count_type(impl) -> str:
    return COUNT_TYPES[impl.count_bits][0]


def _geometry(impl, entry: str, n: int, grid: int | None, shared: int = 0) -> Geometry:
    block = impl.warp_size if impl.kind == "wave" else impl.block
    if grid is None:
        grid = impl.grid
    if grid is None:
        grid = 1 if impl.kind == "wave" else max(1, -(-n // block))
    return Geometry(entry, grid, block, shared)


def _histogram_launcher(impl):
    entry = impl.entries[0]

    def run(rt, keys, num_bins, hist, first_bad, grid=None, atomics=None):
        kernel = _build(rt, impl, entry, _defines(impl, keys.dtype, _count_type(impl)))
        extra = ()
        shared = 0
        if impl.kind == "privatized":
            shared = num_bins * impl.count_bits // 8
            if shared > rt.max_shared_per_block:
                raise errors.UnsupportedShape(
                    f"a privatized kernel's {num_bins} bins need {shared} bytes of shared "
                    f"memory; a block has {rt.max_shared_per_block}")
            extra = (atomics.ptr,)
        geometry = _geometry(impl, entry, keys.n, grid, shared)
        zero_counts(rt, hist, num_bins)  # the ABI hands a kernel zeroed counts
        rt.launch(kernel, geometry, keys.ptr, np.int64(keys.n), np.uint64(num_bins), hist.ptr,
                  first_bad.ptr, *extra)
        return geometry

    return run


def _scan_launcher(impl):
    entry = impl.entries[0]

    def run(rt, counts_ptr, n, out_ptr, keep_alive):
        kernel = _build(rt, impl, entry, _defines(impl, np.uint64, "unsigned long long"))
        geometry = _geometry(impl, entry, n, None)
        rt.launch(kernel, geometry, counts_ptr, np.int64(n), out_ptr)
        return [geometry]

    return run


def _sort_launcher(impl):
    count_entry, scatter_entry = impl.entries

    def run(rt, keys, num_bins, out_keys, out_index, first_bad, keep_alive, grid=None,
            between=None):
        defines = _defines(impl, keys.dtype, "unsigned long long")
        counts = rt.zeros(num_bins, np.uint64)
        cursor = rt.empty(num_bins, np.uint64)
        keep_alive += [counts, cursor]
        count = _geometry(impl, count_entry, keys.n, grid)
        rt.launch(_build(rt, impl, count_entry, defines), count, keys.ptr,
                  np.int64(keys.n), np.uint64(num_bins), counts.ptr, first_bad.ptr)
        geometries = [count, *launch_scan.exclusive_scan(rt, counts.ptr, num_bins, cursor.ptr,
                                                         keep_alive)]
        if between is not None and between() is False:
            return geometries
        if rt.read_word(first_bad.ptr) != NO_BAD_KEY:
            return geometries  # the ABI's scatter has no num_bins: it never sees bad keys
        scatter = _geometry(impl, scatter_entry, keys.n, grid)
        rt.launch(_build(rt, impl, scatter_entry, defines), scatter, keys.ptr,
                  np.int64(keys.n), cursor.ptr, out_keys.ptr, out_index.ptr)
        return geometries + [scatter]

    return run
