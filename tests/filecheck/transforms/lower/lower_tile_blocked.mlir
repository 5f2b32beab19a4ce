// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false}' --split-input-file | filecheck %s
// RUN: tawa-opt %s -p tawa-hopper-pipeline --split-input-file -t ptx | filecheck %s --check-prefix=PTX

// Kernels without dots (tawa.blocked_layouts): tawa-lower-tile gives each tile a blocked layout
// (tawa/transforms/lower/blocked_layouts.py), visible in the fragment types.

// An RMSNorm tile, 16x1024 bf16: vectors of 8 bf16 (16 bytes) of one row, the 32 lanes along
// the columns (256 columns), the 4 warps along the rows, 4x4 vectors a thread.  The f32
// conversion keeps the layout (the f32 vectors are 8 long); the row sums are reduced within
// each warp into the row layout (warps along the rows, every lane a copy), the weight vector is
// loaded in the layout reduced along the rows (lanes along the columns, every warp a copy), and
// both broadcasts are views of registers the threads hold.  (Elementwise ops are computed where
// they are first used: the row scale after the weights' load.)
// CHECK-LABEL: func.func @rmsnorm
// CHECK:         %[[X:.*]] = nvgpu.frag_load_global {{.*}} : !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// Past the row's end (N < 1024, a multiple of 8) the edge path loads whole 16-byte vectors.
// CHECK:         nvgpu.frag_load_global {{.*}} mask %{{.*}} {vector_mask} : !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:         %[[XF:.*]] = nvgpu.frag_convert %{{.*}} : !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>> -> !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:         nvgpu.frag_reduce sum %{{.*}} : !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>> -> !nvgpu.frag<16xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>
// CHECK:         nvgpu.frag_load_global {{.*}} : !nvgpu.frag<1024xbf16, #nvgpu.tiled_layout<(256)(256)(8), warps = [*4, -3], lanes = [*1, -2], vector = -1>>
// CHECK:         nvgpu.frag_broadcast %{{.*}} : !nvgpu.frag<1024xf32, #nvgpu.tiled_layout<(256)(256)(8), warps = [*4, -3], lanes = [*1, -2], vector = -1>> -> !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:         nvgpu.frag_unary rsqrt %{{.*}} : !nvgpu.frag<16xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>
// CHECK:         nvgpu.frag_broadcast %{{.*}} : !nvgpu.frag<16xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>> -> !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:         nvgpu.frag_store_global {{.*}} : !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:         nvgpu.frag_store_global {{.*}} mask %{{.*}} {vector_mask} : !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK-NOT:     nvgpu.frag_reduce_warps
// A warp reads and writes 512 contiguous bytes per instruction; the row sum shuffles over all 32 lanes.
// PTX-LABEL: .entry rmsnorm(
// PTX:         ld.global.v4.b32
// PTX:         @%p{{[0-9]+}} ld.global.v4.b32
// PTX:         shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, 16, 31, -1;
// PTX:         rsqrt.approx.ftz.f32
// PTX:         st.global.v4.b32
// PTX:         @%p{{[0-9]+}} st.global.v4.b32
func.func @rmsnorm(%X: memref<?x?xbf16>, %W: memref<?xbf16>, %Y: memref<?x?xbf16>, %N: index, %eps: f32) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c16 : index
  %xb = tile.load %X[%m0, %c0] : memref<?x?xbf16> -> tensor<16x1024xbf16>
  %x = arith.extf %xb : tensor<16x1024xbf16> to tensor<16x1024xf32>
  %sq = arith.mulf %x, %x : tensor<16x1024xf32>
  %ss = tile.reduce sum %sq, 1 : tensor<16x1024xf32> -> tensor<16xf32>
  %ni = arith.index_cast %N : index to i32
  %n = arith.sitofp %ni : i32 to f32
  %nt = tile.splat %n : f32 -> tensor<16xf32>
  %ms = arith.divf %ss, %nt : tensor<16xf32>
  %et = tile.splat %eps : f32 -> tensor<16xf32>
  %me = arith.addf %ms, %et : tensor<16xf32>
  %inv = math.rsqrt %me : tensor<16xf32>
  %wb = tile.load %W[%c0] : memref<?xbf16> -> tensor<1024xbf16>
  %w = arith.extf %wb : tensor<1024xbf16> to tensor<1024xf32>
  %ie = tile.expand_dims %inv, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %ib = tile.broadcast %ie : tensor<16x1xf32> -> tensor<16x1024xf32>
  %xs = arith.mulf %x, %ib : tensor<16x1024xf32>
  %we = tile.expand_dims %w, 0 : tensor<1024xf32> -> tensor<1x1024xf32>
  %wt = tile.broadcast %we : tensor<1x1024xf32> -> tensor<16x1024xf32>
  %y = arith.mulf %xs, %wt : tensor<16x1024xf32>
  %yb = arith.truncf %y : tensor<16x1024xf32> to tensor<16x1024xbf16>
  tile.store %yb, %Y[%m0, %c0] : tensor<16x1024xbf16>, memref<?x?xbf16>
  func.return
}

