// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p tawa-warp-specialize | filecheck %s

// Q is loaded once, outside the loop: its own aref, released after the loop.
// K and V feed different dots: one aref each, so the consumer can start Q·Kᵀ
// before V has arrived.
// CHECK-LABEL: func.func @attention_fwd
// CHECK:         %[[RQ:.*]] = aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 1>
// CHECK-NEXT:    %[[RK:.*]] = aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 1>
// CHECK-NEXT:    %[[RV:.*]] = aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 1>
// CHECK-NEXT:    aref.warp_specialize partition producer warps(4) regs(40) {
// The producer computes the key/value head of grouped-query attention itself.
// CHECK:           %[[HK:.*]] = arith.divui %h, %group : index
// CHECK:           %[[Q:.*]] = tile.load %Q
// CHECK-NEXT:      aref.put %[[RQ]], %[[Q]]
// CHECK-NEXT:      scf.for %{{.*}} = %{{.*}} to %kv_len step %{{.*}} {
// CHECK-NEXT:        %[[K:.*]] = tile.load %K[%b, %[[HK]], %n0, %c0]
// CHECK-NEXT:        aref.put %[[RK]], %[[K]]
// CHECK-NEXT:        %[[V:.*]] = tile.load %V
// CHECK-NEXT:        aref.put %[[RV]], %[[V]]
// CHECK-NEXT:      }
// The producer needs none of the softmax.
// CHECK-NOT:       math.exp2
// CHECK:         } partition consumer warps(8) regs(232) {
// CHECK:           %[[GQ:.*]] = aref.get %[[RQ]]
// CHECK:           scf.for
// CHECK:             %[[GK:.*]] = aref.get %[[RK]]
// CHECK-NEXT:        %[[S:.*]] = tile.dot %[[GQ]], %[[GK]], %{{.*}} {rhs_transposed}
// CHECK-NEXT:        aref.consumed %[[RK]]
// CHECK:             math.exp2
// CHECK:             %[[GV:.*]] = aref.get %[[RV]]
// CHECK-NEXT:        tile.dot %{{.*}}, %[[GV]], %{{.*}} :
// CHECK-NEXT:        aref.consumed %[[RV]]
// CHECK-NEXT:        scf.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      aref.consumed %[[RQ]]
// CHECK:           tile.store

// The causal kernel replicates the diagonal bound into both partitions.
// CHECK-LABEL: func.func @attention_fwd_causal
// CHECK:         aref.warp_specialize partition producer
// CHECK:           %[[HI:.*]] = arith.minui
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[HI]] step
// CHECK:         } partition consumer
// CHECK:           %[[HI2:.*]] = arith.minui
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[HI2]] step
// CHECK:             tile.cmpi sle
