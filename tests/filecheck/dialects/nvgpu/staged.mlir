// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// The ops that carry the staging decisions from tawa-stage-stores and
// tawa-stage-operands to tawa-lower-tile: a tile store through a staging
// buffer and a tensor map (here subtiled: two 128x64 buffers), one whose warp
// groups store their own 64 rows (two buffers each), and an fp8 A operand
// staged in one 64-row tile per warp group.

func.func @staged(%C: memref<?x?xbf16>, %O: memref<?x?x?x?xf32>, %c: tensor<128x256xbf16>, %o: tensor<128x64xf32>,
                  %p: tensor<128x64xf8E4M3FN>, %i: index) {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %tmap_C = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  nvgpu.staged_store %c, %C[%i, %i] via %staging, %tmap_C : tensor<128x256xbf16>, memref<?x?xbf16>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  %own = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<4x64x32xf32, swizzle = 128>
  %tmap_O = nvgpu.tma_descriptor %O : memref<?x?x?x?xf32> -> !nvgpu.tma_desc<1x1x64x32xf32, swizzle = 128>
  nvgpu.staged_store %o, %O[%i, %i, %i, %i] via %own, %tmap_O : tensor<128x64xf32>, memref<?x?x?x?xf32>, !nvgpu.smem<4x64x32xf32, swizzle = 128>, !nvgpu.tma_desc<1x1x64x32xf32, swizzle = 128>
  %operand = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>
  %p_staged = nvgpu.staged_operand %p via %operand : tensor<128x64xf8E4M3FN>, !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>
  func.return
}

// CHECK-LABEL: func.func @staged
// CHECK:      nvgpu.staged_store %c, %C[%i, %i] via %staging, %tmap_C : tensor<128x256xbf16>, memref<?x?xbf16>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// CHECK:      nvgpu.staged_store %o, %O[%i, %i, %i, %i] via %own, %tmap_O : tensor<128x64xf32>, memref<?x?x?x?xf32>, !nvgpu.smem<4x64x32xf32, swizzle = 128>, !nvgpu.tma_desc<1x1x64x32xf32, swizzle = 128>
// CHECK:      %p_staged = nvgpu.staged_operand %p via %operand : tensor<128x64xf8E4M3FN>, !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "staged"
// CHECK-GENERIC: "nvgpu.staged_store"(%c, %C, %i, %i, %staging, %tmap_C) : (tensor<128x256xbf16>, memref<?x?xbf16>, index, index, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>) -> ()
// CHECK-GENERIC: %p_staged = "nvgpu.staged_operand"(%p, %operand) : (tensor<128x64xf8E4M3FN>, !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>) -> tensor<128x64xf8E4M3FN>
