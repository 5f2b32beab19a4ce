// 8-bit operands cannot be transposed: B must be K-major (the op verifier).
func.func @f8_mn_major(%da: !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, %db: !nvgpu.wgmma_desc<128x128xf8E4M3FN, swizzle = 128>, %acc: !nvgpu.frag<64x128xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %da, %db, %acc, %t : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<128x128xf8E4M3FN, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
