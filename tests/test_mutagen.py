"""The generated mutants (histkit.conformance.mutagen): every one plants its
slip on its own line, ids survive unrelated edits, and the list of known
equivalent ones names only mutants that exist. No GPU needed."""

import dataclasses
import json
import sys
import time
import tomllib
import types
from pathlib import Path

import pytest
from conftest import needs_nvrtc

from histkit.conformance import mutagen, mutation
from histkit.conformance.mutant import plant, plant_at_line

ROOT = Path(__file__).resolve().parents[1]
GENERATED = mutagen.generate(ROOT / "cuda")
HOST = mutagen.generate_host(mutation.package_dir())
EQUIVALENT = ROOT / "mutants" / "equivalent.toml"


def test_every_kernel_file_with_a_conformance_row_gets_mutants_with_unique_ids():
    assert len(GENERATED) > 300
    assert len({m.id for m in GENERATED}) == len(GENERATED)
    for name in ("counting_sort.cu", "fast_histogram.cu", "partitioned_histogram.cu",
                 "exclusive_scan.cu", "naive_histogram.cu", "privatized_histogram.cu"):
        assert any(m.file == name for m in GENERATED), name


def test_each_generated_mutant_changes_exactly_its_line(tmp_path):
    for m in GENERATED:
        original = (ROOT / "cuda" / m.file).read_text().split("\n")
        planted = (mutation.apply(m, ROOT / "cuda", tmp_path / m.id) / m.file).read_text()
        pairs = zip(original, planted.split("\n"), strict=True)
        changed = [i for i, (a, b) in enumerate(pairs) if a != b]
        assert changed == [m.line - 1], m.id


def test_ids_name_the_lines_text_so_moving_lines_keeps_them():
    text = (ROOT / "cuda" / "exclusive_scan.cu").read_text()
    moved = mutagen.mutants_of("exclusive_scan.cu", "\n\n// a new comment\n" + text)
    assert [m.id for m in moved] == [m.id for m in mutagen.mutants_of("exclusive_scan.cu", text)]
    assert [m.line for m in moved][0] == [m.line for m in GENERATED
                                          if m.file == "exclusive_scan.cu"][0] + 3


def test_a_line_of_the_same_text_added_above_does_not_take_a_listed_id():
    # ids must not count equal lines in file order: a __syncwarp() added above
    # another would take its id (and its listing as an equivalent)
    text = "    a[i] = 1;\n    __syncwarp();\n    b[i] = 2;\n    __syncwarp();\n"
    grown = "    c[i] = 3;\n    __syncwarp();\n" + text
    dropped = {m.find.strip() + f"@{m.line}": m.id
               for m in mutagen.mutants_of("x.cu", text) if "barrier" in m.id}
    grown_ids = {m.id for m in mutagen.mutants_of("x.cu", grown) if "barrier" in m.id}
    assert len(dropped) == 2 and set(dropped.values()) < grown_ids
    assert len(grown_ids) == 3


def test_slips_leave_templates_comments_and_preprocessor_lines_alone():
    text = ("#define LIMIT (A < B)\n"
            "// if (i < n) out[i] = 0;\n"
            "x = load_global<kThroughL2>(p);\n"
            "if (i < n) out[i] = v;  // keep i < n\n")
    found = mutagen.mutants_of("x.cu", text)
    assert {m.line for m in found} == {3, 4}
    assert [m.replace for m in found if m.line == 3] == [";"]  # the store; not its template
    replaced = {m.replace for m in found if m.line == 4}
    assert "if (i <= n) out[i] = v;  // keep i < n" in replaced
    assert ";  // keep i < n" in replaced  # the store dropped, its comment kept


def test_a_store_through_a_pointer_is_mutated_and_a_block_comments_lines_are_not():
    # A line opening with '*' was once taken for a block comment's inner line,
    # which left auto_choice's `*choice = sectors * 1000 > ...` unmutated.
    text = ("/* the rule:\n"
            " * choice = a * 1000 > b;\n"
            " */\n"
            "*choice = a * 1000 > b ? 2 : 0;\n")
    found = mutagen.mutants_of("x.cu", text)
    assert {m.line for m in found} == {4}
    replaced = {m.replace for m in found}
    assert "*choice = a * 1000 >= b ? 2 : 0;" in replaced
    assert "*choice = a + 1000 > b ? 2 : 0;" in replaced
    assert ";" in replaced  # the store dropped


def test_steps_left_out_are_mutants_increments_atomics_guards_and_shuffles():
    text = ("    ++issued;\n"
            "    if (held) atomicAdd(&hist[b], held);\n"
            "    const unsigned passed = ++barriers[0];\n"
            "    if (pos[mid] <= v) lo = mid; else hi = mid - 1;\n"
            "    u64 up = __shfl_up_sync(0xffffffffu, value, d);\n"
            "    if (threadIdx.x == 0) last = atomicAdd(done, 1ULL) == 3;\n")
    replaced = {(m.line, m.replace) for m in mutagen.mutants_of("x.cu", text)}
    assert (1, "    ;") in replaced  # the increment dropped
    assert (2, "    if (held) ;") in replaced  # the atomic dropped, its guard kept
    assert (2, "    atomicAdd(&hist[b], held);") in replaced  # the guard dropped
    assert (5, "    u64 up = __shfl_down_sync(0xffffffffu, value, d);") in replaced
    # the test is the whole parenthesised condition, not up to the last ") "
    assert (6, "    last = atomicAdd(done, 1ULL) == 3;") in replaced
    # an increment whose value is used, and an if with an else, keep them
    assert not any(line == 3 and "++" not in mutated for line, mutated in replaced)
    assert not any(line == 4 and mutated.lstrip().startswith("lo = mid")
                   for line, mutated in replaced)


