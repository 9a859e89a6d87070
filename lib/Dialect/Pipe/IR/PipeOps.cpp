//===- PipeOps.cpp - Operations of the pipe dialect -----------------------===//

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/IR/PlanLimits.h"
#include "pipe/Dialect/Pipe/IR/StageGraph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include <map>

using namespace mlir;
using namespace mlir::pipe;

/// Prints a type list as `[t0, t1]` for diagnostics.
static std::string formatTypes(ArrayRef<Type> types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(types, os);
  os << ']';
  return text;
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

static ParseResult parseTypeAndInitialValue(OpAsmParser &parser,
                                            TypeAttr &typeAttr,
                                            Attribute &initialValue) {
  Type type;
  if (parser.parseType(type))
    return failure();
  typeAttr = TypeAttr::get(type);
  if (failed(parser.parseOptionalEqual()))
    return success();
  return parser.parseAttribute(initialValue, type);
}

static void printTypeAndInitialValue(OpAsmPrinter &p, ParamOp, TypeAttr type,
                                     Attribute initialValue) {
  p << type.getValue();
  if (!initialValue)
    return;
  p << " = ";
  if (auto elements = dyn_cast<TypedAttr>(initialValue);
      elements && elements.getType() == type.getValue())
    p.printAttributeWithoutType(initialValue);
  else
    p.printAttribute(initialValue);
}

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError("expects a statically shaped tensor type, got ") << type;
  Type elementType = type.getElementType();
  if (!elementType.isIntOrIndexOrFloat())
    return emitOpError("expects an integer or floating-point element type, "
                       "got ")
           << elementType;

  uint64_t elementBits =
      elementType.isIndex() ? 64 : elementType.getIntOrFloatBitWidth();
  uint64_t bits = elementBits;
  bool overflowed = false;
  for (int64_t dim : type.getShape())
    bits = llvm::SaturatingMultiply<uint64_t>(bits, dim, &overflowed);
  if (overflowed)
    return emitOpError("has a size that overflows 64 bits: ") << type;

  if (std::optional<ElementsAttr> init = getInitialValue()) {
    if (init->getType() != type)
      return emitOpError("expects an initial value of its type ")
             << type << ", got " << init->getType();
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(*init)) {
      // The parser does not check blobs against their type; a mismatch is
      // silent garbage (or an out-of-bounds read) later.
      DenseResourceElementsHandle handle = resource.getRawHandle();
      AsmResourceBlob *blob = handle.getBlob();
      if (!blob)
        return emitOpError("initializes from dense_resource blob '")
               << handle.getKey()
               << "', which has no data (no dialect_resources entry)";
      if (elementBits % 8 == 0 && blob->getData().size() != bits / 8)
        return emitOpError("has a dense_resource blob of ")
               << blob->getData().size() << " bytes, but " << type << " needs "
               << bits / 8;
    }
    if (getExternalFile())
      return emitOpError("has both an initial value and external storage");
  }
  if (getExternalKey() && !getExternalFile())
    return emitOpError("has an external key but no external file");
  if (getExternalFile() && !getExternalKey())
    return emitOpError("has an external file but no external key");
  if (getExternalFile() && getExternalFile()->empty())
    return emitOpError("expects a non-empty external file name");
  if (getExternalKey() && getExternalKey()->empty())
    return emitOpError("expects a non-empty external key");
  return success();
}

LogicalResult GetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param =
      symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError("'")
           << getParam() << "' does not reference a pipe.param";
  if (param.getType() != getType())
    return emitOpError("expects type ") << param.getType() << " of parameter @"
                                        << getParam() << ", got " << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// BlockOp
//===----------------------------------------------------------------------===//

