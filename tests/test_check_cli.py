"""`histkit check`'s command line, in process (seconds, no GPU): its options'
forms and ranges, what it hands check(), what it prints while it runs, and
how it re-runs itself under compute-sanitizer."""

import importlib

import pytest

from histkit.cli import main
from histkit.conformance import check_cli

check_module = importlib.import_module("histkit.conformance.check")
check_verdict = importlib.import_module("histkit.conformance.check_verdict")


@pytest.mark.parametrize("text, parsed", [("X=1", ("X", "1")), ("ITEMS=", ("ITEMS", "")),
                                          ("_A=b=c", ("_A", "b=c"))])
def test_a_define_is_name_equals_value(text, parsed):
    assert check_cli._define(text) == parsed


@pytest.mark.parametrize("text", ["X", "1X=2", "=3", "A B=1"])
def test_a_define_without_an_identifier_and_an_equals_sign_is_refused(text, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["check", "k.cu", "--kind", "histogram", "--define", text])
    assert stop.value.code == 2 and "--define takes NAME=VALUE" in capsys.readouterr().err


@pytest.mark.parametrize("text, grid", [("auto", None), ("1", 1), ("7", 7)])
def test_a_grid_is_a_block_count_from_1_or_auto(text, grid):
    assert check_cli._grid(text) == grid


@pytest.mark.parametrize("text, says", [("0", "--grid must be >= 1; got 0"),
                                        ("-2", "--grid must be >= 1"),
                                        ("many", "a block count or 'auto'")])
def test_a_grid_below_1_or_not_a_number_is_refused(text, says, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["check", "k.cu", "--kind", "histogram", "--grid", text])
    assert stop.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.parametrize("text", ["inf", "nan", "0", "-1", "soon"])
def test_a_timeout_that_is_not_a_positive_finite_number_of_seconds_is_a_usage_error(text,
                                                                                  capsys):
    with pytest.raises(SystemExit) as stop:
        main(["check", "examples.python_kernels:histogram", "--kind", "histogram",
              f"--timeout={text}"])
    assert stop.value.code == 2 and "--timeout" in capsys.readouterr().err


@pytest.mark.parametrize("option, text", [("--keys", "1,,2"), ("--keys", ",1"),
                                          ("--samples", "0.5,,1")])
def test_an_empty_element_between_commas_is_refused_not_dropped(option, text, capsys):
    # dropped, "1,,2" ran two keys where the user meant three
    kind = "bin-histogram" if option == "--samples" else "histogram"
    with pytest.raises(SystemExit) as stop:
        main(["check", "examples.python_kernels:histogram", "--kind", kind, option, text])
    assert stop.value.code == 2
    assert f"{option} has an empty element at position" in capsys.readouterr().err


def test_an_empty_keys_value_is_an_empty_input():
    assert check_cli._keys("") == [] and check_cli._keys(" 0*3 , 1 ") == [0, 0, 0, 1]
    assert check_cli._keys("1,2,") == [1, 2]  # one comma may end it (as --bins 1.0, does)


def test_num_bins_without_keys_is_a_usage_error_not_a_silent_matrix_run(capsys):
    assert main(["check", "examples.python_kernels:histogram", "--kind", "histogram",
                 "--num-bins", "3"]) == 2
    assert "--num-bins goes with --keys" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["--kind", "scan", "--keys", "1,2", "--num-bins", "3"], "--kind scan takes no --num-bins"),
    (["--kind", "radix-sort", "--keys", "3,1", "--num-bins", "4"],
     "--kind radix-sort takes no --num-bins (its keys are full-width)"),
    (["--kind", "histogram", "--full", "--keys", "1,2", "--num-bins", "3"],
     "--full runs the whole matrix"),
    (["--kind", "scan", "--warp-size", "16"], "--warp-size is for --kind wave, not scan"),
    (["--kind", "histogram", "--dtype", "int8"], "--dtype goes with --keys, --samples or"),
    (["--kind", "histogram", "--define", "X=1"], "--define and --counts are for a .cu kernel"),
    (["--kind", "histogram", "--block", "64"], "--block and --grid are for a .cu kernel"),
], ids=["scan-num-bins", "radix-num-bins", "full-with-keys", "warp-size-for-scan",
        "dtype-without-keys", "define-for-a-callable", "block-for-a-histogram-callable"])
def test_an_option_the_kind_or_the_input_would_ignore_is_a_usage_error(argv, says, capsys):
    assert main(["check", "examples.python_kernels:histogram", *argv]) == 2
    assert says in capsys.readouterr().out


