// RUN: tawa-opt %s -t ptx | filecheck %s
// cf branches (emit_control.py): block arguments are copied at the branch,
// a branch to the next block falls through, and blocks nobody branches to
// get no label.

func.func @control(%n: index, %x: i32, %y: i32) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024>} {
  // CHECK:      ld.param.u64 %rd[[N:[0-9]+]], [arg0_n];
  // CHECK-NEXT: ld.param.u32 %r[[X:[0-9]+]], [arg1_x];
  // CHECK-NEXT: ld.param.u32 %r[[Y:[0-9]+]], [arg2_y];
  // CHECK:      and.b32
  // Entering the loop: copies into the header's argument registers.
  // CHECK-NEXT: mov.u64 %rd[[ZERO:[0-9]+]], 0;
  // CHECK-NEXT: mov.b64 %rd[[IV:[0-9]+]], %rd[[ZERO]];
  // CHECK-NEXT: mov.b32 %r[[A:[0-9]+]], %r[[X]];
  // CHECK-NEXT: mov.b32 %r[[B:[0-9]+]], %r[[Y]];
  // CHECK-NEXT: [[HEAD:\$bb_[0-9]+]]:
  %c0 = arith.constant 0 : index
  cf.br ^head(%c0, %x, %y : index, i32, i32)
^head(%iv: index, %a: i32, %b: i32):
  // The body is the next block: the conditional branch only leaves.
  // CHECK-NEXT: setp.lt.s64 %p[[P:[0-9]+]], %rd[[IV]], %rd[[N]];
  // CHECK-NEXT: @!%p[[P]] bra [[EXIT:\$bb_[0-9]+]];
  %p = arith.cmpi slt, %iv, %n : index
  cf.cond_br %p, ^body, ^exit
^body:
  // Swapped arguments go through a temporary (a parallel copy).
  // CHECK-NEXT: add.s64 %rd[[NEXT:[0-9]+]], %rd[[IV]], 1;
  // CHECK-NEXT: mov.b64 %rd[[IV]], %rd[[NEXT]];
  // CHECK-NEXT: mov.b32 %r[[TMP:[0-9]+]], %r[[B]];
  // CHECK-NEXT: mov.b32 %r[[B]], %r[[A]];
  // CHECK-NEXT: mov.b32 %r[[A]], %r[[TMP]];
  // CHECK-NEXT: bra [[HEAD]];
  %c1 = arith.constant 1 : index
  %next = arith.addi %iv, %c1 : index
  cf.br ^head(%next, %b, %a : index, i32, i32)
^exit:
  // Copies that belong to one edge of a conditional branch run on that edge only.
  // CHECK-NEXT: [[EXIT]]:
  // CHECK-NEXT: setp.eq.u32 %p[[Q:[0-9]+]], %r[[A]], %r[[B]];
  // CHECK-NEXT: @!%p[[Q]] bra [[EDGE:\$else_edge_[0-9]+]];
  // CHECK-NEXT: mov.b32 %r[[V:[0-9]+]], %r[[A]];
  // CHECK-NEXT: bra [[DONE:\$bb_[0-9]+]];
  // CHECK-NEXT: [[EDGE]]:
  // CHECK-NEXT: mov.b32 %r[[V]], %r[[B]];
  // CHECK-NEXT: [[DONE]]:
  // CHECK-NEXT: ret;
  %q = arith.cmpi eq, %a, %b : i32
  cf.cond_br %q, ^done(%a : i32), ^done(%b : i32)
^done(%v: i32):
  func.return
}
