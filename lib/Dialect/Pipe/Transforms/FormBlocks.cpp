//===- FormBlocks.cpp - Outlines a model function into pipe.blocks --------===//
//
// Turns the model's forward function (linalg on tensors reading weights
// through pipe.get_param) into pipe.block symbols and a pipe.graph of
// pipe.runs computing the same thing. See docs/blocks-and-costs.md.
//
// Every top-level op of the function is one of:
//  - a parameter read (pipe.get_param): becomes a `params(...)` argument of
//    each block that reads it;
//  - free: pure and depending on no block's result, and either depending on
//    nothing but constants (arith.constant, tensor.empty, linalg.fill of a
//    constant, a causal mask) or glue reading only graph arguments and
//    parameters (a weight transpose, a reshape of the input ids). Free ops
//    are cloned into every block that needs them;
//  - glue: zero-FLOP data movement (tensor reshapes, slices, concat, pad;
//    linalg transposes, broadcasts, copies, fills) reading some block's
//    result. It joins the block of its latest producer;
//  - an anchor: everything else (linalg ops with arithmetic, gathers,
//    calls, ...). At op granularity each anchor starts a block (a "unit":
//    the anchor plus the glue that joins it).
// Units are numbered in program order and every data edge goes from a unit
// to the same or a later one, so grouping CONTIGUOUS ranges of units (layer
// and coarse granularity) always gives an acyclic block graph.
//
//===----------------------------------------------------------------------===//

#include "pipe/Analysis/CostModel.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEFORMBLOCKS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {

enum class OpClass { Param, Free, Glue, Anchor };

/// An anchor and the glue that joined it, in program order.
struct Unit {
  Operation *anchor = nullptr;
  SmallVector<Operation *> ops;
  bool readsParam = false;
  llvm::hash_code signature = 0;
  std::optional<std::string> layerKey;
};

/// A contiguous range of units that becomes one block instance.
struct Segment {
  unsigned begin = 0, end = 0;
  std::string instance;
  /// Base of the block function's symbol name.
  std::string baseName;
  /// Free values the graph returns; only the trailing "results" segment.
  SmallVector<Value> extraOutputs;
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A short readable name for what an anchor computes: "matmul",
/// "contract", "exp", "addf_reduce", "gather", ...
std::string describeOp(Operation *op) {
  std::string name = op->getName().stripDialect().str();
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return name;
  if (linalg::isaContractionOpInterface(generic))
    return "contract";
  // Name it after its most telling payload op: a gather, else the first
  // math op (exp, tanh, rsqrt), else the first arithmetic op other than an
  // add or subtract, else the first arithmetic op.
  std::string main, firstNonAdd, first;
  CostOptions options;
  generic.getRegion().walk([&](Operation *nested) {
    std::string name = nested->getName().stripDialect().str();
    if (isa<tensor::ExtractOp>(nested) && main.empty())
      main = "gather";
    if (getScalarOpFlops(nested, options) == 0)
      return;
    if (isa_and_nonnull<math::MathDialect>(nested->getDialect()) &&
        main.empty())
      main = name;
    if (!isa<arith::AddFOp, arith::SubFOp>(nested) && firstNonAdd.empty())
      firstNonAdd = name;
    if (first.empty())
      first = name;
  });
  if (main.empty())
    main = firstNonAdd.empty() ? first : firstNonAdd;
  if (main.empty())
    return name;
  if (generic.getNumReductionLoops() != 0)
    main += "_reduce";
  return main;
}

/// True for zero-FLOP data movement that should not form a block alone.
bool isGlueOp(Operation *op) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    bool moves = true;
    CostOptions options;
    linalgOp->walk([&](Operation *nested) {
      if (nested == op)
        return;
      if (isa<tensor::ExtractOp, linalg::IndexOp>(nested) ||
          getScalarOpFlops(nested, options) != 0)
        moves = false;
    });
    return moves;
  }
  if (isa_and_nonnull<tensor::TensorDialect>(op->getDialect()))
    return op->getNumRegions() == 0 || isa<tensor::PadOp>(op);
  // Scalar bookkeeping (index casts, scalar arithmetic on sizes).
  return op->getNumRegions() == 0 && op->getNumResults() != 0 &&
         llvm::all_of(op->getResultTypes(),
                      [](Type type) { return type.isIntOrIndexOrFloat(); });
}

