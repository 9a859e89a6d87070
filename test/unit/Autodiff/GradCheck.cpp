//===- GradCheck.cpp - JIT gradient checks against finite differences -----===//

#include "GradCheck.h"

#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace pipetest;

namespace {

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

ArgSpec specOf(StringRef name, Type type) {
  ArgSpec spec;
  spec.name = name.str();
  auto tensor = cast<RankedTensorType>(type);
  spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  spec.isInt = isa<IntegerType, IndexType>(tensor.getElementType());
  spec.isFloat = isa<FloatType>(tensor.getElementType());
  return spec;
}

const char *kLowering =
    "pipe-f32-to-f64,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "convert-linalg-to-loops,lower-affine,convert-scf-to-cf,"
    "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,"
    "convert-math-to-funcs,convert-math-to-llvm,convert-math-to-libm,"
    "convert-to-llvm,reconcile-unrealized-casts";

} // namespace

CompiledGraph::CompiledGraph(const std::string &source,
                             const std::string &recompute,
                             const std::string &graphName,
                             const std::string &afterDifferentiate)
    : graph(graphName) {
  initializeOnce();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registry.insert<pipe::PipeDialect>();
  context.appendDialectRegistry(registry);

  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    os << diag.getLocation() << ": " << diag.str() << "\n";
    for (Diagnostic &note : diag.getNotes())
      os << "  note: " << note.str() << "\n";
    return success();
  });

  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  if (!module) {
    errorText = "parse failed:\n" + diagnostics;
    return;
  }
  auto graphOp = module->lookupSymbol<pipe::GraphOp>(graph);
  if (!graphOp) {
    errorText = "no pipe.graph @" + graph;
    return;
  }
  llvm::StringSet<> used;
  for (auto run : graphOp.getBody().getOps<pipe::RunOp>())
    for (Attribute ref : run.getParams())
      used.insert(cast<FlatSymbolRefAttr>(ref).getValue());
  for (auto param : module->getOps<pipe::ParamOp>())
    if (used.contains(param.getSymName()))
      paramSpecs.push_back(specOf(param.getSymName(), param.getType()));
  for (auto [i, type] : llvm::enumerate(graphOp.getArgumentTypes()))
    inputSpecs.push_back(specOf("input" + std::to_string(i), type));

  auto differentiate = PassManager::on<ModuleOp>(&context);
  std::string first = "pipe-differentiate{recompute=" + recompute + "}";
  if (!afterDifferentiate.empty())
    first += "," + afterDifferentiate;
  if (failed(parsePassPipeline(first, differentiate)) ||
      failed(differentiate.run(*module))) {
    errorText = "pipe-differentiate failed:\n" + diagnostics;
    return;
  }
  {
    llvm::raw_string_ostream ir(diffIR);
    module->print(ir);
  }
  auto toFunc = PassManager::on<ModuleOp>(&context);
  if (failed(parsePassPipeline("pipe-lower-graph-to-func", toFunc)) ||
      failed(toFunc.run(*module))) {
    errorText = "pipe-lower-graph-to-func failed:\n" + diagnostics;
    return;
  }
  // C wrappers for every function, so that tests can call lowered blocks.
  module->walk([&](func::FuncOp fn) {
    fn->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));
  });
  auto lower = PassManager::on<ModuleOp>(&context);
  if (failed(parsePassPipeline(kLowering, lower)) ||
      failed(lower.run(*module))) {
    errorText = "lowering failed:\n" + diagnostics + "\nIR:\n" + diffIR;
    return;
  }
  auto transformer = makeOptimizingTransformer(/*optLevel=*/1,
                                               /*sizeLevel=*/0, nullptr);
  ExecutionEngineOptions options;
  options.transformer = transformer;
  // memrefCopy and friends, for copies bufferization inserts.
  StringRef runtimeLibs[] = {PIPE_MLIR_C_RUNNER_UTILS};
  options.sharedLibPaths = runtimeLibs;
  auto created = ExecutionEngine::create(*module, options);
  if (!created) {
    std::string lowered;
    llvm::raw_string_ostream ir(lowered);
    module->print(ir);
    std::string pipelineText;
    llvm::raw_string_ostream pl(pipelineText);
    differentiate.printAsTextualPipeline(pl);
    pl << "\n";
    lower.printAsTextualPipeline(pl);
    errorText = "JIT failed: " + llvm::toString(created.takeError()) + "\n" +
                pipelineText + "\n" + diagnostics + "\nlowered IR:\n" + lowered;
    return;
  }
  engine = std::move(*created);
}

