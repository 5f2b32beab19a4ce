// C = relu(A + B) in bf16 (f32 math): tests/transforms/test_dot_free.py.  128x128 tiles,
// grid (⌈M/128⌉, ⌈N/128⌉): two consumer warp groups, no dot, nothing for the producer.
func.func @add_relu(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>) {
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %a = tile.load %A[%m0, %n0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %b = tile.load %B[%m0, %n0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %af = arith.extf %a : tensor<128x128xbf16> to tensor<128x128xf32>
  %bf = arith.extf %b : tensor<128x128xbf16> to tensor<128x128xf32>
  %s = arith.addf %af, %bf : tensor<128x128xf32>
  %z = tile.zeros : tensor<128x128xf32>
  %r = arith.maximumf %s, %z : tensor<128x128xf32>
  %c = arith.truncf %r : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
