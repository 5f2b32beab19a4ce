func.func @bounded(%i: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, waits = [["bounded.mlir:1:1", "consumer", "mbarrier<2> at shared offset 0"]]>} {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  nvgpu.mbarrier_wait_parity %b[%i], %i watchdog(5, 750000000 ns) : !nvgpu.mbarrier<2>
  func.return
}
