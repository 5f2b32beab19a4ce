// RUN: TAWA_ROUNDTRIP

// nvgpu.wgmma and nvgpu.wgmma_mma_async over every operand type wgmma has:
// fp8 (e4m3, e5m2, mixed) with k32 steps, tf32 (f32 data) with k8 steps;
// both K-major (wgmma_dtypes_invalid.mlir: the rejected combinations).

func.func @wgmma_fp8(%a4: !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, %b5: !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) -> (!nvgpu.frag<64x64xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>) {
  %d = nvgpu.wgmma %a4, %b5, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  %e = nvgpu.wgmma_mma_async %b5, %b5, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return %d, %e : !nvgpu.frag<64x64xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
}
// CHECK-LABEL: func.func @wgmma_fp8
// CHECK:       nvgpu.wgmma %a4, %b5, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
// CHECK:       nvgpu.wgmma_mma_async %b5, %b5, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>

func.func @wgmma_tf32(%a: !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, %b: !nvgpu.wgmma_desc<128x32xf32, swizzle = 128>, %c: !nvgpu.frag<64x128xf32, wgmma>, %t: i1) -> !nvgpu.frag<64x128xf32, wgmma> {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, !nvgpu.wgmma_desc<128x32xf32, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
  func.return %d : !nvgpu.frag<64x128xf32, wgmma>
}
// CHECK-LABEL: func.func @wgmma_tf32
// CHECK:       nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, !nvgpu.wgmma_desc<128x32xf32, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
