"""Mutation testing of the conformance suite: how we know it catches bugs.

``mutants/mutants.toml`` lists planted one-line bugs in ``cuda/``. For each,
``python -m histkit.conformance.mutation run`` (``nox -s mutants``) copies
``cuda/``, applies the bug, and runs, in a fresh process pointed at the copy
by ``HISTKIT_CUDA_DIR``, the conformance rows that compile the mutated file
(``registry.rows_reaching``), stopping at the first FAIL. A FAIL, a crash or
a hang is "caught"; a compile error makes the mutant "broken" (it tests
nothing); a clean run is "survived" and names a missing case. A kernel that
never ends is a FAIL of the judge itself (the matrix bounds every wait on the
device: runner.WAIT_LIMIT_S); a judge that outruns the run's time limit is a
hang for the quick matrix, and "unjudged" for the cases past 2^31 keys, whose
judges take minutes unmutated, and for a judge whose stacks show it still
compiling or checking on the host rather than waiting on the GPU.

``run --check-claims`` judges the generated mutants that
``mutants/equivalent.toml`` lists as seen only by a compute-sanitizer tool,
each under that tool: the listing is a claim, and a survivor disproves it.

``run --generated`` plants mutagen's slips at every site of ``cuda/`` (``--slips NAME ...``:
only those slips' mutants);
``run --host`` plants them in the launch layer's Python (grid, tile, scratch
and pass sizes, the kernel choice), each judged with the one mutated module
imported in place of the installed one (``histkit._mutant_loader``).

Without a GPU, ``tests/test_mutants.py`` checks that every mutant applies
and compiles with NVRTC.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from histkit.conformance.mutant import Mutant, apply
from histkit.conformance.sanitize import TOOLS as SANITIZERS

# A mutant that needs a compute-sanitizer tool is judged by the sanitize
# session's small cases run under it (its findings exit EXIT_CAUGHT).
NEEDS = ("quick", "full", *SANITIZERS)
EXIT_SURVIVED, EXIT_CAUGHT, EXIT_BROKEN = 0, 1, 3
COMPILE_FAILED = "NVRTC failed to compile"
STACKS_WAIT_S = 2.0  # how long a judge past its time gets to print its stacks


def load(table: Path) -> list[Mutant]:
    entries = tomllib.loads(Path(table).read_text())["mutant"]
    mutants = [Mutant(**entry) for entry in entries]
    for m in mutants:
        if m.needs not in NEEDS:
            raise ValueError(f"mutant {m.id}: needs must be one of {NEEDS}; got {m.needs!r}")
    return mutants


def is_host(mutant: Mutant) -> bool:
    """A mutant of the launch layer's Python (mutagen.generate_host), not of cuda/."""
    return mutant.file.endswith(".py")


def package_dir() -> Path:
    """The installed histkit package, whose files host mutants copy and mutate."""
    import histkit

    return Path(histkit.__file__).parent


def host_module(file: str) -> str:
    """The module name of a file of the package ("gpu/policy.py": histkit.gpu.policy)."""
    return "histkit." + file.removesuffix(".py").replace("/", ".")


def _host_rows(file: str) -> list:
    """The rows a host file can change: those compiling a cuda/ source the
    file names (a launcher module), else every row (policy, the registry)."""
    from histkit.gpu import registry

    named = set(re.findall(r"\"(\w+\.cu)\"", (package_dir() / file).read_text()))
    rows = [k for k in registry.KERNELS if named & set(k.sources)]
    return rows or list(registry.KERNELS)


# The CPU tests that pin the launch layer's sizes, edges, refusals and picks
# (on a fake runtime): a host mutant's judge runs them first, in its process.
HOST_TESTS = ("tests/test_gpu_layout.py", "tests/test_launch_geometry.py",
              "tests/test_api_calls.py", "tests/test_registry.py")


# Host files no conformance row runs (the public calls): the tests that call
# them judge their mutants instead of rows (tests/test_gpu.py needs a GPU).
_PUBLIC_CALL_TESTS = ("tests/test_new_user.py", "tests/test_bad_input.py", "tests/test_gpu.py")
TEST_JUDGED = {"gpu/api.py": _PUBLIC_CALL_TESTS, "gpu/_calls.py": _PUBLIC_CALL_TESTS,
               "gpu/_arrays.py": _PUBLIC_CALL_TESTS, "gpu/_lane_calls.py": _PUBLIC_CALL_TESTS,
               # The binning launches: their GPU tests run the binning judge.
               "gpu/launch/binning.py": ("tests/test_gpu_binning.py",),
               "gpu/binning.py": ("tests/test_gpu_binning.py",),
               # The weighted launches: their GPU tests run the weighted judge.
               "gpu/launch/weighted.py": ("tests/test_gpu_weighted.py",)}


