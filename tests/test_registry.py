"""The kernel registry, the contract and cuda/ agree (no GPU needed)."""

import re
from pathlib import Path

import pytest

from histkit.gpu import contract, registry

ROOT = Path(__file__).resolve().parents[1]
CUDA = ROOT / "cuda"


def test_every_file_of_cuda_is_in_the_registry_and_every_registered_source_exists():
    on_disk = sorted(p.name for p in CUDA.iterdir() if p.suffix in (".cu", ".cuh"))
    assert on_disk == sorted(registry.sources())


def test_meson_ships_exactly_the_registered_sources():
    meson = (ROOT / "meson.build").read_text()
    shipped = re.findall(r"'cuda/([^']+)'", meson)
    assert sorted(shipped) == sorted(registry.sources())


def test_meson_installs_every_python_file_of_the_package():
    # meson lists what it installs by hand: a module left out imports in the
    # checkout's tests only by accident and is missing from every install
    package = ROOT / "src" / "histkit"
    meson = (package / "meson.build").read_text()
    listed = set(re.findall(r"'([\w/]+\.(?:py|pyi))'", meson))
    compiled = {f"oracles/{name}.pyx" for name in re.findall(r"'(_\w+)'", meson)}
    compiled |= set(re.findall(r"'([\w/]+\.pyx)'", meson))
    on_disk = {p.relative_to(package).as_posix() for p in package.rglob("*")
               if p.suffix in (".py", ".pyi", ".pyx")}
    assert sorted(on_disk - listed - compiled) == []
    assert sorted(listed - on_disk) == []


@pytest.mark.parametrize("kernel", registry.KERNELS, ids=lambda k: k.row)
def test_every_entry_point_is_an_extern_c_kernel_of_its_source(kernel):
    text = "".join((CUDA / s).read_text() for s in kernel.sources)
    for entry in kernel.entries:
        assert re.search(rf'extern "C" __global__ void(?: __launch_bounds__\([^)]*\))?\s+'
                         rf"{entry}\(", text), f"{entry} not found in {kernel.sources}"


def test_every_row_has_a_known_kind_and_unique_columns():
    names = [name for kernel in registry.KERNELS for name, _ in kernel.columns()]
    assert len(names) == len(set(names))
    assert {k.kind for k in registry.KERNELS} <= set(registry.KINDS)


def test_the_api_methods_are_the_rows_that_serve_histogram():
    from histkit.gpu import METHODS

    assert set(METHODS) == {"naive", "atomic", "privatized", "partitioned", "auto"}
    assert registry.serving("histogram", "auto").row == "auto"
    assert registry.serving("counting_sort", True).kind == "stable-sort"
    assert registry.serving("counting_sort", False).kind == "sort"


def test_a_header_reaches_every_row_and_a_source_the_rows_that_compile_it():
    assert registry.rows_reaching("common.cuh") == list(registry.KERNELS)
    rows = {k.row for k in registry.rows_reaching("atomic_histogram.cu")}
    assert rows == {"atomic", "sort-atomic-cursor"}


def ifndef_defaults(source: str) -> dict[str, str]:
    """The #ifndef defaults of a source and of the headers it includes."""
    from histkit.gpu.compiler import files_of

    text = "\n".join((CUDA / name).read_text() for name in sorted(files_of(source)))
    return dict(re.findall(r"#ifndef (\w+)\n#define \1 (\w+)", text))


@pytest.mark.parametrize("source", sorted(contract.SOURCE_DEFINES))
def test_the_standalone_defaults_in_cuda_equal_the_contract(source):
    defaults = ifndef_defaults(source)
    for name, value in contract.SOURCE_DEFINES[source].items():
        assert name in defaults, f"{source} has no #ifndef default for {name}"
        assert int(defaults[name]) == value, f"{source}: {name}"


def test_the_no_bad_key_sentinel_is_the_contracts():
    default = ifndef_defaults("common.cuh")["HK_NO_BAD_KEY"]
    assert int(default.removesuffix("ULL"), 0) == contract.NO_BAD_KEY


def test_the_sort_tile_per_key_width_is_the_contracts_in_cuda_too():
    # counting_sort.cu picks its rounds per warp from the key's width with the
    # same rule as contract.tile_items: 8-byte keys take WIDE_KEY_TILE_ITEMS
    text = (CUDA / "counting_sort.cu").read_text()
    assert ("#define KEY_TILE_ITEMS (sizeof(hk_key) == 8 ? WIDE_KEY_TILE_ITEMS : TILE_ITEMS)"
            in text)
    assert contract.tile_items(8) == contract.WIDE_KEY_TILE_ITEMS
    assert {contract.tile_items(width) for width in (1, 2, 4)} == {contract.TILE_ITEMS}


def test_the_table_of_builds_by_source_lists_every_build_of_every_row():
    # the NVRTC compile tests and the mutant sift compile exactly these
    found = registry.builds_by_source()
    for kernel in registry.KERNELS:
        for build in kernel.builds:
            assert build in found[kernel.source], (kernel.row, build)
        for used in kernel.uses:
            assert used in found, (kernel.row, used)
    assert all(len(builds) == len({tuple(sorted(b.items())) for b in builds})
               for builds in found.values())