ParseResult BlockOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes))
    return failure();

  SmallVector<OpAsmParser::Argument> params, args;
  if (succeeded(parser.parseOptionalKeyword("params")) &&
      parser.parseArgumentList(params, OpAsmParser::Delimiter::Paren,
                               /*allowType=*/true, /*allowAttrs=*/true))
    return failure();
  if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                               /*allowType=*/true, /*allowAttrs=*/true))
    return failure();

  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  if (succeeded(parser.parseOptionalArrow()) &&
      call_interface_impl::parseFunctionResultList(parser, resultTypes,
                                                   resultAttrs))
    return failure();

  SmallVector<OpAsmParser::Argument> allArgs(params);
  allArgs.append(args);
  SmallVector<Type> argTypes;
  for (OpAsmParser::Argument &arg : allArgs)
    argTypes.push_back(arg.type);
  Builder &builder = parser.getBuilder();
  result.addAttribute(
      getFunctionTypeAttrName(result.name),
      TypeAttr::get(builder.getFunctionType(argTypes, resultTypes)));
  result.addAttribute(getNumParamsAttrName(result.name),
                      builder.getI64IntegerAttr(params.size()));
  call_interface_impl::addArgAndResultAttrs(
      builder, result, allArgs, resultAttrs, getArgAttrsAttrName(result.name),
      getResAttrsAttrName(result.name));

  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  return parser.parseRegion(*body, allArgs);
}

void BlockOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  Block &entry = getBody().front();
  ArrayRef<BlockArgument> allArgs = entry.getArguments();
  auto function = cast<FunctionOpInterface>(getOperation());
  auto printArgs = [&](unsigned begin, unsigned end) {
    p << '(';
    for (unsigned i = begin; i < end; ++i) {
      if (i != begin)
        p << ", ";
      p.printRegionArgument(allArgs[i], function.getArgAttrs(i));
    }
    p << ')';
  };
  unsigned numParams = std::min<uint64_t>(getNumParams(), allArgs.size());
  if (numParams != 0) {
    p << " params";
    printArgs(0, numParams);
  }
  p << ' ';
  printArgs(numParams, allArgs.size());
  ArrayRef<Type> results = getResultTypes();
  if (!results.empty()) {
    p << " -> ";
    bool hasResultAttrs = false;
    for (unsigned i = 0, e = results.size(); i < e; ++i)
      hasResultAttrs |= !function.getResultAttrs(i).empty();
    bool parens = results.size() != 1 || hasResultAttrs ||
                  isa<FunctionType>(results.front());
    if (parens)
      p << '(';
    for (unsigned i = 0, e = results.size(); i < e; ++i) {
      if (i != 0)
        p << ", ";
      p << results[i];
      p.printOptionalAttrDict(function.getResultAttrs(i));
    }
    if (parens)
      p << ')';
  }
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getFunctionTypeAttrName(), getNumParamsAttrName(),
       getArgAttrsAttrName(), getResAttrsAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

