// tawa-overlap-dots (tawa/transforms/pipeline/overlap_dots.py, docs/passes.md): attention's P·V of
// iteration j-1 is issued in iteration j right after Q·K_jᵀ, and runs under the softmax of S_j.
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-overlap-dots{remarks=true}' 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK < %t.remarks
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false}' | filecheck %s --check-prefix=LOWERED
// RUN: tawa-opt %S/../../../../examples/attention_fwd_d64.mlir -p 'tawa-hopper-pipeline{prepare=false}' > %t.d64
// RUN: sed '0,/named_barrier_arrive 3, 256/{//d}' %t.d64 | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOHANDOVER
// RUN: tawa-opt %S/../../../../examples/attention_fwd_d64.mlir -p 'tawa-hopper-pipeline{stages=2 once-depth=2 epilogue=threads prepare=false}' > %t.q2
// RUN: awk '/named_barrier_sync 2, 256/{s=1; print; next} s==1 && /named_barrier_arrive 3, 256/{s=2; next} s==2 && /named_barrier_sync 3, 256/{s=0; next} {if(s==1)s=0; print}' %t.q2 | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOCLOSE
// RUN: tawa-opt %S/../../../../examples/attention_fwd_d256.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-overlap-dots{remarks=true max-regs=160}' 2>&1 >/dev/null | filecheck %s --check-prefix=D256
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-overlap-dots{remarks=true}' 2>&1 | filecheck %s --check-prefix=GEMM
// RUN: not tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-overlap-dots' 2>&1 | filecheck %s --check-prefix=STAGED
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-overlap-dots{early-release-bytes=16384}' | filecheck %s --check-prefix=LATE

// CHECK-LABEL: func.func @attention_fwd(
// CHECK:       partition consumer
// The loop runs at least once inside the guard; else the initial values.
// CHECK:       %ran = arith.cmpi slt, %c0_1, %kv_len : index
// CHECK-NEXT:  %m_i, %l_i, %acc = scf.if %ran -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>) {
// Prologue: iteration 0's Q·Kᵀ and softmax, with synchronous dots.
// CHECK:         %s = tile.dot %q_1, %k_1, %s_zero {rhs_transposed}
// CHECK:         %acc_scaled = arith.mulf %acc_init, %alpha_b
// CHECK:         %p_bf16 = arith.truncf %p
// CHECK-NOT:     tile.dot
// CHECK:         %second = arith.addi %c0_1, %c128_1 : index
// P (in bf16) and the rescaled accumulator are carried instead of the P·V result.
// CHECK-NEXT:    scf.for %n0_1 = %second to %kv_len step %c128_1 iter_args(%m_prev = %m_new, %l_prev = %l_new, %p_bf16_prev = %p_bf16, %acc_scaled_prev = %acc_scaled)
// S_j first, then P_{j-1}·V_{j-1}; wait 1 completes S_j and leaves the P·V in flight.
// CHECK:           %k_2 = aref.get %ref_k
// CHECK-NEXT:      %[[S:.*]] = tile.dot_async %q_1, %k_2, %{{.*}} {rhs_transposed}
// CHECK-NEXT:      %v_1 = aref.get %ref_v
// CHECK-NEXT:      %[[PV:.*]] = tile.dot_async %p_bf16_prev, %v_1, %acc_scaled_prev
// CHECK-NEXT:      %[[S1:.*]] = tile.dot_wait 1 (%[[S]])
// CHECK-NEXT:      aref.consumed %ref_k
// CHECK-NEXT:      %n0_i32_1 = arith.index_cast %n0_1
// CHECK:           tile.select %{{.*}}, %[[S1]], %ninf_t
// The softmax runs; the P·V is waited for only where the rescale needs it, and before the
// next P is converted (ptxas gives it the registers the P·V in flight reads).
// CHECK:           %[[ALPHA:alpha_b.*]] = tile.broadcast
// CHECK-NEXT:      %acc_prev = tile.dot_wait 0 (%[[PV]])
// CHECK-NEXT:      aref.consumed %ref_v
// CHECK-NEXT:      %[[X:.*]] = arith.mulf %acc_prev, %[[ALPHA]]
// CHECK-NEXT:      %[[PB:.*]] = arith.truncf
// CHECK-NEXT:      scf.yield %{{.*}}, %{{.*}}, %[[PB]], %[[X]]
// Q's slot is released as soon as the loop is done (the last P·V does not read it): the
// producer loads the next program's Q while this one finishes.  Epilogue: the last P·V.
// CHECK:         } {tawa.overlapped}
// CHECK-NEXT:    aref.consumed %ref_q
// CHECK-NEXT:    aref.get %ref_v
// CHECK-NEXT:    %[[LAST:.*]] = tile.dot %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK-NEXT:    aref.consumed %ref_v
// CHECK-NEXT:    scf.yield %{{.*}}, %{{.*}}, %[[LAST]]
// CHECK-NEXT:  } else {
// CHECK-NEXT:    aref.consumed %ref_q
// CHECK-NEXT:    scf.yield %m_init, %l_init, %acc_init
// CHECK-NEXT:  }
// CHECK-NOT:   aref.consumed %ref_q
// CHECK-LABEL: func.func @attention_fwd_causal(
// CHECK:       scf.if %ran