CompiledGraph::~CompiledGraph() = default;

void CompiledGraph::call(const std::string &fn,
                         const std::vector<HostTensor> &params,
                         const std::vector<HostTensor> &inputs,
                         const std::vector<std::vector<int64_t>> &resultShapes,
                         std::vector<HostTensor> &results) {
  // Fresh copies: bufferized code may write into its argument buffers.
  std::vector<HostTensor> args(params);
  args.insert(args.end(), inputs.begin(), inputs.end());
  std::vector<std::vector<int64_t>> descriptors;
  for (HostTensor &t : args) {
    std::vector<int64_t> d;
    void *data = t.isInt ? static_cast<void *>(t.i.data())
                         : static_cast<void *>(t.f.data());
    d.push_back(reinterpret_cast<intptr_t>(data));
    d.push_back(reinterpret_cast<intptr_t>(data));
    d.push_back(0);
    for (int64_t s : t.shape)
      d.push_back(s);
    int64_t stride = 1;
    std::vector<int64_t> strides(t.shape.size());
    for (int64_t k = static_cast<int64_t>(t.shape.size()) - 1; k >= 0; --k) {
      strides[k] = stride;
      stride *= t.shape[k];
    }
    d.insert(d.end(), strides.begin(), strides.end());
    descriptors.push_back(std::move(d));
  }
  size_t words = 0;
  for (const auto &shape : resultShapes)
    words += 3 + 2 * shape.size();
  std::vector<int64_t> resultWords(words, 0);
  void *resultPtr = resultWords.data();
  std::vector<void *> descriptorPtrs;
  for (auto &d : descriptors)
    descriptorPtrs.push_back(d.data());
  std::vector<void *> packed{&resultPtr};
  for (void *&p : descriptorPtrs)
    packed.push_back(&p);
  if (llvm::Error err = engine->invokePacked("_mlir_ciface_" + fn, packed)) {
    errorText = "invoking " + fn + " failed: " + llvm::toString(std::move(err));
    results.clear();
    for (const auto &shape : resultShapes) {
      HostTensor t;
      t.shape = shape;
      t.f.assign(t.numElements(), std::nan(""));
      results.push_back(std::move(t));
    }
    return;
  }
  results.clear();
  size_t o = 0;
  for (const auto &shape : resultShapes) {
    HostTensor t;
    t.shape = shape;
    size_t rank = shape.size();
    auto *aligned = reinterpret_cast<double *>(resultWords[o + 1]);
    int64_t offset = resultWords[o + 2];
    std::vector<int64_t> strides(resultWords.begin() + o + 3 + rank,
                                 resultWords.begin() + o + 3 + 2 * rank);
    int64_t n = t.numElements();
    t.f.resize(n);
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t rem = flat, pos = offset;
      for (int64_t k = static_cast<int64_t>(rank) - 1; k >= 0; --k) {
        pos += (rem % shape[k]) * strides[k];
        rem /= shape[k];
      }
      t.f[flat] = aligned[pos];
    }
    results.push_back(std::move(t));
    o += 3 + 2 * rank;
  }
}

double CompiledGraph::forward(const std::vector<HostTensor> &params,
                              const std::vector<HostTensor> &inputs) {
  std::vector<HostTensor> results;
  call(graph + "_forward", params, inputs, {{}}, results);
  return results.front().f.front();
}

