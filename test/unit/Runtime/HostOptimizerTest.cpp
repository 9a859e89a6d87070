//===- HostOptimizerTest.cpp - Tests of the host optimizer kernels --------===//
//
// The scalar references below are written from the update equations in the
// PyTorch documentation of torch.optim.AdamW and torch.optim.SGD and computed
// in double, so they check the semantics, not the kernel's float order.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/HostOptimizer.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
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

} // namespace
