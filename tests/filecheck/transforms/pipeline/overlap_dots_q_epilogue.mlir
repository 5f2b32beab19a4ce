// tawa-overlap-dots' early release (tawa/transforms/pipeline/overlap_dots.py, _release_before_epilogue)
// does not move a release whose slot the epilogue still reads: here the output adds Q to the
// normalized attention, so Q's slot stays held until that read, after the guard.
// RUN: tawa-opt %s -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-overlap-dots' | filecheck %s

// CHECK-LABEL: partition consumer
// CHECK:       } {tawa.overlapped}
// CHECK-NOT:   aref.consumed %ref_q
// CHECK:       } else {
// CHECK-NEXT:    scf.yield %m_init, %l_init, %acc_init
// CHECK-NEXT:  }
// CHECK-NOT:   aref.consumed %ref_q
// CHECK:       %q32 = arith.extf %q_1
// CHECK-NEXT:  aref.consumed %ref_q
// CHECK-NEXT:  arith.addf %o, %q32

func.func @attention_fwd(%Q: memref<?x?x?xbf16>, %K: memref<?x?x?xbf16>, %V: memref<?x?x?xbf16>,
                %O: memref<?x?x?xbf16>, %seq_len: index, %sm_scale: f32) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %log2e = arith.constant 1.44269504 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  %pid_m = tile.program_id 0
  %bh = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  // Softmax in base 2: exp(x * scale) = exp2(x * scale * log2(e)).
  %qk_scale = arith.mulf %sm_scale, %log2e : f32
  %qk_scale_t = tile.splat %qk_scale : f32 -> tensor<128x128xf32>
  %qk_scale_r = tile.splat %qk_scale : f32 -> tensor<128xf32>
  %ninf_t = tile.splat %ninf : f32 -> tensor<128x128xf32>
  %seq_len_i32 = arith.index_cast %seq_len : index to i32
  %seq_len_t = tile.splat %seq_len_i32 : i32 -> tensor<128x128xi32>
  %m0_i32 = arith.index_cast %m0 : index to i32
  %iota = tile.iota : tensor<128xi32>
  %rows = tile.splat %m0_i32 : i32 -> tensor<128xi32>
  %query_1d = arith.addi %rows, %iota : tensor<128xi32>
  %query_col = tile.expand_dims %query_1d, 1 : tensor<128xi32> -> tensor<128x1xi32>
  %query_idx = tile.broadcast %query_col : tensor<128x1xi32> -> tensor<128x128xi32>
  %q = tile.load %Q[%bh, %m0, %c0] : memref<?x?x?xbf16> -> tensor<128x128xbf16>
  %m_init = tile.splat %ninf : f32 -> tensor<128xf32>
  %l_init = tile.zeros : tensor<128xf32>
  %acc_init = tile.zeros : tensor<128x128xf32>
    %m_i, %l_i, %acc = scf.for %n0 = %c0 to %seq_len step %c128
      iter_args(%m_prev = %m_init, %l_prev = %l_init, %acc_prev = %acc_init)
      -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) {
    %k = tile.load %K[%bh, %n0, %c0] : memref<?x?x?xbf16> -> tensor<128x128xbf16>
    %v = tile.load %V[%bh, %n0, %c0] : memref<?x?x?xbf16> -> tensor<128x128xbf16>
    %s_zero = tile.zeros : tensor<128x128xf32>
    %s = tile.dot %q, %k, %s_zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    // Keys past the end of the sequence (zero-filled by the load) are masked out.
    %n0_i32 = arith.index_cast %n0 : index to i32
    %cols = tile.splat %n0_i32 : i32 -> tensor<128xi32>
    %key_1d = arith.addi %cols, %iota : tensor<128xi32>
    %key_row = tile.expand_dims %key_1d, 0 : tensor<128xi32> -> tensor<1x128xi32>
    %key_idx = tile.broadcast %key_row : tensor<1x128xi32> -> tensor<128x128xi32>
    %in_range = tile.cmpi slt, %key_idx, %seq_len_t : tensor<128x128xi32>
    %s_masked = tile.select %in_range, %s, %ninf_t : tensor<128x128xi1>, tensor<128x128xf32>
    // Online softmax: new running max, rescale what was accumulated so far.
    // The row max of the unscaled scores, scaled: qk_scale > 0 (sm_scale > 0), so
    // max(s)·qk_scale = max(s·qk_scale), and s·qk_scale - m below is one fma per score.
    %m_raw = tile.reduce max %s_masked, 1 : tensor<128x128xf32> -> tensor<128xf32>
    %m_blk = arith.mulf %m_raw, %qk_scale_r : tensor<128xf32>
    %m_new = arith.maximumf %m_prev, %m_blk : tensor<128xf32>
    %m_new_col = tile.expand_dims %m_new, 1 : tensor<128xf32> -> tensor<128x1xf32>
    %m_new_b = tile.broadcast %m_new_col : tensor<128x1xf32> -> tensor<128x128xf32>
    %s_scaled = arith.mulf %s_masked, %qk_scale_t : tensor<128x128xf32>
    %s_shifted = arith.subf %s_scaled, %m_new_b : tensor<128x128xf32>
    %p = math.exp2 %s_shifted : tensor<128x128xf32>
    %m_diff = arith.subf %m_prev, %m_new : tensor<128xf32>
    %alpha = math.exp2 %m_diff : tensor<128xf32>
    %p_sum = tile.reduce sum %p, 1 : tensor<128x128xf32> -> tensor<128xf32>
    %l_scaled = arith.mulf %l_prev, %alpha : tensor<128xf32>
    %l_new = arith.addf %l_scaled, %p_sum : tensor<128xf32>
    %alpha_col = tile.expand_dims %alpha, 1 : tensor<128xf32> -> tensor<128x1xf32>
    %alpha_b = tile.broadcast %alpha_col : tensor<128x1xf32> -> tensor<128x128xf32>
    %acc_scaled = arith.mulf %acc_prev, %alpha_b : tensor<128x128xf32>
    %p_bf16 = arith.truncf %p : tensor<128x128xf32> to tensor<128x128xbf16>
    %acc_new = tile.dot %p_bf16, %v, %acc_scaled : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    scf.yield %m_new, %l_new, %acc_new : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
  }
  // One division per row, then a product per element.
  %one_r = tile.splat %one : f32 -> tensor<128xf32>
  %l_inv = arith.divf %one_r, %l_i : tensor<128xf32>
  %l_col = tile.expand_dims %l_inv, 1 : tensor<128xf32> -> tensor<128x1xf32>
  %l_b = tile.broadcast %l_col : tensor<128x1xf32> -> tensor<128x128xf32>
  %o = arith.mulf %acc, %l_b : tensor<128x128xf32>
  %q32 = arith.extf %q : tensor<128x128xbf16> to tensor<128x128xf32>
  %o_q = arith.addf %o, %q32 : tensor<128x128xf32>
  %o_bf16 = arith.truncf %o_q : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o_bf16, %O[%bh, %m0, %c0] : tensor<128x128xbf16>, memref<?x?x?xbf16>
  func.return
}

