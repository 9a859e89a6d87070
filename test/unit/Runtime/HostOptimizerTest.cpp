//===- HostOptimizerTest.cpp - Tests of the host optimizer kernels --------===//
//
// The scalar references below are written from the update equations in the
// PyTorch documentation of torch.optim.AdamW and torch.optim.SGD and computed
// in double, so they check the semantics, not the kernel's float order.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/HostOptimizer.h"

#include "Bf16.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct Opt {
  explicit Opt(unsigned threads)
      : opt(pipe_rt_host_optimizer_create(threads)) {}
  ~Opt() { pipe_rt_host_optimizer_destroy(opt); }
  pipe_rt_host_optimizer *opt;
};

std::vector<float> randomVector(size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

uint16_t toBF16(float f) { // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}
double fromBF16(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// State of one parameter tensor, in float (kernel) or double (reference).
template <typename T> struct State { std::vector<T> p, s0, s1; };

template <typename T>
State<T> makeState(const std::vector<float> &p0, bool adamStateNonZero) {
  State<T> s;
  s.p.assign(p0.begin(), p0.end());
  s.s0.assign(p0.size(), T(0));
  s.s1.assign(p0.size(), T(0));
  if (adamStateNonZero)
    for (size_t i = 0; i < p0.size(); ++i)
      s.s1[i] = T(1e-6);
  return s;
}

/// torch.optim.AdamW (amsgrad=False, maximize=False), documented algorithm:
///   theta = theta - lr * lambda * theta
///   m = beta1 m + (1 - beta1) g ;  v = beta2 v + (1 - beta2) g^2
///   mhat = m / (1 - beta1^t) ;  vhat = v / (1 - beta2^t)
///   theta = theta - lr * mhat / (sqrt(vhat) + eps)
void referenceAdamW(const pipe_rt_adamw_config &c, int64_t t, double scale,
                    State<double> &s, const std::vector<double> &g) {
  double lr = c.lr, b1 = c.beta1, b2 = c.beta2, eps = c.eps,
         wd = c.weight_decay;
  for (size_t i = 0; i < g.size(); ++i) {
    double gi = g[i] * scale;
    s.p[i] -= lr * wd * s.p[i];
    s.s0[i] = b1 * s.s0[i] + (1 - b1) * gi;
    s.s1[i] = b2 * s.s1[i] + (1 - b2) * gi * gi;
    double mhat = s.s0[i] / (1 - std::pow(b1, double(t)));
    double vhat = s.s1[i] / (1 - std::pow(b2, double(t)));
    s.p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
  }
}

/// torch.optim.SGD, documented algorithm:
///   g = g + lambda theta
///   if mu != 0: b = (t > 1) ? mu b + (1 - tau) g : g
///               g = nesterov ? g + mu b : b
///   theta = theta - lr g
void referenceSGD(const pipe_rt_sgd_config &c, int64_t t, double scale,
                  State<double> &s, const std::vector<double> &g) {
  for (size_t i = 0; i < g.size(); ++i) {
    double gi = g[i] * scale + double(c.weight_decay) * s.p[i];
    if (c.momentum != 0.0f) {
      double mu = c.momentum;
      s.s0[i] = t > 1 ? mu * s.s0[i] + (1 - double(c.dampening)) * gi : gi;
      gi = c.nesterov ? gi + mu * s.s0[i] : s.s0[i];
    }
    s.p[i] -= double(c.lr) * gi;
  }
}

pipe_rt_optim_update makeUpdate(pipe_rt_optim_kind kind, State<float> &s,
                                const void *grad, pipe_rt_grad_dtype dtype,
                                float scale, int64_t step) {
  pipe_rt_optim_update u = {};
  u.kind = kind;
  u.step = step;
  u.param = s.p.data();
  u.state0 = s.s0.data();
  u.state1 = s.s1.data();
  u.grad = grad;
  u.grad_dtype = dtype;
  u.grad_scale = scale;
  u.n = s.p.size();
  return u;
}

const pipe_rt_adamw_config kAdamW = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f};
const pipe_rt_sgd_config kSGD = {1e-2f, 0.9f, 0.1f, 1e-4f, 0};

/// Worst |kernel - reference| / max(|reference|, floor) over the span.
double maxRelError(const std::vector<float> &got,
                   const std::vector<double> &want, double floor) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) /
                                std::max(std::fabs(want[i]), floor));
  return worst;
}

