import os
import re

import numpy as np
import pytest

KEY_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
EDGE_SIZES = [0, 1, 31, 32, 33, 255, 256, 257]
DISTRIBUTIONS = ["uniform", "onebin", "zipf", "sorted", "round-robin"]
# Tests of the oracles' chunked paths: one CPU gives OpenMP one thread, one chunk.
needs_two_cpus = pytest.mark.skipif((os.cpu_count() or 1) < 2,
                                    reason="needs 2 CPUs for 2 chunks")


@pytest.fixture(params=KEY_DTYPES, ids=lambda d: np.dtype(d).name)
def key_dtype(request):
    return request.param


@pytest.fixture
def idle_machine(monkeypatch):
    """The oracles see 8 idle CPUs whatever the machine's load, so inputs of a
    few hundred thousand keys are split into several chunks (on at most the
    CPUs OpenMP has): the chunked paths are tested on a busy CI machine too."""
    from histkit.oracles import _threads

    monkeypatch.setattr(_threads, "_cpus", lambda: 8)
    monkeypatch.setattr(_threads, "_others_running", lambda: 0)


def _nvrtc_unavailable() -> str | None:
    from histkit.gpu import compiler

    try:
        compiler.nvrtc_version()
    except Exception as error:  # GpuUnavailableError, or a missing libnvrtc
        return str(error)
    return None


NO_NVRTC = _nvrtc_unavailable()
# Compile-only tests: they need NVRTC (pip's nvidia-cuda-nvrtc), not a GPU.
NVRTC_MARKS = [pytest.mark.nvrtc,
               pytest.mark.skipif(NO_NVRTC is not None, reason=f"NVRTC unavailable: {NO_NVRTC}")]
# `nox -s tests` installs NVRTC (the gpu extra) and sets HISTKIT_REQUIRE_NVRTC=1:
# there an NVRTC that cannot be found or asked is a failure of the run, not a
# quiet skip of every compile test (a slip in the lookup would otherwise pass CI).
REQUIRE_NVRTC = os.environ.get("HISTKIT_REQUIRE_NVRTC") == "1"


def pytest_configure(config):
    if REQUIRE_NVRTC and NO_NVRTC is not None:
        raise pytest.UsageError(f"HISTKIT_REQUIRE_NVRTC=1 but NVRTC is unavailable: {NO_NVRTC}")


def pytest_make_parametrize_id(config, val, argname):
    """A parameter given as a string or a function is named in a form `-k`
    takes whole (pytest_plugin.k_safe_id: "N=33" is "N33", "a/b" is "a-b")."""
    from histkit.conformance.pytest_plugin import k_safe_id

    name = getattr(val, "__name__", None) if callable(val) else val
    return (k_safe_id(name) or None) if isinstance(name, str) else None


# What a test id may hold (a parametrized test's part in brackets): what
# `pytest -k` takes as one word, so that any test can be picked by its id.
K_SAFE_ID = re.compile(r"[\w.+-]*")


def pytest_collection_modifyitems(config, items):
    unsafe = [item.nodeid for item in items
              if hasattr(item, "callspec") and not K_SAFE_ID.fullmatch(item.callspec.id)]
    if unsafe:
        raise pytest.UsageError(f"{len(unsafe)} test ids that `-k` cannot take whole (give "
                                f"them ids through pytest_plugin.k_safe_id), such as: "
                                + "; ".join(unsafe[:5]))


def needs_nvrtc(test):
    for mark in NVRTC_MARKS:
        test = mark(test)
    return test
