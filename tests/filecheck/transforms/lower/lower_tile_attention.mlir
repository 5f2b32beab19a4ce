// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false epilogue=threads overlap=none}' | filecheck %s

// FlashAttention forward, fully lowered: masks from element coordinates, the
// online softmax on accumulator and row fragments, P·V with P in registers.
// CHECK-LABEL: func.func @attention_fwd
// CHECK:         nvgpu.frag_splat %ninf : f32 -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK:         nvgpu.frag_zeros : !nvgpu.frag<64xf32, wgmma_row>
// S = Q·Kᵀ starts from zeros: the wgmma overwrites an unwritten accumulator (scale-d false)
// instead of adding to zeroed registers.
// CHECK:         %unwritten = nvgpu.frag_undef : !nvgpu.frag<64x128xf32, wgmma>
// CHECK-NEXT:    %overwrite = arith.constant false
// CHECK-NEXT:    nvgpu.wgmma_fence
// CHECK-NEXT:    nvgpu.wgmma %{{.*}}, %{{.*}}, %unwritten, %overwrite {rhs_transposed} : !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x128xbf16, swizzle = 128>
// Key columns past kv_len are masked: column index + n0 < kv_len.  When the
// whole block is inside the sequence (127 + n0 - kv_len < 0) the mask is
// skipped at run time.
// CHECK:         %[[LAST:.*]] = arith.constant 127 : i32
// CHECK-NEXT:    %[[HI:.*]] = arith.addi %[[LAST]], %n0_i32 : i32
// CHECK:         %[[FAST:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %s_masked = scf.if %[[FAST]] -> (!nvgpu.frag<64x128xf32, wgmma>) {
// CHECK-NEXT:      scf.yield %s : !nvgpu.frag<64x128xf32, wgmma>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[COLS:.*]] = nvgpu.frag_index col : !nvgpu.frag<64x128xi32, wgmma>
// CHECK-NEXT:      %[[KEYS:.*]] = nvgpu.frag_binary addi %[[COLS]], %n0_i32 : !nvgpu.frag<64x128xi32, wgmma>, i32
// CHECK-NEXT:      %[[IN:.*]] = nvgpu.frag_cmpi slt, %[[KEYS]], %kv_len_i32
// CHECK-NEXT:      %[[SEL:.*]] = nvgpu.frag_select %[[IN]], %s, %ninf
// CHECK-NEXT:      scf.yield %[[SEL]]
// CHECK-NEXT:    }
// The row max of the unscaled scores, scaled (one multiply per row).
// CHECK-NEXT:    %m_raw = nvgpu.frag_reduce max %s_masked
// CHECK-NEXT:    %m_blk = nvgpu.frag_binary mulf %m_raw, %qk_scale : !nvgpu.frag<64xf32, wgmma_row>, f32
// CHECK-NEXT:    %m_new = nvgpu.frag_binary maximumf %m_prev, %m_blk : !nvgpu.frag<64xf32, wgmma_row>, !nvgpu.frag<64xf32, wgmma_row>
// CHECK:         %[[P:.*]] = nvgpu.frag_convert %p : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
// CHECK:         nvgpu.wgmma %[[P]], %{{.*}}, %acc_scaled
// CHECK:         nvgpu.frag_store_global
// CHECK-NOT:     tile.

// The causal mask compares the key column with the query row (the warp
// group's row in the tile plus m0); blocks below the diagonal skip it.
// CHECK-LABEL: func.func @attention_fwd_causal
// CHECK:         %s_masked = scf.if
// CHECK:         %[[ROWS:.*]] = nvgpu.frag_index row : !nvgpu.frag<64x128xi32, wgmma>
// CHECK-NEXT:    %[[R:.*]] = nvgpu.frag_binary addi %[[ROWS]], %{{.*}} : !nvgpu.frag<64x128xi32, wgmma>, i32
// CHECK-NEXT:    %[[Q:.*]] = nvgpu.frag_binary addi %[[R]], %m0_i32
// CHECK-NEXT:    nvgpu.frag_cmpi sle, %{{.*}}, %[[Q]] : !nvgpu.frag<64x128xi32, wgmma>, !nvgpu.frag<64x128xi32, wgmma>
// CHECK:         nvgpu.frag_binary andi
// CHECK:         nvgpu.frag_select