LogicalResult BlockOp::verify() {
  if (getNumParams() > getFunctionType().getNumInputs())
    return emitOpError("declares ")
           << getNumParams() << " parameters but has only "
           << getFunctionType().getNumInputs() << " arguments";
  for (Type type : getParamTypes()) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return emitOpError("expects statically shaped tensor parameters, got ")
             << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GraphOp
//===----------------------------------------------------------------------===//

ParseResult GraphOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType =
      [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
         function_interface_impl::VariadicFlag,
         std::string &) { return builder.getFunctionType(argTypes, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildFuncType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void GraphOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

// Runs after the nested ops verified, so that their instance names exist.
LogicalResult GraphOp::verifyRegions() {
  llvm::StringMap<RunOp> instances;
  for (Operation &op : getBody().front()) {
    if (isa<ReturnOp>(op))
      continue;
    auto run = dyn_cast<RunOp>(op);
    if (!run)
      return op.emitOpError("is not allowed in a pipe.graph, which holds only "
                            "pipe.run and pipe.return");
    auto [it, inserted] = instances.try_emplace(run.getInstance(), run);
    if (!inserted) {
      InFlightDiagnostic diag = run.emitOpError("reuses instance name \"")
                                << run.getInstance() << "\"";
      diag.attachNote(it->second.getLoc()) << "first used here";
      return diag;
    }
  }
  return success();
}

RunOp GraphOp::lookupInstance(StringRef name) {
  for (RunOp run : getBody().getOps<RunOp>())
    if (run.getInstance() == name)
      return run;
  return {};
}

//===----------------------------------------------------------------------===//
// RunOp
//===----------------------------------------------------------------------===//

LogicalResult RunOp::verify() {
  if (getInstance().empty())
    return emitOpError("expects a non-empty instance name");
  return success();
}

LogicalResult RunOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto block =
      symbolTable.lookupNearestSymbolFrom<BlockOp>(*this, getCalleeAttr());
  if (!block)
    return emitOpError("'")
           << getCallee() << "' does not reference a pipe.block";

  ArrayRef<Type> inputTypes = block.getInputTypes();
  if (!llvm::equal(getInputs().getTypes(), inputTypes))
    return emitOpError("expects inputs of types ")
           << formatTypes(inputTypes) << " for @" << getCallee() << ", got "
           << formatTypes(llvm::to_vector(getInputs().getTypes()));
  if (!llvm::equal(getOutputs().getTypes(), block.getResultTypes()))
    return emitOpError("expects results of types ")
           << formatTypes(block.getResultTypes()) << " from @" << getCallee()
           << ", got " << formatTypes(llvm::to_vector(getOutputs().getTypes()));

  ArrayRef<Type> paramTypes = block.getParamTypes();
  if (getParams().size() != paramTypes.size())
    return emitOpError("binds ")
           << getParams().size() << " parameters, but @" << getCallee()
           << " takes " << paramTypes.size();
  for (auto [ref, type] : llvm::zip(getParams(), paramTypes)) {
    auto symbol = cast<FlatSymbolRefAttr>(ref);
    auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, symbol);
    if (!param)
      return emitOpError("'")
             << symbol.getValue() << "' does not reference a pipe.param";
    if (param.getType() != type)
      return emitOpError("binds parameter @")
             << symbol.getValue() << " of type " << param.getType()
             << " to an argument of type " << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ReturnOp
//===----------------------------------------------------------------------===//

LogicalResult ReturnOp::verify() {
  auto function = cast<FunctionOpInterface>((*this)->getParentOp());
  ArrayRef<Type> expected = function.getResultTypes();
  if (!llvm::equal(getOperands().getTypes(), expected))
    return emitOpError("expects operands of types ")
           << formatTypes(expected) << " to match the results of its parent, "
           << "got " << formatTypes(llvm::to_vector(getOperands().getTypes()));
  return success();
}

//===----------------------------------------------------------------------===//
// PlacementOp and StageOp
//===----------------------------------------------------------------------===//

LogicalResult PlacementOp::verify() {
  if (getDevices() > kMaxPlanDevices || getReplicas() > kMaxPlanDevices ||
      getDevices() * getReplicas() > kMaxPlanDevices)
    return emitOpError("has ")
           << getDevices() << " devices times " << getReplicas()
           << " replicas, more than the " << kMaxPlanDevices
           << " machine devices a plan may use";
  if (std::optional<uint64_t> microbatches = getMicrobatches();
      microbatches && *microbatches > kMaxMicrobatches)
    return emitOpError("has ")
           << *microbatches << " micro-batches, more than " << kMaxMicrobatches;
  for (Operation &op : getBody().front())
    if (!isa<StageOp>(op))
      return op.emitOpError("is not allowed in a pipe.placement, which holds "
                            "only pipe.stage");
  return success();
}

StageOp PlacementOp::lookupStage(StringAttr name) {
  return dyn_cast_or_null<StageOp>(
      mlir::SymbolTable::lookupSymbolIn(*this, name));
}

static std::string formatCycle(const StageGraph &graph,
                               ArrayRef<unsigned> cycle) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      cycle, os,
      [&](unsigned index) { os << '@' << graph.getStage(index).getSymName(); },
      " -> ");
  return text;
}

LogicalResult
PlacementOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // Start above this op: a placement is itself a symbol table.
  auto graph = symbolTable.lookupNearestSymbolFrom<GraphOp>(
      (*this)->getParentOp(), getGraphAttr());
  if (!graph)
    return emitOpError("'")
           << getGraph() << "' does not reference a pipe.graph";
  FailureOr<StageGraph> stages = StageGraph::build(*this, graph);
  if (failed(stages))
    return failure();
  SmallVector<unsigned> cycle = stages->findCycle();
  if (!cycle.empty())
    return emitOpError("has a cyclic stage graph: ")
           << formatCycle(*stages, cycle)
           << "; a pipeline needs an acyclic order of stages";
  return success();
}