// -----

// One row of 4096 bf16 (a softmax of a wide row): the 4 warps split the row, so its max and
// its sum combine the warps' partial results through shared memory: nvgpu.frag_reduce_warps,
// with a scratch buffer of 128 f32 (one result value a thread) planned with the kernel's shared
// memory and named barrier 15, the warp group's own.  Columns past N are masked from the
// column index of each register (nvgpu.frag_index col of the same layout).
// CHECK-LABEL: func.func @softmax_row
// CHECK-SAME:    smem = 1536
// CHECK:         %warp_scratch = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128xf32>
// CHECK:         nvgpu.frag_index col : !nvgpu.frag<1x4096xi32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:         nvgpu.frag_select
// CHECK:         nvgpu.frag_reduce_warps max %{{.*}}, 1 via %warp_scratch barrier 15 : !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<1x128xf32> -> !nvgpu.frag<1xf32, #nvgpu.tiled_layout<(1)(1)(1), warps = [-3, *4], lanes = [-2, *32], vector = -1>>
// CHECK:         nvgpu.frag_unary exp2
// CHECK:         nvgpu.frag_reduce_warps sum %{{.*}}, 1 via %warp_scratch barrier 15
// Each thread's partial to shared memory, a barrier, the 4 warps' partials of its lane folded
// (the warps' own offsets 0, 512, 1024, 1536 bytes from the first's), a barrier.
// PTX-LABEL: .entry softmax_row(
// PTX:         shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, 16, 31, -1;
// PTX:         st.shared.f32 [%r{{[0-9]+}}+0], %f{{[0-9]+}};
// PTX-NEXT:    bar.sync 15, 128;
// PTX:         ld.shared.f32 %f{{[0-9]+}}, [%r{{[0-9]+}}+0];
// PTX-NEXT:    ld.shared.f32 %f{{[0-9]+}}, [%r{{[0-9]+}}+128];
// PTX-NEXT:    ld.shared.f32 %f{{[0-9]+}}, [%r{{[0-9]+}}+256];
// PTX-NEXT:    ld.shared.f32 %f{{[0-9]+}}, [%r{{[0-9]+}}+384];
// PTX:         bar.sync 15, 128;
func.func @softmax_row(%X: memref<?x?xf32>, %Y: memref<?x?xbf16>, %N: index) {
  %c0 = arith.constant 0 : index
  %ninf = arith.constant -1.0e+30 : f32
  %m0 = tile.program_id 0
  %x = tile.load %X[%m0, %c0] : memref<?x?xf32> -> tensor<1x4096xf32>
  %cols = tile.iota : tensor<4096xi32>
  %ce = tile.expand_dims %cols, 0 : tensor<4096xi32> -> tensor<1x4096xi32>
  %cb = tile.broadcast %ce : tensor<1x4096xi32> -> tensor<1x4096xi32>
  %ni = arith.index_cast %N : index to i32
  %nt = tile.splat %ni : i32 -> tensor<1x4096xi32>
  %in = tile.cmpi slt, %cb, %nt : tensor<1x4096xi32>
  %nf = tile.splat %ninf : f32 -> tensor<1x4096xf32>
  %xm = tile.select %in, %x, %nf : tensor<1x4096xi1>, tensor<1x4096xf32>
  %mx = tile.reduce max %xm, 1 : tensor<1x4096xf32> -> tensor<1xf32>
  %me = tile.expand_dims %mx, 1 : tensor<1xf32> -> tensor<1x1xf32>
  %mb = tile.broadcast %me : tensor<1x1xf32> -> tensor<1x4096xf32>
  %d = arith.subf %xm, %mb : tensor<1x4096xf32>
  %e = math.exp2 %d : tensor<1x4096xf32>
  %sm = tile.reduce sum %e, 1 : tensor<1x4096xf32> -> tensor<1xf32>
  %se = tile.expand_dims %sm, 1 : tensor<1xf32> -> tensor<1x1xf32>
  %sb = tile.broadcast %se : tensor<1x1xf32> -> tensor<1x4096xf32>
  %y = arith.divf %e, %sb : tensor<1x4096xf32>
  %yb = arith.truncf %y : tensor<1x4096xf32> to tensor<1x4096xbf16>
  tile.store %yb, %Y[%m0, %c0] : tensor<1x4096xbf16>, memref<?x?xbf16>
  func.return
}