/// The scope name a location carries, if any: a NameLoc's name, looked for
/// through call sites and fused locations (a string metadata counts too).
std::optional<std::string> getScopeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    if (auto callee = getScopeName(call.getCallee()))
      return callee;
    return getScopeName(call.getCaller());
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (auto text = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
      return text.str();
    for (Location inner : fused.getLocations())
      if (auto name = getScopeName(inner))
        return name;
  }
  return std::nullopt;
}

/// "transformer.h.3.attn.c_attn" -> "transformer.h.3": the scope up to its
/// first numeric component, which is how module lists name their layers.
std::optional<std::string> getLayerKey(Location loc) {
  std::optional<std::string> scope = getScopeName(loc);
  if (!scope)
    return std::nullopt;
  // '.'-separated module paths, or '/'-separated scopes (TF/JAX style).
  char separator = StringRef(*scope).contains('.') ? '.' : '/';
  SmallVector<StringRef> parts;
  StringRef(*scope).split(parts, separator);
  for (auto [index, part] : llvm::enumerate(parts)) {
    if (part.empty() || !llvm::all_of(part, llvm::isDigit))
      continue;
    size_t length = 0;
    for (StringRef prefix : ArrayRef(parts).take_front(index + 1))
      length += prefix.size() + 1;
    return scope->substr(0, length - 1);
  }
  return std::nullopt;
}

std::string sanitizeSymbol(StringRef text) {
  std::string out;
  for (char c : text)
    out += (llvm::isAlnum(c) || c == '_' || c == '.' || c == '$') ? c : '_';
  if (out.empty() || llvm::isDigit(out.front()))
    out = "b_" + out;
  return out;
}

//===----------------------------------------------------------------------===//
// The block former
//===----------------------------------------------------------------------===//

class BlockFormer {
public:
  BlockFormer(ModuleOp module, func::FuncOp func)
      : module(module), func(func), body(func.getBody().front()) {}

  LogicalResult classify();
  LogicalResult segmentOps(StringRef granularity, int64_t numBlocks);
  LogicalResult build();

private:
  /// Operands of `op` and values its regions capture from above.
  ArrayRef<Value> getDeps(Operation *op);
  bool isMember(Operation *op, unsigned segment) {
    auto it = unitOf.find(op);
    return it != unitOf.end() && segmentOfUnit[it->second] == segment;
  }
  void segmentByOp();
  LogicalResult segmentByLayer();
  LogicalResult segmentCoarse(int64_t numBlocks);
  void addPlainSegments(unsigned begin, unsigned end,
                        SmallVectorImpl<Segment> &out);
  void detectRuns(unsigned begin, unsigned end, unsigned minPeriod,
                  SmallVectorImpl<std::pair<unsigned, unsigned>> &runs,
                  SmallVectorImpl<unsigned> &periods);
  SmallVector<unsigned> computeCutLiveness();
  std::string uniqueSymbol(StringRef base);
  BlockOp dedup(BlockOp candidate, StringRef baseName);

  ModuleOp module;
  func::FuncOp func;
  Block &body;

  llvm::DenseMap<Operation *, OpClass> classOf;
  llvm::DenseMap<Operation *, unsigned> unitOf;
  llvm::DenseMap<Operation *, unsigned> position;
  llvm::DenseMap<Operation *, SmallVector<Value, 4>> deps;
  /// For free ops: whether they read a parameter, and whether they read a
  /// graph argument or parameter at all (then only glue may stay free).
  llvm::DenseMap<Operation *, bool> freeReadsParam;
  llvm::DenseMap<Operation *, bool> freeDependsOnData;
  SmallVector<Unit> units;
  SmallVector<Segment> segments;
  SmallVector<unsigned> segmentOfUnit;
  /// Live values across each cut between units (layer detection).
  SmallVector<unsigned> cutLive;

