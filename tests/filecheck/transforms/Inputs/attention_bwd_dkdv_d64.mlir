// examples/python/attention_bwd.py's attention_bwd_dkdv at head dim 64, causal (python -m tawa.frontend examples/python/attention_bwd.py --kernel attention_bwd_dkdv --constexpr HEAD_DIM=64 --constexpr CAUSAL=True --no-locations)
builtin.module {
  func.func @attention_bwd_dkdv(%Q: memref<?x?x?x?xbf16>, %K: memref<?x?x?x?xbf16>, %V: memref<?x?x?x?xbf16>, %dO: memref<?x?x?x?xbf16>, %LSE: memref<?x?x?xf32>, %Delta: memref<?x?x?xf32>, %dK: memref<?x?x?x?xbf16>, %dV: memref<?x?x?x?xbf16>, %q_len: index, %kv_len: index, %sm_scale: f32, %group: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %0 = arith.constant 1.44269502 : f32
    %1 = arith.constant 0xff800000 : f32
    %2 = tile.program_id 0
    %n0 = arith.muli %2, %c128 : index
    %hk = tile.program_id 1
    %b = tile.program_id 2
    %qk_scale = arith.mulf %sm_scale, %0 : f32
    %shift = arith.subi %kv_len, %q_len : index
    %k = tile.load %K[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x64xbf16>
    %v = tile.load %V[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x64xbf16>
    %3 = tile.iota : tensor<128xi32>
    %4 = arith.index_cast %n0 : index to i32
    %5 = tile.splat %4 : i32 -> tensor<128xi32>
    %6 = arith.addi %5, %3 : tensor<128xi32>
    %key = tile.expand_dims %6, 1 : tensor<128xi32> -> tensor<128x1xi32>
    %dk = tile.zeros : tensor<128x64xf32>
    %dv = tile.zeros : tensor<128x64xf32>
    %7 = arith.maxui %n0, %shift : index
    %8 = arith.subi %7, %shift : index
    %9 = arith.divui %8, %c64 : index
    %lo = arith.muli %9, %c64 : index
    %10 = arith.muli %hk, %group : index
    %11 = arith.muli %hk, %group : index
    %12 = arith.addi %11, %group : index
    %dk_1, %dv_1 = scf.for %h = %10 to %12 step %c1 iter_args(%dk_2 = %dk, %dv_2 = %dv) -> (tensor<128x64xf32>, tensor<128x64xf32>) {
      %dk_3, %dv_3 = scf.for %m0 = %lo to %q_len step %c64 iter_args(%dk_4 = %dk_2, %dv_4 = %dv_2) -> (tensor<128x64xf32>, tensor<128x64xf32>) {
        %q = tile.load %Q[%b, %h, %m0, %c0] : memref<?x?x?x?xbf16> -> tensor<64x64xbf16>
        %do = tile.load %dO[%b, %h, %m0, %c0] : memref<?x?x?x?xbf16> -> tensor<64x64xbf16>
        %lse = tile.load %LSE[%b, %h, %m0] : memref<?x?x?xf32> -> tensor<64xf32>
        %delta = tile.load %Delta[%b, %h, %m0] : memref<?x?x?xf32> -> tensor<64xf32>
        %13 = tile.zeros : tensor<128x64xf32>
        %st = tile.dot %k, %q, %13 {rhs_transposed} : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
        %14 = arith.addi %m0, %shift : index
        %15 = tile.iota : tensor<64xi32>
        %16 = arith.index_cast %14 : index to i32
        %17 = tile.splat %16 : i32 -> tensor<64xi32>
        %18 = arith.addi %17, %15 : tensor<64xi32>
        %query = tile.expand_dims %18, 0 : tensor<64xi32> -> tensor<1x64xi32>
        %19 = tile.broadcast %key : tensor<128x1xi32> -> tensor<128x64xi32>
        %20 = tile.broadcast %query : tensor<1x64xi32> -> tensor<128x64xi32>
        %21 = tile.cmpi sle, %19, %20 : tensor<128x64xi32>
        %22 = tile.splat %1 : f32 -> tensor<128x64xf32>
        %st_1 = tile.select %21, %st, %22 : tensor<128x64xi1>, tensor<128x64xf32>
        %23 = tile.splat %qk_scale : f32 -> tensor<128x64xf32>
        %24 = arith.mulf %st_1, %23 : tensor<128x64xf32>
        %25 = tile.expand_dims %lse, 0 : tensor<64xf32> -> tensor<1x64xf32>
        %26 = tile.broadcast %25 : tensor<1x64xf32> -> tensor<128x64xf32>
        %27 = arith.subf %24, %26 : tensor<128x64xf32>
        %pt = math.exp2 %27 : tensor<128x64xf32>
        %28 = arith.truncf %pt : tensor<128x64xf32> to tensor<128x64xbf16>
        %dv_5 = tile.dot %28, %do, %dv_4 : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
        %29 = tile.zeros : tensor<128x64xf32>
        %dpt = tile.dot %v, %do, %29 {rhs_transposed} : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
        %30 = tile.expand_dims %delta, 0 : tensor<64xf32> -> tensor<1x64xf32>
        %31 = tile.broadcast %30 : tensor<1x64xf32> -> tensor<128x64xf32>
        %32 = arith.subf %dpt, %31 : tensor<128x64xf32>
        %dst = arith.mulf %pt, %32 : tensor<128x64xf32>
        %33 = arith.truncf %dst : tensor<128x64xf32> to tensor<128x64xbf16>
        %dk_5 = tile.dot %33, %q, %dk_4 : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
        scf.yield %dk_5, %dv_5 : tensor<128x64xf32>, tensor<128x64xf32>
      }
      scf.yield %dk_3, %dv_3 : tensor<128x64xf32>, tensor<128x64xf32>
    }
    %34 = tile.splat %sm_scale : f32 -> tensor<128x64xf32>
    %35 = arith.mulf %dk_1, %34 : tensor<128x64xf32>
    %36 = arith.truncf %35 : tensor<128x64xf32> to tensor<128x64xbf16>
    tile.store %36, %dK[%b, %hk, %n0, %c0] : tensor<128x64xbf16>, memref<?x?x?x?xbf16>
    %37 = arith.truncf %dv_1 : tensor<128x64xf32> to tensor<128x64xbf16>
    tile.store %37, %dV[%b, %hk, %n0, %c0] : tensor<128x64xbf16>, memref<?x?x?x?xbf16>
    func.return
  }
}