struct Case {
  pipe_rt_optim_kind kind;
  pipe_rt_adamw_config adamw;
  pipe_rt_sgd_config sgd;
  pipe_rt_grad_dtype dtype;
  float scale;
};

/// Runs `steps` steps on the kernel with `threads` workers and on the double
/// reference; returns the worst relative parameter error, and the kernel's
/// final state in *out.
double runAgainstReference(const Case &c, size_t n, int steps, unsigned threads,
                           State<float> *out) {
  std::vector<float> p0 = randomVector(n, 1.0f, 1);
  State<float> k = makeState<float>(p0, false);
  State<double> r = makeState<double>(p0, false);
  Opt opt(threads);
  for (int t = 1; t <= steps; ++t) {
    std::vector<float> g32 = randomVector(n, 0.1f, 100 + t);
    std::vector<uint16_t> g16(n);
    std::vector<double> gRef(n);
    for (size_t i = 0; i < n; ++i) {
      g16[i] = toBF16(g32[i]);
      gRef[i] = c.dtype == PIPE_RT_GRAD_BF16 ? fromBF16(g16[i]) : g32[i];
    }
    const void *grad = c.dtype == PIPE_RT_GRAD_BF16
                           ? static_cast<const void *>(g16.data())
                           : g32.data();
    pipe_rt_optim_update u = makeUpdate(c.kind, k, grad, c.dtype, c.scale, t);
    u.adamw = c.adamw;
    u.sgd = c.sgd;
    EXPECT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_OK);
    if (c.kind == PIPE_RT_OPTIM_ADAMW)
      referenceAdamW(c.adamw, t, c.scale, r, gRef);
    else
      referenceSGD(c.sgd, t, c.scale, r, gRef);
  }
  if (out)
    *out = k;
  return maxRelError(k.p, r.p, 1e-2);
}

// n is deliberately not a multiple of the chunk size (nor of a vector width).
size_t oddSize() { return 2 * pipe_rt_host_optimizer_chunk_size() + 1237; }

TEST(HostOptimizer, AdamWMatchesReference) {
  Case c{PIPE_RT_OPTIM_ADAMW, kAdamW, {}, PIPE_RT_GRAD_F32, 1.0f};
  EXPECT_LT(runAgainstReference(c, oddSize(), 10, 3, nullptr), 1e-6);
}

TEST(HostOptimizer, AdamWWithoutWeightDecayAndGradScale) {
  Case c{PIPE_RT_OPTIM_ADAMW, kAdamW, {}, PIPE_RT_GRAD_F32, 0.5f};
  c.adamw.weight_decay = 0.0f;
  EXPECT_LT(runAgainstReference(c, 5000, 10, 2, nullptr), 1e-6);
}

TEST(HostOptimizer, AdamWWeightDecayMatters) {
  // A large decay must move the weights as the reference says, and the
  // reference without decay must then disagree (the test can fail).
  Case c{PIPE_RT_OPTIM_ADAMW, kAdamW, {}, PIPE_RT_GRAD_F32, 1.0f};
  c.adamw.weight_decay = 0.5f;
  State<float> withDecay;
  EXPECT_LT(runAgainstReference(c, 4000, 10, 2, &withDecay), 1e-6);
  c.adamw.weight_decay = 0.0f;
  State<float> withoutDecay;
  runAgainstReference(c, 4000, 10, 2, &withoutDecay);
  EXPECT_NE(withDecay.p, withoutDecay.p);
}

