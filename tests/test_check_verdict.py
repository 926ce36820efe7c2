"""What a new user of `histkit check` meets on a machine with no GPU: usage
errors before any work (exit 2, one message), the verdict's length and
parts, reproducers that reproduce (and print PASS once the bug is fixed),
callables isolated in a worker process."""

import importlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import needs_nvrtc

from histkit.cli import main
from histkit.conformance import check
from histkit.conformance.loading import UsageError

# the module (histkit.conformance's `check` is the function)
check_module = importlib.import_module("histkit.conformance.check")
check_judge = importlib.import_module("histkit.conformance.check_judge")
check_verdict = importlib.import_module("histkit.conformance.check_verdict")

KERNELS = '''
import os
import numpy as np


def _checked(keys, num_bins):
    bad = np.flatnonzero((keys < 0) | (keys >= num_bins))
    if len(bad):
        raise ValueError(f"key {keys[bad[0]]} at index {bad[0]} is out of range")
    return np.bincount(keys.astype(np.int64), minlength=num_bins)


def exact(keys, num_bins):
    return _checked(keys, num_bins)


def drops_a_key(keys, num_bins):
    counts = _checked(keys, num_bins)
    if len(keys) > 2:
        counts[int(keys[-1])] -= 1
    return counts


def prints_and_drops_a_key(keys, num_bins):
    print(f"debug: {len(keys)} keys, the last {keys[-1] if len(keys) else None}")
    return drops_a_key(keys, num_bins)


def warns_on_stderr_and_drops_a_key(keys, num_bins):
    import sys
    sys.stderr.write(f"note: {len(keys)} keys\\n")
    return drops_a_key(keys, num_bins)


def aborts_past_1000(keys, num_bins):
    if len(keys) > 1000:
        os.abort()
    return _checked(keys, num_bins)


def wave_of_8_only(keys, num_bins, warp_size=32):
    # a wave of 8 whatever it is told: right only when told 8
    from histkit import oracles
    return oracles.naive_wave_histogram(keys, num_bins, 8)


def hangs_on_int64_slow_on_int16(keys, num_bins):
    import time
    while keys.dtype == np.int64:
        time.sleep(0.25)
    if keys.dtype == np.int16:
        time.sleep(1.5)  # honest, slow work
    return _checked(keys, num_bins)


def wave_forgets_the_last_lane(keys, num_bins, warp_size=32):
    # honours warp_size, but the keys of each wave's last lane are lost
    from histkit import oracles
    kept = np.delete(keys, np.arange(warp_size - 1, len(keys), warp_size))
    return oracles.naive_wave_histogram(kept, num_bins, warp_size)


def wave_as_told(keys, num_bins, warp_size=32):
    from histkit import oracles
    return oracles.naive_wave_histogram(keys, num_bins, warp_size)


def privatized_one_block_atomics(keys, num_bins, block_size=256, num_blocks=1):
    counts = _checked(keys, num_bins)
    return counts, int(np.count_nonzero(counts))  # the atomics of ONE block


def unstable_sort(keys, num_bins):
    _checked(keys, num_bins)
    order = np.argsort(keys, kind="stable")[::-1]
    order = order[np.argsort(keys[order], kind="stable")]
    return keys[order], order


def one_argument(keys):
    return keys


def raises_naming_cuda(keys, num_bins):
    if len(keys) > 100:
        raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED (a message: no GPU was touched)")
    return _checked(keys, num_bins)


def skips_bad_keys(keys, num_bins):
    return np.bincount(keys[(keys >= 0) & (keys < num_bins)], minlength=num_bins)


def exits_3_past_1000(keys, num_bins):
    if len(keys) > 1000:
        os._exit(3)
    return _checked(keys, num_bins)


def weighted_as_the_oracle_orders_it(keys, num_bins, weights):
    return np.bincount(keys, weights, minlength=num_bins)


def segfaults_past_1000(keys, num_bins):
    if len(keys) > 1000:
        import ctypes
        ctypes.string_at(0)
    return _checked(keys, num_bins)


def sorts_its_input_in_place(keys, num_bins):
    _checked(keys, num_bins)
    order = np.argsort(keys, kind="stable")
    keys.sort()
    return keys, order


def exact_scan(counts):
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def scans_and_zeroes_its_input(counts):
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(counts.dtype)
    counts[:] = 0
    return offsets


def keeps_one_update_a_bin(keys, num_bins):
    return np.minimum(_checked(keys, num_bins), 1)


def privatized_swapped(keys, num_bins, block_size=256, num_blocks=1):
    return num_blocks * num_bins, _checked(keys, num_bins)


def radix_unstable(keys):
    order = np.argsort(keys, kind="stable")[::-1]
    order = order[np.argsort(keys[order], kind="stable")]
    return keys[order], order


def bins_up_to_the_largest_key(keys, num_bins):
    return np.bincount(keys.astype(np.int64))  # no minlength: too short


def sleeps_past_1000(keys, num_bins):
    import time
    while len(keys) > 1000:
        time.sleep(0.5)
    return _checked(keys, num_bins)
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A module of callables in the current directory, as a user would have it."""
    (tmp_path / "my_kernels.py").write_text(KERNELS)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("my_kernels", None)


def run(*argv):
    """`histkit check ...` as a user runs it: a new process, its output and exit code."""
    done = subprocess.run([sys.executable, "-m", "histkit", "check", *argv],
                          capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


def shell(command: str):
    """A printed reproducer, run as the user would paste it."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=600,
                          executable="/bin/bash")
    return done.returncode, done.stdout + done.stderr


def _histkit_script():
    return str(__import__("shutil").which("histkit") or "histkit")


# --- the implementation is found as the user names it ------------------------------

def test_a_module_in_the_current_directory_and_a_file_path_both_name_a_callable(kernels):
    for spec in ("my_kernels:exact", "./my_kernels.py:exact", f"{kernels}/my_kernels.py:exact"):
        done = subprocess.run([_histkit_script(), "check", spec, "--kind", "histogram",
                               "--keys", "1,2", "--num-bins", "3"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (spec, done.stdout, done.stderr)
        assert done.stdout.splitlines()[-1].startswith(f"PASS: {spec} as histogram")


def test_a_module_that_cannot_be_imported_is_a_usage_error_saying_where_it_looked(kernels,
                                                                                  capsys):
    assert main(["check", "no_such_module:f", "--kind", "histogram"]) == 2
    out = capsys.readouterr().out
    assert "cannot import module 'no_such_module'" in out and str(kernels) in out
    assert main(["check", "./missing.py:f", "--kind", "histogram"]) == 2
    assert "no such Python file: ./missing.py" in capsys.readouterr().out
    assert main(["check", "my_kernels:nothing", "--kind", "histogram"]) == 2
    assert "has no attribute 'nothing'" in capsys.readouterr().out
    assert main(["check", "my_kernels:exacct", "--kind", "histogram"]) == 2
    assert "has no attribute 'exacct'; did you mean 'exact'?" in capsys.readouterr().out



@pytest.mark.parametrize("body, says", [
    ("import os\nos._exit(4)\n", "ended its process (exit code 4)"),
    ("import sys\nsys.exit(0)\n", "ended its process (exit code 0)"),
    ("import ctypes\n\n\ndef load():\n    ctypes.string_at(0)\n\n\nload()\n",
     "ended its process (killed by SIGSEGV) at dies_loading.py:5 in load"),
])
def test_a_file_that_kills_its_process_as_it_loads_is_one_usage_error_not_the_runs_end(
        kernels, body, says, capsys):
    (kernels / "dies_loading.py").write_text(body + "\n\ndef f(keys, num_bins):\n    pass\n")
    assert main(["check", "dies_loading.py:f", "--kind", "histogram"]) == 2
    out = capsys.readouterr().out
    assert f"loading dies_loading.py {says}; no case was run" in out, out


def test_a_trial_load_whose_child_cannot_start_histkit_leaves_the_load_to_this_process(
        kernels, monkeypatch):
    from histkit.conformance import isolation

    monkeypatch.setattr(isolation, "_TRIAL_LOAD", "raise ImportError('no histkit here')")
    assert isolation.trial_load("my_kernels.py:exact") is None
    monkeypatch.setattr(isolation, "_TRIAL_LOAD", "import os; os._exit(3)")
    assert isolation.trial_load("my_kernels.py:exact") is None


def test_a_file_that_hangs_as_it_loads_is_a_usage_error_naming_the_line(kernels):
    from histkit.conformance.isolation import trial_load

    (kernels / "hangs_loading.py").write_text("import time\nwhile True:\n    time.sleep(0.01)\n")
    with pytest.raises(UsageError, match=r"loading hangs_loading.py did not finish in 2 s "
                                         r"at hangs_loading.py:3 in <module>"):
        trial_load("hangs_loading.py:f", timeout=2)


# --- usage errors: exit 2, one message, before any case runs -------------------------

@pytest.mark.parametrize("argv, says", [
    (["--keys", "1,2,300", "--dtype", "int8"], "--keys value 300 does not fit --dtype int8"),
    (["--keys=-1,2", "--dtype", "uint8"], "--keys value -1 does not fit --dtype uint8"),
    (["--keys", "1", "--dtype", "foo"], "--dtype must be one of float16, float32"),
    (["--keys", "1", "--dtype", "float32"], "--keys are integers; --dtype float32 is not"),
    (["--samples", "1.5", "--bins", "2"], "--samples is for --kind bin-histogram"),
    (["--keys", "99999999999999999999", "--dtype", "uint64"], "does not fit --dtype uint64"),
    (["--keys", "1,x"], "--keys takes comma-separated integers"),
    (["--keys", "1"], "--keys needs --num-bins"),
])
def test_keys_that_do_not_fit_their_dtype_are_usage_errors(kernels, argv, says, capsys):
    bins = [] if "--num-bins" in says else ["--num-bins", "4"]
    with pytest.raises(SystemExit) as stop:
        code = main(["check", "my_kernels:exact", "--kind", "histogram", *argv, *bins])
        raise SystemExit(code)
    captured = capsys.readouterr()
    assert stop.value.code == 2 and says in captured.out + captured.err


def test_a_num_bins_past_the_judges_memory_is_a_usage_error_before_any_work(kernels,
                                                                            monkeypatch):
    from histkit.oracles import _inputs

    monkeypatch.setattr(_inputs, "available_memory", lambda: 1 << 20)
    with pytest.raises(UsageError, match=r"judging num_bins=1000000 .*needs 7\.6 MiB"):
        check("my_kernels:exact", "histogram", keys=np.array([1]), num_bins=1_000_000)


def test_a_scans_counts_take_no_dtype_and_default_to_int64(kernels, capsys):
    scan = ["check", "my_kernels:exact_scan", "--kind", "scan", "--keys", "4294967296,0"]
    assert main([*scan, "--dtype", "int64"]) == 2
    assert "--dtype does not apply to a scan" in capsys.readouterr().out
    assert main(scan) == 0


def test_an_own_input_too_long_to_write_out_gets_a_python_call_that_names_it(kernels,
                                                                             monkeypatch):
    from histkit.conformance import reproduce

    monkeypatch.setattr(reproduce, "MAX_WRITTEN_KEYS", 100)
    monkeypatch.setattr(reproduce, "LISTED_KEYS", 100)
    keys = np.arange(300) % 7
    (failure,) = check("my_kernels:drops_a_key", "histogram", keys=keys, num_bins=7,
                       in_process=True, shrink_failures=False).failures
    assert failure.reproducer.startswith("(none: --keys writes 64 keys, or up to 100")
    assert failure.python_reproducer.startswith(
        "(in your own code, your_keys the 300 int64 keys checked)")
    assert "keys=your_keys" in failure.python_reproducer


def test_negative_keys_are_taken_after_a_space_as_after_an_equals_sign(kernels, capsys):
    for keys in (["--keys", "-1,2"], ["--keys=-1,2"]):
        assert main(["check", "my_kernels:exact", "--kind", "histogram", *keys,
                     "--num-bins", "3", "--dtype", "int8"]) == 0
        assert capsys.readouterr().out.splitlines()[-1].startswith("PASS")


def test_float_keys_are_a_type_error_of_the_request_not_a_fail_of_the_kernel(kernels):
    with pytest.raises(TypeError, match="keys must be integers"):
        check("my_kernels:exact", "histogram", keys=np.array([0.5, 1.0]), num_bins=2)


def test_a_framework_that_is_missing_is_one_usage_error(kernels, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy fails
    assert main(["check", "my_kernels:exact", "--kind", "histogram", "--inputs", "cupy"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "--inputs cupy needs cupy" in out


def test_a_callable_of_the_wrong_signature_is_one_usage_error_saying_the_call(kernels,
                                                                             capsys):
    assert main(["check", "my_kernels:one_argument", "--kind", "histogram"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "f(keys, num_bins) -> counts" in out
    assert main(["check", "my_kernels:exact", "--kind", "wave"]) == 2
    assert "f(keys, num_bins, warp_size=...) -> counts" in capsys.readouterr().out


def test_parameters_named_as_the_call_names_them_in_another_order_are_refused(kernels,
                                                                               capsys):
    # every case would hand num_bins to `weights`: refused before any case runs
    assert main(["check", "my_kernels:weighted_as_the_oracle_orders_it",
                 "--kind", "weighted-histogram"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "takes keys, num_bins, weights in another order" in out
    assert "f(keys, weights, num_bins) -> sums" in out


def test_the_header_says_how_a_callable_is_called(kernels, capsys):
    assert main(["check", "my_kernels:exact", "--kind", "histogram", "--keys", "0,1",
                 "--num-bins", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  called as f(keys, num_bins) -> counts, on numpy arrays" in lines


@pytest.mark.parametrize("where", ["missing/report.json", "."])
def test_an_unwritable_json_path_is_refused_before_any_work(kernels, where, monkeypatch,
                                                           capsys):
    monkeypatch.setattr(check_module, "check", lambda *a, **k: pytest.fail("ran"))
    for command in (["check", "my_kernels:exact", "--kind", "histogram"], ["verify"]):
        with pytest.raises(SystemExit) as stop:
            main([*command, "--json", where])
        assert stop.value.code == 2 and "--json" in capsys.readouterr().err


def test_an_unknown_case_name_is_a_usage_error(kernels, capsys):
    assert main(["check", "my_kernels:exact", "--kind", "histogram", "--case", "nope"]) == 2
    assert "no histogram case is named 'nope'" in capsys.readouterr().out


# --- the verdict -------------------------------------------------------------------

def test_one_dropped_key_gives_a_short_verdict_with_its_shrunk_input_and_reproducer(kernels):
    code, out = run("my_kernels:drops_a_key", "--kind", "histogram")
    lines = out.splitlines()
    assert code == 1 and len(lines) <= 40, out
    assert lines[0] == "histkit check my_kernels:drops_a_key --kind histogram"
    assert any(line.strip().startswith("input     keys = [") for line in lines), out
    assert lines[-1].startswith("FAIL: my_kernels:drops_a_key as histogram")
    (command,) = [line.split("reproduce ", 1)[1] for line in lines if "reproduce " in line]
    assert command.startswith("histkit check my_kernels:drops_a_key --kind histogram --keys ")
    again, said = shell(command)
    assert again == 1 and said.splitlines()[-1].startswith("FAIL"), said
    # the same input, the bug fixed: PASS, from the command and the Python call
    fixed, said = shell(command.replace("drops_a_key", "exact"))
    assert fixed == 0 and said.splitlines()[-1].startswith("PASS"), said
    (python,) = [line.strip() for line in lines if line.strip().startswith("python3 -c")]
    again, said = shell(python)  # the Python call exits as the command does
    assert again == 1 and said.strip().startswith("FAIL"), said
    fixed, said = shell(python.replace("drops_a_key", "exact"))
    assert fixed == 0 and said.strip().startswith("PASS"), said


def test_failures_are_grouped_by_symptom_and_capped(kernels):
    from histkit.conformance.check_verdict import symptom_of

    assert symptom_of("bins differ: 3 differing; first at 7: expected 2, got 1 [case x]") == \
        "bins differ"
    assert symptom_of("raised on valid input: IndexError: index 9 is out of bounds") == \
        "raised on valid input: IndexError"
    assert symptom_of("crash: the worker process died (killed by SIGABRT) [case y]") == \
        "crash: SIGABRT"
    report = check("my_kernels:drops_a_key", "histogram", shrink_failures=False)
    assert len(report.groups()) == 1 and len(report.groups()[0]) == len(report.failures)


def test_a_long_symptom_keeps_one_group_whatever_its_values_and_is_cut_at_a_word():
    from histkit.conformance.check_verdict import SYMPTOM_WIDTH, symptom_of

    small = symptom_of("no bad key reported; the first is at index 3 (value 256)")
    large = symptom_of("no bad key reported; the first is at index 3 (value 2147483647)")
    assert small == large == "no bad key reported; the first is at index N (value N)"
    long = symptom_of("raised ValueError('list' argument must have no negative elements)")
    assert long.endswith(" ...") and len(long) <= SYMPTOM_WIDTH + 4
    assert long[:-4] == "raised ValueError('list' argument must have no negative"


def test_findings_carry_their_detail_in_the_terminal(kernels):
    code, out = run("my_kernels:unstable_sort", "--kind", "sort")
    assert code == 0, out
    (heading,) = [line for line in out.splitlines() if line.startswith("finding")]
    assert "NOT stable" in heading
    assert re.search(r"adjacent equal-key pairs? out of input order", out.split(heading)[1])
    # with the first such pair, to look at: its positions, key and input indices
    example = re.search(r"the first at positions (\d+) and (\d+): key (\d+) from input "
                        r"indices (\d+) then (\d+)", out)
    assert example, out
    first, second, _, before, after = map(int, example.groups())
    assert second == first + 1 and before > after


def test_verbose_lists_every_cell_and_json_has_everything(kernels, tmp_path):
    report_path = tmp_path / "report.json"
    code, out = run("my_kernels:exact", "--kind", "histogram", "-v", "--json",
                    str(report_path))
    import json

    data = json.loads(report_path.read_text())
    assert code == 0 and data["passed"] and len(data["cells"]) == data["counts"]["pass"] + \
        data["counts"]["skip"]
    assert sum(line.startswith("pass ") for line in out.splitlines()) == data["counts"]["pass"]


# --- reproducers carry every option ---------------------------------------------------

def test_a_wave_callable_that_keeps_a_width_of_its_own_fails_when_told_another(kernels):
    # told 8, it is right; told 6 (three quarters of 8), it is not
    code, out = run("my_kernels:wave_of_8_only", "--kind", "wave", "--warp-size", "8")
    assert code == 1 and "when called with warp_size=6, right at warp_size=8" in out, out
    (command, *_) = [line.split("reproduce ", 1)[1] for line in out.splitlines()
                     if "reproduce " in line]
    assert "--warp-size 8" in command
    again, said = shell(command)
    assert again == 1 and said.splitlines()[-1].startswith("FAIL"), said
    assert check("my_kernels:wave_as_told", "wave", warp_size=8).passed


def test_a_privatized_reproducer_carries_its_grid(kernels):
    code, out = run("my_kernels:privatized_one_block_atomics", "--kind", "privatized",
                    "--grid", "4")
    assert code == 1
    (command,) = [line.split("reproduce ", 1)[1] for line in out.splitlines()
                  if "reproduce " in line]
    assert "--grid 4" in command
    again, said = shell(command)
    assert again == 1 and said.splitlines()[-1].startswith("FAIL"), said


def test_a_callable_with_no_name_says_so_and_a_scripts_function_is_named_by_its_file(
        kernels):
    script = kernels / "script.py"
    script.write_text(textwrap.dedent('''
        import numpy as np
        from histkit.conformance import check

        def off(keys, num_bins):
            counts = np.bincount(keys, minlength=num_bins)
            counts[0] += 1
            return counts

        if __name__ == "__main__":
            report = check(off, "histogram", keys=np.array([1]), num_bins=2)
            print(report.failures[0].reproducer)
            nameless = check(lambda k, n: np.zeros(n, np.int64), "histogram",
                             keys=np.array([1]), num_bins=2)
            print(nameless.failures[0].reproducer)
            print(nameless.failures[0].python_reproducer)
    '''))
    done = subprocess.run([sys.executable, "script.py"], capture_output=True, text=True,
                          timeout=120)
    named, nameless, call = done.stdout.splitlines()[-3:]
    assert named.startswith("histkit check script.py:off --kind histogram --keys 1"), done
    again, said = shell(named)
    assert again == 1 and said.splitlines()[-1].startswith("FAIL"), said
    assert nameless.startswith("(none: <lambda> has no name another process can import")
    assert "check(your_function, 'histogram', keys=np.array([1]" in call


def test_one_case_of_the_matrix_runs_by_its_name(kernels, capsys):
    from histkit.conformance.cases import cases_for

    name = cases_for("histogram")[5].name
    assert main(["check", "my_kernels:exact", "--kind", "histogram", "--case", name]) == 0
    assert "1 pass" in capsys.readouterr().out.splitlines()[-1]


# --- isolation ----------------------------------------------------------------------

def test_a_callable_that_aborts_costs_a_fail_cell_naming_the_signal_not_the_run(kernels):
    code, out = run("my_kernels:aborts_past_1000", "--kind", "histogram", "--no-shrink")
    assert code == 1 and "crash: SIGABRT" in out, out
    assert out.splitlines()[-1].startswith("FAIL: my_kernels:aborts_past_1000")
    report = check("my_kernels:aborts_past_1000", "histogram", shrink_failures=False)
    statuses = [cell.status for _, cell, _ in report.cells]
    assert statuses.count("pass") > 50 and all("SIGABRT" in f.detail for f in report.failures)


def test_in_process_runs_the_callable_here(kernels):
    calls = []

    def counted(keys, num_bins):
        calls.append(len(keys))
        return np.bincount(keys.astype(np.int64), minlength=num_bins)

    check(counted, "histogram", keys=np.array([1, 2]), num_bins=3, in_process=True)
    assert calls == [2]


def test_ctrl_c_stops_with_a_message_and_exit_130(kernels, monkeypatch, capsys):
    def interrupted(*args, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr(check_module, "check", interrupted)
    assert main(["check", "my_kernels:exact", "--kind", "histogram"]) == 130
    assert "interrupted" in capsys.readouterr().err


# --- a .cu file on a machine without a GPU -------------------------------------------

@needs_nvrtc
def test_a_cu_file_compiles_without_a_gpu_and_shows_its_compile_errors(tmp_path, capsys,
                                                                       monkeypatch):
    from histkit.gpu import device

    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: "no GPU in this test")
    good = tmp_path / "good.cu"
    good.write_text('extern "C" __global__ void histogram(const KEY_T* keys, long long n, '
                    'unsigned long long num_bins, COUNT_T* hist, '
                    'unsigned long long* first_bad) {}\n')
    assert main(["check", str(good), "--kind", "histogram", "--compile-only"]) == 0
    assert "compiles for sm_90 with entries histogram" in capsys.readouterr().out
    assert main(["check", str(good), "--kind", "histogram"]) == 2
    assert "compiles, but judging a CUDA C++ kernel needs a GPU" in capsys.readouterr().out
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void histogram() { undefined_name(); }\n')
    assert main(["check", str(bad), "--kind", "histogram"]) == 1
    out = capsys.readouterr().out
    assert "does not compile" in out and "undefined_name" in out
    assert "bad.cu(1): error" in out and "default_program" not in out  # the file, by name
    with pytest.raises(UsageError, match="no entry count, scatter"):
        from histkit.conformance.check import compile_only, make_impl

        compile_only(make_impl(str(good), "sort"))


def test_an_exception_naming_cuda_is_a_fail_of_its_case_not_a_fault_that_stops_the_run(kernels):
    # no context was lost: the worker goes on, as the run in process does
    isolated = check("my_kernels:raises_naming_cuda", "histogram", shrink_failures=False)
    in_process = check("my_kernels:raises_naming_cuda", "histogram", shrink_failures=False,
                       in_process=True)
    assert isolated.isolated and not in_process.isolated
    assert isolated.counts() == in_process.counts()
    assert isolated.counts()["FAIL"] > check_judge.MAX_FAULTS
    assert not any("faulted" in cell.detail for _, cell, _ in isolated.cells)


def test_a_crash_by_exit_code_is_headed_by_its_code_and_skips_say_why_by_default(kernels):
    code, out = run("my_kernels:exits_3_past_1000", "--kind", "histogram", "--no-shrink")
    lines = out.splitlines()
    assert code == 1, out
    (heading,) = [line for line in lines if line.startswith("FAIL (failure")]
    assert "crash: exit code 3" in heading, out
    assert "(exit code 3: os._exit() or a C library's exit() ends a process so)" in out
    skips = [line for line in lines if line.startswith("skip ")]
    assert skips and skips[0].endswith(("not run: at least as large as a case of its dtype "
                                        "that the kernel crashed or faulted on",
                                        "not run: at least as large as a case of its dtype "
                                        "and number of bins that the kernel crashed or "
                                        "faulted on")), out
    count = int(skips[0].split()[1])
    assert f"{count} skips" in lines[-1], lines[-1]


def test_a_group_is_headed_by_its_smallest_inputs_values_and_keyed_without_them():
    from histkit.conformance.cases import Case
    from histkit.conformance.check_verdict import Failure

    detail = "no bad key reported; the first is at index 3 (value 256) [case x]"
    failure = Failure(case=Case("uniform", 10, 4), geometry="", detail=detail)
    assert failure.title == "no bad key reported; the first is at index 3 (value 256)"
    assert failure.symptom == "no bad key reported; the first is at index N (value N)"
    failure.shrunk_detail = "no bad key reported; the first is at index 0 (value 4)"
    assert failure.title == "no bad key reported; the first is at index 0 (value 4)"


def test_a_heading_with_values_over_several_cases_says_the_values_are_the_shown_inputs():
    from rich.console import Console

    from histkit.conformance.cases import Case
    from histkit.conformance.check_output import print_group
    from histkit.conformance.check_verdict import Failure

    def heading(details):
        group = [Failure(case=Case("uniform", 10, 4), geometry="", detail=d) for d in details]
        console = Console(record=True, width=200)
        print_group(console, 1, 1, group)
        return console.export_text().splitlines()[0]

    at = "no bad key reported; the first is at index {} (value 256) [case x]"
    assert heading([at.format(3), at.format(7)]).endswith(
        "(value 256) (2 cases, values from the input below)")
    assert heading([at.format(3)]).endswith("(value 256) (1 case)")
    differ = "bins differ: 1 differing [case x]"
    assert heading([differ, differ]).endswith("bins differ (2 cases)")


def test_both_reproducers_keep_the_timeout_they_were_run_with(kernels):
    report = check("my_kernels:drops_a_key", "histogram", timeout=7.5)
    assert report.failures and all(f.reproducer.endswith(" --timeout 7.5")
                                   for f in report.failures)
    assert all(", timeout=7.5)" in f.python_reproducer for f in report.failures)
    report = check("my_kernels:drops_a_key", "histogram", keys=np.array([1, 2, 1]), num_bins=3)
    assert "--timeout" not in report.failures[0].reproducer  # the default is not repeated
    assert "timeout=" not in report.failures[0].python_reproducer


def test_a_json_path_that_refuses_the_write_is_a_usage_error_before_any_case(kernels, capsys):
    with pytest.raises(SystemExit) as stop:  # (argparse's exit, before any case runs)
        main(["check", "my_kernels:sleeps_past_1000", "--kind", "histogram",
              "--json", "/proc/histkit-check.json"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "cannot write /proc/histkit-check.json" in err


def test_counts_too_narrow_for_the_input_are_named_in_the_symptom(kernels, tmp_path):
    (tmp_path / "narrow.py").write_text(
        "import numpy as np\n"
        "def uint8_counts(keys, num_bins):\n"
        "    return np.bincount(keys.astype(np.int64), minlength=num_bins).astype(np.uint8)\n"
        "def float32_counts(keys, num_bins):\n"
        "    return np.bincount(keys.astype(np.int64), minlength=num_bins).astype(np.float32)\n"
        "def float16_counts(keys, num_bins):\n"
        "    return np.bincount(keys.astype(np.int64), minlength=num_bins).astype(np.float16)\n")
    code, out = run("narrow:uint8_counts", "--kind", "histogram", "--keys", "0*256,1",
                    "--num-bins", "2")
    assert code == 1 and "bins differ (counts returned as uint8, which hold at most 255)" in out
    assert "bin 0: expected 256, got 0" in out and "keys = [0] * 256 + [1] (int32)" in out
    code, out = run("narrow:float32_counts", "--kind", "histogram", "--keys", "1,0",
                    "--num-bins", "2")
    assert code == 0
    assert "counts returned as float32: exact only up to 16777216 keys a bin" in out
    code, out = run("narrow:float16_counts", "--kind", "histogram", "--keys", "0*2049",
                    "--num-bins", "1")
    assert code == 1
    assert "bins differ (counts returned as float16, which count exactly only up to 2048)" in out


def test_a_sort_returning_float_indices_fails_saying_so_not_with_the_judges_index_error():
    def sorts_with_float_indices(keys, num_bins):
        order = np.argsort(keys, kind="stable")
        return keys[order], order.astype(np.float64)

    report = check(sorts_with_float_indices, "sort", keys=np.array([2, 0, 2]), num_bins=3,
                   in_process=True)
    (failure,) = report.failures
    assert "returned original indices of dtype float64" in failure.detail, failure.detail
    assert "IndexError" not in failure.detail


@pytest.mark.parametrize("result, dtype", [
    (lambda counts: "hello", "<U5"),
    (lambda counts: counts.astype(str), "<U21"),
    (lambda counts: counts.astype(np.complex128), "complex128"),
], ids=["string", "strings", "complex"])
def test_counts_that_are_no_real_numbers_fail_naming_their_dtype(result, dtype):
    def histogram(keys, num_bins):
        return result(np.bincount(keys, minlength=num_bins))

    report = check(histogram, "histogram", keys=np.array([0, 1, 1]), num_bins=2,
                   in_process=True)
    (failure,) = report.failures
    assert f"which NumPy reads as no array of real numbers ({dtype})" in failure.detail, \
        failure.detail


def test_results_narrower_than_64_bits_pass_with_a_finding_that_names_their_limit():
    from histkit.conformance.foreign import inexact_counts, inexact_indices

    counts = inexact_counts(np.zeros(3, np.int32))
    assert counts.status == "finding" and counts.detail == (
        "counts returned as int32: exact only up to 2147483647 keys a bin, a bin of more "
        "is miscounted (return int64)")
    index = inexact_indices(np.zeros(3, np.float32))
    assert index.status == "finding" and index.detail.startswith(
        "original indices returned as float32: exact only up to index 16777216")
    assert inexact_indices(np.zeros(3, np.int64)) is None
    assert inexact_counts(np.zeros(3, np.uint64)) is None
    assert inexact_counts(np.zeros(3, np.float64)) is None

    def sorts_with_int32_indices(keys, num_bins):
        order = np.argsort(keys, kind="stable").astype(np.int32)
        return keys[order], order

    report = check(sorts_with_int32_indices, "stable-sort", keys=np.array([2, 0, 2]),
                   num_bins=3)
    assert report.passed and report.counts()["finding"] == 1


def test_a_scans_offsets_too_narrow_for_its_sums_are_named_in_the_symptom():
    def float32_offsets(counts):
        offsets = np.zeros(len(counts), np.float32)
        np.cumsum(counts[:-1], out=offsets[1:])
        return offsets

    report = check(float32_offsets, "scan", keys=np.array([36143109, 38045145], np.uint64))
    assert not report.passed
    assert report.failures[0].detail.startswith(
        "offsets differ (offsets returned as float32, which count exactly only up to "
        "16777216): 1 differing"), report.failures[0].detail


def test_a_sort_returning_its_pair_swapped_is_told_so():
    def swapped(keys, num_bins):
        order = np.argsort(keys, kind="stable")
        return order, keys[order]

    def drops_a_key(keys, num_bins):  # symmetric on [0, 1]: not taken for a swap
        order = np.argsort(keys, kind="stable")
        return keys[order][:-1], order

    report = check(swapped, "stable-sort", keys=np.array([3, 1, 2]), num_bins=4)
    assert report.failures[0].detail.startswith("returned the pair swapped: its first "
                                                "element is the original indices")
    report = check(drops_a_key, "stable-sort", keys=np.array([0, 1]), num_bins=2)
    assert "swapped" not in report.failures[0].detail


def test_one_key_and_two_keys_of_one_symptom_are_one_group():
    one = check_verdict.symptom_of("bin 0 has 1 key but counted 0")
    assert one == check_verdict.symptom_of("bin 3 has 2 keys but counted 0")
    assert check_verdict.symptom_of("lost 3 of 4 updates", singular=False) == "lost N of N updates"


def test_empty_edges_are_quoted_in_a_binning_reproducer():
    from histkit.conformance.binning_cases import BinCase
    from histkit.conformance.reproduce_binning import command_line

    class Named:
        inputs = "numpy"

        def describe(self):
            return "k.py:f"

    case = BinCase("unnamed", np.array([0.0]), np.array([], dtype=np.float64), None)
    assert command_line(Named(), "bin-histogram", case).endswith(
        "--samples 0.0 --bins '' --dtype float64")


def test_compile_only_without_nvrtc_is_a_usage_error_naming_the_extra(tmp_path, monkeypatch,
                                                                     capsys):
    def no_nvrtc(impl, dtype, arch):
        from histkit.gpu import compiler

        compiler.nvrtc_version.cache_clear()
        with pytest.MonkeyPatch.context() as patch:  # as if cuda-python were missing
            patch.setitem(sys.modules, "cuda.bindings", None)
            compiler.nvrtc_version()

    monkeypatch.setattr(check_module, "compile_only", no_nvrtc)
    source = tmp_path / "k.cu"
    source.write_text("extern \"C\" __global__ void histogram() {}\n")
    assert main(["check", str(source), "--kind", "histogram", "--compile-only"]) == 2
    out = capsys.readouterr().out
    assert "cuda-python is not installed" in out and 'pip install "histkit[gpu]"' in out
    assert "Traceback" not in out


def test_an_exception_names_the_line_of_the_users_code_that_raised_it(kernels):
    report = check("my_kernels:raises_naming_cuda", "histogram", shrink_failures=False)
    raising = 'raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED (a message: no GPU was touched)")'
    line = [text.strip() for text in KERNELS.splitlines()].index(raising) + 1
    assert report.failures and all(
        f"(at my_kernels.py:{line} in raises_naming_cuda)" in failure.detail
        for failure in report.failures), report.failures[0].detail


def test_a_privatized_verdict_shows_the_block_and_grid_its_input_was_called_with(kernels):
    code, out = run("my_kernels:privatized_one_block_atomics", "--kind", "privatized")
    assert code == 1, out
    inputs = [line for line in out.splitlines() if line.strip().startswith("input ")]
    assert inputs and all("; called with block_size=" in line and "num_blocks=" in line
                          for line in inputs), out


def test_a_function_found_through_a_path_of_the_callers_own_is_named_by_its_file(
        tmp_path, monkeypatch):
    folder, work = tmp_path / "elsewhere", tmp_path / "work"
    folder.mkdir()
    work.mkdir()
    (folder / "far_kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(work)
    module = importlib.import_module("far_kernels")
    try:
        report = check(module.drops_a_key, "histogram", keys=np.array([1, 2, 1]), num_bins=3)
    finally:
        sys.modules.pop("far_kernels", None)
    command = report.failures[0].reproducer
    assert command.startswith(f"histkit check {folder / 'far_kernels.py'}:drops_a_key "), command
    again, said = shell(command)  # a new process: the caller's sys.path is not there
    assert again == 1 and said.splitlines()[-1].startswith("FAIL"), said


def test_an_unreported_bad_key_says_how_a_callable_reports_one(kernels):
    report = check("my_kernels:skips_bad_keys", "histogram", keys=np.array([1, 5]), num_bins=3)
    (failure,) = report.failures
    assert failure.detail.startswith("no bad key reported; the first is at index 1 (value 5)")
    assert "raising ValueError with the index in its message" in failure.detail
    assert failure.title == "no bad key reported; the first is at index 1 (value 5)"


def test_a_scans_counts_are_shrunk_to_small_values_as_well_as_fewer():
    report = check("examples/python_kernels.py:inclusive_scan", "scan")
    (group,) = report.groups()
    assert group[0].shrunk is not None and group[0].shrunk.literal == (1,)  # not [66887]


def _line_of(kernels, text: str) -> int:
    source = (kernels / "my_kernels.py").read_text().splitlines()
    return 1 + next(i for i, line in enumerate(source) if text in line)


def test_a_crash_names_the_line_of_user_code_it_died_on_not_histkits_own_warnings(kernels):
    code, out = run("my_kernels:segfaults_past_1000", "--kind", "histogram", "--no-shrink")
    assert code == 1, out
    line = _line_of(kernels, "ctypes.string_at(0)")
    assert f"(killed by SIGSEGV) at my_kernels.py:{line} in segfaults_past_1000" in out, out
    assert "RuntimeWarning" not in out and "runpy" not in out, out


def test_a_hang_names_the_line_the_worker_was_at_when_it_was_killed(kernels):
    code, out = run("my_kernels:sleeps_past_1000", "--kind", "histogram", "--no-shrink",
                    "--timeout", "2")
    assert code == 1, out
    line = _line_of(kernels, "time.sleep(0.5)")
    assert (f"hang: no result within 2 s (the worker was killed at my_kernels.py:{line} "
            f"in sleeps_past_1000)") in out, out


def test_a_hang_is_reproduced_with_the_short_timeout_other_failures_with_the_given(
        kernels, monkeypatch):
    import importlib

    from histkit.conformance import isolation

    check_module = importlib.import_module("histkit.conformance.check")
    monkeypatch.setattr(isolation, "AFTER_HANG_TIMEOUT_S", 1.5)
    monkeypatch.setattr(check_module, "AFTER_HANG_TIMEOUT_S", 1.5)
    (kernels / "hangs_and_drops.py").write_text(
        "import time\nimport numpy as np\n\n"
        "def f(keys, num_bins):\n"
        "    while len(keys) > 1000:\n        time.sleep(0.5)\n"
        "    return np.bincount(keys[1:], minlength=num_bins)\n")
    report = check("hangs_and_drops:f", "histogram", timeout=3, shrink_failures=False)
    hangs = [f for f in report.failures if f.detail.startswith("hang:")]
    others = [f for f in report.failures if not f.detail.startswith("hang:")]
    assert hangs and others, str(report)
    assert hangs[0].reproducer.endswith("--timeout 1.5"), hangs[0].reproducer
    assert "timeout=1.5" in hangs[0].python_reproducer, hangs[0].python_reproducer
    assert others[0].reproducer.endswith("--timeout 3"), others[0].reproducer


STATEFUL = """import numpy as np

_BUFFERS = {}
_FIRST_NUM_BINS = []
_CALLS = [0]


def stale_buffer(keys, num_bins):
    counts = _BUFFERS.setdefault(num_bins, np.zeros(num_bins, np.int64))
    np.add.at(counts, keys.astype(np.int64), 1)
    return counts.copy()


def first_num_bins_kept(keys, num_bins):
    _FIRST_NUM_BINS.append(num_bins)
    return np.bincount(keys, minlength=_FIRST_NUM_BINS[0])[:num_bins]


def every_other_call_drops_a_key(keys, num_bins):
    _CALLS[0] += 1
    return np.bincount(keys[_CALLS[0] % 2:], minlength=num_bins)
"""


@pytest.mark.parametrize("name, says", [
    ("stale_buffer", "in a new process this input passes, then fails when called again "
                     "(2 of 3 calls): the callable keeps state between calls"),
    ("first_num_bins_kept", "in a new process this input passes (3 calls): it fails only "
                            "after other calls"),
    ("every_other_call_drops_a_key", "called 3 times in a new process this input failed 2, "
                                     "not the same way each time"),
    ("drops_last", None),
])
def test_a_failure_its_input_does_not_repeat_alone_is_said_to_come_from_state_or_chance(
        kernels, name, says):
    (kernels / "stateful.py").write_text(STATEFUL + _DROPS_LAST)
    report = check(f"stateful:{name}", "histogram")
    assert not report.passed, str(report)
    first = report.groups()[0][0]
    if says is None:  # a bug that every call repeats: nothing to say
        assert first.alone == "", first.alone
    else:
        assert first.alone.startswith(says), first.alone
        assert report.to_json()["failures"][0]["alone"] == first.alone


_DROPS_LAST = """

def drops_last(keys, num_bins):
    return np.bincount(keys[:-1], minlength=num_bins)
"""


def test_after_crashes_the_cases_unlike_them_still_run_and_show_another_bug(kernels):
    # crashes on every case past 1000 keys; the smaller bad-key cases still run,
    # and show that bad keys are not reported (a second bug)
    (kernels / "two_bugs.py").write_text(
        "import os\nimport numpy as np\n\n"
        "def f(keys, num_bins):\n"
        "    if len(keys) > 1000:\n        os._exit(3)\n"
        "    return np.bincount(keys[(keys >= 0) & (keys < num_bins)], minlength=num_bins)\n")
    code, out = run("two_bugs:f", "--kind", "histogram", "--no-shrink")
    assert code == 1, out
    headings = [line for line in out.splitlines() if line.startswith("FAIL (failure")]
    assert any("crash: exit code 3" in h for h in headings), out
    assert any("no bad key reported" in h for h in headings), out


@pytest.mark.parametrize("name, kind, says", [
    ("sorts_its_input_in_place", "stable-sort", "wrote to its keys input: index 0 was 1, "
                                                "is now 0"),
    ("scans_and_zeroes_its_input", "scan", "wrote to its counts input: index 0 was 1, "
                                           "is now 0"),
], ids=["sort", "scan"])
def test_a_callable_that_writes_to_its_input_fails_naming_the_first_change(kernels, name,
                                                                          kind, says):
    report = check(f"my_kernels:{name}", kind)
    assert not report.passed, str(report)
    first = report.failures[0]
    assert first.title.startswith("wrote to its") and says in first.shrunk_detail, first


def test_a_finding_is_headed_by_its_words_and_its_cases_show_the_values(kernels):
    code, out = run("my_kernels:keeps_one_update_a_bin", "--kind", "racy-histogram")
    assert code == 0, out
    (heading,) = [line for line in out.splitlines() if line.startswith("finding")]
    assert heading.startswith("finding lost updates ("), heading
    assert " N " not in heading and "(N%)" not in heading, heading


def test_a_radix_sort_verdict_shows_no_num_bins_and_an_empty_input_is_not_the_example(
        kernels):
    code, out = run("my_kernels:radix_unstable", "--kind", "radix-sort")
    assert code == 1, out
    inputs = [line for line in out.splitlines() if line.startswith("  input")]
    assert inputs and not any("num_bins" in line for line in inputs), out
    assert not any("keys = []" in line for line in inputs), out


def test_a_privatized_callable_returning_its_pair_swapped_is_told_which_element_is_wrong(
        kernels):
    report = check("my_kernels:privatized_swapped", "privatized")
    assert not report.passed
    detail = report.failures[0].shrunk_detail or report.failures[0].detail
    assert "as global_atomics, the second element" in detail, detail


def test_a_failure_is_shrunk_to_inputs_that_fail_the_same_way_not_another(kernels):
    # at its own width it fails from 32 keys on, at 24 (its second call) from
    # 24: the input shown fails with the group's symptom, and says at which width
    report = check("my_kernels:wave_forgets_the_last_lane", "wave")
    (shown,) = [group[0] for group in report.groups() if group[0].symptom == "bins differ"]
    assert shown.symptom == "bins differ" and shown.smallest.n < 32
    assert "when called with warp_size=24" in shown.shrunk_detail
    again = check("my_kernels:wave_forgets_the_last_lane", "wave", cases=[shown.smallest])
    assert [f.symptom for f in again.failures] == ["bins differ"]


def test_after_a_hang_cases_as_large_get_the_short_timeout_and_smaller_ones_the_whole(
        kernels, monkeypatch):
    from histkit.conformance import isolation
    from histkit.conformance.cases import Case
    from histkit.conformance.foreign import PythonImpl
    from histkit.conformance.loading import load_callable

    monkeypatch.setattr(isolation, "AFTER_HANG_TIMEOUT_S", 0.5)
    name = "my_kernels:hangs_on_int64_slow_on_int16"
    impl = PythonImpl(load_callable(name), "histogram", name=name)
    judge = isolation.IsolatedJudge(timeout=5)
    try:
        hung, _ = judge.judge(impl, Case("uniform", 100, 8, dtype="int64"))
        larger_alike, _ = judge.judge(impl, Case("uniform", 200, 8, dtype="int64"))
        slow_smaller, _ = judge.judge(impl, Case("uniform", 99, 8, dtype="int16"))
        slow_as_large, _ = judge.judge(impl, Case("uniform", 100, 8, dtype="int16"))
    finally:
        judge.close()
    assert hung.detail.startswith("hang: no result within 5 s"), hung
    assert larger_alike.detail.startswith("hang: no result within 1 s"), larger_alike
    assert slow_smaller.status == "pass", slow_smaller  # 1.5 s of work: not a hang
    # as large as the hung case, in any dtype: the short timeout
    assert slow_as_large.detail.startswith("hang: no result within 1 s"), slow_as_large


def test_counts_of_the_wrong_length_are_a_wrong_shape_shrunk_to_one_small_key(kernels):
    code, out = run("my_kernels:bins_up_to_the_largest_key", "--kind", "histogram")
    assert code == 1, out
    assert "got       wrong shape: expected (2,), got (1,)" in out, out
    assert "keys = [0] (int32), num_bins = 2" in out and "bins differ" not in out


def raises_on_counts(counts):
    raise ZeroDivisionError("a bug in the scan")


def test_a_scan_callable_that_raises_fails_as_raised_on_valid_input():
    report = check(raises_on_counts, "scan", keys=np.array([1, 2], np.uint64), in_process=True)
    assert [group[0].symptom for group in report.groups()] == [
        "raised on valid input: ZeroDivisionError"]


@pytest.mark.parametrize(("name", "marker", "shown"), [
    ("prints_and_drops_a_key", "debug:", "debug: {n} keys, the last {last}"),
    ("warns_on_stderr_and_drops_a_key", "note:", "stderr: note: {n} keys"),  # marked
])
def test_what_a_callable_prints_or_writes_to_stderr_is_kept_out_but_shown_for_its_input(
        kernels, name, marker, shown):
    code, out = run(f"my_kernels:{name}", "--kind", "histogram")
    lines = out.splitlines()
    assert code == 1 and len(lines) <= 40, out
    assert sum(marker in line for line in lines) == 1, out  # the shown input's, once
    (printed,) = [line for line in lines if line.strip().startswith("printed ")]
    (given,) = [line for line in lines if line.strip().startswith("input     keys = [")]
    keys = given.split("[", 1)[1].split("]", 1)[0].split(", ")
    assert printed.split("printed", 1)[1].strip() == shown.format(n=len(keys), last=keys[-1])
    assert re.search(r"^\(it printed \d+ lines to stdout or stderr while judged", out,
                     re.MULTILINE), out