LogicalResult StageOp::verify() {
  auto placement = cast<PlacementOp>((*this)->getParentOp());
  if (getDevice() >= placement.getDevices())
    return emitOpError("is bound to device ")
           << getDevice() << ", but placement @" << placement.getSymName()
           << " has " << placement.getDevices() << " devices";
  if (getBlocks().empty())
    return emitOpError("expects at least one block instance");
  llvm::StringSet<> seen;
  for (StringRef name : getBlocks().getAsValueRange<StringAttr>())
    if (!seen.insert(name).second)
      return emitOpError("lists block instance \"") << name << "\" twice";
  return success();
}

//===----------------------------------------------------------------------===//
// ScheduleOp and DeviceOp
//===----------------------------------------------------------------------===//

// Structural checks of the action lists run as region verifiers, after
// every nested op has passed its own verification: their attributes may be
// missing before that (generic syntax), and reading them would crash.

namespace {
/// What identifies a transfer across its two ends.
using TransferKey =
    std::tuple<uint32_t, StringRef, StringRef, uint64_t, uint64_t>;

template <typename TransferOpT> TransferKey getTransferKey(TransferOpT op) {
  return {static_cast<uint32_t>(op.getKind()), op.getSrc(), op.getDst(),
          op.getMicrobatch(), op.getStepIndex()};
}

/// Prints a transfer as `activation @s0 -> @s1 mb 0 step 0`.
template <typename TransferOpT> std::string describeTransfer(TransferOpT op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << stringifyTransferKind(op.getKind()) << " @" << op.getSrc() << " -> @"
     << op.getDst() << " mb " << op.getMicrobatch() << " step "
     << op.getStepIndex();
  return text;
}

/// Fails on a second transfer with the same identity as an earlier one on
/// the same side: the two ends could not be paired.
template <typename TransferOpT>
LogicalResult checkUniqueTransfer(TransferOpT op,
                                  std::map<TransferKey, Operation *> &seen) {
  auto [it, inserted] = seen.try_emplace(getTransferKey(op), op);
  if (inserted)
    return success();
  InFlightDiagnostic diag = op.emitOpError("repeats the transfer ")
                            << describeTransfer(op)
                            << "; each (kind, source, destination, "
                               "micro-batch, step) may be sent and received "
                               "once";
  diag.attachNote(it->second->getLoc()) << "first listed here";
  return diag;
}

/// Actions that only make sense when training.
bool isTrainingAction(Operation *op) {
  if (isa<BackwardOp, BackwardInputOp, BackwardWeightOp, RecomputeOp,
          PushGradOp, HostReduceOp, HostUpdateOp, UpdateOp, ReduceGradOp,
          ReduceBucketOp>(op))
    return true;
  if (auto send = dyn_cast<SendOp>(op))
    return send.getKind() == TransferKind::Gradient;
  if (auto recv = dyn_cast<RecvOp>(op))
    return recv.getKind() == TransferKind::Gradient;
  return false;
}
} // namespace