TEST(HostOptimizer, AdamWBF16Gradients) {
  Case c{PIPE_RT_OPTIM_ADAMW, kAdamW, {}, PIPE_RT_GRAD_BF16, 1.0f};
  EXPECT_LT(runAgainstReference(c, oddSize(), 10, 2, nullptr), 1e-6);
}

TEST(HostOptimizer, SGDMomentumMatchesReference) {
  Case c{PIPE_RT_OPTIM_SGD, {}, kSGD, PIPE_RT_GRAD_F32, 1.0f};
  EXPECT_LT(runAgainstReference(c, oddSize(), 10, 3, nullptr), 1e-6);
}

TEST(HostOptimizer, SGDNesterovBF16Scaled) {
  Case c{PIPE_RT_OPTIM_SGD, {}, kSGD, PIPE_RT_GRAD_BF16, 0.25f};
  c.sgd.dampening = 0.0f;
  c.sgd.nesterov = 1;
  EXPECT_LT(runAgainstReference(c, 7001, 10, 2, nullptr), 1e-6);
}

TEST(HostOptimizer, SGDPlainWithWeightDecay) {
  Case c{PIPE_RT_OPTIM_SGD, {}, kSGD, PIPE_RT_GRAD_F32, 1.0f};
  c.sgd.momentum = 0.0f;
  c.sgd.dampening = 0.0f;
  c.sgd.weight_decay = 0.1f;
  EXPECT_LT(runAgainstReference(c, 3001, 10, 2, nullptr), 1e-6);
}

TEST(HostOptimizer, MultiThreadedEqualsSingleThreadedExactly) {
  for (pipe_rt_optim_kind kind : {PIPE_RT_OPTIM_ADAMW, PIPE_RT_OPTIM_SGD}) {
    for (pipe_rt_grad_dtype dtype : {PIPE_RT_GRAD_F32, PIPE_RT_GRAD_BF16}) {
      Case c{kind, kAdamW, kSGD, dtype, 0.75f};
      State<float> one, four;
      runAgainstReference(c, oddSize(), 4, 1, &one);
      runAgainstReference(c, oddSize(), 4, 4, &four);
      // Bitwise: operator== on float vectors compares values, which for
      // finite non-NaN results is the same as comparing bits.
      EXPECT_EQ(one.p, four.p) << "kind " << kind << " dtype " << dtype;
      EXPECT_EQ(one.s0, four.s0);
      EXPECT_EQ(one.s1, four.s1);
    }
  }
}

// Out of place (param_in, state0_in, state1_in): the same bits as in place,
// written to the output arrays, the inputs untouched, and the bf16 copy of
// the new weights (param_bf16) equal to the runtime's rounding; for every
// kind, both gradient types and on several threads.
TEST(HostOptimizer, OutOfPlaceEqualsInPlace) {
  Opt opt(3);
  size_t n = oddSize();
  std::vector<float> p0(n), g(n);
  for (size_t i = 0; i < n; ++i) {
    p0[i] = std::sin(0.37f * float(i));
    g[i] = std::cos(0.11f * float(i)) * 0.01f;
  }
  std::vector<uint16_t> gb(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &g[i], 4);
    gb[i] = uint16_t(bits >> 16);
  }
  for (pipe_rt_optim_kind kind : {PIPE_RT_OPTIM_ADAMW, PIPE_RT_OPTIM_SGD}) {
    for (pipe_rt_grad_dtype dtype : {PIPE_RT_GRAD_F32, PIPE_RT_GRAD_BF16}) {
      const void *grad = dtype == PIPE_RT_GRAD_F32 ? (const void *)g.data()
                                                   : (const void *)gb.data();
      State<float> in = makeState<float>(p0, true);
      for (size_t i = 0; i < n; ++i)
        in.s0[i] = 0.001f * float(i % 7);
      State<float> place = in, out = makeState<float>(p0, false);
      for (std::vector<float> *v : {&out.p, &out.s0, &out.s1})
        std::fill(v->begin(), v->end(), -7.0f);
      pipe_rt_optim_update u = makeUpdate(kind, place, grad, dtype, 0.5f, 3);
      u.adamw = kAdamW;
      u.sgd = kSGD;
      ASSERT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_OK);
      State<float> before = in;
      u = makeUpdate(kind, out, grad, dtype, 0.5f, 3);
      u.adamw = kAdamW;
      u.sgd = kSGD;
      u.param_in = in.p.data();
      u.state0_in = in.s0.data();
      u.state1_in = in.s1.data();
      std::vector<uint16_t> bf16(n, 0xdead);
      u.param_bf16 = bf16.data();
      ASSERT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_OK);
      EXPECT_EQ(out.p, place.p) << "kind " << kind << " dtype " << dtype;
      std::vector<uint16_t> rounded(n);
      pipe_rt::narrowToBf16(rounded.data(), out.p.data(), int64_t(n));
      EXPECT_EQ(bf16, rounded) << "kind " << kind << " dtype " << dtype;
      EXPECT_EQ(out.s0, place.s0);
      if (kind == PIPE_RT_OPTIM_ADAMW) {
        EXPECT_EQ(out.s1, place.s1);
      }
      EXPECT_EQ(in.p, before.p);
      EXPECT_EQ(in.s0, before.s0);
      EXPECT_EQ(in.s1, before.s1);
    }
  }
}

