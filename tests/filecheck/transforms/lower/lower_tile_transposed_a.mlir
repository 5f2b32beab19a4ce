// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{persistent=false prepare=false}' | filecheck %s
// A GEMM reading A stored K×M in place (`lhs_transposed`, tawa.kernels.gemm
// a_layout="km"): the producer loads BLOCK_K × BLOCK_M boxes of A as they
// are stored; each consumer warp group's A descriptor is its 64 M columns of
// the K×M tile (`{columns}` at its first row of M), read MN-major.

// CHECK-LABEL: func.func @gemm
// CHECK:         nvgpu.tma_load %tmap_A[%k, %m0], {{.*}} : !nvgpu.tma_desc<64x128xbf16, swizzle = 128>, !nvgpu.smem<4x64x128xbf16, swizzle = 128>
// CHECK:         %[[ROW0:.*]] = arith.muli %wg_index,
// CHECK:         %[[DA:.*]] = nvgpu.wgmma_descriptor %{{.*}}[%{{.*}}, %[[ROW0]]] {columns} : !nvgpu.smem<4x64x128xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK-NEXT:    %[[DB:.*]] = nvgpu.wgmma_descriptor %{{.*}} : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// CHECK:         nvgpu.wgmma %[[DA]], %[[DB]], %{{.*}} {rhs_transposed, lhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
// CHECK-NOT:     tile.
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
    %M: index, %N: index, %K: index) {
  // C = Aᵀ · Bᵀ (128x128x64-a_km): A is K×M of bf16, B is N×K of bf16,
  // C is M×N of bf16; tawa.kernels.gemm_source, launch grid (⌈M/128⌉, ⌈N/128⌉).
  %c0 = arith.constant 0 : index
  %block_k = arith.constant 64 : index
  %block_m = arith.constant 128 : index
  %block_n = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %block_m : index
  %n0 = arith.muli %pid_n, %block_n : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %block_k iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%k, %m0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %bt = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %bt, %acc_i {lhs_transposed, rhs_transposed} : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}

