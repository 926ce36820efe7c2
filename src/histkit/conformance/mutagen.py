"""Generated mutants: the usual one-line slips, planted at every site of cuda/.

The hand-written table (``mutants/mutants.toml``) plants the bugs someone
thought of. This module plants, mechanically, each of a small set of slips
that people actually make in kernels, at every line of every kernel file where
it applies: a comparison off by one (``<`` / ``<=``, ``>`` / ``>=``), a test
inverted (``==`` / ``!=``, ``&&`` / ``||``), a ``+ 1`` / ``- 1`` dropped, a
``+`` made ``-`` or a ``-`` made ``+``,
``min`` / ``max`` swapped, a shift turned round, a barrier or fence dropped, a
store dropped, a counter started at 1, ``+=`` made ``=``, an atomicAdd made a
plain ``+=``, an early ``return`` / ``continue`` / ``break`` dropped, a
lane index taken for a warp's, a shuffle reading the neighbouring lane, a
``volatile`` dropped. So a
kernel added tomorrow is mutated without anyone writing its bugs first, and a
survivor points at the line whose behaviour no case pins down.

Some generated mutants change nothing a caller can observe (``i < n`` made
``i <= n`` where a later guard stops the extra round, a fence on a path that
is already ordered): equivalent mutants. ``mutants/equivalent.toml`` lists
those found, each with the reason; a generated survivor not listed there is a
gap in the suite. Ids are made from the file, the slip, the line's text and
the code line before it (not its number), so an entry stays valid while
unrelated lines move, and a listed id does not slide onto another line of the
same text (a second ``__syncwarp();``) when one is added above it.

    python -m histkit.conformance.mutation run --generated [--sample N]
"""

from __future__ import annotations

import hashlib
import random
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from histkit.conformance.mutant import Mutant


@dataclass(frozen=True)
class Slip:
    """One kind of one-line bug: a pattern and what replaces each match."""

    name: str
    pattern: re.Pattern
    replacement: str
    what: str
    # What judges it: the quick matrix, or ("full") the cases past 2^31
    # elements, for a slip that shows only there.
    needs: str = "quick"


def _slip(name: str, pattern: str, replacement: str, what: str, needs: str = "quick") -> Slip:
    return Slip(name, re.compile(pattern), replacement, what, needs)


