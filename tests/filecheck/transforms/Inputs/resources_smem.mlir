// Five 4-stage 128x64 + 256x64 bf16 rings would not fit: the buffers end at
// 245760 bytes, plus 1024 of alignment slack.
func.func @too_much_smem() {
  %a = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %b = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<4x256x64xbf16, swizzle = 128>
  %c = nvgpu.smem_alloc offset(196608) : !nvgpu.smem<3x128x64xbf16, swizzle = 128>
  func.return
}