def test_a_conditionals_branches_are_swapped_whole():
    text = ("    held[k] = at < n ? keys[at] : (hk_key)0;\n"
            "    unsigned* word = &shared[high ? b - low_bins : b];\n"
            "    my_hi = min(pos + len, b) > pos ? min(pos + len, b) - pos : 0;\n")
    swapped = {m.line: m.replace for m in mutagen.mutants_of("x.cu", text)
               if "ternary" in m.id}
    assert swapped == {1: "    held[k] = at < n ? (hk_key)0 : keys[at];",
                       2: "    unsigned* word = &shared[high ? b : b - low_bins];",
                       3: "    my_hi = min(pos + len, b) > pos ? 0 : min(pos + len, b) - pos;"}


def test_lane_and_warp_indices_are_confused_shuffles_read_the_neighbour_and_volatile_drops():
    text = ("    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
            "    before = __shfl_sync(0xffffffffu, before, leader);\n"
            "    volatile u64* racy = hist;\n"
            "    asm volatile(\"membar.gl;\" ::: \"memory\");\n"
            "    const unsigned bits = v & 315;\n")
    by_slip: dict[str, set] = {}
    for m in mutagen.mutants_of("x.cu", text):
        by_slip.setdefault(m.id.split("-", 2)[2].rsplit("-", 1)[0], set()).add((m.line, m.replace))
    assert by_slip["lane-made-warp-index"] == {
        (1, "    const unsigned lane = threadIdx.x >> 5, warp = threadIdx.x >> 5;")}
    assert by_slip["warp-made-lane-index"] == {
        (1, "    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x & 31;")}
    assert by_slip["shuffle-source-moved"] == {
        (2, "    before = __shfl_sync(0xffffffffu, before, leader + 1);")}
    # an inline asm's volatile is never dropped (asm lines are not mutated)
    assert by_slip["volatile-dropped"] == {(3, "    u64* racy = hist;")}


def test_a_line_that_moved_since_generation_is_refused(tmp_path):
    m = next(m for m in GENERATED if m.file == "exclusive_scan.cu")
    stale = mutation.Mutant(**{**m.__dict__, "line": m.line + 1})
    with pytest.raises(ValueError, match="regenerate"):
        mutation.apply(stale, ROOT / "cuda", tmp_path)


def test_known_equivalent_mutants_exist_and_say_why_and_what_would_see_them():
    entries = tomllib.loads(EQUIVALENT.read_text())["equivalent"]
    ids = {m.id for m in GENERATED + HOST}
    assert len({e["id"] for e in entries}) == len(entries)
    for entry in entries:
        assert entry["id"] in ids, f"{entry['id']}: no such generated mutant (regenerate?)"
        assert entry["seen_by"] in mutagen.SEEN_BY and len(entry["why"]) > 20
    assert set(mutagen.equivalent(EQUIVALENT)) == {e["id"] for e in entries}


def test_a_sample_is_seeded_and_in_file_order():
    one, two = mutagen.sample(GENERATED, 40, seed=5), mutagen.sample(GENERATED, 40, seed=5)
    assert one == two and len(one) == 40
    assert one == sorted(one, key=lambda m: (m.file, m.line))
    assert mutagen.sample(GENERATED, None) == GENERATED


def test_units_and_the_entries_reaching_each_line_follow_calls_templates_and_structs():
    text = ("struct Adder { int n; };\n"                                   # 1
            "__device__ int helper(int x) {\n"                             # 2
            "    return x + 1;\n"                                         # 3
            "}\n"                                                          # 4
            'extern "C" __global__ void __launch_bounds__(256, 2)\n'      # 5
            "first(int* out) {\n"                                          # 6
            "    Adder a{helper(1)};  // a struct and a helper\n"          # 7
            "    out[0] = a.n;\n"                                         # 8
            "}\n"                                                          # 9
            'extern "C" __global__ void second(int* out) { out[0] = 2; }\n'  # 10
            "int declared_only;\n")                                        # 11
    units = {u.name: u for u in mutagen.units_of(text)}
    assert set(units) == {"Adder", "helper", "first", "second"}
    assert (units["first"].first, units["first"].last, units["first"].entry) == (5, 9, True)
    # each unit begins on its own header's line, after a `;` or `}` that ends the last
    assert [(u.name, u.first, u.last, u.entry) for u in mutagen.units_of(text)] == [
        ("Adder", 1, 1, False), ("helper", 2, 4, False), ("first", 5, 9, True),
        ("second", 10, 10, True)]
    reach = mutagen.entries_reaching(text)
    assert reach[3] == {"first"} and reach[1] == {"first"} and reach[10] == {"second"}
    assert 11 not in reach  # outside every unit: every entry may see it


