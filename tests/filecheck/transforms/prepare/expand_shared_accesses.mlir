// RUN: tawa-opt %s --split-input-file -p tawa-expand-shared-accesses | filecheck %s

// The TMA-store epilogue's staging write, 128B swizzle: the thread's first
// element (its rows and columns from the bit fields of %tid.x that the wgmma
// layout's thread terms name) gives tb = stage base + row · 128 + col · 2; the
// swizzle term is bits 7-9 of tb moved to 4-6, the same for all of the thread's
// rows (0 and 8: a swizzle period apart), so one address per 16-byte unit
// (tb + (16·k ^ x)) and the row (1024 bytes per 8 rows) and the column chunk
// (64 columns: 8192 bytes) are immediates.
// CHECK-LABEL: func.func @store
// CHECK:      %[[BASE:.*]] = nvgpu.smem_address %staging
// CHECK-NEXT: %[[S:.*]] = arith.index_cast %stage : index to i32
// CHECK-NEXT: %[[SB:.*]] = arith.constant 16384 : i32
// CHECK-NEXT: %[[SO:.*]] = arith.muli %[[S]], %[[SB]] : i32
// CHECK-NEXT: %stage_base = arith.addi %[[BASE]], %[[SO]] : i32
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %row : index to i32
// CHECK-NEXT: %[[TID:.*]] = nvgpu.thread_id
// CHECK-NEXT: %[[T0:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK-NEXT: %[[C127:.*]] = arith.constant 127 : i32
// CHECK-NEXT: %[[T:.*]] = arith.andi %[[T0]], %[[C127]] : i32
// The warp's 16 rows, then 8 rows by lane / 4:
// CHECK-NEXT: arith.constant 5 : i32
// CHECK-NEXT: arith.shrui %[[T]]
// CHECK-NEXT: arith.constant 3 : i32
// CHECK-NEXT: arith.andi
// CHECK-NEXT: arith.constant 16 : i32
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.constant 2 : i32
// CHECK-NEXT: arith.shrui %[[T]]
// CHECK-NEXT: arith.constant 7 : i32
// CHECK-NEXT: arith.andi
// CHECK-NEXT: %[[RT:.*]] = arith.addi
// CHECK-NEXT: %thread_row = arith.addi %[[ROW]], %[[RT]] : i32
// Columns in bytes: (lane % 4) · 2 columns · 2 bytes.
// CHECK-NEXT: arith.constant 3 : i32
// CHECK-NEXT: arith.andi %[[T]]
// CHECK-NEXT: arith.constant 4 : i32
// CHECK-NEXT: %[[CB:.*]] = arith.muli
// CHECK-NEXT: %[[SPAN:.*]] = arith.constant 128 : i32
// CHECK-NEXT: %[[RB:.*]] = arith.muli %thread_row, %[[SPAN]] : i32
// CHECK-NEXT: %[[TR:.*]] = arith.addi %stage_base, %[[RB]] : i32
// CHECK-NEXT: %thread_base = arith.addi %[[TR]], %[[CB]] : i32
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[SH:.*]] = arith.shrui %thread_base, %[[C7]] : i32
// CHECK-NEXT: %[[M:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[BITS:.*]] = arith.andi %[[SH]], %[[M]] : i32
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %swizzle = arith.shli %[[BITS]], %[[C4]] : i32
// CHECK-NEXT: %unit0 = arith.addi %thread_base, %swizzle : i32
// CHECK-NEXT: %[[C16:.*]] = arith.constant 16 : i32
// CHECK-NEXT: %[[X1:.*]] = arith.xori %swizzle, %[[C16]] : i32
// CHECK-NEXT: %unit1 = arith.addi %thread_base, %[[X1]] : i32
// CHECK:      %unit7 = arith.addi %thread_base, %{{.*}} : i32
// CHECK-NEXT: nvgpu.frag_store_shared_at %v, [%unit0, %unit1, %unit2, %unit3, %unit4, %unit5, %unit6, %unit7]
// CHECK-SAME: bases [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]
// CHECK-SAME: offsets [0, 1024, 0, 1024, 0, 1024, 0, 1024, 0, 1024, 0, 1024, 0, 1024, 0, 1024, 8192, 9216, 8192, 9216, 8192, 9216, 8192, 9216, 8192, 9216, 8192, 9216, 8192, 9216, 8192, 9216]
// CHECK-SAME: : !nvgpu.frag<64x128xbf16, wgmma>
// CHECK-NOT:  nvgpu.frag_store_shared %
func.func @store(%stage: index, %row: index) {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  %v = nvgpu.frag_zeros : !nvgpu.frag<64x128xbf16, wgmma>
  nvgpu.frag_store_shared %v, %staging[%stage, %row] : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  func.return
}

// -----

