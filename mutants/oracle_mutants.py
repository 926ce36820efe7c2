"""Planted bugs in the oracles: how we know their tests catch them (CPU only).

Users take the Cython oracles as ground truth, so their tests (checked against
numpy and plain loops) must catch a slip in them as the conformance suite
catches one in a kernel. This applies mutagen's one-line slips, plus Python's
(mutagen.PYTHON_SLIPS: `and` / `or`, a dropped `not`, `+` made `-`, a ceiling
division made a floor) and, in the Cython files, a `Py_ssize_t` narrowed to
`int` (mutagen.CYTHON_SLIPS), to the code lines (not docstrings or comments) of
every file of src/histkit/oracles/, one at a time,
and runs the oracle tests (stopping at the first failure): a failure or a
hang is caught, a build error broken, a clean run survived.

It edits the checkout IN PLACE and relies on the editable install rebuilding
the Cython modules on import (pip install --no-build-isolation -e .); each
file is restored after its mutant, and at exit. It refuses to start when the
oracles have uncommitted changes. From the repository root:

    python mutants/oracle_mutants.py results.jsonl [mutant ids ...]

Each verdict is appended to results.jsonl as it comes (ids already there are
skipped: a run cut short resumes). A caught mutant takes 10-60 s on 2 cores
(the tests that pin its file run first), a survivor the whole clean run.
"""

import atexit
import json
import pathlib
import signal
import subprocess
import sys
import time

from histkit.conformance import mutagen

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORACLES = ROOT / "src" / "histkit" / "oracles"
TESTS = ["tests/test_histogram_oracle.py", "tests/test_scan_and_sort_oracles.py",
         "tests/test_wave_oracle.py", "tests/test_radix_oracle.py", "tests/test_pages.py",
         "tests/test_bad_input.py", "tests/test_more_than_2_31_keys.py",
         "tests/test_new_user.py",  # (the oracles' argument errors and memory refusals)
         "tests/test_bin_histogram_oracle.py", "tests/test_binning_cases.py",
         "tests/test_binning_policy.py", "tests/test_weighted_histogram_oracle.py"]
# The tests run first for a file's mutants (the rest follow): a caught mutant
# stops at its first failure, so the tests that pin the file go first.
FIRST_TESTS = {
    "_bin_rule.py": TESTS[8:11], "_binned.py": TESTS[8:11], "_binning.pyx": TESTS[8:11],
    "_estimate.py": TESTS[8:11], "_weighted.pyx": TESTS[11:], "_weighted_wide.pyx": TESTS[11:],
    "_chunks.pxd": TESTS[11:],
}
# The files that do the counting first: a run cut short has judged them. Every
# other file of the oracles follows, in name order.
FIRST_FILES = ["_sort.pyx", "_scan.pyx", "_histogram.pyx", "_wave.pyx", "_fold.py",
               "_radix.py", "_pages.pyx", "_inputs.py", "_threads.py", "__init__.py",
               "_count.pxd", "_binned.py", "_bin_rule.py", "_estimate.py"]
TIMEOUT_S = 1500  # a clean run of the tests took 7 min on 2 busy cores (load 4-8): past 2x, a hang


def mutants_of(path: pathlib.Path) -> list:
    """mutagen's slips for C (the oracles' Cython reads alike) and for Python,
    on the file's code lines, outside comments and string literals (read as
    Python: `//` is a division there, not a comment)."""
    cython = mutagen.CYTHON_SLIPS if path.suffix in (".pyx", ".pxd") else ()
    return mutagen.python_mutants_of(path.name, path.read_text(),
                                     mutagen.SLIPS + mutagen.PYTHON_SLIPS + cython, prefix="gen-")


def oracle_files() -> list[str]:
    found = sorted(p.name for p in ORACLES.iterdir() if p.suffix in (".py", ".pyx", ".pxd"))
    return [f for f in FIRST_FILES if f in found] + [f for f in found if f not in FIRST_FILES]


def tests_for(name: str) -> list[str]:
    first = FIRST_TESTS.get(name, [])
    return [*first, *(t for t in TESTS if t not in first)]


def judge(name: str) -> tuple[str, str]:
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                               "no:cacheprovider", *tests_for(name)], cwd=ROOT,
                              capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "caught", f"hang: no verdict within {TIMEOUT_S} s"
    text = (done.stdout + done.stderr).strip()
    last = text.splitlines()[-1] if text else ""
    if done.returncode == 0:
        return "survived", last
    if "Error compiling Cython" in text or "ninja: build stopped" in text:
        return "broken", last
    return "caught", last


def main(results: pathlib.Path, only: set[str]) -> None:
    dirty = subprocess.run(["git", "status", "--porcelain", str(ORACLES)], cwd=ROOT,
                           capture_output=True, text=True).stdout
    if dirty:
        sys.exit(f"uncommitted changes in {ORACLES}: commit or stash them first")
    judged = ({json.loads(line)["id"] for line in results.open()} if results.exists()
              else set())
    originals: dict[pathlib.Path, str] = {}

    def restore(*_):
        for path, text in originals.items():
            path.write_text(text)
        originals.clear()

    atexit.register(restore)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    with results.open("a") as out:
        for name in oracle_files():
            path = ORACLES / name
            original = path.read_text()
            for mutant in mutants_of(path):
                if mutant.id in judged or (only and mutant.id not in only):
                    continue
                lines = original.split("\n")
                lines[mutant.line - 1] = mutant.replace
                originals[path] = original
                path.write_text("\n".join(lines))
                start = time.perf_counter()
                try:
                    verdict, last = judge(name)
                finally:
                    restore()
                out.write(json.dumps({"id": mutant.id, "file": name, "line": mutant.line,
                                      "find": mutant.find.strip(),
                                      "replace": mutant.replace.strip(), "verdict": verdict,
                                      "seconds": round(time.perf_counter() - start),
                                      "last": last[-200:]}) + "\n")
                out.flush()
                print(f"{verdict:8s} {mutant.id}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        # --help, or an option taken for the results file: print the usage, touch nothing
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    main(pathlib.Path(sys.argv[1]), set(sys.argv[2:]))
