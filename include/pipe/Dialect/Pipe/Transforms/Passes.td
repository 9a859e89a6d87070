//===- Passes.td - Passes of the pipe dialect --------------*- tablegen -*-===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_TD
#define PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Inspection
//===----------------------------------------------------------------------===//

def PipePrintSummary : Pass<"pipe-print-summary", "ModuleOp"> {
  let summary = "Prints a human-readable summary of placements and schedules";
  let description = [{
    For every `pipe.placement`: its devices, stages and the block instances
    each device hosts (Mixed-Pipe devices show several stages). For every
    `pipe.schedule`: its kind, micro-batch count and the number of actions of
    each kind per device. The IR is not changed.

    ```
    pipe-opt model.mlir --pipe-print-summary
    ```
  }];
  let options = [
    Option<"outputFile", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for standard output)">,
  ];
}

//===----------------------------------------------------------------------===//
// Ingestion: input checks, parameter lifting, block formation, costs
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Placement and scheduling
//===----------------------------------------------------------------------===//

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_TD
