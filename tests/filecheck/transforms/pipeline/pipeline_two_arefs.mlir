// RUN: tawa-opt %s -p 'tawa-pipeline{stages=4}' | filecheck %s
// RUN: tawa-opt %s -p 'tawa-pipeline{stages=1}' | filecheck %s --check-prefix=D1

// A dot fed by two arefs, each with its own release, and the second release
// not right after the dot: the plan (an analysis over the loop) keeps the dot
// in flight and moves both releases one iteration later; the patterns place
// them, in program order, after the dot's `tile.dot_wait 1` under one guard,
// and after the loop's `tile.dot_wait 0`.

// CHECK:       %[[RA:.*]] = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 4>
// CHECK-NEXT:  %[[RB:.*]] = aref.create : !aref.ref<[tensor<256x64xbf16>], depth = 4>
// CHECK:       partition consumer
// CHECK:         %[[ACC:.*]] = scf.for %[[K:.*]] = %[[LB:.*]] to %[[UB:.*]] step
// CHECK-NEXT:      aref.get %[[RB]]
// CHECK-NEXT:      aref.get %[[RA]]
// CHECK-NEXT:      %[[D:.*]] = tile.dot_async
// CHECK-NEXT:      tile.dot_wait 1
// CHECK-NEXT:      %[[NF:.*]] = arith.cmpi ne, %[[K]], %[[LB]] : index
// CHECK-NEXT:      scf.if %[[NF]] {
// CHECK-NEXT:        aref.consumed %[[RA]]
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.if %[[NF]] {
// CHECK-NEXT:        aref.consumed %[[RB]]
// CHECK-NEXT:      }
// CHECK-NEXT:      arith.addi
// CHECK-NEXT:      scf.yield %[[D]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[DONE:.*]] = tile.dot_wait 0 (%[[ACC]])
// CHECK-NEXT:    %[[RAN:.*]] = arith.cmpi slt, %[[LB]], %[[UB]] : index
// CHECK-NEXT:    scf.if %[[RAN]] {
// CHECK-NEXT:      aref.consumed %[[RA]]
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.if %[[RAN]] {
// CHECK-NEXT:      aref.consumed %[[RB]]
// CHECK-NEXT:    }
// CHECK-NEXT:    arith.truncf %[[DONE]]

// With one slot the arefs keep depth 1 and the dot stays synchronous.
// D1:      aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 1>
// D1-NOT:  tile.dot_async
// D1:      tile.dot %{{.*}}, %{{.*}}, %{{.*}} {rhs_transposed}
// D1-NEXT: aref.consumed
// D1-NOT:  scf.if

builtin.module {
  func.func @gemm2(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %K: index) {
    %ra = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 1>
    %rb = aref.create : !aref.ref<[tensor<256x64xbf16>], depth = 1>
    aref.warp_specialize partition producer warps(4) regs(40) {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      scf.for %k = %c0 to %K step %c64 {
        %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
        aref.put %ra, %a : !aref.ref<[tensor<128x64xbf16>], depth = 1>
        %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
        aref.put %rb, %b : !aref.ref<[tensor<256x64xbf16>], depth = 1>
      }
    } partition consumer warps(8) regs(232) {
      %c0_1 = arith.constant 0 : index
      %c64_1 = arith.constant 64 : index
      %zero = tile.zeros : tensor<128x256xf32>
      %acc = scf.for %k_1 = %c0_1 to %K step %c64_1 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
        %b_1 = aref.get %rb : !aref.ref<[tensor<256x64xbf16>], depth = 1>
        %a_1 = aref.get %ra : !aref.ref<[tensor<128x64xbf16>], depth = 1>
        %d = tile.dot %a_1, %b_1, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
        aref.consumed %ra : !aref.ref<[tensor<128x64xbf16>], depth = 1>
        %x = arith.addi %k_1, %c64_1 : index
        aref.consumed %rb : !aref.ref<[tensor<256x64xbf16>], depth = 1>
        scf.yield %d : tensor<128x256xf32>
      }
      %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
      tile.store %c, %C[%c0_1, %c0_1] : tensor<128x256xbf16>, memref<?x?xbf16>
    }
    func.return
  }
}
