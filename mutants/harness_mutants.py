"""Planted bugs in the suite's own machinery: how we know its tests catch them (CPU only).

The conformance suite turns a kernel's slip into a FAIL only through its own
code: the runner's bookkeeping (every cell kept, a write outside scratch made
a FAIL, a hang bounded and reported, stop rules), the runtime's harness
(poisoned and guarded scratch, fenced inputs, the bounded waits, sizes of what
a kernel is handed) and the rules (checks). A slip there passes wrong kernels
while every correct one still passes, so no conformance row can judge it.
This applies mutagen's Python slips (mutagen.python_mutants_of) to those files,
one at a time, imports the mutated module in place of the installed one
(histkit._mutant_loader.import_mutant, before any test runs) and runs the CPU
tests that pin the file (stopping at the first failure): a failure or a hang
is caught, a clean run survived. A survivor may change only what a GPU shows
(a driver call's arguments, a size the pretend device does not check),
speed or memory, or be a real gap. From the repository root:

    python mutants/harness_mutants.py results.jsonl [FILE ...] [-- mutant ids ...]

FILE is one of HARNESS_FILES (default: all), or, named explicitly, one of
LAUNCH_FILES: launch-layer files whose rules CPU tests pin too (the GPU's
`mutation run --host` is their judge of record; this is a fast check on a
machine without a GPU). Each verdict is appended to
results.jsonl as it comes (ids already there are skipped: a run cut short
resumes). 3-8 s per mutant on 2 cores.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from histkit.conformance import mutagen, mutation

# histkit check's engine (a user's kernel judged): its fast tests, then the
# examples' CLI, plugin, hang, fault and no-GPU tests (seconds, not the
# examples' whole quick matrices)
CHECK_TESTS = ("tests/test_check_engine.py", *(
    f"tests/test_check_examples.py::{test}" for test in (
        "test_the_cli_exits_0_on_pass_1_on_fail_2_on_usage_errors",
        "test_the_cli_runs_one_input_given_as_keys",
        "test_a_radix_sort_input_given_as_keys_needs_no_num_bins",
        "test_a_hanging_kernel_costs_two_cells_and_is_not_run_further",
        "test_a_kernel_that_faults_everywhere_costs_five_cells_not_a_worker_per_case",
        "test_a_cuda_kernel_on_a_machine_without_a_gpu_is_refused_not_failed",
        "test_a_scan_whose_running_sum_wraps_at_2_32_fails_on_the_scan_counts_alone",
        "test_the_pytest_plugin_makes_one_item_per_case_and_fails_with_the_reproducer")))
DEVICE_MODULES = ("bindings", "memory", "harness", "launching", "waiting", "allocation",
                  "call_slots", "core")
DEVICE_TESTS = ("tests/test_bounded_waits.py", "tests/test_harness_on_host_memory.py",
                "tests/test_runner_report.py", "tests/test_api_calls.py",
                "tests/test_gpu_layout.py", "tests/test_runtime_memory.py",
                # the launch bookkeeping and the C path of the per-call driver calls
                "tests/test_launch_geometry.py", "tests/test_driver_calls.py",
                # the bad-key slot on the verdict board and off it
                "tests/test_verdict_board.py")
# Each file, and the CPU tests that pin it (on pretend runtimes and devices).
HARNESS_FILES = {
    "conformance/runner.py": ("tests/test_bounded_waits.py", "tests/test_runner_report.py",
                              "tests/test_harness_on_host_memory.py"),
    "conformance/checks.py": ("tests/test_conformance_rules.py", "tests/test_runner_report.py",
                              "tests/test_scan_and_sort_oracles.py",
                              "tests/test_verdict_board.py"),
    # the runtime (gpu/device/, one module a concept): each is pinned by the
    # same tests, the runtime's pretend devices and drivers
    **dict.fromkeys((f"gpu/device/{name}.py" for name in DEVICE_MODULES), DEVICE_TESTS),
    # the verdict board's bookkeeping, and the judge's reading of it
    "gpu/verdict.py": ("tests/test_verdict_board.py", "tests/test_harness_on_host_memory.py"),
    "conformance/check.py": CHECK_TESTS,
    "conformance/foreign.py": CHECK_TESTS,  # a user's callable judged
    "conformance/check_cli.py": ("tests/test_check_cli.py", *CHECK_TESTS),  # `histkit check`
    # what a conformance run prints
    "conformance/report.py": ("tests/test_conformance_report.py", "tests/test_runner_report.py"),
    # the mutation machinery itself (a slip there can call every mutant caught,
    # or leave some unjudged): its own tests, less DESELECTED
    "conformance/mutation.py": ("tests/test_mutagen.py",),
    "conformance/mutant.py": ("tests/test_mutagen.py", "tests/test_mutants.py"),
    "conformance/mutagen.py": ("tests/test_mutagen.py",),
    # the inputs every case draws (a slip there weakens every case at once)
    "distributions.py": ("tests/test_distributions.py",),
    # which cases the matrix runs, for which kinds, and their bad keys: a slip
    # there drops a path from every run while every kernel still passes
    "conformance/cases.py": ("tests/test_case_coverage.py", "tests/test_conformance_rules.py",
                             "tests/test_gpu_layout.py",
                             "tests/test_runner_report.py", "tests/test_narrow_counters.py",
                             "tests/test_harness_on_host_memory.py", "tests/test_user_skew.py",
                             "tests/test_distributions.py", "tests/test_api_calls.py"),
    # how a user's .cu kernel is skewed (histkit check's skewed cases)
    "gpu/user_skew.py": ("tests/test_user_skew.py",),
    # the independent references the oracles are checked against, and the main job
    "references.py": ("tests/test_new_user.py::test_verify_writes_its_json_without_a_gpu",),
    "verify.py": ("tests/test_verify_job.py", "tests/test_new_user.py",
                  "tests/test_demo_and_cli.py"),
    # a user's .cu kernel launched by its kind's ABI
    "conformance/cuda_abi.py": ("tests/test_api_calls.py", "tests/test_check_engine.py"),
    # the benchmarks: what they time, check and report against the targets
    "bench/calls.py": ("tests/test_bench_calls.py", "tests/test_bench_plot.py"),
    "bench/kernels.py": ("tests/test_bench_calls.py", "tests/test_bench_plot.py",
                         "tests/test_gpu_layout.py", "tests/test_api_calls.py"),
    "bench/common.py": ("tests/test_bench_calls.py",),
    # Dask arrays: per-chunk histograms, weighted sums, binnings and sorts
    # summed or merged on the CPU
    "dask/_chunks.py": ("tests/test_dask.py",),
    "dask/_histogram.py": ("tests/test_dask.py",),
    "dask/_binning.py": ("tests/test_dask.py",),
    "dask/_sort.py": ("tests/test_dask.py",),
    # the chapter demo, whose self-checks the main job confirms
    "demo.py": ("tests/test_demo_verdicts.py", "tests/test_demo_and_cli.py",
                "tests/test_new_user.py", "tests/test_verify_job.py"),
}
# Slow tests left out of every judge: an NVRTC compile of a sample of generated
# mutants, 40 s a judge (tests/test_mutants.py compiles every table mutant in CI).
DESELECTED = ("tests/test_mutagen.py::test_a_sample_of_generated_mutants_compiles_with_nvrtc",)
# Launch-layer files with CPU-pinned rules (which launches zero their counts;
# when the fast kernel stores them; which tile resident_sort takes), and their tests.
LAUNCH_FILES = {
    "gpu/launch/histogram.py": ("tests/test_api_calls.py", "tests/test_gpu_layout.py",
                                "tests/test_launch_geometry.py"),
    "gpu/launch/common.py": ("tests/test_api_calls.py", "tests/test_launch_geometry.py"),
    # resident_sort's tile choice (the smallest that all fit, else its largest)
    "gpu/launch/resident.py": ("tests/test_gpu_layout.py", "tests/test_api_calls.py"),
    # the onesweep passes' shapes, buffers and ping-pong; the policy's sizes
    "gpu/launch/sort.py": ("tests/test_sort_passes_launch.py", "tests/test_api_calls.py",
                           "tests/test_gpu_layout.py", "tests/test_launch_geometry.py"),
    "gpu/policy.py": ("tests/test_api_calls.py", "tests/test_gpu_layout.py",
                      "tests/test_launch_geometry.py", "tests/test_narrow_counters.py"),
    "gpu/launch/scan.py": ("tests/test_api_calls.py", "tests/test_launch_geometry.py"),
    # rank_sort's geometry, arguments and refusals
    "gpu/launch/rank.py": ("tests/test_launch_geometry.py", "tests/test_api_calls.py"),
    "gpu/launch/partitioned.py": ("tests/test_api_calls.py", "tests/test_launch_geometry.py",
                                  "tests/test_gpu_layout.py"),
    # the public calls: argument checks, outputs, streams, the bad-key verdict
    "gpu/api.py": ("tests/test_bad_input.py", "tests/test_api_calls.py",
                   "tests/test_gpu_layout.py", "tests/test_launch_geometry.py"),
    "gpu/_calls.py": ("tests/test_bad_input.py", "tests/test_api_calls.py",
                      "tests/test_gpu_layout.py"),
    "gpu/_arrays.py": ("tests/test_bad_input.py", "tests/test_api_calls.py"),
    "gpu/_lane_calls.py": ("tests/test_api_calls.py",),
    # a launcher's driver calls recorded for the compiled lane, pointers named by role
    "gpu/recording.py": ("tests/test_recording.py", "tests/test_api_calls.py"),
    # which launcher and build each row and public call takes
    "gpu/registry.py": ("tests/test_registry.py", "tests/test_api_calls.py",
                        "tests/test_gpu_layout.py", "tests/test_launch_geometry.py"),
    # the command line: its options' ranges, its exit codes, the loud GPU skip
    "cli.py": ("tests/test_new_user.py", "tests/test_demo_and_cli.py"),
    # the compile cache: its key (source, headers, defines, arch), its checked entries
    "gpu/compiler.py": tuple(
        f"tests/test_nvrtc_compile.py::{test}" for test in (
            "test_compile_cache_returns_the_entry_without_recompiling",
            "test_a_corrupt_cache_entry_is_rebuilt_not_trusted",
            "test_the_cache_key_changes_with_defines_arch_and_headers",
            "test_a_compile_error_carries_the_log_options_and_numbered_source")),
}
TIMEOUT_S = 300
JUDGE = ("import os, sys, pytest\n"
         "from histkit._mutant_loader import import_mutant\n"
         "import_mutant(os.environ['HISTKIT_HOST_MUTANT'])\n"
         "sys.exit(pytest.main(['-x', '-q', '-p', 'no:cacheprovider', *sys.argv[1:]]))\n")


def judge(mutant, module: str, tests) -> tuple[str, float]:
    """(caught | survived, seconds) for one mutant of module."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"{mutant.id}-") as tmp:
        path = mutation.apply(mutant, mutation.package_dir(), Path(tmp), copy=False)
        env = {**os.environ, "HISTKIT_HOST_MUTANT": f"{module}={path}"}
        files = {test.partition("::")[0] for test in tests}
        left_out = [arg for test in DESELECTED if test.partition("::")[0] in files
                    for arg in ("--deselect", test)]
        try:
            done = subprocess.run([sys.executable, "-c", JUDGE, *tests, *left_out], env=env,
                                  capture_output=True, timeout=TIMEOUT_S)
            verdict = "survived" if done.returncode == 0 else "caught"
        except subprocess.TimeoutExpired:
            verdict = "caught"  # a hang: the tests did not pass
    return verdict, time.perf_counter() - start


