"""A user's .cu kernel in histkit check's skewed cases: the schedule skew
header first, hk_skew_warps() at the top of every __global__ function body,
the file's own line numbers kept (histkit.gpu.user_skew)."""

from pathlib import Path

import pytest
from conftest import needs_nvrtc

from histkit.conformance.cases import cases_for
from histkit.gpu import user_skew

ROOT = Path(__file__).resolve().parents[1]

SOURCE = '''// __global__ void in_a_comment() { }
extern "C" __global__ void __launch_bounds__(256) first(const int* k, long long n) {
    const char* text = "__global__ void in_a_string() {";
    if (n) { }
}
__global__ void declared_only(int);
template <int X> __global__ void second(int x)
{
    /* { */ __syncthreads();
}
'''


def test_the_entry_call_goes_into_every_global_body_and_nowhere_else():
    skewed = user_skew.skewed_text(SOURCE)
    assert skewed.startswith('#define HK_SKEW_ALTERNATE 1\n#include "schedule_skew.cuh"\n'
                             '#line 1\n')
    body = skewed.split("#line 1\n", 1)[1]
    assert body.count("hk_skew_warps();") == 2
    lines = body.split("\n")
    assert lines[1].endswith("{ hk_skew_warps();")  # first's opening brace
    assert lines[7] == "{ hk_skew_warps();"  # second's, on its own line
    # every other line as written: the compiler's line numbers stay the file's
    assert [line.replace(" hk_skew_warps();", "") for line in lines] == SOURCE.split("\n")


@pytest.mark.parametrize("text,blanked", [
    # a line comment up to its newline (kept), the next line's code untouched
    ("a // c {\nx", "a       \nx"),
    # a block comment through its */, and the code right after it
    ("a /* { */x", "a        x"),
    # a string and a character literal, braces and an escaped quote inside
    ('s = "a{\\"b"; c = \'{\';', 's =        ; c =    ;'),
    # a string cut off by the end of the text or of its line
    ('x "ab', 'x    '), ('"a\nb', '  \nb'),
])
def test_comments_and_literals_are_blanked_exactly_and_offsets_kept(text, blanked):
    got = user_skew._blank_comments_and_literals(text)
    assert got == blanked and len(got) == len(text)


def test_only_a_users_file_in_a_skewed_build_is_rewritten():
    skew = {user_skew.SKEW_DEFINE: "400"}
    assert user_skew.skews("/home/me/my_hist.cu", skew)
    assert not user_skew.skews("/home/me/my_hist.cu", {})
    assert not user_skew.skews("fast_histogram.cu", skew)  # histkit's own: common.cuh skews


def test_a_cuda_kernel_gets_the_skewed_cases_and_a_python_callable_does_not():
    assert any(c.skewed for c in cases_for("histogram", fenced=True, skewed=True))
    assert not any(c.skewed for c in cases_for("histogram"))


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples" / "cuda").glob("*.cu")))
def test_each_example_compiles_skewed_and_the_skew_changes_its_machine_code(name, tmp_path,
                                                                             monkeypatch):
    from histkit.gpu import compiler, contract

    monkeypatch.setenv("HISTKIT_CACHE_DIR", str(tmp_path / "cache"))
    path = str(ROOT / "examples" / "cuda" / name)
    plain = {"KEY_T": "int", "COUNT_T": "unsigned int", "WARP_SIZE": "32"}
    skewed = compiler.compile_cubin(path, {**plain, **contract.schedule_defines()}, "sm_90")
    assert skewed[:4] == b"\x7fELF" and skewed != compiler.compile_cubin(path, plain, "sm_90")


FULL_SHARED = '''extern "C" __global__ void histogram(const KEY_T* keys, long long n,
    unsigned long long num_bins, COUNT_T* hist, unsigned long long* first_bad) {
    __shared__ unsigned int whole[12288];  // all 48 KiB of static shared memory
    whole[threadIdx.x] = 0;
    __syncthreads();
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[keys[i]], (COUNT_T)(1 + whole[threadIdx.x]));
}
'''


class _CompilingRuntime:
    """Builds with NVRTC as Runtime.kernel does, skewed while skew.depth."""

    arch = "sm_90"

    def __init__(self, skewed):
        import types

        self.skew = types.SimpleNamespace(depth=int(skewed))

    def kernel(self, source, name, defines):
        from histkit.gpu import compiler, contract

        if self.skew.depth:
            defines = {**defines, **contract.schedule_defines()}
        return compiler.compile_cubin(source, contract.defines_for(source, defines), self.arch)


@needs_nvrtc
def test_a_kernel_the_skew_cannot_be_added_to_gets_skips_not_failures(tmp_path, monkeypatch):
    from histkit.conformance import cuda_abi
    from histkit.conformance.foreign import CudaFileImpl
    from histkit.gpu.errors import KernelCompileError, SkewUnavailable

    monkeypatch.setenv("HISTKIT_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "full_shared.cu"
    source.write_text(FULL_SHARED)
    impl = CudaFileImpl(str(source), "histogram", ("histogram",))
    defines = {"KEY_T": "int", "COUNT_T": "unsigned int", "WARP_SIZE": "32"}
    assert cuda_abi._build(_CompilingRuntime(False), impl, "histogram", defines)[:4] == b"\x7fELF"
    with pytest.raises(SkewUnavailable, match="too much shared data"):
        cuda_abi._build(_CompilingRuntime(True), impl, "histogram", defines)
    # a file that does not compile at all keeps its own error, skewed or not
    source.write_text(FULL_SHARED.replace("whole[threadIdx.x] = 0;", "whole = 0;"))
    with pytest.raises(KernelCompileError):
        cuda_abi._build(_CompilingRuntime(True), impl, "histogram", defines)
