"""histkit check for binning (kinds bin-histogram and bin-histogram-half-open):
the example callables' verdicts, the smallest input and reproducers that run,
the usage errors; on a GPU host, the example .cu kernel and its planted bugs."""

import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from histkit.conformance import check, check_output
from histkit.conformance.check_binning import cases_for, smaller_inputs
from histkit.conformance.loading import UsageError
from histkit.gpu import gpu_unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GPU_REASON = gpu_unavailable_reason()
needs_gpu = pytest.mark.skipif(GPU_REASON is not None, reason=f"no GPU: {GPU_REASON}")
EXAMPLE = "examples.python_kernels:"


def numpy_histogram(samples, bins, range):
    return np.histogram(samples, bins, range)


def edges_off_by_one_ulp(samples, bins, range):
    counts, edges = np.histogram(samples, bins, range)
    return counts, np.nextafter(edges, np.inf)


def test_np_histogram_itself_passes_numpy_s_rule_on_every_case():
    report = check(numpy_histogram, "bin-histogram", in_process=True)
    assert report.passed and report.counts() == {"pass": len(cases_for("bin-histogram")),
                                                 "FAIL": 0, "finding": 0, "skip": 0}


def test_binning_by_numpy_s_own_edges_passes_with_findings_where_numpy_parts_from_them():
    report = check(EXAMPLE + "bin_by_edges", "bin-histogram", in_process=True)
    assert report.passed, report.failures[:1]
    found = report.findings()
    assert list(found) == ["binned by numpy's own edges"]
    names = {case.name for case, _ in found["binned by numpy's own edges"]}
    assert "float16/estimate-misses-two-bins" in names
    assert f"{len(names)} findings" in report.summary()  # counted in the plural
    console = Console(record=True, width=200)
    check_output.print_findings(console, report)
    shown = console.export_text()
    assert f"({len(names)} cases)" in shown
    assert f"and {len(names) - check_output.FINDING_EXAMPLES} more" in shown  # none unsaid


