// An fp8 A operand computed in registers (attention's P for P·V) goes through shared memory
// (tawa/transforms/lower/operand_staging.py): a buffer per dot of one 64x128 tile per warp group,
// swizzled like a slot; the consumer converts P to e4m3, writes its rows, fences the async
// proxy, syncs its warp group (named barrier 15 - g) and reads it by descriptor. The overlapped
// loop carries P as an fp8 fragment (two values per 16-bit register). The PTX has the satfinite
// conversion and one st.shared.b16 per pair, the swizzle folded into one address per 16-byte
// column unit and immediates (every other pair is 8 bytes into its unit).
// RUN: tawa-opt %S/../../../../examples/attention_fwd_fp8.mlir -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/attention_fwd_fp8.mlir -p tawa-hopper-pipeline -t ptx | filecheck %s --check-prefix=PTX
// RUN: not tawa-opt %S/../../../../examples/attention_fwd_fp8.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=6},tawa-overlap-dots,tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-operands' 2>&1 | filecheck %s --check-prefix=SMEM

// CHECK-LABEL: func.func @attention_fwd_fp8(
// CHECK:         %operand = nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.smem<2x64x128xf8E4M3FN, swizzle = 128>
// CHECK:         scf.for {{.*}} iter_args({{.*}}%p_f8_prev = %p_f8{{.*}}) -> ({{.*}}!nvgpu.frag<64x128xf8E4M3FN, wgmma>
// CHECK:           nvgpu.frag_store_shared %p_f8_prev, %operand[%wg_index, %[[Z:.*]]] : !nvgpu.frag<64x128xf8E4M3FN, wgmma>, !nvgpu.smem<2x64x128xf8E4M3FN, swizzle = 128>
// CHECK-NEXT:      nvgpu.fence_proxy_async
// CHECK-NEXT:      scf.if %first_group{{.*}} {
// CHECK-NEXT:        nvgpu.named_barrier_sync 15, 128
// CHECK-NEXT:      } else {
// CHECK-NEXT:        nvgpu.named_barrier_sync 14, 128
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[DA:.*]] = nvgpu.wgmma_descriptor %operand[%wg_index, %[[Z]]] : !nvgpu.smem<2x64x128xf8E4M3FN, swizzle = 128> -> !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>
// CHECK:           nvgpu.wgmma %[[DA]], {{.*}} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<128x128xf8E4M3FN, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
// CHECK:           %p_f8_1 = nvgpu.frag_convert %p_1 : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xf8E4M3FN, wgmma>

// PTX-LABEL: .visible .entry attention_fwd_fp8(
// PTX:       cvt.rn.satfinite.e4m3x2.f32 %h{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}};
// PTX:       st.shared.b16 [%r[[U:[0-9]+]]], %h{{[0-9]+}};
// PTX-NEXT:  st.shared.b16 [%r[[U]]+1024], %h{{[0-9]+}};
// PTX-NEXT:  st.shared.b16 [%r[[U]]+8], %h{{[0-9]+}};
// PTX-NEXT:  st.shared.b16 [%r[[U]]+1032], %h{{[0-9]+}};
// PTX:       fence.proxy.async.shared::cta;
// PTX:       wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3

// Six stages of K and V leave no room for the two 16 KiB buffers: a one-line error.
// SMEM: error: tawa-stage-operands: the shared-memory buffers of the f8E4M3FN operands computed in registers (wgmma reads 8-bit and transposed A operands and every B operand from shared memory only) bring the kernel to 247808 bytes, more than the 232448 a block may use: use fewer stages