TEST(HostOptimizer, EmptySpan) {
  Opt opt(2);
  pipe_rt_optim_update u = {};
  u.kind = PIPE_RT_OPTIM_ADAMW;
  u.adamw = kAdamW;
  u.step = 1;
  u.grad_scale = 1.0f;
  u.n = 0; // null arrays are allowed for an empty span
  EXPECT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_OK);
  pipe_rt_optim_task *task = nullptr;
  ASSERT_EQ(pipe_rt_host_optimizer_submit(opt.opt, &u, &task), PIPE_RT_OK);
  EXPECT_EQ(pipe_rt_host_optimizer_wait(opt.opt, task), PIPE_RT_OK);
}

TEST(HostOptimizer, InvalidArguments) {
  Opt opt(1);
  std::vector<float> p(8, 1.0f), g(8, 0.1f);
  State<float> s = makeState<float>(p, false);
  pipe_rt_optim_update u =
      makeUpdate(PIPE_RT_OPTIM_ADAMW, s, g.data(), PIPE_RT_GRAD_F32, 1, 0);
  u.adamw = kAdamW;
  EXPECT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_INVALID_ARGUMENT)
      << "step 0";
  u.step = 1;
  u.state1 = nullptr;
  EXPECT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_INVALID_ARGUMENT);
  u = makeUpdate(PIPE_RT_OPTIM_SGD, s, g.data(), PIPE_RT_GRAD_F32, 1, 1);
  u.sgd = kSGD;
  u.sgd.nesterov = 1; // nesterov with dampening: torch rejects it too
  EXPECT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_INVALID_ARGUMENT);
  pipe_rt_optim_task *task = reinterpret_cast<pipe_rt_optim_task *>(1);
  EXPECT_EQ(pipe_rt_host_optimizer_submit(opt.opt, &u, &task),
            PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(task, nullptr);
  EXPECT_EQ(p, s.p) << "a rejected update must not touch the weights";
}

