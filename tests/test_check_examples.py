"""histkit check, its CLI and its pytest plugin on CPU callables (no GPU):
the correct examples pass, each buggy one fails with a small reproducer; the
.cu examples and their planted bugs apply and compile with NVRTC."""

import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_nvrtc

from histkit.cli import main
from histkit.conformance import check

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORRECT = [("histogram", "histogram"), ("wave_histogram", "wave"),
           ("histogram", "racy-histogram"), ("privatized", "privatized"),
           ("exclusive_scan", "scan"), ("stable_counting_sort", "stable-sort"),
           ("quicksort_argsort", "sort"), ("radix_argsort", "radix-sort")]
BUGGY = [("histogram_clipped", "histogram"), ("histogram_dropped_tail", "histogram"),
         ("histogram_last_bad_index", "histogram"), ("histogram_uint8_as_signed", "histogram"),
         ("histogram_int32_counts_wrap", "histogram"), ("wave_histogram_atomic", "wave"),
         ("racy_histogram_double_count", "racy-histogram"),
         ("privatized_skips_zero_bins", "privatized"), ("inclusive_scan", "scan"),
         ("scan_tiles_without_carry", "scan"), ("quicksort_argsort", "stable-sort"),
         ("sort_index_off_by_one", "stable-sort"), ("sort_unchecked", "sort"),
         ("sort_drops_last_key", "stable-sort"), ("sort_by_low_byte", "stable-sort"),
         ("radix_unsigned_order", "radix-sort"), ("radix_low_bytes_only", "radix-sort"),
         ("radix_equal_keys_reversed", "radix-sort"),
         ("radix_sign_flipped_in_every_digit", "radix-sort")]
# Bugs that need a large input to show: a bin must pass int16's 32767.
NEEDS_MANY_KEYS = {"histogram_int32_counts_wrap"}


@pytest.mark.parametrize("name,kind", CORRECT, ids=lambda v: str(v))
def test_a_correct_python_implementation_passes(name, kind):
    report = check(f"examples.python_kernels:{name}", kind)
    assert report.passed, report.failures[0]
    counts = report.counts()
    assert counts["pass"] + counts["finding"] > 150


def test_a_scan_whose_running_sum_wraps_at_2_32_fails_on_the_scan_counts_alone():
    # the counts of every key case sum to less than 2^32: only the scan's own
    # cases (counts up to 2^32 each) show the wrap, and their reproducer is a
    # handful of counts
    name = "examples.python_kernels:exclusive_scan_32_bit_sum"
    report = check(name, "scan")
    assert not report.passed and all(f.case.scan_counts for f in report.failures)
    first = report.failures[0]
    assert first.shrunk.scan_counts and first.shrunk.n <= 8
    assert "counts = [" in str(first) and "--kind scan --keys " in first.reproducer
    # (no --dtype: a scan is handed int64 counts, and the command line refuses one)
    assert "--num-bins" not in first.reproducer and "--dtype" not in first.reproducer
    assert not check(name, "scan", cases=[first.shrunk]).passed


@pytest.mark.parametrize("name,kind", BUGGY, ids=lambda v: str(v))
def test_a_buggy_python_implementation_fails_with_a_small_reproducer(name, kind):
    report = check(f"examples.python_kernels:{name}", kind)
    assert not report.passed
    first = report.failures[0]
    assert first.shrunk is not None and first.reproducer
    if name not in NEEDS_MANY_KEYS:
        shrunk = first.shrunk
        # (a scan's counts shrink only to fewer counts: a missing carry between
        # tiles of 1024 needs one past the first tile)
        assert shrunk.n <= (1025 if shrunk.scan_counts else 1024)
        # the reproducer runs just that input, and it fails again
        keys = np.array(shrunk.literal, dtype=shrunk.dtype)
        again = (check(f"examples.python_kernels:{name}", kind, cases=[shrunk])
                 if shrunk.scan_counts or kind == "scan"
                 else check(f"examples.python_kernels:{name}", kind, keys=keys,
                            num_bins=None if kind == "radix-sort" else shrunk.num_bins))
        assert not again.passed