def host_tests_fail() -> bool:
    """Run HOST_TESTS here (from the repository root), stopping at the first failure."""
    import pytest

    missing = [test for test in HOST_TESTS if not Path(test).exists()]
    if missing:
        raise FileNotFoundError(f"host mutants are judged from the repository root: "
                                f"{', '.join(missing)} not found here")
    return pytest.main(["-x", "-q", "-p", "no:cacheprovider", *HOST_TESTS]) != 0


def rows_for(mutant: Mutant, cuda_dir: Path | None = None) -> list[str]:
    """The conformance rows that compile the mutant's file; for a generated
    mutant (its line known), only those whose entries reach that line
    (mutagen.entries_reaching) among the rows of the file itself, every row
    that only uses the file (its entries there are not listed). A host
    mutant: the rows its file launches (_host_rows)."""
    from histkit.gpu import compiler, registry

    if is_host(mutant):
        return [] if mutant.file in TEST_JUDGED else [k.row for k in _host_rows(mutant.file)]
    rows = registry.all_rows_reaching(mutant.file)
    if mutant.line:
        from histkit.conformance import mutagen

        text = (Path(cuda_dir or compiler.kernel_dir()) / mutant.file).read_text()
        reaching = mutagen.entries_reaching(text).get(mutant.line)
        if reaching:  # (none found: every row, rather than trust the parse)
            rows = [k for k in rows if k.source != mutant.file or set(k.entries) & reaching]
    return [k.row for k in rows]


def _judge_command(mutant: Mutant, cuda_dir: Path | None = None) -> list[str]:
    rows = rows_for(mutant, cuda_dir)
    if is_host(mutant):  # the judge, with the mutated module imported in its place
        if mutant.file in TEST_JUDGED:
            return [sys.executable, "-m", "histkit._mutant_loader", "pytest",
                    *TEST_JUDGED[mutant.file]]
        return [sys.executable, "-m", "histkit._mutant_loader", "judge", mutant.needs, *rows]
    if mutant.needs in SANITIZERS:
        return ["compute-sanitizer", "--tool", mutant.needs, "--report-api-errors", "no",
                "--error-exitcode", str(EXIT_CAUGHT), sys.executable, "-m",
                "histkit.conformance.sanitize", mutant.needs, *rows]
    return [sys.executable, "-m", "histkit.conformance.mutation", "judge", mutant.needs, *rows]


@dataclass
class Outcome:
    id: str
    file: str
    needs: str
    verdict: str  # caught | survived | broken
    how: str
    seconds: float


def _last_lines(text: str, count: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-count:])


