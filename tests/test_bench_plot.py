"""histkit bench's plot: the histogram rows and, below them, the sort and radix rows."""

import pytest

from histkit.gpu.bench import plot

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
