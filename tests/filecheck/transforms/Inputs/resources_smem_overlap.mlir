// The mbarriers are placed inside the ring buffer.
func.func @overlap() {
  %a = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %full = nvgpu.smem_alloc offset(65528) : !nvgpu.mbarrier<4>
  func.return
}