def test_the_naive_estimate_fails_with_a_one_sample_input_whose_reproducers_fail_again():
    report = check(EXAMPLE + "bin_by_naive_estimate", "bin-histogram")
    assert not report.passed
    differ = next(g[0] for g in report.groups() if g[0].symptom == "bins differ")
    shrunk = differ.smallest
    assert shrunk.n <= 4
    again = check(EXAMPLE + "bin_by_naive_estimate", "bin-histogram", samples=shrunk.samples,
                  bins=shrunk.bins, range=shrunk.range)
    assert not again.passed
    for line in (differ.python_reproducer, differ.reproducer):
        assert line.startswith(("python3 -c", "histkit check")), line
    done = subprocess.run(["bash", "-c", differ.python_reproducer.replace(
        "python3 -c", f"{sys.executable} -c", 1)], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.startswith("FAIL"), done.stdout + done.stderr


def test_the_command_line_reproducer_of_a_shrunk_input_exits_1(tmp_path):
    report = check(EXAMPLE + "bin_by_naive_estimate", "bin-histogram",
                   cases=[c for c in cases_for("bin-histogram")
                          if c.name == "naive/float64/fast-histogram-63"])
    command = report.failures[0].reproducer
    assert "--samples" in command and "--bins" in command, command
    argv = command.split()[2:]
    done = subprocess.run([sys.executable, "-m", "histkit", "check", *argv],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "FAIL" in done.stdout, done.stdout + done.stderr


def test_a_half_open_last_bin_fails_numpy_s_rule_and_passes_cub_s():
    assert not check(EXAMPLE + "bin_half_open", "bin-histogram", in_process=True).passed
    assert check(EXAMPLE + "bin_half_open", "bin-histogram-half-open", in_process=True).passed
    assert not check(EXAMPLE + "bin_by_edges", "bin-histogram-half-open", in_process=True).passed


def test_returned_edges_are_judged_too():
    report = check(edges_off_by_one_ulp, "bin-histogram", samples=np.array([0.5, 1.5]),
                   bins=4, range=(0.0, 2.0))
    assert not report.passed and "edges differ" in report.failures[0].detail


def test_the_half_open_kind_takes_every_case_once_under_its_own_rule():
    cases = cases_for("bin-histogram-half-open")
    names = [case.name for case in cases]
    assert len(set(names)) == len(names) == len(cases_for("bin-histogram"))
    assert all(name.endswith("/cub") and not case.right_closed_last
               for name, case in zip(names, cases, strict=True))


def test_a_shrunk_input_keeps_bins_and_range_and_halves_the_samples():
    case = cases_for("bin-histogram")[0]
    first = next(smaller_inputs(case))
    assert first.n == case.n // 2 and first.bins is case.bins and first.range == case.range


def test_the_python_reproducer_writes_every_float32_sample_exactly():
    from histkit.conformance.check_binning import BinningCallable, one_case
    from histkit.conformance.reproduce_binning import python_call

    samples = np.array([1.0000001, float("nan"), -0.0, float("inf")], dtype=np.float32)
    case = one_case("bin-histogram", samples, 3, (0.0, 2.0))
    code = python_call(BinningCallable(numpy_histogram, "bin-histogram", name="m:f"),
                       "bin-histogram", case)
    literal = code[code.index("np.array(") + len("np.array("):code.index(", dtype=")]
    values = np.array(eval(literal, {"float": float}), dtype=np.float32)  # noqa: S307
    assert np.array_equal(values, samples, equal_nan=True)
    assert np.array_equal(np.signbit(values), np.signbit(samples))


@pytest.mark.parametrize("arguments,message", [
    ({"keys": np.array([1, 2])}, "not keys="),
    ({"samples": np.zeros((2, 2))}, "one-dimensional"),
    ({"samples": np.zeros(3, np.complex64), "bins": 3}, "float or integer"),
    ({"samples": np.zeros(3)}, "needs bins="),
    ({"samples": np.zeros(3), "bins": 3, "range": (1.0, 0.0)}, "refuses this input"),
])
def test_a_binning_check_asked_wrongly_is_a_usage_error_before_any_case(arguments, message):
    with pytest.raises(UsageError, match=message):
        check(numpy_histogram, "bin-histogram", **arguments)


def test_samples_for_an_integer_kind_is_a_usage_error():
    with pytest.raises(UsageError, match="samples= is for the binning kinds"):
        check(EXAMPLE + "histogram", "histogram", samples=np.zeros(3))


def test_a_callable_that_cannot_take_samples_bins_range_is_refused():
    with pytest.raises(UsageError, match=r"f\(samples, bins, range\)"):
        check(lambda samples: samples, "bin-histogram")


def _binning_bugs():
    bugs = tomllib.loads((ROOT / "examples" / "bugs.toml").read_text())["bug"]
    return [bug for bug in bugs if bug["file"] == "bin_histogram.cu"]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("kind", ["bin-histogram", "bin-histogram-half-open"])
def test_the_example_cuda_binning_kernel_passes_both_rules(kind):
    # (the half-open kind builds it with RIGHT_CLOSED_LAST=0)
    report = check(str(ROOT / "examples" / "cuda" / "bin_histogram.cu"), kind)
    assert report.passed, report.failures[:1]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("bug", _binning_bugs(), ids=lambda bug: bug["id"])
def test_each_planted_binning_bug_fails_with_a_small_input(bug, tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    import check_examples

    report = check(str(check_examples.plant(bug, tmp_path)), bug["kind"])
    assert not report.passed
    assert report.failures[0].smallest.n <= 64, report.failures[0]


@pytest.mark.parametrize("argv, says", [
    (["--samples", "1.5"], "--samples needs --bins"),
    (["--samples", "1.5", "--bins", "2", "--range", "1"], "--range takes LO,HI"),
    (["--samples", "0.1", "--bins", "2", "--dtype", "float32"], "0.1 is not a float32"),
    (["--samples", "1.5,x", "--bins", "2"], "--samples takes comma-separated numbers"),
    (["--bins", "2"], "--bins and --range go with --samples"),
    (["--keys", "1", "--num-bins", "2"], "takes --samples and --bins, not --keys"),
    (["--samples", "1.5", "--case", "size/float64/uniform/n=1/even"], "not both"),
])
def test_a_binning_command_line_asked_wrongly_exits_2_naming_the_problem(argv, says, capsys):
    from histkit.cli import main

    try:
        code = main(["check", EXAMPLE + "bin_by_edges", "--kind", "bin-histogram", *argv])
    except SystemExit as stop:  # argparse's own refusals
        code = stop.code
    captured = capsys.readouterr()
    assert code == 2 and says in captured.out + captured.err


def test_the_json_report_of_a_shrunk_binning_failure_names_its_input(tmp_path):
    import json

    from histkit.cli import main

    out = tmp_path / "report.json"
    code = main(["check", EXAMPLE + "bin_by_naive_estimate", "--kind", "bin-histogram",
                 "--in-process", "--json", str(out)])
    report = json.loads(out.read_text())
    assert code == 1 and not report["passed"]
    inputs = [f["input"] for f in report["failures"] if f["shrunk"]]
    assert inputs and inputs[0]["samples"] and inputs[0]["samples_dtype"].startswith("float")


def test_the_pytest_plugin_makes_one_item_per_binning_and_weighted_case():
    from histkit.conformance.pytest_plugin import conformance_cases, judge_case

    mark = conformance_cases("bin-histogram")
    cases, ids = mark.args[1], mark.kwargs["ids"]
    assert len(cases) == len(cases_for("bin-histogram")) == len(set(ids))
    case = next(c for c in cases if c.name == "naive/float64/fast-histogram-63")
    judge_case(EXAMPLE + "bin_by_edges", "bin-histogram", case)  # passes: returns
    with pytest.raises(pytest.fail.Exception, match="bins differ"):
        judge_case(EXAMPLE + "bin_by_naive_estimate", "bin-histogram", case)
    weighted = conformance_cases("weighted-histogram").args[1]
    with pytest.raises(pytest.fail.Exception, match="expected 1.0"):
        judge_case(EXAMPLE + "weighted_bincount", "weighted-histogram", weighted[0])