// -----

// A row vector carried by a loop over the row's chunks (add + RMSNorm's sum of squares): the
// zeros that start it take the layout of the reduction it adds up, and the loop carries that
// fragment.  The loop's tiles stream from a TMA producer (a kernel without dots) and the
// consumers read each slot into registers.  An f32 tile and a bf16 tile of one shape meet: the
// layout is the bf16 one (vectors of 8), so each f32 vector is two 16-byte shared-memory reads.
// CHECK-LABEL: func.func @row_sums
// CHECK:           nvgpu.tma_load %tmap_A
// CHECK:           nvgpu.tma_load %tmap_B
// CHECK:         %[[Z:.*]] = nvgpu.frag_zeros : !nvgpu.frag<4xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]{{.*}}) -> (!nvgpu.frag<4xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>
// CHECK:           nvgpu.frag_load_shared {{.*}} -> !nvgpu.frag<4x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:           nvgpu.frag_load_shared {{.*}} -> !nvgpu.frag<4x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
// CHECK:           nvgpu.frag_reduce sum
// CHECK:           nvgpu.frag_binary addf
// CHECK:         nvgpu.frag_store_global {{.*}} : !nvgpu.frag<4xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>
// PTX-LABEL: .entry row_sums(
// PTX:         cp.async.bulk.tensor.2d
// PTX:         ld.shared.v4.b32
// PTX:         ld.shared.v4.f32
// PTX-NEXT:    ld.shared.v4.f32
func.func @row_sums(%A: memref<?x?xf32>, %B: memref<?x?xbf16>, %S: memref<?xf32>, %N: index) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c4 : index
  %zero = tile.zeros : tensor<4xf32>
  %sums = scf.for %n0 = %c0 to %N step %c1024 iter_args(%acc = %zero) -> (tensor<4xf32>) {
    %a = tile.load %A[%m0, %n0] : memref<?x?xf32> -> tensor<4x1024xf32>
    %bb = tile.load %B[%m0, %n0] : memref<?x?xbf16> -> tensor<4x1024xbf16>
    %b = arith.extf %bb : tensor<4x1024xbf16> to tensor<4x1024xf32>
    %ab = arith.mulf %a, %b : tensor<4x1024xf32>
    %r = tile.reduce sum %ab, 1 : tensor<4x1024xf32> -> tensor<4xf32>
    %next = arith.addf %acc, %r : tensor<4xf32>
    scf.yield %next : tensor<4xf32>
  }
  tile.store %sums, %S[%m0] : tensor<4xf32>, memref<?xf32>
  func.return
}

// -----

// Column sums (a reduction along the rows): the layout's 4 warps split the 32 rows, so they
// combine through shared memory too (8 values a thread: an 8x128 f32 scratch); the result is
// one value per column in the layout reduced
// along the rows, which is stored (1-D) and broadcast back over the rows without moving data.
// CHECK-LABEL: func.func @column_sums
// CHECK:         nvgpu.frag_reduce_warps sum %{{.*}}, 0 via %warp_scratch barrier 15 : !nvgpu.frag<32x256xf32, {{.*}}>, !nvgpu.smem<8x128xf32> -> !nvgpu.frag<256xf32, {{.*}}>
// CHECK:         nvgpu.frag_store_global {{.*}} : !nvgpu.frag<256xf32
// CHECK:         nvgpu.frag_broadcast
func.func @column_sums(%X: memref<?x?xf32>, %S: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %pid = tile.program_id 0
  %pn = tile.program_id 1
  %m0 = arith.muli %pid, %c32 : index
  %n0 = arith.muli %pn, %c256 : index
  %x = tile.load %X[%m0, %n0] : memref<?x?xf32> -> tensor<32x256xf32>
  %s = tile.reduce sum %x, 0 : tensor<32x256xf32> -> tensor<256xf32>
  tile.store %s, %S[%pid, %n0] : tensor<256xf32>, memref<?x?xf32>
  %e = tile.expand_dims %s, 0 : tensor<256xf32> -> tensor<1x256xf32>
  %b = tile.broadcast %e : tensor<1x256xf32> -> tensor<32x256xf32>
  %y = arith.subf %x, %b : tensor<32x256xf32>
  tile.store %y, %Y[%m0, %n0] : tensor<32x256xf32>, memref<?x?xf32>
  func.return
}
