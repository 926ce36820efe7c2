"""bench/results holds the latest result of each maintained benchmark, each
cited from the docs: no archive of runs, no file nobody reads."""

import re
from pathlib import Path

import pytest

from histkit.bench.common import RESULT_NAME, replace_older_results, result_stem

ROOT = Path(__file__).parents[1]
RESULTS = ROOT / "bench" / "results"


def _cited_text() -> str:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(page.read_text() for page in pages)


def test_every_result_file_is_named_by_its_benchmark_date_and_commit():
    for path in RESULTS.iterdir():
        assert RESULT_NAME.match(path.name), f"{path.name}: not <benchmark>-<date>-<commit>"


def test_each_benchmark_keeps_one_run_only():
    runs: dict[str, set[str]] = {}
    for path in RESULTS.iterdir():
        runs.setdefault(RESULT_NAME.match(path.name)["benchmark"], set()).add(path.stem)
    kept = {benchmark: stems for benchmark, stems in runs.items() if len(stems) > 1}
    assert not kept, f"older runs kept beside the latest: {kept}"


def test_every_result_file_is_cited_from_the_readme_or_the_docs():
    text = _cited_text()
    uncited = [p.name for p in RESULTS.iterdir() if p.name not in text]
    assert not uncited, f"result files no page cites: {uncited}"


def test_a_new_result_replaces_the_older_runs_of_its_benchmark_alone(tmp_path):
    for name in ("cpu-2core-2026-12-01-abc1234.json", "cpu-2core-busy-2026-12-01-abc1234.json",
                 "gpu-h200-2026-12-01-abc1234.json", "gpu-h200-2026-12-01-abc1234.png",
                 "notes.txt"):
        (tmp_path / name).write_text("{}")
    new = tmp_path / "gpu-h200-2026-12-05-def5678-dirty.json"
    new.write_text("{}")
    removed = replace_older_results(new)
    assert sorted(p.name for p in removed) == ["gpu-h200-2026-12-01-abc1234.json",
                                               "gpu-h200-2026-12-01-abc1234.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cpu-2core-2026-12-01-abc1234.json", "cpu-2core-busy-2026-12-01-abc1234.json",
        "gpu-h200-2026-12-05-def5678-dirty.json", "notes.txt"]


@pytest.mark.parametrize(("device", "named"), [("NVIDIA H200", "h200"),
                                               ("NVIDIA H100 80GB HBM3", "h100"),
                                               ("NVIDIA A100-SXM4-40GB", "a100")])
def test_a_result_is_named_by_the_gpu_model(device, named, monkeypatch):
    import histkit.bench.common as common

    monkeypatch.setattr(common, "short_commit", lambda: "abc1234")
    assert result_stem("gpu", device, "2026-12-05") == f"gpu-{named}-2026-12-05-abc1234"


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def test_every_relative_link_of_the_readme_and_docs_names_a_file_that_exists():
    # (as the Markdown is read where it lies: on GitHub, in an editor; the
    # site build checks its own copy with mkdocs --strict)
    broken, checked = [], 0
    for page in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            checked += 1
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
    assert checked > 50  # (the pattern still finds the links)
