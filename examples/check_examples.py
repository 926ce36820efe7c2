"""Run ``histkit check`` over every example kernel of examples/cuda/, correct
and buggy (examples/bugs.toml), on a GPU host; print the verdicts and write
them as JSON.

    python examples/check_examples.py [--json PATH] [--jobs N] [--generated] [--only FILE]

A correct kernel must PASS; each bug must FAIL, with a minimal reproducer.
--generated: instead of bugs.toml's bugs, every one-line slip mutagen plants
in the examples (the slips it plants in histkit's own kernels), each judged by
the quick matrix as a user's kernel would be: how much of what a user can get
wrong one line at a time ``histkit check`` sees. A survivor is either a
mutant that changes nothing observable or a gap; the report lists them.
The compile cache starts empty, so each correct kernel's time includes its
NVRTC compiles.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from histkit.conformance.mutant import plant as plant_text
from histkit.conformance.mutant import plant_at_line

HERE = Path(__file__).resolve().parent
# How each example is checked: its kind and launch options (docs/check.md explains them).
EXAMPLES = {
    "atomic_histogram.cu": ("histogram", {}),
    "naive_histogram.cu": ("racy-histogram", {}),
    "wave_histogram.cu": ("wave", {}),
    "privatized_histogram.cu": ("privatized", {"grid": 8}),
    "exclusive_scan.cu": ("scan", {"grid": 1}),
    "counting_sort.cu": ("sort", {}),
    "bin_histogram.cu": ("bin-histogram", {}),
}


def load_bugs() -> list[dict]:
    return tomllib.loads((HERE / "bugs.toml").read_text())["bug"]


def generated_bugs() -> list[dict]:
    """mutagen's slips at every site of every example, as bugs.toml entries
    (with the line each was generated from), judged by the quick matrix."""
    from histkit.conformance import mutagen

    bugs = []
    for name, (kind, _) in EXAMPLES.items():
        for mutant in mutagen.mutants_of(name, (HERE / "cuda" / name).read_text()):
            bugs.append({"id": mutant.id, "file": name, "kind": kind, "find": mutant.find,
                         "replace": mutant.replace, "line": mutant.line,
                         "plants": mutant.plants, "needs": "quick"})
    return bugs


def plant(bug: dict, folder: Path) -> Path:
    """A copy of the example with the bug planted (an empty find plants nothing)."""
    target = folder / bug["file"]
    text = (HERE / "cuda" / bug["file"]).read_text()
    what = f"bug {bug['id']} in {bug['file']}"
    if bug.get("line"):
        text = plant_at_line(text, bug["line"], bug["find"], bug["replace"], what)
    elif bug["find"]:
        text = plant_text(text, bug["find"], bug["replace"], what)
    target.write_text(text)
    return target


def run_one(path: Path, kind: str, options: dict, needs: str) -> dict:
    from histkit.conformance import check
    from histkit.conformance.cases import huge_cases

    start = time.perf_counter()
    if needs == "racecheck":  # a race the hardware hides: judged under compute-sanitizer
        return _under_racecheck(path, kind, options, start)
    cases = huge_cases() if needs == "full" else None
    report = check(str(path), kind, cases=cases, **options)
    first = report.failures[0] if report.failures else None
    return {"passed": report.passed, "counts": report.counts(),
            "seconds": round(time.perf_counter() - start, 1),
            "first_failure": str(first) if first else None,
            "reproducer_keys": first.shrunk.n if first and first.shrunk else
            (first.case.n if first else None)}


def _under_racecheck(path: Path, kind: str, options: dict, start: float) -> dict:
    import subprocess

    command = [sys.executable, "-m", "histkit", "check", str(path), "--kind", kind,
               "--sanitize", "racecheck", "--no-shrink"]
    if options.get("grid"):
        command += ["--grid", str(options["grid"])]
    done = subprocess.run(command, capture_output=True, text=True)
    return {"passed": done.returncode == 0, "counts": {}, "reproducer_keys": None,
            "seconds": round(time.perf_counter() - start, 1),
            "first_failure": done.stdout[-800:] if done.returncode else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default="examples-check.json")
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--generated", action="store_true",
                        help="judge mutagen's one-line slips in the examples instead of "
                             "bugs.toml's bugs")
    parser.add_argument("--only", nargs="+", choices=tuple(EXAMPLES), metavar="FILE",
                        help="these examples (and their bugs) alone")
    args = parser.parse_args(argv)
    chosen = args.only or tuple(EXAMPLES)
    from histkit.gpu import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:  # the examples are CUDA kernels: every one needs a GPU
        print(f"check_examples.py needs a GPU: {reason}", file=sys.stderr)
        return 2
    os.environ["HISTKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="histkit-examples-cache-")
    work = Path(tempfile.mkdtemp(prefix="histkit-examples-"))
    jobs = []
    for name, (kind, options) in EXAMPLES.items():
        if name not in chosen:
            continue
        jobs.append(("correct", name, name, HERE / "cuda" / name, kind, options, "quick"))
    for bug in generated_bugs() if args.generated else load_bugs():
        if bug["file"] not in chosen:
            continue
        folder = work / bug["id"]
        folder.mkdir()
        options = EXAMPLES[bug["file"]][1]
        jobs.append(("bug", bug["id"], bug["file"], plant(bug, folder), bug["kind"], options,
                     bug["needs"]))
    # correct kernels first, alone, so their times include compilation and no contention
    rows = []
    survivors: list[str] = []
    ok = True

    def record(job, result) -> None:
        nonlocal ok
        role, name, file, _, kind, options, needs = job
        expected = role == "correct"
        right = result["passed"] == expected
        ok &= right
        verdict = "PASS" if result["passed"] else "FAIL"
        print(f"{'ok ' if right else 'BAD'} {role:7s} {name:40s} {kind:15s} {verdict} "
              f"{result['counts']} {result['seconds']} s"
              + (f", reproducer of {result['reproducer_keys']} "
                 f"key{'s' if result['reproducer_keys'] != 1 else ''}"
                 if result["reproducer_keys"] is not None else ""), flush=True)
        rows.append({"role": role, "name": name, "file": file, "kind": kind,
                     "options": options, "needs": needs, **result})
        if role == "bug" and result["passed"]:
            survivors.append(name)

    for job in [j for j in jobs if j[0] == "correct"]:
        record(job, run_one(*job[3:]))
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        bugs = [j for j in jobs if j[0] == "bug"]
        futures = [(job, pool.submit(run_one, *job[3:])) for job in bugs]
        for job, future in futures:
            record(job, future.result())
    Path(args.json).write_text(json.dumps(rows, indent=1))
    caught = sum(1 for r in rows if r["role"] == "bug" and not r["passed"])
    total = sum(1 for r in rows if r["role"] == "bug")
    print(f"correct examples: {sum(r['passed'] for r in rows if r['role'] == 'correct')}/"
          f"{len(EXAMPLES)} pass; buggy: {caught}/{total} caught; wrote {args.json}")
    for name in survivors:
        print(f"survived: {name}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