# Binary operators are matched with the spaces around them (the code's style),
# so template brackets and shifts are not taken for comparisons.
# One initialiser: no comma outside brackets (nested up to two deep).
_ONE_VALUE = r"(?:[^;,()]|\((?:[^()]|\([^()]*\))*\))+"
SLIPS = (
    _slip("lt-to-le", r" < ", " <= ", "a '<' made '<=' (one more round, slot or key)"),
    _slip("le-to-lt", r" <= ", " < ", "a '<=' made '<' (one fewer)"),
    _slip("gt-to-ge", r" > ", " >= ", "a '>' made '>='"),
    _slip("ge-to-gt", r" >= ", " > ", "a '>=' made '>'"),
    _slip("eq-to-ne", r" == ", " != ", "a test for equality inverted"),
    _slip("ne-to-eq", r" != ", " == ", "a test for inequality inverted"),
    _slip("and-to-or", r" && ", " || ", "'&&' made '||'"),
    _slip("or-to-and", r" \|\| ", " && ", "'||' made '&&'"),
    _slip("plus-one-dropped", r" \+ 1(?![\w.])", "", "a '+ 1' dropped"),
    _slip("minus-one-dropped", r" - 1(?![\w.])", "", "a '- 1' dropped"),
    _slip("min-to-max", r"\bmin\(", "max(", "min() made max()"),
    _slip("max-to-min", r"\bmax\(", "min(", "max() made min()"),
    _slip("shift-turned", r" >> ", " << ", "a right shift made a left shift"),
    _slip("plus-made-minus", r" \+ ", " - ", "a '+' made '-' (an offset or sum turned round)"),
    _slip("minus-made-plus", r" - ", " + ", "a '-' made '+'"),
    _slip("times-made-plus", r" \* ", " + ", "a '*' made '+' (a stride or scale added)"),
    _slip("barrier-dropped", r"__syncthreads\(\);", ";", "a block barrier dropped"),
    _slip("warp-barrier-dropped", r"__syncwarp\(\);", ";", "a warp barrier dropped"),
    _slip("fence-dropped", r"__threadfence\(\);", ";", "a memory fence dropped"),
    _slip("counter-starts-at-one", r"(?<=[\w\]] = )0(?=;)", "1",
          "a counter or sum started at 1 instead of 0"),
    _slip("accumulate-made-assign", r" \+= ", " = ", "a '+=' made '=' (the sum so far lost)"),
    _slip("atomic-made-plain", r"atomicAdd\(&([^,;]+), ([^;]+?)\);", r"\1 += \2;",
          "an atomicAdd made a plain '+=' (the chapter's race)"),
    _slip("return-dropped", r"\breturn;", ";", "an early return dropped"),
    _slip("continue-dropped", r"\bcontinue;", ";", "a 'continue' dropped (the skip forgotten)"),
    _slip("break-dropped", r"\bbreak;", ";", "a 'break' dropped (the loop runs on)"),
    # The wrong one of two look-alike names: a thread's index for its block's,
    # a block's size for the grid's, a bitwise and for an or, the first bad
    # index for the last.
    _slip("thread-for-block-index", r"\bblockIdx\.x\b", "threadIdx.x",
          "blockIdx.x made threadIdx.x"),
    _slip("block-for-thread-index", r"\bthreadIdx\.x\b", "blockIdx.x",
          "threadIdx.x made blockIdx.x"),
    _slip("grid-for-block-size", r"\bblockDim\.x\b", "gridDim.x", "blockDim.x made gridDim.x"),
    _slip("block-for-grid-size", r"\bgridDim\.x\b", "blockDim.x", "gridDim.x made blockDim.x"),
    _slip("and-made-or", r" & ", " | ", "a bitwise '&' made '|'"),
    _slip("atomic-min-made-max", r"\batomicMin\(", "atomicMax(",
          "atomicMin made atomicMax (the last bad index kept, not the first)"),
    # A step left out: a count's increment, an atomic update (its result
    # unused), a single-line if's guard (the bounds check forgotten), and a
    # warp shuffle reading the wrong way.
    _slip("increment-dropped", r"(^\s*|\) |\{ )(?:\+\+[\w.\[\]]+|[\w.\[\]]+\+\+);", r"\1;",
          "an increment dropped (a count that never counts)"),
    _slip("atomic-dropped", r"(^\s*|\) |\{ )atomic\w+\([^;]*\);", r"\1;",
          "an atomic update dropped"),
    # (the test: parentheses balanced two deep, as every single-line if here)
    _slip("guard-dropped",
          r"^(\s*)if \((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\) (?!\{)(?!.*\belse\b)(.+;)$",
          r"\1\2",
          "a single-line if's test dropped (its statement always runs)"),
    # A conditional's branches swapped (each branch: brackets balanced two deep).
    _slip("ternary-swapped",
          r"\? ((?:[^?:;()\[\],]|\((?:[^()]|\([^()]*\))*\)|\[(?:[^\[\]]|\[[^\[\]]*\])*\])+?)"
          r" : ((?:[^?:;()\[\],]|\((?:[^()]|\([^()]*\))*\)|\[(?:[^\[\]]|\[[^\[\]]*\])*\])+?)"
          r"(?=;|\)|,|\]|$)", r"? \2 : \1",
          "a conditional's two branches swapped"),
    _slip("shuffle-up-made-down", r"__shfl_up_sync\(", "__shfl_down_sync(",
          "a shuffle up made a shuffle down (the lane above read, not the one below)"),
    _slip("shuffle-down-made-up", r"__shfl_down_sync\(", "__shfl_up_sync(",
          "a shuffle down made a shuffle up"),
    # A warp's lane taken for its index in the block and the other way round,
    # and a broadcast read from the lane next to the one meant.
    _slip("lane-made-warp-index", r" & 31(?![\w.])", " >> 5",
          "a lane index (& 31) made a warp index (>> 5)"),
    _slip("warp-made-lane-index", r" >> 5(?![\w.])", " & 31",
          "a warp index or count (>> 5) made a lane index (& 31)"),
    _slip("shuffle-source-moved", r"(__shfl_sync\([^,()]+, [^,()]+, )([^(),]+?)\)", r"\1\2 + 1)",
          "a shuffle's source lane one too high (the neighbour's value read)"),
    # A pointer's volatile dropped: the compiler may keep a spun-on or racy
    # word in a register (asm volatile lines are never mutated: see _SKIPPED_LINE).
    _slip("volatile-dropped", r"\bvolatile ", "",
          "a volatile qualifier dropped (a load the compiler may hoist or merge)"),
    # A 64-bit index, length or offset declared or cast as a 32-bit int: the
    # classic kernel bug, invisible below 2^31 elements (cases.huge_cases). A
    # constant declared alone with its value keeps its type and gets its value
    # through an int: the same wrapped number, where an int constant would not
    # compile beside i64s (max(int, i64) matches no single overload). A
    # variable, a loop's too, is narrowed itself (it wraps as it changes).
    # Left alone: the typedef itself, a cast that is min's or max's first
    # argument (an int there beside an i64 would not compile either: a bug
    # no one can ship), and a pointer to i64 (a slot's width, not an index's;
    # an int* among i64* does not compile).
    _slip("index-narrowed", rf"\bconst i64 (\w+) = ({_ONE_VALUE});\s*$",
          r"const i64 \1 = (int)(\2);",
          "a 64-bit index (i64) narrowed to int (wraps past 2^31 elements)", needs="full"),
    _slip("index-narrowed",
          rf"(?<!long long )(?<!min\(\()(?<!max\(\()\bi64\b(?!\s*\*)"
          rf"(?!(?<=const i64) \w+ = {_ONE_VALUE};\s*$)", "int",
          "a 64-bit index (i64) narrowed to int (wraps past 2^31 elements)", needs="full"),
)