TEST(HostOptimizer, AsyncSubmitWait) {
  // Several tasks in flight at once, on separate parameters; the results
  // must equal running them one by one.
  const size_t n = oddSize();
  const int numTasks = 4;
  std::vector<State<float>> async, sync;
  std::vector<std::vector<float>> grads;
  for (int t = 0; t < numTasks; ++t) {
    std::vector<float> p0 = randomVector(n, 1.0f, 7 + t);
    async.push_back(makeState<float>(p0, false));
    sync.push_back(makeState<float>(p0, false));
    grads.push_back(randomVector(n, 0.1f, 70 + t));
  }
  Opt opt(3);
  std::vector<pipe_rt_optim_task *> tasks(numTasks, nullptr);
  for (int t = 0; t < numTasks; ++t) {
    pipe_rt_optim_update u =
        makeUpdate(PIPE_RT_OPTIM_ADAMW, async[t], grads[t].data(),
                   PIPE_RT_GRAD_F32, 1.0f, 1);
    u.adamw = kAdamW;
    ASSERT_EQ(pipe_rt_host_optimizer_submit(opt.opt, &u, &tasks[t]),
              PIPE_RT_OK);
    ASSERT_NE(tasks[t], nullptr);
  }
  // Wait in reverse order: handles are independent of queue order.
  for (int t = numTasks - 1; t >= 0; --t)
    EXPECT_EQ(pipe_rt_host_optimizer_wait(opt.opt, tasks[t]), PIPE_RT_OK);
  Opt single(1);
  for (int t = 0; t < numTasks; ++t) {
    pipe_rt_optim_update u =
        makeUpdate(PIPE_RT_OPTIM_ADAMW, sync[t], grads[t].data(),
                   PIPE_RT_GRAD_F32, 1.0f, 1);
    u.adamw = kAdamW;
    ASSERT_EQ(pipe_rt_host_optimizer_run(single.opt, &u), PIPE_RT_OK);
    EXPECT_EQ(async[t].p, sync[t].p) << "task " << t;
    EXPECT_NE(async[t].p, std::vector<float>(n, 0.0f));
  }
}

//===----------------------------------------------------------------------===//
// Instruction-set variants: identical bits, and the documented float formula
//===----------------------------------------------------------------------===//

std::vector<pipe_rt_optim_isa> availableIsas() {
  std::vector<pipe_rt_optim_isa> isas;
  for (pipe_rt_optim_isa isa :
       {PIPE_RT_OPTIM_ISA_BASELINE, PIPE_RT_OPTIM_ISA_AVX2,
        PIPE_RT_OPTIM_ISA_AVX512})
    if (pipe_rt_optim_isa_available(isa))
      isas.push_back(isa);
  return isas;
}

TEST(HostOptimizer, IsaSelection) {
  EXPECT_EQ(pipe_rt_optim_isa_available(PIPE_RT_OPTIM_ISA_BASELINE), 1);
  EXPECT_EQ(pipe_rt_optim_isa_available(pipe_rt_optim_isa(7)), 0);
  EXPECT_STREQ(pipe_rt_optim_isa_name(PIPE_RT_OPTIM_ISA_BASELINE), "baseline");
  EXPECT_STREQ(pipe_rt_optim_isa_name(PIPE_RT_OPTIM_ISA_AVX2), "avx2");
  EXPECT_STREQ(pipe_rt_optim_isa_name(PIPE_RT_OPTIM_ISA_AVX512), "avx512");
  EXPECT_STREQ(pipe_rt_optim_isa_name(pipe_rt_optim_isa(7)), "unknown");
  pipe_rt_optim_isa def = pipe_rt_host_optimizer_default_isa();
  EXPECT_EQ(pipe_rt_optim_isa_available(def), 1) << int(def);
  if (!std::getenv("PIPE_RT_OPTIM_ISA")) { // else the variable chose it
    EXPECT_EQ(def, availableIsas().back()) << "default is not the widest";
  }
  Opt opt(1);
  EXPECT_EQ(pipe_rt_host_optimizer_isa(opt.opt), def);
  for (pipe_rt_optim_isa isa : availableIsas()) {
    EXPECT_EQ(pipe_rt_host_optimizer_set_isa(opt.opt, isa), PIPE_RT_OK);
    EXPECT_EQ(pipe_rt_host_optimizer_isa(opt.opt), isa);
  }
  EXPECT_EQ(pipe_rt_host_optimizer_set_isa(opt.opt, pipe_rt_optim_isa(7)),
            PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(pipe_rt_host_optimizer_set_isa(nullptr, PIPE_RT_OPTIM_ISA_BASELINE),
            PIPE_RT_INVALID_ARGUMENT);
  for (pipe_rt_optim_isa isa :
       {PIPE_RT_OPTIM_ISA_AVX2, PIPE_RT_OPTIM_ISA_AVX512})
    if (!pipe_rt_optim_isa_available(isa)) {
      EXPECT_EQ(pipe_rt_host_optimizer_set_isa(opt.opt, isa),
                PIPE_RT_INVALID_ARGUMENT);
    }
  std::printf("[ INFO     ] available:");
  for (pipe_rt_optim_isa isa : availableIsas())
    std::printf(" %s", pipe_rt_optim_isa_name(isa));
  std::printf("; default %s\n", pipe_rt_optim_isa_name(def));
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// Index of the first element whose bits differ (two NaNs count as equal:
/// which NaN payload survives an operation on two NaNs depends on operand
/// order, which the compiler may swap), or -1.
long firstDifference(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (bitsOf(a[i]) != bitsOf(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i])))
      return long(i);
  return -1;
}

