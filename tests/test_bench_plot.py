"""histkit bench's plot: the histogram rows and, below them, the sort and radix rows."""

import pytest

from histkit.bench.kernels import plot

RESULTS = {
    "N": 1 << 24, "device": "a test GPU",
    "roofline": {"read_TBps": 4.2, "copy_TBps": 4.1},
    "histogram": [{"K": k, "distribution": d, "TBps": {"histkit fast": 3.0, "CUB": 1.0}}
                  for k in (16, 256) for d in ("uniform", "zipf")],
    "sort": [{"K": k, "distribution": d, "Gkeys_per_s": {"histkit stable": 90.0, "CUB": 100.0}}
             for k in (256, 65536) for d in ("uniform", "zipf")],
    "radix": [{"K": "int32 keys", "Gkeys_per_s": {"histkit radix": 24.0, "CUB": 31.0}}],
}


@pytest.mark.parametrize("parts", [("histogram", "sort", "radix"), ("sort",), ("radix",),
                                   ("histogram",)])
def test_every_part_of_a_run_is_plotted_whichever_parts_ran(parts, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    results = {**RESULTS, **{part: [] for part in ("histogram", "sort", "radix")
                             if part not in parts}}
    seen = {}
    real_savefig = plt.Figure.savefig

    def savefig(figure, path, **options):
        seen["titles"] = [ax.get_title() for ax in figure.axes if ax.get_visible()]
        return real_savefig(figure, path, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plt.Figure, "savefig", savefig)
        plot(results, tmp_path / "bench.png")
    assert (tmp_path / "bench.png").stat().st_size > 0
    titles = seen["titles"]
    assert sum(t.startswith("histogram, ") for t in titles) == (
        2 if "histogram" in parts else 0)
    assert sum(t.startswith("stable sort") for t in titles) == (2 if "sort" in parts else 0)
    assert sum(t.startswith("radix sort") for t in titles) == (1 if "radix" in parts else 0)


def test_each_panel_shows_its_own_rows_and_each_bar_its_own_figure(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    # every figure is distinct, so a row plotted in the wrong panel shows
    results = {
        "N": 1 << 24, "device": "a test GPU",
        "roofline": {"read_TBps": 4.2, "copy_TBps": 4.1},
        "histogram": [{"K": k, "distribution": d, "TBps": {"histkit fast": k + i / 10}}
                      for i, d in enumerate(("uniform", "zipf")) for k in (16, 256)],
        "sort": [{"K": k, "distribution": d,
                  "Gkeys_per_s": {"histkit stable": k + i, "CUB": k + i + 0.5}}
                 for k in (256, 65536) for i, d in enumerate(("uniform", "zipf"))],
        "radix": [],
    }
    seen = {}
    real_savefig = plt.Figure.savefig

    def savefig(figure, path, **options):
        for ax in figure.axes:
            if not ax.get_visible():
                continue
            bars = sorted((round(p.get_x() + p.get_width() / 2, 6), p.get_height())
                          for p in ax.patches)
            seen[ax.get_title()] = ([tuple(line.get_ydata()) for line in ax.get_lines()
                                     if line.get_label() == "histkit fast"], bars)
        return real_savefig(figure, path, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plt.Figure, "savefig", savefig)
        plot(results, tmp_path / "bench.png")
    assert seen["histogram, uniform"][0] == [(16.0, 256.0)]
    assert seen["histogram, zipf"][0] == [(16.1, 256.1)]
    for k in (256, 65536):
        title = f"stable sort with indices, K = {k} ({1 << 24} keys)"
        # two bars per distribution, histkit's left of CUB's, centred on it
        assert seen[title][1] == [(-0.2, k), (0.2, k + 0.5), (0.8, k + 1), (1.2, k + 1.5)]
