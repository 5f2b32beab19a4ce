// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP
// RUN: tawa-opt %s --split-input-file | tawa-opt --split-input-file | filecheck %s

// Every op of the tile dialect in its custom syntax.  The custom form must
// survive custom -> generic -> custom and custom -> custom, and the generic form
// shows how each operand, property and enum value is stored.

// Launch-grid queries on all three axes.
func.func @grid() -> (index, index, index, index, index, index) {
  %p0 = tile.program_id 0
  %p1 = tile.program_id 1
  %p2 = tile.program_id 2
  %n0 = tile.num_programs 0
  %n1 = tile.num_programs 1
  %n2 = tile.num_programs 2
  func.return %p0, %p1, %p2, %n0, %n1, %n2 : index, index, index, index, index, index
}

// CHECK-LABEL: func.func @grid() -> (index, index, index, index, index, index) {
// CHECK-NEXT:    %p0 = tile.program_id 0
// CHECK-NEXT:    %p1 = tile.program_id 1
// CHECK-NEXT:    %p2 = tile.program_id 2
// CHECK-NEXT:    %n0 = tile.num_programs 0
// CHECK-NEXT:    %n1 = tile.num_programs 1
// CHECK-NEXT:    %n2 = tile.num_programs 2
// CHECK-NEXT:    func.return %p0, %p1, %p2, %n0, %n1, %n2 : index, index, index, index, index, index

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "grid"
// CHECK-GENERIC:         %p0 = "tile.program_id"() <{axis = 0 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %p1 = "tile.program_id"() <{axis = 1 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %p2 = "tile.program_id"() <{axis = 2 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %n0 = "tile.num_programs"() <{axis = 0 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %n1 = "tile.num_programs"() <{axis = 1 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %n2 = "tile.num_programs"() <{axis = 2 : i64}> : () -> index

// -----