def test_a_generated_mutant_runs_only_the_rows_whose_entries_reach_its_line():
    text = (ROOT / "cuda" / "counting_sort.cu").read_text().split("\n")
    def mutant_at(fragment):
        return next(m for m in GENERATED if m.file == "counting_sort.cu" and fragment in m.find)

    resident = mutant_at("if (departed == (u64)(passed + 1) * gridDim.x)")
    assert set(mutation.rows_for(resident)) == {"sort-stable-resident", "sort-stable-auto"}
    cursor = mutant_at("out_index[pos] = (hk_index)i;")
    assert mutation.rows_for(cursor) == ["sort-atomic-cursor"]
    shared = mutant_at("stage.warp_counts[warp][digit] = (unsigned short)")
    assert "sort-atomic-cursor" not in mutation.rows_for(shared)
    assert {"sort-stable", "sort-stable-resident", "radix-sort"} <= set(mutation.rows_for(shared))
    assert text  # every row using a file it does not own keeps every mutant of that file
    scan = next(m for m in GENERATED if m.file == "exclusive_scan.cu")
    assert set(mutation.rows_for(scan)) == {"partitioned", "auto", "exclusive-scan",
                                            "sort-atomic-cursor"}


def test_a_generated_run_leaves_out_known_equivalents_and_counts_broken_apart(tmp_path,
                                                                             monkeypatch):
    # the run's bookkeeping, with each judge replaced (no GPU): one survivor,
    # one broken, the rest caught
    sample = mutagen.sample(GENERATED, 12, seed=4)
    listed = tmp_path / "equivalent.toml"
    listed.write_text(f'[[equivalent]]\nid = "{sample[0].id}"\nseen_by = "nothing"\n'
                      f'why = "listed for the test: changes nothing"\n')
    verdicts = {sample[1].id: "survived", sample[2].id: "broken"}

    def judged(mutant, cuda_dir, timeout, env):
        return mutation.Outcome(mutant.id, mutant.file, mutant.needs,
                                verdicts.get(mutant.id, "caught"), "", 0.0)

    monkeypatch.setattr(mutation, "run_one", judged)
    out = tmp_path / "generated.json"
    status = mutation.run(Path("unused.toml"), ROOT / "cuda", 2, 1.0, out, None, None,
                          generated=True, sample=12, seed=4, equivalent_table=listed)
    result = json.loads(out.read_text())
    assert status == 1 and result["generated"] and result["survived"] == [sample[1].id]
    assert result["broken"] == [sample[2].id] and result["total"] == 10  # 12 - listed - broken
    assert result["caught"] == 9 and sample[0].id not in result["mutants"]
    progress = out.with_suffix(".progress.jsonl").read_text().splitlines()
    assert len(progress) == 11 and {json.loads(line)["id"] for line in progress} == {
        m.id for m in sample[1:]}


def test_a_run_of_named_slips_judges_their_generated_mutants_only(tmp_path, monkeypatch):
    judged_ids = []

    def judged(mutant, cuda_dir, timeout, env):
        judged_ids.append(mutant.id)
        return mutation.Outcome(mutant.id, mutant.file, mutant.needs, "caught", "", 0.0)

    monkeypatch.setattr(mutation, "run_one", judged)
    empty = tmp_path / "equivalent.toml"
    empty.write_text("")
    status = mutation.run(Path("unused.toml"), ROOT / "cuda", 2, 1.0, tmp_path / "out.json",
                          None, None, equivalent_table=empty,
                          slips=["ternary-swapped", "shuffle-up-made-down"])
    want = {m.id for m in GENERATED
            if "-ternary-swapped-" in m.id or "-shuffle-up-made-down-" in m.id}
    assert status == 0 and want and sorted(judged_ids) == sorted(want)


def test_a_misspelt_slip_is_a_usage_error_that_names_the_slips(capsys):
    with pytest.raises(SystemExit) as stopped:
        mutation.main(["run", "--slips", "ternary-swaped"])
    assert stopped.value.code == 2
    assert "no slip is named ternary-swaped" in capsys.readouterr().err


def test_judge_on_quick_judges_full_mutants_on_the_quick_matrix(tmp_path, monkeypatch):
    # how much of what needs the full matrix the quick one catches alone (its
    # case past 2^31 keys is the histograms'): the run hands every mutant over
    # as a quick one, and a quick judge past its time is a hang, as for any
    narrowed = [m for m in GENERATED if "-index-narrowed-" in m.id][:3]
    seen = []

    def judged(mutant, cuda_dir, timeout, env):
        seen.append((mutant.id, mutant.needs))
        return mutation.Outcome(mutant.id, mutant.file, mutant.needs, "caught", "", 0.0)

    monkeypatch.setattr(mutation, "run_one", judged)
    status = mutation.run(Path("unused.toml"), ROOT / "cuda", 1, 1.0, tmp_path / "r.json",
                          [m.id for m in narrowed], None, generated=True, judge_on="quick")
    assert status == 0 and sorted(seen) == sorted((m.id, "quick") for m in narrowed)


