// The protocol proof at the aref level (docs/protocol.md section 6): the GEMM
// of Inputs/aref_gemm.mlir as tawa-pipeline makes it is proved, and each of
// its four broken consumers is a located error, at the op that breaks the
// protocol, with the partition's events as MLIR-style notes.  The same
// check runs in tawa-assign-stage-phase, on the slots it assigns.
//
// RUN: tawa-opt %S/Inputs/aref_gemm.mlir --split-input-file -p tawa-verify-protocol --verify-diagnostics | filecheck %s
// RUN: tawa-opt %S/Inputs/aref_gemm.mlir --split-input-file -p tawa-assign-stage-phase --verify-diagnostics | filecheck %s --check-prefix=STAGED
// RUN: not tawa-opt %S/Inputs/aref_gemm.mlir --split-input-file -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=EXIT
// RUN: tawa-opt %S/Inputs/aref_gemm.mlir --split-input-file -p 'tawa-assign-stage-phase{verify=false}' | filecheck %s --check-prefix=UNCHECKED

// (0) proved: the IR comes back unchanged.
// CHECK:      func.func @gemm(
// CHECK:        tile.dot_wait 1
// CHECK-NEXT:   %not_first = arith.cmpi ne, %k{{.*}}

// (1) The release of slot k-1 before the tile.dot_wait that retires its reader.
// CHECK:      aref_gemm.mlir:64:9: error: tawa-verify-protocol: slot released while a tile.dot_async may still read it in @release_before_wait (K = 128): the consumer partition releases slot 0 of %r while the tile.dot_async that reads it may still run (no tile.dot_wait has retired it)
// CHECK-NEXT: aref_gemm.mlir:45:1: note: the events of the consumer partition that break it (6):
// CHECK-NEXT: aref_gemm.mlir:60:7: note: {{ +}}1. consumer aref.get waits for slot 0 of %r to be full (parity 0)
// CHECK-NEXT: aref_gemm.mlir:61:7: note: {{ +}}2. consumer tile.dot_async reads slot 0 of %r (in flight)
// CHECK-NEXT: aref_gemm.mlir:66:7: note: {{ +}}3. consumer tile.dot_wait 1
// CHECK-NEXT: aref_gemm.mlir:60:7: note: {{ +}}4. consumer aref.get waits for slot 1 of %r to be full (parity 0)
// CHECK-NEXT: aref_gemm.mlir:61:7: note: {{ +}}5. consumer tile.dot_async reads slot 1 of %r (in flight)
// CHECK-NEXT: aref_gemm.mlir:64:9: note: {{ +}}6. consumer aref.consumed releases slot 0 of %r

// (2) The last slot never released, located at the get that took it.
// CHECK:      aref_gemm.mlir:97:7: error: tawa-verify-protocol: partition ends holding a slot in @no_last_release (K = 64): the consumer partition acquires slot 0 of %r (aref.get) and ends without releasing it
// CHECK-NEXT: aref_gemm.mlir:82:1: note: the events of the consumer partition that break it (4):
// CHECK-NEXT: aref_gemm.mlir:97:7: note: {{ +}}1. consumer aref.get waits for slot 0 of %r to be full (parity 0)
// CHECK:      aref_gemm.mlir:106:5: note: {{ +}}4. consumer tile.dot_wait 0

// (3) A read after the release.
// CHECK:      aref_gemm.mlir:131:7: error: tawa-verify-protocol: slot read after it was released in @read_after_release (K = 64): the consumer partition reads slot 0 of %r after releasing it
// CHECK-NEXT: aref_gemm.mlir:114:1: note: the events of the consumer partition that break it (3):
// CHECK-NEXT: aref_gemm.mlir:129:7: note: {{ +}}1. consumer aref.get waits for slot 0 of %r to be full (parity 0)
// CHECK-NEXT: aref_gemm.mlir:130:7: note: {{ +}}2. consumer aref.consumed releases slot 0 of %r
// CHECK-NEXT: aref_gemm.mlir:131:7: note: {{ +}}3. consumer tile.dot reads slot 0 of %r

// (4) A second release: of the next slot, which the partition does not hold.
// CHECK:      aref_gemm.mlir:161:7: error: tawa-verify-protocol: slot released that is not held in @released_twice (K = 128): the consumer partition releases slot 1 of %r, which it does not hold

// The same four through tawa-assign-stage-phase, after it named the slots.
// STAGED: func.func @gemm(
// STAGED: aref.consumed %r[%stage{{.*}}, %phase{{.*}}]
// STAGED: aref_gemm.mlir:64:9: error: tawa-verify-protocol: slot released while a tile.dot_async may still read it in @release_before_wait (K = 128)
// STAGED: aref_gemm.mlir:97:7: error: tawa-verify-protocol: partition ends holding a slot in @no_last_release (K = 64)
// STAGED: aref_gemm.mlir:131:7: error: tawa-verify-protocol: slot read after it was released in @read_after_release (K = 64)
// STAGED: aref_gemm.mlir:161:7: error: tawa-verify-protocol: slot released that is not held in @released_twice (K = 128)

// Without --verify-diagnostics: the error and its notes, exit status 1.
// EXIT: aref_gemm.mlir:64:9: error: tawa-verify-protocol: slot released while a tile.dot_async may still read it
// EXIT-NEXT: aref_gemm.mlir:45:1: note: the events of the consumer partition that break it (6):

// UNCHECKED: func.func @release_before_wait(
// UNCHECKED: func.func @released_twice(