def test_the_cli_exits_0_on_pass_1_on_fail_2_on_usage_errors(capsys):
    assert main(["check", "examples.python_kernels:histogram", "--kind", "histogram"]) == 0
    assert main(["check", "examples.python_kernels:histogram_clipped",
                 "--kind", "histogram", "--no-shrink"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "no bad key reported" in out
    assert main(["check", "no/such/file.cu", "--kind", "histogram"]) == 2
    assert main(["check", "examples.python_kernels:nothing_here", "--kind", "scan"]) == 2
    with pytest.raises(SystemExit) as caught:
        main(["check", "examples.python_kernels:histogram", "--kind", "nonsense"])
    assert caught.value.code == 2


def test_the_cli_runs_one_input_given_as_keys(capsys):
    assert main(["check", "examples.python_kernels:histogram_clipped", "--kind", "histogram",
                 "--keys", "0,1,5", "--num-bins", "3"]) == 1
    assert "index 2" in capsys.readouterr().out


def test_a_radix_sort_input_given_as_keys_needs_no_num_bins(capsys):
    keys = ["check", "--keys", "3,-2,7,-2", "--dtype", "int16", "--kind", "radix-sort"]
    assert main([*keys[:1], "examples.python_kernels:radix_argsort", *keys[1:]]) == 0
    assert main([*keys[:1], "examples.python_kernels:radix_unsigned_order", *keys[1:]]) == 1
    assert "sorted keys differ" in capsys.readouterr().out


def test_the_pytest_plugin_makes_one_item_per_case_and_fails_with_the_reproducer():
    # The plugin loads through its pytest11 entry point: histkit is installed.
    done = subprocess.run([sys.executable, "-m", "pytest", "-q",
                           str(ROOT / "examples" / "pytest_example"), "-x", "-k", "stable_sort"],
                          capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "reproduce:" in done.stdout and "NOT stable" in done.stdout
    passing = subprocess.run([sys.executable, "-m", "pytest", "-q",
                              str(ROOT / "examples" / "pytest_example"), "-k", "my_histogram"],
                             capture_output=True, text=True, cwd=ROOT,
                             env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert passing.returncode == 0, passing.stdout[-2000:]
    assert " passed" in passing.stdout


def _bugs():
    return tomllib.loads((ROOT / "examples" / "bugs.toml").read_text())["bug"]


def test_there_are_five_buggy_kernels_of_every_kind_python_and_cuda_together():
    kinds = [b["kind"] for b in _bugs()] + [kind for _, kind in BUGGY]
    for kind in ("histogram", "racy-histogram", "wave", "privatized", "scan", "sort",
                 "stable-sort"):
        assert kinds.count(kind) >= 5, kind
    assert kinds.count("radix-sort") >= 4  # Python only: the kernel ABI has no radix sort


def test_a_cuda_file_of_a_kind_the_abi_lacks_is_refused_naming_the_way_in():
    with pytest.raises(ValueError, match="no radix-sort kernels.*Python callable"):
        check(str(ROOT / "examples" / "cuda" / "counting_sort.cu"), "radix-sort")


@needs_nvrtc
@pytest.mark.parametrize("bug", _bugs(), ids=lambda b: b["id"])
def test_each_planted_bug_applies_and_compiles(bug, tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "examples"))
    import check_examples

    from histkit.gpu import compiler

    monkeypatch.setenv("HISTKIT_CACHE_DIR", str(tmp_path / "cache"))
    path = check_examples.plant(bug, tmp_path)
    defines = {"KEY_T": "int", "COUNT_T": "unsigned int", "WARP_SIZE": "32"}
    assert compiler.compile_cubin(str(path), defines, "sm_90")[:4] == b"\x7fELF"


@needs_nvrtc
def test_every_generated_slip_in_the_examples_applies_and_compiles(tmp_path, monkeypatch):
    # what `examples/check_examples.py --generated` hands histkit check
    sys.path.insert(0, str(ROOT / "examples"))
    import check_examples

    from histkit.gpu import compiler

    monkeypatch.setenv("HISTKIT_CACHE_DIR", str(tmp_path / "cache"))
    bugs = check_examples.generated_bugs()
    assert len({b["id"] for b in bugs}) == len(bugs) >= 50
    defines = {"KEY_T": "int", "COUNT_T": "unsigned int", "WARP_SIZE": "32"}
    for bug in bugs:
        folder = tmp_path / bug["id"]
        folder.mkdir()
        path = check_examples.plant(bug, folder)
        original = (ROOT / "examples" / "cuda" / bug["file"]).read_text()
        assert path.read_text() != original, bug["id"]
        assert compiler.compile_cubin(str(path), defines, "sm_90")[:4] == b"\x7fELF", bug["id"]


class _HangingPastOneThousandKeys:
    """Stands in for the isolated worker: a kernel that hangs on every input
    of more than 1000 keys (as a loop that never ends past some size would)."""

    def __init__(self, timeout):
        self.hung: list[str] = []
        self.faulted: list[str] = []
        self.ran: list[str] = []

    def judge(self, impl, case):
        from histkit.conformance.checks import Cell

        self.ran.append(case.name)
        if case.n > 1000:
            self.hung.append(case.name)
            return Cell("FAIL", f"hang: no result [case {case.name}]"), ""
        return Cell("pass"), ""

    def close(self):
        pass


def _check_with_stand_in_worker(monkeypatch, worker_class):
    """check() of a .cu example with worker_class standing in for the isolated
    worker (as if on a GPU host): the report and the one worker made."""
    from histkit.conformance import isolation

    workers = []
    monkeypatch.setattr(isolation, "IsolatedJudge",
                        lambda timeout: workers.append(worker_class(timeout)) or workers[-1])
    monkeypatch.setattr("histkit.gpu.device.gpu_unavailable_reason", lambda: None)
    report = check(str(ROOT / "examples" / "cuda" / "atomic_histogram.cu"), "histogram")
    (worker,) = workers
    return report, worker


def test_a_hanging_kernel_costs_two_cells_and_is_not_run_further(monkeypatch):
    from histkit.conformance.check_judge import MAX_HANGS

    report, worker = _check_with_stand_in_worker(monkeypatch, _HangingPastOneThousandKeys)
    assert not report.passed and len(worker.hung) == MAX_HANGS
    after = [cell for case, cell, _ in report.cells
             if case.name not in worker.ran]
    assert after and all(cell.status == "skip" and "hung on 2 cases" in cell.detail
                         for cell in after)
    # Nothing ran after the second hang, and no hang was shrunk (each try could hang).
    assert worker.ran[-1] == worker.hung[-1]
    assert all(f.shrunk is None for f in report.failures if f.case.name in worker.hung)


def test_the_plugin_gives_a_cuda_file_the_fenced_and_skewed_cases_too():
    from histkit.conformance.pytest_plugin import conformance_cases

    def cases(mark):
        return mark.args[1]

    for_callables = cases(conformance_cases("histogram"))
    for_cuda = cases(conformance_cases("histogram", cuda_file=True))
    assert not any(c.skewed or c.fenced for c in for_callables)
    assert any(c.skewed for c in for_cuda) and any(c.fenced for c in for_cuda)
    assert set(for_callables) < set(for_cuda)


class _FaultingPastOneThousandKeys(_HangingPastOneThousandKeys):
    """... and one that faults there instead (each fault costs a new worker)."""

    def judge(self, impl, case):
        from histkit.conformance.checks import Cell

        self.ran.append(case.name)
        if case.n > 1000:
            self.faulted.append(case.name)
            return Cell("FAIL", "CudaError: CUDA_ERROR_ILLEGAL_ADDRESS"), ""
        return Cell("pass"), ""


def test_a_kernel_that_faults_everywhere_costs_five_cells_not_a_worker_per_case(monkeypatch):
    from histkit.conformance.check_judge import MAX_FAULTS
    from histkit.conformance.check_shrink import SHRINK_MAX_FAULTS

    report, worker = _check_with_stand_in_worker(monkeypatch, _FaultingPastOneThousandKeys)
    assert not report.passed and len(report.failures) == MAX_FAULTS
    # and the shrinker, trying smaller inputs of the smallest, gives up after its own
    assert MAX_FAULTS < len(worker.faulted) <= MAX_FAULTS + SHRINK_MAX_FAULTS
    after = [cell for case, cell, _ in report.cells if case.name not in worker.ran]
    assert after and all(cell.status == "skip" and "faulted on 5 cases" in cell.detail
                         for cell in after)


@needs_nvrtc
def test_a_cuda_kernel_on_a_machine_without_a_gpu_is_refused_not_failed(monkeypatch, capsys):
    from histkit.gpu.errors import GpuUnavailableError

    monkeypatch.setattr("histkit.gpu.device.gpu_unavailable_reason", lambda: "no driver here")
    kernel = str(ROOT / "examples" / "cuda" / "atomic_histogram.cu")
    with pytest.raises(GpuUnavailableError, match="needs a GPU: no driver here"):
        check(kernel, "histogram")
    assert main(["check", kernel, "--kind", "histogram"]) == 2
    assert "compiles, but judging a CUDA C++ kernel needs a GPU" in capsys.readouterr().out


def test_a_script_without_a_main_guard_gets_its_cu_kernel_judged_by_a_worker(tmp_path):
    # The worker is a fresh interpreter, not a spawned child that would first
    # re-run the caller's script (and call check again, and again).
    script = tmp_path / "my_check.py"
    script.write_text(
        "import sys\n"
        "from histkit.conformance.cases import Case\n"
        "from histkit.conformance.foreign import CudaFileImpl\n"
        "from histkit.conformance.isolation import IsolatedJudge\n"
        "judge = IsolatedJudge(120)\n"
        "impl = CudaFileImpl(sys.argv[1], 'histogram', ('histogram',))\n"
        "cell, _ = judge.judge(impl, Case('uniform', 100, 16, seed=1))\n"
        "judge.close()\n"
        "print('judged:', cell.status, cell.detail)\n")
    kernel = str(ROOT / "examples" / "cuda" / "atomic_histogram.cu")
    done = subprocess.run([sys.executable, str(script), kernel], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("judged:")]
    assert len(lines) == 1 and "died" not in lines[0], done.stdout + done.stderr[-2000:]
    from histkit.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        assert lines[0].startswith("judged: pass")
    else:  # the worker ran the case and sent back why it could not
        assert "GpuUnavailableError" in lines[0]
