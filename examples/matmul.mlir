// C = A · B in bf16 with f32 accumulation: A is M×K, B is K×N, C is M×N, all
// row-major (B is "MN-major": wgmma reads it transposed from 128-byte column
// chunks).  One program computes one 128×256 tile of C, stepping through K in
// 64-wide slices.  Launch grid: (⌈M/128⌉, ⌈N/256⌉).  Loads outside A or B
// read 0; stores outside C are dropped.
func.func @matmul(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                  %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%k, %n0] : memref<?x?xbf16> -> tensor<64x256xbf16>
    %d = tile.dot %a, %b, %acc_i : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
