// RUN: tawa-opt %s -t ptx | filecheck %s
// Each op of emit_fragments.py and the instructions it prints; which thread holds which
// element comes from the fragment's layout (tawa/dialects/nvgpu/layouts.py).

func.func @fragments(%y: f32, %n: i32, %C: memref<?x?xbf16>, %a: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024>} {
  // One register per value: a 64x16 f32 wgmma fragment is 8 values per thread.
  // CHECK-COUNT-8: mov.f32 %f{{[0-9]+}}, 0f00000000;
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x16xf32, wgmma>
  // CHECK-NEXT: mov.f32 %f[[S0:[0-9]+]], %f[[Y:[0-9]+]];
  %s = nvgpu.frag_splat %y : f32 -> !nvgpu.frag<64x16xf32, wgmma>
  // CHECK:      mul.f32 %f{{[0-9]+}}, %f[[S0]], %f[[Y]];
  %b = nvgpu.frag_binary mulf %s, %y : !nvgpu.frag<64x16xf32, wgmma>, f32
  // CHECK:      ex2.approx.ftz.f32
  %e = nvgpu.frag_unary exp2 %b : !nvgpu.frag<64x16xf32, wgmma>
  // Coordinates: the thread part from the layout's thread terms (bit fields of the thread
  // index in its warp group), plus each value's offset (columns 0, 1, 0, 1, 8, 9, 8, 9).
  // CHECK:      mov.u32 %r[[T:[0-9]+]], %tid.x;
  // CHECK-NEXT: and.b32 %r[[T]], %r[[T]], 127;
  // CHECK-NEXT: mov.u32 %r[[C:[0-9]+]], 0;
  // CHECK-NEXT: bfe.u32 %r[[B:[0-9]+]], %r[[T]], 0, 2;
  // CHECK-NEXT: mad.lo.u32 %r[[C]], %r[[B]], 2, %r[[C]];
  // CHECK-NEXT: add.s32 %r[[COL0:[0-9]+]], %r[[C]], 0;
  // CHECK-NEXT: add.s32 %r{{[0-9]+}}, %r[[C]], 1;
  // CHECK-NEXT: add.s32 %r{{[0-9]+}}, %r[[C]], 0;
  // CHECK-NEXT: add.s32 %r{{[0-9]+}}, %r[[C]], 1;
  // CHECK-NEXT: add.s32 %r{{[0-9]+}}, %r[[C]], 8;
  %cols = nvgpu.frag_index col : !nvgpu.frag<64x16xi32, wgmma>
  // Rows: 16 per warp (bits 5-6), then lane / 4 (bits 2-4); values 0, 0, 8, 8, ...
  // CHECK:      bfe.u32 %r[[W:[0-9]+]], %r{{[0-9]+}}, 5, 2;
  // CHECK-NEXT: mad.lo.u32 %r[[R:[0-9]+]], %r[[W]], 16, %r[[R]];
  // CHECK-NEXT: bfe.u32 %r[[L:[0-9]+]], %r{{[0-9]+}}, 2, 3;
  // CHECK-NEXT: mad.lo.u32 %r[[R]], %r[[L]], 1, %r[[R]];
  // CHECK-NEXT: add.s32 %r{{[0-9]+}}, %r[[R]], 0;
  // CHECK-NEXT: add.s32 %r{{[0-9]+}}, %r[[R]], 0;
  // CHECK-NEXT: add.s32 %r{{[0-9]+}}, %r[[R]], 8;
  %rows = nvgpu.frag_index row : !nvgpu.frag<64x16xi32, wgmma>
  // CHECK:      setp.lt.s32 %p[[M0:[0-9]+]], %r[[COL0]], %r{{[0-9]+}};
  %m = nvgpu.frag_cmpi slt, %cols, %n : !nvgpu.frag<64x16xi32, wgmma>, i32
  // CHECK:      selp.f32 %f{{[0-9]+}}, %f{{[0-9]+}}, %f[[Y]], %p[[M0]];
  %sel = nvgpu.frag_select %m, %e, %y : !nvgpu.frag<64x16xi1, wgmma>, !nvgpu.frag<64x16xf32, wgmma>, f32
  // A row reduction folds the thread's values of each of its 2 rows (values 0, 1, 4, 5 and
  // 2, 3, 6, 7) in the order of `fold_steps` (a tree for 4 values: 0 with 4, 1 with 5, then the
  // two partial maxima), into new registers: the input's stay.  Then the 4 lanes of a quad
  // exchange (butterfly masks 1 and 2).
  // CHECK:      max.NaN.f32 %f[[T0:[0-9]+]], %f[[V0:[0-9]+]], %f[[V4:[0-9]+]];
  // CHECK-NEXT: max.NaN.f32 %f[[T1:[0-9]+]], %f[[V1:[0-9]+]], %f[[V5:[0-9]+]];
  // CHECK-NEXT: max.NaN.f32 %f[[ACC:[0-9]+]], %f[[T0]], %f[[T1]];
  // CHECK-NEXT: shfl.sync.bfly.b32 %f[[TMP:[0-9]+]], %f[[ACC]], 1, 31, -1;
  // CHECK-NEXT: max.NaN.f32 %f[[ACC]], %f[[ACC]], %f[[TMP]];
  // CHECK-NEXT: shfl.sync.bfly.b32 %f[[TMP]], %f[[ACC]], 2, 31, -1;
  // CHECK-NEXT: max.NaN.f32 %f[[ACC]], %f[[ACC]], %f[[TMP]];
  // CHECK-NEXT: max.NaN.f32 %f[[T2:[0-9]+]], %f{{[0-9]+}}, %f{{[0-9]+}};
  // CHECK-NEXT: max.NaN.f32 %f[[T3:[0-9]+]], %f{{[0-9]+}}, %f{{[0-9]+}};
  // CHECK-NEXT: max.NaN.f32 %f[[ACC2:[0-9]+]], %f[[T2]], %f[[T3]];
  %r = nvgpu.frag_reduce max %sel : !nvgpu.frag<64x16xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>
  // A broadcast copies each value's row value: rows 0, 0, 8, 8, 0, 0, 8, 8.
  // CHECK:      mov.f32 %f[[B0:[0-9]+]], %f[[ACC]];
  // CHECK-NEXT: mov.f32 %f[[B1:[0-9]+]], %f[[ACC]];
  // CHECK-NEXT: mov.f32 %f[[B2:[0-9]+]], %f[[ACC2]];
  %bc = nvgpu.frag_broadcast %r : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64x16xf32, wgmma>
  // A vector of 2 values packs into one register, the first value in the lower half.
  // CHECK:      cvt.rn.bf16x2.f32 %r[[V0:[0-9]+]], %f[[B1]], %f[[B0]];
  %v = nvgpu.frag_convert %bc : !nvgpu.frag<64x16xf32, wgmma> -> !nvgpu.frag<64x16xbf16, wgmma>
  %p = nvgpu.memref_base %C : memref<?x?xbf16>
  %c1 = arith.constant 1 : index
  %d1 = memref.dim %C, %c1 : memref<?x?xbf16>
  // Unmasked: one store per vector, the row-half base (+8 rows) computed once, column offsets
  // as immediates. memref_base and memref.dim name the parameters' registers.
  // CHECK:      mad.lo.s64 %rd[[HALF:[0-9]+]], %rd[[DIM1:[0-9]+]], 8, %rd[[PTR:[0-9]+]];
  // CHECK-NEXT: st.global.b32 [%rd[[PTR]]+0], %r[[V0]];
  // CHECK-NEXT: st.global.b32 [%rd[[HALF]]+0], %r{{[0-9]+}};
  // CHECK-NEXT: st.global.b32 [%rd[[PTR]]+16], %r{{[0-9]+}};
  // CHECK-NEXT: st.global.b32 [%rd[[HALF]]+16], %r{{[0-9]+}};
  nvgpu.frag_store_global %v, %p, %d1 : !nvgpu.frag<64x16xbf16, wgmma>
  // Masked: each 2-byte half under its own predicate.
  // CHECK:      mov.b32 {%h[[LO:[0-9]+]], %h[[HI:[0-9]+]]}, %r[[V0]];
  // CHECK-NEXT: @%p[[M0]] st.global.b16 [%rd{{[0-9]+}}+0], %h[[LO]];
  // CHECK-NEXT: @%p{{[0-9]+}} st.global.b16 [%rd{{[0-9]+}}+2], %h[[HI]];
  nvgpu.frag_store_global %v, %a, %d1 mask %m : !nvgpu.frag<64x16xbf16, wgmma>, !nvgpu.frag<64x16xi1, wgmma>
  func.return
}

