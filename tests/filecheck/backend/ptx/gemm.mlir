// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{epilogue=threads}' -t ptx | filecheck %s
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -t ptx 2>&1 | filecheck %s --check-prefix=UNLOWERED

// CHECK:      .version 8.0
// CHECK-NEXT: .target sm_90a
// CHECK:      .extern .shared .align 16 .b8 tawa_smem[];
// CHECK:      .visible .entry gemm(
// CHECK-NEXT:   .param .u64 arg0_A_ptr,
// CHECK:        .param .u64 arg5_K,
// The persistent kernel reads the logical grid from parameters.
// CHECK-NEXT:   .param .u64 grid0,
// CHECK-NEXT:   .param .u64 grid1,
// CHECK-NEXT:   .param .align 128 .b8 tmap0[128],
// CHECK-NEXT:   .param .align 128 .b8 tmap1[128]
// CHECK-NEXT: )
// CHECK-NEXT: .reqntid 384, 1, 1
// CHECK-NEXT: .maxnreg 168
// CHECK:        and.b32 %{{.*}}, %{{.*}}, -1024;
// CHECK:        mbarrier.init.shared::cta.b64 [%{{.*}}], 1;
// CHECK:        fence.mbarrier_init.release.cluster;
// CHECK:        bar.sync 0, 384;
// CHECK:        setmaxnreg.dec.sync.aligned.u32 40;
// CHECK:        mbarrier.try_wait.parity.shared::cta.b64
// CHECK:        mbarrier.arrive.expect_tx.shared::cta.b64 _, [%{{.*}}], 49152;
// CHECK:        cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%{{.*}}], [%{{.*}}, {%{{.*}}, %{{.*}}}], [%{{.*}}];
// CHECK:        setmaxnreg.inc.sync.aligned.u32 232;
// CHECK:        wgmma.fence.sync.aligned;
// CHECK-NEXT:   wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%f{{.*}}}, %rd{{.*}}, %rd{{.*}}, %p{{.*}}, 1, 1, 0, 0;
// CHECK:        wgmma.commit_group.sync.aligned;
// CHECK-NEXT:   wgmma.wait_group.sync.aligned 1;
// CHECK:        mbarrier.arrive.shared::cta.b64 _, [%{{.*}}];
// CHECK:        wgmma.wait_group.sync.aligned 0;
// CHECK:        cvt.rn.bf16x2.f32
// CHECK:        st.global.b32
// CHECK:        ret;

// UNLOWERED: {{.*}}gemm.mlir:7:1: error: the module has no lowered kernel to print as PTX (run -p tawa-hopper-pipeline first)
