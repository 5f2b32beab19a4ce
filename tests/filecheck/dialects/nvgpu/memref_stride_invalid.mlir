// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The innermost dimension has no stride parameter: rows are contiguous.
func.func @innermost(%C: memref<?x?xbf16>) {
  %s = nvgpu.memref_stride %C, 1 : memref<?x?xbf16>
  func.return
}
// CHECK: error: nvgpu.memref_stride: dimension 1 of memref<?x?xbf16> has no stride parameter (dimensions 0 to 0; the innermost one's stride is 1)

// -----

func.func @vector(%C: memref<?xf32>) {
  %s = nvgpu.memref_stride %C, 0 : memref<?xf32>
  func.return
}
// CHECK: error: nvgpu.memref_stride: dimension 0 of memref<?xf32> has no stride parameter (none but the innermost, whose stride is 1)
