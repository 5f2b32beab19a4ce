// RUN: tawa-opt %s -p tawa-pingpong | filecheck %s

// tawa-pingpong on its own (lowered IR): in a loop tawa-overlap-dots rotated,
// whose body issues two wgmma groups before its first wait, the two warp
// groups of the consumer take turns issuing (named barriers 2 and 3, 256
// threads each).  Which warp group a thread is in, it reads from the
// partition's %wg_index (what tawa-lower-tile computes at its top).
func.func @turns(%n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %wg = nvgpu.warp_group_id
    %c1 = arith.constant 1 : index
    %wg_index = arith.subi %wg, %c1 : index
    %c0 = arith.constant 0 : index
    scf.for %i = %c0 to %n step %c1 {
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_wait_group 1
      nvgpu.fence_proxy_async
      nvgpu.wgmma_wait_group 0
    } {tawa.overlapped}
  }
  func.return
}
// CHECK-LABEL: func.func @turns
// CHECK:         %wg_index = arith.subi %wg, %c1 : index
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %first_group = arith.cmpi eq, %wg_index, %[[ZERO]] : index
// Warp group 1 hands warp group 0 its first turn.
// CHECK-NEXT:    scf.if %first_group {
// CHECK-NEXT:    } else {
// CHECK-NEXT:      nvgpu.named_barrier_arrive 2, 256
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for
// Each waits for its turn before its first wgmma_fence ...
// CHECK-NEXT:      scf.if %first_group {
// CHECK-NEXT:        nvgpu.named_barrier_sync 2, 256
// CHECK-NEXT:      } else {
// CHECK-NEXT:        nvgpu.named_barrier_sync 3, 256
// CHECK-NEXT:      }
// CHECK-NEXT:      nvgpu.wgmma_fence
// CHECK-NEXT:      nvgpu.wgmma_commit_group
// CHECK-NEXT:      nvgpu.wgmma_fence
// CHECK-NEXT:      nvgpu.wgmma_commit_group
// ... and hands the turn over after its second commit.
// CHECK-NEXT:      scf.if %first_group {
// CHECK-NEXT:        nvgpu.named_barrier_arrive 3, 256
// CHECK-NEXT:      } else {
// CHECK-NEXT:        nvgpu.named_barrier_arrive 2, 256
// CHECK-NEXT:      }
// CHECK-NEXT:      nvgpu.wgmma_wait_group 1
// CHECK:         } {tawa.overlapped}
// The closing turns.
// CHECK-NEXT:    scf.if %first_group {
// CHECK-NEXT:      nvgpu.named_barrier_sync 2, 256
// CHECK-NEXT:      nvgpu.named_barrier_arrive 3, 256
// CHECK-NEXT:    } else {
// CHECK-NEXT:      nvgpu.named_barrier_sync 3, 256
// CHECK-NEXT:    }

// A partition without the index (hand-written IR) gets one at its top: its
// first warp group is warp group 1 of the CTA.
func.func @no_index(%n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_wait_group 0
    } {tawa.overlapped}
  }
  func.return
}
// CHECK-LABEL: func.func @no_index
// CHECK:         partition consumer warps(8) regs(232) {
// CHECK-NEXT:      %[[WG:.*]] = nvgpu.warp_group_id
// CHECK-NEXT:      %[[FIRST:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %wg_index = arith.subi %[[WG]], %[[FIRST]] : index
// CHECK:           %first_group = arith.cmpi eq, %wg_index, %{{.*}} : index
// CHECK:           nvgpu.named_barrier_arrive 2, 256

// Nothing to order: a loop that is not rotated, one that issues one group
// before its wait, and a partition of one warp group.
func.func @unchanged(%n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_wait_group 0
    }
    scf.for %i = %c0 to %n step %c1 {
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_wait_group 0
    } {tawa.overlapped}
  }
  func.return
}

func.func @one_group(%n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(4) regs(232) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_fence
      nvgpu.wgmma_commit_group
      nvgpu.wgmma_wait_group 0
    } {tawa.overlapped}
  }
  func.return
}
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT:     nvgpu.named_barrier
// CHECK-NOT:     nvgpu.warp_group_id
// CHECK-LABEL: func.func @one_group
// CHECK-NOT:     nvgpu.named_barrier
// CHECK-NOT:     nvgpu.warp_group_id
// CHECK:         func.return
