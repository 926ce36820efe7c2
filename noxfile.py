"""histkit's sessions. ``nox`` alone runs the tests; ``nox -l`` lists them all."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

LINT_PATHS = ["src", "tests", "bench", "examples", "noxfile.py"]

# The test suite peaks at about 1.5 GiB in one process (2.5 GiB in two workers
# on 2 cores, docs/contributing.md): a pytest-xdist worker per core, as many as
# the available memory holds at this much each.
TEST_WORKER_GIB = 2
MAX_TEST_WORKERS = 8


def _available_gib() -> float | None:
    """The memory the kernel says new work can take (MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _test_workers() -> list[str]:
    """pytest-xdist's -n for this machine: one worker per core, at most one
    per TEST_WORKER_GIB of available memory and MAX_TEST_WORKERS; none (plain
    pytest) where that is one. `nox -s tests -- -n 0` overrides it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = min(cores or 1, MAX_TEST_WORKERS)
    available = _available_gib()
    if available is not None:
        workers = min(workers, int(available // TEST_WORKER_GIB))
    return ["-n", str(workers)] if workers > 1 else []


@nox.session
def tests(session: nox.Session) -> None:
    """Build histkit and run the test suite, the large tests left out.

    GPU tests skip without a GPU; the compile tests need the NVRTC the gpu
    extra installs, and fail without it; matplotlib, so the benchmark's plot
    is drawn in a test rather than skipped. Tests marked `large` (over 2^31
    keys, GBs of memory, minutes of compiling) are left out: `nox -s
    tests_large` runs them."""
    session.install(".[test,gpu,dask]", "matplotlib>=3.7", "pytest-xdist>=3.5")
    session.run("pytest", "-m", "not large", *_test_workers(), *session.posargs,
                env={"HISTKIT_REQUIRE_NVRTC": "1"})


@nox.session(default=False)
def tests_large(session: nox.Session) -> None:
    """The tests marked `large` alone (over 2^31 keys, GBs, full compile sweeps).

    Over 2^31 keys on the CPU oracles, GBs of memory, the full compile sweeps
    (every build, key type and arch)."""
    session.install(".[test,gpu,dask]")
    session.run("pytest", "-m", "large", *session.posargs, env={"HISTKIT_REQUIRE_NVRTC": "1"})


@nox.session
def demo(session: nox.Session) -> None:
    """Walk the chapter's three sections on the oracles (histkit demo)."""
    session.install(".")
    session.run("histkit", "demo", *session.posargs)


@nox.session
def verify(session: nox.Session) -> None:
    """The main job: oracle self-checks, the demo, and GPU conformance if a GPU is present."""
    session.install(".[gpu]")
    session.run("histkit", "verify", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the Python, cython-lint over the Cython (versions pinned).

    CI runs this, and a new release's new rules must not fail a commit that
    changed nothing."""
    session.install("ruff==0.17.6", "cython-lint==0.22.1")
    session.run("ruff", "check", *LINT_PATHS, *session.posargs)
    session.run("cython-lint", "src/histkit/oracles", "src/histkit/gpu")


# The documentation's tools, pinned: `nox -s docs` builds the site with
# --strict, and a new release's new warnings must not fail a build of a
# commit that changed nothing.
DOCS_REQUIREMENTS = [
    "mkdocs==1.6.1",
    "mkdocs-material==9.8.2",
    "mkdocstrings==1.0.8",
    "mkdocstrings-python==2.0.11",
    "griffe==2.4.1",
    "pymdown-extensions==13.1.2",
    "ruff==0.17.6",  # mkdocstrings formats the API pages' signatures with it
]


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """Build the documentation site into site/ (mkdocs --strict: any warning fails it)."""
    session.install(".", *DOCS_REQUIREMENTS)
    session.run("mkdocs", "build", "--strict", *session.posargs,
                env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session
def bench(session: nox.Session) -> None:
    """CPU oracle throughput against NumPy (writes bench/results/cpu-*.json)."""
    session.install(".")
    session.run("python", "bench/cpu.py", *session.posargs)


# The GPU sessions run on an air-gapped GPU host: they use the interpreter that
# runs nox, with its own cuda-python, and install nothing from an index.
def _install_offline(session: nox.Session) -> None:
    session.run("python", "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                "--no-index", "--quiet", ".")


@nox.session(venv_backend="none", default=False)
def gpu(session: nox.Session) -> None:
    """GPU conformance (histkit verify --gpu on) and the GPU tests, offline."""
    _install_offline(session)
    session.run("histkit", "verify", "--gpu", "on", *session.posargs)
    session.run("python", "-m", "pytest", "-m", "gpu or nvrtc", "tests")


@nox.session(venv_backend="none", default=False)
def sanitize(session: nox.Session) -> None:
    """compute-sanitizer memcheck, racecheck and synccheck over every integer-key kernel
    column (registry.KERNELS; not the binning and weighted kernels) on small cases."""
    _install_offline(session)
    # API errors are not reported: cuda.core probes for a current context at
    # start-up, which the driver answers with an (expected) error code.
    tools = session.posargs or ["memcheck", "racecheck", "synccheck"]
    for tool in tools:
        session.run("compute-sanitizer", "--tool", tool, "--report-api-errors", "no",
                    "--error-exitcode", "1", "python", "-m", "histkit.conformance.sanitize",
                    tool, external=True)


@nox.session(venv_backend="none", default=False)
def mutants(session: nox.Session) -> None:
    """Planted bugs against the suite (writes mutants-results.json).

    mutants/mutants.toml by default; `-- --generated [--sample N]`: every usual
    one-line slip at every site of cuda/; `-- --host`: the same in the launch
    layer's Python."""
    _install_offline(session)
    session.run("python", "-m", "histkit.conformance.mutation", "run", *session.posargs)


@nox.session(name="bench-gpu", venv_backend="none", default=False)
def bench_gpu(session: nox.Session) -> None:
    """GPU throughput against CUB, CuPy and PyTorch (writes bench/results/gpu-*.json)."""
    _install_offline(session)
    session.run("histkit", "bench", *session.posargs)
