"""The chapter demo's self-checks (which ``histkit verify`` confirms) say
MISMATCH when the oracle they show is wrong, in process (histkit.demo)."""

import io

import numpy as np
import pytest
from rich.console import Console

from histkit import demo

ORIGINAL = {name: getattr(demo.oracles, name)
            for name in ("privatized_histogram", "histogram", "counting_sort")}


def run(section, monkeypatch=None, **wrong):
    for name, replacement in wrong.items():
        monkeypatch.setattr(demo.oracles, name, replacement)
    console = Console(file=io.StringIO(), width=200)
    ok = demo.run_demo((section,), console=console)
    return ok, console.file.getvalue()


def test_every_section_is_confirmed_with_the_real_oracles():
    for section in ("7.1", "7.2", "7.3"):
        ok, text = run(section)
        assert ok and "MISMATCH" not in text, section


def one_bin_off(counts):
    counts = np.array(counts, copy=True)
    counts[0] += 1
    return counts


@pytest.mark.parametrize("wrong", ["privatized_histogram", "histogram"])
def test_7_2_is_a_mismatch_when_either_histogram_is_wrong(monkeypatch, wrong):
    replacements = {
        "privatized_histogram": lambda keys, num_bins, block=256: (
            one_bin_off(ORIGINAL["privatized_histogram"](keys, num_bins, block)[0]),
            ORIGINAL["privatized_histogram"](keys, num_bins, block)[1]),
        "histogram": lambda keys, num_bins: one_bin_off(ORIGINAL["histogram"](keys, num_bins)),
    }
    ok, text = run("7.2", monkeypatch, **{wrong: replacements[wrong]})
    assert not ok and "NO -- BUG" in text and "MISMATCH" in text


def sort_with_index(index_of):
    def counting_sort(keys, num_bins):
        sorted_keys, index = ORIGINAL["counting_sort"](keys, num_bins)
        return sorted_keys, index_of(np.array(index, copy=True), sorted_keys)
    return counting_sort


def swap_first_equal_pair(index, sorted_keys):
    i = int(np.flatnonzero(sorted_keys[:-1] == sorted_keys[1:])[0])
    index[i], index[i + 1] = index[i + 1], index[i]
    return index


def repeat_first(index, sorted_keys):
    index[1] = index[0]  # the same position twice, one never
    return index


def past_the_end(index, sorted_keys):
    index[np.argmax(index)] = len(index)
    return index


def negative(index, sorted_keys):
    index[np.argmax(index)] = -1  # NumPy would read it as the last position
    return index


@pytest.mark.parametrize("index_of,says", [
    (swap_first_equal_pair, "(stable): NO -- BUG"),
    (repeat_first, "MISMATCH"),
    (past_the_end, "MISMATCH"),
    (negative, "MISMATCH"),
])
def test_7_3_is_a_mismatch_when_the_sorts_index_is_wrong(monkeypatch, index_of, says):
    ok, text = run("7.3", monkeypatch, counting_sort=sort_with_index(index_of))
    assert not ok and says in text


def test_7_3_is_a_mismatch_when_a_bucket_holds_the_wrong_keys(monkeypatch):
    # still sorted, but one key moved into the next bucket: not where its
    # counts put it
    def counting_sort(keys, num_bins):
        sorted_keys, index = ORIGINAL["counting_sort"](keys, num_bins)
        sorted_keys = np.array(sorted_keys, copy=True)
        last_of_first = int(np.flatnonzero(sorted_keys == sorted_keys[0])[-1])
        sorted_keys[last_of_first] = sorted_keys[last_of_first + 1]
        return sorted_keys, index
    ok, text = run("7.3", monkeypatch, counting_sort=counting_sort)
    assert not ok and "[offset, offset+count) range: NO -- BUG" in text


@pytest.mark.parametrize("index,is_permutation", [
    ([2, 0, 1], True), ([], True),
    ([0, 0, 2], False),   # a position twice, one never
    ([0, 1, 3], False),   # past the end
    ([-1, 0, 1], False),  # negative: NumPy would mark the last position
])
def test_the_sort_checks_permutation_rule(index, is_permutation):
    assert demo._is_permutation(np.array(index, dtype=np.int64)) is is_permutation
