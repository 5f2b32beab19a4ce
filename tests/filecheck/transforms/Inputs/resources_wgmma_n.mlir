// wgmma N is a multiple of 8 in [8, 256] (the op verifier).
func.func @wide_n(%da: !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, %db: !nvgpu.wgmma_desc<264x64xbf16, swizzle = 128>, %acc: !nvgpu.frag<64x264xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %da, %db, %acc, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<264x64xbf16, swizzle = 128>, !nvgpu.frag<64x264xf32, wgmma>
  func.return
}
