// RUN: tawa-opt %s -p 'tawa-bound-waits{timeout_ms=500}' | filecheck %s
// RUN: tawa-opt %s -p 'tawa-bound-waits{timeout_ms=500},tawa-bound-waits' | filecheck %s --check-prefix=TWICE
// RUN: tawa-opt %s -p 'tawa-bound-waits' --print-op-generic | tawa-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: not tawa-opt %s -p 'tawa-bound-waits{timeout_ms=0}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 watchdog-ms=500 prepare=false}' | filecheck %s --check-prefix=GEMM
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false}' | filecheck %s --check-prefix=OFF

// tawa-bound-waits gives every mbarrier wait a wait id and the timeout, and
// records the wait table (location, role, barrier array) on the kernel.  Outside
// an aref.warp_specialize partition the role is unknown ("").

// CHECK:      func.func @waits() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, waits = [
// CHECK-SAME:   ["{{.*}}bound_waits.mlir:[[L1:[0-9]+]]:3", "", "mbarrier<2> at shared offset 0"],
// CHECK-SAME:   ["{{.*}}bound_waits.mlir:[[L2:[0-9]+]]:3", "", "%named (mbarrier<4> at shared offset 64)"]]>} {
// CHECK:        nvgpu.mbarrier_wait_parity %0[%i], %i watchdog(0, 500000000 ns) : !nvgpu.mbarrier<2>
// CHECK:        nvgpu.mbarrier_wait_parity %named[%i], %i watchdog(1, 500000000 ns) : !nvgpu.mbarrier<4>
// The non-blocking try_wait is not a wait that can hang: left alone.
// CHECK:        nvgpu.mbarrier_try_wait_parity %0[%i], %i : !nvgpu.mbarrier<2>

// Running it again keeps the ids and the table.
// TWICE:      waits = [["{{.*}}", "", "mbarrier<2> at shared offset 0"], ["{{.*}}", "", "%named (mbarrier<4> at shared offset 64)"]]>
// TWICE:      watchdog(0, 500000000 ns)
// TWICE:      watchdog(1, 500000000 ns)

// ROUNDTRIP:  nvgpu.mbarrier_wait_parity %{{.*}}[%{{.*}}], %{{.*}} watchdog(0, 2000000000 ns) : !nvgpu.mbarrier<2>

// BAD: error: tawa-bound-waits: timeout_ms must be positive, got 0

func.func @waits() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024>} {
  %0 = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  %named = nvgpu.smem_alloc offset(64) : !nvgpu.mbarrier<4>
  %i = arith.constant 1 : index
  nvgpu.mbarrier_wait_parity %0[%i], %i : !nvgpu.mbarrier<2>
  nvgpu.mbarrier_wait_parity %named[%i], %i : !nvgpu.mbarrier<4>
  %ok = nvgpu.mbarrier_try_wait_parity %0[%i], %i : !nvgpu.mbarrier<2>
  func.return
}

// In tawa-hopper-pipeline{watchdog-ms=...} the pass runs right after
// tawa-lower-aref, where each wait is still in its partition: the producer
// waits on the empty barriers (offset 98320), the consumers on the full ones;
// each wait is named by the source line of the op it was made of (the
// producer's at the last load of its group, the consumers' at the dot).
// GEMM:       func.func @gemm(
// GEMM-SAME:    waits = [["{{.*}}gemm.mlir:20:5", "producer", "mbarrier<2> at shared offset 98320"], ["{{.*}}gemm.mlir:21:5", "consumer", "mbarrier<2> at shared offset 98304"]]>
// GEMM:       %[[EMPTY:[0-9]+]] = nvgpu.smem_alloc offset(98320) : !nvgpu.mbarrier<2>
// GEMM:       nvgpu.mbarrier_wait_parity %[[EMPTY]][%stage], %{{[0-9]+}} watchdog(0, 500000000 ns)
// GEMM:       nvgpu.mbarrier_wait_parity %{{[0-9]+}}[%stage_1], %phase_1 watchdog(1, 500000000 ns)

// Off by default: no wait table, plain waits.
// OFF-NOT:    waits =
// OFF-NOT:    watchdog(
