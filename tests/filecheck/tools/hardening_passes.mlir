// RUN: cd %S && tawa-opt hardening_passes.mlir -p tawa-hopper-pipeline -t ptx --verify-diagnostics --split-input-file | filecheck %s
// RUN: tawa-opt %s -p tawa-warp-specialize --verify-diagnostics --split-input-file | filecheck %s --check-prefix=WS
// RUN: tawa-opt %s -p tawa-hopper-pipeline -t ptx --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that compiled would print its PTX.
// EVERY-CASE-FAILS-NOT: .entry

// Mutants of examples/gemm.mlir that once reached internal errors (or worse,
// compiled) in the passes, each now one located line before or in the pass
// that meets it (found by tawa.tools.fuzz; docs/testing.md, "Fuzzing").

// The loop's step is defined after the loop: tawa-warp-specialize failed
// with a KeyError.  Now the verifier rejects it before any pass runs.
func.func @step_defined_after_loop(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                                   %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c64 = arith.constant 64 : index
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
// CHECK: {{^}}hardening_passes.mlir:[[# @LINE - 11]]:3: error: operand #2 (%c64) of 'scf.for' is used before it is defined{{$}}
// WS:    error: operand #2 (%c64) of 'scf.for' is used before it is defined

// -----

// A K step of 0 compiled into a kernel that never ends.
func.func @step_zero(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                     %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c0 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
// CHECK: {{^}}hardening_passes.mlir:[[# @LINE - 10]]:3: error: 'scf.for' step must be positive, got 0 (the loop would not end){{$}}
// WS:    error: 'scf.for' step must be positive, got 0 (the loop would not end)

// -----

// A tile with a zero dim reached tawa-lower-aref, whose nvgpu.smem type
// failed without a location.
func.func @zero_dim_tile(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                         %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x0xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x0xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x0xbf16>, tensor<256x0xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
// CHECK: {{^}}hardening_passes.mlir:[[# @LINE - 9]]:5: error: tile.load tile must have positive dims, got tensor<128x0xbf16>{{$}}
// WS:    error: tile.load tile must have positive dims, got tensor<128x0xbf16>

// -----

// A scalar argument of a type the kernel ABI has no parameter for: the PTX
// printer's error named the kernel but no location.
func.func @f16_scalar_argument(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                               %M: index, %N: index, %K: f16) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %c512 step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
// CHECK: {{^}}hardening_passes.mlir:[[# @LINE - 16]]:1: error: @f16_scalar_argument: arguments of type f16 are not supported{{$}}
// WS:    func.func @f16_scalar_argument
