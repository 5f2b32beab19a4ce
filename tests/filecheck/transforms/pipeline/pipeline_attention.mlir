// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2}' | filecheck %s

// K and V, filled in the loop, get two slots; Q, filled once, keeps one.
// Neither dot is an accumulation chain fed only by arefs (Q·Kᵀ feeds the
// softmax; P·V accumulates into a rescaled value), so both stay synchronous.
// CHECK-LABEL: func.func @attention_fwd
// CHECK:         aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 1>
// CHECK-NEXT:    aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 2>
// CHECK-NEXT:    aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 2>
// CHECK-NOT:     tile.dot_async
// CHECK-LABEL: func.func @attention_fwd_causal
