"""A runtime's kernels and launches: modules built once per source, entry and
defines, the kernels' shared-memory opt-in and occupancy asked once, launch
configurations and plans kept per shape, launches through the C path or
cuda.core.
"""

from __future__ import annotations

import contextlib

from histkit.gpu import contract
from histkit.gpu.compiler import compile_cubin, files_of
from histkit.gpu.device import bindings
from histkit.gpu.device.bindings import check, error_name
from histkit.gpu.errors import CudaError
from histkit.gpu.geometry import Geometry
from histkit.gpu.verdict import COMMON_HEADER


class Launching:
    """Runtime's kernel and launch methods (the state is set in Runtime.__init__)."""

    def kernel(self, source: str, name: str, defines: dict[str, str]):
        """The entry `name` of cuda/`source`, built with the contract's defines + `defines`."""
        defines = {**defines, **self.skew.defines(source)}
        key = (source, name, tuple(sorted(defines.items())))
        if key not in self._kernels:
            defines = contract.defines_for(source, defines)
            from cuda.core import ObjectCode

            cubin = compile_cubin(source, defines, self.arch)
            module = ObjectCode.from_cubin(cubin)
            kernel = module.get_kernel(name)
            self.verdicts.install(module, reads_board=COMMON_HEADER in files_of(source))
            self._kernels[key] = kernel
        return self._kernels[key]

    def allow_shared(self, kernel, nbytes: int) -> None:
        """Let kernel use nbytes of dynamic shared memory: beyond the default
        48 KiB of static and dynamic shared memory together, the kernel must
        opt in, and its static part is its own, so any dynamic use opts in
        (set once per kernel and size: later calls cost a dict lookup)."""
        if nbytes == 0:
            return
        handle = int(kernel.handle)
        if nbytes <= self._shared_allowed.get(handle, 0):
            return
        driver = bindings.driver
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(driver.cuKernelSetAttribute(attribute, nbytes, kernel.handle,
                                          self.device.device_id),
              "cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
        self._shared_allowed[handle] = nbytes

    def launch(self, kernel, geometry: Geometry, *args) -> None:
        ready = self._ready_for(kernel, geometry)
        calls = self.per_call.calls
        if calls is not None:
            try:
                status = calls.launch(ready[1], geometry.grid, geometry.block,
                                      geometry.shared_bytes, self.handle, geometry.cooperative,
                                      args)
            except TypeError:  # an argument the C path does not pack: cuda.core does
                pass
            else:
                if status:
                    raise CudaError(f"launching {geometry} failed: {error_name(status)}")
                return
        try:
            self._launch(self.stream, ready[0], kernel, *args)
        except Exception as error:
            raise CudaError(f"launching {geometry} failed: {error}") from error

    def _ready_for(self, kernel, geometry: Geometry):
        """(launch configuration, raw handle) of this kernel and geometry: one
        lookup per launch; the kernel's shared-memory opt-in, its handle and
        the configuration are settled the first time this pair launches."""
        ready = self._ready.get((kernel, geometry))
        return ready if ready is not None else self._ready_to_launch(kernel, geometry)

    def launch_handle(self, kernel, geometry: Geometry) -> int:
        """The raw handle the C path launches kernel through at this geometry,
        its shared memory allowed (the compiled lane keeps it in its plans)."""
        return self._ready_for(kernel, geometry)[1]

    def _ready_to_launch(self, kernel, geometry: Geometry):
        """(geometry's launch configuration, the kernel's raw handle), the
        kernel allowed its shared memory."""
        self.allow_shared(kernel, geometry.shared_bytes)
        if len(self._ready) > 4096:  # many distinct shapes: keep the cache bounded
            self._ready.clear()
        ready = self._ready[kernel, geometry] = (self._config(geometry), int(kernel.handle))
        return ready

    @contextlib.contextmanager
    def through_python(self):
        """Within: launches, memsets and read-backs through cuda.core and
        cuda.bindings, not the C path (A/B measurements; the same driver
        functions either way)."""
        saved = self.per_call.calls
        self.per_call.calls = None
        try:
            yield
        finally:
            self.per_call.calls = saved

    @staticmethod
    def _config(geometry: Geometry):
        """geometry's LaunchConfig (made once per kernel and geometry: Runtime.launch
        keeps it in _ready)."""
        from cuda.core import LaunchConfig

        options = {"is_cooperative": True} if geometry.cooperative else {}
        return LaunchConfig(grid=geometry.grid, block=geometry.block,
                            shmem_size=geometry.shared_bytes, **options)

    def plan(self, shape: tuple, make):
        """make()'s result for this launch shape, made once (launch wrappers keep
        their kernel, geometry and names here: a repeated call looks them up)."""
        if self.skew.depth:  # the skewed builds' plans hold other kernels
            shape = ("skewed", *shape)
        found = self._plans.get(shape)
        if found is None:
            if len(self._plans) > 4096:  # many distinct shapes: keep the cache bounded
                self._plans.clear()
            found = self._plans[shape] = make()
        return found

    def max_dynamic_shared(self, kernel) -> int:
        """The dynamic shared memory a block of this kernel may have: the
        device's opt-in limit less what the kernel declares statically (the
        skewed builds' barrier counts, say); asked once per kernel."""
        handle = int(kernel.handle)
        if handle not in self._static_shared:
            driver = bindings.driver
            attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
            self._static_shared[handle] = int(check(
                driver.cuKernelGetAttribute(attribute, kernel.handle, self.device.device_id),
                "cuKernelGetAttribute(SHARED_SIZE_BYTES)"))
        return self.max_shared_per_block - self._static_shared[handle]

    def resident_blocks(self, kernel, block: int, shared_bytes: int) -> int:
        """Blocks of this kernel that fit on one SM at once (at least 1); asked once."""
        key = (int(kernel.handle), block, shared_bytes)
        if key not in self._resident:
            self.allow_shared(kernel, shared_bytes)
            per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(block, shared_bytes)
            self._resident[key] = max(1, per_sm)
        return self._resident[key]
