"""The `nvgpu` dialect: Hopper (sm_90a) operations, one step above PTX.

This is tawa's own dialect (upstream MLIR's `nvgpu` has other ops).  Each op
prints to one PTX instruction or a short fixed sequence; registers and
fragment element loops are expanded by the PTX printer, so an accumulator
fragment is one SSA value.  A whole-tile wgmma is one op until
`tawa-prepare-ptx` expands it into one `nvgpu.wgmma_mma_async` per
instruction.

Shared memory is laid out by the lowering: every `nvgpu.smem_alloc` names its
byte offset in the kernel's dynamic shared memory.  Buffers of TMA tiles have a
leading stage dimension (`!nvgpu.smem<4x128x64xbf16, swizzle = 128>` is four
128×64 bf16 tiles), barriers come in arrays (`!nvgpu.mbarrier<4>`).  Ops with
side effects declare them, so xdsl's DCE and CSE leave them alone.
"""


from __future__ import annotations

from xdsl.ir import Dialect

from tawa.dialects.nvgpu.types import *  # noqa: F403
from tawa.dialects.nvgpu.memory import *  # noqa: F403
from tawa.dialects.nvgpu.wgmma import *  # noqa: F403
from tawa.dialects.nvgpu.fragments import *  # noqa: F403
from tawa.dialects.nvgpu.control import *  # noqa: F403
from tawa.dialects.nvgpu.kernel_info import KERNEL_ATTR, KernelInfo, KernelInfoAttr, kernel_info, record_kernel_info

NVGPU = Dialect(
    "nvgpu",
    [
        SmemAllocOp,
        SmemAddressOp,
        MBarrierInitOp,
        MBarrierArriveOp,
        MBarrierArriveExpectTxOp,
        MBarrierTryWaitParityOp,
        MBarrierWaitParityOp,
        TmaDescriptorOp,
        TmaLoadOp,
        TmaStoreOp,
        TmaStoreWaitOp,
        WgmmaDescriptorOp,
        WgmmaOp,
        WgmmaMmaAsyncOp,
        WgmmaDescAdvanceOp,
        WgmmaDescEncodeOp,
        WgmmaKSliceOp,
        WgmmaFenceOp,
        WgmmaCommitGroupOp,
        WgmmaWaitGroupOp,
        FragmentZerosOp,
        FragmentConvertOp,
        FragmentIndexOp,
        FragmentCmpIOp,
        FragmentSelectOp,
        FragmentSplatOp,
        FragmentReduceOp,
        FragmentBroadcastOp,
        FragmentBinaryOp,
        FragmentUnaryOp,
        FragmentStoreOp,
        FragmentStoreGlobalOp,
        MemrefBaseOp,
        SmemTileOp,
        SetMaxNRegOp,
        NamedBarrierSyncOp,
        NamedBarrierArriveOp,
        FenceProxyAsyncOp,
        FenceMBarrierInitOp,
        ThreadIdOp,
        LaneIdOp,
        WarpIdOp,
        WarpGroupIdOp,
        BlockIdOp,
        GridDimOp,
        LaunchGridOp,
        ElectOneOp,
    ],
    [
        SmemType,
        TmaDescriptorType,
        WgmmaDescriptorType,
        MBarrierType,
        TiledLayoutAttr,
        KernelInfoAttr,
        FragmentType,
        FragBinaryKindAttr,
        FragUnaryKindAttr,
        FragIndexAxisAttr,
        RegActionAttr,
    ],
)
