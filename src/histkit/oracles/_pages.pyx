"""Large oracle outputs on pages that were already faulted in.

A fresh large NumPy array costs the kernel a page fault and a zeroing of
every page on first write: for the 12 bytes per key a counting sort returns,
that is most of the call (2^24 keys on a 2-core x86-64 VM: 13 ms of faults,
6 ms of sorting). Memory returned to the OS is faulted again by the next call.

So large outputs live in blocks mapped here; when the caller drops an array,
its block goes back to a small pool instead of to the OS, and the next call
of about the same size writes into pages that are already present. A first
call pays the faults as before; repeated calls (loops, test suites, the
benchmark) do not. The pool keeps at most POOL_BLOCKS blocks and
POOL_SHARE of physical memory; ``release_pages()`` returns them all.

Arrays made here are ordinary writable, aligned, C-contiguous arrays whose
``base`` is the block (they do not own their data, so ``ndarray.resize``
refuses them, as it refuses any view).
"""

import os

import numpy as np

from cpython.buffer cimport PyBuffer_FillInfo
from libc.stdint cimport uintptr_t


cdef extern from *:
    """
    #if defined(_WIN32)
    #include <stdlib.h>
    static void* hk_map(size_t n) { return malloc(n); }
    static void hk_unmap(void* p, size_t n) { (void)n; free(p); }
    #else
    #include <sys/mman.h>
    static void* hk_map(size_t n) {
        void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
    #ifdef MADV_HUGEPAGE
        madvise(p, n, MADV_HUGEPAGE);  /* fewer, larger faults where the kernel allows */
    #endif
        return p;
    }
    static void hk_unmap(void* p, size_t n) { munmap(p, n); }
    #endif
    """
    void* hk_map(size_t n) noexcept nogil
    void hk_unmap(void* p, size_t n) noexcept nogil


# Below this an array is cheap to fault: plain np.empty.
MIN_POOLED_BYTES = 1 << 20
# Blocks are whole multiples of this (a huge page), so equal requests match.
BLOCK_UNIT = 1 << 21
POOL_BLOCKS = 4
POOL_SHARE = 0.125  # (a literal: this module compiles with C division)


def _physical_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 33


cdef Py_ssize_t _pool_limit = int(_physical_bytes() * POOL_SHARE)
# The pool: (address, size) of mapped blocks nobody uses, most recent last.
cdef list _free_blocks = []


cdef class PageBlock:
    """One mapped block; back to the pool when the last array on it goes."""

    cdef char* data
    cdef Py_ssize_t size

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.data, self.size, 0, flags)

    def __dealloc__(self):
        if self.data != NULL:
            _give_back(self.data, self.size)
            self.data = NULL


cdef void _give_back(char* data, Py_ssize_t size) noexcept:
    cdef Py_ssize_t kept = sum(block[1] for block in _free_blocks)
    if len(_free_blocks) < POOL_BLOCKS and kept + size <= _pool_limit:
        _free_blocks.append((<uintptr_t>data, size))
    else:
        hk_unmap(data, size)


cdef PageBlock _take(Py_ssize_t nbytes):
    cdef Py_ssize_t size = -(-nbytes // BLOCK_UNIT) * BLOCK_UNIT
    cdef PageBlock block = PageBlock.__new__(PageBlock)
    cdef Py_ssize_t i
    # The most recently freed block that fits without wasting half of itself.
    for i in range(len(_free_blocks) - 1, -1, -1):
        address, have = _free_blocks[i]
        if size <= have <= 2 * size:
            del _free_blocks[i]
            block.data = <char*><uintptr_t>address
            block.size = have
            return block
    block.data = <char*>hk_map(size)
    if block.data == NULL:
        release_pages()  # the pool's pages may be what is missing
        block.data = <char*>hk_map(size)
        if block.data == NULL:
            raise MemoryError(f"could not map {size} bytes for an oracle output")
    block.size = size
    return block


def empty(Py_ssize_t n, dtype):
    """An uninitialised 1-d array of n elements, pooled when large."""
    dtype = np.dtype(dtype)
    nbytes = n * dtype.itemsize
    if nbytes < MIN_POOLED_BYTES:
        return np.empty(n, dtype=dtype)
    return np.frombuffer(_take(nbytes), dtype=dtype, count=n)


def release_pages() -> int:
    """Return every pooled block to the OS; the bytes released."""
    cdef Py_ssize_t released = 0
    while _free_blocks:
        address, size = _free_blocks.pop()
        hk_unmap(<void*><uintptr_t>address, size)
        released += size
    return released


def pooled_bytes() -> int:
    """Bytes held in the pool (mapped, unused)."""
    return sum(block[1] for block in _free_blocks)
