// RUN: tawa-opt %s -p tawa-occupancy | filecheck %s
// RUN: tawa-opt %s -p tawa-occupancy,tawa-prepare-ptx -t ptx | filecheck %s --check-prefix=PTX

// tawa-occupancy (tawa/transforms/lower/occupancy.py): a kernel of one role
// (no setmaxnreg) takes as many CTAs per SM as its estimated register demand
// allows, and starts with the most registers that keep that many resident.
// A 16x1024 f32 tile (128 registers a thread, ~154 with addresses and
// indices, 176 with the headroom): 2 CTAs of 128 threads, 248 registers each.
// CHECK-LABEL: func.func @wide
// CHECK-SAME:    #nvgpu.kernel<threads = 128, smem = 1024, regs = [248], maxnreg = 248, ctas_per_sm = 2>
// PTX-LABEL: .entry wide(
// PTX:         .reqntid 128, 1, 1
// PTX-NEXT:    .maxnreg 248
// PTX-NEXT:    .minnctapersm 2
func.func @wide(%Y: memref<?x?xf32>, %a: index, %p: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, regs = [248]>} {
  %z = nvgpu.frag_zeros : !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,128)(1,128)(1,4), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  nvgpu.frag_store_global %z, %a, %p : !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,128)(1,128)(1,4), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  func.return
}

// A 16x256 tile (32 registers, ~58 in all, 80 with the headroom): 6 CTAs,
// each starting with the 80 registers (65536 / 6 / 128 = 85, rounded down
// to the granule of 8).
// CHECK-LABEL: func.func @narrow
// CHECK-SAME:    #nvgpu.kernel<threads = 128, smem = 1024, regs = [80], maxnreg = 80, ctas_per_sm = 6>
// PTX-LABEL: .entry narrow(
// PTX:         .maxnreg 80
// PTX-NEXT:    .minnctapersm 6
func.func @narrow(%Y: memref<?x?xf32>, %a: index, %p: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, regs = [248]>} {
  %z = nvgpu.frag_zeros : !nvgpu.frag<16x256xf32, #nvgpu.tiled_layout<(4,128)(1,128)(1,4), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  nvgpu.frag_store_global %z, %a, %p : !nvgpu.frag<16x256xf32, #nvgpu.tiled_layout<(4,128)(1,128)(1,4), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  func.return
}

// The same tile through `sqrt.rn` (a subroutine call per element, around
// which ptxas saves registers the estimate does not count): the most
// registers 128 threads may start with, and the CTAs that fit with them.
// CHECK-LABEL: func.func @calls
// CHECK-SAME:    #nvgpu.kernel<threads = 128, smem = 1024, regs = [248], maxnreg = 248, ctas_per_sm = 2>
func.func @calls(%Y: memref<?x?xf32>, %a: index, %p: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, regs = [248]>} {
  %z = nvgpu.frag_zeros : !nvgpu.frag<16x256xf32, #nvgpu.tiled_layout<(4,128)(1,128)(1,4), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  %s = nvgpu.frag_unary sqrt %z : !nvgpu.frag<16x256xf32, #nvgpu.tiled_layout<(4,128)(1,128)(1,4), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  nvgpu.frag_store_global %s, %a, %p : !nvgpu.frag<16x256xf32, #nvgpu.tiled_layout<(4,128)(1,128)(1,4), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  func.return
}

// A warp-specialized kernel (setmaxnreg moves registers between its roles)
// keeps one CTA per SM at the register file shared out over its threads:
// nothing is recorded, and the entry says .maxnreg 168 (384 threads).
// CHECK-LABEL: func.func @specialized
// CHECK-SAME:    #nvgpu.kernel<threads = 384, smem = 1024, regs = [40, 232, 232]>
// PTX-LABEL: .entry specialized(
// PTX:         .reqntid 384, 1, 1
// PTX-NEXT:    .maxnreg 168
// PTX-NEXT:    {
func.func @specialized() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 1024, regs = [40, 232, 232]>} {
  %wg = nvgpu.warp_group_id
  %c1 = arith.constant 1 : index
  %p = arith.cmpi ult, %wg, %c1 : index
  scf.if %p {
    nvgpu.setmaxnreg dec 40
  } else {
    nvgpu.setmaxnreg inc 232
  }
  func.return
}
