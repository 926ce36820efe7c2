"""Every planted bug of mutants/mutants.toml applies to cuda/, compiles with
NVRTC and changes the machine code (a mutant that does not compile, or that
the compiler removes, tests nothing). No GPU needed."""

import dataclasses
import sys
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


@needs_nvrtc
@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_each_mutant_changes_the_machine_code(mutant, module_cache):
    assert not sift.same_machine_code(mutant, ROOT / "cuda"), (
        f"{mutant.id}: every build compiles to the unmutated cubin: it plants nothing")


# --- timeouts of the full judge (cases past 2^31 keys) --------------------------------

SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)"]


def _full_mutant():
    return dataclasses.replace(MUTANTS[0], needs="full")


def test_a_full_judge_outrunning_the_unmutated_one_of_its_rows_is_a_caught_hang(monkeypatch):
    monkeypatch.setattr(mutation, "_judge_command", lambda mutant, cuda_dir=None: SLEEPER)
    monkeypatch.setattr(mutation, "HANG_MARGIN_S", 0.5)
    outcome = mutation.run_one(_full_mutant(), ROOT / "cuda", timeout=60, env={},
                               unmutated_seconds=0.2)
    assert outcome.verdict == "caught" and outcome.seconds < 10
    assert "unmutated judge of the same rows took 0 s" in outcome.how


def test_a_full_judge_outrunning_only_the_fixed_limit_stays_unjudged(monkeypatch):
    monkeypatch.setattr(mutation, "_judge_command", lambda mutant, cuda_dir=None: SLEEPER)
    # no unmutated time, or one so long that the fixed limit comes first
    for unmutated_seconds in (None, 100.0):
        outcome = mutation.run_one(_full_mutant(), ROOT / "cuda", timeout=1, env={},
                                   unmutated_seconds=unmutated_seconds)
        assert outcome.verdict == "unjudged", outcome.how


@pytest.mark.parametrize("exit_code,timed", [(0, True), (1, False)])
def test_only_an_unmutated_judge_that_passes_gives_a_time(monkeypatch, exit_code, timed):
    command = [sys.executable, "-c", f"raise SystemExit({exit_code})"]
    monkeypatch.setattr(mutation, "_rows_judge_command", lambda needs, rows: command)
    seconds = mutation.unmutated_judge_seconds(["sort-stable"], ROOT / "cuda", 60, env={})
    assert (seconds is not None) == timed
