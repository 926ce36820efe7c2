"""Registers, stack and SASS length of histkit's main kernel builds, compiled
with NVRTC for one arch (no GPU needed): a change to a kernel or to
common.cuh compared before and after, as session 28 did for the verdict
board's flag (bench/NOTES.md):

    python bench/kernel_resources.py CUDA_DIR [ARCH]

CUDA_DIR holds the .cu sources (a checkout's cuda/, or a copy of an older
commit's). Needs cuobjdump on PATH or in $CUOBJDUMP (the pip wheel
nvidia-cuda-cuobjdump has one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from histkit.gpu import contract

# (source, defines): the fast kernel's layouts and gated builds as auto runs
# them, the partitioned kernels, the chapter's kernels, the sort.
BUILDS = [
    ("fast_histogram.cu", dict(COPIES="32", COALESCED="0", HOLD_RUNS="0", NARROW_COUNTERS="0")),
    ("fast_histogram.cu", dict(COPIES="1", COALESCED="0", HOLD_RUNS="0", NARROW_COUNTERS="1")),
    ("fast_histogram.cu", dict(COPIES="1", COALESCED="1", HOLD_RUNS="0", NARROW_COUNTERS="0")),
    ("fast_histogram.cu", dict(COPIES="1", COALESCED="1", HOLD_RUNS="0", NARROW_COUNTERS="0",
                               HK_GATE="1")),
    ("fast_histogram.cu", dict(COPIES="1", COALESCED="1", HOLD_RUNS="1", NARROW_COUNTERS="0",
                               HK_GATE="2")),
    ("partitioned_histogram.cu", dict(HK_GATE="3")),
    ("atomic_histogram.cu", {}),
    ("privatized_histogram.cu", {}),
    ("counting_sort.cu", {}),
]


def cubin_of(cuda_dir: Path, source: str, extra: dict, arch: str) -> bytes:
    from cuda.core import Program, ProgramOptions

    defines = contract.defines_for(source, {"KEY_T": "int", **extra})
    options = ProgramOptions(arch=arch, std="c++17", include_path=[str(cuda_dir)],
                             define_macro=sorted(defines.items()))
    text = (cuda_dir / source).read_text()
    return bytes(Program(text, "c++", options=options).compile("cubin").code)


def resources(cuobjdump: str, cubin: bytes) -> dict[str, tuple[str, int]]:
    """Each entry's 'REG:.. STACK:..' line and its SASS instruction count."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as file:
        file.write(cubin)
    try:
        usage = subprocess.run([cuobjdump, "--dump-resource-usage", file.name],
                               capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([cuobjdump, "-sass", file.name],
                              capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(file.name)
    counts: dict[str, int] = {}
    current = None
    for line in sass.splitlines():
        entry = re.match(r"\s*Function : (\w+)", line)
        if entry:
            current = entry.group(1)
            counts[current] = 0
        elif current and re.match(r"\s*/\*[0-9a-f]{4}\*/", line):
            counts[current] += 1
    found = re.findall(r"Function (\w+):\s*\n\s*(REG:\d+ STACK:\d+ SHARED:\d+ LOCAL:\d+)", usage)
    return {name: (line, counts.get(name, 0)) for name, line in found}


def main(argv: list[str]) -> None:
    cuda_dir = Path(argv[0])
    arch = argv[1] if len(argv) > 1 else "sm_90"
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not cuobjdump:
        sys.exit("cuobjdump not found: put it on PATH or name it in $CUOBJDUMP")
    for source, extra in BUILDS:
        tag = ",".join(f"{k}={v}" for k, v in extra.items())
        for name, (line, count) in resources(cuobjdump, cubin_of(cuda_dir, source, extra,
                                                                  arch)).items():
            print(f"{source:26s} {tag:58s} {name:24s} {line} SASS={count}")


if __name__ == "__main__":
    main(sys.argv[1:])
