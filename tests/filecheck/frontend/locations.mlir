// The front end prints each op's Python location after it (`loc("file.py":L:C)`,
// the path as given; block arguments at their parameter or loop), and tawa-opt
// reads them back: an error of any later pass names the line and column of the
// Python source, as tawa.compile of the kernel does, not a line of the printed
// IR.  `--no-locations` leaves them out.
//
// RUN: cd %S && python -m tawa.frontend Inputs/mixed_rows.py | filecheck %s
// RUN: cd %S && python -m tawa.frontend Inputs/mixed_rows.py --no-locations | filecheck %s --check-prefix=PLAIN
// RUN: cd %S && python -m tawa.frontend Inputs/mixed_rows.py | not tawa-opt -p tawa-hopper-pipeline -t ptx 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: cd %S && python -m tawa.frontend ../../../examples/python/gemm.py -D BLOCK_N=512 | not tawa-opt -p tawa-hopper-pipeline -t ptx 2>&1 | filecheck %s --check-prefix=REGS
// RUN: cd %S && python -m tawa.frontend Inputs/mixed_rows.py | tawa-opt --print-debuginfo | filecheck %s --check-prefix=KEPT

// CHECK:      func.func @mixed_rows(%A: memref<?x?xbf16> loc("Inputs/mixed_rows.py":6:16), %B: memref<?x?xbf16> loc("Inputs/mixed_rows.py":6:46),
// CHECK:        %acc = tile.zeros : tensor<128x128xf32> loc("Inputs/mixed_rows.py":8:11)
// CHECK:        scf.for %k = %c0 to %K step %c64 iter_args(
// CHECK:          tile.dot %a, %b, %{{.*}} {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32> loc("Inputs/mixed_rows.py":13:15)
// CHECK:        } loc("Inputs/mixed_rows.py":10:5)
// CHECK:      } loc("Inputs/mixed_rows.py":6:1)
// CHECK-NEXT: } loc("Inputs/mixed_rows.py":1:1)

// PLAIN:     func.func @mixed_rows(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %K: index) {
// PLAIN-NOT: loc(

// The second dot, in the Python file; the message names the first one there too.
// ROWS: Inputs/mixed_rows.py:15:17: error: tawa-warp-specialize: this dot's accumulator has 64 rows but the dot at Inputs/mixed_rows.py:13:15 has 128
// ROWS-NOT: <stdin>
// ROWS-NOT: stdin:

// An error of a later pass about an op the passes made: at the Python line it was made of
// (the wgmma of the dot).
// REGS: ../../../examples/python/gemm.py:23:15: error: tawa-check-resources: a wgmma with a 64x512xf32 accumulator

// tawa-opt --print-debuginfo keeps them for the next tool.
// KEPT: tile.dot %{{.*}} loc("Inputs/mixed_rows.py":13:15)