LogicalResult ScheduleOp::verifyRegions() {
  if (getMicrobatches() > kMaxMicrobatches)
    return emitOpError("has ")
           << getMicrobatches() << " micro-batches, more than "
           << kMaxMicrobatches;
  if (getSteps() > kMaxScheduleSteps)
    return emitOpError("lists ")
           << getSteps() << " steps, more than " << kMaxScheduleSteps;
  DenseMap<uint64_t, DeviceOp> devices;
  for (Operation &op : getBody().front()) {
    auto device = dyn_cast<DeviceOp>(op);
    if (!device)
      return op.emitOpError("is not allowed in a pipe.schedule, which holds "
                            "only pipe.device");
    auto [it, inserted] = devices.try_emplace(device.getDevice(), device);
    if (!inserted) {
      InFlightDiagnostic diag = device.emitOpError("repeats device ")
                                << device.getDevice() << " of schedule @"
                                << getSymName();
      diag.attachNote(it->second.getLoc()) << "first listed here";
      return diag;
    }
  }

  if (getWeightVersions() && getForwardOnly())
    return emitOpError("keeps weight versions, but is forward_only and "
                       "never updates weights");
  if (std::optional<ArrayAttr> psStages = getPsStages()) {
    llvm::SmallDenseSet<Attribute> seen;
    for (Attribute stage : *psStages)
      if (!seen.insert(stage).second)
        return emitOpError("lists parameter-server stage ")
               << stage << " twice";
  }

  std::map<TransferKey, Operation *> sends, recvs;
  for (DeviceOp device : getBody().getOps<DeviceOp>()) {
    for (Operation &op : device.getBody().front()) {
      if (getForwardOnly() && isTrainingAction(&op))
        return op.emitOpError("is a training action, but schedule @")
               << getSymName() << " is forward_only";
      if (auto send = dyn_cast<SendOp>(op))
        if (failed(checkUniqueTransfer(send, sends)))
          return failure();
      if (auto recv = dyn_cast<RecvOp>(op))
        if (failed(checkUniqueTransfer(recv, recvs)))
          return failure();
    }
  }
  return success();
}

namespace {
/// Checks one transfer's stages and payload against the stage graph.
template <typename TransferOpT>
LogicalResult verifyTransfer(TransferOpT op, const StageGraph &stages) {
  if (op.getSrc() == op.getDst())
    return op.emitOpError("expects different source and destination "
                          "stages, got @")
           << op.getSrc() << " for both";
  std::optional<unsigned> src = stages.lookupStage(op.getSrc());
  std::optional<unsigned> dst = stages.lookupStage(op.getDst());
  if (!src || !dst)
    return op.emitOpError("names stage @")
           << (src ? op.getDst() : op.getSrc())
           << ", which its placement does not have";
  bool isActivation = op.getKind() == TransferKind::Activation;
  unsigned producer = isActivation ? *src : *dst;
  unsigned consumer = isActivation ? *dst : *src;
  SmallVector<Type> expected = stages.getCrossingTypes(producer, consumer);
  if (expected.empty())
    return op.emitOpError("moves ")
           << stringifyTransferKind(op.getKind()) << "s from @" << op.getSrc()
           << " to @" << op.getDst() << ", but no values flow from @"
           << stages.getStage(producer).getSymName() << " to @"
           << stages.getStage(consumer).getSymName() << " in the graph";
  SmallVector<Type> payload =
      llvm::to_vector(op.getPayload().template getAsValueRange<TypeAttr>());
  if (payload != expected)
    return op.emitOpError("expects payload ")
           << formatTypes(expected) << " (the values crossing from @"
           << stages.getStage(producer).getSymName() << " to @"
           << stages.getStage(consumer).getSymName() << "), got "
           << formatTypes(payload);
  return success();
}
} // namespace

