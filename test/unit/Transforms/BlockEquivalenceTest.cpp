//===- BlockEquivalenceTest.cpp - Formed graphs compute the original loss -===//
//
// Numerical check of pipe-form-blocks on the generator's tiny models: the
// original `@forward` (weights as inline dense_resource constants) and the
// pipe.graph that --pipe-lift-params + --pipe-form-blocks make of it (lowered
// by --pipe-differentiate + --pipe-lower-graph-to-func to `@forward_forward`,
// which takes the lifted parameters as arguments) are both JIT-compiled
// through the same f32 CPU lowering and run on the same random inputs. Block
// formation only regroups ops into functions, so the losses must agree bit
// for bit (no reassociation happens: LLVM does not fuse or reorder f32 ops
// without fast-math flags, and no pass here changes the arithmetic).
//
//===----------------------------------------------------------------------===//

#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/ModelGen/TransformerGen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;

namespace {

const char *kLowering =
    "symbol-dce,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "convert-linalg-to-loops,lower-affine,convert-scf-to-cf,"
    "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,"
    "convert-math-to-funcs,convert-math-to-llvm,convert-math-to-libm,"
    "convert-to-llvm,reconcile-unrealized-casts";

/// A host buffer: f32 or i64 data, row-major.
struct Buffer {
  SmallVector<int64_t> shape;
  std::vector<float> f;
  std::vector<int64_t> i;
  bool isInt() const { return !i.empty(); }
  void *data() {
    return isInt() ? static_cast<void *>(i.data())
                   : static_cast<void *>(f.data());
  }
};

void initializeOnce() {
  static bool done = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerAllPasses();
    mlir::pipe::registerPipePasses();
    mlir::pipe::registerPipeConversionPasses();
    return true;
  }();
  (void)done;
}

class Fixture {
public:
  Fixture() {
    initializeOnce();
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    pipe::modelgen::registerModelGenDialects(registry);
    registry.insert<pipe::PipeDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(diagnostics);
          os << diag.getLocation() << ": " << diag.str() << "\n";
          return success();
        });
  }

  LogicalResult runPipeline(ModuleOp module, StringRef pipeline) {
    auto pm = PassManager::on<ModuleOp>(&context);
    if (failed(parsePassPipeline(pipeline, pm))) {
      diagnostics += "bad pipeline: " + pipeline.str() + "\n";
      return failure();
    }
    return pm.run(module);
  }

  /// Makes every function but `entry` private (so symbol-dce drops what
  /// `entry` does not call), lowers to LLVM and JIT-compiles; then calls
  /// `entry` on `args` and returns its 0-d f32 result.
  FailureOr<float> compileAndRun(ModuleOp module, StringRef entry,
                                 std::vector<Buffer> args) {
    bool found = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.getSymName() == entry) {
        found = true;
        func->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));
      } else if (!func.isDeclaration()) {
        func.setPrivate();
      }
    }
    if (!found) {
      diagnostics += "no function @" + entry.str() + "\n";
      return failure();
    }
    if (failed(runPipeline(module, kLowering)))
      return failure();
    auto transformer = makeOptimizingTransformer(/*optLevel=*/0,
                                                 /*sizeLevel=*/0, nullptr);
    ExecutionEngineOptions options;
    options.transformer = transformer;
    // Unoptimized code is plenty for tiny models and compiles fastest.
    options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::None;
    StringRef runtimeLibs[] = {PIPE_MLIR_C_RUNNER_UTILS};
    options.sharedLibPaths = runtimeLibs;
    auto engine = ExecutionEngine::create(module, options);
    if (!engine) {
      diagnostics += "JIT failed: " + llvm::toString(engine.takeError());
      return failure();
    }
    // Strided memref descriptors: allocated, aligned, offset, sizes, strides.
    std::vector<std::vector<int64_t>> descriptors;
    for (Buffer &b : args) {
      std::vector<int64_t> d{reinterpret_cast<intptr_t>(b.data()),
                             reinterpret_cast<intptr_t>(b.data()), 0};
      d.insert(d.end(), b.shape.begin(), b.shape.end());
      std::vector<int64_t> strides(b.shape.size());
      int64_t stride = 1;
      for (int64_t k = static_cast<int64_t>(b.shape.size()) - 1; k >= 0; --k) {
        strides[k] = stride;
        stride *= b.shape[k];
      }
      d.insert(d.end(), strides.begin(), strides.end());
      descriptors.push_back(std::move(d));
    }
    int64_t result[3] = {0, 0, 0}; // memref<f32>: allocated, aligned, offset
    void *resultPtr = result;
    std::vector<void *> descriptorPtrs;
    for (auto &d : descriptors)
      descriptorPtrs.push_back(d.data());
    std::vector<void *> packed{&resultPtr};
    for (void *&p : descriptorPtrs)
      packed.push_back(&p);
    if (llvm::Error err =
            (*engine)->invokePacked(("_mlir_ciface_" + entry).str(), packed)) {
      diagnostics += "invoke failed: " + llvm::toString(std::move(err));
      return failure();
    }
    auto *aligned = reinterpret_cast<float *>(result[1]);
    return aligned[result[2]];
  }

  MLIRContext context;
  std::string diagnostics;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};

