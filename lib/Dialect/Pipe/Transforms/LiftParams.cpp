//===- LiftParams.cpp - Lifts trainable weights into pipe.param symbols ---===//
//
// Front ends hand over weights in three shapes: constants (torch-mlir's
// `dense_resource` literals, TOSA's consts after import), `ml_program`
// globals, or function arguments. Training needs them as named, mutable
// state that several blocks can read, so they become `pipe.param` symbols
// read through `pipe.get_param`. The identity of a weight is its constant
// op, its blob or its global, never its contents: tied embeddings read one
// weight in several places and stay one parameter, while two layers that
// happen to be initialised alike stay two.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/ParamData.h"
#include "pipe/Dialect/Pipe/Transforms/ParamInit.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Support/InputFile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELIFTPARAMS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

/// The discardable attribute that asks for a constant, global or argument
/// to be lifted (a string names the parameter).
static constexpr StringLiteral kParamAttr = "pipe.param";
/// Where a lifted parameter came from, kept on the `pipe.param`.
static constexpr StringLiteral kSourceAttr = "pipe.source";

/// The first name in a location: a NameLoc's, or one nested in a fused or
/// call-site location.
static std::optional<StringRef> getLocName(Location loc) {
  std::optional<StringRef> found;
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner)) {
      found = name.getName().getValue();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// Turns a derived name into a bare MLIR identifier, so that it prints
/// without quotes: letters, digits, `_`, `$` and `.`, not starting with a
/// digit. Names the user gave explicitly are kept as they are.
static std::string sanitize(StringRef name) {
  std::string out;
  for (char c : name)
    out.push_back(llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' ? c
                                                                       : '_');
  if (out.empty() || !(llvm::isAlpha(out[0]) || out[0] == '_'))
    out.insert(out.begin(), 'p');
  return out;
}

namespace {
/// One parameter to create.
struct Lifted {
  RankedTensorType type;
  /// The initial value, null where there is none.
  ElementsAttr init;
  Location loc;
  /// The name the user asked for, if any.
  std::optional<std::string> explicitName;
  /// A derived name (from a location, a resource key or a global), if any.
  std::optional<std::string> derivedName;
  std::string source;
  /// The resource key or global name that a names file may map.
  std::string key;
  /// Filled in when names are assigned.
  std::string name;
  /// Whether the module holds no value for it (an elided blob, a global
  /// without a value, an argument).
  bool missing = false;
  /// Marked frozen whatever the `frozen` option says (running statistics).
  bool frozen = false;

  /// What to replace with `pipe.get_param`.
  SmallVector<arith::ConstantOp> constants;
  ml_program::GlobalOp global;
  SmallVector<Operation *> loads;
  func::FuncOp func;
  unsigned argIndex = 0;
};

struct LiftParamsPass : public pipe::impl::PipeLiftParamsBase<LiftParamsPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Checks a dense_resource value; nullopt when it is missing and
  /// init-missing allows lifting it without a value, failure on error.
  FailureOr<ElementsAttr> checkResource(DenseResourceElementsAttr value,
                                        StringRef what, Location loc);
  /// Finds the function that param-args refers to, checking the indices.
  LogicalResult resolveEntry(ModuleOp module);
  LogicalResult collectGlobals(ModuleOp module);
  LogicalResult collectConstants(ModuleOp module);
  /// Whether `constant` is a splat that lift-splats lifts.
  bool isLiftableSplat(arith::ConstantOp constant) const;
  /// With lift-splats: one constant per use of each splat.
  void untieSplats(ModuleOp module);
  /// Without lift-splats: warns about splats read like per-channel weights.
  void warnAboutPerChannelSplats(ModuleOp module);
  LogicalResult collectArguments(ModuleOp module);
  /// Reads the `names` file into `namesByKey`.
  LogicalResult readNames(ModuleOp module);
  LogicalResult assignNames(ModuleOp module);
  /// Freezes running statistics and, with `init`, gives the weights
  /// without data their initial values.
  LogicalResult initialise();
  void rewrite(ModuleOp module);
  /// Whether weights without data are lifted rather than an error.
  bool liftMissing() const { return initMissing || !init.empty(); }

  std::vector<Lifted> lifted;
  func::FuncOp entryFunc;
  llvm::StringMap<std::string> namesByKey;
  /// Weights lifted without a value because their data is not in the module.
  unsigned missingWeights = 0;
  std::optional<InitKind> initKind;
};
} // namespace