/// A gradient with awkward values mixed in: zeros of both signs, values
/// whose square is subnormal or overflows, subnormals, infinities, NaN.
std::vector<float> awkwardGradient(size_t n, unsigned seed, bool specials) {
  std::vector<float> g = randomVector(n, 0.1f, seed);
  if (!specials)
    return g;
  const float odd[] = {0.0f, -0.0f, 1e-23f, -3e-39f, 1e-45f, 2e19f, -3e30f};
  for (size_t i = 0; i < n; i += 13)
    g[i] = odd[(i / 13) % (sizeof(odd) / sizeof(odd[0]))];
  if (n > 500) {
    g[n / 3] = INFINITY;
    g[n / 2] = NAN;
  }
  return g;
}

struct VariantCase {
  const char *name;
  pipe_rt_optim_kind kind;
  pipe_rt_adamw_config adamw;
  pipe_rt_sgd_config sgd;
  float scale;
  int64_t firstStep; // 20000: AdamW's bias correction has rounded to 1.0f
};

std::vector<VariantCase> variantCases() {
  pipe_rt_sgd_config plain = kSGD, nesterov = kSGD, noWd = kSGD;
  plain.momentum = 0.0f;
  plain.dampening = 0.0f;
  nesterov.dampening = 0.0f;
  nesterov.nesterov = 1;
  noWd.weight_decay = 0.0f;
  pipe_rt_adamw_config adamwNoWd = kAdamW;
  adamwNoWd.weight_decay = 0.0f;
  return {
      {"adamw", PIPE_RT_OPTIM_ADAMW, kAdamW, {}, 1.0f, 1},
      {"adamw-scaled-nowd", PIPE_RT_OPTIM_ADAMW, adamwNoWd, {}, 0.5f, 1},
      {"adamw-late", PIPE_RT_OPTIM_ADAMW, kAdamW, {}, 1.0f, 20000},
      {"sgd-plain", PIPE_RT_OPTIM_SGD, {}, plain, 1.0f, 1},
      {"sgd-momentum", PIPE_RT_OPTIM_SGD, {}, kSGD, 0.25f, 1},
      {"sgd-momentum-nowd", PIPE_RT_OPTIM_SGD, {}, noWd, 1.0f, 1},
      {"sgd-nesterov", PIPE_RT_OPTIM_SGD, {}, nesterov, 1.0f, 1},
  };
}

