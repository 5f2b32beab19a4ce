// Warp groups that own 128 rows (docs/passes.md, "Tile shapes"): with consumer-warps=8, the
// 256x128 tile's consumer is two warp groups of 128 rows each (cuBLAS's cooperative 256x128
// tile) instead of four of 64. Each keeps a 128x128 fragment, reads a 128-row A descriptor,
// and `tawa-expand-wgmma` issues one m64n128 instruction per 64-row block and k-step: row
// blocks inner, the second block's A descriptor 64 rows (8192 bytes of a 128B-swizzled tile)
// further. The epilogue stages each warp group's 128 rows.
// RUN: tawa-opt %S/../Inputs/gemm_256x128.mlir -p 'tawa-hopper-pipeline{consumer-warps=8 stages=4 staging=single prepare=false}' | filecheck %s
// RUN: tawa-opt %S/../Inputs/gemm_256x128.mlir -p 'tawa-hopper-pipeline{consumer-warps=8 stages=4 staging=single prepare=false},tawa-expand-wgmma' | filecheck %s --check-prefix=EXPAND
// RUN: tawa-opt %S/../Inputs/gemm_256x128.mlir -p 'tawa-hopper-pipeline{consumer-warps=8 stages=4 staging=single}' -t ptx | filecheck %s --check-prefix=PTX
// RUN: not tawa-opt %S/../Inputs/gemm_128x128.mlir -p 'tawa-hopper-pipeline{consumer-warps=6}' 2>&1 | filecheck %s --check-prefix=HALF

// CHECK:       %staging = nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.smem<1x256x64xbf16, swizzle = 128>
// CHECK:       nvgpu.setmaxnreg inc 232
// CHECK:         %wg_index = arith.subi
// CHECK-NEXT:    %[[R:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %wg_row0 = arith.muli %wg_index, %[[R]] : index
// CHECK:         nvgpu.frag_zeros : !nvgpu.frag<128x128xf32, wgmma>
// CHECK:         nvgpu.wgmma_descriptor %{{.*}}[%stage{{.*}}, %wg_row0] : !nvgpu.smem<4x256x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// CHECK:         nvgpu.wgmma {{.*}} : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<128x128xf32, wgmma>
// CHECK:         nvgpu.frag_convert %{{.*}} : !nvgpu.frag<128x128xf32, wgmma> -> !nvgpu.frag<128x128xbf16, wgmma>
// CHECK:         nvgpu.frag_store_shared %{{.*}}, %staging[%{{.*}}, %wg_row0] : !nvgpu.frag<128x64xbf16, wgmma>, !nvgpu.smem<1x256x64xbf16, swizzle = 128>

// EXPAND:       %[[A0:.*]] = nvgpu.wgmma_desc_advance %[[A:.*]], 0 : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// EXPAND-NEXT:  %[[B0:.*]] = nvgpu.wgmma_desc_advance %[[B:.*]], 0 : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// EXPAND-NEXT:  %[[D0:.*]] = nvgpu.wgmma_mma_async %[[A0]], %[[B0]], %acc_i, %{{.*}} {rhs_transposed, row_block = 0 : i64}
// EXPAND-NEXT:  %[[A1:.*]] = nvgpu.wgmma_desc_advance %[[A]], 8192 :
// EXPAND-NEXT:  %[[D1:.*]] = nvgpu.wgmma_mma_async %[[A1]], %[[B0]], %[[D0]], %{{.*}} {rhs_transposed, row_block = 1 : i64}
// EXPAND-NEXT:  %[[A2:.*]] = nvgpu.wgmma_desc_advance %[[A]], 32 :
// EXPAND-NEXT:  %[[B2:.*]] = nvgpu.wgmma_desc_advance %[[B]], 32 :
// EXPAND-NEXT:  %[[D2:.*]] = nvgpu.wgmma_mma_async %[[A2]], %[[B2]], %[[D1]], %{{.*}} {rhs_transposed, row_block = 0 : i64}
// EXPAND-NEXT:  %[[A3:.*]] = nvgpu.wgmma_desc_advance %[[A]], 8224 :
// EXPAND-NEXT:  nvgpu.wgmma_mma_async %[[A3]], %[[B2]], %[[D2]], %{{.*}} {rhs_transposed, row_block = 1 : i64}

// Row block 0 is the first 64 of the fragment's 128 values per thread, block 1 the next 64.
// PTX:       setmaxnreg.inc.sync.aligned.u32 232;
// PTX:       wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f[[LO:[0-9]+]], {{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1, 0, 0;
// PTX-NEXT:  add.s64
// PTX-NEXT:  wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f[[HI:[0-9]+]], {{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1, 0, 0;

// consumer-warps=6 would leave half a warp group.
// HALF: error: tawa-warp-specialize: consumer-warps=6 is not a positive multiple of 4 (whole warp groups)
