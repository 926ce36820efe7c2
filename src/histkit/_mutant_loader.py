"""The mutation harness's judge, with one histkit module replaced by a mutant.

``HISTKIT_HOST_MUTANT="histkit.gpu.launch.sort=/tmp/.../sort.py"`` names the
module and the mutated copy of its source. This module is the judge's entry
point (``python -m histkit._mutant_loader judge quick <rows>``: the launch
layer's CPU tests, then the conformance rows, with the mutant; ``pytest
<tests>`` for a module no row runs): it sits
outside histkit.gpu and histkit.conformance so that nothing has imported the
module yet when the replacement is put first on the import path; every later
import of that name, from any module, gets the mutant.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path

ENV = "HISTKIT_HOST_MUTANT"


class MutatedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds one module name and loads it from a mutated copy of its source."""

    def __init__(self, name: str, path: str):
        self.name, self.path = name, path

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=self.path)

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module) -> None:
        module.__file__ = self.path
        exec(compile(Path(self.path).read_text(), self.path, "exec"), module.__dict__)


def install(spec: str) -> str:
    """Put the mutant named by spec ("module=path") first on the import path;
    returns the module's name."""
    name, _, path = spec.partition("=")
    if not name.startswith("histkit.") or not path:
        raise ValueError(f"{ENV} must be 'histkit.<module>=<path>'; got {spec!r}")
    if name in sys.modules:
        raise RuntimeError(f"{name} was imported before its mutant could replace it")
    sys.meta_path.insert(0, MutatedModule(name, path))
    return name


def import_mutant(spec: str):
    """install(spec), then import the mutant at once. histkit is a pytest
    plugin, so a pytest run marks every histkit module for assertion
    rewriting, and pytest's import hook, which comes first, loads an
    installed (non-editable) module from its own file: a module a test
    imported first would be the unmutated one, and its mutant would survive
    unjudged. Imported before any test runs, every importer gets the mutant."""
    return importlib.import_module(install(spec))


def main(argv: list[str]) -> int:
    mutant = import_mutant(os.environ[ENV])
    from histkit.conformance import mutation

    if mutation.host_tests_fail():  # the launch layer's CPU tests, first: seconds
        return mutation.EXIT_CAUGHT
    # a module no row runs is judged by the tests that call it
    status = _tests_judge(argv[1:]) if argv[:1] == ["pytest"] else mutation.main(argv)
    if sys.modules.get(mutant.__name__) is not mutant:  # the judge ran another copy
        print(f"{mutant.__name__} was imported again, unmutated", file=sys.stderr)
        return mutation.EXIT_BROKEN
    return status


def _tests_judge(tests: list[str]) -> int:
    """Run the tests (stopping at the first failure) on a GPU host: without a
    GPU the GPU tests would skip and every mutant would seem to survive."""
    import pytest

    from histkit.conformance import mutation
    from histkit.gpu.device import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        print(f"judging by the GPU tests needs a GPU: {reason}", file=sys.stderr)
        return mutation.EXIT_BROKEN
    failed = pytest.main(["-x", "-q", "-p", "no:cacheprovider", *tests]) != 0
    return mutation.EXIT_CAUGHT if failed else mutation.EXIT_SURVIVED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
