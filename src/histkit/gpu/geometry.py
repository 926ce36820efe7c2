"""Launch geometry as data: what each wrapper launches, printable on request."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Geometry:
    kernel: str
    grid: int
    block: int
    shared_bytes: int = 0

    def __str__(self) -> str:
        return f"{self.kernel}<<<{self.grid}, {self.block}, {self.shared_bytes}>>>"