LogicalResult ScheduleOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *found =
      symbolTable.lookupNearestSymbolFrom(*this, getPlacementAttr());
  auto placement = dyn_cast_or_null<PlacementOp>(found);
  if (!placement)
    return emitOpError("'")
           << getPlacement() << "' does not reference a pipe.placement";
  auto graph = symbolTable.lookupNearestSymbolFrom<GraphOp>(
      placement->getParentOp(), placement.getGraphAttr());
  if (!graph) {
    InFlightDiagnostic diag = emitOpError("uses placement @")
                              << getPlacement() << ", whose graph @"
                              << placement.getGraph() << " is not a pipe.graph";
    diag.attachNote(placement.getLoc()) << "placement defined here";
    return diag;
  }
  FailureOr<StageGraph> stages = StageGraph::build(placement, graph);
  if (failed(stages))
    return failure();
  mlir::SymbolTable &stageTable = symbolTable.getSymbolTable(placement);
  if (std::optional<uint64_t> placed = placement.getMicrobatches();
      placed && *placed != getMicrobatches()) {
    InFlightDiagnostic diag = emitOpError("has ")
                              << getMicrobatches()
                              << " micro-batches, but placement @"
                              << placement.getSymName()
                              << " was partitioned for " << *placed;
    diag.attachNote(placement.getLoc()) << "placement defined here";
    return diag;
  }
  std::optional<ArrayAttr> psStages = getPsStages();
  if (psStages)
    for (auto stage : psStages->getAsRange<FlatSymbolRefAttr>())
      if (!stageTable.lookup<StageOp>(stage.getAttr()))
        return emitOpError("lists parameter-server stage ")
               << stage << ", which placement @" << placement.getSymName()
               << " does not have";

  std::map<TransferKey, SendOp> sends;
  for (DeviceOp device : getBody().getOps<DeviceOp>())
    for (SendOp send : device.getBody().getOps<SendOp>())
      sends.try_emplace(getTransferKey(send), send);

  // Devices that host a stage reading each parameter, for reduce_grad;
  // computed on first use.
  std::optional<DenseMap<StringAttr, llvm::SmallDenseSet<uint64_t, 4>>> readers;
  auto getReaders = [&]() -> auto & {
    if (!readers) {
      readers.emplace();
      for (RunOp run : graph.getBody().getOps<RunOp>()) {
        uint64_t onDevice =
            stages->getStage(stages->getStageOf(run)).getDevice();
        for (Attribute ref : run.getParams())
          (*readers)[cast<FlatSymbolRefAttr>(ref).getAttr()].insert(onDevice);
      }
    }
    return *readers;
  };

  for (DeviceOp device : getBody().getOps<DeviceOp>()) {
    if (device.getDevice() >= placement.getDevices())
      return device.emitOpError("is device ")
             << device.getDevice() << ", but placement @"
             << placement.getSymName() << " has only " << placement.getDevices()
             << " devices";
    for (auto action : device.getBody().getOps<ActionOpInterface>()) {
      Operation *op = action.getOperation();
      if (FlatSymbolRefAttr stageRef = action.getLocalStage()) {
        auto stage = stageTable.lookup<StageOp>(stageRef.getAttr());
        if (!stage)
          return op->emitOpError("names stage ")
                 << stageRef << ", which placement @" << placement.getSymName()
                 << " does not have";
        if (stage.getDevice() != device.getDevice()) {
          InFlightDiagnostic diag =
              op->emitOpError("runs stage ")
              << stageRef << " on device " << device.getDevice()
              << ", but the stage is placed on device " << stage.getDevice();
          diag.attachNote(stage.getLoc()) << "stage placed here";
          return diag;
        }
        if (psStages &&
            isa<LoadOp, ReleaseOp, PushGradOp, HostReduceOp, HostUpdateOp>(
                op) &&
            !llvm::is_contained(*psStages, stageRef))
          return op->emitOpError("serves stage ")
                 << stageRef << " from the parameter server, but schedule @"
                 << getSymName() << " does not list it in ps_stages";
      }
      if (isa<HostReduceOp>(op) && placement.getReplicas() == 1)
        return op->emitOpError("sums the replicas' gradients, but placement @")
               << placement.getSymName()
               << " has one replica; only a data-parallel placement "
                  "(replicas > 1) has gradients to reduce";
      if (std::optional<uint64_t> mb = action.getMicrobatchIndex();
          mb && *mb >= getMicrobatches())
        return op->emitOpError("uses micro-batch ")
               << *mb << ", but schedule @" << getSymName() << " has "
               << getMicrobatches() << " (0 to " << getMicrobatches() - 1
               << ")";
      if (action.getStepIndex() >= getSteps())
        return op->emitOpError("belongs to step ")
               << action.getStepIndex() << ", but schedule @" << getSymName()
               << " covers " << getSteps() << " (0 to " << getSteps() - 1
               << ")";

      if (auto recv = dyn_cast<RecvOp>(op)) {
        auto it = sends.find(getTransferKey(recv));
        if (it != sends.end() && it->second.getPayload() != recv.getPayload()) {
          InFlightDiagnostic diag =
              recv.emitOpError("expects payload ")
              << formatTypes(llvm::to_vector(
                     recv.getPayload().getAsValueRange<TypeAttr>()))
              << " to match its send, got "
              << formatTypes(llvm::to_vector(
                     it->second.getPayload().getAsValueRange<TypeAttr>()));
          diag.attachNote(it->second.getLoc()) << "the send is here";
          return diag;
        }
        if (failed(verifyTransfer(recv, *stages)))
          return failure();
      }
      if (auto send = dyn_cast<SendOp>(op))
        if (failed(verifyTransfer(send, *stages)))
          return failure();
      if (auto reduce = dyn_cast<ReduceGradOp>(op)) {
        auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(
            *this, reduce.getParamAttr());
        if (!param)
          return op->emitOpError("'")
                 << reduce.getParam() << "' does not reference a pipe.param";
        auto it = getReaders().find(reduce.getParamAttr().getAttr());
        if (it == getReaders().end() || !it->second.count(device.getDevice()))
          return op->emitOpError("reduces the gradient of @")
                 << reduce.getParam() << " on device " << device.getDevice()
                 << ", where no stage reads it";
      }
      if (auto bucket = dyn_cast<ReduceBucketOp>(op)) {
        if (placement.getReplicas() == 1)
          return op->emitOpError("sums gradients over the replicas, but "
                                 "placement @")
                 << placement.getSymName()
                 << " has one replica; only a data-parallel placement "
                    "(replicas > 1) has gradients to reduce";
        if (bucket.getParams().empty())
          return op->emitOpError("has an empty bucket");
        llvm::SmallDenseSet<StringAttr, 8> seen;
        for (auto ref : bucket.getParams().getAsRange<FlatSymbolRefAttr>()) {
          auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(
              *this, ref.getAttr());
          if (!param)
            return op->emitOpError("'")
                   << ref.getValue() << "' does not reference a pipe.param";
          if (param.getFrozen())
            return op->emitOpError("lists ")
                   << ref << ", which is frozen: it has no gradient to reduce";
          if (!seen.insert(ref.getAttr()).second)
            return op->emitOpError("lists ")
                   << ref << " twice; a bucket holds each gradient once";
          auto it = getReaders().find(ref.getAttr());
          if (it == getReaders().end() || !it->second.count(device.getDevice()))
            return op->emitOpError("reduces the gradient of ")
                   << ref << " on device " << device.getDevice()
                   << ", where no stage reads it";
          if (it->second.size() > 1) {
            SmallVector<uint64_t> readers(it->second.begin(), it->second.end());
            llvm::sort(readers);
            InFlightDiagnostic diag =
                op->emitOpError("reduces the gradient of ")
                << ref << " over the replicas only, but stages on devices ";
            llvm::interleaveComma(readers, diag);
            return diag << " read it; use pipe.reduce_grad for a parameter "
                           "shared across devices";
          }
        }
      }
    }
  }
  return success();
}