  llvm::StringSet<> usedSymbols;
  llvm::DenseMap<size_t, SmallVector<BlockOp, 1>> blocksByHash;
};

ArrayRef<Value> BlockFormer::getDeps(Operation *op) {
  auto [it, inserted] = deps.try_emplace(op);
  if (inserted) {
    llvm::append_range(it->second, op->getOperands());
    if (op->getNumRegions() != 0) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      for (Value value : captured)
        if (!llvm::is_contained(it->second, value))
          it->second.push_back(value);
    }
  }
  return it->second;
}

LogicalResult BlockFormer::classify() {
  // Dead pure ops would become blocks without outputs.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();

  unsigned index = 0;
  for (Operation &op : body.without_terminator()) {
    position[&op] = index++;
    if (isa<GetParamOp>(op)) {
      classOf[&op] = OpClass::Param;
      continue;
    }
    bool dependsOnData = false, readsParam = false;
    std::optional<unsigned> latestUnit;
    for (Value dep : getDeps(&op)) {
      Operation *def = dep.getDefiningOp();
      if (!def) {
        dependsOnData = true;
        continue;
      }
      switch (classOf.lookup(def)) {
      case OpClass::Param:
        readsParam = dependsOnData = true;
        break;
      case OpClass::Free:
        readsParam |= freeReadsParam.lookup(def);
        dependsOnData |= freeDependsOnData.lookup(def);
        break;
      case OpClass::Glue:
      case OpClass::Anchor: {
        unsigned unit = unitOf.lookup(def);
        latestUnit = latestUnit ? std::max(*latestUnit, unit) : unit;
        break;
      }
      }
    }
    bool pure = isMemoryEffectFree(&op);
    bool glue = pure && isGlueOp(&op);
    if (!latestUnit && pure && (!dependsOnData || glue)) {
      classOf[&op] = OpClass::Free;
      freeReadsParam[&op] = readsParam;
      freeDependsOnData[&op] = dependsOnData;
      continue;
    }
    if (latestUnit && glue) {
      classOf[&op] = OpClass::Glue;
      unitOf[&op] = *latestUnit;
      units[*latestUnit].ops.push_back(&op);
      units[*latestUnit].readsParam |= readsParam;
      continue;
    }
    classOf[&op] = OpClass::Anchor;
    unitOf[&op] = units.size();
    Unit &unit = units.emplace_back();
    unit.anchor = &op;
    unit.ops.push_back(&op);
    unit.readsParam = readsParam;
  }

  for (Unit &unit : units) {
    llvm::hash_code hash = 0;
    for (Operation *op : unit.ops)
      op->walk([&](Operation *nested) {
        hash = llvm::hash_combine(
            hash, OperationEquivalence::computeHash(
                      nested, OperationEquivalence::ignoreHashValue,
                      OperationEquivalence::ignoreHashValue,
                      OperationEquivalence::IgnoreLocations));
      });
    unit.signature = hash;
    for (Operation *op : unit.ops)
      if ((unit.layerKey = getLayerKey(op->getLoc())))
        break;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Granularities
//===----------------------------------------------------------------------===//

void BlockFormer::segmentByOp() {
  for (auto [index, unit] : llvm::enumerate(units)) {
    Segment &segment = segments.emplace_back();
    segment.begin = index;
    segment.end = index + 1;
    segment.baseName = describeOp(unit.anchor);
    segment.instance = "op" + std::to_string(index) + "." + segment.baseName;
  }
}

/// Number of distinct block-produced values live across each cut: cut c
/// lies between unit c-1 and unit c; the graph result counts as a use after
/// the last unit.
SmallVector<unsigned> BlockFormer::computeCutLiveness() {
  SmallVector<int> delta(units.size() + 2, 0);
  for (auto [index, unit] : llvm::enumerate(units))
    for (Operation *op : unit.ops)
      for (Value result : op->getResults()) {
        unsigned last = index;
        for (Operation *user : result.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          if (!top)
            continue;
          if (top == body.getTerminator())
            last = units.size();
          else if (auto it = unitOf.find(top); it != unitOf.end())
            last = std::max(last, it->second);
        }
        if (last > index) {
          delta[index + 1] += 1;
          delta[last + 1] -= 1;
        }
      }
  SmallVector<unsigned> live(units.size() + 1, 0);
  int running = 0;
  for (unsigned cut = 0; cut <= units.size(); ++cut) {
    running += delta[cut];
    live[cut] = running;
  }
  return live;
}

/// Finds, in units [begin, end), maximal runs of at least two consecutive
/// repetitions of the same sequence of unit signatures, each repetition
/// reading at least one parameter; recurses on what is left around the
/// best run. The best run covers the most units; ties go to the shorter
/// period (a pair of layers repeats too), then to the alignment whose
/// boundaries cut the fewest live values (a layer boundary crosses the
/// residual stream only), then to the earlier start.
/// Runs found around the best one must have at least a quarter of its period:
/// a second stack of layers (T5's decoder next to its encoder) qualifies,
/// short repeats inside an embedding or a head (BERT's word, position and
/// token-type gathers and adds) do not.
void BlockFormer::detectRuns(
    unsigned begin, unsigned end, unsigned minPeriod,
    SmallVectorImpl<std::pair<unsigned, unsigned>> &runs,
    SmallVectorImpl<unsigned> &periods) {
  if (end - begin < 2)
    return;
  SmallVector<unsigned> readsPrefix(units.size() + 1, 0);
  for (auto [index, unit] : llvm::enumerate(units))
    readsPrefix[index + 1] = readsPrefix[index] + (unit.readsParam ? 1 : 0);

  struct Candidate {
    unsigned start = 0, period = 0, count = 0;
    uint64_t liveSum = 0;
  };
  std::optional<Candidate> best;
  auto better = [](const Candidate &a, const Candidate &b) {
    uint64_t coverA = uint64_t(a.period) * a.count;
    uint64_t coverB = uint64_t(b.period) * b.count;
    if (coverA != coverB)
      return coverA > coverB;
    // Two layers per repetition also repeat; one layer is the unit.
    if (a.period != b.period)
      return a.period < b.period;
    if (a.liveSum != b.liveSum)
      return a.liveSum < b.liveSum;
    return a.start < b.start;
  };

  unsigned length = end - begin;
  for (unsigned period = std::max(1u, minPeriod); period * 2 <= length;
       ++period) {
    unsigned i = begin;
    while (i + period < end) {
      if (units[i].signature != units[i + period].signature) {
        ++i;
        continue;
      }
      unsigned runStart = i;
      while (i + period < end &&
             units[i].signature == units[i + period].signature)
        ++i;
      // [runStart, i + period) is periodic with this period.
      unsigned span = i + period - runStart;
      unsigned count = span / period;
      if (count < 2)
        continue;
      for (unsigned start = runStart; start + count * period <= i + period;
           ++start) {
        Candidate candidate{start, period, count, 0};
        bool everyReadsParam = true;
        for (unsigned r = 0; r < count; ++r) {
          unsigned from = start + r * period;
          if (readsPrefix[from + period] == readsPrefix[from])
            everyReadsParam = false;
          candidate.liveSum += cutLive[from];
        }
        candidate.liveSum += cutLive[start + count * period];
        if (!everyReadsParam)
          continue;
        if (!best || better(candidate, *best))
          best = candidate;
      }
    }
  }
  if (!best)
    return;
  unsigned nextMin = std::max(minPeriod, (best->period + 3) / 4);
  detectRuns(begin, best->start, nextMin, runs, periods);
  runs.push_back({best->start, best->start + best->count * best->period});
  periods.push_back(best->period);
  detectRuns(best->start + best->count * best->period, end, nextMin, runs,
             periods);
}

void BlockFormer::addPlainSegments(unsigned begin, unsigned end,
                                   SmallVectorImpl<Segment> &out) {
  if (begin >= end)
    return;
  Segment &segment = out.emplace_back();
  segment.begin = begin;
  segment.end = end;
}

LogicalResult BlockFormer::segmentByLayer() {
  SmallVector<Segment> result;
  SmallVector<bool> isLayer;

  // Location scopes naming layers, where the importer kept them.
  llvm::StringSet<> keys;
  for (Unit &unit : units)
    if (unit.layerKey)
      keys.insert(*unit.layerKey);

  if (keys.size() >= 2) {
    // Units without a key between two units of the same key belong to it.
    SmallVector<std::optional<std::string>> key(units.size());
    for (auto [index, unit] : llvm::enumerate(units))
      key[index] = unit.layerKey;
    std::optional<std::string> previous;
    for (unsigned index = 0; index < units.size(); ++index) {
      if (key[index]) {
        previous = key[index];
        continue;
      }
      unsigned next = index;
      while (next < units.size() && !key[next])
        ++next;
      if (previous && next < units.size() && key[next] == previous)
        for (unsigned fill = index; fill < next; ++fill)
          key[fill] = previous;
      index = next - 1;
    }
    unsigned index = 0;
    while (index < units.size()) {
      unsigned next = index + 1;
      while (next < units.size() && key[next] == key[index])
        ++next;
      Segment &segment = result.emplace_back();
      segment.begin = index;
      segment.end = next;
      if (key[index])
        segment.instance = *key[index];
      isLayer.push_back(key[index].has_value());
      index = next;
    }
  } else {
    cutLive = computeCutLiveness();
    SmallVector<std::pair<unsigned, unsigned>> runs;
    SmallVector<unsigned> periods;
    detectRuns(0, units.size(), /*minPeriod=*/1, runs, periods);
    if (runs.empty() && !units.empty())
      func.emitWarning("found no repeated layer structure and no layer "
                       "scopes in the locations; the whole function becomes "
                       "one block");
    unsigned cursor = 0;
    for (auto [runIndex, run] : llvm::enumerate(runs)) {
      addPlainSegments(cursor, run.first, result);
      isLayer.resize(result.size(), false);
      unsigned layer = 0;
      for (unsigned start = run.first; start < run.second;
           start += periods[runIndex], ++layer) {
        Segment &segment = result.emplace_back();
        segment.begin = start;
        segment.end = start + periods[runIndex];
        segment.instance =
            (runs.size() == 1 ? "" : "stack" + std::to_string(runIndex) + ".") +
            std::string("layer") + std::to_string(layer);
        isLayer.push_back(true);
      }
      cursor = run.second;
    }
    addPlainSegments(cursor, units.size(), result);
    isLayer.resize(result.size(), false);
  }

  // Names of the non-layer segments and of every block function.
  unsigned numMiddles = 0;
  for (auto [index, segment] : llvm::enumerate(result)) {
    if (isLayer[index]) {
      // Location-named layers share "layer"; structural stacks "layerN".
      segment.baseName = "layer";
      continue;
    }
    bool hasLayerBefore =
        llvm::is_contained(ArrayRef(isLayer).take_front(index), true);
    bool hasLayerAfter =
        llvm::is_contained(ArrayRef(isLayer).drop_front(index + 1), true);
    if (!hasLayerBefore && !hasLayerAfter)
      segment.instance = "model";
    else if (!hasLayerBefore)
      segment.instance = "prologue";
    else if (!hasLayerAfter)
      segment.instance = "epilogue";
    else
      segment.instance = "middle" + std::to_string(numMiddles++);
    segment.baseName = segment.instance;
  }
  segments = std::move(result);
  return success();
}

LogicalResult BlockFormer::segmentCoarse(int64_t numBlocks) {
  if (numBlocks <= 0)
    return func.emitError("pipe-form-blocks: granularity=coarse needs "
                          "num-blocks > 0, got ")
           << numBlocks;
  // Cost of each unit: forward and backward FLOPs.
  CostOptions options;
  ValueOrigins origins(func.getBody(), /*numParams=*/0);
  SmallVector<uint64_t> prefix(units.size() + 1, 0);
  for (auto [index, unit] : llvm::enumerate(units)) {
    uint64_t flops = 0;
    for (Operation *op : unit.ops) {
      FailureOr<OpCost> cost = estimateOpCost(op, origins, options);
      if (failed(cost))
        return failure();
      flops += cost->forwardFlops + cost->backwardInputFlops +
               cost->backwardWeightFlops;
    }
    prefix[index + 1] = prefix[index] + flops;
  }
  unsigned count = std::min<uint64_t>(numBlocks, units.size());
  if (count < uint64_t(numBlocks) && !units.empty())
    func.emitWarning("pipe-form-blocks: only ")
        << units.size() << " op-level blocks to merge into " << numBlocks
        << "; forming " << count;

  // Cut the topological (program) order where the running cost crosses
  // each multiple of total/count, on the nearer side, leaving at least one
  // unit per part.
  SmallVector<unsigned> cuts{0};
  double total = double(prefix.back());
  for (unsigned part = 1; part < count; ++part) {
    double target = total * part / count;
    unsigned lo = cuts.back() + 1;
    unsigned hi = units.size() - (count - part);
    unsigned cut = lo;
    while (cut < hi && double(prefix[cut]) < target)
      ++cut;
    if (cut > lo &&
        target - double(prefix[cut - 1]) < double(prefix[cut]) - target)
      --cut;
    cuts.push_back(cut);
  }
  cuts.push_back(units.size());
  for (unsigned part = 0; part + 1 < cuts.size(); ++part) {
    if (cuts[part] == cuts[part + 1])
      continue;
    Segment &segment = segments.emplace_back();
    segment.begin = cuts[part];
    segment.end = cuts[part + 1];
    segment.instance = "part" + std::to_string(part);
    segment.baseName = segment.instance;
  }
  return success();
}

LogicalResult BlockFormer::segmentOps(StringRef granularity,
                                      int64_t numBlocks) {
  if (granularity == "op")
    segmentByOp();
  else if (granularity == "layer") {
    if (failed(segmentByLayer()))
      return failure();
  } else if (granularity == "coarse") {
    if (failed(segmentCoarse(numBlocks)))
      return failure();
  } else {
    return func.emitError("pipe-form-blocks: unknown granularity '")
           << granularity << "' (expected op, layer or coarse)";
  }

  // Values the graph returns that no block produces (constants, parameters)
  // come from one extra block.
  Segment results;
  for (Value value : body.getTerminator()->getOperands()) {
    Operation *def = value.getDefiningOp();
    if (def &&
        (classOf.lookup(def) == OpClass::Free ||
         classOf.lookup(def) == OpClass::Param) &&
        !llvm::is_contained(results.extraOutputs, value))
      results.extraOutputs.push_back(value);
  }
  if (!results.extraOutputs.empty()) {
    results.begin = results.end = units.size();
    results.instance = results.baseName = "results";
    segments.push_back(std::move(results));
  }

  // Instance names must be unique in the graph (a location scope may come
  // back after another one).
  llvm::StringMap<unsigned> seen;
  for (Segment &segment : segments) {
    unsigned &count = seen[segment.instance];
    if (count == 0) {
      count = 1;
      continue;
    }
    std::string candidate;
    do
      candidate = segment.instance + "_" + std::to_string(count++);
    while (seen.count(candidate));
    seen[candidate] = 1;
    segment.instance = candidate;
  }

  segmentOfUnit.assign(units.size(), 0);
  for (auto [index, segment] : llvm::enumerate(segments))
    for (unsigned unit = segment.begin; unit < segment.end; ++unit)
      segmentOfUnit[unit] = index;
  return success();
}

//===----------------------------------------------------------------------===//
// Outlining
//===----------------------------------------------------------------------===//

std::string BlockFormer::uniqueSymbol(StringRef base) {
  std::string name = sanitizeSymbol(base);
  if (usedSymbols.insert(name).second)
    return name;
  for (unsigned suffix = 1;; ++suffix) {
    std::string candidate = name + "_" + std::to_string(suffix);
    if (usedSymbols.insert(candidate).second)
      return candidate;
  }
}

/// Returns an existing block structurally identical to `candidate` (and
/// erases the candidate), or names and keeps the candidate.
BlockOp BlockFormer::dedup(BlockOp candidate, StringRef baseName) {
  llvm::hash_code hash =
      llvm::hash_combine(candidate.getFunctionType(), candidate.getNumParams());
  candidate.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  SmallVector<BlockOp, 1> &bucket = blocksByHash[static_cast<size_t>(hash)];
  for (BlockOp existing : bucket) {
    if (existing.getFunctionType() != candidate.getFunctionType() ||
        existing.getNumParams() != candidate.getNumParams())
      continue;
    if (OperationEquivalence::isRegionEquivalentTo(
            &existing.getBody(), &candidate.getBody(),
            OperationEquivalence::IgnoreLocations)) {
      candidate.erase();
      return existing;
    }
  }
  candidate.setSymName(uniqueSymbol(baseName));
  bucket.push_back(candidate);
  return candidate;
}

LogicalResult BlockFormer::build() {
  MLIRContext *context = module.getContext();
  for (Operation &op : *module.getBody())
    if (auto name =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      usedSymbols.insert(name.getValue());
  usedSymbols.erase(func.getSymName());

  OpBuilder builder(func);
  auto graph = GraphOp::create(builder, func.getLoc(), func.getSymName(),
                               func.getFunctionType(), func.getArgAttrsAttr(),
                               func.getResAttrsAttr());
  Block *graphBody = new Block();
  graph.getBody().push_back(graphBody);
  IRMapping graphMap;
  for (BlockArgument arg : body.getArguments())
    graphMap.map(arg, graphBody->addArgument(arg.getType(), arg.getLoc()));
  OpBuilder graphBuilder = OpBuilder::atBlockEnd(graphBody);
  builder.setInsertionPoint(graph);

  for (auto [segmentIndex, segment] : llvm::enumerate(segments)) {
    SmallVector<Operation *> members;
    for (unsigned unit = segment.begin; unit < segment.end; ++unit)
      llvm::append_range(members, units[unit].ops);
    llvm::sort(members, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });

    // Pass 1: the parameters and inputs the segment reads, in first-use
    // order, so that identical layers get identical signatures.
    llvm::MapVector<StringAttr, Type> params;
    llvm::SetVector<Value> inputs;
    llvm::DenseSet<Operation *> visitedFree;
    std::function<void(Value)> collect = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (!def) {
        inputs.insert(value);
        return;
      }
      if (isMember(def, segmentIndex))
        return;
      switch (classOf.lookup(def)) {
      case OpClass::Param: {
        auto read = cast<GetParamOp>(def);
        params.insert({read.getParamAttr().getAttr(), read.getType()});
        return;
      }
      case OpClass::Free:
        if (visitedFree.insert(def).second)
          for (Value dep : getDeps(def))
            collect(dep);
        return;
      case OpClass::Glue:
      case OpClass::Anchor:
        inputs.insert(value);
        return;
      }
    };
    for (Operation *op : members)
      for (Value dep : getDeps(op))
        collect(dep);
    for (Value value : segment.extraOutputs)
      collect(value);

    // Outputs: member results used outside the segment, in program order.
    SmallVector<Value> outputs;
    for (Operation *op : members)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          if (top &&
              (top == body.getTerminator() || !isMember(top, segmentIndex))) {
            outputs.push_back(result);
            break;
          }
        }
    llvm::append_range(outputs, segment.extraOutputs);

    // Pass 2: the block.
    SmallVector<Type> argTypes;
    for (auto &[symbol, type] : params)
      argTypes.push_back(type);
    for (Value input : inputs)
      argTypes.push_back(input.getType());
    SmallVector<Type> resultTypes;
    for (Value output : outputs)
      resultTypes.push_back(output.getType());
    Location loc = members.empty() ? func.getLoc() : members.front()->getLoc();
    auto block =
        BlockOp::create(builder, loc, "__pipe_candidate",
                        FunctionType::get(context, argTypes, resultTypes),
                        params.size(), CostAttr(), ArrayAttr(), ArrayAttr());
    Block *entry = new Block();
    block.getBody().push_back(entry);
    llvm::DenseMap<StringAttr, Value> paramArgs;
    for (auto &[symbol, type] : params)
      paramArgs[symbol] = entry->addArgument(type, loc);
    IRMapping map;
    for (Value input : inputs)
      map.map(input, entry->addArgument(input.getType(), input.getLoc()));

    OpBuilder inner = OpBuilder::atBlockEnd(entry);
    std::function<void(Value)> materialize = [&](Value value) {
      if (map.contains(value))
        return;
      Operation *def = value.getDefiningOp();
      if (!def || isMember(def, segmentIndex))
        return;
      if (auto read = dyn_cast<GetParamOp>(def)) {
        map.map(value, paramArgs.lookup(read.getParamAttr().getAttr()));
        return;
      }
      for (Value dep : getDeps(def))
        materialize(dep);
      inner.clone(*def, map);
    };
    for (Operation *op : members) {
      for (Value dep : getDeps(op))
        materialize(dep);
      inner.clone(*op, map);
    }
    for (Value value : segment.extraOutputs)
      materialize(value);
    SmallVector<Value> returned;
    for (Value output : outputs)
      returned.push_back(map.lookup(output));
    ReturnOp::create(inner, loc, returned);

    block = dedup(block, segment.baseName);

    // The run.
    SmallVector<Value> runInputs;
    for (Value input : inputs)
      runInputs.push_back(graphMap.lookup(input));
    SmallVector<Attribute> paramRefs;
    for (auto &[symbol, type] : params)
      paramRefs.push_back(FlatSymbolRefAttr::get(symbol));
    auto run = RunOp::create(graphBuilder, loc, resultTypes,
                             StringAttr::get(context, segment.instance),
                             FlatSymbolRefAttr::get(block.getSymNameAttr()),
                             runInputs, ArrayAttr::get(context, paramRefs));
    for (auto [output, result] : llvm::zip(outputs, run.getOutputs()))
      graphMap.map(output, result);
  }

  SmallVector<Value> graphResults;
  for (Value value : body.getTerminator()->getOperands())
    graphResults.push_back(graphMap.lookup(value));
  ReturnOp::create(graphBuilder, func.getLoc(), graphResults);

  func.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct FormBlocksPass : public pipe::impl::PipeFormBlocksBase<FormBlocksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp func = findFunction(module);
    if (!func)
      return signalPassFailure();
    if (!llvm::hasSingleElement(func.getBody())) {
      func.emitError("pipe-form-blocks: expects @")
          << func.getSymName()
          << " to have a single basic block (structured control flow only)";
      return signalPassFailure();
    }
    if (!isa<func::ReturnOp>(func.getBody().front().getTerminator())) {
      func.emitError("pipe-form-blocks: expects @")
          << func.getSymName() << " to end in func.return";
      return signalPassFailure();
    }
    for (Operation &op : func.getBody().front())
      if (auto call = dyn_cast<func::CallOp>(op))
        if (call.getCallee() == func.getSymName()) {
          call.emitError("pipe-form-blocks: recursive call of the model "
                         "function");
          return signalPassFailure();
        }
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(func, module);
        uses && !uses->empty()) {
      InFlightDiagnostic diag =
          func.emitError("pipe-form-blocks: @")
          << func.getSymName()
          << " is referenced elsewhere; it cannot be replaced by a graph";
      diag.attachNote(uses->begin()->getUser()->getLoc()) << "used here";
      return signalPassFailure();
    }

    BlockFormer former(module, func);
    if (failed(former.classify()) ||
        failed(former.segmentOps(granularity, numBlocks)) ||
        failed(former.build()))
      return signalPassFailure();
  }

  func::FuncOp findFunction(ModuleOp module) {
    SmallVector<func::FuncOp> candidates;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        candidates.push_back(func);
    for (func::FuncOp func : candidates)
      if (func.getSymName() == funcName)
        return func;
    // The default name is a convention, not a requirement.
    if (funcName == "forward" && candidates.size() == 1)
      return candidates.front();
    mlir::emitError(module.getLoc(), "pipe-form-blocks: found no function @")
        << funcName << " with a body"
        << (candidates.empty() ? "" : "; set func=<name>");
    return {};
  }
};

} // namespace