# A judge that waits forever, in a function of its own, asked for its stacks as
# mutation.judge is (faulthandler on SIGUSR1).
WAITS_FOREVER = [sys.executable, "-c",
                 "import faulthandler, signal, time\n"
                 "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
                 "def waits_for_the_gpu():\n    time.sleep(60)\n"
                 "waits_for_the_gpu()\n"]


@pytest.mark.parametrize("needs, verdict", [("quick", "caught"), ("full", "unjudged")])
def test_a_judge_past_its_time_is_a_hang_only_for_the_quick_matrix(needs, verdict, monkeypatch):
    # the quick matrix's judges end in seconds: past the limit a kernel hangs;
    # a judge of the 2^31-key cases can outrun the limit unmutated, so there
    # running out of time is no verdict at all, never a catch. Either way the
    # outcome says where the judge was waiting.
    monkeypatch.setattr(mutation, "_judge_command", lambda mutant, cuda_dir=None: WAITS_FOREVER)
    mutant = dataclasses.replace(GENERATED[0], needs=needs)
    start = time.perf_counter()
    outcome = mutation.run_one(mutant, ROOT / "cuda", 1.0, {})
    assert outcome.verdict == verdict and "within 1 s" in outcome.how
    assert "waiting in: " in outcome.how and "waits_for_the_gpu" in outcome.how, outcome.how
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize("module, busy", [("gpu/compiler.py", "compiling"),
                                          ("conformance/checks.py", "judging on the host")])
def test_a_judge_past_its_time_in_its_own_work_is_unjudged_not_a_hang(module, busy, tmp_path,
                                                                      monkeypatch):
    # a cold compile of many builds, or a host check of 2^31 keys beside other
    # judges, can outrun the limit whatever the mutant: no verdict, never a
    # catch (a kernel that never ends is a wait in histkit.gpu: a hang)
    script = tmp_path / "histkit" / module
    script.parent.mkdir(parents=True)
    script.write_text("import faulthandler, signal, time\n"
                      "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
                      "def slow_work():\n    time.sleep(60)\n"
                      "slow_work()\n")
    monkeypatch.setattr(mutation, "_judge_command",
                        lambda mutant, cuda_dir=None: [sys.executable, str(script)])
    quick = dataclasses.replace(GENERATED[0], needs="quick")
    outcome = mutation.run_one(quick, ROOT / "cuda", 1.0, {})
    assert outcome.verdict == "unjudged", outcome.how
    assert f"still {busy}" in outcome.how and "slow_work" in outcome.how, outcome.how


@pytest.mark.parametrize("histkit_frame, busy", [
    ("histkit/conformance/checks.py", "judging on the host"),
    ("histkit/gpu/compiler.py", "compiling"),
    ("histkit/gpu/device/waiting.py", ""),  # the runtime: may be waiting on a kernel
])
def test_what_a_judge_was_doing_is_read_from_its_innermost_histkit_frame(histkit_frame, busy):
    # NumPy's own Python frames inside a check say nothing either way
    stacks = ("Current thread 0x00007f (most recent call first):\n"
              '  File "/usr/lib/site-packages/numpy/_core/numeric.py", line 9 in array_equal\n'
              f'  File "/opt/venv/site-packages/{histkit_frame}", line 364 in some_step\n'
              '  File "/opt/venv/site-packages/histkit/conformance/runner.py", line 331 in judge\n')
    assert mutation._busy_on_the_host(stacks) == busy
    assert mutation._busy_on_the_host("") == ""


def test_an_index_is_narrowed_where_the_slip_still_compiles_and_nowhere_else():
    # An int constant beside i64s in min/max matches no single overload, so a
    # constant declared alone keeps its type and takes its value through an
    # int (the same wrapped number); variables and loop indices are narrowed
    # themselves (they wrap as they change); the typedef, and a cast that is
    # min's or max's first argument, are not mutated: no one can ship those.
    text = "\n".join((
        "typedef long long i64;",
        "const i64 first = max(a, b * c);",
        "i64 moving = start;",
        "for (i64 i = 0; i < n; ++i) {",
        "const i64 tile = blockIdx.x, base = tile * 4;",
        "const int t = (int)min((i64)K, n - base);",
        "}"))
    narrowed = {m.line: m.replace for m in mutagen.mutants_of("x.cu", text)
                if "-index-narrowed-" in m.id}
    assert narrowed == {2: "const i64 first = (int)(max(a, b * c));",
                        3: "int moving = start;",
                        4: "for (int i = 0; i < n; ++i) {",
                        5: "const int tile = blockIdx.x, base = tile * 4;"}


def test_index_narrowed_mutants_are_judged_past_2_31():
    narrowed = [m for m in GENERATED if "-index-narrowed-" in m.id]
    assert narrowed and all(m.needs == "full" for m in narrowed)
    assert all(m.needs == "quick" for m in GENERATED if m not in narrowed)
    assert all("int" in m.replace and "i64" in m.find for m in narrowed)


