// Tensor maps have at most 5 dimensions.
func.func @rank6(%X: memref<?x?x?x?x?x?xbf16>) {
  %t = nvgpu.tma_descriptor %X : memref<?x?x?x?x?x?xbf16> -> !nvgpu.tma_desc<1x1x1x1x64x64xbf16, swizzle = 128>
  func.return
}
