"""Argument types the histkit commands share (one layer below the commands,
so that each command's parser can live with its command)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def bounded_int(low: int, high: int):
    """An argparse type: an int in [low, high], else a usage error naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}]; got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (at most a day),
    else a usage error saying so."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, 86400]; "
                                         f"got {text}")
    return value


positive_seconds.__name__ = "seconds"


def writable_file(text: str) -> str:
    """An argparse type: a file path the run can write at its end, checked now
    (a missing folder, a folder, a read-only place), so that no work is lost."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: no folder {folder}")
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is read-only")
    if not path.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: folder {folder} is read-only")
    # os.access says yes to root everywhere, and to places such as /proc or
    # /sys that refuse the write itself: opening the file is the only proof.
    existed = path.exists()
    try:
        with open(path, "a"):
            pass
    except OSError as error:
        raise argparse.ArgumentTypeError(
            f"cannot write {text}: {error.strerror or error}") from None
    if not existed:
        path.unlink()
    return text


writable_file.__name__ = "file"


def join_negative_values(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """``--keys -1,2`` as ``--keys=-1,2``: argparse takes a word starting with
    '-' for an option unless it is a plain negative number."""
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word in options:
            value = next(words, None)
            if value is not None and value.startswith("-") and value[1:2].isdigit():
                out.append(f"{word}={value}")
                continue
            out.append(word)
            if value is not None:
                out.append(value)
            continue
        out.append(word)
    return out