FailureOr<ElementsAttr>
LiftParamsPass::checkResource(DenseResourceElementsAttr value, StringRef what,
                              Location loc) {
  StringRef key = value.getRawHandle().getKey();
  const AsmResourceBlob *blob = getBlob(value);
  if (!blob) {
    if (liftMissing()) {
      ++missingWeights;
      return ElementsAttr();
    }
    return emitError(loc) << "weight " << what
                          << " has no data: its dense_resource blob '" << key
                          << "' is missing from the module's "
                             "dialect_resources (elided?); initialise it "
                             "with init=<kind> (pipe-train --init <kind>), "
                             "or pass init-missing=true to lift it without "
                             "an initial value";
  }
  std::optional<uint64_t> bytes = getTensorBytes(value.getType());
  if (bytes && blob->getData().size() != *bytes)
    return emitError(loc) << "weight " << what << " has a dense_resource blob '"
                          << key << "' of " << blob->getData().size()
                          << " bytes, but " << value.getType() << " needs "
                          << *bytes << " bytes";
  return ElementsAttr(value);
}

LogicalResult LiftParamsPass::collectGlobals(ModuleOp module) {
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    Attribute request = global->getAttr(kParamAttr);
    auto type = dyn_cast<RankedTensorType>(global.getType());
    bool isFloatTensor = type && isa<FloatType>(type.getElementType());
    if (!request && !isFloatTensor)
      continue; // @global_seed and other integer state.

    // A weight is only read; a global that is stored to is state that the
    // model itself updates (running statistics, caches), not a parameter.
    SmallVector<Operation *> loads;
    bool onlyLoads = true;
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(global, module)) {
      for (const SymbolTable::SymbolUse &use : *uses) {
        Operation *user = use.getUser();
        if (isa<ml_program::GlobalLoadOp, ml_program::GlobalLoadConstOp>(user))
          loads.push_back(user);
        else
          onlyLoads = false;
      }
    } else {
      onlyLoads = false;
    }
    if (!onlyLoads || loads.empty()) {
      if (request)
        return global.emitOpError("@")
               << global.getSymName() << " is marked pipe.param but is "
               << (loads.empty() && onlyLoads ? "never read"
                                              : "not only read by "
                                                "global_load/global_load_const")
               << ", so it cannot become a parameter";
      continue;
    }
    if (!type || !type.hasStaticShape())
      return global.emitOpError("@")
             << global.getSymName() << " of type " << global.getType()
             << " cannot become a parameter: it needs a static tensor type";

    Lifted param{type, ElementsAttr(), global.getLoc()};
    std::string what = ("global @" + global.getSymName()).str();
    std::optional<Attribute> value = global.getValue();
    if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(
            value.value_or(Attribute()))) {
      FailureOr<ElementsAttr> init =
          checkResource(resource, what, global.getLoc());
      if (failed(init))
        return failure();
      param.init = *init;
    } else if (auto dense = dyn_cast_or_null<DenseElementsAttr>(
                   value.value_or(Attribute()))) {
      param.init = dense;
    } else if (!liftMissing()) {
      // No value, or #ml_program.extern: initialised elsewhere.
      return global.emitOpError("@")
             << global.getSymName()
             << " has no initial value in the module; initialise it with "
                "init=<kind> (pipe-train --init <kind>), or pass "
                "init-missing=true to lift it without one";
    } else {
      ++missingWeights;
    }
    param.missing = !param.init;
    if (auto name = dyn_cast_or_null<StringAttr>(request))
      param.explicitName = name.str();
    param.derivedName = global.getSymName().str();
    param.source = ("global:@" + global.getSymName()).str();
    param.key = global.getSymName().str();
    param.global = global;
    param.loads = std::move(loads);
    lifted.push_back(std::move(param));
  }
  return success();
}

