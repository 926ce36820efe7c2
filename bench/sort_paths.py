"""The stable sort's onesweep passes (counting and radix sorts) for each
__launch_bounds__ minimum of blocks per SM of onesweep_scatter, with CUB's
DeviceRadixSort of (key, index) pairs timed beside them: bench/sort_ab.py with
one variant per minimum. Every result is checked against cupy.argsort
(stable for these keys). Needs a GPU and CuPy; CUB through cuda.compute.

bench/results/sort-paths-h200-2026-11-30.json also holds a "ranges" column:
the pass structure onesweep replaced (each pass counted its digit, scanned,
then scattered: two reads of the keys per pass), timed by this script as of
commit 31f6123; the files up to sort-paths-h200-2026-12-02-session21-before.json
were written by its own loop (rows keyed "Gkeys_per_s"), later ones by
sort_ab.py's (rows keyed "G").

    python bench/sort_paths.py [--out bench/results]
"""

from __future__ import annotations

import argparse

import sort_ab
from _shared import write_results

MIN_BLOCKS = (2, 3, 4)  # onesweep_scatter's __launch_bounds__ minimum blocks per SM


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    variants = {f"min blocks {blocks}": {"ONESWEEP_MIN_BLOCKS": blocks,
                                         "WIDE_KEY_ONESWEEP_MIN_BLOCKS": blocks}
                for blocks in MIN_BLOCKS}
    write_results(args.out, "sort-paths", sort_ab.measure(variants))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
