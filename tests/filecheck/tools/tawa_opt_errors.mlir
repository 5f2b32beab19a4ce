// Every user error makes tawa-opt exit with a failure status and print exactly
// one line `where: error: message` (`file:line:col` where the error has a
// source location), never a Python traceback.  Each case saves what tawa-opt
// prints (stdout and stderr together), checks that it is one line (ONE-LINE),
// checks that whole line, and checks that no traceback and nothing after the
// line was printed.  Parts of messages that come from xdsl rather than tawa are
// matched loosely.

// RUN: cd %S

// What every failing case prints: `wc -l` counts exactly one line.
// ONE-LINE: {{^ *1$}}

// A valid input passes, so the failures below are the inputs' and options' fault.
// RUN: tawa-opt Inputs/valid.mlir | filecheck %s --check-prefix=VALID
// VALID: tile.store %y, %X[%pid, %c0] : tensor<64x64xf32>, memref<?x?xf32>

// --- errors in the input

// A file that ends inside a region.
// RUN: not tawa-opt Inputs/truncated.mlir > %t.truncated 2>&1
// RUN: filecheck %s --check-prefix=TRUNCATED --input-file %t.truncated
// RUN: wc -l < %t.truncated | filecheck %s --check-prefix=ONE-LINE
// TRUNCATED-NOT: Traceback
// TRUNCATED:     {{^}}Inputs/truncated.mlir:8:1: error: unexpected end of input ({{.+}}){{$}}
// TRUNCATED-NOT: {{.}}

// An op that no dialect defines.
// RUN: not tawa-opt Inputs/unknown_op.mlir > %t.unknown-op 2>&1
// RUN: filecheck %s --check-prefix=UNKNOWN-OP --input-file %t.unknown-op
// RUN: wc -l < %t.unknown-op | filecheck %s --check-prefix=ONE-LINE
// UNKNOWN-OP-NOT: Traceback
// UNKNOWN-OP:     {{^}}Inputs/unknown_op.mlir:4:{{[0-9]+}}: error: Operation tile.zeroes is not registered{{$}}
// UNKNOWN-OP-NOT: {{.}}

// A verifier error is located at the op that fails.
// RUN: not tawa-opt Inputs/dot_mismatch.mlir > %t.dot 2>&1
// RUN: filecheck %s --check-prefix=DOT --input-file %t.dot
// RUN: wc -l < %t.dot | filecheck %s --check-prefix=ONE-LINE
// DOT-NOT: Traceback
// DOT:     {{^}}Inputs/dot_mismatch.mlir:4:3: error: tile.dot contraction sizes differ: lhs has K=64, rhs has K=32{{$}}
// DOT-NOT: {{.}}

// An input file that does not exist has no line or column.
// RUN: not tawa-opt Inputs/does_not_exist.mlir > %t.missing 2>&1
// RUN: filecheck %s --check-prefix=MISSING --input-file %t.missing
// RUN: wc -l < %t.missing | filecheck %s --check-prefix=ONE-LINE
// MISSING-NOT: Traceback
// MISSING:     {{^}}Inputs/does_not_exist.mlir: error: cannot open input: No such file or directory{{$}}
// MISSING-NOT: {{.}}

// --- errors in the pass pipeline

// RUN: not tawa-opt Inputs/valid.mlir -p no-such-pass > %t.no-pass 2>&1
// RUN: filecheck %s --check-prefix=NO-PASS --input-file %t.no-pass
// RUN: wc -l < %t.no-pass | filecheck %s --check-prefix=ONE-LINE
// NO-PASS-NOT: Traceback
// NO-PASS:     {{^}}tawa-opt: error: invalid pass pipeline 'no-such-pass': {{.*}}no-such-pass{{.*}}{{$}}
// NO-PASS-NOT: {{.}}

// An option the pass does not have.
// RUN: not tawa-opt Inputs/valid.mlir -p 'canonicalize{bogus=1}' > %t.bad-option 2>&1
// RUN: filecheck %s --check-prefix=BAD-OPTION --input-file %t.bad-option
// RUN: wc -l < %t.bad-option | filecheck %s --check-prefix=ONE-LINE
// BAD-OPTION-NOT: Traceback
// BAD-OPTION:     {{^}}tawa-opt: error: invalid pass pipeline 'canonicalize{bogus=1}': {{.*}}bogus{{.*}}{{$}}
// BAD-OPTION-NOT: {{.}}

// An option value of the wrong type.
// RUN: not tawa-opt Inputs/valid.mlir -p 'expand-math-to-polynomials{terms=many}' > %t.bad-value 2>&1
// RUN: filecheck %s --check-prefix=BAD-VALUE --input-file %t.bad-value
// RUN: wc -l < %t.bad-value | filecheck %s --check-prefix=ONE-LINE
// BAD-VALUE-NOT: Traceback
// BAD-VALUE:     {{^}}tawa-opt: error: invalid pass pipeline 'expand-math-to-polynomials{terms=many}': {{.*}}many{{.*}}{{$}}
// BAD-VALUE-NOT: {{.}}

// A pipeline that does not parse (the multi-line xdsl message is joined into one line).
// RUN: not tawa-opt Inputs/valid.mlir -p 'canonicalize{' > %t.bad-spec 2>&1
// RUN: filecheck %s --check-prefix=BAD-SPEC --input-file %t.bad-spec
// RUN: wc -l < %t.bad-spec | filecheck %s --check-prefix=ONE-LINE
// BAD-SPEC-NOT: Traceback
// BAD-SPEC:     {{^}}tawa-opt: error: invalid pass pipeline 'canonicalize{': {{.+}}{{$}}
// BAD-SPEC-NOT: {{.}}

// --- errors in the other options

// RUN: not tawa-opt Inputs/valid.mlir -t no-such-target > %t.target 2>&1
// RUN: filecheck %s --check-prefix=TARGET --input-file %t.target
// RUN: wc -l < %t.target | filecheck %s --check-prefix=ONE-LINE
// TARGET-NOT: Traceback
// TARGET:     {{^}}tawa-opt: error: argument -t/--target: invalid choice: 'no-such-target' (choose from {{.*}}mlir{{.*}}){{$}}
// TARGET-NOT: {{.}}

// RUN: not tawa-opt Inputs/valid.mlir --no-such-flag > %t.flag 2>&1
// RUN: filecheck %s --check-prefix=FLAG --input-file %t.flag
// RUN: wc -l < %t.flag | filecheck %s --check-prefix=ONE-LINE
// FLAG-NOT: Traceback
// FLAG:     {{^}}tawa-opt: error: unrecognized arguments: --no-such-flag{{$}}
// FLAG-NOT: {{.}}
