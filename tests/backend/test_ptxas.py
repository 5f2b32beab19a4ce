"""Every kernel the Hopper pipeline emits for the examples assembles with
`ptxas -arch=sm_90a`, and the GEMM does not spill."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from xdsl.passes import PassPipeline

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu
from tawa.runtime.ptxas import SERIALIZED_WGMMA
from tawa.transforms.hopper_pipeline import HopperPipelinePass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")


def gemm_ptx(stages: int, dtype: str = "bf16") -> str:
    text = (EXAMPLES / "gemm.mlir").read_text().replace("bf16", dtype)
    module = tawa.parse(text)
    PassPipeline((HopperPipelinePass(stages=stages),)).apply(tawa.context(), module)
    return print_ptx(module)


def assemble(ptx: str, tmp_path: Path) -> str:
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    res = subprocess.run(
        [PTXAS, "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
        capture_output=True, text=True,
    )
    assert res.returncode == 0, res.stderr
    # C7513, C7517: ptxas waits for wgmma itself (a register operand of a wgmma
    # group in flight defined by another instruction): correct, but serial.
    assert not SERIALIZED_WGMMA.search(res.stderr), res.stderr
    return res.stderr


@needs_ptxas
@pytest.mark.parametrize("stages", [1, 2, *(pytest.param(d, marks=pytest.mark.slow) for d in (3, 4))])
@pytest.mark.parametrize("dtype", ["bf16", pytest.param("f16", marks=pytest.mark.slow)])
def test_gemm_assembles_without_spills(stages, dtype, tmp_path):
    ptx = gemm_ptx(stages, dtype)
    assert ".target sm_90a" in ptx and "wgmma.mma_async" in ptx and "setmaxnreg" in ptx
    info = assemble(ptx, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
    assert spills and all(s == ("0", "0") for s in spills), info
    assert "warning" not in info.lower(), info


@needs_ptxas
def test_subtiled_tma_epilogue_assembles_without_spills(tmp_path):
    """staging=subtiled at 4 stages: per 64-column chunk, a wait that leaves
    the other buffer's store pending, one 128x64 box; wait 0 at the end."""
    module = tawa.parse((EXAMPLES / "gemm.mlir").read_text())
    PassPipeline((HopperPipelinePass.of(stages=4, staging="subtiled"),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert ptx.count("cp.async.bulk.wait_group.read 1;") == 4
    assert ptx.count("cp.async.bulk.wait_group.read 0;") == 1
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == 4
    info = assemble(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info


@needs_ptxas
def test_fp8_gemm_assembles_without_spills(tmp_path):
    module = tawa.parse((EXAMPLES / "gemm_fp8.mlir").read_text())
    PassPipeline((HopperPipelinePass(stages=4),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    # K = 128 fp8 elements per stage: four m64n256k32 e4m3 wgmmas, no transpose immediates.
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3") == 4
    assert re.search(r"wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 \{[^}]*\}, %rd\d+, %rd\d+, %p\d+, 1, 1;", ptx)
    info = assemble(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info


def test_gemm_ptx_follows_the_recipe():
    ptx = gemm_ptx(4)
    # 1 producer + 2 consumer warp groups, register budgets within the file.
    assert ".reqntid 384, 1, 1" in ptx and ".maxnreg 168" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    # full barriers expect one arrival, empty barriers one per consumer warp group,
    # and the stage's TMA bytes: 128x64 + 256x64 bf16 = 49152.
    assert ptx.count("mbarrier.init.shared::cta.b64") == 8
    assert re.search(r"mbarrier.init.shared::cta.b64 \[%r\d+\], 2;", ptx)
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [" in ptx and "], 49152;" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 2
    # K = 64 per stage: four m64n256k16 wgmmas, one group in flight.
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") == 4
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx
    assert ".param .align 128 .b8 tmap0[128]" in ptx
    assert "fence.mbarrier_init.release.cluster;" in ptx and "bar.sync 0, 384;" in ptx


@pytest.mark.parametrize("stages", [3, pytest.param(4, marks=pytest.mark.slow)])
def test_no_division_subroutines_in_the_main_loops(stages):
    # Stage and phase arithmetic divides by the ring depth: by a constant, it
    # must not become a 64-bit division by a register (a subroutine call on
    # the GPU, which halved the GEMM's speed); powers of two become shifts.
    # (Divisions by registers remain only in the once-per-program grouped-order
    # arithmetic.)
    ptx = gemm_ptx(stages)
    # A loop is a label with a branch back to it; the main loops are the
    # innermost ones that issue wgmma or TMA.
    bodies = [
        m.group(1)
        for label in re.findall(r"^(\$\w+):", ptx, flags=re.M)
        if (m := re.search(rf"^\{label}:\n(.*?)\tbra \{label};", ptx, flags=re.S | re.M))
    ]
    issuing = [b for b in bodies if "wgmma.mma_async" in b or "cp.async.bulk.tensor" in b]
    loops = [b for b in issuing if not any(o != b and o in b for o in issuing)]
    assert len(loops) == 2  # the producer's and the consumer's main (K) loops
    for body in loops:
        assert not re.search(r"(div|rem)\.[us]64 %rd\d+, %rd\d+, %rd\d+;", body)
        if stages == 4:
            assert "div." not in body and "rem." not in body


def test_attention_rings_too_big_is_a_one_line_error():
    # Q plus 4-stage K and V rings of 128x128 bf16 tiles exceed shared memory.
    text = (EXAMPLES / "attention_fwd.mlir").read_text()
    with pytest.raises(TawaError) as info:
        PassPipeline((HopperPipelinePass(stages=4),)).apply(tawa.context(), tawa.parse(text))
    msg = str(info.value)
    assert msg.startswith("<input>:") and "use fewer stages" in msg and "\n" not in msg


@pytest.mark.slow
def test_default_stages_are_the_deepest_that_fit():
    def depths(name: str) -> set[int]:
        module = tawa.parse((EXAMPLES / name).read_text())
        PassPipeline((HopperPipelinePass(),)).apply(tawa.context(), module)
        return {o.result.type.get_shape()[0] for o in module.walk() if isinstance(o, nvgpu.SmemAllocOp)
                and isinstance(o.result.type, nvgpu.SmemType)}

    # 4-stage rings, and the two 128x64 buffers of the subtiled TMA-store
    # epilogue (the full 64 KiB tile would leave 3: tests/filecheck/transforms/lower/tma_epilogue.mlir)
    assert depths("gemm.mlir") == {4, 2}
    # Q double-buffered (once-depth), 2-stage K and V rings, and the two warp
    # groups' own 64-row staging buffers (store-group=auto: they ping-pong)
    assert depths("attention_fwd.mlir") == {2}


@needs_ptxas
@pytest.mark.slow
@pytest.mark.parametrize(("file", "kernel"), [("attention_fwd.mlir", "attention_fwd"),
                                              ("attention_fwd.mlir", "attention_fwd_causal"),
                                              ("attention_fwd_d64.mlir", "attention_fwd_d64")])
def test_attention_assembles_without_spills(file, kernel, tmp_path):
    """With tawa-overlap-dots (the default): two wgmma groups in flight, P
    carried in registers, no spills and no wgmma serialized by ptxas."""
    module = tawa.parse((EXAMPLES / file).read_text())
    PassPipeline((HopperPipelinePass(stages=2),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert f".visible .entry {kernel}(" in ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # S_j done, the P·V still in flight
    # Q·Kᵀ from shared memory (8 k16 steps over two 64-column chunks), P·V
    # with P in registers and V MN-major.
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx or "d64" in kernel
    assert re.search(r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, %p\d+, 1, 1, 1;", ptx)
    assert "shfl.sync.bfly.b32" in ptx and "ex2.approx.ftz.f32" in ptx and "selp.f32" in ptx
    info = assemble(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info


@needs_ptxas
def test_cluster_ops_assemble(tmp_path):
    """The cluster ops as the lit test prints them (cluster rank and sync, a
    multicast TMA load with and without an L2 hint, a remote arrive)."""
    lit = Path(__file__).resolve().parents[1] / "filecheck" / "backend" / "ptx" / "cluster.mlir"
    ptx = print_ptx(tawa.parse(lit.read_text()))
    assert ".reqnctapercluster 2, 1, 1" in ptx and ".multicast::cluster" in ptx and "mapa.shared::cluster" in ptx
    assemble(ptx, tmp_path)


@needs_ptxas
@pytest.mark.slow
@pytest.mark.parametrize("example", ["gemm", "gemm_fp8", "batched_gemm", "gemm_bias_gelu", "gemm_softmax"])
def test_deferred_stores_assemble_without_spills(example, tmp_path):
    """tawa-hopper-pipeline{defer-stores=true}: the converted tile carried into
    the next program's main loop (64 more registers per consumer thread for
    a 128x256 bf16 tile) fits the consumer's budget; three TMA-store sites."""
    module = tawa.parse((EXAMPLES / f"{example}.mlir").read_text())
    PassPipeline((HopperPipelinePass.of(defer_stores=True),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    plain = tawa.parse((EXAMPLES / f"{example}.mlir").read_text())
    PassPipeline((HopperPipelinePass(),)).apply(tawa.context(), plain)
    assert ptx.count("cp.async.bulk.tensor.2d.global") + ptx.count("cp.async.bulk.tensor.3d.global") == 3 * (
        print_ptx(plain).count("cp.async.bulk.tensor.2d.global") + print_ptx(plain).count("cp.async.bulk.tensor.3d.global"))
    info = assemble(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info


@pytest.mark.slow
@needs_ptxas
@pytest.mark.parametrize("example", ["gemm", "gemm_fp8", "batched_gemm"])
def test_clustered_gemms_assemble_without_spills(example, tmp_path):
    """tawa-hopper-pipeline{cluster=2}: each CTA multicasts its band of the
    B tile; the kernel declares the cluster and spills nothing."""
    module = tawa.parse((EXAMPLES / f"{example}.mlir").read_text())
    PassPipeline((HopperPipelinePass(cluster=2),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert ".reqnctapercluster 2, 1, 1" in ptx
    assert ptx.count(".multicast::cluster") >= 1 and ptx.count("barrier.cluster.wait;") == 2
    info = assemble(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info


@pytest.mark.slow
@needs_ptxas
def test_two_accumulators_in_flight_assemble_without_spills(tmp_path):
    """A loop with two accumulating dots keeps both in flight (two commit
    groups, `wgmma.wait_group 2`)."""
    source = Path(__file__).resolve().parents[1] / "filecheck" / "transforms" / "Inputs" / "gemm_two_accumulators.mlir"
    module = tawa.parse(source.read_text())
    PassPipeline((HopperPipelinePass(),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert "wgmma.wait_group.sync.aligned 2;" in ptx
    info = assemble(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info


@pytest.mark.slow
@needs_ptxas
@pytest.mark.parametrize(("file", "kernels", "instruction"), [
    ("attention_fwd_fp8.mlir", ("attention_fwd_fp8", "attention_fwd_fp8_causal"),
     "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"),
    ("attention_fwd_d256_n80.mlir", ("attention_fwd_d256_n80", "attention_fwd_d256_n80_causal"),
     "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16"),
    ("attention_fwd_d64.mlir", ("attention_fwd_d64_causal_m192",), "wgmma.mma_async.sync.aligned.m64n128k16"),
])
def test_per_problem_attention_kernels_assemble_without_spills(file, kernels, instruction, tmp_path):
    """The kernels tawa.torch picks per problem (fp8; head dim 256 with 80-key
    blocks; causal head dim 64 with 192 rows), at the default pipeline: every
    entry assembles, no spills, no wgmma serialized (the 80-key loop keeps
    208 registers in flight, MAX_OVERLAP_REGS)."""
    module = tawa.parse((EXAMPLES / file).read_text())
    PassPipeline((HopperPipelinePass(),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    for kernel in kernels:
        assert f".visible .entry {kernel}(" in ptx
    assert instruction in ptx
    info = assemble(ptx, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
    assert spills and all(s == ("0", "0") for s in spills), info


@needs_ptxas
@pytest.mark.parametrize("block_m, block_n", [(64, 16), (128, 144)])
def test_transposed_gemm_assembles_without_spills(block_m, block_n, tmp_path):
    """A transposed GEMM configuration (Cᵀ = B·Aᵀ, the tile stored through
    movmatrix.trans and the threads' stores): one movmatrix a packed
    register of each warp group's 64xBLOCK_N bf16 tile, no TMA store."""
    from tawa.kernels.gemm import GemmConfig, gemm_source

    module = tawa.parse(gemm_source(GemmConfig(block_m, block_n, 64, transposed=True)))
    PassPipeline((HopperPipelinePass.of(max_stages=8),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert ptx.count("movmatrix.sync.aligned.m8n8.trans.b16") == 64 * block_n // 2 // 128
    assert "cp.async.bulk.tensor.2d.global.shared::cta" not in ptx
    info = assemble(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info and "warning" not in info.lower(), info
