// Rows of 100 bf16 are 200 bytes apart: not a multiple of 16.
func.func @pitch(%X: memref<?x100xbf16>) {
  %t = nvgpu.tma_descriptor %X : memref<?x100xbf16> -> !nvgpu.tma_desc<64x32xbf16, swizzle = 64>
  func.return
}
