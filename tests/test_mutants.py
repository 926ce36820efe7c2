"""Every planted bug of mutants/mutants.toml applies to cuda/, compiles with
NVRTC and changes the machine code (a mutant that does not compile, or that
the compiler removes, tests nothing). No GPU needed. The NVRTC sweeps over
every mutant (minutes) are marked ``large`` (``nox -s tests_large``)."""

from pathlib import Path

import pytest
from conftest import needs_nvrtc

from histkit.conformance import mutation, sift
from histkit.gpu import compiler, contract, registry

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = mutation.load(ROOT / "mutants" / "mutants.toml")


def test_there_are_at_least_thirty_mutants_with_unique_ids_reaching_every_kernel_file():
    assert len(MUTANTS) >= 30
    assert len({m.id for m in MUTANTS}) == len(MUTANTS)
    kernel_files = {k.source for k in registry.KERNELS} - {"naive_histogram.cu"}
    assert kernel_files <= {m.file for m in MUTANTS}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_each_mutant_applies_once_and_changes_its_file(mutant, tmp_path):
    copy = mutation.apply(mutant, ROOT / "cuda", tmp_path)
    assert (copy / mutant.file).read_text() != (ROOT / "cuda" / mutant.file).read_text()
    assert mutation.rows_for(mutant), f"{mutant.file} reaches no conformance row"


def test_a_find_text_that_is_not_unique_is_refused(tmp_path):
    bad = mutation.Mutant("dup", "common.cuh", "#", "", "", "")
    with pytest.raises(ValueError, match="occurs"):
        mutation.apply(bad, ROOT / "cuda", tmp_path)


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    """One compile cache for the module: the unmutated builds compile once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HISTKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.mark.large
@needs_nvrtc
@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_each_mutated_file_compiles_with_nvrtc(mutant, tmp_path, monkeypatch, module_cache):
    copy = mutation.apply(mutant, ROOT / "cuda", tmp_path / "cuda")
    monkeypatch.setenv("HISTKIT_CUDA_DIR", str(copy))
    compiler.kernel_dir.cache_clear()
    sources = ([mutant.file] if mutant.file.endswith(".cu")
               else sorted({k.source for k in registry.KERNELS}))
    try:
        for source in sources:
            for build in _fullest_builds(source):
                defines = contract.defines_for(source, {"KEY_T": "int", **build})
                assert compiler.compile_cubin(source, defines, "sm_90")[:4] == b"\x7fELF"
    finally:
        compiler.kernel_dir.cache_clear()


def _fullest_builds(source: str) -> list[dict]:
    """The fullest build of each row compiling source (the last one a row
    lists: the counting build, HOLD_RUNS, ...), so code under any row's #ifdef
    is compiled (RADIX_KEYS for the radix sort's passes)."""
    rows = [k for k in registry.KERNELS if k.source == source] or [
        k for k in registry.KERNELS if source in k.sources]
    builds: list[dict] = []
    for row in rows:
        if row.builds[-1] not in builds:
            builds.append(row.builds[-1])
    return builds


@pytest.mark.large
@needs_nvrtc
@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_each_mutant_changes_the_machine_code(mutant, module_cache):
    assert not sift.same_machine_code(mutant, ROOT / "cuda"), (
        f"{mutant.id}: every build compiles to the unmutated cubin: it plants nothing")


def test_the_harness_mutants_name_files_with_mutants_and_tests_that_exist():
    # mutants/harness_mutants.py judges the suite's own machinery by CPU tests:
    # a renamed file or test would leave it judging nothing
    import importlib.util

    from histkit.conformance import mutagen

    spec = importlib.util.spec_from_file_location("harness_mutants",
                                                  ROOT / "mutants" / "harness_mutants.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    for file, tests in {**harness.HARNESS_FILES, **harness.LAUNCH_FILES}.items():
        text = (mutation.package_dir() / file).read_text()
        assert mutagen.python_mutants_of(file, text), file  # code it can mutate
        assert tests, file
        for test in tests:  # a file, or one test of it (file::name)
            path, _, name = test.partition("::")
            assert (ROOT / path).is_file(), test
            assert not name or f"def {name}(" in (ROOT / path).read_text(), test
    for test in harness.DESELECTED:  # left out of the judges: it must exist to be
        path, _, name = test.partition("::")
        assert f"def {name}(" in (ROOT / path).read_text(), test