/// Token ids in [0, vocab); labels likewise with two ignored (-100) entries;
/// rank-1 integer arguments (BERT's next-sentence labels) in [0, 2).
std::vector<Buffer> randomInputs(func::FuncOp forward, int64_t vocab,
                                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Buffer> inputs;
  for (auto [k, type] : llvm::enumerate(forward.getArgumentTypes())) {
    auto tensor = cast<RankedTensorType>(type);
    Buffer b;
    b.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    int64_t n = tensor.getNumElements();
    int64_t hi = tensor.getRank() == 1 ? 2 : vocab;
    std::uniform_int_distribution<int64_t> dist(0, hi - 1);
    for (int64_t e = 0; e < n; ++e)
      b.i.push_back(dist(rng));
    if (k == 1 && n > 3) {
      b.i[1] = -100;
      b.i[n - 2] = -100;
    }
    inputs.push_back(std::move(b));
  }
  return inputs;
}

/// The value of a lifted parameter (an f32 dense or dense_resource).
FailureOr<Buffer> paramValue(pipe::ParamOp param) {
  Buffer b;
  RankedTensorType type = param.getTensorType();
  b.shape.assign(type.getShape().begin(), type.getShape().end());
  if (!type.getElementType().isF32() || !param.getInitialValue())
    return failure();
  Attribute init = *param.getInitialValue();
  if (auto resource = dyn_cast<DenseF32ResourceElementsAttr>(init)) {
    std::optional<ArrayRef<float>> data = resource.tryGetAsArrayRef();
    if (!data || static_cast<int64_t>(data->size()) != type.getNumElements())
      return failure();
    b.f.assign(data->begin(), data->end());
    return b;
  }
  if (auto dense = dyn_cast<DenseFPElementsAttr>(init)) {
    for (APFloat v : dense.getValues<APFloat>())
      b.f.push_back(v.convertToFloat());
    return b;
  }
  return failure();
}

struct Case {
  const char *preset;
  const char *granularity;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << c.preset << " granularity=" << c.granularity;
}

