"""Every kernel compiles with NVRTC, for sm_80 and sm_90, with no GPU needed.

``nox -s tests`` compiles every build (int keys) and every key type (the
default build) of every source for sm_90, each source for sm_80, and each
source's default build with schedule skew; the whole product of builds, key
types and both archs, and every build with schedule skew (minutes), are
marked ``large`` (``nox -s tests_large``).

Skips (with the reason) where cuda-python or NVRTC is not installed.
"""

import pytest
from conftest import NVRTC_MARKS

from histkit.gpu import compiler, contract, registry
from histkit.gpu.contract import KEY_C_TYPES

pytestmark = NVRTC_MARKS

SOURCES = registry.builds_by_source()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HISTKIT_CACHE_DIR", str(tmp_path))


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory):
    """One compile cache for the sweeps below: a build two of them compile
    (the plain int builds: every build, and the skew test's) compiles once."""
    return str(tmp_path_factory.mktemp("cache"))


def _compiles(source: str, defines: dict, arch: str) -> bytes:
    cubin = compiler.compile_cubin(source, contract.defines_for(source, defines), arch)
    assert cubin[:4] == b"\x7fELF", f"{source} {defines} {arch}: not a cubin"
    return cubin


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_build_and_every_key_type_compiles(source, module_cache_dir, monkeypatch):
    # every build with int keys, every key type with the default build (sm_90),
    # and the default build for sm_80: each build and each key type compiles;
    # their whole product is the large sweep below
    monkeypatch.setenv("HISTKIT_CACHE_DIR", module_cache_dir)
    default, *others = SOURCES[source]
    for defines in (default, *others):
        _compiles(source, {"KEY_T": "int", **defines}, "sm_90")
    for c_type in KEY_C_TYPES.values():
        _compiles(source, {"KEY_T": c_type, **default}, "sm_90")
    _compiles(source, {"KEY_T": "int", **default}, "sm_80")


@pytest.mark.large
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_kernel_compiles_for_every_key_type(source, arch):
    for defines in SOURCES[source]:
        for c_type in KEY_C_TYPES.values():
            cubin = compiler.compile_cubin(
                source, contract.defines_for(source, {"KEY_T": c_type, **defines}), arch)
            assert cubin[:4] == b"\x7fELF", f"{source} {defines} {c_type}: not a cubin"


def _skewed_builds_compile_and_sleep_between_barriers(source: str, builds: list) -> None:
    # the conformance suite's skewed cases build every kernel with HK_SKEW_NS
    # and HK_STRAGGLE_NS
    skew = contract.schedule_defines()
    for defines in builds:
        plain = contract.defines_for(source, {"KEY_T": "int", **defines})
        skewed = compiler.compile_cubin(source, {**plain, **skew}, "sm_90")
        assert skewed[:4] == b"\x7fELF"
        # kernels with block barriers change (entry and post-barrier sleeps)
        if "__syncthreads" in (compiler.kernel_dir() / source).read_text():
            assert skewed != compiler.compile_cubin(source, plain, "sm_90"), source


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_default_build_compiles_with_schedule_skew_and_then_sleeps_between_barriers(
        source, module_cache_dir, monkeypatch):
    monkeypatch.setenv("HISTKIT_CACHE_DIR", module_cache_dir)
    _skewed_builds_compile_and_sleep_between_barriers(source, SOURCES[source][:1])


@pytest.mark.large
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_build_compiles_with_schedule_skew_and_then_sleeps_between_barriers(source):
    _skewed_builds_compile_and_sleep_between_barriers(source, SOURCES[source])


def test_each_kernel_file_compiles_on_its_own_with_default_constants():
    for source in SOURCES:
        assert compiler.compile_cubin(source, {}, "sm_90")[:4] == b"\x7fELF"


def test_compile_cache_returns_the_entry_without_recompiling(tmp_path, monkeypatch):
    first = compiler.compile_cubin("atomic_histogram.cu", {"KEY_T": "int"}, "sm_90")
    (entry,) = tmp_path.glob("atomic_histogram-*.cubin")

    def refuse(*args, **kwargs):
        raise AssertionError("recompiled although the cache held the entry")

    monkeypatch.setattr(compiler, "_options", refuse)
    assert compiler.compile_cubin("atomic_histogram.cu", {"KEY_T": "int"}, "sm_90") == first
    assert entry.stat().st_size > len(first)


def test_a_corrupt_cache_entry_is_rebuilt_not_trusted(tmp_path):
    first = compiler.compile_cubin("atomic_histogram.cu", {"KEY_T": "int"}, "sm_90")
    (entry,) = tmp_path.glob("atomic_histogram-*.cubin")
    blob = bytearray(entry.read_bytes())
    blob[-10] ^= 0xFF
    entry.write_bytes(bytes(blob))
    assert compiler.compile_cubin("atomic_histogram.cu", {"KEY_T": "int"}, "sm_90") == first


def test_the_cache_key_changes_with_defines_arch_and_headers(tmp_path, monkeypatch):
    base = compiler.cache_key("atomic_histogram.cu", {"KEY_T": "int"}, "sm_90")
    assert base != compiler.cache_key("atomic_histogram.cu", {"KEY_T": "short"}, "sm_90")
    assert base != compiler.cache_key("atomic_histogram.cu", {"KEY_T": "int"}, "sm_80")
    copy = tmp_path / "src"
    copy.mkdir()
    for f in compiler.kernel_dir().iterdir():
        (copy / f.name).write_text(f.read_text())
    (copy / "common.cuh").write_text((copy / "common.cuh").read_text() + "\n// changed\n")
    monkeypatch.setenv("HISTKIT_CUDA_DIR", str(copy))
    compiler.kernel_dir.cache_clear()
    try:
        assert base != compiler.cache_key("atomic_histogram.cu", {"KEY_T": "int"}, "sm_90")
    finally:
        compiler.kernel_dir.cache_clear()


def test_a_compile_error_carries_the_log_options_and_numbered_source(tmp_path, monkeypatch):
    copy = tmp_path / "src"
    copy.mkdir()
    (copy / "common.cuh").write_text("#pragma once\n")
    (copy / "broken.cu").write_text('#include "common.cuh"\nextern "C" __global__ void k() '
                                    "{ undefined_name = 1; }\n")
    monkeypatch.setenv("HISTKIT_CUDA_DIR", str(copy))
    compiler.kernel_dir.cache_clear()
    from histkit.gpu.errors import KernelCompileError

    try:
        with pytest.raises(KernelCompileError) as caught:
            compiler.compile_cubin("broken.cu", {"KEY_T": "int"}, "sm_90")
    finally:
        compiler.kernel_dir.cache_clear()
    message = str(caught.value)
    assert "undefined_name" in message and "is undefined" in message
    assert "-DKEY_T=int" in message and "--gpu-architecture=sm_90" in message
    assert '   2  extern "C" __global__' in message
