//===- ReportPath.cpp - Where a pass may write its report -----------------===//
//
// Apart from OutputFile.cpp, which does not depend on MLIR's IR (the
// fuzzers build it with LLVM alone).
//
//===----------------------------------------------------------------------===//

#include "pipe/Support/OutputFile.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include <string>

using namespace mlir;
using namespace llvm;

/// The file the tool read the IR from (a module's location may name
/// another: IR printed with its debug info keeps its source's).
static std::string &inputIRPath() {
  static std::string path;
  return path;
}

void pipe::setInputIRPath(StringRef path) { inputIRPath() = path.str(); }

Error pipe::checkReportPath(StringRef path, Operation *op,
                            ArrayRef<std::pair<StringRef, StringRef>> inputs) {
  if (path.empty() || path == "-")
    return Error::success();
  Operation *module = op;
  while (module->getParentOp())
    module = module->getParentOp();
  StringRef input = inputIRPath();
  if (auto file = dyn_cast<FileLineColLoc>(module->getLoc());
      input.empty() && file)
    input = file.getFilename();
  if (!input.empty() && input != "-" && isSameFile(input, path))
    return createStringError(inconvertibleErrorCode(),
                             path + ": also the input IR, which the run "
                                    "reads (an output must not replace an "
                                    "input)");
  for (auto [option, input] : inputs)
    if (!input.empty() && isSameFile(input, path))
      return createStringError(inconvertibleErrorCode(),
                               path + ": also the " + option +
                                   " file, which the run reads (an output "
                                   "must not replace an input)");
  return Error::success();
}
