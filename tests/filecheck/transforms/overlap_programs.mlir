// tawa-overlap-programs (tawa/transforms/overlap_programs.py): the persistent consumer of
// attention carries Q's slot and the first block's (m, alpha, l, P) from one program to the next;
// the next program's S0 is issued before this program's last P·V (softmax) or after it (dots).
// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2 once-depth=2},tawa-overlap-dots,tawa-persistent,tawa-overlap-programs' | filecheck %s
// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2 once-depth=2},tawa-overlap-dots,tawa-persistent,tawa-overlap-programs{tail-first=true}' | filecheck %s --check-prefix=DOTS
// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{overlap-programs=softmax prepare=false}' | filecheck %s --check-prefix=LOWERED
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent,tawa-overlap-programs' | filecheck %s --check-prefix=GEMM
// RUN: not tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{overlap-programs=softmax persistent=false}' 2>&1 | filecheck %s --check-prefix=NOTPERSISTENT
// RUN: not tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{overlap-programs=both}' 2>&1 | filecheck %s --check-prefix=BADVALUE

// The first program's prologue, under "a program exists", then the rotated loop.
// CHECK-LABEL: func.func @attention_fwd(
// CHECK:       partition consumer
// CHECK:       %has_program = arith.cmpi slt
// CHECK-NEXT:  scf.if %has_program {
// CHECK:         %q_1 = aref.get %ref_q
// CHECK:         scf.if %ran -> (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128x128xbf16>) {
// CHECK:           tile.dot %q_1
// CHECK:         scf.for %program_1 = {{.*}} iter_args(%q_2 = %q_1, %m_new_1 = {{.*}}, %alpha_1 = {{.*}}, %l_new_1 = {{.*}}, %p_bf16_1 = {{.*}}) -> (tensor<128x128xbf16>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128x128xbf16>) {
// The rescale of the first block is computed again from the carried alpha, not carried.
// CHECK:           %alpha_col = tile.expand_dims %alpha_1, 1
// CHECK:           %acc_scaled = arith.mulf %acc_init, %alpha_b
// CHECK:           scf.for %n0_1 = {{.*}} iter_args(%m_prev = %m_new_1, %l_prev = %l_new_1, %p_bf16_prev = %p_bf16_1, %acc_scaled_prev = %acc_scaled)
// CHECK:             tile.dot_async %q_2
// CHECK:           } {tawa.overlapped}
// CHECK-NEXT:      aref.consumed %ref_q
// CHECK-NEXT:      %v_2 = aref.get %ref_v
// CHECK-NEXT:      %next_program = arith.addi %program_1
// CHECK-NEXT:      %has_next = arith.cmpi slt, %next_program, %programs
// CHECK-NEXT:      scf.if %has_next
// CHECK:             %q_3 = aref.get %ref_q
// CHECK:             scf.if %ran_2
// CHECK:               %k_3 = aref.get %ref_k
// CHECK-NEXT:          %s_3 = tile.dot_async %q_3, %k_3
// CHECK-NEXT:          %acc_new_1 = tile.dot_async {{.*}}, %v_2,
// CHECK-NEXT:          %s_4 = tile.dot_wait 1 (%s_3)
// CHECK:               math.exp2
// CHECK:               tile.dot_wait 0 (%acc_new_1)
// CHECK:             } else {
// CHECK-NEXT:          tile.dot {{.*}}, %v_2,
// Without a next program: this program's last dot alone, Q's view and placeholders carried.
// CHECK:           } else {
// CHECK:             tile.dot {{.*}}, %v_2,
// CHECK-NEXT:        scf.yield {{.*}}, %q_2,
// CHECK:           aref.consumed %ref_v
// CHECK:         tile.store

// DOTS:       %has_next = arith.cmpi slt
// DOTS:       scf.if %ran_2
// DOTS-NEXT:    %acc_new_1 = tile.dot_async {{.*}}, %v_2,
// DOTS:         %k_3 = aref.get %ref_k
// DOTS-NEXT:    %s_3 = tile.dot_async %q_3, %k_3
// DOTS-NEXT:    %s_4, %{{.*}} = tile.dot_wait 0 (%s_3, %acc_new_1)

// After tawa-lower-aref the carried Q view is its stage: an index carried by the loop, from which
// the loop's dots make their descriptors (tawa-lower-tile).
// LOWERED-LABEL: func.func @attention_fwd(
// LOWERED:       scf.for %program_1 = {{.*}} iter_args(%[[Q:[a-z0-9_]+]] = %stage_{{[0-9]+}}, {{.*}}) -> (index, !nvgpu.frag<64xf32, wgmma_row>
// LOWERED:         nvgpu.wgmma_descriptor %{{.*}}[%[[Q]], %wg_row0]

// GEMM:      partition consumer
// GEMM-NOT:  has_next
// GEMM:      func.return

// NOTPERSISTENT: tawa-hopper-pipeline: error: overlap-programs=softmax needs a persistent kernel (persistent=true)
// BADVALUE: tawa-hopper-pipeline: error: overlap-programs must be one of none, softmax, dots, got 'both'
