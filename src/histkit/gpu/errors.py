"""Errors raised by histkit.gpu: each carries what is needed to act on it."""

from __future__ import annotations


class GpuUnavailableError(RuntimeError):
    """No usable CUDA GPU, driver or cuda-python; the message says which."""


class KernelCompileError(RuntimeError):
    """NVRTC rejected a kernel. Holds the log, the options and the source."""

    def __init__(self, source_name: str, log: str, options: list[str], source: str):
        numbered = "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))
        super().__init__(
            f"NVRTC failed to compile {source_name}\n--- log ---\n{log.strip()}\n"
            f"--- options ---\n{' '.join(options)}\n--- source ---\n{numbered}"
        )
        self.source_name = source_name
        self.log = log
        self.options = options
        self.source = source

    def __reduce__(self):
        # Errors cross process boundaries pickled (Dask workers, the check's
        # child process): rebuild from the arguments, not the message alone.
        return type(self), (self.source_name, self.log, self.options, self.source)


class SkewUnavailable(RuntimeError):
    """A user's kernel compiles as written but not with the schedule skew
    added (histkit.gpu.user_skew: its static shared memory is full, say), so
    its skewed cases cannot be run; the message has the compiler's reason."""


class CudaError(RuntimeError):
    """A CUDA call failed; the message names the call and the CUDA error."""


class DeviceHang(CudaError):
    """A host wait on the device outlasted the limit a bounded run set
    (Runtime.bounded_waits): a kernel that never ends. Its launch holds the
    GPU until the process exits, so later waits in the process fail at once."""


class DeviceMemoryError(MemoryError):
    """A device allocation did not fit; carries the bytes asked for and free."""

    def __init__(self, nbytes: int, free: int | None, what: str = "a device buffer"):
        free_text = f"{free} bytes are free" if free is not None else "free memory unknown"
        super().__init__(f"{what} needs {nbytes} bytes of GPU memory; {free_text}")
        self.nbytes = nbytes
        self.free = free
        self.what = what

    def __reduce__(self):
        return type(self), (self.nbytes, self.free, self.what)


class UnsupportedShape(ValueError):
    """This kernel cannot take this input's shape (too many bins for it, ...)."""
