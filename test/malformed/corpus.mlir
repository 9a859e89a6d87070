// Hostile input must end in a located diagnostic and exit status 1, never in
// a crash, a hang or a kill: every file in Inputs/, generated deep and
// exponential inputs, and truncations and mutations of two valid files.
// run-corpus.py runs pipe-opt with an 8 MiB stack limit; see its docstring.
// RUN: %python %S/run-corpus.py pipe-opt %S/Inputs %t --seed %pipe_src_root/test/Dialect/Pipe/ops.mlir --seed %pipe_src_root/examples/mixed-pipe-gpipe.mlir | FileCheck %s
// CHECK-NOT: FAIL
// CHECK: {{[0-9]+}} inputs, 0 failures

// The limits' own messages, for a file named on the command line and for
// standard input.
// RUN: %python %S/gen-deep.py 3000 > %t.deep.mlir
// RUN: not pipe-opt %t.deep.mlir 2>&1 | FileCheck %s --check-prefix=DEEP -DFILE=%t.deep.mlir
// RUN: not pipe-opt < %t.deep.mlir 2>&1 | FileCheck %s --check-prefix=DEEP -DFILE="<stdin>"
// DEEP: [[FILE]]:1:1059: error: input nests more than 1024 levels deep here (brackets, affine operators and alias chains count); it is rejected before parsing to avoid exhausting the stack (see --pipe-max-nesting)
// RUN: not pipe-opt %t.deep.mlir --pipe-max-nesting=2000 2>&1 | FileCheck %s --check-prefix=DEEP2000
// DEEP2000: :1:2035: error: input nests more than 2000 levels deep here
// RUN: pipe-opt %t.deep.mlir --pipe-max-nesting=3001 -o /dev/null

// RUN: not pipe-opt %S/Inputs/nul-byte.mlir 2>&1 | FileCheck %s --check-prefix=NUL
// NUL: nul-byte.mlir:1:30: error: input contains a NUL byte; MLIR text never does (is this a binary file?)