// f32 (64B swizzle): a thread's 8 columns span two 16-byte units; its own unit
// bits (4-5 of tb) join the swizzle term (bits 7-8 of tb, moved to 4-5) and are
// cleared in tb; the vectors 8 columns apart are units 0 and 2 of that.
// CHECK-LABEL: func.func @f32
// CHECK:      %thread_base = arith.addi
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[SH:.*]] = arith.shrui %thread_base, %[[C7]] : i32
// CHECK-NEXT: %[[M:.*]] = arith.constant 3 : i32
// CHECK-NEXT: %[[BITS:.*]] = arith.andi %[[SH]], %[[M]] : i32
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %swizzle = arith.shli %[[BITS]], %[[C4]] : i32
// CHECK-NEXT: %[[UB:.*]] = arith.constant 48 : i32
// CHECK-NEXT: %[[OWN:.*]] = arith.andi %thread_base, %[[UB]] : i32
// CHECK-NEXT: %swizzle_1 = arith.xori %swizzle, %[[OWN]] : i32
// CHECK-NEXT: %thread_base_1 = arith.xori %thread_base, %[[OWN]] : i32
// CHECK-NEXT: %unit0 = arith.addi %thread_base_1, %swizzle_1 : i32
// CHECK-NEXT: %[[C32:.*]] = arith.constant 32 : i32
// CHECK-NEXT: %[[X2:.*]] = arith.xori %swizzle_1, %[[C32]] : i32
// CHECK-NEXT: %unit2 = arith.addi %thread_base_1, %[[X2]] : i32
// CHECK-NEXT: nvgpu.frag_store_shared_at %f, [%unit0, %unit2] bases [0, 0, 1, 1] offsets [0, 512, 0, 512] : !nvgpu.frag<64x16xf32, wgmma>
func.func @f32(%stage: index, %row: index) {
  %s32 = nvgpu.smem_alloc offset(16384) : !nvgpu.smem<1x64x16xf32, swizzle = 64>
  %f = nvgpu.frag_zeros : !nvgpu.frag<64x16xf32, wgmma>
  nvgpu.frag_store_shared %f, %s32[%stage, %row] : !nvgpu.frag<64x16xf32, wgmma>, !nvgpu.smem<1x64x16xf32, swizzle = 64>
  func.return
}

// -----

// Unswizzled: no unit plan, one address per vector (stage base + row · 32 +
// col · 2, each row and column part formed once), immediates 0.
// CHECK-LABEL: func.func @load_unswizzled
// CHECK:      %[[SPAN:.*]] = arith.constant 32 : i32
// CHECK-NEXT: %[[R0:.*]] = arith.muli %thread_row, %[[SPAN]] : i32
// CHECK-NEXT: %[[ROW0:.*]] = arith.addi %stage_base, %[[R0]] : i32
// CHECK-NEXT: %[[EB:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[COL0:.*]] = arith.muli %{{.*}}, %[[EB]] : i32
// CHECK-NEXT: %vector = arith.addi %[[ROW0]], %[[COL0]] : i32
// CHECK:      %vector_1 = arith.addi %[[ROW8:.*]], %[[COL0]] : i32
// CHECK:      %vector_2 = arith.addi %[[ROW0]], %[[COL8:.*]] : i32
// CHECK-NEXT: %vector_3 = arith.addi %[[ROW8]], %[[COL8]] : i32
// CHECK-NEXT: %a = nvgpu.frag_load_shared_at [%vector, %vector_1, %vector_2, %vector_3] bases [0, 1, 2, 3] offsets [0, 0, 0, 0] : !nvgpu.frag<64x16xf16, wgmma>
func.func @load_unswizzled(%stage: index, %row: index) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x16xf16>
  %a = nvgpu.frag_load_shared %b[%stage, %row] : !nvgpu.smem<2x64x16xf16> -> !nvgpu.frag<64x16xf16, wgmma>
  func.return
}

// -----

// 128B swizzle but 68 rows (not whole swizzle periods): one address per vector,
// each swizzled on its own (bits 7-9 XORed into 4-6).
// CHECK-LABEL: func.func @rows_not_periods
// CHECK:      %[[SPAN:.*]] = arith.constant 128 : i32
// CHECK-NEXT: %[[RB:.*]] = arith.muli %thread_row, %[[SPAN]] : i32
// CHECK-NEXT: %[[ROW0:.*]] = arith.addi %stage_base, %[[RB]] : i32
// CHECK-NEXT: %[[EB:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[CB:.*]] = arith.muli %{{.*}}, %[[EB]] : i32
// CHECK-NEXT: %[[A:.*]] = arith.addi %[[ROW0]], %[[CB]] : i32
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[SH:.*]] = arith.shrui %[[A]], %[[C7]] : i32
// CHECK-NEXT: %[[M:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[BITS:.*]] = arith.andi %[[SH]], %[[M]] : i32
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[X:.*]] = arith.shli %[[BITS]], %[[C4]] : i32
// CHECK-NEXT: %vector = arith.xori %[[A]], %[[X]] : i32
// CHECK:      nvgpu.frag_load_shared_at [%vector, %vector_1, {{.*}}, %vector_15]
// CHECK-SAME: bases [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] offsets [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
func.func @rows_not_periods(%stage: index, %row: index) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x68x64xbf16, swizzle = 128>
  %a = nvgpu.frag_load_shared %b[%stage, %row] : !nvgpu.smem<1x68x64xbf16, swizzle = 128> -> !nvgpu.frag<64x64xbf16, wgmma>
  func.return
}
