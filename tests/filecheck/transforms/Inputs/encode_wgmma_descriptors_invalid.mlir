// An unswizzled tile with 128-byte rows is no wgmma layout (its core
// matrices are not 8 rows of 16 contiguous bytes).
func.func @rows_too_wide(%s: index, %acc0: i1) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xbf16>
  %da = nvgpu.wgmma_descriptor %sa[%s, %s] : !nvgpu.smem<1x64x64xbf16> -> !nvgpu.wgmma_desc<64x64xbf16>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %d = nvgpu.wgmma %da, %da, %z, %acc0 {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
