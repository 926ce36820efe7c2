"""The Examples sections of the public docstrings run as doctests.

The modules are imported by their installed names (``histkit.oracles``, not a
path under src/), so what runs is what users import. Examples that need a GPU
carry ``# doctest: +SKIP``; the rest run here, GPU or not.
"""

import doctest
import importlib
import re

import pytest

# Each module with the least number of examples it must run: a docstring whose
# examples were all skipped or lost by an edit would otherwise pass unseen.
MODULES = {
    "histkit.oracles": 20,
    "histkit.gpu.api": 8,
    "histkit.gpu.binning": 1,
    "histkit.conformance.check": 4,
    "histkit.dask._histogram": 2,
    "histkit.dask._sort": 1,
    "histkit.dask._binning": 1,
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_docstring_examples_run(name):
    if name.startswith("histkit.dask"):
        pytest.importorskip("dask.array", reason="histkit[dask] is not installed")
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in finder.find(module, name):
        runner.run(test, out=report.append)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, "".join(report)
    # attempted leaves out the skipped examples
    assert results.attempted >= MODULES[name], (
        f"{name}: {results.attempted} examples ran, expected at least {MODULES[name]}")


# The API reference pages name the members they show; a public name added to a
# package's __all__ must be added to its page too, or the site leaves it out.
REFERENCE_PAGES = {
    "histkit.oracles": "oracles.md",
    "histkit.gpu": "gpu.md",
}


@pytest.mark.parametrize("name", sorted(REFERENCE_PAGES))
def test_api_reference_page_shows_every_public_name(name):
    from pathlib import Path

    page = Path(__file__).parents[1] / "docs" / "reference" / REFERENCE_PAGES[name]
    if not page.exists():
        pytest.skip(f"{page} is not in this tree (an installed copy of the tests)")
    shown = set(re.findall(r"[\w.]+", page.read_text()))
    missing = [public for public in importlib.import_module(name).__all__
               if public not in shown and not any(s.endswith("." + public) for s in shown)]
    assert not missing, f"docs/reference/{REFERENCE_PAGES[name]} leaves out {missing}"
