# cython: language_level=3
"""The driver calls every public GPU call makes (a launch, a memset, one word
read back, a stream sync), made from C.

cuda.core's ``launch`` packs each argument in Python and cost 6-7 us a
launch on the H200 (docs/performance.md); cuda.bindings' own ``cuLaunchKernel``
more. Here the arguments are packed into C slots and the driver is called
through its entry points, which ``histkit.gpu.device`` looks up with
cuda.bindings' ``cuGetProcAddress``: the same driver functions cuda.core
calls, with no CUDA header needed to build this module (the signatures below
are the driver's stable ABI).

Every method returns the driver's CUresult (0: success); the caller names a
failure. An argument that is not an integer (a float, a struct) raises
TypeError before anything is launched, so the caller can launch through
cuda.core instead.
"""

from cpython.number cimport PyNumber_Index
from libc.stdint cimport int64_t, uint64_t, uintptr_t

ctypedef int (*LaunchKernel)(void* f, unsigned int grid_x, unsigned int grid_y,
                             unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                             unsigned int block_z, unsigned int shared_bytes, void* stream,
                             void** params, void** extra) noexcept nogil
ctypedef int (*LaunchCooperativeKernel)(void* f, unsigned int grid_x, unsigned int grid_y,
                                        unsigned int grid_z, unsigned int block_x,
                                        unsigned int block_y, unsigned int block_z,
                                        unsigned int shared_bytes, void* stream,
                                        void** params) noexcept nogil
ctypedef int (*MemsetD8Async)(uint64_t ptr, unsigned char byte, size_t count,
                              void* stream) noexcept nogil
ctypedef int (*MemcpyDtoHAsync)(void* host, uint64_t device, size_t nbytes,
                                void* stream) noexcept nogil
ctypedef int (*StreamSynchronize)(void* stream) noexcept nogil

cdef enum:
    MAX_ARGS = 32  # more than any kernel of cuda/ or of the kernel ABI takes


cdef class DriverCalls:
    """Launch, memset, read-one-word and sync through the given entry points
    (addresses from cuGetProcAddress)."""

    cdef LaunchKernel _launch
    cdef LaunchCooperativeKernel _cooperative
    cdef MemsetD8Async _memset
    cdef MemcpyDtoHAsync _copy
    cdef StreamSynchronize _sync

    def __cinit__(self, uintptr_t launch, uintptr_t cooperative, uintptr_t memset,
                  uintptr_t copy, uintptr_t sync):
        if not (launch and cooperative and memset and copy and sync):
            raise ValueError("every driver entry point is needed")
        self._launch = <LaunchKernel>launch
        self._cooperative = <LaunchCooperativeKernel>cooperative
        self._memset = <MemsetD8Async>memset
        self._copy = <MemcpyDtoHAsync>copy
        self._sync = <StreamSynchronize>sync

    def launch(self, uintptr_t kernel, unsigned int grid, unsigned int block,
               unsigned int shared_bytes, uintptr_t stream, bint cooperative, tuple args):
        """Launch kernel (a CUkernel or CUfunction handle) on stream with args:
        Python or NumPy integers (pointers, sizes), each passed in an 8-byte
        slot whose low bytes a narrower parameter reads (as cuda.core does)."""
        # On the stack: launches from several threads never share slots (the
        # driver copies the parameters before the launch call returns).
        cdef uint64_t slots[MAX_ARGS]
        cdef void* params[MAX_ARGS]
        cdef Py_ssize_t count = len(args), i
        cdef object value
        if count > MAX_ARGS:
            raise TypeError(f"{count} kernel arguments; at most {MAX_ARGS} are packed here")
        for i in range(count):
            value = PyNumber_Index(args[i])  # TypeError for a float or anything else
            if value < 0:
                slots[i] = <uint64_t>(<int64_t>value)
            else:
                slots[i] = <uint64_t>value
            params[i] = &slots[i]
        if cooperative:
            return self._cooperative(<void*>kernel, grid, 1, 1, block, 1, 1, shared_bytes,
                                     <void*>stream, params)
        return self._launch(<void*>kernel, grid, 1, 1, block, 1, 1, shared_bytes,
                            <void*>stream, params, NULL)

    def memset(self, uint64_t ptr, unsigned char byte, size_t nbytes, uintptr_t stream):
        """Set nbytes at ptr to byte, on stream (asynchronous)."""
        return self._memset(ptr, byte, nbytes, <void*>stream)

    def read_word(self, uint64_t device_ptr, uintptr_t host_word, uintptr_t stream):
        """(CUresult, value): the uint64 at device_ptr, copied on stream into
        host_word (pinned host memory) once stream's earlier work is done; the
        wait releases the GIL."""
        cdef int status = self._copy(<void*>host_word, device_ptr, 8, <void*>stream)
        if status == 0:
            with nogil:
                status = self._sync(<void*>stream)
        return status, (<uint64_t*>host_word)[0] if status == 0 else 0

    def sync(self, uintptr_t stream):
        """Wait for stream's work (the GIL released meanwhile)."""
        cdef int status
        with nogil:
            status = self._sync(<void*>stream)
        return status