bool LiftParamsPass::isLiftableSplat(arith::ConstantOp constant) const {
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  return type && isa<FloatType>(type.getElementType()) && dense &&
         dense.isSplat() && type.getNumElements() >= minElements &&
         !constant->hasAttr(kParamAttr) &&
         constant->getParentOfType<func::FuncOp>();
}

/// torch-mlir prints one constant for equal values, so a fresh export's
/// BatchNorm scales (all ones) of one width are a single constant read by
/// every such layer; a splat holds no stored tensor whose identity could
/// tie them, so each use becomes its own weight.
void LiftParamsPass::untieSplats(ModuleOp module) {
  SmallVector<arith::ConstantOp> shared;
  module.walk([&](arith::ConstantOp constant) {
    if (isLiftableSplat(constant) && !constant->hasOneUse() &&
        !constant->use_empty())
      shared.push_back(constant);
  });
  for (arith::ConstantOp constant : shared) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : constant->getUses())
      uses.push_back(&use);
    for (OpOperand *use : llvm::drop_begin(uses)) {
      OpBuilder builder(use->getOwner());
      use->set(builder.clone(*constant)->getResult(0));
    }
  }
}

/// A splat read as a broadcast input of a linalg op (fewer indexing
/// results than loops) is what a fresh export's BatchNorm scale and shift
/// or a zero bias look like: without lift-splats they are literals, and a
/// user who meant to train them would never know.
void LiftParamsPass::warnAboutPerChannelSplats(ModuleOp module) {
  unsigned count = 0;
  std::optional<Location> first;
  module.walk([&](arith::ConstantOp constant) {
    if (!isLiftableSplat(constant))
      return;
    bool perChannel = llvm::any_of(constant->getUses(), [](OpOperand &use) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(use.getOwner());
      return linalgOp && linalgOp.isDpsInput(&use) &&
             linalgOp.getMatchingIndexingMap(&use).getNumResults() <
                 linalgOp.getNumLoops();
    });
    if (!perChannel)
      return;
    ++count;
    if (!first)
      first = constant.getLoc();
  });
  if (count)
    emitWarning(*first)
        << count
        << " splat constant(s) (all elements equal) are read per channel, as "
           "a fresh export's BatchNorm scales and shifts or zero biases are: "
           "they stay literals and are not trained; lift-splats=true "
           "(pipe-train --lift-splats) makes each use of one a parameter";
}

