"""Compiles cuda/*.cu with NVRTC (through cuda.core) behind an on-disk cache.

The cache key covers everything that changes the binary: the source, every
header it includes, the defines and options, the target arch and the NVRTC
version. Entries are written atomically (temporary file, then rename) and
carry a checksum; an entry that fails it is rebuilt, never trusted.
``HISTKIT_CACHE_DIR`` moves the cache; ``HISTKIT_CUDA_DIR`` points at another
copy of the kernel sources.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from functools import cache
from pathlib import Path

from histkit.gpu import user_skew
from histkit.gpu.errors import GpuUnavailableError, KernelCompileError

CACHE_FORMAT = b"histkit-cubin-v1\n"
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


@cache
def kernel_dir() -> Path:
    """The folder holding the .cu sources (installed inside the package)."""
    here = Path(__file__).resolve().parent
    candidates = [os.environ.get("HISTKIT_CUDA_DIR"), here.parent / "cuda",
                  here.parents[2] / "cuda"]  # a source checkout: <repo>/cuda
    for candidate in candidates:
        if candidate and (Path(candidate) / "common.cuh").is_file():
            return Path(candidate)
    raise FileNotFoundError(f"histkit's CUDA sources were not found in {candidates}")


def cache_dir() -> Path:
    root = os.environ.get("HISTKIT_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "histkit" / "kernels"


def _locate(name: str, near: Path | None) -> Path:
    """A source or header: an absolute path as given (a user's kernel), else next to
    the file that includes it, else in histkit's kernel folder."""
    path = Path(name)
    if path.is_absolute():
        return path
    if near is not None and (near / name).is_file():
        return near / name
    return kernel_dir() / name


def _sources(source_name: str) -> dict[str, str]:
    """The source and, recursively, every local header it includes."""
    found: dict[str, str] = {}
    pending: list[tuple[str, Path | None]] = [(source_name, None)]
    while pending:
        name, near = pending.pop()
        if name in found:
            continue
        path = _locate(name, near)
        found[name] = path.read_text()
        pending.extend((header, path.parent) for header in _INCLUDE.findall(found[name]))
    return found


def files_of(source_name: str) -> set[str]:
    """The names of the source and of every local header it includes."""
    return set(_sources(source_name))


def _include_dirs(source_name: str) -> list[str]:
    dirs = [str(kernel_dir())]
    if Path(source_name).is_absolute():
        dirs.insert(0, str(Path(source_name).parent))
    return dirs


@cache
def nvrtc_version() -> tuple[int, int]:
    try:
        from cuda.bindings import nvrtc
    except ImportError as error:
        raise GpuUnavailableError(f"cuda-python is not installed ({error}); install the gpu "
                                  f"extra: python3 -m pip install \"histkit[gpu]\"") from None
    status, major, minor = nvrtc.nvrtcVersion()
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise GpuUnavailableError(f"NVRTC is not usable: {status!r}")
    return major, minor


def _options(defines: dict[str, str], arch: str, source_name: str = ""):
    from cuda.core import ProgramOptions

    # The program's name is what NVRTC's errors call the file: "hist.cu(4): error ...".
    return ProgramOptions(name=Path(source_name).name or "default_program", arch=arch,
                          std="c++17", include_path=_include_dirs(source_name),
                          define_macro=sorted(defines.items()) or None)


def _option_words(defines: dict[str, str], arch: str, source_name: str = "") -> list[str]:
    return [f"--gpu-architecture={arch}", "--std=c++17",
            *(f"-I{d}" for d in _include_dirs(source_name)),
            *(f"-D{k}={v}" for k, v in sorted(defines.items()))]


def _program(source_name: str, defines: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The text NVRTC compiles for source_name, and every file it reads: a
    user's file in a skewed build gets the schedule skew (user_skew)."""
    files = _sources(source_name)
    text = files[source_name]
    if user_skew.skews(source_name, defines):
        text = user_skew.skewed_text(text)
        files = {**files, **_sources(user_skew.SKEW_HEADER)}
    return text, files


def cache_key(source_name: str, defines: dict[str, str], arch: str) -> str:
    text, files = _program(source_name, defines)
    material = {"sources": files, "program": text,
                "options": _option_words(defines, arch, source_name),
                "nvrtc": nvrtc_version(), "format": CACHE_FORMAT.decode()}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _read_entry(path: Path) -> bytes | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    header_len = len(CACHE_FORMAT) + 64 + 1
    if not blob.startswith(CACHE_FORMAT) or len(blob) < header_len:
        return None
    digest = blob[len(CACHE_FORMAT):header_len - 1].decode("ascii", "replace")
    payload = blob[header_len:]
    return payload if hashlib.sha256(payload).hexdigest() == digest else None


def _write_entry(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(payload).hexdigest().encode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(CACHE_FORMAT + digest + b"\n" + payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def compile_cubin(source_name: str, defines: dict[str, str], arch: str) -> bytes:
    """The cubin for one .cu file, from the cache or freshly compiled."""
    key = cache_key(source_name, defines, arch)
    path = cache_dir() / f"{Path(source_name).stem}-{arch}-{key[:40]}.cubin"
    cached = _read_entry(path)
    if cached is not None:
        return cached
    from cuda.core import Program

    source = _program(source_name, defines)[0]
    try:
        program = Program(source, "c++", options=_options(defines, arch, source_name))
        payload = bytes(program.compile("cubin").code)
    except Exception as error:  # NVRTCError: its message is the compile log
        raise KernelCompileError(source_name, str(error),
                                 _option_words(defines, arch, source_name), source) from error
    with contextlib.suppress(OSError):  # a read-only cache costs a recompile, no more
        _write_entry(path, payload)
    return payload
