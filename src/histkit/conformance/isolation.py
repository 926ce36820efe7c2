"""A user's implementation runs in a worker process: a crash or a hang costs one cell.

One worker takes the cases one after another (imports and CUDA start-up are
paid once); it is a fresh interpreter running ``serve`` (``python -c`` with
the socket pair's descriptor), not a
multiprocessing child: a spawned child would first re-run the caller's main
script, so a script that calls ``check(...)`` at its top level without an
``if __name__ == "__main__":`` guard would have every case FAIL as a dead
worker.

Both kinds of implementation go there: a .cu kernel (built and launched by
the conformance runner, as histkit's own rows are) and a Python callable
(imported by name in the worker, or sent by value with cloudpickle). When a
case hangs past the timeout the worker is killed; when it dies (a signal, an
abort inside a C extension) its exit is recorded with what it last wrote to
stderr, and the line of the user's code it died in (faulthandler's stack; a
hung worker is asked for its stack before it is killed); after a .cu
kernel's CUDA error, or a callable's that left its context unusable (the
driver says so, _context_lost), the worker is replaced and the next case gets
a fresh one. A callable's exception that only names CUDA is a FAIL like any
other.

A kernel that hung once is likely to hang again (a loop that never ends past
some size, whatever the key type): after the first hang, cases as large as a
hung one get at most AFTER_HANG_TIMEOUT_S (smaller ones, the whole timeout:
an honest slow case is not a hang), so that a hanging kernel costs a minute
or so, not the timeout on every case (check() stops running it on cases like
those after MAX_HANGS hangs). A fault costs
a new worker (about a second), so check() limits those too (MAX_FAULTS).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import fcntl
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

from histkit.conformance.cases import Case
from histkit.conformance.checks import Cell
from histkit.conformance.loading import (
    UsageError,
    file_module_name,
    is_file_spec,
    load_callable,
    raised,
    users_frame,
)

DEFAULT_TIMEOUT_S = 60.0  # seconds a case may take before it is a hang (check()'s default)
# What a worker prints to stdout or stderr is kept out of the verdict: the last case's
# output is kept, up to this many characters (its tail), for the failure it shows.
PRINTED_CHARS = 4000
AFTER_HANG_TIMEOUT_S = 10.0
STDERR_TAIL_CHARS = 300
# A hung worker is sent this signal, on which faulthandler writes its stack
# (the line it hangs on) to stderr, and given this long to write it.
STACK_SIGNAL = signal.SIGUSR1
STACK_WAIT_S = 1.0
# faulthandler's lines: "Fatal Python error: Segmentation fault" and each frame's
# '  File "k.py", line 12 in f', innermost first.
_FATAL = re.compile(r"^Fatal Python error: (.+)$", re.MULTILINE)
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+) in (\S+)\s*$')
_WORKER = ("import sys; from histkit.conformance.isolation import serve; "
           "serve(int(sys.argv[1]))")
# A callable's module is loaded first in a child like a worker: one that kills
# or hangs its process while it loads is a UsageError, not the end of the run.
LOAD_TIMEOUT_S = 120.0
LOADED_MARK = "histkit: loaded"
LOADING_MARK = "histkit: loading"  # the child reached the user's module (histkit imported)
_TRIAL_LOAD = ("import sys, faulthandler, signal; faulthandler.enable(); "
               f"faulthandler.register(signal.{STACK_SIGNAL.name}, all_threads=True)\n"
               "from histkit.conformance.loading import load_callable\n"
               f"print({LOADING_MARK!r}, file=sys.stderr, flush=True)\n"
               "try:\n    load_callable(sys.argv[1])\n"
               "except Exception:\n    pass  # this process's own load raises it, and says how\n"
               f"print({LOADED_MARK!r}, file=sys.stderr, flush=True)")


def _build(impl):
    """What the worker runs a case with: a registry row for a .cu kernel,
    the implementation itself for a callable."""
    if hasattr(impl, "as_kernel"):
        return impl.as_kernel()
    return impl


def _judge_in_worker(built, case: Case) -> tuple[Cell, str]:
    if hasattr(built, "judge"):  # a Python callable
        return built.judge(case)
    from histkit.conformance.runner import run_case
    from histkit.gpu.device import runtime
    from histkit.gpu.registry import DEFAULT

    (result,) = run_case(runtime(), case, [(built.row, built, DEFAULT)])
    return result.cell, result.geometry


def _worker(conn) -> None:
    built: dict[int, object] = {}
    while True:
        message = conn.recv()
        if message is None:
            return
        slot, payload, case = message
        try:
            if payload is not None:
                impl = payload if not isinstance(payload, bytes) else pickle.loads(payload)
                built[slot] = _build(impl)
            cell, geometry = _judge_in_worker(built[slot], case)
        # anything the judging did not turn into a cell; a sys.exit() in the
        # user's code too, named with its line (it would end the worker unnamed)
        except (Exception, SystemExit) as error:
            cell, geometry = Cell("FAIL", raised(error)), ""
        lost = _cuda_error(cell) and _context_lost()
        conn.send((cell, geometry, lost))


def serve(fd: int) -> None:
    """A worker's main: judge the cases sent over the socket ``fd`` until told
    to stop. A fatal signal writes the Python stack to stderr, and so does
    STACK_SIGNAL (a hung case), so the parent can name the user's line."""
    faulthandler.enable()
    faulthandler.register(STACK_SIGNAL, all_threads=True)
    _worker(Connection(fd))


