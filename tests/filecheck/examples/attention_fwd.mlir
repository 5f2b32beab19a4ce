// The attention example (plain and causal kernels) parses and verifies, its
// printed form re-prints identically, and the generic form prints back to the
// same custom form.
//
// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir > %t.mlir
// RUN: tawa-opt %t.mlir | diff %t.mlir -
// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir --print-op-generic > %t.generic.mlir
// RUN: tawa-opt %t.generic.mlir | diff %t.mlir -
// RUN: filecheck %s --input-file %t.mlir
// RUN: filecheck %s --input-file %t.generic.mlir --check-prefix=CHECK-GENERIC
// RUN: filecheck %s --input-file %t.mlir --check-prefix=CAUSAL

// Only the causal kernel compares key and query positions.
// CAUSAL-LABEL: func.func @attention_fwd(
// CAUSAL-NOT:   tile.cmpi sle
// CAUSAL:       func.func @attention_fwd_causal(
// CAUSAL:       tile.cmpi sle, %key_idx, %query_idx

// CHECK-LABEL: func.func @attention_fwd(%Q: memref<?x?x?x?xbf16>, %K: memref<?x?x?x?xbf16>, %V: memref<?x?x?x?xbf16>, %O: memref<?x?x?x?xbf16>, %q_len: index, %kv_len: index, %sm_scale: f32, %group: index) {
// CHECK:         %pid_m = tile.program_id 0
// CHECK-NEXT:    %h = tile.program_id 1
// CHECK-NEXT:    %b = tile.program_id 2
// Query head h reads key/value head h / group.
// CHECK-NEXT:    %hk = arith.divui %h, %group : index
// CHECK:         %iota = tile.iota : tensor<128xi32>
// CHECK:         %query_col = tile.expand_dims %query_1d, 1 : tensor<128xi32> -> tensor<128x1xi32>
// CHECK-NEXT:    %query_idx = tile.broadcast %query_col : tensor<128x1xi32> -> tensor<128x128xi32>
// CHECK-NEXT:    %q = tile.load %Q[%b, %h, %m0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
// CHECK-NEXT:    %m_init = tile.splat %ninf : f32 -> tensor<128xf32>
// CHECK-NEXT:    %l_init = tile.zeros : tensor<128xf32>
// CHECK-NEXT:    %acc_init = tile.zeros : tensor<128x128xf32>
// The key loop carries the running max, the running sum and the accumulator.
// CHECK-NEXT:    %m_i, %l_i, %acc = scf.for %n0 = %c0 to %kv_len step %c128 iter_args(%m_prev = %m_init, %l_prev = %l_init, %acc_prev = %acc_init) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) {
// CHECK-NEXT:      %k = tile.load %K[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
// CHECK-NEXT:      %v = tile.load %V[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
// CHECK-NEXT:      %s_zero = tile.zeros : tensor<128x128xf32>
// CHECK-NEXT:      %s = tile.dot %q, %k, %s_zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
// CHECK:           %in_range = tile.cmpi slt, %key_idx, %kv_len_t : tensor<128x128xi32>
// CHECK-NEXT:      %s_masked = tile.select %in_range, %s, %ninf_t : tensor<128x128xi1>, tensor<128x128xf32>
// CHECK-NEXT:      %m_raw = tile.reduce max %s_masked, 1 : tensor<128x128xf32> -> tensor<128xf32>
// CHECK-NEXT:      %m_blk = arith.mulf %m_raw, %qk_scale_r : tensor<128xf32>
// CHECK:           %p_sum = tile.reduce sum %p, 1 : tensor<128x128xf32> -> tensor<128xf32>
// CHECK:           %acc_new = tile.dot %p_bf16, %v, %acc_scaled : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:      scf.yield %m_new, %l_new, %acc_new : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
// CHECK-NEXT:    }
// CHECK:         tile.store %o_bf16, %O[%b, %h, %m0, %c0] : tensor<128x128xbf16>, memref<?x?x?x?xbf16>
// CHECK-NEXT:    func.return

