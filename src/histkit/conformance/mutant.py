"""A planted bug: the mutant, and how it is planted in a copy of the sources.

The bottom layer of mutation testing: ``mutagen`` makes mutants, ``sift``
compiles them, ``mutation`` judges them; all three plant them with ``apply``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    find: str
    replace: str
    plants: str
    caught_by: str
    needs: str = "quick"
    line: int = 0  # generated mutants (mutagen): the 1-based line that find is, whole


def plant(text: str, find: str, replace: str, what: str) -> str:
    """text with its one occurrence of find replaced (an error names `what` otherwise)."""
    found = text.count(find)
    if found != 1:
        raise ValueError(f"{what}: its find text occurs {found} times (must be exactly once)")
    return text.replace(find, replace)


def plant_at_line(text: str, line: int, find: str, replace: str, what: str) -> str:
    """text with its line-th line (which must be find, whole) made replace."""
    lines = text.split("\n")
    if not 0 < line <= len(lines) or lines[line - 1] != find:
        raise ValueError(f"{what}: line {line} is not the line it was generated from "
                         f"(regenerate the mutants)")
    lines[line - 1] = replace
    return "\n".join(lines)


def apply(mutant: Mutant, source_dir: Path, target_dir: Path, copy: bool = True) -> Path:
    """A copy of source_dir in target_dir with the mutant's one change made
    (returns target_dir); copy=False: only the mutated file, written to
    target_dir under its own name (returns its path)."""
    what = f"mutant {mutant.id} in {mutant.file}"
    text = (source_dir / mutant.file).read_text()
    text = (plant_at_line(text, mutant.line, mutant.find, mutant.replace, what)
            if mutant.line else plant(text, mutant.find, mutant.replace, what))
    if not copy:
        path = target_dir / Path(mutant.file).name
        path.write_text(text)
        return path
    shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)
    (target_dir / mutant.file).write_text(text)
    return target_dir