def main(argv: list[str]) -> int:
    ids = set(argv[argv.index("--") + 1:]) if "--" in argv else set()
    argv = argv[:argv.index("--")] if "--" in argv else argv
    if not argv or argv[0].startswith("-"):
        # --help, or an option taken for the results file: print the usage, write nothing
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    results, files = Path(argv[0]), argv[1:] or list(HARNESS_FILES)
    judged_by = {**HARNESS_FILES, **LAUNCH_FILES}
    unknown = [f for f in files if f not in judged_by]
    if unknown:
        print(f"not a harness file: {', '.join(unknown)}; one of {', '.join(judged_by)}")
        return 2
    # Where NVRTC works unmutated, a mutant that makes it look missing must
    # fail the judge's tests, not skip every compile test (tests/conftest.py).
    from histkit.gpu import compiler

    with contextlib.suppress(Exception):
        compiler.nvrtc_version()
        os.environ["HISTKIT_REQUIRE_NVRTC"] = "1"
    done = set()
    if results.exists():
        done = {json.loads(line)["id"] for line in results.read_text().splitlines() if line}
    counts = {"caught": 0, "survived": 0}
    with results.open("a") as out:
        for file in files:
            module = mutation.host_module(file)
            text = (mutation.package_dir() / file).read_text()
            for mutant in mutagen.python_mutants_of(file, text):
                if mutant.id in done or (ids and mutant.id not in ids):
                    continue
                verdict, seconds = judge(mutant, module, judged_by[file])
                counts[verdict] += 1
                out.write(json.dumps({"id": mutant.id, "file": file, "line": mutant.line,
                                      "replace": mutant.replace.strip(), "verdict": verdict,
                                      "seconds": round(seconds, 1)}) + "\n")
                out.flush()
                print(f"{verdict:8} {mutant.id} (line {mutant.line}): "
                      f"{mutant.replace.strip()[:80]}", flush=True)
    print(f"harness mutants: {counts['caught']} caught, {counts['survived']} survived")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