def _run_judge(command: list[str], env: dict, timeout: float) -> tuple[int | None, str, str]:
    """Run a judge: (exit status, its output, ""), or, past timeout, (None,
    its output, where it was waiting): asked first (SIGUSR1: the judge's
    faulthandler prints every thread's stack), then killed. A judge that
    never answers shows in which call it waits (a driver call no bound
    reaches, a loop of the host's)."""
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout)
            return child.returncode, stdout + stderr, ""
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGUSR1)
            try:  # (a judge with its stacks printed goes on waiting: killed here)
                stdout, stderr = child.communicate(timeout=STACKS_WAIT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                stdout, stderr = child.communicate()
    return None, stdout + stderr, _innermost_frames(stderr)


def _main_thread_frames(stderr: str) -> list[str]:
    """The main thread's frames from a faulthandler dump, innermost first
    (none if there is no dump)."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", stderr)
    main = [b for b in blocks if "most recent call first" in b]
    if not main:
        return []
    return [line.strip() for line in main[-1].splitlines()[1:] if line.strip()]


def _innermost_frames(stderr: str, count: int = 4) -> str:
    """The main thread's innermost frames from a faulthandler dump ("" if none)."""
    return " <- ".join(_main_thread_frames(stderr)[:count])


def _busy_on_the_host(output: str) -> str:
    """What a judge past its time was doing, when the innermost histkit frame
    of its main thread (its stacks are in output) shows work of its own
    rather than a wait on the GPU: "compiling" (NVRTC, histkit.gpu.compiler)
    or "judging on the host" (an oracle or a check, outside histkit.gpu;
    NumPy frames inside them are skipped); "" when it may be a hang (the launch
    layer or the runtime, a driver call, or no histkit frame at all)."""
    for frame in _main_thread_frames(output):
        found = re.match(r'File "([^"]+)"', frame)
        path = Path(found.group(1)).as_posix() if found else ""
        if "/histkit/" not in path:
            continue
        if path.endswith("/histkit/gpu/compiler.py"):
            return "compiling"
        return "" if "/histkit/gpu/" in path else "judging on the host"
    return ""


def run_one(mutant: Mutant, cuda_dir: Path, timeout: float, env: dict) -> Outcome:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.id}-") as tmp:
        if is_host(mutant):
            mutated = apply(mutant, package_dir(), Path(tmp), copy=False)
            child_env = {**env, "HISTKIT_HOST_MUTANT": f"{host_module(mutant.file)}={mutated}",
                         "PYTHONUNBUFFERED": "1"}
        else:
            apply(mutant, cuda_dir, Path(tmp))
            child_env = {**env, "HISTKIT_CUDA_DIR": tmp, "PYTHONUNBUFFERED": "1"}
        returncode, output, where = _run_judge(_judge_command(mutant, cuda_dir), child_env,
                                               timeout)
    if returncode is None:
        busy = _busy_on_the_host(output)
        where = f"; it was waiting in: {where}" if where else ""
        if busy:
            # The judge was slow (a cold cache of many builds, a check of 2^31
            # keys, judges sharing the CPU), not waiting on the mutant's kernel.
            return Outcome(mutant.id, mutant.file, mutant.needs, "unjudged",
                           f"no verdict within {timeout:.0f} s: still {busy}, not "
                           f"taken for a hang (raise --timeout){where}",
                           time.perf_counter() - start)
        if mutant.needs == "full":
            # A judge past 2^31 keys (the oracles sort 2^31 keys on the host)
            # can outrun any fixed limit unmutated: no verdict, not a catch.
            return Outcome(mutant.id, mutant.file, mutant.needs, "unjudged",
                           f"no verdict within {timeout:.0f} s (a judge of the cases "
                           f"past 2^31: not taken for a hang){where}",
                           time.perf_counter() - start)
        if mutant.needs in SANITIZERS:
            # Instrumented kernels run orders of magnitude slower, and the
            # sanitize cases' waits are unbounded: running out of time is no
            # verdict, not a hang.
            return Outcome(mutant.id, mutant.file, mutant.needs, "unjudged",
                           f"no verdict within {timeout:.0f} s under compute-sanitizer "
                           f"{mutant.needs} (not taken for a hang){where}",
                           time.perf_counter() - start)
        return Outcome(mutant.id, mutant.file, mutant.needs, "caught",
                       f"hang: no verdict within {timeout:.0f} s{where}",
                       time.perf_counter() - start)
    if COMPILE_FAILED in output or returncode == EXIT_BROKEN:
        verdict, how = "broken", "does not compile: " + _last_lines(output, 3)
    elif returncode == EXIT_SURVIVED:
        verdict, how = "survived", "every case passed"
    elif returncode == EXIT_CAUGHT:
        verdict, how = "caught", _last_lines(output, 4)
    else:
        verdict, how = "caught", f"crashed (exit {returncode}): " + _last_lines(output, 4)
    return Outcome(mutant.id, mutant.file, mutant.needs, verdict, how,
                   time.perf_counter() - start)