// Lowered (tawa-hopper-pipeline): the guard yields fragments, P is carried as a bf16
// fragment and is the P·V wgmma's register operand; two wgmma groups are in flight.
// LOWERED-LABEL: func.func @attention_fwd(
// LOWERED:       %m_i, %l_i, %acc, {{.*}} = scf.if %ran -> (!nvgpu.frag<64xf32, wgmma_row>, !nvgpu.frag<64xf32, wgmma_row>, !nvgpu.frag<64x128xf32, wgmma>,
// LOWERED:         %p_bf16 = nvgpu.frag_convert %p : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
// LOWERED:         scf.for %n0_1 = %second to %kv_len step %c128_1 iter_args(%m_prev = %m_new, %l_prev = %l_new, %p_bf16_prev = %p_bf16, %acc_scaled_prev = %acc_scaled,
// Ping-pong (tawa/transforms/lower/pingpong.py): each warp group waits for its turn (named
// barrier 2 for the first, 3 for the second), issues both groups, hands the turn over.
// LOWERED:           scf.if %first_group {
// LOWERED-NEXT:        nvgpu.named_barrier_sync 2, 256
// LOWERED-NEXT:      } else {
// LOWERED-NEXT:        nvgpu.named_barrier_sync 3, 256
// LOWERED-NEXT:      }
// LOWERED-NEXT:      nvgpu.wgmma_fence
// LOWERED-NEXT:      %[[S:.*]] = nvgpu.wgmma %{{.*}}, %{{.*}}, %unwritten_1, %overwrite_1 {rhs_transposed}
// LOWERED-NEXT:      nvgpu.wgmma_commit_group
// LOWERED:           %acc_new = nvgpu.wgmma %p_bf16_prev, %{{.*}}, %acc_scaled_prev, %{{.*}} : !nvgpu.frag<64x128xbf16, wgmma>,
// LOWERED-NEXT:      nvgpu.wgmma_commit_group
// LOWERED-NEXT:      scf.if %first_group {
// LOWERED-NEXT:        nvgpu.named_barrier_arrive 3, 256
// LOWERED-NEXT:      } else {
// LOWERED-NEXT:        nvgpu.named_barrier_arrive 2, 256
// LOWERED-NEXT:      }
// LOWERED-NEXT:      nvgpu.wgmma_wait_group 1 (%[[S]])
// LOWERED:           %acc_prev = nvgpu.wgmma_wait_group 0 (%acc_new)
// LOWERED:           nvgpu.frag_convert %p_1
// The second warp group's turn, handed over after the loop: the first consumes it and closes
// the loop with one more hand-over, which the second waits for.
// LOWERED:         scf.if %first_group {
// LOWERED-NEXT:      nvgpu.named_barrier_sync 2, 256
// LOWERED-NEXT:      nvgpu.named_barrier_arrive 3, 256
// LOWERED-NEXT:    } else {
// LOWERED-NEXT:      nvgpu.named_barrier_sync 3, 256
// LOWERED-NEXT:    }
// The loop never ran: Q's slot is released (its empty barrier's arrive) before the yield.
// LOWERED:       } else {
// LOWERED:           nvgpu.mbarrier_arrive
// LOWERED:         scf.yield %m_init, %l_init, %acc_init,

// A bound on the slots released early: Q (128x128 bf16, 32 KiB) above 16 KiB stays held until
// after the guard (tawa-hopper-pipeline's bound is 32 KiB: Q of head dim 256, 64 KiB, stays).
// LATE-LABEL: func.func @attention_fwd(
// LATE:       } {tawa.overlapped}
// LATE-NOT:   aref.consumed %ref_q
// LATE:       } else {
// LATE-NEXT:    scf.yield %m_init, %l_init, %acc_init
// LATE-NEXT:  }
// LATE-NEXT:  aref.consumed %ref_q

// Without the first warp group's hand-over the second never gets its turn.
// NOHANDOVER: error: tawa-verify-protocol: deadlock in @attention_fwd_d64 ({{.*}}): warp group 1 waits at named barrier 2 (128 of 256 threads arrived); warp group 2 waits at named barrier 3 (128 of 256 threads arrived)

// Without the closing hand-over, a program whose loop runs no iteration (one key block) lets the
// second warp group arrive at PING for the next program too (its Q double-buffered, no epilogue
// barrier between programs): one generation of its arrivals alone.
// NOCLOSE: error: tawa-verify-protocol: deadlock in @attention_fwd_d64 (kv_len = 128, 2 programs per CTA): warp group 1 waits at named barrier 2 (128 of 256 threads arrived)

// REMARK: remark: tawa-overlap-dots: a loop's last tile.dot is issued in the next iteration after its first, and runs under the rest of it (2 dots in flight) in @attention_fwd
// REMARK: remark: tawa-overlap-dots: {{.*}} in @attention_fwd_causal

// A bound on the registers the overlap keeps in flight (tawa-hopper-pipeline's is 192):
// head dim 256 keeps its 128-register accumulator, S (32), and P twice (16 each).
// D256: remark: tawa-overlap-dots: left a loop as it is: overlapped it would keep 192 registers per thread in flight, more than 160 in @attention_fwd_d256

// A GEMM main loop has one dot (tawa-pipeline keeps it in flight): nothing to overlap.
// GEMM-NOT: remark
// GEMM-NOT: %second

// STAGED: attention_fwd.mlir:17:1: error: tawa-overlap-dots: the loop's arefs already have stages and phases: run tawa-overlap-dots before tawa-assign-stage-phase