@pytest.mark.large  # NVRTC compiles of a sample: tens of seconds
@needs_nvrtc
def test_a_sample_of_generated_mutants_compiles_with_nvrtc(tmp_path, monkeypatch):
    # broken mutants test nothing: the generator's slips must stay valid CUDA
    # (each new kind in full, the rest by a seeded sample)
    from histkit.gpu import compiler, contract

    newer = ("atomic-made-plain", "return-dropped", "continue-dropped", "break-dropped")
    chosen = [m for m in GENERATED if any(f"-{kind}-" in m.id for kind in newer)]
    chosen += mutagen.sample([m for m in GENERATED if m not in chosen], 12, seed=7)
    monkeypatch.setenv("HISTKIT_CACHE_DIR", str(tmp_path / "cache"))
    for m in chosen:
        copy = mutation.apply(m, ROOT / "cuda", tmp_path / m.id)
        monkeypatch.setenv("HISTKIT_CUDA_DIR", str(copy))
        compiler.kernel_dir.cache_clear()
        try:
            source = m.file if m.file.endswith(".cu") else "atomic_histogram.cu"
            defines = contract.defines_for(source, {"KEY_T": "int", **_fullest_build(source)})
            assert compiler.compile_cubin(source, defines, "sm_90")[:4] == b"\x7fELF", m.id
        finally:
            compiler.kernel_dir.cache_clear()


def _fullest_build(source: str) -> dict:
    from histkit.gpu import registry

    rows = [k for k in registry.KERNELS if k.source == source]
    return rows[-1].builds[-1] if rows else {}


# --- host mutants: the launch layer's Python -------------------------------------


def test_every_launcher_module_is_a_host_mutant_file():
    # a new launch module must be mutated like the others (rank.py came late)
    launch = mutation.package_dir() / "gpu" / "launch"
    modules = {f"gpu/launch/{p.name}" for p in launch.glob("*.py") if p.name != "__init__.py"}
    assert modules <= set(mutagen.HOST_FILES)


def test_every_launch_layer_file_gets_host_mutants_with_unique_ids_apart_from_cuda_ones():
    assert {m.file for m in HOST} == set(mutagen.HOST_FILES)
    assert len({m.id for m in HOST}) == len(HOST)
    assert all(m.id.startswith("gen-host-") for m in HOST)
    assert not {m.id for m in HOST} & {m.id for m in GENERATED}


def test_each_host_mutant_changes_one_code_line_and_stays_python(tmp_path):
    for m in HOST:
        original = (mutation.package_dir() / m.file).read_text()
        path = mutation.apply(m, mutation.package_dir(), tmp_path, copy=False)
        planted = path.read_text()
        pairs = zip(original.split("\n"), planted.split("\n"), strict=True)
        assert [i for i, (a, b) in enumerate(pairs) if a != b] == [m.line - 1], m.id
        compile(planted, m.file, "exec")  # a slip that breaks the syntax tests nothing
        assert m.line in mutagen.python_code_lines(original), m.id


def test_host_slips_leave_docstrings_comments_and_string_literals_alone():
    text = ('"""a < b in a docstring"""\n'
            'x = f(a < b)  # c < d\n'
            'y = "e < f" if g > 1 else h\n'
            '# i < j\n')
    planted = {(m.line, m.replace) for m in mutagen.python_mutants_of("t.py", text)}
    assert (2, "x = f(a <= b)  # c < d") in planted
    assert (3, 'y = "e < f" if g >= 1 else h') in planted
    assert all(line in (2, 3) for line, _ in planted)
    assert not any('"e <= f"' in replace or "c <= d" in replace for _, replace in planted)


def test_a_launcher_modules_mutants_judge_only_the_rows_that_launch_its_kernels():
    from histkit.gpu import registry

    def rows(file):
        return set(mutation.rows_for(next(m for m in HOST if m.file == file)))

    every = {k.row for k in registry.KERNELS}
    assert rows("gpu/policy.py") == every
    assert rows("gpu/launch/resident.py") == {k.row for k in registry.rows_reaching(
        "counting_sort.cu")}
    assert "exclusive-scan" in rows("gpu/launch/scan.py")
    assert "sort-atomic-cursor" in rows("gpu/launch/scan.py")  # the cursor sort scans
    assert "fast" not in rows("gpu/launch/sort.py")


def test_a_host_mutant_is_imported_in_place_of_its_module_by_every_importer(tmp_path):
    import os
    import subprocess

    m = next(m for m in HOST if m.file == "gpu/policy.py")
    path = mutation.apply(m, mutation.package_dir(), tmp_path, copy=False)
    code = ("import histkit._mutant_loader as loader, os, sys\n"
            "loader.install(os.environ['HISTKIT_HOST_MUTANT'])\n"
            "from histkit.gpu import registry\n"
            "from histkit.gpu.launch import histogram\n"
            "print(registry.policy.__file__, histkit_policy := sys.modules['histkit.gpu.policy'],"
            " histogram.fast_layout.__code__.co_filename)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "HISTKIT_HOST_MUTANT":
                               f"{mutation.host_module(m.file)}={path}"})
    assert done.returncode == 0, done.stderr
    printed = done.stdout.split()
    assert printed[0] == str(path) and printed[-1] == str(path)


