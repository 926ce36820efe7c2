"""The host's picture of the kernels' layout, checked without a GPU."""

import re
from pathlib import Path

import pytest

from histkit.gpu import kernels

CUDA = Path(__file__).resolve().parents[1] / "cuda"


def cuda_define(source: str, name: str) -> int:
    text = (CUDA / source).read_text()
    found = re.search(rf"^#define {name} \(?(\d+)", text, re.MULTILINE)
    assert found, f"{source} has no numeric #define {name}"
    return int(found.group(1))


@pytest.mark.parametrize("num_bins,passes", [(1, 1), (2, 1), (256, 1), (257, 2), (65536, 2),
                                             (65537, 3), (1 << 20, 3), (1 << 24, 3),
                                             ((1 << 24) + 1, 4), (1 << 32, 4)])
def test_sort_takes_one_8_bit_digit_pass_per_byte_of_the_largest_bin(num_bins, passes):
    shifts = kernels.digit_shifts(num_bins)
    assert shifts == tuple(8 * p for p in range(passes))
    # every bin below num_bins is covered by the digits, and no digit is idle
    assert (num_bins - 1) >> (shifts[-1] + 8) == 0
    assert num_bins == 1 or (num_bins - 1) >> shifts[-1] > 0


def test_python_constants_match_the_cuda_defines():
    assert 1 << cuda_define("partitioned_histogram.cu", "PART_LOW_BITS") == kernels.PARTITION_BINS
    assert cuda_define("partitioned_histogram.cu", "MAX_PARTS") == kernels.MAX_PARTITIONS
    assert cuda_define("partitioned_histogram.cu", "PART_THREADS") == kernels.PARTITION_THREADS
    assert (cuda_define("partitioned_histogram.cu", "COUNT_THREADS")
            == kernels.PARTITION_COUNT_THREADS)
    assert (cuda_define("partitioned_histogram.cu", "PART_THREADS")
            * cuda_define("partitioned_histogram.cu", "PART_ITEMS")) == kernels.PARTITION_TILE
    assert cuda_define("counting_sort.cu", "DIGIT_BITS") == kernels.DIGIT_BITS
    tile_threads = 32 * cuda_define("counting_sort.cu", "TILE_WARPS")
    assert tile_threads == kernels.TILE_THREADS
    assert tile_threads * cuda_define("counting_sort.cu", "TILE_ITEMS") == kernels.TILE_KEYS
