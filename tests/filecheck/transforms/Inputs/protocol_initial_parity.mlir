// A wrong initial parity: the producer's empty wait uses the ring phase without the xor 1, so it waits for a release before the first load.
// (tawa-hopper-pipeline{prepare=false stages=2} of examples/gemm.mlir, one mutation: wait_parity %7[%stage], %phase)
builtin.module {
  func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %M: index, %N: index, %K: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 99360, regs = [40, 232, 232], persistent>} {
    %0 = nvgpu.block_id 0
    %1 = nvgpu.grid_dim 0
    %2 = nvgpu.launch_grid 0
    %3 = nvgpu.launch_grid 1
    %programs = arith.muli %2, %3 : index
    %4 = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
    %5 = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<2x256x64xbf16, swizzle = 128>
    %6 = nvgpu.smem_alloc offset(98304) : !nvgpu.mbarrier<2>
    %7 = nvgpu.smem_alloc offset(98320) : !nvgpu.mbarrier<2>
    %8 = nvgpu.thread_id
    %9 = arith.constant 0 : index
    %10 = arith.cmpi eq, %8, %9 : index
    scf.if %10 {
      %11 = arith.constant 0 : index
      nvgpu.mbarrier_init %6[%11], 1 : !nvgpu.mbarrier<2>
      nvgpu.mbarrier_init %7[%11], 2 : !nvgpu.mbarrier<2>
      %12 = arith.constant 1 : index
      nvgpu.mbarrier_init %6[%12], 1 : !nvgpu.mbarrier<2>
      nvgpu.mbarrier_init %7[%12], 2 : !nvgpu.mbarrier<2>
      nvgpu.fence_mbarrier_init
      nvgpu.fence_proxy_async
    }
    nvgpu.named_barrier_sync 0, 384
    %tmap_A = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
    %tmap_B = nvgpu.tma_descriptor %B : memref<?x?xbf16> -> !nvgpu.tma_desc<256x64xbf16, swizzle = 128>
    %13 = nvgpu.warp_group_id
    %14 = arith.constant 1 : index
    %15 = arith.cmpi ult, %13, %14 : index
    scf.if %15 {
      nvgpu.setmaxnreg dec 40
      %16 = nvgpu.thread_id
      %17 = arith.constant 128 : index
      %18 = arith.constant 0 : index
      %19 = arith.remui %16, %17 : index
      %20 = arith.cmpi eq, %19, %18 : index
      scf.if %20 {
        %21 = arith.constant 0 : index
        %22 = scf.for %program = %0 to %programs step %1 iter_args(%23 = %21) -> (index) {
          %24 = arith.index_cast %program : index to i32
          %25 = arith.index_cast %2 : index to i32
          %26 = arith.index_cast %3 : index to i32
          %27 = arith.constant 8 : i32
          %28 = arith.muli %27, %26 : i32
          %29 = arith.divui %24, %28 : i32
          %30 = arith.muli %29, %27 : i32
          %31 = arith.subi %25, %30 : i32
          %32 = arith.minui %31, %27 : i32
          %33 = arith.remui %24, %28 : i32
          %34 = arith.remui %33, %32 : i32
          %35 = arith.addi %30, %34 : i32
          %pid_x = arith.index_cast %35 : i32 to index
          %36 = arith.divui %33, %32 : i32
          %pid_y = arith.index_cast %36 : i32 to index
          %c0 = arith.constant 0 : index
          %c64 = arith.constant 64 : index
          %c128 = arith.constant 128 : index
          %c256 = arith.constant 256 : index
          %m0 = arith.muli %pid_x, %c128 : index
          %n0 = arith.muli %pid_y, %c256 : index
          %37 = scf.for %k = %c0 to %K step %c64 iter_args(%38 = %23) -> (index) {
            %39 = arith.constant 1 : index
            %40 = arith.addi %38, %39 : index
            %41 = arith.index_cast %38 : index to i32
            %42 = arith.constant 2 : i32
            %43 = arith.constant 1 : i32
            %44 = arith.remui %41, %42 : i32
            %45 = arith.divui %41, %42 : i32
            %46 = arith.andi %45, %43 : i32
            %stage = arith.index_cast %44 : i32 to index
            %phase = arith.index_cast %46 : i32 to index
            %47 = arith.constant 1 : index
            %48 = arith.xori %phase, %47 : index
            nvgpu.mbarrier_wait_parity %7[%stage], %phase : !nvgpu.mbarrier<2>
            nvgpu.mbarrier_arrive_expect_tx %6[%stage], 49152 : !nvgpu.mbarrier<2>
            nvgpu.tma_load %tmap_A[%m0, %k], %4[%stage], %6[%stage] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
            nvgpu.tma_load %tmap_B[%n0, %k], %5[%stage], %6[%stage] : !nvgpu.tma_desc<256x64xbf16, swizzle = 128>, !nvgpu.smem<2x256x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
            scf.yield %40 : index
          }
          scf.yield %37 : index
        }
      }
    } else {
      nvgpu.setmaxnreg inc 232
      %49 = nvgpu.warp_group_id
      %50 = arith.constant 1 : index
      %51 = arith.constant 64 : index
      %52 = arith.subi %49, %50 : index
      %wg_row0 = arith.muli %52, %51 : index
      %53 = arith.index_cast %wg_row0 : index to i32
      %54 = arith.constant 0 : index
      %55 = arith.constant 0 : index
      %56, %57 = scf.for %program_1 = %0 to %programs step %1 iter_args(%58 = %55, %59 = %55) -> (index, index) {
        %60 = arith.index_cast %program_1 : index to i32
        %61 = arith.index_cast %2 : index to i32
        %62 = arith.index_cast %3 : index to i32
        %63 = arith.constant 8 : i32
        %64 = arith.muli %63, %62 : i32
        %65 = arith.divui %60, %64 : i32
        %66 = arith.muli %65, %63 : i32
        %67 = arith.subi %61, %66 : i32
        %68 = arith.minui %67, %63 : i32
        %69 = arith.remui %60, %64 : i32
        %70 = arith.remui %69, %68 : i32
        %71 = arith.addi %66, %70 : i32
        %pid_x_1 = arith.index_cast %71 : i32 to index
        %72 = arith.divui %69, %68 : i32
        %pid_y_1 = arith.index_cast %72 : i32 to index
        %c0_1 = arith.constant 0 : index
        %c64_1 = arith.constant 64 : index
        %c128_1 = arith.constant 128 : index
        %c256_1 = arith.constant 256 : index
        %m0_1 = arith.muli %pid_x_1, %c128_1 : index
        %n0_1 = arith.muli %pid_y_1, %c256_1 : index
        %zero = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>
        %acc, %73, %74 = scf.for %k_1 = %c0_1 to %K step %c64_1 iter_args(%acc_i = %zero, %75 = %58, %76 = %59) -> (!nvgpu.frag<64x256xf32, wgmma>, index, index) {
          %77 = arith.constant 1 : index
          %78 = arith.addi %75, %77 : index
          %79 = arith.index_cast %75 : index to i32
          %80 = arith.constant 2 : i32
          %81 = arith.constant 1 : i32
          %82 = arith.remui %79, %80 : i32
          %83 = arith.divui %79, %80 : i32
          %84 = arith.andi %83, %81 : i32
          %stage_1 = arith.index_cast %82 : i32 to index
          %phase_1 = arith.index_cast %84 : i32 to index
          nvgpu.mbarrier_wait_parity %6[%stage_1], %phase_1 : !nvgpu.mbarrier<2>
          %85 = nvgpu.wgmma_descriptor %4[%stage_1, %wg_row0] : !nvgpu.smem<2x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
          %86 = nvgpu.wgmma_descriptor %5[%stage_1, %54] : !nvgpu.smem<2x256x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>
          %87 = arith.constant true
          nvgpu.wgmma_fence
          %d = nvgpu.wgmma %85, %86, %acc_i, %87 {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>
          nvgpu.wgmma_commit_group
          nvgpu.wgmma_wait_group 1
          %not_first = arith.cmpi ne, %k_1, %c0_1 : index
          %88 = scf.if %not_first -> (index) {
            %89 = arith.constant 1 : index
            %90 = arith.addi %76, %89 : index
            %91 = arith.index_cast %76 : index to i32
            %92 = arith.constant 2 : i32
            %93 = arith.constant 1 : i32
            %94 = arith.remui %91, %92 : i32
            %95 = arith.divui %91, %92 : i32
            %96 = arith.andi %95, %93 : i32
            %stage_2 = arith.index_cast %94 : i32 to index
            %phase_2 = arith.index_cast %96 : i32 to index
            %97 = arith.constant 128 : index
            %98 = arith.constant 0 : index
            %99 = nvgpu.thread_id
            %100 = arith.remui %99, %97 : index
            %101 = arith.cmpi eq, %100, %98 : index
            scf.if %101 {
              nvgpu.mbarrier_arrive %7[%stage_2] : !nvgpu.mbarrier<2>
            }
            scf.yield %90 : index
          } else {
            scf.yield %76 : index
          }
          scf.yield %d, %78, %88 : !nvgpu.frag<64x256xf32, wgmma>, index, index
        }
        %acc_1 = nvgpu.wgmma_wait_group 0 (%acc) : !nvgpu.frag<64x256xf32, wgmma>
        %ran = arith.cmpi slt, %c0_1, %K : index
        %102 = scf.if %ran -> (index) {
          %103 = arith.constant 1 : index
          %104 = arith.addi %74, %103 : index
          %105 = arith.index_cast %74 : index to i32
          %106 = arith.constant 2 : i32
          %107 = arith.constant 1 : i32
          %108 = arith.remui %105, %106 : i32
          %109 = arith.divui %105, %106 : i32
          %110 = arith.andi %109, %107 : i32
          %stage_3 = arith.index_cast %108 : i32 to index
          %phase_3 = arith.index_cast %110 : i32 to index
          %111 = arith.constant 128 : index
          %112 = arith.constant 0 : index
          %113 = nvgpu.thread_id
          %114 = arith.remui %113, %111 : index
          %115 = arith.cmpi eq, %114, %112 : index
          scf.if %115 {
            nvgpu.mbarrier_arrive %7[%stage_3] : !nvgpu.mbarrier<2>
          }
          scf.yield %104 : index
        } else {
          scf.yield %74 : index
        }
        %116 = arith.addi %m0_1, %wg_row0 : index
        %117 = nvgpu.frag_convert %acc_1 : !nvgpu.frag<64x256xf32, wgmma> -> !nvgpu.frag<64x256xbf16, wgmma>
        %118 = nvgpu.lane_id
        %119 = nvgpu.warp_id
        %120 = arith.constant 4 : index
        %121 = arith.remui %119, %120 : index
        %122 = arith.constant 16 : index
        %123 = arith.muli %121, %122 : index
        %124 = arith.constant 4 : index
        %125 = arith.divui %118, %124 : index
        %126 = arith.addi %123, %125 : index
        %127 = arith.addi %116, %126 : index
        %128 = arith.constant 4 : index
        %129 = arith.remui %118, %128 : index
        %130 = arith.constant 2 : index
        %131 = arith.muli %129, %130 : index
        %132 = arith.addi %n0_1, %131 : index
        %133 = arith.constant 0 : index
        %134 = memref.dim %C, %133 : memref<?x?xbf16>
        %135 = arith.constant 1 : index
        %136 = memref.dim %C, %135 : memref<?x?xbf16>
        %137 = arith.muli %127, %136 : index
        %138 = arith.addi %137, %132 : index
        %139 = arith.constant 2 : index
        %140 = nvgpu.memref_base %C : memref<?x?xbf16>
        %141 = arith.muli %138, %139 : index
        %142 = arith.addi %140, %141 : index
        %143 = arith.muli %136, %139 : index
        %144 = arith.constant 8 : index
        %145 = arith.addi %127, %144 : index
        %146 = arith.constant 249 : index
        %147 = arith.addi %132, %146 : index
        %148 = arith.index_cast %116 : index to i32
        %149 = arith.index_cast %n0_1 : index to i32
        %150 = arith.index_cast %134 : index to i32
        %151 = arith.index_cast %136 : index to i32
        %152 = arith.cmpi ult, %145, %134 : index
        %153 = arith.cmpi ult, %147, %136 : index
        %154 = arith.andi %152, %153 : i1
        %155 = arith.constant 2 : index
        %156 = arith.remui %136, %155 : index
        %157 = arith.constant 0 : index
        %158 = arith.cmpi eq, %156, %157 : index
        %159 = arith.andi %154, %158 : i1
        scf.if %159 {
          nvgpu.frag_store_global %117, %142, %143 : !nvgpu.frag<64x256xbf16, wgmma>
        } else {
          %160 = nvgpu.frag_index row : !nvgpu.frag<64x256xi32, wgmma>
          %161 = nvgpu.frag_binary addi %160, %148 : !nvgpu.frag<64x256xi32, wgmma>, i32
          %162 = nvgpu.frag_cmpi slt, %161, %150 : !nvgpu.frag<64x256xi32, wgmma>, i32
          %163 = nvgpu.frag_index col : !nvgpu.frag<64x256xi32, wgmma>
          %164 = nvgpu.frag_binary addi %163, %149 : !nvgpu.frag<64x256xi32, wgmma>, i32
          %165 = nvgpu.frag_cmpi slt, %164, %151 : !nvgpu.frag<64x256xi32, wgmma>, i32
          %166 = nvgpu.frag_binary andi %162, %165 : !nvgpu.frag<64x256xi1, wgmma>, !nvgpu.frag<64x256xi1, wgmma>
          nvgpu.frag_store_global %117, %142, %143 mask %166 : !nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.frag<64x256xi1, wgmma>
        }
        scf.yield %73, %102 : index, index
      }
    }
    func.return
  }
}

