// RUN: tawa-opt %s -t ptx | filecheck %s
// Each op of emit_arith.py and the instruction it prints.

func.func @arith(%n: index, %x: i32, %y: f32) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024>} {
  // CHECK:      ld.param.u64 %rd[[N:[0-9]+]], [arg0_n];
  // CHECK-NEXT: ld.param.u32 %r[[X:[0-9]+]], [arg1_x];
  // CHECK-NEXT: ld.param.f32 %f[[Y:[0-9]+]], [arg2_y];
  // CHECK:      and.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, -1024;
  // An integer constant that every user takes as an immediate gets no register.
  // CHECK-NEXT: add.s64 %rd{{[0-9]+}}, %rd[[N]], 8;
  %c8 = arith.constant 8 : index
  %a = arith.addi %n, %c8 : index
  // CHECK-NEXT: sub.s64 %rd{{[0-9]+}}, %rd[[N]], 8;
  %b = arith.subi %n, %c8 : index
  // CHECK-NEXT: mul.lo.s32 %r{{[0-9]+}}, %r[[X]], %r[[X]];
  %m = arith.muli %x, %x : i32
  // CHECK-NEXT: shr.u64 %rd{{[0-9]+}}, %rd[[N]], 8;
  %s = arith.shrui %n, %c8 : index
  // CHECK-NEXT: shl.b64 %rd{{[0-9]+}}, %rd[[N]], 8;
  %l = arith.shli %n, %c8 : index
  // CHECK-NEXT: and.b64 %rd{{[0-9]+}}, %rd[[N]], 8;
  %an = arith.andi %n, %c8 : index
  // Division stays division (tawa-strength-reduce turns powers of two into shifts).
  // CHECK-NEXT: div.u64 %rd{{[0-9]+}}, %rd[[N]], 8;
  %d = arith.divui %n, %c8 : index
  // CHECK-NEXT: rem.u64 %rd{{[0-9]+}}, %rd[[N]], 8;
  %r = arith.remui %n, %c8 : index
  // CHECK-NEXT: max.s32 %r{{[0-9]+}}, %r[[X]], %r[[X]];
  %mx = arith.maxsi %x, %x : i32
  // CHECK-NEXT: add.f32 %f{{[0-9]+}}, %f[[Y]], %f[[Y]];
  %fa = arith.addf %y, %y : f32
  // CHECK-NEXT: max.NaN.f32 %f{{[0-9]+}}, %f[[Y]], %f[[Y]];
  %fm = arith.maximumf %y, %y : f32
  // A float constant is a hex immediate moved into a register.
  // CHECK-NEXT: mov.f32 %f{{[0-9]+}}, 0f3F800000;
  %one = arith.constant 1.0 : f32
  // Unsigned and signed comparisons.
  // CHECK-NEXT: setp.lo.u64 %p[[P:[0-9]+]], %rd[[N]], %rd{{[0-9]+}};
  %p = arith.cmpi ult, %n, %a : index
  // CHECK-NEXT: setp.lt.s32 %p{{[0-9]+}}, %r[[X]], %r[[X]];
  %q = arith.cmpi slt, %x, %x : i32
  // CHECK-NEXT: and.pred %p{{[0-9]+}}, %p[[P]], %p{{[0-9]+}};
  %pq = arith.andi %p, %q : i1
  // CHECK-NEXT: selp.b64 %rd{{[0-9]+}}, %rd[[N]], %rd{{[0-9]+}}, %p[[P]];
  %sel = arith.select %p, %n, %a : index
  // CHECK-NEXT: cvt.s64.s32 %rd{{[0-9]+}}, %r[[X]];
  %i = arith.index_cast %x : i32 to index
  // CHECK-NEXT: cvt.u32.u64 %r{{[0-9]+}}, %rd[[N]];
  %j = arith.index_cast %n : index to i32
  // An i1 constant is a predicate set from a register.
  // CHECK-NEXT: mov.u32 %r[[T:[0-9]+]], 1;
  // CHECK-NEXT: setp.ne.u32 %p{{[0-9]+}}, %r[[T]], 0;
  %true = arith.constant true
  // A constant that a register operand needs keeps its move.
  // CHECK-NEXT: mov.u64 %rd[[C:[0-9]+]], 300;
  // CHECK-NEXT: setp.eq.u64 %p{{[0-9]+}}, %rd[[N]], %rd[[C]];
  %c300 = arith.constant 300 : index
  %e = arith.cmpi eq, %n, %c300 : index
  // CHECK-NEXT: ret;
  func.return
}
