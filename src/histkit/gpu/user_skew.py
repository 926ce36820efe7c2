"""Schedule skew for a user's kernel: the text histkit check compiles for its
skewed cases.

histkit's own kernels include cuda/schedule_skew.cuh (through common.cuh) and
call hk_skew_warps() at entry, so the conformance suite's skewed cases run
them with the warps of each block out of step: a missing barrier shows as a
wrong count or order, not only under compute-sanitizer racecheck. A user's
.cu file knows nothing of that header. For those cases it is compiled with the
header included first (from there on every ``__syncthreads()`` skews the warps
after the barrier, in an order that turns at every barrier: HK_SKEW_ALTERNATE)
and ``hk_skew_warps();`` inserted at the top of each ``__global__`` function's
body, on the line of its opening brace, so the compiler's messages keep the
file's own line numbers. Without the skew defines the file is compiled as
written. (The alternating order is for user kernels only: histkit's own keep
the order their table mutants were judged with, byte for byte.)
"""

from __future__ import annotations

import re

SKEW_HEADER = "schedule_skew.cuh"
# The define every skewed build carries (histkit.gpu.contract.schedule_defines).
SKEW_DEFINE = "HK_SKEW_NS"
ENTRY_CALL = " hk_skew_warps();"
_GLOBAL = re.compile(r"\b__global__\b")


def is_users(source_name: str) -> bool:
    """A user's kernel file: named by its path (histkit's own are named bare)."""
    return "/" in source_name or "\\" in source_name


def skews(source_name: str, defines: dict[str, str]) -> bool:
    return SKEW_DEFINE in defines and is_users(source_name)


def skewed_text(text: str) -> str:
    """text with the skew header included first and the entry call inserted
    into every __global__ function's body."""
    for start in reversed(body_starts(text)):
        text = text[:start] + ENTRY_CALL + text[start:]
    return f'#define HK_SKEW_ALTERNATE 1\n#include "{SKEW_HEADER}"\n#line 1\n{text}'


def body_starts(text: str) -> list[int]:
    """The offsets just past the opening brace of each __global__ function
    defined in text (declarations have none), comments and literals ignored."""
    code = _blank_comments_and_literals(text)
    starts = []
    for match in _GLOBAL.finditer(code):
        depth, seen_parameters = 0, False
        for at in range(match.end(), len(code)):
            char = code[at]
            if char == "(":
                depth, seen_parameters = depth + 1, True
            elif char == ")":
                depth -= 1
            elif depth == 0 and char == ";":
                break  # a declaration
            elif depth == 0 and char == "{" and seen_parameters:
                starts.append(at + 1)
                break
    return starts


def _blank_comments_and_literals(text: str) -> str:
    """text with comments and string and character literals made spaces
    (newlines kept, so offsets and lines stay those of text)."""
    out = list(text)
    at, end = 0, len(text)
    while at < end:
        two = text[at:at + 2]
        if two in ("//", "/*"):
            close = text.find("\n" if two == "//" else "*/", at + 2)
            stop = end if close < 0 else close + (0 if two == "//" else 2)
        elif text[at] in "\"'":
            stop = at + 1
            while stop < end and text[stop] != text[at] and text[stop] != "\n":
                stop += 2 if text[stop] == "\\" else 1
            stop = min(stop + 1, end)
        else:
            at += 1
            continue
        for blank in range(at, stop):
            if out[blank] != "\n":
                out[blank] = " "
        at = stop
    return "".join(out)
