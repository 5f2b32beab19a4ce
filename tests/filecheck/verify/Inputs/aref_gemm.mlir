// A GEMM at the aref level, as tawa-pipeline{stages=2} makes it (one
// tile.dot_async in flight; slot k-1 released after the tile.dot_wait 1 that
// retires the dot reading it, the last slot after the loop), and four ways
// to break it, one per chunk (`--split-input-file`).  The slots are left to
// their counts (no tawa-assign-stage-phase).

// (0) The protocol as the pipeline makes it: proved.
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %K: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %K step %c64 {
      %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
      aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
    }
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = tile.zeros : tensor<128x256xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
      %a, %b = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      %d = tile.dot_async %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
      tile.dot_wait 1
      %not_first = arith.cmpi ne, %k, %c0 : index
      scf.if %not_first {
        aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      }
      scf.yield %d : tensor<128x256xf32>
    }
    %done = tile.dot_wait 0 (%acc) : tensor<128x256xf32>
    %ran = arith.cmpi slt, %c0, %K : index
    scf.if %ran {
      aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
    }
  }
  func.return
}

// -----

// (1) The release of slot k-1 comes before the tile.dot_wait 1 that retires
// the dot reading it.
func.func @release_before_wait(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %K: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %K step %c64 {
      %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
      aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
    }
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = tile.zeros : tensor<128x256xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
      %a, %b = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      %d = tile.dot_async %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
      %not_first = arith.cmpi ne, %k, %c0 : index
      scf.if %not_first {
        aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      }
      tile.dot_wait 1
      scf.yield %d : tensor<128x256xf32>
    }
    %done = tile.dot_wait 0 (%acc) : tensor<128x256xf32>
    %ran = arith.cmpi slt, %c0, %K : index
    scf.if %ran {
      aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
    }
  }
  func.return
}

// -----

// (2) The last slot is never released (one program per CTA: nothing waits
// for it again, so no deadlock shows).
func.func @no_last_release(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %K: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %K step %c64 {
      %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
      aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
    }
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = tile.zeros : tensor<128x256xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
      %a, %b = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      %d = tile.dot_async %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
      tile.dot_wait 1
      %not_first = arith.cmpi ne, %k, %c0 : index
      scf.if %not_first {
        aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      }
      scf.yield %d : tensor<128x256xf32>
    }
    %done = tile.dot_wait 0 (%acc) : tensor<128x256xf32>
  }
  func.return
}

// -----

// (3) A synchronous dot reads the slot after releasing it.
func.func @read_after_release(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %K: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %K step %c64 {
      %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
      aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
    }
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = tile.zeros : tensor<128x256xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
      %a, %b = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
      scf.yield %d : tensor<128x256xf32>
    }
  }
  func.return
}

// -----

// (4) Each slot is released twice: the producer refills it while the dot of
// the next iteration may still read it... or rather the second release is an
// arrival its empty barrier does not expect.
func.func @released_twice(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %K: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %K step %c64 {
      %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
      aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
    }
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = tile.zeros : tensor<128x256xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
      %a, %b = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
      aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 2>
      scf.yield %d : tensor<128x256xf32>
    }
  }
  func.return
}