LogicalResult DeviceOp::verifyRegions() {
  for (Operation &op : getBody().front()) {
    if (!isa<ActionOpInterface>(op))
      return op.emitOpError("is not a schedule action; a pipe.device holds "
                            "only ops that implement ActionOpInterface");
    for (Value result : op.getResults()) {
      if (!isa<TokenType>(result.getType()))
        continue;
      if (result.use_empty())
        return op.emitOpError("produces a token that is never waited on");
      if (!result.hasOneUse()) {
        InFlightDiagnostic diag =
            op.emitOpError("produces a token that is waited on more than once");
        for (Operation *user : result.getUsers())
          diag.attachNote(user->getLoc()) << "waited on here";
        return diag;
      }
    }
  }
  return success();
}

LogicalResult WaitOp::verify() {
  if (getTokens().empty())
    return emitOpError("expects at least one token to wait on");
  return success();
}

//===----------------------------------------------------------------------===//
// Actions
//===----------------------------------------------------------------------===//

FlatSymbolRefAttr SendOp::getLocalStage() { return getSrcAttr(); }
FlatSymbolRefAttr RecvOp::getLocalStage() { return getDstAttr(); }
FlatSymbolRefAttr ReduceGradOp::getLocalStage() { return {}; }
FlatSymbolRefAttr ReduceBucketOp::getLocalStage() { return {}; }
FlatSymbolRefAttr WaitOp::getLocalStage() { return {}; }

#define GET_OP_CLASSES
#include "pipe/Dialect/Pipe/IR/PipeOps.cpp.inc"