LogicalResult LiftParamsPass::collectConstants(ModuleOp module) {
  // One parameter per dense_resource value, however many constants read it:
  // the blob is one stored tensor. A missing blob is no tensor: torch-mlir
  // elides every large weight under the one key `__elided__`, so each
  // constant reading one is its own parameter.
  llvm::DenseMap<Attribute, unsigned> byResource;
  WalkResult result = module.walk([&](arith::ConstantOp constant) {
    if (!constant->getParentOfType<func::FuncOp>())
      return WalkResult::advance();
    Attribute request = constant->getAttr(kParamAttr);
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    if (request && (!type || !type.getElementType().isIntOrIndexOrFloat())) {
      constant.emitOpError("is marked pipe.param but its type ")
          << constant.getType() << " is not a tensor of integers or floats";
      return WalkResult::interrupt();
    }
    if (!type)
      return WalkResult::advance();
    auto resource = dyn_cast<DenseResourceElementsAttr>(constant.getValue());
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());

    if (!request) {
      // A dense_resource is a stored weight whatever its size (a PReLU's
      // one slope); min-elements keeps small literals literals.
      if (!isa<FloatType>(type.getElementType()) ||
          (!resource && type.getNumElements() < minElements))
        return WalkResult::advance();
      if (!resource && !(dense && (!dense.isSplat() || liftSplats)))
        return WalkResult::advance();
    } else if (!resource && !dense) {
      constant.emitOpError("is marked pipe.param but its value is neither "
                           "dense nor dense_resource");
      return WalkResult::interrupt();
    }

    std::optional<std::string> explicitName;
    if (auto name = dyn_cast_or_null<StringAttr>(request))
      explicitName = name.str();

    if (resource && getBlob(resource)) {
      auto [it, inserted] = byResource.try_emplace(resource, lifted.size());
      if (!inserted) {
        Lifted &param = lifted[it->second];
        if (explicitName && param.explicitName &&
            *explicitName != *param.explicitName) {
          constant.emitOpError("names dense_resource '")
              << resource.getRawHandle().getKey() << "' pipe.param \""
              << *explicitName << "\", but it is already named \""
              << *param.explicitName << "\"";
          return WalkResult::interrupt();
        }
        if (explicitName)
          param.explicitName = explicitName;
        param.constants.push_back(constant);
        return WalkResult::advance();
      }
    }

    Lifted param{type, ElementsAttr(), constant.getLoc()};
    param.explicitName = explicitName;
    if (std::optional<StringRef> locName = getLocName(constant.getLoc()))
      param.derivedName = sanitize(*locName);
    if (resource) {
      StringRef key = resource.getRawHandle().getKey();
      std::string what =
          ("'" + (explicitName ? *explicitName : key) + "'").str();
      FailureOr<ElementsAttr> init =
          checkResource(resource, what, constant.getLoc());
      if (failed(init))
        return WalkResult::interrupt();
      param.init = *init;
      param.missing = !param.init;
      if (!param.derivedName)
        param.derivedName = sanitize(key);
      param.source = ("resource:" + key).str();
      param.key = key.str();
    } else {
      param.init = dense;
      param.source = "constant";
    }
    param.constants.push_back(constant);
    lifted.push_back(std::move(param));
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult LiftParamsPass::resolveEntry(ModuleOp module) {
  entryFunc = nullptr;
  if (!paramArgs.empty()) {
    if (!entry.empty()) {
      entryFunc = module.lookupSymbol<func::FuncOp>(entry);
      if (!entryFunc || entryFunc.isExternal())
        return mlir::emitError(module.getLoc(), "param-args: no function @")
               << entry << " with a body in the module";
    } else {
      for (auto func : module.getOps<func::FuncOp>()) {
        if (func.isExternal() || func.isPrivate())
          continue;
        if (entryFunc)
          return mlir::emitError(module.getLoc(),
                                 "param-args: several public functions (@")
                 << entryFunc.getSymName() << ", @" << func.getSymName()
                 << "); name one with entry=<function>";
        entryFunc = func;
      }
      if (!entryFunc)
        return mlir::emitError(module.getLoc(),
                               "param-args: no public function with a body");
    }
    for (unsigned index : paramArgs)
      if (index >= entryFunc.getNumArguments())
        return entryFunc.emitOpError("param-args: argument index ")
               << index << " is out of range: @" << entryFunc.getSymName()
               << " has " << entryFunc.getNumArguments() << " arguments";
  }
  return success();
}

LogicalResult LiftParamsPass::collectArguments(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    for (unsigned index = 0, e = func.getNumArguments(); index < e; ++index) {
      Attribute request = func.getArgAttr(index, kParamAttr);
      bool listed = func == entryFunc && llvm::is_contained(paramArgs, index);
      if (!request && !listed)
        continue;
      BlockArgument arg = func.getArgument(index);
      Location loc =
          isa<UnknownLoc>(arg.getLoc()) ? func.getLoc() : arg.getLoc();
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !type.hasStaticShape() ||
          !type.getElementType().isIntOrIndexOrFloat())
        return emitError(loc)
               << "argument #" << index << " of @" << func.getSymName()
               << " of type " << arg.getType()
               << " cannot become a parameter: it needs a "
                  "static tensor type of integers or floats";
      // Dropping the argument would silently change what callers pass.
      if (!SymbolTable::symbolKnownUseEmpty(func, module))
        return emitError(loc)
               << "argument #" << index << " of @" << func.getSymName()
               << " cannot become a parameter: @" << func.getSymName()
               << " is called from within the module";

      Lifted param{type, ElementsAttr(), loc};
      if (auto name = dyn_cast_or_null<StringAttr>(request))
        param.explicitName = name.str();
      if (std::optional<StringRef> locName = getLocName(arg.getLoc()))
        param.derivedName = sanitize(*locName);
      param.source =
          ("argument:@" + func.getSymName() + ":" + Twine(index)).str();
      param.func = func;
      param.argIndex = index;
      param.missing = true;
      lifted.push_back(std::move(param));
    }
  }
  return success();
}

