// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s

// A dot computed on some paths only: the scf.if yields the accumulator as a fragment from
// both branches (RetypeIfResults); the dot is synchronous inside its branch, so no wgmma
// group is in flight across the branches.  (Its slots are borrowed and released on both
// paths: the CPU simulator runs it like the tile program for either flag.)
func.func @dot_in_if(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %K: index, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = scf.if %flag -> (tensor<128x128xf32>) {
      %e = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      scf.yield %e : tensor<128x128xf32>
    } else {
      scf.yield %acc_i : tensor<128x128xf32>
    }
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
// CHECK:      %d = scf.if %flag -> (!nvgpu.frag<64x128xf32, wgmma>) {
// CHECK:        %[[D:.*]] = nvgpu.wgmma %{{.*}}, %{{.*}}, %acc_i, %{{.*}} {rhs_transposed}
// CHECK-NEXT:   nvgpu.wgmma_commit_group
// CHECK-NEXT:   %e = nvgpu.wgmma_wait_group 0 (%[[D]])
// CHECK-NEXT:   scf.yield %e : !nvgpu.frag<64x128xf32, wgmma>
// CHECK-NEXT: } else {
// CHECK-NEXT:   scf.yield %acc_i : !nvgpu.frag<64x128xf32, wgmma>
// CHECK-NEXT: }
