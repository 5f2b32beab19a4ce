// RUN: tawa-opt %s -p tawa-expand-fragment-stores | filecheck %s
// RUN: tawa-opt %s -p tawa-expand-fragment-stores,tawa-prepare-ptx -t ptx | filecheck %s --check-prefix=PTX

// A 64x256 accumulator stored as bf16: each thread's first element comes
// from the wgmma layout's thread terms (warp w: rows 16w.., lane l: row l/4,
// columns 2·(l%4)..), its address from the memref's base and row stride; the fast
// path stores one packed pair per register, the edge path element by element
// under the in-bounds mask.
func.func @store(%C: memref<?x?xbf16>, %m: index, %n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 0>} {
  %d = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>
  nvgpu.frag_store %d, %C[%m, %n] : !nvgpu.frag<64x256xf32, wgmma>, memref<?x?xbf16>
  func.return
}

// CHECK-LABEL: func.func @store
// CHECK:         %[[V:.*]] = nvgpu.frag_convert %d : !nvgpu.frag<64x256xf32, wgmma> -> !nvgpu.frag<64x256xbf16, wgmma>
// CHECK-NEXT:    %[[LANE:.*]] = nvgpu.lane_id
// CHECK-NEXT:    %[[W:.*]] = nvgpu.warp_id
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[WARP:.*]] = arith.remui %[[W]], %[[C4]] : index
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[WROW:.*]] = arith.muli %[[WARP]], %[[C16]] : index
// CHECK-NEXT:    %{{.*}} = arith.constant 4 : index
// CHECK-NEXT:    %[[LQ:.*]] = arith.divui %[[LANE]], %{{.*}} : index
// CHECK-NEXT:    %[[TROW:.*]] = arith.addi %[[WROW]], %[[LQ]] : index
// CHECK-NEXT:    %[[ROW:.*]] = arith.addi %m, %[[TROW]] : index
// CHECK:         %[[LR:.*]] = arith.remui %[[LANE]], %{{.*}} : index
// CHECK:         %[[TCOL:.*]] = arith.muli %[[LR]], %{{.*}} : index
// CHECK-NEXT:    %[[COL:.*]] = arith.addi %n, %[[TCOL]] : index
// CHECK:         %[[ROWS:.*]] = memref.dim %C, %{{.*}} : memref<?x?xbf16>
// CHECK:         %[[COLS:.*]] = memref.dim %C, %{{.*}} : memref<?x?xbf16>
// The rows are `memref_stride` elements apart (a view: not always the
// columns), the columns contiguous.
// CHECK-NEXT:    %[[STRIDE:.*]] = nvgpu.memref_stride %C, 0 : memref<?x?xbf16>
// CHECK-NEXT:    %[[LIN0:.*]] = arith.muli %[[ROW]], %[[STRIDE]] : index
// CHECK-NEXT:    %[[LIN:.*]] = arith.addi %[[COL]], %[[LIN0]] : index
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[BASE:.*]] = nvgpu.memref_base %C : memref<?x?xbf16>
// CHECK-NEXT:    %[[OFF:.*]] = arith.muli %[[LIN]], %[[TWO]] : index
// CHECK-NEXT:    %[[ADDR:.*]] = arith.addi %[[BASE]], %[[OFF]] : index
// CHECK-NEXT:    %[[PITCH:.*]] = arith.muli %[[STRIDE]], %[[TWO]] : index
// The thread's last element is 8 rows and 249 columns past its first.
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[LROW:.*]] = arith.addi %[[ROW]], %[[C8]] : index
// CHECK-NEXT:    %[[C249:.*]] = arith.constant 249 : index
// CHECK-NEXT:    %[[LCOL:.*]] = arith.addi %[[COL]], %[[C249]] : index
// CHECK:         %[[BOTH:.*]] = arith.ori %[[ADDR]], %[[PITCH]] : index
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    arith.andi %[[BOTH]], %[[C3]] : index
// CHECK:         arith.cmpi eq
// CHECK-NEXT:    %[[FAST:.*]] = arith.andi
// CHECK-NEXT:    scf.if %[[FAST]] {
// CHECK-NEXT:      nvgpu.frag_store_global %[[V]], %[[ADDR]], %[[PITCH]] : !nvgpu.frag<64x256xbf16, wgmma>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[RI:.*]] = nvgpu.frag_index row : !nvgpu.frag<64x256xi32, wgmma>
// CHECK:           nvgpu.frag_cmpi slt
// CHECK:           nvgpu.frag_index col : !nvgpu.frag<64x256xi32, wgmma>
// CHECK:           nvgpu.frag_cmpi slt
// CHECK:           %[[MASK:.*]] = nvgpu.frag_binary andi
// CHECK-NEXT:      nvgpu.frag_store_global %[[V]], %[[ADDR]], %[[PITCH]] mask %[[MASK]] : !nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.frag<64x256xi1, wgmma>
// CHECK-NEXT:    }

// The rows' stride is a parameter after the dims (tawa.backend.ptx.abi),
// loaded where the address is formed.
// PTX:      .param .u64 arg0_C_dim1,
// PTX-NEXT: .param .u64 arg0_C_stride0,
// PTX:      ld.param.u64 %rd{{[0-9]+}}, [arg0_C_stride0];
// The fast path: 64 packed stores, the row-half base (row + 8) computed once.
// PTX:      mad.lo.s64 [[HALF:%rd[0-9]+]], [[PITCH:%rd[0-9]+]], 8, [[ADDR:%rd[0-9]+]];
// PTX-NEXT: st.global.b32 [[[ADDR]]+0], %r{{[0-9]+}};
// PTX-NEXT: st.global.b32 [[[HALF]]+0], %r{{[0-9]+}};
// PTX-NEXT: st.global.b32 [[[ADDR]]+16], %r{{[0-9]+}};
// PTX-NEXT: st.global.b32 [[[HALF]]+16], %r{{[0-9]+}};
// PTX:      st.global.b32 [[[HALF]]+496], %r{{[0-9]+}};
// The edge path: two predicated 2-byte stores per register.
// PTX:      mov.b32 {[[LO:%h[0-9]+]], [[HI:%h[0-9]+]]}, %r{{[0-9]+}};
// PTX-NEXT: @%p{{[0-9]+}} st.global.b16 [%rd{{[0-9]+}}+0], [[LO]];
// PTX-NEXT: @%p{{[0-9]+}} st.global.b16 [%rd{{[0-9]+}}+2], [[HI]];

// -----

// f32 outputs keep their values: one 8-byte vector store per pair.
func.func @store_f32(%C: memref<?x?xf32>, %m: index, %n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 0>} {
  %d = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.frag_store %d, %C[%m, %n] : !nvgpu.frag<64x64xf32, wgmma>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @store_f32
// CHECK-NOT:     nvgpu.frag_convert
// CHECK:         nvgpu.frag_store_global %d, %{{.*}}, %{{.*}} : !nvgpu.frag<64x64xf32, wgmma>
// PTX-LABEL: .entry store_f32
// PTX:       st.global.v2.f32 [%rd{{[0-9]+}}+0], {%f{{[0-9]+}}, %f{{[0-9]+}}};
// PTX:       @%p{{[0-9]+}} st.global.f32 [%rd{{[0-9]+}}+4], %f{{[0-9]+}};
