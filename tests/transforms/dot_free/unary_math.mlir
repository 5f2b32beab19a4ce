// Y = sqrt(|X|) + rsqrt(|X| + 1) + log(|X| + 1) + log2(|X| + 2) in f32: the elementwise math of
// norms and losses (tests/transforms/test_dot_free.py).  64x128 tiles, grid (⌈M/64⌉, ⌈N/128⌉).
func.func @unary_math(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c64 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %x = tile.load %X[%m0, %n0] : memref<?x?xf32> -> tensor<64x128xf32>
  %a = math.absf %x : tensor<64x128xf32>
  %ones = tile.splat %one : f32 -> tensor<64x128xf32>
  %twos = tile.splat %two : f32 -> tensor<64x128xf32>
  %a1 = arith.addf %a, %ones : tensor<64x128xf32>
  %a2 = arith.addf %a, %twos : tensor<64x128xf32>
  %s = math.sqrt %a : tensor<64x128xf32>
  %r = math.rsqrt %a1 : tensor<64x128xf32>
  %l = math.log %a1 : tensor<64x128xf32>
  %l2 = math.log2 %a2 : tensor<64x128xf32>
  %y0 = arith.addf %s, %r : tensor<64x128xf32>
  %y1 = arith.addf %y0, %l : tensor<64x128xf32>
  %y = arith.addf %y1, %l2 : tensor<64x128xf32>
  tile.store %y, %Y[%m0, %n0] : tensor<64x128xf32>, memref<?x?xf32>
  func.return
}