// Loads and stores: a tile of the memref's rank, a 2-D tile of a 3-D memref and a
// 1-D row of it (trailing dimensions), and a discardable attribute.
func.func @load_store(%A: memref<?x?xbf16>, %X: memref<?x?x?xf32>, %m: index, %k: index, %b: index) {
  %a = tile.load %A[%m, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %x = tile.load %X[%b, %m, %k] : memref<?x?x?xf32> -> tensor<64x32xf32>
  %r = tile.load %X[%b, %m, %k] {hint = "row"} : memref<?x?x?xf32> -> tensor<32xf32>
  tile.store %a, %A[%k, %m] : tensor<128x64xbf16>, memref<?x?xbf16>
  tile.store %x, %X[%b, %k, %m] : tensor<64x32xf32>, memref<?x?x?xf32>
  tile.store %r, %X[%b, %m, %k] {hint = "row"} : tensor<32xf32>, memref<?x?x?xf32>
  func.return
}

// CHECK-LABEL: func.func @load_store(%A: memref<?x?xbf16>, %X: memref<?x?x?xf32>, %m: index, %k: index, %b: index) {
// CHECK-NEXT:    %a = tile.load %A[%m, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:    %x = tile.load %X[%b, %m, %k] : memref<?x?x?xf32> -> tensor<64x32xf32>
// CHECK-NEXT:    %r = tile.load %X[%b, %m, %k] {hint = "row"} : memref<?x?x?xf32> -> tensor<32xf32>
// CHECK-NEXT:    tile.store %a, %A[%k, %m] : tensor<128x64xbf16>, memref<?x?xbf16>
// CHECK-NEXT:    tile.store %x, %X[%b, %k, %m] : tensor<64x32xf32>, memref<?x?x?xf32>
// CHECK-NEXT:    tile.store %r, %X[%b, %m, %k] {hint = "row"} : tensor<32xf32>, memref<?x?x?xf32>
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "load_store"
// CHECK-GENERIC:         ^bb0(%A: memref<?x?xbf16>, %X: memref<?x?x?xf32>, %m: index, %k: index, %b: index):
// CHECK-GENERIC-NEXT:    %a = "tile.load"(%A, %m, %k) : (memref<?x?xbf16>, index, index) -> tensor<128x64xbf16>
// CHECK-GENERIC-NEXT:    %x = "tile.load"(%X, %b, %m, %k) : (memref<?x?x?xf32>, index, index, index) -> tensor<64x32xf32>
// CHECK-GENERIC-NEXT:    %r = "tile.load"(%X, %b, %m, %k) {hint = "row"} : (memref<?x?x?xf32>, index, index, index) -> tensor<32xf32>
// CHECK-GENERIC-NEXT:    "tile.store"(%a, %A, %k, %m) : (tensor<128x64xbf16>, memref<?x?xbf16>, index, index) -> ()
// CHECK-GENERIC-NEXT:    "tile.store"(%x, %X, %b, %k, %m) : (tensor<64x32xf32>, memref<?x?x?xf32>, index, index, index) -> ()
// CHECK-GENERIC-NEXT:    "tile.store"(%r, %X, %b, %m, %k) {hint = "row"} : (tensor<32xf32>, memref<?x?x?xf32>, index, index, index) -> ()

// -----

// Matrix products: K-major rhs (rhs_transposed) and K x N rhs in bf16, f16, and
// f8E4M3FN (which needs the K-major rhs).
func.func @dot(%a: tensor<128x64xbf16>, %bt: tensor<256x64xbf16>, %b: tensor<64x256xbf16>, %acc: tensor<128x256xf32>,
               %h: tensor<64x32xf16>, %hb: tensor<32x64xf16>, %hacc: tensor<64x64xf32>,
               %e: tensor<64x64xf8E4M3FN>, %et: tensor<128x64xf8E4M3FN>, %eacc: tensor<64x128xf32>) {
  %d0 = tile.dot %a, %bt, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
  %d1 = tile.dot %a, %b, %d0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
  %d2 = tile.dot %h, %hb, %hacc : tensor<64x32xf16>, tensor<32x64xf16> -> tensor<64x64xf32>
  %d3 = tile.dot %e, %et, %eacc {rhs_transposed} : tensor<64x64xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<64x128xf32>
  func.return
}

// CHECK-LABEL: func.func @dot(
// CHECK-NEXT:    %d0 = tile.dot %a, %bt, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
// CHECK-NEXT:    %d1 = tile.dot %a, %b, %d0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
// CHECK-NEXT:    %d2 = tile.dot %h, %hb, %hacc : tensor<64x32xf16>, tensor<32x64xf16> -> tensor<64x64xf32>
// CHECK-NEXT:    %d3 = tile.dot %e, %et, %eacc {rhs_transposed} : tensor<64x64xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<64x128xf32>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "dot"
// CHECK-GENERIC:         %d0 = "tile.dot"(%a, %bt, %acc) <{rhs_transposed}> : (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<128x256xf32>) -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:    %d1 = "tile.dot"(%a, %b, %d0) : (tensor<128x64xbf16>, tensor<64x256xbf16>, tensor<128x256xf32>) -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:    %d2 = "tile.dot"(%h, %hb, %hacc) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
// CHECK-GENERIC-NEXT:    %d3 = "tile.dot"(%e, %et, %eacc) <{rhs_transposed}> : (tensor<64x64xf8E4M3FN>, tensor<128x64xf8E4M3FN>, tensor<64x128xf32>) -> tensor<64x128xf32>

// -----

// Tiles made from nothing or from a scalar.
func.func @values(%s: f32, %i: i32) {
  %z = tile.zeros : tensor<128x256xf32>
  %z1 = tile.zeros : tensor<128xf32>
  %f = tile.splat %s : f32 -> tensor<128x128xf32>
  %n = tile.splat %i : i32 -> tensor<128xi32>
  %io = tile.iota : tensor<128xi32>
  %io64 = tile.iota : tensor<64xi64>
  func.return
}

// CHECK-LABEL: func.func @values(%s: f32, %i: i32) {
// CHECK-NEXT:    %z = tile.zeros : tensor<128x256xf32>
// CHECK-NEXT:    %z1 = tile.zeros : tensor<128xf32>
// CHECK-NEXT:    %f = tile.splat %s : f32 -> tensor<128x128xf32>
// CHECK-NEXT:    %n = tile.splat %i : i32 -> tensor<128xi32>
// CHECK-NEXT:    %io = tile.iota : tensor<128xi32>
// CHECK-NEXT:    %io64 = tile.iota : tensor<64xi64>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "values"
// CHECK-GENERIC:         %z = "tile.zeros"() : () -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:    %z1 = "tile.zeros"() : () -> tensor<128xf32>
// CHECK-GENERIC-NEXT:    %f = "tile.splat"(%s) : (f32) -> tensor<128x128xf32>
// CHECK-GENERIC-NEXT:    %n = "tile.splat"(%i) : (i32) -> tensor<128xi32>
// CHECK-GENERIC-NEXT:    %io = "tile.iota"() : () -> tensor<128xi32>
// CHECK-GENERIC-NEXT:    %io64 = "tile.iota"() : () -> tensor<64xi64>

// -----

// Reductions (both kinds), dimension insertion, broadcast and transpose.
func.func @shapes(%x: tensor<128x64xf32>, %v: tensor<128xf32>, %w: tensor<64x128xbf16>) {
  %mx = tile.reduce max %x, 1 : tensor<128x64xf32> -> tensor<128xf32>
  %sm = tile.reduce sum %x, 0 : tensor<128x64xf32> -> tensor<64xf32>
  %col = tile.expand_dims %v, 1 : tensor<128xf32> -> tensor<128x1xf32>
  %row = tile.expand_dims %v, 0 : tensor<128xf32> -> tensor<1x128xf32>
  %bc = tile.broadcast %col : tensor<128x1xf32> -> tensor<128x64xf32>
  %br = tile.broadcast %row : tensor<1x128xf32> -> tensor<64x128xf32>
  %t = tile.trans %w : tensor<64x128xbf16> -> tensor<128x64xbf16>
  func.return
}

// CHECK-LABEL: func.func @shapes(
// CHECK-NEXT:    %mx = tile.reduce max %x, 1 : tensor<128x64xf32> -> tensor<128xf32>
// CHECK-NEXT:    %sm = tile.reduce sum %x, 0 : tensor<128x64xf32> -> tensor<64xf32>
// CHECK-NEXT:    %col = tile.expand_dims %v, 1 : tensor<128xf32> -> tensor<128x1xf32>
// CHECK-NEXT:    %row = tile.expand_dims %v, 0 : tensor<128xf32> -> tensor<1x128xf32>
// CHECK-NEXT:    %bc = tile.broadcast %col : tensor<128x1xf32> -> tensor<128x64xf32>
// CHECK-NEXT:    %br = tile.broadcast %row : tensor<1x128xf32> -> tensor<64x128xf32>
// CHECK-NEXT:    %t = tile.trans %w : tensor<64x128xbf16> -> tensor<128x64xbf16>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "shapes"
// CHECK-GENERIC:         %mx = "tile.reduce"(%x) <{kind = #tile<reduce_kind max>, axis = 1 : i64}> : (tensor<128x64xf32>) -> tensor<128xf32>
// CHECK-GENERIC-NEXT:    %sm = "tile.reduce"(%x) <{kind = #tile<reduce_kind sum>, axis = 0 : i64}> : (tensor<128x64xf32>) -> tensor<64xf32>
// CHECK-GENERIC-NEXT:    %col = "tile.expand_dims"(%v) <{axis = 1 : i64}> : (tensor<128xf32>) -> tensor<128x1xf32>
// CHECK-GENERIC-NEXT:    %row = "tile.expand_dims"(%v) <{axis = 0 : i64}> : (tensor<128xf32>) -> tensor<1x128xf32>
// CHECK-GENERIC-NEXT:    %bc = "tile.broadcast"(%col) : (tensor<128x1xf32>) -> tensor<128x64xf32>
// CHECK-GENERIC-NEXT:    %br = "tile.broadcast"(%row) : (tensor<1x128xf32>) -> tensor<64x128xf32>
// CHECK-GENERIC-NEXT:    %t = "tile.trans"(%w) : (tensor<64x128xbf16>) -> tensor<128x64xbf16>

// -----

// Masks: every comparison predicate, index tiles, a discardable attribute on the
// custom-parsed tile.cmpi, and a select on the mask.
func.func @masks(%a: tensor<128x128xi32>, %b: tensor<128x128xi32>, %x: tensor<128x128xf32>, %y: tensor<128x128xf32>, %p: tensor<16xindex>) {
  %eq = tile.cmpi eq, %a, %b : tensor<128x128xi32>
  %ne = tile.cmpi ne, %a, %b : tensor<128x128xi32>
  %slt = tile.cmpi slt, %a, %b : tensor<128x128xi32>
  %sle = tile.cmpi sle, %a, %b : tensor<128x128xi32>
  %sgt = tile.cmpi sgt, %a, %b : tensor<128x128xi32>
  %sge = tile.cmpi sge, %a, %b : tensor<128x128xi32>
  %ult = tile.cmpi ult, %a, %b : tensor<128x128xi32>
  %ule = tile.cmpi ule, %a, %b : tensor<128x128xi32>
  %ugt = tile.cmpi ugt, %a, %b : tensor<128x128xi32>
  %uge = tile.cmpi uge, %a, %b : tensor<128x128xi32>
  %pi = tile.cmpi eq, %p, %p {note = "idx"} : tensor<16xindex>
  %s = tile.select %sle, %x, %y : tensor<128x128xi1>, tensor<128x128xf32>
  func.return
}

// CHECK-LABEL: func.func @masks(
// CHECK-NEXT:    %eq = tile.cmpi eq, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %ne = tile.cmpi ne, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %slt = tile.cmpi slt, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %sle = tile.cmpi sle, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %sgt = tile.cmpi sgt, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %sge = tile.cmpi sge, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %ult = tile.cmpi ult, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %ule = tile.cmpi ule, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %ugt = tile.cmpi ugt, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %uge = tile.cmpi uge, %a, %b : tensor<128x128xi32>
// CHECK-NEXT:    %pi = tile.cmpi eq, %p, %p {note = "idx"} : tensor<16xindex>
// CHECK-NEXT:    %s = tile.select %sle, %x, %y : tensor<128x128xi1>, tensor<128x128xf32>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "masks"
// CHECK-GENERIC:         %eq = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate eq>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %ne = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate ne>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %slt = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate slt>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %sle = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate sle>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %sgt = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate sgt>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %sge = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate sge>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %ult = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate ult>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %ule = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate ule>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %ugt = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate ugt>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %uge = "tile.cmpi"(%a, %b) <{predicate = #tile<cmpi_predicate uge>}> : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
// CHECK-GENERIC-NEXT:    %pi = "tile.cmpi"(%p, %p) <{predicate = #tile<cmpi_predicate eq>}> {note = "idx"} : (tensor<16xindex>, tensor<16xindex>) -> tensor<16xi1>
// CHECK-GENERIC-NEXT:    %s = "tile.select"(%sle, %x, %y) : (tensor<128x128xi1>, tensor<128x128xf32>, tensor<128x128xf32>) -> tensor<128x128xf32>

// -----

// Masks of data: every float comparison predicate, a bf16 tile, and a select on the mask.
func.func @data_masks(%x: tensor<128x128xf32>, %y: tensor<128x128xf32>, %h: tensor<64xbf16>) {
  %oeq = tile.cmpf oeq, %x, %y : tensor<128x128xf32>
  %une = tile.cmpf une, %x, %y : tensor<128x128xf32>
  %olt = tile.cmpf olt, %x, %y : tensor<128x128xf32>
  %ole = tile.cmpf ole, %x, %y : tensor<128x128xf32>
  %ogt = tile.cmpf ogt, %x, %y : tensor<128x128xf32>
  %oge = tile.cmpf oge, %x, %y {note = "ge"} : tensor<128x128xf32>
  %hb = tile.cmpf olt, %h, %h : tensor<64xbf16>
  %s = tile.select %ogt, %x, %y : tensor<128x128xi1>, tensor<128x128xf32>
  func.return
}

// CHECK-LABEL: func.func @data_masks(
// CHECK-NEXT:    %oeq = tile.cmpf oeq, %x, %y : tensor<128x128xf32>
// CHECK-NEXT:    %une = tile.cmpf une, %x, %y : tensor<128x128xf32>
// CHECK-NEXT:    %olt = tile.cmpf olt, %x, %y : tensor<128x128xf32>
// CHECK-NEXT:    %ole = tile.cmpf ole, %x, %y : tensor<128x128xf32>
// CHECK-NEXT:    %ogt = tile.cmpf ogt, %x, %y : tensor<128x128xf32>
// CHECK-NEXT:    %oge = tile.cmpf oge, %x, %y {note = "ge"} : tensor<128x128xf32>
// CHECK-NEXT:    %hb = tile.cmpf olt, %h, %h : tensor<64xbf16>
// CHECK-NEXT:    %s = tile.select %ogt, %x, %y : tensor<128x128xi1>, tensor<128x128xf32>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "data_masks"
// CHECK-GENERIC:         %oeq = "tile.cmpf"(%x, %y) <{predicate = #tile<cmpf_predicate oeq>}> : (tensor<128x128xf32>, tensor<128x128xf32>) -> tensor<128x128xi1>
// CHECK-GENERIC:         %hb = "tile.cmpf"(%h, %h) <{predicate = #tile<cmpf_predicate olt>}> : (tensor<64xbf16>, tensor<64xbf16>) -> tensor<64xi1>

// -----

// Products left in flight and the waits that complete them: with no values,
// with one, and with several values and a discardable attribute.
func.func @dot_async(%a: tensor<128x64xbf16>, %bt: tensor<256x64xbf16>, %b: tensor<64x256xbf16>, %acc: tensor<128x256xf32>, %z: tensor<64x64xf32>) -> tensor<128x256xf32> {
  %d0 = tile.dot_async %a, %bt, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
  %d1 = tile.dot_async %a, %b, %d0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
  tile.dot_wait 1
  tile.dot_wait 1 {note = "ring"}
  %w = tile.dot_wait 0 (%d1) : tensor<128x256xf32>
  %w1, %w2 = tile.dot_wait 0 (%w, %z) {note = "drain"} : tensor<128x256xf32>, tensor<64x64xf32>
  func.return %w1 : tensor<128x256xf32>
}

// CHECK-LABEL: func.func @dot_async(
// CHECK-NEXT:    %d0 = tile.dot_async %a, %bt, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
// CHECK-NEXT:    %d1 = tile.dot_async %a, %b, %d0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
// CHECK-NEXT:    tile.dot_wait 1{{$}}
// CHECK-NEXT:    tile.dot_wait 1 {note = "ring"}{{$}}
// CHECK-NEXT:    %w = tile.dot_wait 0 (%d1) : tensor<128x256xf32>
// CHECK-NEXT:    %w1, %w2 = tile.dot_wait 0 (%w, %z) {note = "drain"} : tensor<128x256xf32>, tensor<64x64xf32>
// CHECK-NEXT:    func.return %w1 : tensor<128x256xf32>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "dot_async"
// CHECK-GENERIC:         %d0 = "tile.dot_async"(%a, %bt, %acc) <{rhs_transposed}> : (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<128x256xf32>) -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:    %d1 = "tile.dot_async"(%a, %b, %d0) : (tensor<128x64xbf16>, tensor<64x256xbf16>, tensor<128x256xf32>) -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:    "tile.dot_wait"() <{pending = 1 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "tile.dot_wait"() <{pending = 1 : i64}> {note = "ring"} : () -> ()
// CHECK-GENERIC-NEXT:    %w = "tile.dot_wait"(%d1) <{pending = 0 : i64}> : (tensor<128x256xf32>) -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:    %w1, %w2 = "tile.dot_wait"(%w, %z) <{pending = 0 : i64}> {note = "drain"} : (tensor<128x256xf32>, tensor<64x64xf32>) -> (tensor<128x256xf32>, tensor<64x64xf32>)

// -----

// The enum attributes on their own, as discardable attributes.
func.func @enum_attributes() {
  %p = tile.program_id 0 {kinds = [#tile<reduce_kind max>, #tile<reduce_kind sum>], pred = #tile<cmpi_predicate uge>}
  func.return
}

// CHECK-LABEL: func.func @enum_attributes() {
// CHECK-NEXT:    %p = tile.program_id 0 {kinds = [#tile<reduce_kind max>, #tile<reduce_kind sum>], pred = #tile<cmpi_predicate uge>}

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "enum_attributes"
// CHECK-GENERIC-NEXT:    %p = "tile.program_id"() <{axis = 0 : i64}> {kinds = [#tile<reduce_kind max>, #tile<reduce_kind sum>], pred = #tile<cmpi_predicate uge>} : () -> index