# The slip mutants_of applies itself, to a whole statement (_STORE), not by pattern.
STORE_DROPPED = "store-dropped"

# A statement that stores to something already declared: `x = ...;`,
# `a[i] += ...;`, `*p = ...;` (not a declaration: no type before the name).
_STORE = re.compile(r"^(\s*)(?:if \(.*\) )?[\w.\[\]()*&>-]+ (?:[-+|^&]?=) [^=].*;$")
_DECLARATION = re.compile(
    r"^\s*(?:const |volatile |static |extern |__shared__ |unsigned |signed )*"
    r"(?:u64|i64|u32|unsigned|int|bool|auto|hk_key|hk_index|T|size_t|char|short|long|"
    r"float|double|TileStage|StagedTile|KEY_T)\b[\s*&]")
# A block comment's inner line is " * ..." or " */"; a line starting with a
# pointer's store ("*choice = ...;") is code, and is mutated like any other.
_SKIPPED_LINE = re.compile(r"^\s*(?:#|//|static_assert|asm|\*(?=\s|/|$)|/\*)")


def _code(line: str) -> str:
    """The line without its trailing // comment."""
    cut = line.find("//")
    return line if cut < 0 else line[:cut].rstrip()


def _id(file: str, slip: str, line: str, before: str, occurrence: int,
        prefix: str = "gen-") -> str:
    """before: the code line above (stripped); occurrence counts the earlier
    mutants of this slip on the same pair of lines (two matches in one line)."""
    digest = hashlib.sha1(f"{before}\n{line.strip()}#{occurrence}".encode()).hexdigest()[:8]
    return f"{prefix}{Path(file).stem}-{slip}-{digest}"


def _slipped(code: str, slips: tuple[Slip, ...], skipped: list[tuple[int, int]] = ()):
    """(slip, the code with that slip at one match) for every match of every
    slip, except matches starting inside a skipped span."""
    for slip in slips:
        for match in slip.pattern.finditer(code):
            if not any(a <= match.start() < b for a, b in skipped):
                yield slip, (code[:match.start()] + match.expand(slip.replacement)
                             + code[match.end():])


