// tawa-async-dots (tawa/transforms/pipeline/async_dots.py, docs/passes.md): a consumer loop's products
// are issued as soon as their operands are ready and waited for where their results are read.
// The input: attention's dK/dV kernel at head dim 64 (Inputs/attention_bwd_dkdv_d64.mlir).
// RUN: tawa-opt %S/../Inputs/attention_bwd_dkdv_d64.mlir -p 'tawa-fold-dot-addend,tawa-warp-specialize,tawa-pipeline{stages=2},tawa-async-dots{remarks=true}' 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK < %t.remarks
// RUN: tawa-opt %S/../Inputs/attention_bwd_dkdv_d64.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-async-dots{remarks=true max-regs=100}' 2>&1 >/dev/null | filecheck %s --check-prefix=BOUND
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-async-dots{remarks=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=FORWARD
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-overlap-dots,tawa-async-dots{remarks=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=ROTATED --allow-empty
// RUN: not tawa-opt %S/../Inputs/attention_bwd_dkdv_d64.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-async-dots' 2>&1 | filecheck %s --check-prefix=STAGED
// RUN: tawa-opt %S/../Inputs/attention_bwd_dkdv_d64.mlir -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s --check-prefix=LOWERED
// RUN: tawa-opt %S/../Inputs/attention_bwd_dkdv_d64.mlir -p 'tawa-hopper-pipeline{overlap=none prepare=false}' | filecheck %s --check-prefix=NONE

// Sᵀ = K·Qᵀ first (level 0, it stays), then dPᵀ = V·dOᵀ (level 0 too: it reads no product), taken
// up with dO's slot; the accumulator's start (−Delta, tawa-fold-dot-addend) goes before Sᵀ.
// CHECK:       partition consumer
// CHECK:       scf.for %m0_1
// CHECK:         %q_1 = aref.get %ref_q
// CHECK-NEXT:    %delta_neg = arith.negf %delta
// CHECK-NEXT:    %[[X:.*]] = tile.expand_dims %delta_neg, 0
// CHECK-NEXT:    %[[NEG:.*]] = tile.broadcast %[[X]]
// CHECK-NEXT:    %[[ST:.*]] = tile.dot_async %k_1, %q_1, %{{.*}} {rhs_transposed}
// CHECK-NEXT:    %do_1 = aref.get %ref_do
// CHECK-NEXT:    %[[DPT:.*]] = tile.dot_async %v_1, %do_1, %[[NEG]] {rhs_transposed}
// The causal mask is computed while both run; Sᵀ is waited for where the mask reads it, dPᵀ stays
// in flight (wgmma groups complete in order).
// CHECK:         tile.cmpi sle
// CHECK:         %[[ST1:.*]] = tile.dot_wait 1 (%[[ST]])
// CHECK-NEXT:    tile.select %{{.*}}, %[[ST1]]
// CHECK:         %pt = math.exp2
// CHECK-NEXT:    %[[P16:.*]] = arith.truncf %pt
// dV += Pᵀ·dO (level 1) is issued before dPᵀ is waited for: it runs under dS.
// CHECK-NEXT:    %[[DV:.*]] = tile.dot_async %[[P16]], %do_1, %dv_4
// CHECK-NEXT:    %[[DPT1:.*]] = tile.dot_wait 1 (%[[DPT]])
// CHECK-NEXT:    %dst = arith.mulf %pt, %[[DPT1]]
// CHECK-NEXT:    %[[DS16:.*]] = arith.truncf %dst
// CHECK-NEXT:    %[[DK:.*]] = tile.dot_async %[[DS16]], %q_1, %dk_4
// The yield reads dK and dV: one wait retires both, then the slots they read are released.
// CHECK-NEXT:    %[[DK1:.*]], %[[DV1:.*]] = tile.dot_wait 0 (%[[DK]], %[[DV]])
// CHECK-NEXT:    aref.consumed %ref_q
// CHECK-NEXT:    aref.consumed %ref_do
// CHECK-NEXT:    scf.yield %[[DK1]], %[[DV1]]
// REMARK: remark: tawa-async-dots: a loop's products are issued early and waited for late (144 registers per thread live at most) in @attention_bwd_dkdv

// Without the folded start, −Delta's vector stays live to dS: 160 registers.
// BOUND: remark: tawa-async-dots: left a loop as it is: its products issued early would keep 160 registers per thread live, more than 100 in @attention_bwd_dkdv

// The forward loop unrotated: the softmax reads S and the next product P, nothing would run under
// either.  Rotated by tawa-overlap-dots (`tawa.overlapped`), the loop is not looked at.
// FORWARD-DAG: remark: tawa-async-dots: left a loop as it is: each product's result is read right after it in @attention_fwd{{$}}
// FORWARD-DAG: remark: tawa-async-dots: left a loop as it is: each product's result is read right after it in @attention_fwd_causal
// ROTATED-NOT: remark

// STAGED: error: tawa-async-dots: the loop's arefs already have stages and phases: run tawa-async-dots before tawa-assign-stage-phase

// tawa-hopper-pipeline runs it (`overlap=auto`): four wgmma groups an iteration, waits 1, 1 and 0;
// with overlap=none every product waits at once.
// LOWERED:     nvgpu.setmaxnreg inc
// LOWERED:     scf.for %m0_1
// LOWERED:     %st_1 = nvgpu.wgmma_wait_group 1 (%st)
// LOWERED:     %dpt_1 = nvgpu.wgmma_wait_group 1 (%dpt)
// LOWERED:     nvgpu.wgmma_wait_group 0 (%dk_5, %dv_5)
// LOWERED-NOT: nvgpu.wgmma_wait_group
// LOWERED:     scf.yield
// NONE:        nvgpu.setmaxnreg inc
// NONE-NOT:    nvgpu.wgmma_wait_group 1
// NONE:        nvgpu.wgmma_wait_group 0
