// Two live 64x256xf32 accumulators in one consumer warp group: 256 registers
// of fragments alone, more than setmaxnreg's 232 (ptxas would spill).
func.func @two_accumulators() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 256, smem = 41984, regs = [40, 232]>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  %a = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %b = nvgpu.smem_alloc offset(8192) : !nvgpu.smem<1x256x64xbf16, swizzle = 128>
  %wg = nvgpu.warp_group_id
  %is_producer = arith.cmpi ult, %wg, %c1 : index
  scf.if %is_producer {
    nvgpu.setmaxnreg dec 40
  } else {
    nvgpu.setmaxnreg inc 232
    %da = nvgpu.wgmma_descriptor %a[%c0, %c0] : !nvgpu.smem<1x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
    %db = nvgpu.wgmma_descriptor %b[%c0, %c0] : !nvgpu.smem<1x256x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>
    %zero = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>
    nvgpu.wgmma_fence
    %x = nvgpu.wgmma %da, %db, %zero, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>
    %y = nvgpu.wgmma %da, %db, %zero, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>
    nvgpu.wgmma_commit_group
    %x1, %y1 = nvgpu.wgmma_wait_group 0 (%x, %y) : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x256xf32, wgmma>
    %sum = nvgpu.frag_binary addf %x1, %y1 : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x256xf32, wgmma>
  }
  func.return
}
