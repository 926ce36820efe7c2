"""The demo reproduces the chapter's printed sample outputs.

The expected numbers are the chapter's own (Chapter 7's sample outputs), not
values produced by histkit.
"""

import subprocess
import sys

import pytest

from histkit.cli import main


@pytest.fixture(scope="module")
def demo_output():
    result = subprocess.run([sys.executable, "-m", "histkit", "demo"], capture_output=True,
                            text=True, env={"COLUMNS": "120", "PATH": ""}, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_demo_prints_the_chapters_7_1_loss(demo_output):
    assert "total counted: naive = 318, atomic = 1000, actual N = 1000" in demo_output
    assert "LOSES 682 of 1000" in demo_output


def test_demo_prints_the_chapters_7_2_atomic_counts(demo_output):
    assert "global-atomics kernel: 2048" in demo_output
    assert "privatized kernel:     128 (8 blocks x 16 buckets" in demo_output
    assert "16.0x fewer global atomics" in demo_output


def test_demo_prints_the_chapters_7_3_first_indices(demo_output):
    assert "1 9 17 25 33 41 49 57 65 73 81 89 97 105 113 121" in demo_output
    assert "stable): yes" in demo_output
    assert "MISMATCH" not in demo_output


def test_demo_options_explore_past_the_book(capsys):
    assert main(["demo", "--section", "7.1", "--n", "640", "--bins", "32",
                 "--distribution", "uniform", "--seed", "4", "--warp-size", "64"]) == 0
    out = capsys.readouterr().out
    assert "N = 640 keys, 32 buckets, waves of 64 lanes" in out


def test_demo_rejects_zero_bins():
    with pytest.raises(SystemExit):
        main(["demo", "--bins", "0"])


def test_verify_without_gpu_runs_self_checks_and_demo(capsys):
    assert main(["verify", "--gpu", "off"]) == 0
    out = capsys.readouterr().out
    assert "oracle self-checks" in out and "FAIL" not in out
    assert "GPU conformance: skipped" in out


def test_histkit_with_no_command_lists_the_commands_and_exits_2(capsys):
    from histkit.cli import main as histkit_main

    assert histkit_main([]) == 2
    said = capsys.readouterr().err
    assert all(command in said for command in ("demo", "verify", "check", "bench")), said


@pytest.mark.parametrize("command", ["demo", "verify", "bench", "check"])
def test_every_command_help_says_what_it_does(command, capsys):
    from histkit.cli import main as histkit_main

    with pytest.raises(SystemExit) as done:
        histkit_main([command, "--help"])
    assert done.value.code == 0
    usage, _, rest = capsys.readouterr().out.partition("\n\n")
    assert rest.strip() and not rest.lstrip().startswith("options:"), rest[:200]


def test_the_version_is_meson_builds_project_version():
    import re
    from pathlib import Path

    import histkit

    meson = (Path(__file__).resolve().parents[1] / "meson.build").read_text()
    assert histkit.__version__ == re.search(r"version: '([^']+)'", meson).group(1)
