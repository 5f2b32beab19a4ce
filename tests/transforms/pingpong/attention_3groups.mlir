// Attention at head dim 64 with 192 query rows per program and 64-key blocks: three consumer
// warp groups, whose overlapped loop tawa-pingpong orders in a ring of three turns
// (tests/transforms/test_pingpong.py).  Launch grid: (⌈seq_len/192⌉, batch·heads).
func.func @attention_3groups(%Q: memref<?x?x?xbf16>, %K: memref<?x?x?xbf16>, %V: memref<?x?x?xbf16>,
                %O: memref<?x?x?xbf16>, %seq_len: index, %sm_scale: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %log2e = arith.constant 1.44269504 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  %pid_m = tile.program_id 0
  %bh = tile.program_id 1
  %c192 = arith.constant 192 : index
  %m0 = arith.muli %pid_m, %c192 : index
  // Softmax in base 2: exp(x * scale) = exp2(x * scale * log2(e)).
  %qk_scale = arith.mulf %sm_scale, %log2e : f32
  %qk_scale_t = tile.splat %qk_scale : f32 -> tensor<192x64xf32>
  %qk_scale_r = tile.splat %qk_scale : f32 -> tensor<192xf32>
  %ninf_t = tile.splat %ninf : f32 -> tensor<192x64xf32>
  %seq_len_i32 = arith.index_cast %seq_len : index to i32
  %seq_len_t = tile.splat %seq_len_i32 : i32 -> tensor<192x64xi32>
  %m0_i32 = arith.index_cast %m0 : index to i32
  %iota_q = tile.iota : tensor<192xi32>
  %iota = tile.iota : tensor<64xi32>
  %rows = tile.splat %m0_i32 : i32 -> tensor<192xi32>
  %query_1d = arith.addi %rows, %iota_q : tensor<192xi32>
  %query_col = tile.expand_dims %query_1d, 1 : tensor<192xi32> -> tensor<192x1xi32>
  %query_idx = tile.broadcast %query_col : tensor<192x1xi32> -> tensor<192x64xi32>
  %q = tile.load %Q[%bh, %m0, %c0] : memref<?x?x?xbf16> -> tensor<192x64xbf16>
  %m_init = tile.splat %ninf : f32 -> tensor<192xf32>
  %l_init = tile.zeros : tensor<192xf32>
  %acc_init = tile.zeros : tensor<192x64xf32>
    %m_i, %l_i, %acc = scf.for %n0 = %c0 to %seq_len step %c64
      iter_args(%m_prev = %m_init, %l_prev = %l_init, %acc_prev = %acc_init)
      -> (tensor<192xf32>, tensor<192xf32>, tensor<192x64xf32>) {
    %k = tile.load %K[%bh, %n0, %c0] : memref<?x?x?xbf16> -> tensor<64x64xbf16>
    %v = tile.load %V[%bh, %n0, %c0] : memref<?x?x?xbf16> -> tensor<64x64xbf16>
    %s_zero = tile.zeros : tensor<192x64xf32>
    %s = tile.dot %q, %k, %s_zero {rhs_transposed} : tensor<192x64xbf16>, tensor<64x64xbf16> -> tensor<192x64xf32>
    // Keys past the end of the sequence (zero-filled by the load) are masked out.
    %n0_i32 = arith.index_cast %n0 : index to i32
    %cols = tile.splat %n0_i32 : i32 -> tensor<64xi32>
    %key_1d = arith.addi %cols, %iota : tensor<64xi32>
    %key_row = tile.expand_dims %key_1d, 0 : tensor<64xi32> -> tensor<1x64xi32>
    %key_idx = tile.broadcast %key_row : tensor<1x64xi32> -> tensor<192x64xi32>
    %in_range = tile.cmpi slt, %key_idx, %seq_len_t : tensor<192x64xi32>
    %s_masked = tile.select %in_range, %s, %ninf_t : tensor<192x64xi1>, tensor<192x64xf32>
    // Online softmax: new running max, rescale what was accumulated so far.
    // The row max of the unscaled scores, scaled: qk_scale > 0 (sm_scale > 0), so
    // max(s)·qk_scale = max(s·qk_scale), and s·qk_scale - m below is one fma per score.
    %m_raw = tile.reduce max %s_masked, 1 : tensor<192x64xf32> -> tensor<192xf32>
    %m_blk = arith.mulf %m_raw, %qk_scale_r : tensor<192xf32>
    %m_new = arith.maximumf %m_prev, %m_blk : tensor<192xf32>
    %m_new_col = tile.expand_dims %m_new, 1 : tensor<192xf32> -> tensor<192x1xf32>
    %m_new_b = tile.broadcast %m_new_col : tensor<192x1xf32> -> tensor<192x64xf32>
    %s_scaled = arith.mulf %s_masked, %qk_scale_t : tensor<192x64xf32>
    %s_shifted = arith.subf %s_scaled, %m_new_b : tensor<192x64xf32>
    %p = math.exp2 %s_shifted : tensor<192x64xf32>
    %m_diff = arith.subf %m_prev, %m_new : tensor<192xf32>
    %alpha = math.exp2 %m_diff : tensor<192xf32>
    %p_sum = tile.reduce sum %p, 1 : tensor<192x64xf32> -> tensor<192xf32>
    %l_scaled = arith.mulf %l_prev, %alpha : tensor<192xf32>
    %l_new = arith.addf %l_scaled, %p_sum : tensor<192xf32>
    %alpha_col = tile.expand_dims %alpha, 1 : tensor<192xf32> -> tensor<192x1xf32>
    %alpha_b = tile.broadcast %alpha_col : tensor<192x1xf32> -> tensor<192x64xf32>
    %acc_scaled = arith.mulf %acc_prev, %alpha_b : tensor<192x64xf32>
    %p_bf16 = arith.truncf %p : tensor<192x64xf32> to tensor<192x64xbf16>
    %acc_new = tile.dot %p_bf16, %v, %acc_scaled : tensor<192x64xbf16>, tensor<64x64xbf16> -> tensor<192x64xf32>
    scf.yield %m_new, %l_new, %acc_new : tensor<192xf32>, tensor<192xf32>, tensor<192x64xf32>
  }
  // One division per row, then a product per element.
  %one_r = tile.splat %one : f32 -> tensor<192xf32>
  %l_inv = arith.divf %one_r, %l_i : tensor<192xf32>
  %l_col = tile.expand_dims %l_inv, 1 : tensor<192xf32> -> tensor<192x1xf32>
  %l_b = tile.broadcast %l_col : tensor<192x1xf32> -> tensor<192x64xf32>
  %o = arith.mulf %acc, %l_b : tensor<192x64xf32>
  %o_bf16 = arith.truncf %o : tensor<192x64xf32> to tensor<192x64xbf16>
  tile.store %o_bf16, %O[%bh, %m0, %c0] : tensor<192x64xbf16>, memref<?x?x?xbf16>
  func.return
}
