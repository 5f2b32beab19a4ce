// A mistake in a Python kernel is one line `file:line:col: error: ...` and
// exit status 1 (`not` checks the status).
// RUN: not python -m tawa.frontend %S/Inputs/wrong_contraction.py 2>&1 | filecheck %s

// CHECK: Inputs/wrong_contraction.py:9:25: error: tl.dot: contraction sizes differ: 128x64 and 256x64 (did you mean tl.dot(a, b, trans_b=True)?)
// CHECK-NOT: Traceback