double CompiledGraph::grad(const std::vector<HostTensor> &params,
                           const std::vector<HostTensor> &inputs,
                           std::vector<HostTensor> &grads) {
  std::vector<std::vector<int64_t>> shapes{{}};
  for (const ArgSpec &p : paramSpecs)
    if (p.isFloat)
      shapes.push_back(p.shape);
  std::vector<HostTensor> results;
  call(graph + "_grad", params, inputs, shapes, results);
  grads.assign(results.begin() + 1, results.end());
  return results.front().f.front();
}

HostTensor pipetest::randomTensor(const ArgSpec &spec, const InitSpec &init,
                                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostTensor t;
  t.shape = spec.shape;
  t.isInt = spec.isInt;
  int64_t n = t.numElements();
  if (spec.isInt) {
    std::uniform_int_distribution<int64_t> dist(
        0, std::max<int64_t>(init.intHi - 1, 0));
    for (int64_t k = 0; k < n; ++k)
      t.i.push_back(dist(rng));
  } else {
    std::uniform_real_distribution<double> dist(init.lo, init.hi);
    for (int64_t k = 0; k < n; ++k)
      t.f.push_back(dist(rng));
  }
  return t;
}

GradCheckResult pipetest::checkGradients(CompiledGraph &graph,
                                         std::vector<HostTensor> params,
                                         const std::vector<HostTensor> &inputs,
                                         double step) {
  GradCheckResult result;
  std::vector<HostTensor> grads;
  double loss = graph.grad(params, inputs, grads);
  double reference = graph.forward(params, inputs);
  llvm::raw_string_ostream os(result.report);
  if (std::abs(loss - reference) > 1e-12 * std::max(1.0, std::abs(reference)))
    os << "loss mismatch: grad " << loss << " vs forward " << reference << "\n";
  size_t g = 0;
  for (size_t p = 0; p < graph.params().size(); ++p) {
    const ArgSpec &spec = graph.params()[p];
    if (!spec.isFloat)
      continue;
    HostTensor &value = params[p];
    const HostTensor &analytic = grads[g++];
    double diff2 = 0, fd2 = 0, an2 = 0;
    for (size_t e = 0; e < value.f.size(); ++e) {
      double orig = value.f[e];
      double h = step * std::max(1.0, std::abs(orig));
      value.f[e] = orig + h;
      double plus = graph.forward(params, inputs);
      value.f[e] = orig - h;
      double minus = graph.forward(params, inputs);
      value.f[e] = orig;
      double fd = (plus - minus) / (2 * h);
      double d = analytic.f[e] - fd;
      diff2 += d * d;
      fd2 += fd * fd;
      an2 += analytic.f[e] * analytic.f[e];
    }
    // The floor keeps finite-difference noise on an identically zero
    // gradient (~1e-11 per element) from counting as a relative error.
    double denom = std::max({std::sqrt(fd2), std::sqrt(an2), 1e-4});
    double rel = std::sqrt(diff2) / denom;
    if (std::isnan(rel))
      rel = 1.0;
    os << "@" << spec.name << ": |fd| = " << std::sqrt(fd2)
       << ", |grad| = " << std::sqrt(an2) << ", rel. error = " << rel << "\n";
    if (rel > result.maxRelError || result.worstParam.empty()) {
      result.maxRelError = std::max(result.maxRelError, rel);
      if (rel >= result.maxRelError)
        result.worstParam = spec.name;
    }
  }
  if (!(std::abs(loss - reference) <=
        1e-12 * std::max(1.0, std::abs(reference))))
    result.maxRelError = std::max(result.maxRelError, 1.0);
  if (!graph.error().empty()) {
    os << graph.error() << "\n";
    result.maxRelError = std::max(result.maxRelError, 1.0);
  }
  return result;
}

const char *pipetest::kMapAliases = R"mlir(
#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr2 = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#rowv = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
)mlir";

static std::string dims(unsigned rank) {
  std::string s = "(";
  for (unsigned d = 0; d < rank; ++d)
    s += (d ? ", d" : "d") + std::to_string(d);
  return s + ")";
}

