"""What `histkit verify` prints (conformance/report.py), from a made-up run:
a line of counts per kernel column, every FAIL in full, three findings a
column and how many more, why a run stopped, and the totals."""

from types import SimpleNamespace

from rich.console import Console

from histkit.conformance.report import SHOWN_FINDINGS, print_report


def _result(kernel, status, case, detail=""):
    return SimpleNamespace(kernel=kernel, case=SimpleNamespace(name=case),
                           cell=SimpleNamespace(status=status, detail=detail))


def _printed(results, stopped="", seconds=None):
    console = Console(record=True, width=240, color_system=None)
    print_report(console, SimpleNamespace(results=results, stopped=stopped), seconds)
    return console.export_text()


def test_each_column_gets_its_counts_and_every_fail_is_printed_in_full():
    results = ([_result("fast", "pass", f"c{i}") for i in range(3)]
               + [_result("fast", "FAIL", "uniform/N=33", "bin 2 is 3, want 4"),
                  _result("atomic", "skip", "huge"), _result("atomic", "FAIL", "[odd]/N=1",
                                                              "wrote [past] its end")])
    text = _printed(results, seconds=2.25)
    rows = {line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:6]]
            for line in text.splitlines() if line.count("│") >= 6}
    assert rows["fast"] == ["3", "1", "0", "0"] and rows["atomic"] == ["0", "1", "0", "1"]
    assert "2 FAIL" in text
    assert "FAIL fast on uniform/N=33: bin 2 is 3, want 4" in text
    assert "FAIL atomic on [odd]/N=1: wrote [past] its end" in text  # markup escaped
    assert text.rstrip().endswith("totals: 3 pass, 2 FAIL, 0 finding, 1 skip in 2.2 s")


def test_findings_are_sampled_per_column_and_the_rest_counted():
    results = [_result("naive", "finding", f"case{i}", f"lost {i}")
               for i in range(SHOWN_FINDINGS + 2)]
    results.append(_result("racy", "finding", "one", "lost 9"))
    results += [_result("wave", "finding", f"w{i}", "lost") for i in range(SHOWN_FINDINGS)]
    text = _printed(results)
    assert "more findings of wave" not in text  # exactly as many as are shown
    shown = [line for line in text.splitlines() if line.strip().startswith("finding naive")]
    assert len(shown) == SHOWN_FINDINGS and "finding naive on case0: lost 0" in text
    assert "... and 2 more findings of naive (in the JSON report)" in text
    assert "finding racy on one: lost 9" in text and "more findings of racy" not in text
    lines = [line.strip() for line in text.splitlines()]
    assert not any(line.startswith("FAIL ") or line.endswith(" FAIL") for line in lines)


def test_a_stopped_run_says_why_and_totals_without_a_time():
    text = _printed([_result("fast", "pass", "a")], stopped="stopped: the GPU hung")
    assert "stopped: the GPU hung" in text
    assert text.rstrip().endswith("totals: 1 pass, 0 FAIL, 0 finding, 0 skip")