// CHECK-LABEL: func.func @attention_fwd_causal(%Q: memref<?x?x?x?xbf16>, %K: memref<?x?x?x?xbf16>, %V: memref<?x?x?x?xbf16>, %O: memref<?x?x?x?xbf16>, %q_len: index, %kv_len: index, %sm_scale: f32, %group: index) {
// The causal kernel stops at the diagonal block...
// (aligned bottom-right: query i sees keys j <= i + kv_len - q_len) ...
// CHECK:         %shift = arith.subi %kv_len, %q_len : index
// CHECK-NEXT:    %m0_key = arith.addi %m0, %shift : index
// CHECK:         %diag = arith.addi %m0_key, %c128 : index
// CHECK-NEXT:    %hi = arith.minui %diag, %kv_len : index
// CHECK-NEXT:    %m_i, %l_i, %acc = scf.for %n0 = %c0 to %hi step %c128 iter_args(%m_prev = %m_init, %l_prev = %l_init, %acc_prev = %acc_init) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) {
// CHECK:           %s = tile.dot %q, %k, %s_zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
// ... and masks key j for query i + kv_len - q_len < j.
// CHECK:           %in_range = tile.cmpi slt, %key_idx, %kv_len_t : tensor<128x128xi32>
// CHECK-NEXT:      %allowed = tile.cmpi sle, %key_idx, %query_idx : tensor<128x128xi32>
// CHECK-NEXT:      %valid = arith.andi %in_range, %allowed : tensor<128x128xi1>
// CHECK-NEXT:      %s_masked = tile.select %valid, %s, %ninf_t : tensor<128x128xi1>, tensor<128x128xf32>
// CHECK-NEXT:      %m_raw = tile.reduce max %s_masked, 1 : tensor<128x128xf32> -> tensor<128xf32>
// CHECK:           %acc_new = tile.dot %p_bf16, %v, %acc_scaled : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:      scf.yield %m_new, %l_new, %acc_new : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
// CHECK-NEXT:    }
// CHECK:         tile.store %o_bf16, %O[%b, %h, %m0, %c0] : tensor<128x128xbf16>, memref<?x?x?x?xbf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT: }

// CHECK-GENERIC:       "func.func"() <{sym_name = "attention_fwd", function_type = (memref<?x?x?x?xbf16>, memref<?x?x?x?xbf16>, memref<?x?x?x?xbf16>, memref<?x?x?x?xbf16>, index, index, f32, index) -> ()}> ({
// CHECK-GENERIC:         %m_i, %l_i, %acc = "scf.for"(%c0, %kv_len, %c128, %m_init, %l_init, %acc_init) ({
// CHECK-GENERIC-NEXT:    ^bb0(%n0: index, %m_prev: tensor<128xf32>, %l_prev: tensor<128xf32>, %acc_prev: tensor<128x128xf32>):
// CHECK-GENERIC:           %s = "tile.dot"(%q, %k, %s_zero) <{rhs_transposed}> : (tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
// CHECK-GENERIC:           %in_range = "tile.cmpi"(%key_idx, %kv_len_t) <{predicate = #tile<cmpi_predicate slt>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC:           %m_raw = "tile.reduce"(%s_masked) <{kind = #tile<reduce_kind max>, axis = 1 : i64}> : (tensor<128x128xf32>) -> tensor<128xf32>
// CHECK-GENERIC:           %p_sum = "tile.reduce"(%p) <{kind = #tile<reduce_kind sum>, axis = 1 : i64}> : (tensor<128x128xf32>) -> tensor<128xf32>
// CHECK-GENERIC:           %acc_new = "tile.dot"(%p_bf16, %v, %acc_scaled) : (tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
// CHECK-GENERIC:         }) : (index, index, index, tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>)
// CHECK-GENERIC:       "func.func"() <{sym_name = "attention_fwd_causal", function_type = (memref<?x?x?x?xbf16>, memref<?x?x?x?xbf16>, memref<?x?x?x?xbf16>, memref<?x?x?x?xbf16>, index, index, f32, index) -> ()}> ({
// CHECK-GENERIC:         %hi = "arith.minui"(%diag, %kv_len) : (index, index) -> index
// CHECK-GENERIC-NEXT:    %m_i, %l_i, %acc = "scf.for"(%c0, %hi, %c128, %m_init, %l_init, %acc_init) ({
// CHECK-GENERIC:           %allowed = "tile.cmpi"(%key_idx, %query_idx) <{predicate = #tile<cmpi_predicate sle>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