def mutants_of(file: str, text: str) -> list[Mutant]:
    """Every generated mutant of one kernel file (file: its name in cuda/)."""
    found: list[Mutant] = []
    seen: dict[tuple[str, str, str], int] = {}
    before = ""  # the last line with code on it (comments and blank lines skipped)
    for number, line in enumerate(text.splitlines(), start=1):
        code = _code(line)
        if _SKIPPED_LINE.match(line) or not line.strip():
            if code.strip() and not code.lstrip().startswith(("//", "/*", "*")):
                before = code.strip()  # a preprocessor line, static_assert, asm
            continue
        comment = line[len(code):]
        for slip, mutated in _slipped(code, SLIPS):
            found.append(_mutant(file, slip.name, slip.what, line, number, mutated + comment,
                                 seen, before, needs=slip.needs))
        store = _STORE.match(code)
        if store and not _DECLARATION.match(code) and not code.rstrip().endswith("{"):
            found.append(_mutant(file, STORE_DROPPED, "a store dropped", line, number,
                                 store.group(1) + ";" + comment, seen, before))
        before = code.strip()
    return found


def _mutant(file: str, slip: str, what: str, line: str, number: int, mutated: str,
            seen: dict, before: str, prefix: str = "gen-", needs: str = "quick") -> Mutant:
    key = (slip, line.strip(), before)
    occurrence = seen[key] = seen.get(key, -1) + 1
    return Mutant(id=_id(file, slip, line, before, occurrence, prefix), file=file, find=line,
                  replace=mutated,
                  plants=f"{what}, line {number}: {line.strip()}",
                  caught_by="(generated)", needs=needs, line=number)


def generate(cuda_dir: Path, files: list[str] | None = None) -> list[Mutant]:
    """Generated mutants of every kernel file some conformance row compiles."""
    from histkit.gpu import registry

    names = _kernel_files()
    if files:
        check_files(files)
        names = [name for name in names if name in {Path(f).name for f in files}]
    mutants: list[Mutant] = []
    for name in names:
        if registry.all_rows_reaching(name):
            mutants.extend(mutants_of(name, (Path(cuda_dir) / name).read_text()))
    return mutants


def _kernel_files() -> list[str]:
    from histkit.gpu import registry

    tables = registry.KERNELS + registry.BINNING_KERNELS + registry.WEIGHTED_KERNELS
    return sorted({k.source for k in tables} | set(registry.HEADERS))


def check_files(files: list[str], host: bool = False) -> None:
    """ValueError naming each of files that is no file mutated (``cuda/x.cu``
    names ``x.cu``; a host file by its path in the package or its name): a
    misspelt --files would otherwise plant no mutant and read as a clean run."""
    if host:
        known, wanted = {*HOST_FILES, *(Path(n).name for n in HOST_FILES)}, set(files)
    else:
        known, wanted = set(_kernel_files()), {Path(name).name for name in files}
    unknown = sorted(wanted - known)
    if unknown:
        raise ValueError(f"no {'host' if host else 'cuda/'} file named {', '.join(unknown)}; "
                         f"the files mutated are {', '.join(sorted(known))}")


def sample(mutants: list[Mutant], count: int | None, seed: int = 0) -> list[Mutant]:
    """count of the mutants, drawn at random (seeded), in file and line order."""
    if count is None or count >= len(mutants):
        return mutants
    chosen = random.Random(seed).sample(mutants, count)
    return sorted(chosen, key=lambda m: (m.file, m.line))


# --- the launch layer: host code mutated the same way -------------------------
#
# Between a public call and a kernel sits Python that sizes grids, scratch,
# tiles and passes and picks a kernel (histkit.gpu.launch, policy, the
# registry's launchers), and the public calls that check arguments, pick
# streams and hand results back (api.py, _calls.py, _arrays.py, _lane_calls.py).
# A slip there (a ceiling division made a floor, a bound off by one) is as real
# a bug as one in cuda/, and the same matrix must catch it. Host mutants take
# the slips that read the same in Python plus Python's own, on code lines only
# (not docstrings, comments or string literals); the judge imports the one
# mutated module in place of the installed one (histkit._mutant_loader).