std::string caseName(const testing::TestParamInfo<Case> &info) {
  std::string name =
      std::string(info.param.preset) + "_" + info.param.granularity;
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

class BlockEquivalence : public testing::TestWithParam<Case> {};

TEST_P(BlockEquivalence, GraphLossEqualsOriginalLoss) {
  const Case &c = GetParam();
  Fixture fx;
  std::optional<pipe::modelgen::TransformerConfig> config =
      pipe::modelgen::lookupPreset(c.preset);
  ASSERT_TRUE(config) << c.preset;
  pipe::modelgen::GenerateOptions options;
  options.seed = 7;
  // Random biases and norm scales too, so a misrouted one shows.
  options.randomizeAll = true;
  // Larger weights than the 0.02 default, so that the loss depends visibly
  // on every weight (at 0.02 it is close to ln(vocab) whatever they are).
  options.initStd = 0.5;
  auto generated =
      pipe::modelgen::generateTransformer(fx.context, *config, options);
  ASSERT_TRUE(static_cast<bool>(generated))
      << llvm::toString(generated.takeError());
  ModuleOp original = generated->module.get();
  auto forward = original.lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(forward);
  std::vector<Buffer> inputs = randomInputs(forward, config->vocab, 11);

  OwningOpRef<ModuleOp> formed(original.clone());

  // Block formation, then the graph as a plain function.
  std::string form = "pipe-lift-params,pipe-form-blocks{granularity=" +
                     std::string(c.granularity) + "}";
  ASSERT_TRUE(succeeded(fx.runPipeline(*formed, form))) << fx.diagnostics;
  auto graph = formed->lookupSymbol<pipe::GraphOp>("forward");
  ASSERT_TRUE(graph) << "no pipe.graph @forward";
  size_t numRuns = llvm::range_size(graph.getBody().getOps<pipe::RunOp>());
  EXPECT_GT(numRuns, 1u);
  // The lowered function takes the float parameters the graph reads, in
  // module order, then the graph's inputs.
  llvm::StringSet<> used;
  for (auto run : graph.getBody().getOps<pipe::RunOp>())
    for (Attribute ref : run.getParams())
      used.insert(cast<FlatSymbolRefAttr>(ref).getValue());
  std::vector<Buffer> args;
  for (auto param : formed->getOps<pipe::ParamOp>()) {
    if (!used.contains(param.getSymName()))
      continue;
    FailureOr<Buffer> value = paramValue(param);
    ASSERT_TRUE(succeeded(value))
        << "no f32 value for @" << param.getSymName().str();
    args.push_back(std::move(*value));
  }
  args.insert(args.end(), inputs.begin(), inputs.end());
  ASSERT_TRUE(succeeded(
      fx.runPipeline(*formed, "pipe-differentiate,pipe-lower-graph-to-func")))
      << fx.diagnostics;
  FailureOr<float> graphLoss =
      fx.compileAndRun(*formed, "forward_forward", args);
  ASSERT_TRUE(succeeded(graphLoss)) << fx.diagnostics;

  FailureOr<float> originalLoss = fx.compileAndRun(original, "forward", inputs);
  ASSERT_TRUE(succeeded(originalLoss)) << fx.diagnostics;

  ASSERT_TRUE(std::isfinite(*originalLoss));
  // A loss far from ln(vocab) shows the weights matter at this scale.
  EXPECT_GT(std::fabs(*originalLoss - std::log(double(config->vocab))), 0.05)
      << *originalLoss;
  uint32_t a, b;
  std::memcpy(&a, &*originalLoss, 4);
  std::memcpy(&b, &*graphLoss, 4);
  EXPECT_EQ(a, b) << "original " << *originalLoss << " graph " << *graphLoss
                  << " (" << numRuns << " runs)";
}

INSTANTIATE_TEST_SUITE_P(
    TinyModels, BlockEquivalence,
    testing::Values(Case{"tiny-gpt", "op"}, Case{"tiny-gpt", "layer"},
                    Case{"tiny-gpt", "coarse num-blocks=3"},
                    Case{"tiny-bert", "op"}, Case{"tiny-bert", "layer"},
                    Case{"tiny-bert", "coarse num-blocks=3"},
                    Case{"tiny-t5", "op"}, Case{"tiny-t5", "layer"},
                    Case{"tiny-t5", "coarse num-blocks=3"}),
    caseName);

} // namespace
