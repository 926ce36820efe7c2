"""A runtime's waits on the device: stream syncs, bounded (a wait past its
limit is a DeviceHang naming it, for the conformance matrix) or not, and the
sticky error a fault leaves on the context.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time

from histkit.gpu.device import bindings
from histkit.gpu.device.bindings import check, error_name
from histkit.gpu.errors import CudaError, DeviceHang


def _exit_without_teardown() -> None:
    """At exit after a hang (registered then): the driver's teardown of the
    context would wait for the kernel that never ends, so the process leaves
    without it, with status 1 (the run it ends has failed)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(1)


class Waiting:
    """Runtime's waits (the state, WaitBound, is set in Runtime.__init__)."""

    def sync(self, what: str) -> None:
        if not self.waits.active:
            calls = self.per_call.calls
            if calls is not None:
                check(calls.sync(self.handle), f"{what}: cuStreamSynchronize")
                return
            try:
                self.stream.sync()
            except Exception as error:
                raise CudaError(f"{what}: {error}") from error
            return
        self._bounded_sync(what)

    @contextlib.contextmanager
    def bounded_waits(self, limit_s: float | None):
        """Within: a host wait on the device (a sync, or a copy to or from
        pageable host memory, which waits for the stream inside the driver)
        that outlasts limit_s raises DeviceHang, so that a kernel that never
        ends is a failure with a name, not a process that never ends (the
        conformance matrix; public calls wait unbounded, as CUDA does)."""
        saved = self.waits.limit_s
        self.waits.limit_s = limit_s
        try:
            yield
        finally:
            self.waits.limit_s = saved

    @property
    def hung(self) -> str | None:
        """The wait that outlasted its bound in this process, if one did."""
        return self.waits.hung

    def sticky_error(self) -> str | None:
        """The name of the error a fault left on this context (an illegal
        address, a trap: every later call on it returns that error), or None
        while it is usable. Asked of the stream, which returns at once."""
        (status,) = bindings.driver.cuStreamQuery(self.handle)
        if status in (bindings.SUCCESS, bindings.NOT_READY):
            return None
        return error_name(status)

    def _bounded_sync(self, what: str) -> None:
        # Polled, not a blocking cuStreamSynchronize: the limit is checked
        # between queries, on this thread, whatever the driver call does with
        # the GIL.
        if self.waits.hung is not None:
            raise DeviceHang(f"{what}: not waited for: the GPU is still running a launch "
                             f"that never finished ({self.waits.hung})")
        limit, start, pause = self.waits.limit_s, time.perf_counter(), 1e-5
        while True:
            (status,) = bindings.driver.cuStreamQuery(self.handle)
            if status == bindings.SUCCESS:
                return
            if status != bindings.NOT_READY:
                check((status,), f"{what}: cuStreamQuery")
            waited = time.perf_counter() - start
            if waited > limit:
                self.waits.hung = f"{what}: no answer in {waited:.0f} s"
                atexit.register(_exit_without_teardown)
                raise DeviceHang(f"{what}: the GPU did not finish within {limit:.0f} s: a "
                                 f"kernel that never ends (hangs); its launch holds the GPU "
                                 f"until this process exits")
            time.sleep(pause)
            pause = min(2 * pause, 0.01)

    def _wait_before_pageable_copy(self, what: str) -> None:
        """A copy to or from pageable host memory waits for the stream inside
        the driver, where no bound applies: in a bounded run, wait here first."""
        if self.waits.active:
            self._bounded_sync(f"waiting for the GPU before {what}")