/// Runs 3 steps of `c` with `isa` on a span of n elements that starts
/// `offset` floats into its arrays (so that the span is not vector-aligned
/// when offset != 0); returns param, state0 and state1 after each step.
std::vector<std::vector<float>> runVariant(pipe_rt_optim_isa isa,
                                           const VariantCase &c,
                                           pipe_rt_grad_dtype dtype, size_t n,
                                           size_t offset, bool specials) {
  Opt opt(2);
  EXPECT_EQ(pipe_rt_host_optimizer_set_isa(opt.opt, isa), PIPE_RT_OK);
  std::vector<float> p = randomVector(n + offset, 1.0f, 3);
  std::vector<float> s0 = randomVector(n + offset, 0.01f, 4);
  std::vector<float> s1 = randomVector(n + offset, 1e-4f, 5);
  for (float &x : s1)
    x = std::fabs(x); // a second moment is never negative
  std::vector<std::vector<float>> out;
  for (int k = 0; k < 3; ++k) {
    std::vector<float> g32 = awkwardGradient(n + offset, 50 + k, specials);
    std::vector<uint16_t> g16(g32.size());
    for (size_t i = 0; i < g32.size(); ++i)
      g16[i] = toBF16(g32[i]);
    pipe_rt_optim_update u = {};
    u.kind = c.kind;
    u.adamw = c.adamw;
    u.sgd = c.sgd;
    u.step = c.firstStep + k;
    u.param = p.data() + offset;
    u.state0 = s0.data() + offset;
    u.state1 = s1.data() + offset;
    u.grad = dtype == PIPE_RT_GRAD_BF16
                 ? static_cast<const void *>(g16.data() + offset)
                 : g32.data() + offset;
    u.grad_dtype = dtype;
    u.grad_scale = c.scale;
    u.n = n;
    EXPECT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_OK);
    out.push_back(p);
    out.push_back(s0);
    out.push_back(s1);
  }
  return out;
}

TEST(HostOptimizer, AllIsaVariantsGiveIdenticalBits) {
  std::vector<pipe_rt_optim_isa> isas = availableIsas();
  const size_t chunk = pipe_rt_host_optimizer_chunk_size();
  // Shorter than any vector, odd tails, and several chunks with a tail.
  const size_t sizes[] = {1, 3, 7, 15, 17, 31, 33, 1001, 2 * chunk + 1237};
  int compared = 0;
  for (const VariantCase &c : variantCases()) {
    for (pipe_rt_grad_dtype dtype : {PIPE_RT_GRAD_F32, PIPE_RT_GRAD_BF16}) {
      for (size_t n : sizes) {
        size_t offset = n % 2 == 1 ? 3 : 0; // odd sizes start misaligned
        bool specials = n == 1001;
        auto want = runVariant(isas[0], c, dtype, n, offset, specials);
        for (size_t k = 1; k < isas.size(); ++k) {
          auto got = runVariant(isas[k], c, dtype, n, offset, specials);
          ASSERT_EQ(got.size(), want.size());
          for (size_t a = 0; a < got.size(); ++a) {
            long i = firstDifference(got[a], want[a]);
            EXPECT_EQ(i, -1)
                << pipe_rt_optim_isa_name(isas[k]) << " vs "
                << pipe_rt_optim_isa_name(isas[0]) << ", " << c.name << ", "
                << (dtype == PIPE_RT_GRAD_BF16 ? "bf16" : "fp32") << ", n " << n
                << ", step " << a / 3 + 1 << ", array " << a % 3 << ", element "
                << i << ": " << (i >= 0 ? got[a][size_t(i)] : 0.0f) << " vs "
                << (i >= 0 ? want[a][size_t(i)] : 0.0f);
          }
          ++compared;
        }
      }
    }
  }
  std::printf("[ INFO     ] %d variant runs compared with %s\n", compared,
              pipe_rt_optim_isa_name(isas[0]));
}

/// The formulas of docs/runtime.md "Formulas", literally, in float. This file
/// is compiled with -ffp-contract=off (test/unit/Runtime/CMakeLists.txt), so
/// the compiler evaluates exactly these roundings.
void documentedAdamW(const pipe_rt_adamw_config &c, int64_t step, float scale,
                     float &p, float &m, float &v, float grad) {
  double bc1 = 1.0 - std::pow(double(c.beta1), double(step));
  double bc2 = 1.0 - std::pow(double(c.beta2), double(step));
  float decay = float(1.0 - double(c.lr) * double(c.weight_decay));
  float c1 = float(1.0 - double(c.beta1)), c2 = float(1.0 - double(c.beta2));
  float negStep = float(-double(c.lr) / bc1);
  float bc2Sqrt = float(std::sqrt(bc2));
  float g = grad * scale;
  p = p * decay;
  m = c.beta1 * m + c1 * g;
  v = c.beta2 * v + c2 * (g * g);
  float denom = std::sqrt(v) / bc2Sqrt + c.eps;
  p = p + negStep * (m / denom);
}

