"""Launch geometry as data: what each wrapper launches, printable on request."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Geometry:
    kernel: str
    grid: int
    block: int
    shared_bytes: int = 0
    # A cooperative launch: every block resident at once, or the launch fails
    # (resident_sort's blocks wait for each other).
    cooperative: bool = False

    def __str__(self) -> str:
        return f"{self.kernel}<<<{self.grid}, {self.block}, {self.shared_bytes}>>>"