// e4m3 values of a blocked layout (a vector of 8 a thread): packed pairs, two to a 32-bit
// register, each vector one 8-byte store.
// CHECK-LABEL: .entry e4m3_store(
func.func @e4m3_store(%y: f32, %Q: memref<?x?xf8E4M3FN>) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024>} {
  %s = nvgpu.frag_splat %y : f32 -> !nvgpu.frag<1x256xf32, #nvgpu.tiled_layout<(1,256)(1,256)(1,8), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  // CHECK-COUNT-4: cvt.rn.satfinite.e4m3x2.f32 %h{{[0-9]+}}
  %q = nvgpu.frag_convert %s : !nvgpu.frag<1x256xf32, #nvgpu.tiled_layout<(1,256)(1,256)(1,8), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>> -> !nvgpu.frag<1x256xf8E4M3FN, #nvgpu.tiled_layout<(1,256)(1,256)(1,8), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  %p = nvgpu.memref_base %Q : memref<?x?xf8E4M3FN>
  %c1 = arith.constant 1 : index
  %d1 = memref.dim %Q, %c1 : memref<?x?xf8E4M3FN>
  // CHECK:      mov.b32 %r[[W0:[0-9]+]], {%h[[P0:[0-9]+]], %h[[P1:[0-9]+]]};
  // CHECK-NEXT: mov.b32 %r[[W1:[0-9]+]], {%h{{[0-9]+}}, %h{{[0-9]+}}};
  // CHECK-NEXT: st.global.v2.b32 [%rd{{[0-9]+}}+0], {%r[[W0]], %r[[W1]]};
  // CHECK-NOT:  st.global
  nvgpu.frag_store_global %q, %p, %d1 : !nvgpu.frag<1x256xf8E4M3FN, #nvgpu.tiled_layout<(1,256)(1,256)(1,8), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  func.return
}

