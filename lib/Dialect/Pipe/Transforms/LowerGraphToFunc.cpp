//===- LowerGraphToFunc.cpp - Graph + backward blocks to plain functions --===//
//
// A checking route that needs no runtime: the forward and the gradient of a
// differentiated graph become ordinary func.funcs calling the block
// functions, so that upstream bufferization and LLVM lowering can execute
// them (test/unit/Autodiff compares them with finite differences). The
// gradient function is where tied parameters' contributions are summed; at
// schedule level the same sum is pipe.reduce_grad.
//
//===----------------------------------------------------------------------===//

#include "pipe/Autodiff/Autodiff.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELOWERGRAPHTOFUNC
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::autodiff;

namespace {

Value createConstant(OpBuilder &b, Location loc, RankedTensorType type,
                     double value) {
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type,
                             b.getFloatAttr(type.getElementType(), value)));
}

Value createAdd(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  auto type = cast<RankedTensorType>(lhs.getType());
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::AddOp::create(b, loc, ValueRange{lhs, rhs}, ValueRange{empty})
      .getResult(0);
}

struct LowerGraphToFuncPass
    : public pipe::impl::PipeLowerGraphToFuncBase<LowerGraphToFuncPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (GraphOp graph : llvm::to_vector(module.getOps<GraphOp>()))
      if (failed(lowerGraph(graph, symbols)))
        return signalPassFailure();

    for (BlockOp block : llvm::to_vector(module.getOps<BlockOp>())) {
      OpBuilder b(block);
      auto func = func::FuncOp::create(b, block.getLoc(), block.getSymName(),
                                       block.getFunctionType());
      func.getBody().takeBody(block.getBody());
      for (Block &body : func.getBody()) {
        Operation *terminator = body.getTerminator();
        if (auto ret = dyn_cast<ReturnOp>(terminator)) {
          OpBuilder rb(ret);
          func::ReturnOp::create(rb, ret.getLoc(), ret.getOperands());
          ret.erase();
        }
      }
      block.erase();
    }
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (isa<ParamOp, GraphOp, PlacementOp, ScheduleOp>(op))
        op.erase();
  }

  LogicalResult lowerGraph(GraphOp graph, SymbolTable &symbols) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Location loc = graph.getLoc();

    // Parameters the graph reads, in module order.
    llvm::StringSet<> used;
    for (RunOp run : graph.getBody().getOps<RunOp>())
      for (Attribute ref : run.getParams())
        used.insert(cast<FlatSymbolRefAttr>(ref).getValue());
    SmallVector<ParamOp> params;
    for (ParamOp param : module.getOps<ParamOp>())
      if (used.contains(param.getSymName()))
        params.push_back(param);

    std::string forwardName = (graph.getSymName() + "_forward").str();
    std::string gradName = (graph.getSymName() + "_grad").str();
    for (StringRef name : {StringRef(forwardName), StringRef(gradName)})
      if (symbols.lookup(name))
        return graph.emitOpError("cannot be lowered: symbol @")
               << name << " already exists";

    SmallVector<Type> argTypes;
    for (ParamOp param : params)
      argTypes.push_back(param.getType());
    llvm::append_range(argTypes, graph.getArgumentTypes());
    ArrayRef<Type> graphResults = graph.getResultTypes();

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());

    // Forward: runs in order.
    auto forward = func::FuncOp::create(
        b, loc, forwardName, FunctionType::get(ctx, argTypes, graphResults));
    {
      OpBuilder fb(ctx);
      fb.setInsertionPointToStart(forward.addEntryBlock());
      IRMapping mapping;
      llvm::StringMap<Value> paramValues;
      if (failed(emitForward(fb, graph, forward, params, symbols, mapping,
                             paramValues, nullptr)))
        return failure();
      SmallVector<Value> results;
      for (Value v : graph.getBody().front().getTerminator()->getOperands())
        results.push_back(mapping.lookup(v));
      func::ReturnOp::create(fb, loc, results);
    }

    // Gradient: forward, then backward blocks in reverse order.
    if (graphResults.empty() || !graph.getResultAttr(0, kLossSeedAttr))
      return graph.emitOpError("has no loss marked with ")
             << kLossSeedAttr << "; run --pipe-differentiate first";
    auto lossType = cast<RankedTensorType>(graphResults.front());
    SmallVector<ParamOp> floatParams;
    SmallVector<Type> gradResults{lossType};
    for (ParamOp param : params)
      if (isa<FloatType>(param.getTensorType().getElementType())) {
        floatParams.push_back(param);
        gradResults.push_back(param.getType());
      }
    auto grad = func::FuncOp::create(
        b, loc, gradName, FunctionType::get(ctx, argTypes, gradResults));
    OpBuilder gb(ctx);
    gb.setInsertionPointToStart(grad.addEntryBlock());
    IRMapping mapping;
    llvm::StringMap<Value> paramValues;
    SmallVector<std::pair<RunOp, func::CallOp>> calls;
    if (failed(emitForward(gb, graph, grad, params, symbols, mapping,
                           paramValues, &calls)))
      return failure();
    Value loss =
        mapping.lookup(graph.getBody().front().getTerminator()->getOperand(0));

    DenseMap<Value, Value> adjoints;
    auto accumulate = [&](DenseMap<Value, Value> &map, Value key, Value g) {
      auto it = map.find(key);
      if (it == map.end())
        map[key] = g;
      else
        it->second = createAdd(gb, loc, it->second, g);
    };
    accumulate(adjoints, loss, createConstant(gb, loc, lossType, 1.0));
    llvm::StringMap<Value> paramGrads;

    for (auto &runAndCall : llvm::reverse(calls)) {
      RunOp run = runAndCall.first;
      func::CallOp call = runAndCall.second;
      auto block = symbols.lookup<BlockOp>(run.getCallee());
      auto inputRef =
          block->getAttrOfType<FlatSymbolRefAttr>(kBackwardInputAttr);
      auto weightRef =
          block->getAttrOfType<FlatSymbolRefAttr>(kBackwardWeightAttr);
      SmallVector<unsigned> diffInputs = getDifferentiableInputs(block);
      SmallVector<unsigned> diffParams = getDifferentiableParams(block);
      if ((!diffInputs.empty() && !inputRef) ||
          (!diffParams.empty() && !weightRef))
        return run.emitOpError("runs @")
               << block.getSymName()
               << ", which has no backward blocks; run --pipe-differentiate "
                  "first";

      unsigned numSaved = getNumSavedResults(block);
      unsigned numOutputs = block.getResultTypes().size() - numSaved;
      SmallVector<Value> args;
      for (Attribute ref : run.getParams())
        args.push_back(
            paramValues.lookup(cast<FlatSymbolRefAttr>(ref).getValue()));
      for (Value input : run.getInputs())
        args.push_back(mapping.lookup(input));
      for (unsigned r : getDifferentiableResults(block)) {
        Value out = call.getResult(r);
        Value g = adjoints.lookup(out);
        if (!g)
          g = createConstant(gb, loc, cast<RankedTensorType>(out.getType()),
                             0.0);
        args.push_back(g);
      }
      for (unsigned s = 0; s < numSaved; ++s)
        args.push_back(call.getResult(numOutputs + s));

      auto callBackward =
          [&](FlatSymbolRefAttr ref) -> FailureOr<func::CallOp> {
        auto backward = symbols.lookup<BlockOp>(ref.getValue());
        if (!backward)
          return run.emitOpError("backward block ")
                 << ref << " of @" << block.getSymName() << " is missing";
        if (!llvm::equal(backward.getArgumentTypes(),
                         ValueRange(args).getTypes()))
          return backward.emitOpError("does not take the arguments of a "
                                      "backward block of @")
                 << block.getSymName()
                 << " (params, inputs, cotangents, saved activations)";
        return func::CallOp::create(gb, loc, ref, backward.getResultTypes(),
                                    args);
      };
      // Input cotangents only matter for inputs another run produced;
      // those of graph arguments are dropped, so the call is skipped.
      bool inputsNeeded = llvm::any_of(diffInputs, [&](unsigned i) {
        return !isa<BlockArgument>(run.getInputs()[i]);
      });
      if (inputRef && inputsNeeded) {
        FailureOr<func::CallOp> back = callBackward(inputRef);
        if (failed(back))
          return failure();
        for (auto [k, i] : llvm::enumerate(diffInputs))
          accumulate(adjoints, mapping.lookup(run.getInputs()[i]),
                     back->getResult(k));
      }
      if (weightRef) {
        FailureOr<func::CallOp> back = callBackward(weightRef);
        if (failed(back))
          return failure();
        for (auto [k, p] : llvm::enumerate(diffParams)) {
          StringRef name =
              cast<FlatSymbolRefAttr>(run.getParams()[p]).getValue();
          // Tied parameters: every run's contribution is summed here.
          auto it = paramGrads.find(name);
          if (it == paramGrads.end())
            paramGrads[name] = back->getResult(k);
          else
            it->second = createAdd(gb, loc, it->second, back->getResult(k));
        }
      }
    }

    SmallVector<Value> results{loss};
    for (ParamOp param : floatParams) {
      Value g = paramGrads.lookup(param.getSymName());
      results.push_back(
          g ? g : createConstant(gb, loc, param.getTensorType(), 0.0));
    }
    func::ReturnOp::create(gb, loc, results);

    if (emitCInterface) {
      forward->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
      grad->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
    }
    return success();
  }

  /// Calls every run's block in order; maps graph values to call results.
  LogicalResult
  emitForward(OpBuilder &b, GraphOp graph, func::FuncOp func,
              ArrayRef<ParamOp> params, SymbolTable &symbols,
              IRMapping &mapping, llvm::StringMap<Value> &paramValues,
              SmallVector<std::pair<RunOp, func::CallOp>> *calls) {
    Block &entry = func.getBody().front();
    for (unsigned i = 0; i < params.size(); ++i)
      paramValues[ParamOp(params[i]).getSymName()] = entry.getArgument(i);
    for (auto [arg, value] :
         llvm::zip(graph.getBody().front().getArguments(),
                   entry.getArguments().drop_front(params.size())))
      mapping.map(arg, value);
    for (RunOp run : graph.getBody().getOps<RunOp>()) {
      auto block = symbols.lookup<BlockOp>(run.getCallee());
      if (!block)
        return run.emitOpError("'")
               << run.getCallee() << "' does not reference a pipe.block";
      SmallVector<Value> args;
      for (Attribute ref : run.getParams()) {
        Value v = paramValues.lookup(cast<FlatSymbolRefAttr>(ref).getValue());
        if (!v)
          return run.emitOpError("binds unknown parameter ") << ref;
        args.push_back(v);
      }
      for (Value input : run.getInputs())
        args.push_back(mapping.lookup(input));
      auto call = func::CallOp::create(b, run.getLoc(), run.getCalleeAttr(),
                                       block.getResultTypes(), args);
      for (auto [result, value] :
           llvm::zip(run.getResults(), call.getResults()))
        mapping.map(result, value);
      if (calls)
        calls->push_back({run, call});
    }
    return success();
  }
};

} // namespace