void documentedSGD(const pipe_rt_sgd_config &c, int64_t step, float scale,
                   float &p, float &b, float grad) {
  float negLr = -c.lr, damp = float(1.0 - double(c.dampening));
  float g = grad * scale;
  float d = g + c.weight_decay * p;
  float u = d;
  if (c.momentum != 0.0f) {
    b = step == 1 ? d : c.momentum * b + damp * d;
    u = c.nesterov ? d + c.momentum * b : b;
  }
  p = p + negLr * u;
}

TEST(HostOptimizer, EveryIsaMatchesTheDocumentedFormulaBitwise) {
  const size_t n = 4099; // vectors of every width plus a tail
  for (pipe_rt_optim_isa isa : availableIsas()) {
    for (const VariantCase &c : variantCases()) {
      for (pipe_rt_grad_dtype dtype : {PIPE_RT_GRAD_F32, PIPE_RT_GRAD_BF16}) {
        auto got = runVariant(isa, c, dtype, n, 0, false);
        std::vector<float> p = randomVector(n, 1.0f, 3);
        std::vector<float> s0 = randomVector(n, 0.01f, 4);
        std::vector<float> s1 = randomVector(n, 1e-4f, 5);
        for (float &x : s1)
          x = std::fabs(x);
        for (int k = 0; k < 3; ++k) {
          std::vector<float> g = awkwardGradient(n, 50 + k, false);
          int64_t step = c.firstStep + k;
          for (size_t i = 0; i < n; ++i) {
            float gi = dtype == PIPE_RT_GRAD_BF16
                           ? float(fromBF16(toBF16(g[i])))
                           : g[i];
            if (c.kind == PIPE_RT_OPTIM_ADAMW)
              documentedAdamW(c.adamw, step, c.scale, p[i], s0[i], s1[i], gi);
            else
              documentedSGD(c.sgd, step, c.scale, p[i], s0[i], gi);
          }
          const std::vector<float> *want[] = {&p, &s0, &s1};
          for (int a = 0; a < 3; ++a)
            EXPECT_EQ(firstDifference(got[3 * k + a], *want[a]), -1)
                << pipe_rt_optim_isa_name(isa) << ", " << c.name << ", "
                << (dtype == PIPE_RT_GRAD_BF16 ? "bf16" : "fp32") << ", step "
                << k + 1 << ", array " << a;
        }
      }
    }
  }
}

TEST(HostOptimizer, ChunkBoundariesFollowParamAlignment) {
  // Whatever the alignment of param, every element is updated exactly once:
  // SGD with lr -1, no decay, no momentum adds the gradient once.
  const size_t chunk = pipe_rt_host_optimizer_chunk_size();
  for (size_t offset : {0, 1, 5, 15}) {
    for (size_t n : {chunk - 3, chunk + 9, chunk + 16, 3 * chunk + 5}) {
      std::vector<float> p(n + offset, 0.0f), g(n + offset, 1.0f);
      Opt opt(3);
      pipe_rt_optim_update u = {};
      u.kind = PIPE_RT_OPTIM_SGD;
      u.sgd = {-1.0f, 0.0f, 0.0f, 0.0f, 0};
      u.step = 1;
      u.param = p.data() + offset;
      u.grad = g.data() + offset;
      u.grad_dtype = PIPE_RT_GRAD_F32;
      u.grad_scale = 1.0f;
      u.n = n;
      ASSERT_EQ(pipe_rt_host_optimizer_run(opt.opt, &u), PIPE_RT_OK);
      for (size_t i = 0; i < n + offset; ++i)
        ASSERT_EQ(p[i], i < offset ? 0.0f : 1.0f)
            << "offset " << offset << " n " << n << " element " << i;
    }
  }
}

} // namespace