// e4m3 loads of a blocked layout (a vector of 16 a thread): one 16-byte load a vector, each
// word split into two pairs; with `vector_mask` the words are zeroed and the load predicated;
// widened to f32 through f16, a pair at a time.
// CHECK-LABEL: .entry e4m3_load(
func.func @e4m3_load(%Q: memref<?x?xf8E4M3FN>, %pitch: index, %n: i32) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024>} {
  %p = nvgpu.memref_base %Q : memref<?x?xf8E4M3FN>
  %cols = nvgpu.frag_index col : !nvgpu.frag<1x512xi32, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  %m = nvgpu.frag_cmpi slt, %cols, %n : !nvgpu.frag<1x512xi32, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>, i32
  // CHECK:      ld.global.v4.b32 {%r[[W0:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}+0];
  // CHECK-NEXT: mov.b32 {%h[[P0:[0-9]+]], %h{{[0-9]+}}}, %r[[W0]];
  %q = nvgpu.frag_load_global %p, %pitch : !nvgpu.frag<1x512xf8E4M3FN, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  // CHECK:      cvt.rn.f16x2.e4m3x2 %r[[F:[0-9]+]], %h[[P0]];
  // CHECK-NEXT: mov.b32 {%h[[LO:[0-9]+]], %h[[HI:[0-9]+]]}, %r[[F]];
  // CHECK-NEXT: cvt.f32.f16 %f{{[0-9]+}}, %h[[LO]];
  // CHECK-NEXT: cvt.f32.f16 %f{{[0-9]+}}, %h[[HI]];
  %f = nvgpu.frag_convert %q : !nvgpu.frag<1x512xf8E4M3FN, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>> -> !nvgpu.frag<1x512xf32, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  // CHECK:      mov.b32 %r[[Z:[0-9]+]], 0;
  // CHECK-COUNT-3: mov.b32 %r{{[0-9]+}}, 0;
  // CHECK-NEXT: @%p{{[0-9]+}} ld.global.v4.b32 {%r[[Z]],
  %v = nvgpu.frag_load_global %p, %pitch mask %m {vector_mask} : !nvgpu.frag<1x512xf8E4M3FN, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>, !nvgpu.frag<1x512xi1, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  // Element by element: each byte under its bit (0 where clear), the pair put together.
  // CHECK:      mov.b16 %h[[E:[0-9]+]], 0;
  // CHECK-NEXT: mov.b16 %h[[T:[0-9]+]], 0;
  // CHECK-NEXT: @%p{{[0-9]+}} ld.global.u8 %h[[E]], [%rd{{[0-9]+}}+0];
  // CHECK-NEXT: @%p{{[0-9]+}} ld.global.u8 %h[[T]], [%rd{{[0-9]+}}+1];
  // CHECK-NEXT: shl.b16 %h[[T]], %h[[T]], 8;
  // CHECK-NEXT: or.b16 %h[[E]], %h[[E]], %h[[T]];
  %e = nvgpu.frag_load_global %p, %pitch mask %m : !nvgpu.frag<1x512xf8E4M3FN, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>, !nvgpu.frag<1x512xi1, #nvgpu.tiled_layout<(1,512)(1,512)(1,16), warps = [-6, -5, *4], lanes = [-4, -3], vector = -1>>
  func.return
}

