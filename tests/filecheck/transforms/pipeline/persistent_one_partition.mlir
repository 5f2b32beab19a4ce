// RUN: tawa-opt %s -p 'tawa-warp-specialize,tawa-pipeline,tawa-persistent' | filecheck %s
// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s --check-prefix=LOWERED

// A kernel without dots whose consumers load their own tiles has one
// partition and no ring: tawa-persistent leaves it one CTA per program (the
// hardware's block scheduler starts each program in the first free slot of
// the several CTAs an SM holds), so it is not marked persistent and its
// program ids stay the CTA's.
// CHECK-LABEL: func.func @scale
// CHECK-NOT:     persistent
// CHECK:         aref.warp_specialize partition consumer
// CHECK-NOT:       scf.for
// CHECK:           tile.program_id 0
// CHECK-NOT:     nvgpu.grid_dim

// LOWERED-LABEL: func.func @scale
// LOWERED-SAME:    nvgpu.kernel = #nvgpu.kernel<threads = 128
// LOWERED-NOT:     persistent
// LOWERED-SAME:    ctas_per_sm =
// LOWERED-NOT:     nvgpu.grid_dim
// LOWERED:         nvgpu.block_id 0
// LOWERED-NOT:     scf.for

func.func @scale(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>, %M: index, %N: index) {
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %two = arith.constant 2.000000e+00 : f32
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c16 : index
  %x = tile.load %X[%m0, %c256] : memref<?x?xbf16> -> tensor<16x256xbf16>
  %xf = arith.extf %x : tensor<16x256xbf16> to tensor<16x256xf32>
  %s = tile.splat %two : f32 -> tensor<16x256xf32>
  %y = arith.mulf %xf, %s : tensor<16x256xf32>
  %yb = arith.truncf %y : tensor<16x256xf32> to tensor<16x256xbf16>
  tile.store %yb, %Y[%m0, %c256] : tensor<16x256xbf16>, memref<?x?xbf16>
  func.return
}
