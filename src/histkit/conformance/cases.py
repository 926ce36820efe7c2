"""Named, seeded conformance cases: distribution x N x K.

Every case regenerates the same keys from (distribution, n, num_bins, seed),
so a failure report is enough to reproduce it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histkit.distributions import make_keys

DISTRIBUTIONS = ("uniform", "onebin", "zipf", "sorted", "round-robin")
EDGE_SIZES = (0, 1, 31, 32, 33, 255, 256, 257)  # the block is 256: block +/- 1
MEDIUM = 1 << 20
LARGE = 1 << 28
HUGE = (1 << 31) + 17  # past 32-bit indexing


@dataclass(frozen=True)
class Case:
    distribution: str
    n: int
    num_bins: int
    seed: int = 0
    dtype: str = "int32"

    @property
    def name(self) -> str:
        return f"{self.distribution}/N={self.n}/K={self.num_bins}/{self.dtype}"

    def keys(self) -> np.ndarray:
        if self.n >= HUGE:
            return _huge_keys(self)
        return make_keys(self.distribution, self.n, self.num_bins, self.seed, np.dtype(self.dtype))


def _huge_keys(case: Case) -> np.ndarray:
    # Drawn directly in the narrow dtype: no 8-byte-per-key intermediate.
    rng = np.random.default_rng(case.seed)
    return rng.integers(0, case.num_bins, size=case.n, dtype=np.dtype(case.dtype))


def all_cases(quick: bool = False) -> list[Case]:
    cases = [Case(d, n, k, seed=n) for d in DISTRIBUTIONS for n in EDGE_SIZES for k in (10, 256)]
    cases += [Case(d, MEDIUM, k, seed=1) for d in DISTRIBUTIONS for k in (16, 256, 4096, 65536)]
    cases += [Case("uniform", MEDIUM, 1 << 20, seed=1)]
    cases += [Case(d, 4099, 100, seed=2, dtype=t)
              for d in ("uniform", "onebin") for t in ("int8", "uint16", "int64", "uint64")]
    if not quick:
        cases += [Case(d, LARGE, k, seed=3) for d in DISTRIBUTIONS for k in (256, 65536)]
        cases += [Case("uniform", HUGE, 256, seed=4, dtype="uint8")]
    return cases