def judge(needs: str, rows: list[str]) -> int:
    """In the mutant's process: the rows on the cases its `needs` names."""
    import faulthandler

    from rich.console import Console

    # Asked where it is (SIGUSR1, _run_judge), it prints every thread's stack.
    faulthandler.register(signal.SIGUSR1, all_threads=True)

    from histkit.conformance.cases import all_cases, huge_cases
    from histkit.conformance.runner import run_conformance
    from histkit.gpu import registry

    binning_rows = {k.row for k in registry.BINNING_KERNELS}
    if set(rows) & binning_rows and judge_binning(needs) == EXIT_CAUGHT:
        return EXIT_CAUGHT
    weighted_rows = {k.row for k in registry.WEIGHTED_KERNELS}
    if set(rows) & weighted_rows and judge_weighted() == EXIT_CAUGHT:
        return EXIT_CAUGHT
    rows = [row for row in rows if row not in binning_rows | weighted_rows]
    if not rows:
        return EXIT_SURVIVED
    cases = huge_cases() if needs == "full" else all_cases(quick=True)
    console = Console(width=200)
    report = run_conformance(console, cases=cases, rows=rows, json_path=None,
                             stop_at_first_fail=True)
    if any(COMPILE_FAILED in r.cell.detail for r in report.failures):
        return EXIT_BROKEN
    return EXIT_CAUGHT if report.failures else EXIT_SURVIVED


def judge_binning(needs: str) -> int:
    """The binning kernel's judge (histkit.conformance.binning) on the binning
    cases, stopping at the first FAIL (a compile error or a fault raises,
    which the harness reads as broken or caught from the exit)."""
    from histkit.conformance import binning

    return _first_fail(binning.judge, binning.all_cases(quick=needs != "full"))


def judge_weighted() -> int:
    """The weighted kernel's judge (histkit.conformance.weighted) on the
    weighted cases, stopping at the first FAIL."""
    from histkit.conformance import weighted

    return _first_fail(weighted.judge, weighted.all_cases())


def _first_fail(judge, cases) -> int:
    """EXIT_CAUGHT at the first case one of whose columns FAILs, printed."""
    from histkit.gpu.device import runtime

    for case in cases:
        failed = [r for r in judge(runtime(), cases=[case]) if r.status == "FAIL"]
        if failed:
            print(f"FAIL {failed[0].case} {failed[0].column}: {failed[0].detail}", flush=True)
            return EXIT_CAUGHT
    return EXIT_SURVIVED


def of_slips(mutants: list, slips: list[str]) -> list:
    """The generated mutants of the named slips (ValueError naming the known
    ones for a name no slip has)."""
    from histkit.conformance import mutagen

    unknown = sorted(set(slips) - mutagen.SLIP_NAMES)
    if unknown:
        raise ValueError(f"no slip is named {', '.join(unknown)}; the slips are "
                         f"{', '.join(sorted(mutagen.SLIP_NAMES))}")
    return [m for m in mutants if any(f"-{slip}-" in m.id for slip in slips)]


