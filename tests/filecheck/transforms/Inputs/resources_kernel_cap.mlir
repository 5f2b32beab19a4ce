// No setmaxnreg: 1024 threads per CTA may start with 64 registers each, and a
// 64x256xf32 accumulator alone takes 128.
func.func @wide() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 1024>} {
  %zero = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>
  %twice = nvgpu.frag_binary addf %zero, %zero : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x256xf32, wgmma>
  func.return
}
