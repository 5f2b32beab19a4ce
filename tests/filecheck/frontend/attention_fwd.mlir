// The tile IR of examples/python/attention_fwd.py: three loop-carried values
// (the names assigned in the loop body and defined before it, in order of
// definition), NumPy broadcasting as expand_dims + broadcast, an index scalar
// meeting an i32 tile through index_cast + splat, and the `if` on the causal flag decided
// while the kernel is built.
// RUN: python -m tawa.frontend %S/../../../examples/python/attention_fwd.py --no-locations | filecheck %s
// RUN: python -m tawa.frontend %S/../../../examples/python/attention_fwd.py -D CAUSAL=True | filecheck %s --check-prefix=CAUSAL

// CHECK:      func.func @attention_fwd(%Q: memref<?x?x?x?xbf16>, %K: memref<?x?x?x?xbf16>, %V: memref<?x?x?x?xbf16>, %O: memref<?x?x?x?xbf16>, %q_len: index, %kv_len: index, %sm_scale: f32, %group: index) {
// CHECK:        %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:        %hk = arith.divui %h, %group : index
// CHECK:        %qk_scale = arith.mulf %sm_scale, %{{.*}} : f32
// CHECK:        %m_i = tile.splat %[[NINF]] : f32 -> tensor<128xf32>
// CHECK-NEXT:   %l_i = tile.zeros : tensor<128xf32>
// CHECK-NEXT:   %acc = tile.zeros : tensor<128x128xf32>
// CHECK-NEXT:   %{{.*}}, %{{.*}}, %{{.*}} = scf.for %n0 = %c0 to %kv_len step %c128 iter_args(%[[M:.*]] = %m_i, %[[L:.*]] = %l_i, %[[ACC:.*]] = %acc) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) {
// CHECK:          %[[N0:.*]] = arith.index_cast %n0 : index to i32
// CHECK-NEXT:     %[[COLS:.*]] = tile.splat %[[N0]] : i32 -> tensor<128xi32>
// CHECK:          %key = tile.expand_dims %{{.*}}, 0 : tensor<128xi32> -> tensor<1x128xi32>
// CHECK:          %valid = tile.cmpi slt, %key, %{{.*}} : tensor<1x128xi32>
// CHECK-NOT:      tile.cmpi sle
// CHECK:          %[[MASK:.*]] = tile.broadcast %valid : tensor<1x128xi1> -> tensor<128x128xi1>
// CHECK-NEXT:     %{{.*}} = tile.select %[[MASK]], %s, %{{.*}} : tensor<128x128xi1>, tensor<128x128xf32>
// CHECK:          tile.reduce max
// CHECK:          tile.reduce sum
// CHECK:          scf.yield %m_new, %{{.*}}, %{{.*}} : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>

// CAUSAL:      %[[DIAG:.*]] = arith.addi %m0_key, %c128 : index
// CAUSAL-NEXT: %[[HI:.*]] = arith.minui %[[DIAG]], %kv_len : index
// CAUSAL-NEXT: scf.for %n0 = %c0 to %[[HI]] step %c128
// CAUSAL:      tile.cmpi sle, %{{.*}}, %{{.*}} : tensor<128x128xi32>
// CAUSAL:      %valid{{.*}} = arith.andi
