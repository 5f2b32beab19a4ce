"""The Hopper (sm_90a) hardware facts tawa compiles for, in one place.

Every limit, size and instruction shape that a verifier, a pass, the PTX
printer or the runtime checks comes from here; nothing else spells these
numbers.  Sources: the PTX ISA 8.x (wgmma shapes, setmaxnreg, TMA boxes,
mbarrier counts), the CUDA programming guide's compute-capability 9.0 table
(shared memory, register file), and what was verified on the H100 here
(`shared/reference/hopper-verified.md`: the 1024-byte swizzle alignment and
the descriptor fields).
"""

from __future__ import annotations

from dataclasses import dataclass

ARCH = "sm_90a"
"""ptxas / PTX `.target` of the emitted kernels (`a`: wgmma and setmaxnreg)."""
PTX_VERSION = "8.0"

# --------------------------------------------------------------------------- threads

THREADS_PER_WARP = 32
WARPS_PER_GROUP = 4
THREADS_PER_GROUP = THREADS_PER_WARP * WARPS_PER_GROUP
"""A warp group: the unit that issues wgmma and executes setmaxnreg together."""
MAX_THREADS_PER_CTA = 1024
MAX_THREADS_PER_SM = 2048
"""Threads resident on one SM at once (64 warps; CUDA programming guide,
compute capability 9.0)."""
MAX_CTAS_PER_SM = 32
"""CTAs resident on one SM at once (compute capability 9.0)."""
SM_COUNT = 132
"""Streaming multiprocessors of the H100 SXM5 (the board tawa is measured
on; the PCIe H100 has 114): one persistent CTA each.  The GEMM cost model
(tawa.analysis.gemm_cost) counts rounds of this many programs; the runtime
asks the device for its own count when one is there."""

# --------------------------------------------------------------------------- rates (the GEMM cost model's facts)

TENSOR_FLOPS_PER_CLOCK = {"bf16": 4096, "f16": 4096, "fp8": 8192, "tf32": 2048}
"""Dense tensor-core flops per SM per clock, by operand family
(`WgmmaOperandType.family`): Hopper's tensor cores do twice the A100's
per SM per clock (NVIDIA's Hopper architecture whitepaper; the A100's is
1024 f16 FMAs, A100 whitepaper), fp8 twice the 16-bit rate and tf32 half;
the H100 SXM5 datasheet's 989.4 dense bf16 TFLOPS are 132 SMs × 4096 at
1.83 GHz."""
MAX_SM_CLOCK_HZ = 1.98e9
"""The H100 SXM5's highest SM clock (nvidia-smi)."""
LOADED_SM_CLOCK_HZ = 1.41e9
"""The SM clock under a long GEMM: the board sits at its 700 W cap and the
clock falls to 1275–1545 MHz (measured here, shared/reference/hopper-verified.md);
the middle of that range.  The cost model (`tawa.analysis.gemm_cost`)
counts cycles at this clock."""
SMEM_BYTES_PER_CLOCK = 128
"""Shared-memory bandwidth of an SM: 32 banks of 4 bytes each per clock
(CUDA programming guide, compute capability 9.0, "Shared Memory")."""
DRAM_BYTES_PER_S = 3.35e12
"""HBM3 bandwidth of the H100 SXM5 80 GB (NVIDIA H100 datasheet); what a
kernel streams is less, the cost model fits it."""

# --------------------------------------------------------------------------- registers

REGISTER_FILE_SIZE = 65536
"""32-bit registers per SM; a CTA's Σ threads × registers must fit."""
MIN_REGS, MAX_REGS, REGS_GRANULE = 24, 256, 8
"""`setmaxnreg` budgets: multiples of 8 in [24, 256]."""
MAX_REGS_PER_THREAD = 255
"""The most `.maxnreg` may ask for."""
SCALAR_REGS_OVERHEAD = 26
"""Registers a warp group's code needs besides its fragments (addresses,
descriptors, indices, loop counters, barrier phases), for the estimate of
`tawa-check-resources` (tawa/analysis/register_demand.py).  Calibrated
with ptxas 13.0 (`-arch=sm_90a`, setmaxnreg/.maxnreg/.reqntid removed, the
least `-maxrregcount` without spills): the GEMM examples need 154 with one
live 64x256xf32 accumulator (128), gemm_chain 156 (128), attention 225 (196);
docs/passes.md has the table."""
REGISTER_ESTIMATE_ERROR = 8
"""How far ptxas's need may lie from that estimate, either way: every
example assembles without spills at estimate + 8 and spills at estimate - 8
(tests/transforms/test_check_resources.py).  `tawa-check-resources` rejects
a role only when its estimate exceeds the budget by more than this, where
ptxas would spill whatever the error, so that it never turns away a kernel
that ptxas fits (d64 attention with 192 query rows: estimated 162, fits the
160 that setmaxnreg gives four warp groups)."""