PYTHON_SLIPS = (
    _slip("and-to-or", r" and ", " or ", "'and' made 'or'"),
    _slip("or-to-and", r" or ", " and ", "'or' made 'and'"),
    _slip("not-dropped", r"\bnot ", "", "a 'not' dropped"),
    _slip("ceiling-made-floor", r"-\(-", "(", "a ceiling division made a floor division"),
)
# The oracles' Cython alone: a 64-bit index or size narrowed to a C int,
# which wraps past 2^31 (the oracles' tests count 2^31 + 93 keys).
CYTHON_SLIPS = (
    _slip("index-narrowed", r"\bPy_ssize_t\b", "int",
          "a Py_ssize_t narrowed to int (wraps past 2^31)"),
)
_READ_ALIKE = ("lt-to-le", "le-to-lt", "gt-to-ge", "ge-to-gt", "eq-to-ne", "ne-to-eq",
               "plus-one-dropped", "minus-one-dropped", "min-to-max", "max-to-min",
               "shift-turned", "accumulate-made-assign", "plus-made-minus", "times-made-plus")
HOST_SLIPS = tuple(s for s in SLIPS if s.name in _READ_ALIKE) + PYTHON_SLIPS
# Every slip's name, as the generated mutants' ids carry it.
SLIP_NAMES = frozenset(s.name for s in (*SLIPS, *PYTHON_SLIPS, *CYTHON_SLIPS)) | {STORE_DROPPED}
# Files of the histkit package whose code sizes and picks the launches.
HOST_FILES = ("gpu/launch/common.py", "gpu/launch/histogram.py", "gpu/launch/partitioned.py",
              "gpu/launch/rank.py", "gpu/launch/resident.py", "gpu/launch/scan.py",
              "gpu/launch/sort.py", "gpu/launch/binning.py", "gpu/launch/weighted.py",
              "gpu/policy.py", "gpu/registry.py", "gpu/api.py", "gpu/_calls.py", "gpu/_arrays.py",
              "gpu/_lane_calls.py", "gpu/binning.py")
_STRING = re.compile(r"'[^']*'|\"[^\"]*\"")


def python_code_lines(text: str) -> set[int]:
    """1-based numbers of the lines outside docstrings and comments."""
    inside, keep = False, set()
    for number, line in enumerate(text.split("\n"), 1):
        quotes = line.count('"""') + line.count("'''")
        if not inside and quotes == 0 and not line.strip().startswith("#"):
            keep.add(number)
        if quotes % 2:
            inside = not inside
    return keep


def python_mutants_of(file: str, text: str, slips: tuple[Slip, ...] = HOST_SLIPS,
                      prefix: str = "gen-host-") -> list[Mutant]:
    """Every mutant of one Python file: each slip at each match on a code
    line, outside string literals and the line's comment."""
    found: list[Mutant] = []
    seen: dict[tuple[str, str, str], int] = {}
    lines = text.split("\n")
    before = ""  # the last code line (docstrings, comments and blank lines skipped)
    for number in sorted(python_code_lines(text)):
        line = lines[number - 1]
        cut = line.find("  #")
        code = line if cut < 0 else line[:cut]
        strings = [m.span() for m in _STRING.finditer(code)]
        for slip, mutated in _slipped(code, slips, strings):
            found.append(_mutant(file, slip.name, slip.what, line, number,
                                 mutated + line[len(code):], seen, before, prefix))
        if code.strip():
            before = code.strip()
    return found


def generate_host(package_dir: Path, files: list[str] | None = None) -> list[Mutant]:
    """Host mutants of the launch layer (HOST_FILES, paths in the package)."""
    if files:
        check_files(files, host=True)
    mutants: list[Mutant] = []
    for name in HOST_FILES:
        if not files or name in files or Path(name).name in files:
            mutants.extend(python_mutants_of(name, (Path(package_dir) / name).read_text()))
    return mutants


# What could see a listed survivor: nothing (no observable effect), or only a
# compute-sanitizer tool (an unused out-of-bounds read, a race no run forces,
# a warp sync with a wrong mask); "unforced-schedule" and "beyond-cases" are
# NOT equivalents: a real race between blocks that no schedule the suite
# forces exposes, and a bug that shows only on inputs larger than any case
# holds, listed so runs report them as known gaps instead of spending
# minutes on them again. "cpu-tests": a host mutant no GPU case can see (a
# layout rule, memory, a report's text) that a CPU test pins, named in the
# reason (mutants/harness_mutants.py judges it in CI's tests).
SEEN_BY = ("nothing", "memcheck", "racecheck", "synccheck", "unforced-schedule", "beyond-cases",
           "cpu-tests")