def _worker_env() -> dict[str, str]:
    """The environment of a child: this process's, with its import path (as a
    spawned child would have it)."""
    path = os.pathsep.join([p for p in sys.path if p]
                           + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def load_callable_isolated(spec: str):
    """loading.load_callable(spec), its module first loaded in a child process
    (trial_load) unless this process has it already: a module that faults,
    exits or hangs as it loads is a UsageError, not this process's end."""
    module_part = spec.rpartition(":")[0]
    name = file_module_name(Path(module_part)) if is_file_spec(spec) else module_part
    if name not in sys.modules:
        trial_load(spec)
    return load_callable(spec)


def trial_load(spec: str, timeout: float = LOAD_TIMEOUT_S) -> None:
    """Load the Python callable ``spec`` (loading.load_callable's) in a child
    process first: UsageError when loading it kills its process (a fault,
    ``os._exit``, ``sys.exit``) or does not end within ``timeout`` seconds,
    naming the user's line where faulthandler's stack shows it. An exception
    raised while loading is left to this process's own load, which says it;
    so is a child that cannot import histkit itself (no verdict on the module)."""
    module_part = spec.rpartition(":")[0]
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen([sys.executable, "-c", _TRIAL_LOAD, spec],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=stderr, cwd=os.getcwd(), env=_worker_env())
        try:
            process.wait(timeout)
            hung = False
        except subprocess.TimeoutExpired:
            hung = True
            with contextlib.suppress(OSError):
                process.send_signal(STACK_SIGNAL)
            time.sleep(STACK_WAIT_S)
            process.kill()
            process.wait()
        stderr.seek(0)
        text = stderr.read().decode(errors="replace")
    if LOADED_MARK in text or (LOADING_MARK not in text and not hung):
        return  # loaded; or the child could not start histkit: this process loads it alone
    where = where_it_stopped(text)
    where = f" {where}" if where else ""
    if hung:
        raise UsageError(f"loading {module_part} did not finish in {timeout:g} s{where}; "
                         f"no case was run")
    raise UsageError(f"loading {module_part} ended its process "
                     f"({_exit_description(process.returncode)}){where}; no case was run")


def where_it_stopped(stderr: str) -> str:
    """``at file.py:LINE in function``: the user's innermost frame in the
    last stack faulthandler wrote to ``stderr`` ("" where none is the user's)."""
    blocks = re.split(r"^(?:Current thread|Thread) 0x[0-9a-fA-F]+ .*$", stderr,
                      flags=re.MULTILINE)
    for block in blocks[1:]:  # one per thread; the main thread's holds the user's code
        frames = [match.groups() for match in map(_FRAME.match, block.splitlines())
                  if match]
        where = users_frame([(name, int(line), function)
                             for name, line, function in reversed(frames)])
        if where:
            return where
    return ""


def _cuda_error(cell: Cell) -> bool:
    return cell.status == "FAIL" and "CUDA" in cell.detail.upper()


def _context_lost() -> bool:
    """Whether this worker's CUDA context is left unusable: a sticky error (an
    illegal address, a launch failure) that the driver then returns from every
    call, cuCtxSynchronize included. A Python exception that merely names CUDA
    leaves a usable context, and a worker with no driver or no context has
    none to lose. Asked through the driver library itself, so that it works
    whichever framework (histkit, CuPy, PyTorch) made the context."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    context = ctypes.c_void_p()
    if driver.cuCtxGetCurrent(ctypes.byref(context)) != 0 or not context.value:
        return False
    return driver.cuCtxSynchronize() != 0


def sendable(impl) -> object:
    """impl as the worker receives it: itself (pickled by name), or cloudpickle's
    bytes for a callable that has no importable name. Raises TypeError when
    neither can carry it."""
    if getattr(impl, "name", True):  # a .cu kernel, or a callable importable by name
        return impl
    try:
        import cloudpickle
    except ImportError:
        raise TypeError("the callable has no importable name and cloudpickle is not "
                        "installed") from None
    try:
        return cloudpickle.dumps(impl)
    except Exception as error:
        raise TypeError(f"the callable cannot be sent to a worker: {error}") from None


def like_any(case: Case, stopped: list[Case]) -> str | None:
    """How case is like the cases a kernel hung or crashed on, in words (None:
    it is not): as large as one of them in the same dtype, the cases such a
    kernel is likely to stop on again. While every one of them had the same
    number of bins, only cases of that number are alike: a kernel that fails
    past its shared memory at one K may still run at the others."""
    alike = [other for other in stopped if case.dtype == other.dtype and case.n >= other.n]
    if not alike:
        return None
    bins = {getattr(other, "num_bins", None) for other in stopped}
    if len(bins) > 1:
        return "its dtype"
    if getattr(case, "num_bins", None) in bins:
        return "its dtype and number of bins"
    return None


HANG_HEAD = "hang: "  # how the detail of a case that did not end begins


def is_hang(detail: str) -> bool:
    """Whether a FAIL cell's detail says the case did not end in time."""
    return detail.startswith(HANG_HEAD)


def case_timeout(timeout: float, case: Case) -> float:
    """The time a case may take before it counts as a hang: `timeout`, and a
    second more for every 2^23 keys (a callable of NumPy calls on the full
    matrix's 2^28 keys, or a case past 2^31 keys read back and judged a
    slice at a time, may take a minute of honest work on a small machine)."""
    return timeout + case.n / 2**23


def _size(file) -> int:
    """How many bytes a worker's output file holds (0: no file)."""
    return os.fstat(file.fileno()).st_size if file is not None else 0


def _written_since(file, start: int) -> tuple[int, str]:
    """(lines, tail) of what was written to file past byte ``start``: its
    lines counted a MiB at a time (at least 1 where anything was written),
    and its last PRINTED_CHARS characters (the same file: (0, ""))."""
    end = _size(file)
    if end <= start:
        return 0, ""
    fd = file.fileno()
    lines = sum(os.pread(fd, min(1 << 20, end - at), at).count(b"\n")
                for at in range(start, end, 1 << 20))
    tail_from = max(start, end - PRINTED_CHARS)
    return lines or 1, os.pread(fd, end - tail_from, tail_from).decode(errors="replace")


def _exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


class IsolatedJudge:
    def __init__(self, timeout: float):
        self.timeout = timeout
        self.hung: list[str] = []  # the names of the cases that hung
        self._hung_cases: list[Case] = []  # ... the cases themselves
        self.faulted: list[str] = []  # ... and of those that cost the worker (a fault)
        self._process = None
        self._conn = None
        self._stderr = None
        # The workers' stdout, one file for every worker this judge starts (opened
        # for appending, and read with pread, so no reader moves a writer).
        self._stdout = None
        self.printed_lines = 0  # lines the implementation printed, every case
        self.last_printed = ""  # what it printed on the last case judged (its tail)
        # id(impl) -> (its slot in the current worker, impl: held, so that its
        # id is not taken by another while the worker knows it)
        self._loaded: dict[int, tuple[int, object]] = {}

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        # what the worker writes to stderr (an abort's message) is named in its cell
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        with ours, theirs:
            fd = theirs.fileno()
            if self._stdout is None:
                self._stdout = tempfile.TemporaryFile()  # noqa: SIM115
                flags = fcntl.fcntl(self._stdout.fileno(), fcntl.F_GETFL)
                fcntl.fcntl(self._stdout.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
            process = subprocess.Popen([sys.executable, "-c", _WORKER, str(fd)],
                                       pass_fds=(fd,), stdin=subprocess.DEVNULL,
                                       stdout=self._stdout, stderr=self._stderr,
                                       cwd=os.getcwd(), env=_worker_env())
            self._process, self._conn = process, Connection(ours.detach())
        self._loaded = {}

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        if self._conn is not None:
            self._conn.close()
        if self._stderr is not None:
            self._stderr.close()
        self._process = self._conn = self._stderr = None

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def _last_words(self) -> str:
        """What a dead worker said last: the user's line it died at, from
        faulthandler's stack after a fatal signal (or "" where none is the
        user's), else "; its last words: <the last line it wrote>"."""
        text = self._stderr_text()
        if _FATAL.search(text):
            where = where_it_stopped(text[text.rindex("Fatal Python error:"):])
            return f" {where}" if where else ""
        lines = [line for line in text.splitlines() if line.strip()]
        return f"; its last words: {lines[-1].strip()[-STDERR_TAIL_CHARS:]}" if lines else ""

    def _hung_at(self) -> str:
        """The user's line a hung worker is at, from the stack it writes on
        STACK_SIGNAL ("" where it writes none in STACK_WAIT_S)."""
        if self._process is None or self._stderr is None:
            return ""
        written = len(self._stderr_text())
        try:
            self._process.send_signal(STACK_SIGNAL)
        except OSError:
            return ""
        deadline, seen = time.monotonic() + STACK_WAIT_S, ""
        while time.monotonic() < deadline:
            time.sleep(0.05)
            text = self._stderr_text()[written:]
            if text and text == seen:  # written, and no more coming
                break
            seen = text
        return where_it_stopped(seen)

    def _note_printed(self, start: int) -> None:
        """What the worker printed to stdout since ``start`` (a size of the file)."""
        lines, self.last_printed = _written_since(self._stdout, start)
        self.printed_lines += lines

    def judge(self, impl, case: Case) -> tuple[Cell, str]:
        if self._process is None:  # started first, so its stderr is read on this case too
            self._start()
        start, stderr = _size(self._stdout), self._stderr
        stderr_start = _size(stderr)
        try:
            return self._judge(impl, case)
        finally:
            self._note_printed(start)
            if stderr is not None and stderr is self._stderr:  # the same worker: it ended well
                self._note_stderr(stderr_start)

    def _note_stderr(self, start: int) -> None:
        """What the worker wrote to stderr on a case it returned from (a
        crash's or a hang's is named in its cell instead): counted with the
        printed lines, and its tail shown after theirs, each line marked."""
        lines, tail = _written_since(self._stderr, start)
        self.printed_lines += lines
        self.last_printed += "".join(f"stderr: {line}\n" for line in tail.splitlines())

    def _judge(self, impl, case: Case) -> tuple[Cell, str]:
        if self._process is None:
            self._start()
        slot, _ = self._loaded.get(id(impl), (None, None))
        payload = None
        if slot is None:
            slot = len(self._loaded)
            self._loaded[id(impl)] = slot, impl
            payload = sendable(impl)
        try:
            self._conn.send((slot, payload, case))
        except OSError:  # the worker is already gone (it failed to start, say)
            return self._died(case)
        timeout = case_timeout(self.timeout, case)
        if any(case.n >= hung.n for hung in self._hung_cases):
            timeout = min(timeout, case_timeout(AFTER_HANG_TIMEOUT_S, case))
        if not self._conn.poll(timeout):
            at = self._hung_at()
            self._stop()
            self.hung.append(case.name)
            self._hung_cases.append(case)
            at = f" {at}" if at else ""
            return Cell("FAIL", f"{HANG_HEAD}no result within {timeout:.0f} s "
                                f"(the worker was killed{at}) [case {case.name}]"), ""
        try:
            cell, geometry, lost = self._conn.recv()
        except (EOFError, ConnectionResetError):
            return self._died(case)
        # A .cu kernel's CUDA error is taken for a fault whatever the driver
        # says (histkit's runner may have made its context current elsewhere);
        # a callable's only where the driver says its context is lost.
        if lost or (_cuda_error(cell) and hasattr(impl, "as_kernel")):
            self._stop()  # its context is unusable: the next case gets a new worker
            self.faulted.append(case.name)
        return cell, geometry

    def _died(self, case: Case) -> tuple[Cell, str]:
        code = self._process.wait() if self._process else None
        said = self._last_words()
        self._stop()
        self.faulted.append(case.name)
        ended = _exit_description(code)
        if code is not None and code > 0 and not said:  # no signal, no words: it exited
            ended += ": os._exit() or a C library's exit() ends a process so"
        return Cell("FAIL", f"crash: the worker process died ({ended})"
                            f"{said} [case {case.name}]"), ""

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(None)
        self._stop()
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None

