"""Foreign kernels run in a worker process: a fault or a hang costs one cell.

One worker takes the cases one after another (CUDA start-up is paid once);
it is a fresh interpreter running this module (``python -m
histkit.conformance.isolation <fd>``, talking over a socket pair), not a
multiprocessing child: a spawned child would first re-run the caller's main
script, so a script that calls ``check("my.cu", ...)`` at its top level
without an ``if __name__ == "__main__":`` guard would have every case FAIL
as a dead worker.
when a case hangs past the timeout the worker is killed, when it dies the
death is recorded, and after a CUDA error the worker is replaced, since a
CUDA fault leaves its context unusable. The next case gets a fresh worker.

A kernel that hung once is likely to hang again (a loop that never ends past
some size): after the first hang, cases get at most AFTER_HANG_TIMEOUT_S, so
that a hanging kernel costs a minute or so, not the timeout on every case
(check() stops running it after MAX_HANGS hangs). A fault costs a new worker
(about a second on the H200), so check() stops after MAX_FAULTS of them too.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection

from histkit.conformance.cases import Case
from histkit.conformance.checks import Cell

AFTER_HANG_TIMEOUT_S = 10.0


def _worker(conn) -> None:
    from histkit.conformance.runner import run_case
    from histkit.gpu.device import runtime
    from histkit.gpu.registry import DEFAULT

    rows: dict = {}
    while True:
        message = conn.recv()
        if message is None:
            return
        impl, case = message
        if impl not in rows:
            rows[impl] = impl.as_kernel()
        kernel = rows[impl]
        try:
            (result,) = run_case(runtime(), case, [(kernel.row, kernel, DEFAULT)])
            conn.send((result.cell, result.geometry))
        except Exception as error:  # anything run_case did not turn into a cell
            conn.send((Cell("FAIL", f"{type(error).__name__}: {error}"), ""))


class IsolatedJudge:
    def __init__(self, timeout: float):
        self.timeout = timeout
        self.hung: list[str] = []  # the names of the cases that hung
        self.faulted: list[str] = []  # ... and of those that cost the worker (a fault)
        self._process = None
        self._conn = None

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            fd = theirs.fileno()
            # the caller's import path, as a spawned child would have it
            path = os.pathsep.join([p for p in sys.path if p]
                                   + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
            process = subprocess.Popen([sys.executable, "-m", __name__, str(fd)],
                                       pass_fds=(fd,), stdin=subprocess.DEVNULL,
                                       env={**os.environ, "PYTHONPATH": path})
            self._process, self._conn = process, Connection(ours.detach())

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None

    def judge(self, impl, case: Case) -> tuple[Cell, str]:
        if self._process is None:
            self._start()
        try:
            self._conn.send((impl, case))
        except OSError:  # the worker is already gone (it failed to start, say)
            return self._died(case)
        timeout = min(self.timeout, AFTER_HANG_TIMEOUT_S) if self.hung else self.timeout
        if not self._conn.poll(timeout):
            self._stop()
            self.hung.append(case.name)
            return Cell("FAIL", f"hang: no result within {timeout:.0f} s "
                                f"(the worker was killed) [case {case.name}]"), ""
        try:
            cell, geometry = self._conn.recv()
        except (EOFError, ConnectionResetError):
            return self._died(case)
        if cell.status == "FAIL" and "CUDA" in cell.detail.upper():
            self._stop()  # a CUDA fault leaves the worker's context unusable
            self.faulted.append(case.name)
        return cell, geometry

    def _died(self, case: Case) -> tuple[Cell, str]:
        code = self._process.wait() if self._process else None
        self._stop()
        self.faulted.append(case.name)
        return Cell("FAIL", f"the kernel's worker process died (exit code {code}) "
                            f"[case {case.name}]"), ""

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(None)
        self._stop()


if __name__ == "__main__":  # a worker: the socket it was handed is its only channel
    _worker(Connection(int(sys.argv[1])))
