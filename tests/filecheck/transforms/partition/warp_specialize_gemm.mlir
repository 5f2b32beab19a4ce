// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p tawa-warp-specialize | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize{producer-regs=24 consumer-regs=240}' | filecheck %s --check-prefix=REGS

// One aref carries both operands of the dot (one full barrier per stage later).
// CHECK-LABEL: func.func @gemm
// CHECK:         %[[R:.*]] = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 1>
// CHECK-NEXT:    aref.warp_specialize partition producer warps(4) regs(40) {
// The producer keeps the loads, the address math they need and the loop skeleton,
// but neither the accumulator nor the epilogue.
// CHECK-NOT:       tile.zeros
// CHECK:           %[[M0:.*]] = arith.muli
// CHECK:           scf.for %[[K:.*]] = %{{.*}} to %K step %{{.*}} {
// CHECK-NEXT:        %[[A:.*]] = tile.load %A[%[[M0]], %[[K]]] : memref<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:        %[[B:.*]] = tile.load %B[%{{.*}}, %[[K]]] : memref<?x?xbf16> -> tensor<256x64xbf16>
// CHECK-NEXT:        aref.put %[[R]], %[[A]], %[[B]] : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 1>
// CHECK-NEXT:      }
// CHECK-NOT:       tile.store
// CHECK:         } partition consumer warps(8) regs(232) {
// The consumer replicates the index math and the loop, gets instead of loading,
// and releases the slot right after the dot that reads it.
// CHECK-NOT:       tile.load
// CHECK:           %[[ZERO:.*]] = tile.zeros : tensor<128x256xf32>
// CHECK-NEXT:      %[[ACC:.*]] = scf.for %{{.*}} = %{{.*}} to %K step %{{.*}} iter_args(%[[ACC_I:.*]] = %[[ZERO]]) -> (tensor<128x256xf32>) {
// CHECK-NEXT:        %[[GA:.*]], %[[GB:.*]] = aref.get %[[R]]
// CHECK-NEXT:        %[[D:.*]] = tile.dot %[[GA]], %[[GB]], %[[ACC_I]] {rhs_transposed}
// CHECK-NEXT:        aref.consumed %[[R]]
// CHECK-NEXT:        scf.yield %[[D]]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[C:.*]] = arith.truncf %[[ACC]]
// CHECK-NEXT:      tile.store %[[C]], %C
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// REGS: aref.warp_specialize partition producer warps(4) regs(24) {
// REGS: } partition consumer warps(8) regs(240) {
