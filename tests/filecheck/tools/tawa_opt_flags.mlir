// tawa-opt's own flags: --time-passes, the level check before each pass, --help.
// RUN: tawa-opt %s -p 'tawa-warp-specialize,tawa-pipeline{stages=2}' --time-passes 2>&1 >/dev/null | filecheck %s --check-prefix=TIME
// RUN: not tawa-opt %s -p tawa-lower-tile 2>&1 | filecheck %s --check-prefix=LEVEL
// RUN: tawa-opt --help | filecheck %s --check-prefix=HELP

func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}

// The report is mlir-opt's: every pass in pipeline order, parsing and output included.
// TIME:      {{^}}===-{{-+}}==={{$}}
// TIME-NEXT: {{^ +}}... Execution time report ...{{$}}
// TIME-NEXT: {{^}}===-{{-+}}==={{$}}
// TIME-NEXT: {{^}}  Total Execution Time: [[TOTAL:[0-9]+\.[0-9]{4}]] seconds{{$}}
// TIME-EMPTY:
// TIME-NEXT: {{^}}  ----Wall Time----  ----Name----{{$}}
// TIME-NEXT: {{^ +[0-9]+\.[0-9]{4} \( *[0-9]+\.[0-9]%\)  Parse$}}
// TIME-NEXT: {{^ +[0-9]+\.[0-9]{4} \( *[0-9]+\.[0-9]%\)   1\. tawa-warp-specialize$}}
// TIME-NEXT: {{^ +[0-9]+\.[0-9]{4} \( *[0-9]+\.[0-9]%\)   2\. tawa-pipeline$}}
// TIME-NEXT: {{^ +[0-9]+\.[0-9]{4} \( *[0-9]+\.[0-9]%\)  Verifier and level checks$}}
// TIME-NEXT: {{^ +[0-9]+\.[0-9]{4} \( *[0-9]+\.[0-9]%\)  Output$}}
// TIME-NEXT: {{^ +[0-9]+\.[0-9]{4} \( *[0-9]+\.[0-9]%\)  Rest$}}
// TIME-NEXT: {{^ +}}[[TOTAL]] (100.0%)  Total{{$}}
// TIME-NOT:  {{.}}

// One located line naming what to run first, not the first tile op the pass meets.
// LEVEL:     {{^}}{{.*}}tawa_opt_flags.mlir:6:1: error: tawa-lower-tile needs IR after tawa-lower-aref (level aref-lowered) but @gemm is at level tile; run -p tawa-warp-specialize,tawa-pipeline,tawa-assign-stage-phase,tawa-lower-aref first (tawa-hopper-pipeline runs every step){{$}}
// LEVEL-NOT: {{.}}

// tawa's passes and targets come before the options; xDSL's only with --help-all.
// HELP:      tawa passes:
// HELP-NEXT: {{^  tawa-assign-stage-phase +aref +Gives every aref}}
// HELP:      {{^  tawa-warp-specialize +tile +Partitions tile kernels}}
// HELP-NEXT: tawa targets:
// HELP-NEXT: {{^  ptx +Prints lowered kernels as sm_90a PTX}}
// HELP:      tile -> aref -> aref-staged -> aref-lowered -> partitions -> nvgpu -> nvgpu-stores -> ptx
// HELP:      options:
// HELP-NOT:  convert-linalg-to-loops
// HELP:      --dump-dir DIR
// HELP:      --help-all
// HELP-NOT:  convert-linalg-to-loops
