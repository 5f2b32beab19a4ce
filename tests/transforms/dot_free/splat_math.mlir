// Math on splats alone (tl.full(...) * s + 0.5, tl.full(...) / 4.0): folded to scalar math and a
// splat, which the math on the loaded tile then takes as its scalar operand.
func.func @splat_math(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %M: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %one_f = arith.constant 1.000000e+00 : f32
  %half_f = arith.constant 5.000000e-01 : f32
  %four_f = arith.constant 4.000000e+00 : f32
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c16 : index
  %x = tile.load %X[%m0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %one = tile.splat %one_f : f32 -> tensor<16x64xf32>
  %sv = tile.splat %s : f32 -> tensor<16x64xf32>
  %half = tile.splat %half_f : f32 -> tensor<16x64xf32>
  %four = tile.splat %four_f : f32 -> tensor<16x64xf32>
  %a = arith.mulf %one, %sv : tensor<16x64xf32>
  %scale = arith.addf %a, %half : tensor<16x64xf32>
  %q = arith.divf %one, %four : tensor<16x64xf32>
  %nq = arith.negf %q : tensor<16x64xf32>
  %y0 = arith.mulf %x, %scale : tensor<16x64xf32>
  %y = arith.addf %y0, %nq : tensor<16x64xf32>
  tile.store %y, %Y[%m0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}
