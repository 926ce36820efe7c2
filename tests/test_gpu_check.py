"""`histkit check` on user .cu kernels whose bugs only a GPU shows (H200):
a missing barrier whose race only one warp order exposes, an unstable sort
that keeps its index in 32 bits, and histkit's own sorts past 2^31 keys
judged in closed form (the radix sort's values too)."""

import pytest

from histkit import gpu
from histkit.conformance import check

REASON = gpu.gpu_unavailable_reason()
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")]

CHAINED_SCAN = r'''
// One block walks the counts a chunk of blockDim.x at a time: a Hillis-Steele
// scan of the chunk, then the chunk's offsets from the carry, then the carry
// grows by the chunk's total.
extern "C" __global__ void scan(const unsigned long long* counts, long long n,
                                unsigned long long* offsets) {
    __shared__ unsigned long long part[1024];
    __shared__ unsigned long long carry;
    const unsigned t = threadIdx.x, width = blockDim.x;
    if (t == 0) carry = 0;
    __syncthreads();
    for (long long base = 0; base < n; base += width) {
        const long long i = base + t;
        const unsigned long long mine = i < n ? counts[i] : 0;
        part[t] = mine;
        __syncthreads();
        for (unsigned d = 1; d < width; d <<= 1) {
            const unsigned long long add = t >= d ? part[t - d] : 0;
            __syncthreads();
            part[t] += add;
            __syncthreads();
        }
        if (i < n) offsets[i] = carry + part[t] - mine;
        READ_BARRIER
        if (t == width - 1) carry += part[t];
        __syncthreads();
    }
}
'''

SORT_32_BIT_INDEX = r'''
extern "C" __global__ void count(const KEY_T* keys, long long n, unsigned long long num_bins,
                                 unsigned long long* counts, unsigned long long* first_bad) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long b = (unsigned long long)(long long)keys[i];
        if (b < num_bins) atomicAdd(&counts[b], 1ULL);
        else atomicMin(first_bad, (unsigned long long)i);
    }
}

extern "C" __global__ void scatter(const KEY_T* keys, long long n, unsigned long long* cursor,
                                   KEY_T* out_keys, long long* out_index) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long pos = atomicAdd(&cursor[(unsigned long long)(long long)keys[i]], 1ULL);
        out_keys[pos] = keys[i];
        out_index[pos] = INDEX_CAST i;
    }
}
'''


def _kernel(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_one_block_scan_missing_the_barrier_after_its_carry_is_read_fails_in_quick_mode(
        tmp_path):
    right = _kernel(tmp_path, "scan_right.cu",
                    CHAINED_SCAN.replace("READ_BARRIER", "__syncthreads();"))
    racy = _kernel(tmp_path, "scan_racy.cu", CHAINED_SCAN.replace("READ_BARRIER", ""))
    passed = check(right, "scan", grid=1)
    assert passed.passed, passed
    failed = check(racy, "scan", grid=1, shrink_failures=False)
    assert not failed.passed
    # the skewed cases show it, each pair of opposite warp orders at least once
    assert any("/skewed-order=" in f.case.name for f in failed.failures), failed


def test_an_unstable_sort_that_keeps_its_index_in_32_bits_fails(tmp_path):
    right = _kernel(tmp_path, "sort_right.cu", SORT_32_BIT_INDEX.replace("INDEX_CAST", ""))
    narrow = _kernel(tmp_path, "sort_narrow.cu",
                     SORT_32_BIT_INDEX.replace("INDEX_CAST", "(int)"))
    passed = check(right, "sort")
    assert passed.passed, passed
    failed = check(narrow, "sort", shrink_failures=False)
    assert not failed.passed
    assert all(f.case.n > 2**31 for f in failed.failures), failed


def test_histkits_sorts_pass_the_fenced_case_past_2_31_keys_radix_values_included():
    from histkit.conformance.cases import all_cases, radix_past_2_31_case
    from histkit.conformance.runner import run_conformance

    (fenced,) = [c for c in all_cases(quick=True) if c.fenced and c.kinds]
    report = run_conformance(cases=[fenced, radix_past_2_31_case()],
                             rows=["sort-atomic-cursor", "radix-sort"], json_path=None)
    assert report.passed, [(r.kernel, r.cell.detail) for r in report.failures]
    # judged: passed, or (the unstable sort, whose order its atomics decide
    # from run to run) a finding that the rule allows
    judged = [(r.case.kinds, r.kernel) for r in report.results
              if r.cell.status in ("pass", "finding")]
    assert (("radix-sort",), "radix-sort") in judged
    assert any(kernel.startswith("sort-atomic-cursor") for _, kernel in judged)


def test_a_weighted_cu_kernel_that_adds_with_atomics_fails_the_cancellation_cases():
    from pathlib import Path

    kernel = str(Path(__file__).resolve().parents[1] / "examples" / "cuda" / "weighted_atomic.cu")
    report = check(kernel, "weighted-histogram")
    assert not report.passed
    failed = {case.name for case, cell, _ in report.cells if cell.status == "FAIL"}
    assert any("cancel" in name for name in failed), sorted(failed)[:10]
    # the bad-key cases pass: the kernel reports the first bad index as the ABI asks
    bad = [cell for case, cell, _ in report.cells if "bad" in case.name]
    assert bad and all(cell.status == "pass" for cell in bad)