// A transpose through shared memory: each value stored at its element's place, C·i + j, from
// the thread's first element (coordinates in registers), the warp group's barrier, each value
// of the 32x8 result read back from C·b + a, the barrier again.
// CHECK-LABEL: .entry transpose_shared(
func.func @transpose_shared(%y: f32) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024>} {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128xf32>
  %x = nvgpu.frag_splat %y : f32 -> !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>
  // CHECK:      mad.lo.u32 %r[[AT:[0-9]+]], %r{{[0-9]+}}, 32, %r{{[0-9]+}};
  // CHECK-NEXT: mad.lo.u32 %r[[AT]], %r[[AT]], 4, %r{{[0-9]+}};
  // CHECK-NEXT: st.shared.f32 [%r[[AT]]+0], %f{{[0-9]+}};
  // CHECK-NEXT: st.shared.f32 [%r[[AT]]+4], %f{{[0-9]+}};
  // CHECK:      bar.sync 15, 128;
  // CHECK:      mad.lo.u32 %r[[BT:[0-9]+]], %r{{[0-9]+}}, 32, %r{{[0-9]+}};
  // CHECK-NEXT: mad.lo.u32 %r[[BT]], %r[[BT]], 4, %r{{[0-9]+}};
  // CHECK-NEXT: ld.shared.f32 %f{{[0-9]+}}, [%r[[BT]]+0];
  // CHECK-NEXT: ld.shared.f32 %f{{[0-9]+}}, [%r[[BT]]+128];
  // CHECK:      bar.sync 15, 128;
  %t = nvgpu.frag_transpose_shared %x via %s barrier 15 : !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<2x128xf32> -> !nvgpu.frag<32x8xf32, #nvgpu.tiled_layout<(32,8)(16,8)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>
  func.return
}
