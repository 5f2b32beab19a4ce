// tawa-warp-specialize on a kernel without dots (tawa/transforms/partition/warp_specialize.py): nothing is
// loaded for a dot, so every op goes to the consumers (their loads are per-thread global loads)
// but the tiles a loop streams (2-D loads in scf.for from memory the kernel does not write: a TMA
// producer and an aref); with nothing to stream there is no producer partition (it would only
// idle): the consumers alone, with the launch cap of their threads as budget; the op carries
// tawa.blocked_layouts (its tiles take blocked layouts and are stored by the threads); one
// consumer warp group per 64 rows where that splits the tiles evenly, else one.
// RUN: tawa-opt %s -p tawa-warp-specialize --split-input-file | filecheck %s
// RUN: tawa-opt %s -p tawa-hopper-pipeline --split-input-file -t ptx | filecheck %s --check-prefix=PTX
// RUN: tawa-opt %s -p 'tawa-warp-specialize{stream-loads=false}' --split-input-file | filecheck %s --check-prefix=THREADS
// RUN: tawa-opt %S/../Inputs/dot_free_two_row_counts.mlir -p tawa-warp-specialize | filecheck %s --check-prefix=ROWS
// RUN: not tawa-opt %S/../Inputs/dot_free_two_row_counts.mlir -p 'tawa-warp-specialize{consumer-warps=8}' 2>&1 | filecheck %s --check-prefix=SPLIT