LogicalResult LiftParamsPass::readNames(ModuleOp module) {
  namesByKey.clear();
  if (names.empty())
    return success();
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readInputFile(names, /*isText=*/true);
  if (!buffer)
    return mlir::emitError(module.getLoc(), "names: cannot read '")
           << names << "': " << llvm::toString(buffer.takeError());
  // One weight per line: its name first, the key it replaces last (so that
  // `pipe-gen --list-params` output, "name [shape] key", works as it is).
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (auto [index, line] : llvm::enumerate(lines)) {
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    SmallVector<StringRef> tokens;
    line.split(tokens, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    if (tokens.size() < 2)
      return mlir::emitError(module.getLoc(), "names: ")
             << names << ":" << index + 1
             << ": expected '<parameter name> ... <resource key or global "
                "name>', got '"
             << line << "'";
    auto [it, inserted] =
        namesByKey.try_emplace(tokens.back().trim(), tokens.front().str());
    if (!inserted && it->second != tokens.front())
      return mlir::emitError(module.getLoc(), "names: ")
             << names << ":" << index + 1 << ": key '" << tokens.back()
             << "' is already named '" << it->second << "'";
  }
  return success();
}

LogicalResult LiftParamsPass::assignNames(ModuleOp module) {
  // Every symbol that stays is taken; the globals being lifted give their
  // names up to their parameters.
  llvm::StringSet<> used;
  llvm::SmallPtrSet<Operation *, 8> liftedGlobals;
  for (Lifted &param : lifted)
    if (param.global)
      liftedGlobals.insert(param.global);
  for (Operation &op : module.getBody()->getOperations())
    if (auto name =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
        name && !liftedGlobals.contains(&op))
      used.insert(name.getValue());

  // Names the user gave come first and must be free: pipe.param
  // attributes, then the names file.
  for (Lifted &param : lifted) {
    if (param.explicitName || param.key.empty())
      continue;
    auto it = namesByKey.find(param.key);
    if (it != namesByKey.end())
      param.explicitName = it->second;
  }
  for (Lifted &param : lifted) {
    if (!param.explicitName)
      continue;
    if (param.explicitName->empty())
      return emitError(param.loc) << "pipe.param names must not be empty";
    if (!used.insert(*param.explicitName).second)
      return emitError(param.loc)
             << "parameter name '" << *param.explicitName
             << "' is already taken by another parameter or symbol";
    param.name = *param.explicitName;
  }
  auto unique = [&](StringRef base) {
    if (used.insert(base).second)
      return base.str();
    for (unsigned suffix = 1;; ++suffix) {
      std::string candidate = (base + "_" + Twine(suffix)).str();
      if (used.insert(candidate).second)
        return candidate;
    }
  };
  for (Lifted &param : lifted)
    if (param.name.empty() && param.derivedName)
      param.name = unique(*param.derivedName);
  unsigned counter = 0;
  for (Lifted &param : lifted) {
    if (!param.name.empty())
      continue;
    std::string candidate;
    do
      candidate = "p" + std::to_string(counter++);
    while (used.contains(candidate));
    used.insert(candidate);
    param.name = candidate;
  }
  return success();
}

/// The value through which the model reads `param`.
static Value getRead(Lifted &param) {
  if (!param.constants.empty())
    return param.constants.front().getResult();
  if (!param.loads.empty())
    return param.loads.front()->getResult(0);
  return param.func.getArgument(param.argIndex);
}

LogicalResult LiftParamsPass::initialise() {
  for (Lifted &param : lifted) {
    if (!isa<FloatType>(param.type.getElementType()))
      continue;
    WeightUse use = analyzeWeightUse(getRead(param));
    // Statistics of the data the model was trained on, not weights: a
    // gradient step on them would be meaningless.
    param.frozen = use.isStatistic();
    if (!param.missing || !(initKind || (use.isStatistic() && liftMissing())))
      continue;
    param.init =
        getInitialValue(param.type, use, initKind.value_or(InitKind::Zeros),
                        initSeed, param.name);
    if (!param.init)
      return emitError(param.loc)
             << "init: cannot initialise parameter '" << param.name
             << "' of element type " << param.type.getElementType()
             << " (f16, bf16, f32 and f64 only)";
  }
  return success();
}

void LiftParamsPass::rewrite(ModuleOp module) {
  std::optional<llvm::Regex> frozenRegex;
  if (!frozen.empty())
    frozenRegex.emplace(frozen);

  OpBuilder builder(module.getContext());
  builder.setInsertionPointToStart(module.getBody());
  for (Lifted &param : lifted) {
    bool isFrozen =
        param.frozen || (frozenRegex && frozenRegex->match(param.name));
    auto op =
        ParamOp::create(builder, param.loc, param.name, isFrozen, param.type,
                        param.init, StringAttr(), StringAttr());
    op->setAttr(kSourceAttr, builder.getStringAttr(param.source));
  }

  auto symbol = [&](Lifted &param) {
    return FlatSymbolRefAttr::get(module.getContext(), param.name);
  };
  // Arguments are erased per function, all at once, after the rewrite.
  llvm::MapVector<Operation *, llvm::BitVector> erasedArgs;
  // Reads of arguments go to the function's entry, in argument order.
  llvm::DenseMap<Operation *, Operation *> lastArgRead;
  for (Lifted &param : lifted) {
    for (arith::ConstantOp constant : param.constants) {
      builder.setInsertionPoint(constant);
      Value read = GetParamOp::create(builder, constant.getLoc(), param.type,
                                      symbol(param));
      constant.replaceAllUsesWith(read);
      constant.erase();
    }
    for (Operation *load : param.loads) {
      builder.setInsertionPoint(load);
      Value read = GetParamOp::create(builder, load->getLoc(), param.type,
                                      symbol(param));
      load->getResult(0).replaceAllUsesWith(read);
      load->erase();
    }
    if (param.global)
      param.global.erase();
    if (param.func) {
      Operation *&last = lastArgRead[param.func];
      if (last)
        builder.setInsertionPointAfter(last);
      else
        builder.setInsertionPointToStart(&param.func.getBody().front());
      BlockArgument arg = param.func.getArgument(param.argIndex);
      auto read =
          GetParamOp::create(builder, param.loc, param.type, symbol(param));
      arg.replaceAllUsesWith(read);
      last = read;
      llvm::BitVector &bits = erasedArgs[param.func];
      bits.resize(param.func.getNumArguments());
      bits.set(param.argIndex);
    }
  }
  for (auto &[func, bits] : erasedArgs)
    (void)cast<func::FuncOp>(func).eraseArguments(bits);
}

void LiftParamsPass::runOnOperation() {
  ModuleOp module = getOperation();
  lifted.clear();
  missingWeights = 0;
  if (minElements < 0) {
    mlir::emitError(module.getLoc(), "min-elements must not be negative, got ")
        << static_cast<int64_t>(minElements);
    return signalPassFailure();
  }
  if (!frozen.empty()) {
    std::string error;
    if (!llvm::Regex(frozen).isValid(error)) {
      mlir::emitError(module.getLoc(), "frozen: invalid regular expression '")
          << frozen << "': " << error;
      return signalPassFailure();
    }
  }
  initKind.reset();
  if (!init.empty()) {
    initKind = parseInitKind(init);
    if (!initKind) {
      mlir::emitError(module.getLoc(), "init: '")
          << init << "' is not one of " << getInitKindNames();
      return signalPassFailure();
    }
  }
  if (liftSplats)
    untieSplats(module);
  else
    warnAboutPerChannelSplats(module);
  if (failed(readNames(module)) || failed(resolveEntry(module)) ||
      failed(collectGlobals(module)) || failed(collectConstants(module)) ||
      failed(collectArguments(module)) || failed(assignNames(module)) ||
      failed(initialise()))
    return signalPassFailure();
  // On the location, not the op: a warning must not dump the whole module.
  if (missingWeights) {
    InFlightDiagnostic diag = emitWarning(module.getLoc());
    diag << missingWeights
         << " weight(s) have no data in the module (elided or missing "
            "dense_resource blobs, globals without a value): ";
    if (initKind)
      diag << "initialised with " << init << " (seed " << uint64_t(initSeed)
           << ")";
    else
      diag << "lifted without an initial value";
    diag << ", each constant reading a missing blob as its own parameter";
  }
  rewrite(module);
}
