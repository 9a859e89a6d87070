//===- LowerToHost.h - What the host lowering's files share ----*- C++ -*-===//
//
// Private to lib/Conversion/PipeToHost. The host lowering has three parts,
// one file each, that the pass in LowerToHost.cpp drives in order: the
// manifest (ManifestBuilder.cpp) numbers everything the runtime must know;
// the weights file (WeightWriter.cpp) holds the params the manifest names;
// the host program (ProgramEmitter.cpp) calls the runtime with the
// manifest's stage and param numbers.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_CONVERSION_PIPETOHOST_LOWERTOHOST_H
#define PIPE_LIB_CONVERSION_PIPETOHOST_LOWERTOHOST_H

#include "pipe/Dialect/Pipe/IR/StageGraph.h"
#include "pipe/Runtime/ManifestSchema.h"
#include "pipe/Scheduling/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <tuple>

namespace mlir::pipe::host_lowering {

/// Numbering of everything the manifest names, built from one graph.
class ManifestBuilder {
public:
  ManifestBuilder(ModuleOp module, SymbolTable &symbols)
      : module(module), symbols(symbols) {}

  LogicalResult addGraph(GraphOp graph, const StageGraph &stages);
  LogicalResult addSchedule(ScheduleOp schedule, PlacementOp placement,
                            const StageGraph &stages,
                            ArrayRef<uint64_t> capacities);

  std::string str() const { return writer.str(); }

  /// Stage id of a stage symbol, param id of a param symbol.
  unsigned stageId(StringRef name) const { return stageIds.lookup(name); }
  std::optional<unsigned> paramId(StringRef name) const {
    auto it = paramIds.find(name);
    if (it == paramIds.end())
      return std::nullopt;
    return it->second;
  }
  /// The type of param `param`.
  Type paramType(unsigned param) const { return paramTypes[param]; }
  /// The device stage `stage` is placed on.
  int64_t stageDevice(unsigned stage) const { return stageDevices[stage]; }
  /// The types of the values edge (src, dst) carries, in manifest order.
  ArrayRef<Type> edgeTypes(unsigned src, unsigned dst) const {
    auto it = edges.find({src, dst});
    return it == edges.end() ? ArrayRef<Type>() : ArrayRef<Type>(it->second);
  }
  /// Every block whose function the runtime calls.
  ArrayRef<BlockOp> getFunctions() const { return functions; }
  static std::string symbolOf(BlockOp block) {
    return ("pipe_fn_" + block.getSymName()).str();
  }

private:
  FailureOr<unsigned> typeId(Operation *user, Type type);
  FailureOr<int> functionId(Operation *user, BlockOp block);

  ModuleOp module;
  SymbolTable &symbols;
  pipe_rt::ManifestWriter writer;
  llvm::MapVector<Type, unsigned> types;
  llvm::StringMap<unsigned> paramIds, stageIds;
  SmallVector<Type> paramTypes;
  SmallVector<int64_t> stageDevices;
  DenseMap<std::pair<unsigned, unsigned>, SmallVector<Type>> edges;
  DenseMap<Value, unsigned> valueIds;
  SmallVector<BlockOp> functions;
  DenseMap<Operation *, int> functionIds;
  unsigned numSchedules = 0;
};

/// Emits the device programs: straight-line calls with an early exit.
class ProgramEmitter {
public:
  ProgramEmitter(ModuleOp module, const ManifestBuilder &manifest)
      : module(module), manifest(manifest), ctx(module.getContext()),
        builder(ctx) {}

  LogicalResult emit(ScheduleOp schedule, unsigned scheduleId, DeviceOp device);

private:
  /// (stage, micro-batch, step) of every recompute of a device.
  using RecomputedSet = llvm::DenseSet<std::tuple<StringRef, int64_t, int64_t>>;
  /// The integer arguments of `op`'s runtime entry point after the context,
  /// in the order include/pipe/Runtime/Program.h declares them.
  FailureOr<SmallVector<int64_t>>
  getArguments(Operation &op, bool forwardOnly,
               const RecomputedSet &recomputed);
  /// A transfer's buffer query and the send or recv that moves it; returns
  /// its token.
  FailureOr<Value> emitTransfer(Operation &op, ActionKind kind);
  /// reduce_grad: the gradient's buffer query and its all-reduce.
  LogicalResult emitReduceGrad(ReduceGradOp op, ActionKind kind);
  /// reduce_bucket: the bucket's buffer query (its param ids in a constant
  /// global) and the all-reduce that starts; returns its token.
  FailureOr<Value> emitReduceBucket(ReduceBucketOp op, ActionKind kind);
  /// The value the last buffer query wrote into the slot.
  Value loadBuffer(Location loc);
  func::FuncOp declare(StringRef name, ArrayRef<Type> args, Type result);
  /// The context followed by `ints` as i32 constants.
  SmallVector<Value> withContext(Location loc, ArrayRef<int64_t> ints);
  /// Calls `name`; exits with its status unless it is zero (or, for token
  /// returning calls, positive). Returns the call's result.
  Value call(Location loc, StringRef name, ValueRange args, bool returnsToken);

  ModuleOp module;
  const ManifestBuilder &manifest;
  MLIRContext *ctx;
  OpBuilder builder;
  Value context;
  /// The device's communicator and the slot buffer queries fill (null in a
  /// program without transfers or reductions).
  Value comm, bufferSlot;
  Block *exit = nullptr;
  /// The device program being emitted, and its buckets so far (they name
  /// their param lists after it).
  std::string programName;
  unsigned numBuckets = 0;
  llvm::StringMap<func::FuncOp> declarations;
};

/// Writes the initial value of every param the manifest names into one
/// safetensors file, so the runtime reads a single weights file.
LogicalResult writeWeights(ModuleOp module, const ManifestBuilder &manifest,
                           StringRef path);

/// pipe.block -> func.func with read-only arguments and a C interface.
void convertBlock(BlockOp block);

/// Adds the globals the runtime loads a program by: the manifest text and
/// the ABI version the program was compiled for.
void emitProgramGlobals(ModuleOp module, const ManifestBuilder &manifest);

} // namespace mlir::pipe::host_lowering

#endif // PIPE_LIB_CONVERSION_PIPETOHOST_LOWERTOHOST_H