KNOWN_GAPS = ("unforced-schedule", "beyond-cases")


def listed(table: Path) -> list[dict]:
    """The entries of mutants/equivalent.toml, each seen_by checked."""
    if not Path(table).exists():
        return []
    entries = tomllib.loads(Path(table).read_text()).get("equivalent", [])
    for entry in entries:
        if entry.get("seen_by") not in SEEN_BY:
            raise ValueError(f"{table}: {entry.get('id')}: seen_by must be one of {SEEN_BY}")
    return entries


def equivalent(table: Path) -> dict[str, str]:
    """Generated mutant id -> why it survives: every listed one (known gaps too)."""
    return {entry["id"]: entry["why"] for entry in listed(table)}


def known_gaps(table: Path) -> dict[str, str]:
    """The listed survivors that are real bugs no case catches (KNOWN_GAPS)."""
    return {e["id"]: e["why"] for e in listed(table) if e["seen_by"] in KNOWN_GAPS}


# --- which kernel entries reach a line ------------------------------------------
#
# A generated mutant on a line that only resident_sort can run needs only the
# rows that launch resident_sort: the judge skips the others (a survivor's
# judge, the long one, runs every row of the file otherwise). The reach is
# found from the text: top-level functions and structs of the file, and which
# of their names each one's body mentions (templates and functor structs
# included: a mention is enough), from each extern "C" entry on.

_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_NAME_BEFORE_PAREN = re.compile(r"(\w+)\s*\($")
_STRUCT = re.compile(r"\b(?:struct|union)\s+(\w+)")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


@dataclass(frozen=True)
class Unit:
    """A top-level function or struct of a kernel file: its lines (1-based,
    inclusive), and whether it is an extern "C" kernel entry."""

    name: str
    first: int
    last: int
    entry: bool
    body: str


def _without_comments(text: str) -> str:
    """text with comments blanked (line numbers kept) and preprocessor lines emptied."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    lines = [_code(line) for line in text.split("\n")]
    return "\n".join("" if line.lstrip().startswith("#") else line for line in lines)


def units_of(text: str) -> list[Unit]:
    """The top-level functions and structs of a kernel file, in order."""
    code = _without_comments(text)
    units: list[Unit] = []
    depth, header_start, opened = 0, 0, 0
    for at, char in enumerate(code):
        if char == "{":
            if depth == 0:
                opened = at
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                unit = _unit(code, header_start, opened, at)
                if unit is not None:
                    units.append(unit)
                header_start = at + 1
        elif char == ";" and depth == 0:
            header_start = at + 1
    return units


def _unit(code: str, start: int, opened: int, closed: int) -> Unit | None:
    header = _LAUNCH_BOUNDS.sub("", code[start:opened])
    paren = header.find("(")
    if paren >= 0:
        named = _NAME_BEFORE_PAREN.search(header[:paren + 1])
        name = named.group(1) if named else None
    else:
        struct = _STRUCT.search(header)
        name = struct.group(1) if struct else None
    if name is None:
        return None
    # the unit begins at its header's first non-blank character
    lead = len(code[start:opened]) - len(code[start:opened].lstrip())
    return Unit(name, code.count("\n", 0, start + lead) + 1, code.count("\n", 0, closed) + 1,
                'extern "C"' in header and "__global__" in header, code[opened:closed])


@cache  # a run asks once per mutant to order the judges, and again to start each
def entries_reaching(text: str) -> dict[int, frozenset[str]]:
    """Line (1-based) -> the extern "C" entries whose code reaches it, for
    every line inside a top-level function or struct (lines outside any,
    declarations and the like, are not in the map: every entry may see them)."""
    units = units_of(text)
    names = {unit.name for unit in units}
    mentions = {unit.name: set(_IDENTIFIER.findall(unit.body)) & names for unit in units}
    reach: dict[str, set[str]] = {}
    for entry in (unit.name for unit in units if unit.entry):
        seen, todo = {entry}, [entry]
        while todo:
            for callee in mentions.get(todo.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        for name in seen:
            reach.setdefault(name, set()).add(entry)
    found: dict[int, frozenset[str]] = {}
    for unit in units:
        for line in range(unit.first, unit.last + 1):
            found[line] = frozenset(reach.get(unit.name, ()))
    return found