def test_a_single_edge_is_written_with_a_comma_so_it_is_not_read_as_a_bin_count():
    import numpy as np

    from histkit.conformance.binning_cases import BinCase
    from histkit.conformance.check import make_impl
    from histkit.conformance.reproduce_binning import command_line

    impl = make_impl("examples.python_kernels:bin_by_edges", "bin-histogram")
    case = BinCase("x", np.array([1.0]), np.array([1.0]), None)
    line = command_line(impl, "bin-histogram", case, case)
    assert "--bins 1.0, " in line + " ", line
    assert check_cli.bins_value(check_cli._numbers("--bins")("1.0,")).tolist() == [1.0]


def test_the_help_aligns_every_kind_and_names_binning_and_weighted_kernels(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = capsys.readouterr().out
    assert "binning of real values" in text and "weighted histogram" in text
    rows = [line for line in text.splitlines()
            if line.strip().split(" ")[0] in ("histogram", "bin-histogram-half-open",
                                              "weighted-histogram")]
    starts = {len(line) - len(line.lstrip(" ").split(" ", 1)[1].lstrip(" ")) for line in rows}
    assert len(rows) >= 3 and len(starts) == 1  # the rules start in one column
    assert "(default: [])" not in text and "--compile-only compiles" in text


def _handed_to_check(monkeypatch, argv):
    seen = {}

    def fake_check(impl, kind, **options):
        seen.update(options, impl=impl, kind=kind)
        return check_verdict.CheckReport(impl.describe(), kind)

    monkeypatch.setattr(check_module, "check", fake_check)
    assert main(argv) == 0
    return seen


def test_the_options_reach_check_as_given_and_shrinking_is_on_unless_refused(monkeypatch,
                                                                            tmp_path):
    kernel = tmp_path / "my.cu"
    kernel.write_text('extern "C" __global__ void histogram() {}\n')
    seen = _handed_to_check(monkeypatch, [
        "check", str(kernel), "--kind", "privatized", "--full", "--define", "A=1", "--block",
        "128", "--grid", "3", "--counts", "64", "--inputs", "numpy",
        "--timeout", "5"])
    impl = seen["impl"]
    assert (impl.path, seen["kind"], seen["quick"]) == (str(kernel), "privatized", False)
    assert impl.defines == (("A", "1"),) and (impl.block, impl.grid) == (128, 3)
    assert (impl.count_bits, impl.warp_size, seen["inputs"]) == (64, 32, "numpy")
    assert seen["timeout"] == 5.0 and seen["shrink_failures"] is True
    assert seen["keys"] is None and seen["quick"] is False and seen["in_process"] is False
    seen = _handed_to_check(monkeypatch, ["check", str(kernel), "--kind", "scan",
                                          "--no-shrink", "--in-process"])
    assert seen["shrink_failures"] is False and seen["quick"] is True and seen["grid"] is None
    assert seen["in_process"] is True
    seen = _handed_to_check(monkeypatch, ["check", str(kernel), "--kind", "wave",
                                          "--warp-size", "16"])
    assert seen["impl"].warp_size == 16


def test_the_verdict_names_what_is_judged_and_ends_in_pass_or_fail(capsys):
    clipped = "examples.python_kernels:histogram_clipped"
    assert main(["check", clipped, "--kind", "histogram", "--keys", "0,9",
                 "--num-bins", "4", "--no-shrink"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"histkit check {clipped} --kind histogram --no-shrink"  # as run
    assert lines[-1].startswith(f"FAIL: {clipped} as histogram: 0 pass, 1 FAIL")
    assert main(["check", "examples.python_kernels:histogram", "--kind", "histogram",
                 "--keys", "0,3", "--num-bins", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("PASS: examples.python_kernels:histogram as histogram: 1 pass")


@pytest.mark.parametrize("option", [["--sanitize", "racecheck"], ["--sanitize=racecheck"]])
def test_under_a_sanitizer_the_same_check_runs_without_its_sanitize_option(option,
                                                                          monkeypatch):
    commands = []

    class Done:
        returncode = 1

    monkeypatch.setattr(check_cli.subprocess, "run",
                        lambda command, env=None: commands.append(command) or Done())
    assert main(["check", "k.cu", "--kind", "scan", *option, "--grid", "1"]) == 1
    (command,) = commands
    assert command[:3] == ["compute-sanitizer", "--tool", "racecheck"]
    assert command[command.index("histkit") + 1:] == ["check", "k.cu", "--kind", "scan",
                                                       "--grid", "1"]