def test_a_host_mutant_is_what_tests_import_though_pytest_rewrites_histkits_modules(tmp_path):
    # histkit is a pytest plugin: pytest's assertion-rewriting import hook,
    # first on the path, loads an installed (non-editable) histkit module
    # from its own file. The judge imports the mutant before any test runs.
    import os
    import subprocess

    module = "histkit.conformance.report"  # imported by no judge before its tests
    mutant = tmp_path / "report.py"
    mutant.write_text((mutation.package_dir() / "conformance/report.py").read_text()
                      + "\nMUTATED = True\n")
    test = tmp_path / "test_sees_the_mutant.py"
    test.write_text("from histkit.conformance import report\n\n\n"
                    "def test_it():\n    assert report.MUTATED\n")
    code = ("import os, sys, pytest\n"
            "import histkit._mutant_loader as loader\n"
            "loader.import_mutant(os.environ['HISTKIT_HOST_MUTANT'])\n"
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', sys.argv[1]]))\n")
    done = subprocess.run([sys.executable, "-c", code, str(test)], capture_output=True,
                          text=True, cwd=tmp_path,
                          env={**os.environ, "HISTKIT_HOST_MUTANT": f"{module}={mutant}"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_public_calls_mutants_are_judged_by_the_tests_that_call_them_not_by_rows():
    m = next(m for m in HOST if m.file == "gpu/api.py")
    assert mutation.rows_for(m) == []
    command = mutation._judge_command(m)
    assert command[2:4] == ["histkit._mutant_loader", "pytest"]
    assert command[4:] == list(mutation.TEST_JUDGED["gpu/api.py"])
    assert "tests/test_gpu.py" in command


def test_check_claims_judges_sanitizer_listings_under_their_tool_and_reports_a_wrong_one(
        tmp_path, monkeypatch, capsys):
    # a listing "seen_by = racecheck" says the sanitize session sees the slip;
    # --check-claims judges exactly those listings, each under its tool, and a
    # survivor is reported as a wrong listing (exit 1), not left out
    picked = mutagen.sample(GENERATED, 3, seed=5)
    listed = tmp_path / "equivalent.toml"
    listed.write_text("".join(
        f'[[equivalent]]\nid = "{m.id}"\nseen_by = "{seen}"\nwhy = "for the test"\n\n'
        for m, seen in zip(picked, ("racecheck", "memcheck", "nothing"), strict=True)))
    seen = []

    def judged(mutant, cuda_dir, timeout, env):
        seen.append((mutant.id, mutant.needs, mutation._judge_command(mutant)[:3]))
        verdict = "survived" if mutant.needs == "memcheck" else "caught"
        return mutation.Outcome(mutant.id, mutant.file, mutant.needs, verdict, "", 0.0)

    monkeypatch.setattr(mutation, "run_one", judged)
    out = tmp_path / "claims.json"
    status = mutation.run(Path("unused.toml"), ROOT / "cuda", 1, 1.0, out, None, None,
                          equivalent_table=listed, check_claims=True)
    assert sorted(seen) == sorted([
        (picked[0].id, "racecheck", ["compute-sanitizer", "--tool", "racecheck"]),
        (picked[1].id, "memcheck", ["compute-sanitizer", "--tool", "memcheck"])])
    result = json.loads(out.read_text())
    assert status == 1 and result["survived"] == [picked[1].id] and result["caught"] == 1
    out = capsys.readouterr().out
    assert f"wrong listing: {picked[1].id} is listed as seen by memcheck" in out
    assert out.count("wrong listing") == 1  # the confirmed one is not listed


@pytest.mark.parametrize("tool", mutation.SANITIZERS)
def test_a_sanitizer_judge_past_its_time_is_unjudged_not_a_hang(tool, monkeypatch):
    # instrumented kernels run orders of magnitude slower and the sanitize
    # cases wait without bound: no verdict, never a catch
    monkeypatch.setattr(mutation, "_judge_command", lambda mutant, cuda_dir=None: WAITS_FOREVER)
    outcome = mutation.run_one(dataclasses.replace(GENERATED[0], needs=tool), ROOT / "cuda",
                               1.0, {})
    assert outcome.verdict == "unjudged" and f"compute-sanitizer {tool}" in outcome.how


def test_a_table_mutant_needing_an_unknown_judge_is_refused(tmp_path):
    table = tmp_path / "mutants.toml"
    entry = ('[[mutant]]\nid = "m"\nfile = "a.cu"\nfind = "a"\nreplace = "b"\n'
             'plants = "p"\ncaught_by = "c"\nneeds = "{}"\n')
    table.write_text(entry.format("racecheck"))
    assert [m.needs for m in mutation.load(table)] == ["racecheck"]
    table.write_text(entry.format("eyeballing"))
    with pytest.raises(ValueError, match="mutant m: needs must be one of"):
        mutation.load(table)


def test_a_planted_find_text_must_occur_exactly_once():
    assert plant("a < b;", " < ", " <= ", "m") == "a <= b;"
    for text, times in (("a > b;", 0), ("a < b < c;", 2)):
        with pytest.raises(ValueError, match=f"m: its find text occurs {times} times"):
            plant(text, " < ", " <= ", "m")


def test_a_generated_mutant_plants_at_its_line_first_to_last_and_nowhere_else():
    text = "first\nmiddle\nlast"
    assert plant_at_line(text, 1, "first", "1st", "m") == "1st\nmiddle\nlast"
    assert plant_at_line(text, 3, "last", "end", "m") == "first\nmiddle\nend"
    for line, find in ((0, "last"), (4, "last"), (2, "first")):
        with pytest.raises(ValueError, match=f"line {line} is not the line it was generated"):
            plant_at_line(text, line, find, "x", "m")


def test_host_tests_run_from_the_repository_root_and_a_failure_is_a_catch(tmp_path,
                                                                          monkeypatch):
    import pytest as pytest_module

    ran = []
    monkeypatch.setattr(pytest_module, "main", lambda args: ran.append(args) or status)
    status = 0
    assert mutation.host_tests_fail() is False  # (run from the root: the files are here)
    assert ran[-1][:2] == ["-x", "-q"] and list(mutation.HOST_TESTS) == ran[-1][-4:]
    status = 1
    assert mutation.host_tests_fail() is True
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="judged from the repository root"):
        mutation.host_tests_fail()


def test_a_slip_right_after_a_string_literal_is_planted_one_inside_it_is_not():
    mutants = mutagen.python_mutants_of("f.py", 'ok = "a < b" < limit\n')
    lt = [m for m in mutants if "lt-to-le" in m.id]
    assert [m.replace for m in lt] == ['ok = "a < b" <= limit']


def test_a_sample_of_every_mutant_is_all_of_them_in_their_order():
    every = GENERATED[:40]
    assert mutagen.sample(every, len(every), seed=3) == every
    assert mutagen.sample(every, None) == every


@pytest.mark.parametrize("exit_code, printed, verdict, how", [
    (0, "", "survived", "every case passed"),
    (1, "FAIL fast on uniform/N=33", "caught", "FAIL fast on uniform/N=33"),
    (3, "broken build", "broken", "does not compile: "),
    (1, f"{mutation.COMPILE_FAILED} (log)", "broken", "does not compile: "),
    (7, "Segmentation fault", "caught", "crashed (exit 7): "),
])
def test_a_judges_exit_status_and_output_make_its_verdict(exit_code, printed, verdict, how,
                                                          monkeypatch):
    # what a judge prints goes to stdout, what it complains of to stderr: both are read
    script = (f"import sys; print({printed!r}); print('on stderr', file=sys.stderr); "
              f"sys.exit({exit_code})")
    monkeypatch.setattr(mutation, "_judge_command",
                        lambda mutant, cuda_dir=None: [sys.executable, "-c", script])
    outcome = mutation.run_one(GENERATED[0], ROOT / "cuda", 60.0, {})
    assert outcome.verdict == verdict and outcome.how.startswith(how), outcome.how
    if verdict != "survived":
        assert "on stderr" in outcome.how and (printed in outcome.how or exit_code == 3)


@pytest.mark.parametrize("needs, failures, status", [
    ("quick", [], mutation.EXIT_SURVIVED),
    ("full", ["bin 3 is 1, want 2"], mutation.EXIT_CAUGHT),
    ("quick", [f"{mutation.COMPILE_FAILED}: the log"], mutation.EXIT_BROKEN),
])
def test_a_judge_runs_its_needs_cases_stops_at_the_first_fail_and_says_how_it_ended(
        needs, failures, status, monkeypatch):
    from histkit.conformance import cases, runner

    monkeypatch.setattr(cases, "all_cases", lambda quick: ["quick cases"] if quick else [])
    monkeypatch.setattr(cases, "huge_cases", lambda: ["cases past 2^31"])
    seen = {}

    def conformance(console, **options):
        seen.update(options)
        failed = [types.SimpleNamespace(cell=types.SimpleNamespace(detail=d)) for d in failures]
        return types.SimpleNamespace(failures=failed)

    monkeypatch.setattr(runner, "run_conformance", conformance)
    assert mutation.judge(needs, ["fast"]) == status
    assert seen["cases"] == (["cases past 2^31"] if needs == "full" else ["quick cases"])
    assert seen["rows"] == ["fast"] and seen["stop_at_first_fail"] is True


@pytest.mark.parametrize("named", ["sort.py", "gpu/launch/sort.py"])
def test_host_mutants_of_one_file_are_asked_for_by_its_name_or_its_path(named):
    package = ROOT / "src" / "histkit"
    mutants = mutagen.generate_host(package, [named])
    assert mutants and {m.file for m in mutants} == {"gpu/launch/sort.py"}


def test_a_judge_of_the_cases_past_2_31_gets_three_times_the_limit(tmp_path, monkeypatch):
    # its cases hold tens of GB and take minutes unmutated; they run one at a time
    limits = []

    def judged(mutant, cuda_dir, timeout, env):
        limits.append((mutant.needs, timeout))
        return mutation.Outcome(mutant.id, mutant.file, mutant.needs, "caught", "", 0.0)

    monkeypatch.setattr(mutation, "run_one", judged)
    picked = [m.id for m in GENERATED[:2]]
    for judge_on in ("quick", "full"):
        mutation.run(Path("unused.toml"), ROOT / "cuda", 2, 40.0, tmp_path / "r.json", picked,
                     None, generated=True, judge_on=judge_on)
    assert limits == [("quick", 40.0)] * 2 + [("full", 120.0)] * 2


def test_only_an_extern_c_global_function_is_an_entry():
    text = ('extern "C" __device__ int helper(int x) { return x; }\n'
            "template <int N> __global__ void templated(int* out) { out[0] = N; }\n"
            'extern "C" __global__ void entry(int* out) { out[0] = helper(1); }\n')
    assert [(u.name, u.entry) for u in mutagen.units_of(text)] == [
        ("helper", False), ("templated", False), ("entry", True)]


def test_a_run_lists_survivors_and_a_tables_broken_mutants_never_a_caught_one(tmp_path,
                                                                              monkeypatch,
                                                                              capsys):
    picked = GENERATED[:3]
    verdicts = dict(zip((m.id for m in picked), ("survived", "broken", "caught"), strict=True))

    def judged(mutant, cuda_dir, timeout, env):
        return mutation.Outcome(mutant.id, mutant.file, mutant.needs, verdicts[mutant.id],
                                f"how {mutant.id}", 0.0)

    def listed():
        return [line for line in capsys.readouterr().out.splitlines()
                if line.startswith("  ") and not line.startswith("  known gap")]

    monkeypatch.setattr(mutation, "run_one", judged)
    mutation.run(Path("unused.toml"), ROOT / "cuda", 1, 1.0, None, list(verdicts), None,
                 generated=True)
    # generated: a survivor by what it plants; broken ones do not compile (no test)
    assert listed() == [f"  survived: {picked[0].id}: {picked[0].plants}"]
    table = tmp_path / "mutants.toml"
    table.write_text("".join(
        f'[[mutant]]\nid = "{m.id}"\nfile = "{m.file}"\nfind = "x"\nreplace = "y"\n'
        f'plants = "p"\ncaught_by = "c"\n\n' for m in picked))
    mutation.run(table, ROOT / "cuda", 1, 1.0, None, None, None)
    # a table's mutant by how it ended: a broken one is a table entry to fix
    assert listed() == [f"  survived: {picked[0].id}: how {picked[0].id}",
                        f"  broken: {picked[1].id}: how {picked[1].id}"]


def test_the_command_line_dispatches_each_command_with_its_options(monkeypatch):
    calls = []
    monkeypatch.setattr(mutation, "judge", lambda needs, rows: calls.append(
        ("judge", needs, rows)) or 5)
    monkeypatch.setattr(mutation, "sift_command", lambda *a: calls.append(("sift", a)) or 6)
    monkeypatch.setattr(mutation, "run", lambda *a: calls.append(("run", a)) or 7)
    assert mutation.main(["judge", "full", "fast", "atomic"]) == 5
    assert mutation.main(["sift", "--files", "exclusive_scan.cu", "--jobs", "3", "--write"]) == 6
    assert mutation.main(["run", "--check-claims", "--jobs", "2", "--only", "a"]) == 7
    assert calls[0] == ("judge", "full", ["fast", "atomic"])
    (cuda_dir, files, only, jobs, table, write) = calls[1][1]
    assert (files, only, jobs, write) == (["exclusive_scan.cu"], None, 3, True)
    run_args = calls[2][1]
    assert run_args[2] == 2 and run_args[5] == ["a"] and run_args[-2] is True  # check_claims
    assert run_args[-1] is None  # no --slips
    assert mutation.main(["run", "--slips", "ternary-swapped"]) == 7
    assert calls[3][1][-1] == ["ternary-swapped"]


def test_sift_takes_the_asked_for_mutants_not_yet_listed(tmp_path, monkeypatch):
    from histkit.conformance import sift

    picked = GENERATED[:3]
    listed = tmp_path / "equivalent.toml"
    listed.write_text(f'[[equivalent]]\nid = "{picked[0].id}"\nseen_by = "nothing"\n'
                      f'why = "listed"\n')
    handed = []
    monkeypatch.setattr(sift, "sift", lambda mutants, cuda_dir, jobs: handed.append(
        [m.id for m in mutants]) or [])
    mutation.sift_command(ROOT / "cuda", None, [m.id for m in picked[:2]], 1, listed, False)
    assert handed == [[picked[1].id]]  # asked for 0 and 1; 0 is listed
    everything = len([m for m in mutagen.generate(ROOT / "cuda") if m.id != picked[0].id])
    mutation.sift_command(ROOT / "cuda", None, None, 1, listed, False)
    assert len(handed[1]) == everything


def test_files_are_named_with_or_without_cuda_and_a_misspelt_one_is_a_usage_error(capsys):
    from histkit.conformance.mutation import main

    bare = mutagen.generate(ROOT / "cuda", ["atomic_histogram.cu"])
    assert bare and mutagen.generate(ROOT / "cuda", ["cuda/atomic_histogram.cu"]) == bare
    with pytest.raises(SystemExit) as stopped:
        main(["sift", "--files", "atomic_histogram.cu", "nosuch.cu"])
    assert stopped.value.code == 2
    assert "no cuda/ file named nosuch.cu" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no host file named nosuch.py"):
        mutagen.generate_host(Path("."), ["nosuch.py"])