def launch_register_cap(threads: int, ctas: int = 1) -> int:
    """Registers per thread a CTA of `threads` threads may start with
    (`.maxnreg`) so that `ctas` of them fit an SM: the register file shared
    out, rounded down to the granule (registers are allocated per warp in
    multiples of 8 a thread), at most 255."""
    return min(MAX_REGS_PER_THREAD, REGISTER_FILE_SIZE // (threads * ctas)) // REGS_GRANULE * REGS_GRANULE


def register_pool(threads: int) -> int:
    """Registers a CTA of `threads` threads holds at launch: the pool that
    `setmaxnreg` redistributes between its warp groups (launch cap ×
    threads; verified on the H100: 168 × 384 = 64,512, and budgets beyond
    it hang in `setmaxnreg.inc`).  Below the register file when the cap
    rounds down: 96 × 640 = 61,440."""
    return launch_register_cap(threads) * threads


# --------------------------------------------------------------------------- shared memory

MAX_SMEM_BYTES = 232448
"""227 KB of dynamic shared memory per CTA (the opt-in maximum)."""
SMEM_BYTES_PER_SM = 233472
"""228 KB of shared memory per SM, shared by its resident CTAs (CUDA
programming guide, compute capability 9.0)."""
SMEM_RESERVED_PER_CTA = 1024
"""Shared memory the system reserves for each resident CTA besides what it
asks for (compute capability 8.0 and later)."""


def resident_ctas(threads: int, regs: int, smem: int) -> int:
    """CTAs of `threads` threads, each starting with `regs` registers per
    thread and asking for `smem` bytes of dynamic shared memory, that one
    SM holds at once: the least that its register file, its threads, its
    CTA slots and its shared memory allow (at least 1)."""
    by_regs = REGISTER_FILE_SIZE // (threads * regs)
    by_threads = MAX_THREADS_PER_SM // threads
    by_smem = SMEM_BYTES_PER_SM // (smem + SMEM_RESERVED_PER_CTA)
    return max(1, min(by_regs, by_threads, MAX_CTAS_PER_SM, by_smem))
SMEM_ALIGN_SLACK = 1024
"""The dynamic shared-memory base is only 16-byte aligned: the kernel rounds
it up to 1024 bytes and asks for this much more."""
SWIZZLES = (0, 32, 64, 128)
"""Swizzle modes (bytes of the swizzle span) of TMA and wgmma."""
SMEM_ALIGNMENT = {0: 128, 32: 256, 64: 512, 128: 1024}
"""A swizzled buffer starts at a multiple of its pattern's period (8 rows of
the span); unswizzled TMA destinations need 128 bytes."""
SWIZZLE_UNIT = 16
"""Swizzling permutes 16-byte units: elements never straddle one."""
SWIZZLE_ROW_BYTES = 128
"""The swizzle permutes the units of an address by the index of its
128-byte row, whatever the span (`swizzled_address`)."""


def swizzle_mask(swizzle: int) -> int:
    """The bits of the row index that select the permutation (the units of
    a span less one): 7 for 128B, 3 for 64B, 1 for 32B."""
    return swizzle // SWIZZLE_UNIT - 1


def swizzled_address(address, swizzle: int):
    """Where TMA puts (and wgmma finds) the byte that an unswizzled tile
    would hold at shared address `address` (ints or NumPy arrays): with a
    span of S bytes, bits [4, 4+b) of the address are XORed with bits
    [7, 7+b), b = log2(S/16) — the 16-byte unit within a 128-byte row is
    permuted by the row's index modulo 8 (128B), 4 (64B) or 2 (32B).  It
    is a function of the address, which is why swizzled buffers need the
    alignment of `SMEM_ALIGNMENT`."""
    if not swizzle:
        return address
    row = SWIZZLE_ROW_BYTES.bit_length() - 1
    unit = SWIZZLE_UNIT.bit_length() - 1
    return address ^ (((address >> row) & swizzle_mask(swizzle)) << unit)


MBARRIER_BYTES = 8
MAX_MBARRIER_COUNT = (1 << 20) - 1
"""Arrival counts and transaction counts are 20-bit."""
NAMED_BARRIERS = 16
"""`bar.sync` ids 0..15; id 0 is the CTA-wide barrier."""

# --------------------------------------------------------------------------- clusters

MAX_CLUSTER_SIZE = 8
"""CTAs in a thread-block cluster without the non-portable opt-in (a
multicast mask holds one bit per rank)."""

# --------------------------------------------------------------------------- L2

L2_BYTES = 50 * 1024 * 1024
"""The H100 SXM's L2 cache, 50 MB, built as two partitions (NVIDIA's Hopper
architecture whitepaper)."""
L2_SECTOR_BYTES = 32
"""The unit the L2 serves: a 128-byte line holds four 32-byte sectors.  A
TMA box row that starts inside a sector touches one sector more, and the
loads of a tensor whose rows are not whole sectors apart issue more L2
requests per byte: measured on the H100, a GEMM whose K·2 bytes per row is
16 modulo 32 ran far slower than the same GEMM with K rounded to 16
elements (docs/perf.md, "Rows that are not whole sectors")."""
L2_LINE_BYTES = 128
"""An L2 line (four sectors): a store of rows that start inside lines
touches one line more per row."""

# --------------------------------------------------------------------------- TMA

L2_PRIORITIES = ("evict_first", "evict_last")
"""L2 eviction priorities a TMA load may carry (`createpolicy.fractional`
with fraction 1.0, then `.L2::cache_hint`): lines loaded with `evict_first`
are evicted before others, `evict_last` after."""
MAX_TMA_BOX_DIM = 256
MAX_TMA_RANK = 5
"""A tensor map has 1 to 5 dimensions."""
TMA_INNER_BOX_ALIGN = 16
"""The inner box dimension spans a multiple of 16 bytes."""
TMA_STRIDE_ALIGN = 16
"""Global strides (all but the innermost dimension) are multiples of 16 bytes."""
TENSORMAP_BYTES = 128
"""A `CUtensorMap`, passed by value as a 128-byte-aligned kernel parameter."""

# --------------------------------------------------------------------------- wgmma

WGMMA_M = 64
"""Rows of one wgmma: each warp group computes 64 rows of the output."""
WGMMA_N_STEP, WGMMA_MAX_N = 8, 256
"""wgmma N: a multiple of 8 in [8, 256]."""
WGMMA_MAX_PENDING = 7
"""`wgmma.wait_group N` and `cp.async.bulk.wait_group N` take N in [0, 7]."""
WGMMA_K_BYTES = 32
"""One wgmma instruction contracts 32 bytes of K: k16 for 16-bit operands,
k32 for 8-bit ones (k8 for tf32)."""


@dataclass(frozen=True)
class WgmmaOperandType:
    """How `wgmma.mma_async` (f32 accumulator) takes A and B operands of one
    element type: PTX ISA 8.x, wgmma.mma_async, `.atype` / `.btype`."""

    ptx: str
    """The type's spelling in the instruction (`...k16.f32.bf16.bf16`)."""
    bytes: int
    family: str
    """A and B of one instruction come from one family: f16 × f16, bf16 ×
    bf16, tf32 × tf32, and fp8 (e4m3 and e5m2 in any combination)."""
    mn_major: bool
    """Whether an operand may be MN-major in shared memory (the imm-trans-a /
    imm-trans-b operands): only the 16-bit types have them; fp8 and tf32
    operands must be K-major."""

    @property
    def k(self) -> int:
        """K of one instruction: `WGMMA_K_BYTES` of this type."""
        return WGMMA_K_BYTES // self.bytes


WGMMA_OPERAND_TYPES: dict[str, WgmmaOperandType] = {
    "bf16": WgmmaOperandType("bf16", 2, "bf16", True),
    "f16": WgmmaOperandType("f16", 2, "f16", True),
    "f8E4M3FN": WgmmaOperandType("e4m3", 1, "fp8", False),
    "f8E5M2": WgmmaOperandType("e5m2", 1, "fp8", False),
    "f32": WgmmaOperandType("tf32", 4, "tf32", False),
}
"""wgmma operand types by the MLIR spelling of the element type.  f32 data
are read as tf32: the tensor core ignores the 13 low mantissa bits of each
operand (rounds toward zero to a 10-bit mantissa; triton-lang/triton#4574
shows unrounded f32 inputs differ from round-to-nearest tf32)."""
TF32_DROPPED_MANTISSA_BITS = 13
"""f32 has 23 mantissa bits, tf32 keeps the 10 high ones."""


@dataclass(frozen=True)
class WgmmaDescriptorFormat:
    """Bit fields of the 64-bit wgmma shared-memory matrix descriptor (PTX
    ISA, "Matrix Descriptor Format"); addresses and offsets are in bytes and
    enter their fields divided by 16."""

    address_mask: int = 0x3FFFF
    """The 18 low bits of the shared::cta address are encoded."""
    unit: int = 16
    """Addresses and byte offsets enter their fields divided by this."""
    field_bits: int = 14
    """Width of the address and byte-offset fields."""
    leading_offset_shift: int = 16
    stride_offset_shift: int = 32
    swizzle_shift: int = 62
    swizzle_modes: tuple[tuple[int, int], ...] = ((0, 0), (128, 1), (64, 2), (32, 3))
    """(swizzle bytes, field value): 128B = 1, 64B = 2, 32B = 3, none = 0."""

    def swizzle_field(self, swizzle: int) -> int:
        return dict(self.swizzle_modes)[swizzle]


WGMMA_DESCRIPTOR = WgmmaDescriptorFormat()

SWIZZLE_ATOM_ROWS = 8
"""A swizzle pattern repeats every 8 rows of the swizzle span: the
descriptor's stride byte offset of a K-major operand is 8 × span bytes."""