def run(table: Path, cuda_dir: Path, jobs: int, timeout: float, json_path: Path | None,
        only: list[str] | None, needs: list[str] | None, generated: bool = False,
        files: list[str] | None = None, sample: int | None = None, seed: int = 0,
        equivalent_table: Path | None = None, host: bool = False,
        judge_on: str | None = None, check_claims: bool = False,
        slips: list[str] | None = None) -> int:
    """Run the table's mutants (generated=True: mutagen's, host=True: mutagen's
    of the launch layer's Python; either optionally a seeded sample) and
    report; exit status 0 when every one that changes behaviour was caught
    (generated ones listed as equivalent are left out). judge_on ("quick" or
    "full"): judge every mutant selected on those cases, whatever it needs
    (how much the quick matrix alone catches of what needs the full one).
    check_claims: judge instead the generated mutants listed as seen only by a
    compute-sanitizer tool, each under that tool (claimed_by_sanitizers): a
    catch confirms the listing, a survivor says the claim is wrong.
    slips: generated mutants of these slips only (their names, as in the ids)."""
    generated = generated or host or check_claims or bool(slips)
    if generated:
        from histkit.conformance import mutagen

        made = (mutagen.generate_host(package_dir(), files) if host
                else mutagen.generate(cuda_dir, files))
        mutants = mutagen.sample(made, sample, seed)
        known = mutagen.equivalent(equivalent_table) if equivalent_table else {}
        gaps = mutagen.known_gaps(equivalent_table) if equivalent_table else {}
    else:
        mutants = load(table)
        known = gaps = {}
    if check_claims:
        mutants = claimed_by_sanitizers(mutants, equivalent_table)
        known = gaps = {}
    if slips:
        mutants = of_slips(mutants, slips)
    mutants = [m for m in mutants if (not only or m.id in only)
               and (not needs or m.needs in needs) and m.id not in known]
    if judge_on is not None:
        mutants = [replace(m, needs=judge_on) for m in mutants]
    env = dict(os.environ)
    # One compile cache for all: entries are keyed on the mutated source itself.
    env.setdefault("HISTKIT_CACHE_DIR", str(Path(tempfile.gettempdir()) / "histkit-mutants"))
    # Huge cases hold tens of GB each: those mutants run one at a time. The
    # files reaching most rows (the longest judges) start first.
    heavy = [m for m in mutants if m.needs == "full"]
    light = sorted((m for m in mutants if m.needs != "full"),
                   key=lambda m: -len(rows_for(m, cuda_dir)))
    outcomes: list[Outcome] = []
    # Each verdict also goes to <json>.progress.jsonl as it comes: a run cut off
    # by a time limit keeps what it judged.
    progress = open(json_path.with_suffix(".progress.jsonl"), "w") if json_path else None  # noqa: SIM115

    def report(outcome: Outcome) -> None:
        print(f"{outcome.verdict:8s} {outcome.id} ({outcome.needs}, {outcome.seconds:.0f} s)",
              flush=True)
        outcomes.append(outcome)
        if progress:
            progress.write(json.dumps(asdict(outcome)) + "\n")
            progress.flush()

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for outcome in pool.map(lambda m: run_one(m, cuda_dir, timeout, env), light):
            report(outcome)
    for mutant in heavy:
        report(run_one(mutant, cuda_dir, timeout * 3, env))
    if progress:
        progress.close()
    caught = sum(o.verdict == "caught" for o in outcomes)
    broken = [o.id for o in outcomes if o.verdict == "broken"]
    survived = [o.id for o in outcomes if o.verdict == "survived"]
    unjudged = [o.id for o in outcomes if o.verdict == "unjudged"]
    judged = len(outcomes) - (len(broken) if generated else 0) - len(unjudged)
    rate = caught / judged if judged else 0.0
    plants = {m.id: m.plants for m in mutants}
    for o in outcomes:
        if o.verdict == "survived" and check_claims:
            print(f"  wrong listing: {o.id} is listed as seen by {o.needs}, which saw "
                  f"nothing: {plants[o.id]}")
        elif o.verdict == "survived" or (o.verdict == "broken" and not generated):
            print(f"  {o.verdict}: {o.id}: {plants[o.id] if generated else o.how}")
    for mutant_id in unjudged:
        print(f"  unjudged (its judge outran the time limit): {mutant_id}")
    left_out = (f" (not counted); {len(known) - len(gaps)} known equivalent and "
                f"{len(gaps)} known gaps left out" if generated else "")
    if check_claims:
        left_out = " (not counted); each a listing's claim: caught confirms it"
    print(f"mutants: {caught}/{judged} caught ({rate:.0%}); {len(survived)} survived, "
          f"{len(broken)} broken, {len(unjudged)} unjudged" + left_out)
    for mutant_id, why in gaps.items():
        print(f"  known gap (not caught, not run): {mutant_id}: {why}")
    if json_path:
        json_path.write_text(json.dumps({"caught": caught, "total": judged,
                                         "rate": rate, "survived": survived, "broken": broken,
                                         "unjudged": unjudged,
                                         "generated": generated,
                                         "mutants": {m.id: asdict(m) for m in mutants}
                                         if generated else None,
                                         "outcomes": [asdict(o) for o in outcomes]}, indent=1))
        print(f"wrote {json_path}")
    return 0 if caught == judged else 1


def claimed_by_sanitizers(mutants: list[Mutant], equivalent_table: Path | None) -> list[Mutant]:
    """The mutants that equivalent_table lists as seen only by a compute-sanitizer
    tool (seen_by memcheck, racecheck or synccheck), each set to need that tool.

    A listing is a claim about the suite: "`nox -s sanitize` sees this slip".
    Left unjudged, a wrong claim hides a gap as surely as a missing case.
    """
    from histkit.conformance import mutagen

    tools = {e["id"]: e["seen_by"] for e in mutagen.listed(equivalent_table)
             if e["seen_by"] in SANITIZERS} if equivalent_table else {}
    return [replace(m, needs=tools[m.id]) for m in mutants if m.id in tools]