std::string pipetest::buildOpModule(const OpCase &op, bool viaInputs) {
  std::string m = kMapAliases;
  for (auto &[name, type] : op.params)
    m += "pipe.param @" + name + " : " + type + "\n";
  m += "pipe.param @wloss : " + op.outType + "\n";

  std::string paramArgs, paramTypes, paramRefs, paramValues;
  for (auto &[name, type] : op.params) {
    std::string sep = paramArgs.empty() ? "" : ", ";
    paramArgs += sep + "%" + name + ": " + type;
    paramTypes += sep + type;
    paramRefs += sep + "@" + name;
    paramValues += sep + "%" + name;
  }
  std::string intArgs, intTypes, intValues;
  for (auto &[name, type] : op.intInputs) {
    std::string sep = intArgs.empty() ? "" : ", ";
    intArgs += sep + "%" + name + ": " + type;
    intTypes += sep + type;
    intValues += sep + "%" + name;
  }
  auto join = [](const std::string &a, const std::string &b) {
    return a.empty() ? b : (b.empty() ? a : a + ", " + b);
  };

  if (viaInputs) {
    m += "pipe.block @src params(" + paramArgs + ") () -> (" + paramTypes +
         ") {\n  pipe.return " + paramValues + " : " + paramTypes + "\n}\n";
    m += "pipe.block @op (" + join(paramArgs, intArgs) + ") -> " + op.outType +
         " {\n";
  } else {
    m += "pipe.block @op params(" + paramArgs + ") (" + intArgs + ") -> " +
         op.outType + " {\n";
  }
  m += op.body + "\n  pipe.return %out : " + op.outType + "\n}\n";

  std::string d = dims(op.outRank);
  std::string iters;
  for (unsigned k = 0; k < op.outRank; ++k)
    iters += std::string(k ? ", " : "") + "\"reduction\"";
  m += "pipe.block @loss params(%w: " + op.outType + ") (%y: " + op.outType +
       ") -> tensor<f32> {\n"
       "  %z = arith.constant 0.0 : f32\n"
       "  %e = tensor.empty() : tensor<f32>\n"
       "  %i = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> "
       "tensor<f32>\n"
       "  %r = linalg.generic {indexing_maps = [affine_map<" +
       d + " -> " + d + ">, affine_map<" + d + " -> " + d + ">, affine_map<" +
       d + " -> ()>], iterator_types = [" + iters +
       "]} ins(%y, %w : " + op.outType + ", " + op.outType +
       ") outs(%i : tensor<f32>) {\n"
       "  ^bb0(%a: f32, %b: f32, %acc: f32):\n"
       "    %m = arith.mulf %a, %b : f32\n"
       "    %s = arith.addf %acc, %m : f32\n"
       "    linalg.yield %s : f32\n"
       "  } -> tensor<f32>\n"
       "  pipe.return %r : tensor<f32>\n}\n";

  m += "pipe.graph @g(" + intArgs + ") -> tensor<f32> {\n";
  if (viaInputs) {
    std::string names;
    for (size_t k = 0; k < op.params.size(); ++k)
      names += std::string(k ? ", " : "") + "%s" + std::to_string(k);
    m += "  " + names + " = pipe.run \"src\" @src() params [" + paramRefs +
         "] : () -> (" + paramTypes + ")\n";
    m += "  %y = pipe.run \"op\" @op(" + join(names, intValues) + ") : (" +
         join(paramTypes, intTypes) + ") -> " + op.outType + "\n";
  } else {
    m += "  %y = pipe.run \"op\" @op(" + intValues + ") params [" + paramRefs +
         "] : (" + intTypes + ") -> " + op.outType + "\n";
  }
  m += "  %l = pipe.run \"loss\" @loss(%y) params [@wloss] : (" + op.outType +
       ") -> tensor<f32>\n  pipe.return %l : tensor<f32>\n}\n";
  return m;
}
