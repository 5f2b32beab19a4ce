// FlashAttention-2-style forward pass, head dim 128: O = softmax(Q·Kᵀ·sm_scale)·V,
// sm_scale > 0 (the row max is taken before the scaling).
// Q, O are [batch, heads, q_len, 128] and K, V [batch, heads / group, kv_len, 128]
// bf16, rows contiguous, any other strides (a tensor map each): query head h
// reads key/value head h / group (grouped-query attention; group 1: one each).
// One program computes 128 query rows of one (batch, head): it streams
// 128-key blocks of K and V, keeps a running row max m and row sum l (online
// softmax) and rescales the f32 accumulator as the max grows.  Launch grid:
// (⌈q_len/128⌉, heads, batch).
//
// @attention_fwd_causal masks key j for query i when j > i + kv_len - q_len
// (aligned bottom-right: the queries are the last q_len positions of the keys';
// kv_len >= q_len) and stops at the diagonal block.  Key columns past kv_len
// (zero-filled by the load) are masked to -inf; query rows past q_len are
// computed from zero-filled Q rows and dropped by the store.

func.func @attention_fwd(%Q: memref<?x?x?x?xbf16>, %K: memref<?x?x?x?xbf16>, %V: memref<?x?x?x?xbf16>,
                %O: memref<?x?x?x?xbf16>, %q_len: index, %kv_len: index, %sm_scale: f32,
                %group: index) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %log2e = arith.constant 1.44269504 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  %pid_m = tile.program_id 0
  %h = tile.program_id 1
  %b = tile.program_id 2
  // Query head h reads key/value head h / group (grouped-query attention).
  %hk = arith.divui %h, %group : index
  %m0 = arith.muli %pid_m, %c128 : index
  // Softmax in base 2: exp(x * scale) = exp2(x * scale * log2(e)).
  %qk_scale = arith.mulf %sm_scale, %log2e : f32
  %qk_scale_t = tile.splat %qk_scale : f32 -> tensor<128x128xf32>
  %qk_scale_r = tile.splat %qk_scale : f32 -> tensor<128xf32>
  %ninf_t = tile.splat %ninf : f32 -> tensor<128x128xf32>
  %kv_len_i32 = arith.index_cast %kv_len : index to i32
  %kv_len_t = tile.splat %kv_len_i32 : i32 -> tensor<128x128xi32>
  %m0_i32 = arith.index_cast %m0 : index to i32
  %iota = tile.iota : tensor<128xi32>
  %rows = tile.splat %m0_i32 : i32 -> tensor<128xi32>
  %query_1d = arith.addi %rows, %iota : tensor<128xi32>
  %query_col = tile.expand_dims %query_1d, 1 : tensor<128xi32> -> tensor<128x1xi32>
  %query_idx = tile.broadcast %query_col : tensor<128x1xi32> -> tensor<128x128xi32>
  %q = tile.load %Q[%b, %h, %m0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
  %m_init = tile.splat %ninf : f32 -> tensor<128xf32>
  %l_init = tile.zeros : tensor<128xf32>
  %acc_init = tile.zeros : tensor<128x128xf32>
    %m_i, %l_i, %acc = scf.for %n0 = %c0 to %kv_len step %c128
      iter_args(%m_prev = %m_init, %l_prev = %l_init, %acc_prev = %acc_init)
      -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) {
    %k = tile.load %K[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
    %v = tile.load %V[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
    %s_zero = tile.zeros : tensor<128x128xf32>
    %s = tile.dot %q, %k, %s_zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    // Keys past the end of the sequence (zero-filled by the load) are masked out.
    %n0_i32 = arith.index_cast %n0 : index to i32
    %cols = tile.splat %n0_i32 : i32 -> tensor<128xi32>
    %key_1d = arith.addi %cols, %iota : tensor<128xi32>
    %key_row = tile.expand_dims %key_1d, 0 : tensor<128xi32> -> tensor<1x128xi32>
    %key_idx = tile.broadcast %key_row : tensor<1x128xi32> -> tensor<128x128xi32>
    %in_range = tile.cmpi slt, %key_idx, %kv_len_t : tensor<128x128xi32>
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
  %o_bf16 = arith.truncf %o : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o_bf16, %O[%b, %h, %m0, %c0] : tensor<128x128xbf16>, memref<?x?x?x?xbf16>
  func.return
}

func.func @attention_fwd_causal(%Q: memref<?x?x?x?xbf16>, %K: memref<?x?x?x?xbf16>, %V: memref<?x?x?x?xbf16>,
                %O: memref<?x?x?x?xbf16>, %q_len: index, %kv_len: index, %sm_scale: f32,
                %group: index) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %log2e = arith.constant 1.44269504 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  %pid_m = tile.program_id 0
  %h = tile.program_id 1
  %b = tile.program_id 2
  // Query head h reads key/value head h / group (grouped-query attention).
  %hk = arith.divui %h, %group : index
  %m0 = arith.muli %pid_m, %c128 : index
  // Softmax in base 2: exp(x * scale) = exp2(x * scale * log2(e)).
  %qk_scale = arith.mulf %sm_scale, %log2e : f32
  %qk_scale_t = tile.splat %qk_scale : f32 -> tensor<128x128xf32>
  %qk_scale_r = tile.splat %qk_scale : f32 -> tensor<128xf32>
  %ninf_t = tile.splat %ninf : f32 -> tensor<128x128xf32>
  %kv_len_i32 = arith.index_cast %kv_len : index to i32
  %kv_len_t = tile.splat %kv_len_i32 : i32 -> tensor<128x128xi32>
  // Causal, aligned bottom-right: query i sees the keys j <= i + kv_len - q_len
  // (kv_len >= q_len: the queries are the last q_len of the keys' positions).
  %shift = arith.subi %kv_len, %q_len : index
  %m0_key = arith.addi %m0, %shift : index
  %m0_i32 = arith.index_cast %m0_key : index to i32
  %iota = tile.iota : tensor<128xi32>
  %rows = tile.splat %m0_i32 : i32 -> tensor<128xi32>
  %query_1d = arith.addi %rows, %iota : tensor<128xi32>
  %query_col = tile.expand_dims %query_1d, 1 : tensor<128xi32> -> tensor<128x1xi32>
  %query_idx = tile.broadcast %query_col : tensor<128x1xi32> -> tensor<128x128xi32>
  %q = tile.load %Q[%b, %h, %m0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
  %m_init = tile.splat %ninf : f32 -> tensor<128xf32>
  %l_init = tile.zeros : tensor<128xf32>
  %acc_init = tile.zeros : tensor<128x128xf32>
  %diag = arith.addi %m0_key, %c128 : index
  %hi = arith.minui %diag, %kv_len : index
  %m_i, %l_i, %acc = scf.for %n0 = %c0 to %hi step %c128
      iter_args(%m_prev = %m_init, %l_prev = %l_init, %acc_prev = %acc_init)
      -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) {
    %k = tile.load %K[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
    %v = tile.load %V[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
    %s_zero = tile.zeros : tensor<128x128xf32>
    %s = tile.dot %q, %k, %s_zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    // Keys past the end of the sequence (zero-filled by the load) are masked out.
    %n0_i32 = arith.index_cast %n0 : index to i32
    %cols = tile.splat %n0_i32 : i32 -> tensor<128xi32>
    %key_1d = arith.addi %cols, %iota : tensor<128xi32>
    %key_row = tile.expand_dims %key_1d, 0 : tensor<128xi32> -> tensor<1x128xi32>
    %key_idx = tile.broadcast %key_row : tensor<1x128xi32> -> tensor<128x128xi32>
    %in_range = tile.cmpi slt, %key_idx, %kv_len_t : tensor<128x128xi32>
    %allowed = tile.cmpi sle, %key_idx, %query_idx : tensor<128x128xi32>
    %valid = arith.andi %in_range, %allowed : tensor<128x128xi1>
    %s_masked = tile.select %valid, %s, %ninf_t : tensor<128x128xi1>, tensor<128x128xf32>
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
  %o_bf16 = arith.truncf %o : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o_bf16, %O[%b, %h, %m0, %c0] : tensor<128x128xbf16>, memref<?x?x?x?xbf16>
  func.return
}