def sift_command(cuda_dir: Path, files: list[str] | None, only: list[str] | None, jobs: int,
                 equivalent_table: Path, write: bool) -> int:
    """Sift the generated mutants not yet listed as equivalent (sift.py)."""
    from histkit.conformance import mutagen, sift

    known = mutagen.equivalent(equivalent_table)
    mutants = [m for m in mutagen.generate(cuda_dir, files)
               if (not only or m.id in only) and m.id not in known]
    same = sift.sift(mutants, cuda_dir, jobs)
    if write:
        print(f"listed {sift.list_as_equivalent(equivalent_table, same)} in {equivalent_table}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m histkit.conformance.mutation",
                                     description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    every = commands.add_parser("run", help="run every mutant of the table")
    every.add_argument("--table", type=Path, default=Path("mutants/mutants.toml"))
    every.add_argument("--cuda-dir", type=Path, default=Path("cuda"))
    every.add_argument("--jobs", type=int, default=6, help="mutants run at once (default 6)")
    every.add_argument("--timeout", type=float, default=300.0,
                       help="seconds before a mutant counts as hung (default 300)")
    every.add_argument("--json", type=Path, default=Path("mutants-results.json"))
    every.add_argument("--only", nargs="*", help="run these mutant ids only")
    every.add_argument("--needs", nargs="*", choices=NEEDS, help="run mutants of these needs")
    every.add_argument("--slips", nargs="+", metavar="SLIP",
                       help="run the generated mutants of these slips only (e.g. "
                            "ternary-swapped; implies --generated)")
    every.add_argument("--generated", action="store_true",
                       help="run the generated mutants (mutagen) instead of the table's")
    every.add_argument("--host", action="store_true",
                       help="run the generated mutants of the launch layer's Python "
                            "(mutagen.HOST_FILES) instead")
    every.add_argument("--files", nargs="*",
                       help="generated: mutate these cuda/ files (--host: package files) only")
    every.add_argument("--sample", type=int, help="generated: a seeded sample of this many")
    every.add_argument("--seed", type=int, default=0, help="generated: the sample's seed")
    every.add_argument("--equivalent", type=Path, default=Path("mutants/equivalent.toml"),
                       help="generated mutants known to change nothing observable (left out)")
    every.add_argument("--judge-on", choices=("quick", "full"),
                       help="judge every selected mutant on these cases, whatever it needs")
    every.add_argument("--check-claims", action="store_true",
                       help="judge the generated mutants that --equivalent lists as seen "
                            "only by memcheck, racecheck or synccheck, each under that "
                            "compute-sanitizer tool: a survivor is a wrong listing")
    sifter = commands.add_parser(
        "sift", help="find the generated mutants that compile to the unmutated machine "
                     "code (NVRTC, no GPU)")
    sifter.add_argument("--cuda-dir", type=Path, default=Path("cuda"))
    sifter.add_argument("--files", nargs="*", help="mutate these cuda/ files only")
    sifter.add_argument("--only", nargs="*", help="sift these mutant ids only")
    sifter.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    sifter.add_argument("--equivalent", type=Path, default=Path("mutants/equivalent.toml"),
                        help="skip the ids listed here; --write appends the same-code ones")
    sifter.add_argument("--write", action="store_true",
                        help="list every same-code mutant in --equivalent")
    one = commands.add_parser("judge", help="(internal) judge the mutated sources once")
    one.add_argument("needs", choices=("quick", "full"))
    one.add_argument("rows", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "judge":
        return judge(args.needs, args.rows)
    if args.files:  # a misspelt file is a usage error, before any judge
        from histkit.conformance import mutagen

        try:
            mutagen.check_files(args.files, host=getattr(args, "host", False))
        except ValueError as error:
            parser.error(str(error))
    if args.command == "sift":
        return sift_command(args.cuda_dir, args.files, args.only, args.jobs, args.equivalent,
                            args.write)
    if args.slips:
        try:
            of_slips([], args.slips)  # a misspelt slip is a usage error, before any judge
        except ValueError as error:
            parser.error(str(error))
    return run(args.table, args.cuda_dir, args.jobs, args.timeout, args.json, args.only,
               args.needs, args.generated, args.files, args.sample, args.seed, args.equivalent,
               args.host, args.judge_on, args.check_claims, args.slips)


if __name__ == "__main__":
    sys.exit(main())
