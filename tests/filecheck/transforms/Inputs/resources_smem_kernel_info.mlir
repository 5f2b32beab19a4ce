// The kernel asks for the buffers but forgot the alignment slack.
func.func @short() attributes {nvgpu.kernel = #nvgpu.kernel<smem = 65568>} {
  %a = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %full = nvgpu.smem_alloc offset(65536) : !nvgpu.mbarrier<4>
  func.return
}