// CHECK-LABEL: func.func @add_relu
// CHECK-NOT:     aref.create
// CHECK:         aref.warp_specialize partition consumer warps(8) regs(248) {
// CHECK:           tile.load %A
// CHECK:           tile.load %B
// CHECK:           arith.maximumf
// CHECK:           tile.store
// CHECK:         } attributes {tawa.blocked_layouts}
// The threads load and store 16-byte vectors (8 bf16 in 4 registers); no TMA store; 256
// threads, no setmaxnreg.
// PTX: .entry add_relu(
// PTX: .reqntid 256, 1, 1
// PTX-NOT: setmaxnreg
// PTX-NOT: wgmma
// PTX: ld.global.v4.b32
// PTX: max.
// PTX: st.global.v4.b32
// PTX-NOT: cp.async.bulk.tensor
func.func @add_relu(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>) {
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %a = tile.load %A[%m0, %n0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %b = tile.load %B[%m0, %n0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %af = arith.extf %a : tensor<128x128xbf16> to tensor<128x128xf32>
  %bf = arith.extf %b : tensor<128x128xbf16> to tensor<128x128xf32>
  %s = arith.addf %af, %bf : tensor<128x128xf32>
  %z = tile.zeros : tensor<128x128xf32>
  %r = arith.maximumf %s, %z : tensor<128x128xf32>
  %c = arith.truncf %r : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}

// -----

// A sum over a loop (the split-K reduce program's shape), 64 rows: the loop streams W's tiles
// from a producer through an aref into one consumer warp group, which reads each slot into its
// registers (ld.shared) and releases it.
// CHECK-LABEL: func.func @sum_slices
// CHECK:         %[[REF:.+]] = aref.create : !aref.ref<[tensor<64x128xf32>], depth = 1>
// CHECK:         aref.warp_specialize partition producer warps(4)
// CHECK:           scf.for
// CHECK:             tile.load %W
// CHECK:             aref.put %[[REF]]
// CHECK:         } partition consumer warps(4)
// CHECK:           scf.for
// CHECK:             aref.get %[[REF]]
// CHECK:             arith.addf
// CHECK:             aref.consumed %[[REF]]
// CHECK:         } attributes {tawa.blocked_layouts}
// With stream-loads=false (the pipeline's epilogue=threads: the twin for operands no tensor map
// describes) the consumers load W themselves, and there is no producer.
// THREADS-LABEL: func.func @sum_slices
// THREADS-NOT:     aref.create
// THREADS:         aref.warp_specialize partition consumer warps(4)
// THREADS:           tile.load %W
// PTX-LABEL: .entry sum_slices(
// PTX: setmaxnreg
// PTX: cp.async.bulk.tensor
// PTX: ld.shared.v4.f32
func.func @sum_slices(%W: memref<?x?x?xf32>, %C: memref<?x?xf32>, %S: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c64 : index
  %zero = tile.zeros : tensor<64x128xf32>
  %acc = scf.for %s = %c0 to %S step %c1 iter_args(%a = %zero) -> (tensor<64x128xf32>) {
    %w = tile.load %W[%s, %m0, %c0] : memref<?x?x?xf32> -> tensor<64x128xf32>
    %sum = arith.addf %a, %w : tensor<64x128xf32>
    scf.yield %sum : tensor<64x128xf32>
  }
  tile.store %acc, %C[%m0, %c0] : tensor<64x128xf32>, memref<?x?xf32>
  func.return
}

// -----

// A loop reading back what the kernel stores (add + RMSNorm's second loop reads its S): the
// producer's TMA copies would not see the consumers' stores, so the consumers load it themselves;
// X, which nothing writes, streams.
// CHECK-LABEL: func.func @read_back
// CHECK:         aref.warp_specialize partition producer warps(4)
// CHECK:           tile.load %X
// CHECK-NOT:       tile.load %S
// CHECK:         } partition consumer warps(4)
// CHECK:           tile.load %S
func.func @read_back(%X: memref<?x?xbf16>, %S: memref<?x?xbf16>, %Y: memref<?x?xbf16>, %N: index) {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %c16 = arith.constant 16 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c16 : index
  scf.for %n0 = %c0 to %N step %c256 {
    %x = tile.load %X[%m0, %n0] : memref<?x?xbf16> -> tensor<16x256xbf16>
    tile.store %x, %S[%m0, %n0] : tensor<16x256xbf16>, memref<?x?xbf16>
  }
  scf.for %n0 = %c0 to %N step %c256 {
    %s = tile.load %S[%m0, %n0] : memref<?x?xbf16> -> tensor<16x256xbf16>
    tile.store %s, %Y[%m0, %n0] : tensor<16x256xbf16>, memref<?x?xbf16>
  }
  func.return
}

// -----

// A tile a loop loads and nothing uses is not streamed (no ring slot for nobody to take).
// CHECK-LABEL: func.func @unused_chunk
// CHECK-NOT:     aref.create
// CHECK:         aref.warp_specialize partition consumer warps(4)
func.func @unused_chunk(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>, %N: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c16 : index
  scf.for %n0 = %c0 to %N step %c256 {
    %x = tile.load %X[%m0, %n0] : memref<?x?xbf16> -> tensor<16x256xbf16>
  }
  %z = tile.zeros : tensor<16x256xf32>
  %zb = arith.truncf %z : tensor<16x256xf32> to tensor<16x256xbf16>
  tile.store %zb, %Y[%m0, %c0] : tensor<16x256xbf16>, memref<?x?xbf16>
  func.return
}

// -----

// 16 rows of 1024 bf16 (an RMSNorm tile): one warp group holds the whole tile.
// CHECK-LABEL: func.func @scale_rows
// CHECK:         aref.warp_specialize partition consumer warps(4) regs(248) {
// CHECK:         } attributes {tawa.blocked_layouts}
func.func @scale_rows(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c16 : index
  %x = tile.load %X[%m0, %c0] : memref<?x?xbf16> -> tensor<16x1024xbf16>
  %xf = arith.extf %x : tensor<16x1024xbf16> to tensor<16x1024xf32>
  %st = tile.splat %s : f32 -> tensor<16x1024xf32>
  %y = arith.mulf %xf, %st : tensor<16x1024xf32>
  %yb = arith.truncf %y : tensor<16x1024xf32> to tensor<16x1024xbf16>
  tile.store %yb, %Y[%m0, %c0] : tensor<16x1024xbf16>, memref<?x?xbf16>
  func.return
}

// Tiles of 128 and 64 rows: one warp group holds both (it does not split rows);
// asked to split them over two, a located error.
// ROWS: partition consumer warps(4)
// ROWS: } attributes {tawa.blocked_layouts}
// SPLIT: dot_free_two_row_counts.mlir:2:1: error: tawa-warp-specialize: 2 consumer warp groups cannot split the rows of this kernel's tiles evenly (their rows differ): leave consumer-warps out
