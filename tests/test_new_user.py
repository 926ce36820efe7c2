"""What a new user meets first: the quick start, the CLI's usage errors, memory
checks before work, and the messages of a missing GPU or extra."""

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from histkit import oracles
from histkit.cli import main
from histkit.oracles._fold import fold_rows
from histkit.oracles._inputs import available_memory

ROOT = Path(__file__).resolve().parents[1]


def run_histkit(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "histkit", *args], capture_output=True,
                          text=True, **kwargs)


# --- the quick start ----------------------------------------------------------------

def test_the_quick_start_installs_the_gpu_extra_and_ci_runs_it_verbatim():
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in quick_start.strip().splitlines()]
    assert commands[0].startswith('python3 -m pip install ".[gpu]"')
    ci = (ROOT / ".ci" / "run").read_text()
    for command in commands:
        assert command in ci


@pytest.mark.parametrize("cuda_python, advice", [
    (True, "NVIDIA GPU and its driver (the GPU extra is installed)"),
    (False, 'pip install ".[gpu]"'),
], ids=["driver-missing", "extra-missing"])
def test_a_skipped_gpu_conformance_is_loud_and_says_what_this_host_lacks(
        capsys, monkeypatch, cuda_python, advice):
    import importlib.util

    import histkit.gpu

    monkeypatch.setattr(histkit.gpu, "gpu_unavailable_reason", lambda: "no GPU here (test)")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: (
        find_spec(name, *args) if cuda_python or not name.startswith("cuda") else None))
    assert main(["verify", "--json", os.devnull]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "GPU conformance SKIPPED" in out and advice in out and "--gpu on" in out


# --- the CLI ------------------------------------------------------------------------

@pytest.mark.parametrize("option", [["--block-size", "0"], ["--block-size", "-1"],
                                    ["--warp-size", "0"], ["--seed", "-1"],
                                    ["--bins", "3000000000"], ["--n", "-1"], ["--bins", "0"]])
def test_out_of_range_demo_options_are_usage_errors_of_demo(option):
    done = run_histkit("demo", *option)
    assert done.returncode == 2
    assert "histkit demo: error: argument" in done.stderr and "must be in [" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("argv, near", [
    (["chek", "k.py:f"], "did you mean 'check'?"),
    (["check", "k.py:f", "--kind", "histgram"], "did you mean 'histogram'?"),
    (["bench", "--only", "weigted"], "did you mean 'weighted'?"),
], ids=["command", "kind", "bench-part"])
def test_a_misspelt_choice_is_a_two_line_usage_error_naming_the_nearest_one(argv, near):
    done = run_histkit(*argv)
    assert done.returncode == 2 and near in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and "--help lists the options" in lines[1]


def test_demo_with_no_keys_runs_every_section():
    done = run_histkit("demo", "--n", "0")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_version_and_help_text():
    done = run_histkit("--version")
    assert done.returncode == 0 and done.stdout.startswith("histkit ")
    help_text = run_histkit("--help").stdout
    assert "``" not in help_text
    assert "(default: 256)" in run_histkit("demo", "--help").stdout


def test_verify_help_says_a_kernel_that_never_ends_fails_and_where_the_bound_is_set():
    from histkit.conformance import runner

    help_text = run_histkit("verify", "--help").stdout
    assert "never ends FAILs its cell" in help_text and "HISTKIT_WAIT_LIMIT_S" in help_text
    assert "runner.WAIT_LIMIT_S" in help_text and runner.WAIT_LIMIT_S > 0


def test_bench_without_its_extra_names_the_extra():
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    done = run_histkit("bench")
    assert done.returncode == 2 and "histkit[bench]" in done.stderr
    assert "Traceback" not in done.stderr


# --- the demo's wording -------------------------------------------------------------

def test_block_size_1_says_privatization_costs_more_atomics(capsys):
    assert main(["demo", "--section", "7.2", "--block-size", "1"]) == 0
    out = capsys.readouterr().out
    assert "MORE global" in out and "fewer global atomics" not in out
    assert "regardless of N" not in out


def test_long_tables_are_truncated_with_a_note(capsys):
    assert main(["demo", "--section", "7.1", "--bins", "100000", "--n", "1000"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 150
    assert "more buckets not shown" in out


def test_the_7_3_checks_catch_a_broken_sort(monkeypatch, capsys):
    from histkit import demo

    def unstable(keys, num_bins):
        order = np.argsort(keys, kind="stable")[::-1].copy()
        order = order[np.argsort(keys[order], kind="stable")]
        return keys[order], order

    monkeypatch.setattr(demo.oracles, "counting_sort", unstable)
    assert main(["demo", "--section", "7.3"]) == 1
    assert "stable): NO -- BUG" in capsys.readouterr().out


# --- memory -------------------------------------------------------------------------

def test_the_per_worker_rows_are_summed_in_place():
    rows = np.arange(12, dtype=np.int64).reshape(3, 4)
    counts = fold_rows(rows, 3)
    assert np.shares_memory(counts, rows)
    np.testing.assert_array_equal(counts, [12, 15, 18])


def test_an_empty_histogram_needs_about_its_output():
    import tracemalloc

    num_bins = 1 << 23  # 64 MiB of counts
    tracemalloc.start()
    counts = oracles.histogram(np.empty(0, np.int32), num_bins)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert counts.sum() == 0 and len(counts) == num_bins
    assert peak < 1.25 * 8 * num_bins


def test_a_histogram_too_large_for_memory_names_num_bins_and_bytes():
    with pytest.raises(MemoryError, match=r"num_bins=4611686018427387904 .*needs"):
        oracles.histogram([0], 2**62)


@pytest.mark.skipif((available_memory() or 0) > 17 * 2**30,
                    reason="more than 17 GiB is free here: the request would fit")
def test_demo_with_too_many_bins_exits_1_naming_the_request():
    done = run_histkit("demo", "--n", "10", "--bins", "2147483647")
    assert done.returncode == 1 and "num_bins=2147483647" in done.stderr
    assert "Traceback" not in done.stderr


# --- argument errors that name the argument -------------------------------------------

@pytest.mark.parametrize("num_bins", [2**63, 2**63 - 1, 2**62 + 1])
def test_huge_num_bins_is_a_value_error_naming_num_bins(num_bins):
    with pytest.raises(ValueError, match="num_bins must be <= 2\\*\\*62"):
        oracles.histogram([0], num_bins)


def test_a_wave_wider_than_the_input_is_one_wave():
    keys = np.array([1, 1, 2])
    np.testing.assert_array_equal(oracles.naive_wave_histogram(keys, 3, warp_size=2**63),
                                  [0, 1, 1])
    assert oracles.privatized_histogram(keys, 3, block_size=2**63)[1] == 3


@pytest.mark.parametrize("keys", [[-1, 2**63], [2**64], [2**70, 0]])
def test_python_ints_no_dtype_holds_are_named_as_such(keys):
    low, high = min(keys), max(keys)  # the message gives the range the ints span
    with pytest.raises(ValueError, match=rf"hold integers from {low} to {high}, which no "
                                         r"integer dtype holds"):
        oracles.histogram(keys, 3)


@pytest.mark.parametrize("nbytes, says", [(1023, "1023.0 B"), (1024, "1.0 KiB"),
                                          (3 * 2**29, "1.5 GiB"), (2**62, "4096.0 PiB")])
def test_memory_sizes_in_errors_read_in_the_largest_unit_below_1024(nbytes, says):
    from histkit.oracles._inputs import _human

    assert _human(nbytes) == says


def test_none_keys_say_none():
    with pytest.raises(TypeError, match="got None"):
        oracles.histogram(None, 3)


def test_gpu_calls_check_their_input_before_looking_for_a_gpu():
    from histkit import gpu

    with pytest.raises(TypeError, match="integer dtype"):
        gpu.exclusive_scan([1.5])
    with pytest.raises(ValueError, match="counts must be >= 0"):
        gpu.exclusive_scan(np.array([1, -2], np.int64))
    with pytest.raises(TypeError, match="int64 counts"):
        gpu.exclusive_scan(np.array([1, 2], np.int32))
    with pytest.raises(TypeError, match="integer dtype"):
        gpu.histogram([0.5], 2)
    with pytest.raises(ValueError, match="num_bins"):
        gpu.histogram([0], 2**63)


# --- output -------------------------------------------------------------------------

def test_verify_into_a_closed_pipe_keeps_its_exit_status():
    process = subprocess.Popen([sys.executable, "-m", "histkit", "verify", "--gpu", "off",
                                "--json", os.devnull], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.readline()
    process.stdout.close()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err.decode()
    assert b"BrokenPipeError" not in err


def test_piped_output_is_not_wrapped():
    done = run_histkit("demo", "--section", "7.3")
    assert "within each bucket, original relative order is preserved (stable): yes" in done.stdout


def test_verify_writes_its_json_without_a_gpu(tmp_path):
    path = tmp_path / "report.json"
    assert main(["verify", "--gpu", "off", "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert report["passed"] is True
    assert set(report["oracle_self_checks"]) >= {"histogram", "counting_sort"}
    assert all(not failed for failed in report["oracle_self_checks"].values())
    assert report["demo_self_checks_confirmed"] is True
    assert report["gpu_conformance"] == {"ran": False, "why": "--gpu off"}


def test_verify_refuses_quick_with_large_only(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["verify", "--quick", "--large-only"])
    assert exit_.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_a_histogram_asks_for_exactly_the_memory_its_counts_take(monkeypatch):
    # int64 counts, 8 bytes a bin: an estimate below that lets a call with
    # many bins die out of memory unexplained
    from histkit.oracles import _inputs

    num_bins = 1000
    monkeypatch.setattr(_inputs, "available_memory", lambda: 8 * num_bins)
    assert oracles.histogram([3, 3], num_bins)[3] == 2
    monkeypatch.setattr(_inputs, "available_memory", lambda: 8 * num_bins - 1)
    with pytest.raises(MemoryError, match=rf"num_bins={num_bins} \(int64 counts\) needs .* "
                                          rf"\({8 * num_bins} bytes\)"):
        oracles.histogram([3, 3], num_bins)


def test_no_keys_need_no_counters_in_a_counting_sort():
    # nothing to count: empty outputs, whatever num_bins, with no memory refusal
    sorted_keys, original_index = oracles.counting_sort(np.array([], np.int8), 2**40)
    assert sorted_keys.dtype == np.int8 and len(sorted_keys) == len(original_index) == 0


@pytest.mark.parametrize("oracle", ["counting_sort", "naive_wave_histogram", "histogram",
                                    "privatized_histogram"])
def test_a_bad_key_is_named_before_the_memory_of_too_many_bins_is_refused(oracle):
    # the key is the problem the caller can fix; every oracle names it first
    with pytest.raises(oracles.BadKeyError, match="index 0 is -1"):
        getattr(oracles, oracle)(np.array([-1], np.int32), 2**40)


def test_a_sort_returns_byte_swapped_keys_in_native_byte_order():
    # the documented dtype: the input's, native byte order; the values unchanged
    keys = np.array([2, 0, 1], dtype=">i4")
    for sorted_keys in (oracles.counting_sort(keys, 3)[0], oracles.radix_sort(keys)[0]):
        assert sorted_keys.dtype == np.dtype("=i4") and sorted_keys.tolist() == [0, 1, 2]


def test_binning_asks_for_its_edges_counts_and_counters_before_any_work(monkeypatch):
    # even bins: float64 edges, their float64 copy and the int64 counts, 8 bytes
    # each per edge; explicit edges: two; with weights, an int64 counter per sample
    from histkit.oracles import _inputs

    asked = []
    monkeypatch.setattr(_inputs, "available_memory", lambda: 1 << 40)
    original = _inputs.require_memory

    def record(nbytes, what):
        asked.append((nbytes, what))
        return original(nbytes, what)

    import histkit.oracles._binned as binned

    monkeypatch.setattr(binned, "require_memory", record)
    oracles.bin_histogram(np.zeros(10), 1000, (0, 1))
    oracles.bin_histogram(np.zeros(10), np.linspace(0, 1, 65))
    oracles.bin_histogram(np.zeros(10), 7, (0, 1), weights=np.ones(10))
    assert [n for n, _ in asked] == [8 * 3 * 1001, 8 * 2 * 65, 8 * 10, 8 * 3 * 8]
    assert "bins=1000" in asked[0][1] and "65 edges" in asked[1][1]
    assert "10 samples" in asked[2][1]


def test_a_radix_sort_asks_for_its_working_memory_before_it_starts(monkeypatch):
    # A pass of int32 keys (16-bit digits) holds three int64 arrays of n (the
    # order, the counting sort's indices, the next order), the keys as
    # unsigned, three arrays of 2-byte digits, and the counting sort's 65536
    # int64 counters and 65536 bin ends. With exactly that much free the sort
    # runs; one byte less and the radix sort refuses up front, naming itself,
    # not the counting sort inside it.
    from histkit.oracles import _inputs

    n = 1000
    needed = (3 * 8 + 4 + 3 * 2) * n + 2 * 8 * 65536
    keys = np.arange(n, dtype=np.int32)[::-1].copy()
    monkeypatch.setattr(_inputs, "available_memory", lambda: needed)
    assert np.array_equal(oracles.argsort(keys), np.argsort(keys, kind="stable"))
    monkeypatch.setattr(_inputs, "available_memory", lambda: needed - 1)
    with pytest.raises(MemoryError, match=rf"radix sort of {n} keys needs .* \({needed} bytes\)"):
        oracles.argsort(keys)


def test_without_proc_meminfo_the_free_memory_comes_from_the_free_page_count(monkeypatch):
    # the fallback for systems without /proc/meminfo (sysconf's free pages),
    # compared with what /proc/meminfo says is free (MemFree) on this one
    from histkit.oracles import _inputs

    with open("/proc/meminfo") as meminfo:
        free_kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemFree:"))
    real_open = open

    def no_meminfo(path, *args, **kwargs):
        if str(path) == "/proc/meminfo":
            raise OSError("no /proc/meminfo here")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_meminfo)
    fallback = _inputs.available_memory()
    assert 0.5 < fallback / (free_kib * 1024) < 2


@pytest.mark.parametrize("option, cap", [("--n", 2**31 - 1), ("--bins", 2**31 - 1),
                                         ("--warp-size", 2**31 - 1), ("--block-size", 2**31 - 1),
                                         ("--seed", 2**63 - 1)])
def test_one_past_each_demo_cap_is_a_usage_error_naming_the_cap(option, cap, capsys):
    # in this process (a subprocess would not see a mutated cli module)
    with pytest.raises(SystemExit) as exit:
        main(["demo", option, str(cap + 1)])
    assert exit.value.code == 2 and f", {cap}]; got {cap + 1}" in capsys.readouterr().err


def test_a_bounded_option_takes_both_ends_of_its_range_and_nothing_past_them():
    from histkit.cli import bounded_int

    parse = bounded_int(1, 5)
    assert parse("1") == 1 and parse("5") == 5 and parse("0x5") == 5
    for outside in ("0", "6"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"must be in \[1, 5\]"):
            parse(outside)


def test_the_pipe_safe_stdout_flushes_until_the_pipe_closes_then_stays_quiet(tmp_path):
    from histkit.cli import _PipeSafeStream

    class Pipe:
        flushes = 0
        closed = False
        descriptor = os.open(tmp_path / "pipe", os.O_WRONLY | os.O_CREAT)

        def fileno(self):  # silencing points this descriptor at /dev/null
            return self.descriptor

        def write(self, text):
            if self.closed:
                raise BrokenPipeError
            return len(text)

        def flush(self):
            if self.closed:
                raise BrokenPipeError
            self.flushes += 1

    pipe = Pipe()
    stream = _PipeSafeStream(pipe)
    stream.write("line\n")
    stream.flush()
    assert pipe.flushes == 1 and not stream.closed_pipe
    pipe.closed = True
    stream.flush()  # the reader went away: silenced, no error
    assert stream.closed_pipe and stream.write("more\n") == 5
    os.close(Pipe.descriptor)


@pytest.mark.parametrize("name", ["histkit.oracles", "histkit.gpu", "histkit.conformance"])
def test_a_public_package_offers_its_public_names_alone_to_completion(name):
    module = importlib.import_module(name)
    assert dir(module) == sorted(module.__all__)
    assert all(hasattr(module, public) for public in module.__all__)
