"""Mutants the compiler shows to be equivalent: the same machine code.

A mutant whose every build compiles to the very cubin the unmutated source
compiles to cannot be seen by any test, on any GPU: NVRTC removed the change
(a load whose value is never used, a bound the unrolled loop already folds
away, ...). Judging such a mutant on a GPU costs minutes and says nothing, and
listing it as a survivor hides the real gaps among the survivors. Mutation
testing calls this "trivial compiler equivalence".

``same_machine_code`` compiles, with NVRTC and no GPU, every source that
includes the mutated file, in every build the registry lists, for every key
type and with the conformance suite's schedule skew on and off; the first
difference ends the search (most mutants differ in the first build). Builds
are the registry's representative ones (``registry.Kernel.builds``), so
"same" is exact for those and a strong hint, not a proof, for define values
no listed build uses.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

ARCH = "sm_90"  # the H200's; the conformance suite's machine code


def compiles_of(file: str, cuda_dir: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(source, defines) of every compile that includes `file`, plain builds
    first and key types from the most telling (int, then the widest, the
    narrowest, unsigned): where a change most often shows, the search ends."""
    from histkit.gpu import compiler, contract, registry

    skew = contract.schedule_defines()
    telling = ("int", "unsigned long long", "signed char", "unsigned int")
    key_types = sorted(contract.KEY_C_TYPES.values(),
                       key=lambda c: telling.index(c) if c in telling else len(telling))
    for source, builds in registry.builds_by_source().items():
        if file != source and file not in compiler.files_of(str(cuda_dir / source)):
            continue
        for extra in ({}, skew):
            for key_type in key_types:
                for build in builds:
                    yield source, contract.defines_for(source, {"KEY_T": key_type, **build,
                                                                **extra})


def same_machine_code(mutant, cuda_dir: Path) -> bool:
    """True when every compile that includes the mutant's file gives the
    unmutated cubin; False at the first that differs or fails to compile."""
    from histkit.conformance.mutant import apply
    from histkit.gpu import compiler
    from histkit.gpu.errors import KernelCompileError

    cuda_dir = Path(cuda_dir).resolve()
    with tempfile.TemporaryDirectory(prefix=f"sift-{mutant.id}-") as tmp:
        mutated_dir = apply(mutant, cuda_dir, Path(tmp))
        for source, defines in compiles_of(mutant.file, cuda_dir):
            try:
                mutated = compiler.compile_cubin(str(mutated_dir / source), defines, ARCH)
            except KernelCompileError:
                return False  # broken: the judge reports it as such
            if mutated != compiler.compile_cubin(str(cuda_dir / source), defines, ARCH):
                return False
    return True


SAME_CODE_WHY = ("same machine code: every registry build compiles to the unmutated "
                 "cubin (python -m histkit.conformance.mutation sift)")


def _same(args) -> tuple[str, bool]:
    mutant, cuda_dir = args
    return mutant.id, same_machine_code(mutant, cuda_dir)


def sift(mutants: list, cuda_dir: Path, jobs: int) -> list[str]:
    """The ids of the mutants whose machine code is the unmutated one, printing
    each verdict as it comes (processes: NVRTC compiles in parallel)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    same = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending = [pool.submit(_same, (m, cuda_dir)) for m in mutants]
        for future in as_completed(pending):
            mutant_id, is_same = future.result()
            print(f"{'same' if is_same else 'differs'}  {mutant_id}", flush=True)
            if is_same:
                same.append(mutant_id)
    print(f"sift: {len(same)} of {len(mutants)} mutants compile to the unmutated machine code")
    return sorted(same)


def list_as_equivalent(table: Path, ids: list[str]) -> int:
    """Append the ids not yet in the table of equivalent mutants, each with
    SAME_CODE_WHY; returns how many were added."""
    from histkit.conformance.mutagen import equivalent

    known = equivalent(table)
    new = [i for i in ids if i not in known]
    if new:
        with open(table, "a") as out:
            for mutant_id in new:
                out.write(f'\n[[equivalent]]\nid = "{mutant_id}"\nseen_by = "nothing"\n'
                          f'why = "{SAME_CODE_WHY}"\n')
    return len(new)
