"""histkit's errors survive pickling with their fields, as they must to cross a
process: a Dask worker passes a chunk's error on to the task that reports it,
and an error that cannot be rebuilt on the other side leaves the computation
waiting for a result that never comes.

An exception pickles as its class and ``args``; a class whose ``__init__``
takes other arguments than its message must say how to rebuild it."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from histkit.gpu.errors import DeviceMemoryError, KernelCompileError
from histkit.oracles._bin_rule import NumpyFailsError
from histkit.oracles._inputs import BadKeyError

SRC = Path(__file__).resolve().parents[1] / "src" / "histkit"

INSTANCES = [
    (BadKeyError(12_345, -3, 50), ("index", "value", "num_bins")),
    (NumpyFailsError("numpy's rule has no bin for the sample at index 7", 7), ("index",)),
    (KernelCompileError("k.cu", "error: x", ["-arch=sm_90"], "int x\n"),
     ("source_name", "log", "options", "source")),
    (DeviceMemoryError(1 << 40, 1 << 30, "the keys"), ("nbytes", "free", "what")),
]


@pytest.mark.parametrize("error,fields", INSTANCES, ids=lambda v: type(v).__name__)
def test_an_error_comes_back_from_pickle_with_its_message_and_fields(error, fields):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    for field in fields:
        assert getattr(back, field) == getattr(error, field), field


def _exception_classes_with_own_init():
    """(file, class) for every class in src/histkit deriving from an Error or
    Exception class and defining __init__; and whether it defines __reduce__."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                     for b in node.bases]
            if not any(b.endswith(("Error", "Exception", "Violation")) for b in bases):
                continue
            methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            if "__init__" in methods:
                found.append((f"{path.relative_to(SRC)}:{node.name}", "__reduce__" in methods))
    return found


def test_every_error_class_with_its_own_init_says_how_to_rebuild_it():
    classes = _exception_classes_with_own_init()
    assert len(classes) >= len(INSTANCES)  # the scan sees the classes above
    assert [name for name, rebuilds in classes if not rebuilds] == []
