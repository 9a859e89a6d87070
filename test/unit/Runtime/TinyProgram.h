//===- TinyProgram.h - A hand-written program for backend tests -*- C++ -*-===//
//
// A hand-written "compiled program": a manifest, packed block functions
// following the calling convention of Program.h, and device programs that
// call pipe_rt_act_* like generated ones do. The model: y = x * w1 on stage
// s0; z = y * w2 and loss = sum(z^2) with saved 2z on stage s1; 2-vectors.
// Its block functions run either on host buffers (kGpu = false: the
// simulated devices, or the "staged" backend) or on device buffers
// (kGpu = true: PipeRuntimeCUDA; results from mgpuMemAlloc, z = w2 * y as a
// batched 1x1x1 pipe_rt_cuda_gemm, the rest staged through host copies).
// Used by the runtime's tests (ProgramTest.cpp: sessions and actions;
// BackendTest.cpp: host vs staged; CUDA/CudaRuntimeTest.cpp: host vs GPU).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TEST_UNIT_RUNTIME_TINYPROGRAM_H
#define PIPE_TEST_UNIT_RUNTIME_TINYPROGRAM_H

#include "SafetensorsIO.h"

#include "pipe/Runtime/ManifestSchema.h"
#include "pipe/Runtime/Program.h"
#ifdef PIPE_TINY_PROGRAM_CUDA
#include "pipe/Runtime/CUDA.h"
#endif

#include <cstring>
#include <map>
#include <ostream>
#include <string>
#include <unistd.h>
#include <vector>

namespace tiny {

/// Micro-batches per step of the device programs below (and of the
/// manifests makeProgram writes); 2 unless a test sets it.
inline int gM = 2;

/// Sets gM for a scope (a test), and back to 2 after it, however it ends.
struct Microbatches {
  explicit Microbatches(int m) { gM = m; }
  ~Microbatches() { gM = 2; }
};

//===--- Buffer access ----------------------------------------------------===//

inline void *argPtr(void **args, int i) {
  auto *m = static_cast<pipe_rt_memref *>(args[i]);
  return static_cast<float *>(m->aligned) + m->offset;
}

/// Reads `n` floats of argument i.
template <bool kGpu> std::vector<float> read(void **args, int i, int n) {
  std::vector<float> v(n);
#ifdef PIPE_TINY_PROGRAM_CUDA
  if (kGpu) {
    void *s = mgpuStreamCreate();
    mgpuMemcpy(v.data(), argPtr(args, i), n * 4, s);
    mgpuStreamSynchronize(s);
    mgpuStreamDestroy(s);
    return v;
  }
#endif
  std::memcpy(v.data(), argPtr(args, i), n * 4);
  return v;
}

/// Appends result descriptors to args[0].
template <bool kGpu> struct Results {
  int64_t *p;
  explicit Results(void **args) : p(static_cast<int64_t *>(args[0])) {}
  float *alloc(int rank) {
    size_t bytes = rank ? 8 : 4;
    float *mem;
#ifdef PIPE_TINY_PROGRAM_CUDA
    if (kGpu)
      mem = static_cast<float *>(mgpuMemAlloc(bytes, nullptr, false));
    else
#endif
      mem = static_cast<float *>(_mlir_memref_to_llvm_alloc(bytes));
    p[0] = p[1] = reinterpret_cast<int64_t>(mem);
    p[2] = 0;
    if (rank) {
      p[3] = 2;
      p[4] = 1;
    }
    p += 3 + 2 * rank;
    return mem;
  }
  /// A result with the given host values.
  void add(const std::vector<float> &v) {
    float *mem = alloc(v.size() == 1 ? 0 : 1);
#ifdef PIPE_TINY_PROGRAM_CUDA
    if (kGpu) {
      void *s = mgpuStreamCreate();
      mgpuMemcpy(mem, const_cast<float *>(v.data()), v.size() * 4, s);
      mgpuStreamSynchronize(s);
      mgpuStreamDestroy(s);
      return;
    }
#endif
    std::memcpy(mem, v.data(), v.size() * 4);
  }
};

//===--- Block functions --------------------------------------------------===//

template <bool kGpu> std::vector<float> mul(void **a, int i, int j) {
  auto x = read<kGpu>(a, i, 2), y = read<kGpu>(a, j, 2);
  return {x[0] * y[0], x[1] * y[1]};
}
// r0: y = w1 * x; dw1 = dy * x.
template <bool kGpu> void f0(void **a) {
  Results<kGpu>(a).add(mul<kGpu>(a, 1, 2));
}
template <bool kGpu> void g0w(void **a) {
  Results<kGpu>(a).add(mul<kGpu>(a, 3, 2));
}
// r1: z = w2 * y (on the GPU: a batch of two 1x1x1 products); dy = dz * w2;
// dw2 = dz * y.
template <bool kGpu> void f1(void **a) {
#ifdef PIPE_TINY_PROGRAM_CUDA
  if (kGpu) {
    float *z = Results<kGpu>(a).alloc(1);
    void *s = mgpuStreamCreate();
    mgpuMemset32(z, 0, 2, s);
    const int64_t dims[4] = {2, 1, 1, 1}, strides[3] = {1, 1, 1};
    pipe_rt_cuda_gemm(static_cast<float *>(argPtr(a, 1)),
                      static_cast<float *>(argPtr(a, 2)), z, dims, strides,
                      strides, strides, PIPE_RT_CUDA_COMPUTE_F32);
    mgpuStreamSynchronize(s);
    mgpuStreamDestroy(s);
    return;
  }
#endif
  Results<kGpu>(a).add(mul<kGpu>(a, 1, 2));
}
template <bool kGpu> void g1i(void **a) {
  Results<kGpu>(a).add(mul<kGpu>(a, 3, 1));
}
template <bool kGpu> void g1w(void **a) { g0w<kGpu>(a); }
// r2: loss = sum(z^2), saved s = 2z; dz = dloss * s.
template <bool kGpu> void f2(void **a) {
  Results<kGpu> r(a);
  auto z = read<kGpu>(a, 1, 2);
  r.add({z[0] * z[0] + z[1] * z[1]});
  r.add({2 * z[0], 2 * z[1]});
}
template <bool kGpu> void g2i(void **a) {
  float dl = read<kGpu>(a, 2, 1)[0];
  auto s = read<kGpu>(a, 3, 2);
  Results<kGpu>(a).add({dl * s[0], dl * s[1]});
}

//===--- Device programs --------------------------------------------------===//

#define TINY_CHECK(x)                                                          \
  do {                                                                         \
    int32_t s_ = (x);                                                          \
    if (s_)                                                                    \
      return s_;                                                               \
  } while (0)
#define TINY_TOKEN(var, x)                                                     \
  int64_t var = (x);                                                           \
  if (var < 0)                                                                 \
  return int32_t(-var)

/// A send or recv of the program's one edge (s0 -> s1: value 1, f32[2])
/// through the transport ABI, as the lowering emits it; `peer` is the
/// other stage's device.
inline int64_t transfer(pipe_rt_device_ctx *c, bool sending, int kind, int src,
                        int dst, int mb, int peer) {
  void *buffer = nullptr;
  if (int32_t st =
          (sending ? pipe_rt_comm_send_buffer : pipe_rt_comm_recv_buffer)(
              c, kind, src, dst, mb, 0, &buffer))
    return -st;
  pipe_rt_comm *comm = pipe_rt_comm_of(c);
  return sending ? pipe_rt_comm_send(comm, buffer, 2, PIPE_RT_DTYPE_F32, peer)
                 : pipe_rt_comm_recv(comm, buffer, 2, PIPE_RT_DTYPE_F32, peer);
}

/// reduce_grad of param 0 (w1, f32[2]) at step 0 through the transport
/// ABI, as the lowering emits it.
inline int32_t reduceGrad(pipe_rt_device_ctx *c) {
  void *buffer = nullptr;
  if (int32_t st = pipe_rt_comm_grad_buffer(c, 0, 0, &buffer))
    return st;
  return pipe_rt_comm_allreduce(pipe_rt_comm_of(c), buffer, 2,
                                PIPE_RT_DTYPE_F32);
}

inline int32_t oneDevice(pipe_rt_device_ctx *c) {
  for (int mb = 0; mb < gM; ++mb) {
    TINY_CHECK(pipe_rt_act_forward(c, 0, mb, 0, -1, 1, 0));
    TINY_CHECK(pipe_rt_act_forward(c, 1, mb, 0, -1, 1, 0));
  }
  for (int mb = 0; mb < gM; ++mb) {
    TINY_CHECK(pipe_rt_act_backward(c, 1, mb, 0, -1, 0));
    TINY_CHECK(pipe_rt_act_backward(c, 0, mb, 0, -1, 0));
  }
  TINY_CHECK(pipe_rt_act_update(c, 0, 0));
  TINY_CHECK(pipe_rt_act_update(c, 1, 0));
  return 0;
}

template <bool tied> int32_t twoDev0(pipe_rt_device_ctx *c) {
  for (int mb = 0; mb < gM; ++mb) {
    TINY_CHECK(pipe_rt_act_forward(c, 0, mb, 0, -1, 1, 0));
    TINY_TOKEN(t, transfer(c, true, 0, 0, 1, mb, 1));
    TINY_CHECK(pipe_rt_act_wait(c, t));
  }
  for (int mb = 0; mb < gM; ++mb) {
    TINY_TOKEN(t, transfer(c, false, 1, 1, 0, mb, 1));
    TINY_CHECK(pipe_rt_act_wait(c, t));
    TINY_CHECK(pipe_rt_act_backward(c, 0, mb, 0, -1, 1));
    TINY_CHECK(pipe_rt_act_backward(c, 0, mb, 0, -1, 2));
  }
  if (tied)
    TINY_CHECK(reduceGrad(c));
  TINY_CHECK(pipe_rt_act_update(c, 0, 0));
  return 0;
}
/// `update`: false leaves out stage s1's update (an error case).
template <bool tied, bool update = true>
int32_t twoDev1(pipe_rt_device_ctx *c) {
  for (int mb = 0; mb < gM; ++mb) {
    TINY_TOKEN(t, transfer(c, false, 0, 0, 1, mb, 0));
    TINY_CHECK(pipe_rt_act_wait(c, t));
    TINY_CHECK(pipe_rt_act_forward(c, 1, mb, 0, -1, 1, 0));
  }
  for (int mb = 0; mb < gM; ++mb) {
    TINY_CHECK(pipe_rt_act_backward(c, 1, mb, 0, -1, 0));
    TINY_TOKEN(t, transfer(c, true, 1, 1, 0, mb, 0));
    TINY_CHECK(pipe_rt_act_wait(c, t));
  }
  if (tied)
    TINY_CHECK(reduceGrad(c));
  if (update)
    TINY_CHECK(pipe_rt_act_update(c, 1, 0));
  return 0;
}

/// Two steps, PipeDream-style weight versions.
inline int32_t pipedream(pipe_rt_device_ctx *c) {
  for (int s = 0; s < 2; ++s) {
    TINY_CHECK(pipe_rt_act_forward(c, 0, 0, s, 0, 1, 0));
    TINY_CHECK(pipe_rt_act_forward(c, 1, 0, s, 0, 1, 0));
  }
  for (int s = 0; s < 2; ++s) {
    TINY_CHECK(pipe_rt_act_backward(c, 1, 0, s, 0, 0));
    TINY_CHECK(pipe_rt_act_backward(c, 0, 0, s, 0, 0));
    TINY_CHECK(pipe_rt_act_update(c, 0, s));
    TINY_CHECK(pipe_rt_act_update(c, 1, s));
  }
  return 0;
}

/// L2L: parameter server, offload/prefetch, recompute.
inline int32_t l2l(pipe_rt_device_ctx *c) {
  for (int s = 0; s < 2; ++s) {
    TINY_TOKEN(t, pipe_rt_act_ps_load(c, s, 0, -1));
    TINY_CHECK(pipe_rt_act_wait(c, t));
    for (int mb = 0; mb < gM; ++mb) {
      TINY_CHECK(pipe_rt_act_forward(c, s, mb, 0, -1, s == 1, 0));
      TINY_TOKEN(o, pipe_rt_act_offload(c, s, mb, 0));
      TINY_CHECK(pipe_rt_act_wait(c, o));
    }
    TINY_CHECK(pipe_rt_act_ps_release(c, s, 0));
  }
  int64_t updates[2];
  for (int s = 1; s >= 0; --s) {
    TINY_TOKEN(t, pipe_rt_act_ps_load(c, s, 0, -1));
    TINY_CHECK(pipe_rt_act_wait(c, t));
    for (int mb = 0; mb < gM; ++mb) {
      TINY_TOKEN(p, pipe_rt_act_prefetch(c, s, mb, 0));
      TINY_CHECK(pipe_rt_act_wait(c, p));
      if (s == 0)
        TINY_CHECK(pipe_rt_act_recompute(c, s, mb, 0, -1));
      TINY_CHECK(pipe_rt_act_backward(c, s, mb, 0, -1, 0));
    }
    TINY_TOKEN(push, pipe_rt_act_ps_push(c, s, 0));
    TINY_CHECK(pipe_rt_act_wait(c, push));
    TINY_TOKEN(u, pipe_rt_act_ps_update(c, s, 0));
    updates[s] = u;
    TINY_CHECK(pipe_rt_act_ps_release(c, s, 0));
  }
  TINY_CHECK(pipe_rt_act_wait(c, updates[1]));
  TINY_CHECK(pipe_rt_act_wait(c, updates[0]));
  return 0;
}

//===--- Programs and sessions --------------------------------------------===//

struct Program {
  int32_t abi = PIPE_RT_ABI_VERSION;
  std::string manifest;
  std::map<std::string, void *> symbols;
  static void *lookup(void *self, const char *name) {
    auto *p = static_cast<Program *>(self);
    if (!std::strcmp(name, "pipe_program_abi_version"))
      return &p->abi;
    if (!std::strcmp(name, "pipe_program_manifest"))
      return const_cast<char *>(p->manifest.c_str());
    auto it = p->symbols.find(name);
    return it == p->symbols.end() ? nullptr : it->second;
  }
};

enum class Sched { OneDevice, TwoDevices, Tied, PipeDream, L2L };

/// Names the schedule in test listings instead of dumping its bytes.
inline void PrintTo(Sched sched, std::ostream *os) {
  static const char *names[] = {"OneDevice", "TwoDevices", "Tied", "PipeDream",
                                "L2L"};
  *os << names[static_cast<int>(sched)];
}

using DeviceProgram = int32_t (*)(pipe_rt_device_ctx *);

/// The manifest's variables: stage s0 is on device 0, s1 on device
/// `devices - 1`; `tied`: r1 reads w1 instead of w2; `ps`: both stages'
/// params live on the parameter server.
struct Spec {
  int devices = 1;
  bool tied = false;
  std::string kind = "gpipe";
  int microbatches = gM;
  int steps = 1;
  bool ps = false;
  /// The schedule keeps weight versions (a `versions` record).
  bool versions = false;
  DeviceProgram dev0 = nullptr, dev1 = nullptr;
};

template <bool kGpu> Program makeProgram(const Spec &spec) {
  int64_t w2 = spec.tied ? 0 : 1;
  Program p;
  pipe_rt::ManifestWriter m;
  m.type(0, "f32", {2});
  m.type(1, "f32", {});
  m.param(0, "w1", 0, true);
  m.param(1, "w2", 0, true);
  for (int v = 0; v < 3; ++v)
    m.value(v, 0);
  m.value(3, 1);
  m.input(0, 0);
  m.loss(3, 1);
  m.function(0, "f0", {0, 0}, {0});
  m.function(1, "g0w", {0, 0, 0}, {0});
  m.function(2, "f1", {0, 0}, {0});
  m.function(3, "g1i", {0, 0, 0}, {0});
  m.function(4, "g1w", {0, 0, 0}, {0});
  m.function(5, "f2", {0}, {1, 0});
  m.function(6, "g2i", {0, 1, 0}, {0});
  pipe_rt::ManifestRun r0;
  r0.id = 0;
  r0.name = "r0";
  r0.forward = 0;
  r0.bwdWeight = 1;
  r0.params = {0};
  r0.inputs = {0};
  r0.outputs = {1};
  r0.diffInputs = {0};
  r0.diffResults = {0};
  r0.diffParams = {0};
  m.run(r0);
  pipe_rt::ManifestRun r1;
  r1.id = 1;
  r1.name = "r1";
  r1.forward = 2;
  r1.bwdInput = 3;
  r1.bwdWeight = 4;
  r1.params = {w2};
  r1.inputs = {1};
  r1.outputs = {2};
  r1.diffInputs = {0};
  r1.diffResults = {0};
  r1.diffParams = {0};
  m.run(r1);
  pipe_rt::ManifestRun r2;
  r2.id = 2;
  r2.name = "r2";
  r2.forward = 5;
  r2.bwdInput = 6;
  r2.numSaved = 1;
  r2.inputs = {2};
  r2.outputs = {3};
  r2.diffInputs = {0};
  r2.diffResults = {0};
  m.run(r2);
  m.stage(0, "s0", 0, {0});
  m.stage(1, "s1", spec.devices - 1, {1, 2});
  m.edge(0, 1, {1});
  m.schedule(0, "main", spec.kind, spec.devices, spec.microbatches,
             spec.steps, false);
  for (int d = 0; d < spec.devices; ++d)
    m.device(0, d, 0, "dev" + std::to_string(d));
  if (spec.ps) {
    m.ps(0, 0);
    m.ps(0, 1);
  }
  if (spec.versions)
    m.versions(0);
  m.owns(0, 0, {0});
  m.owns(0, 1, {w2});
  p.manifest = m.str();
  p.symbols = {{"f0", (void *)f0<kGpu>},   {"g0w", (void *)g0w<kGpu>},
               {"f1", (void *)f1<kGpu>},   {"g1i", (void *)g1i<kGpu>},
               {"g1w", (void *)g1w<kGpu>}, {"f2", (void *)f2<kGpu>},
               {"g2i", (void *)g2i<kGpu>}};
  if (spec.dev0)
    p.symbols["dev0"] = (void *)spec.dev0;
  if (spec.dev1)
    p.symbols["dev1"] = (void *)spec.dev1;
  return p;
}

template <bool kGpu> Program makeProgram(Sched sched) {
  Spec spec;
  switch (sched) {
  case Sched::OneDevice:
    spec.dev0 = oneDevice;
    break;
  case Sched::TwoDevices:
    spec.devices = 2;
    spec.dev0 = twoDev0<false>;
    spec.dev1 = twoDev1<false>;
    break;
  case Sched::Tied:
    spec.devices = 2;
    spec.tied = true;
    spec.dev0 = twoDev0<true>;
    spec.dev1 = twoDev1<true>;
    break;
  case Sched::PipeDream:
    spec.kind = "pipedream";
    spec.versions = true;
    spec.microbatches = 1;
    spec.steps = 2;
    spec.dev0 = pipedream;
    break;
  case Sched::L2L:
    spec.ps = true;
    spec.dev0 = l2l;
    break;
  }
  return makeProgram<kGpu>(spec);
}

inline std::string writeWeights(const std::string &dir) {
  static const float w1[2] = {0.5f, -1.0f}, w2[2] = {2.0f, 0.25f};
  std::string path =
      dir + "tiny-" + std::to_string(::getpid()) + ".safetensors";
  std::vector<pipe_rt::StWriteTensor> ts = {{"w1", "F32", {2}, w1},
                                            {"w2", "F32", {2}, w2}};
  std::string error;
  pipe_rt::writeSafetensors(path, ts, error);
  return path;
}

inline const std::vector<std::vector<float>> &data() {
  static const std::vector<std::vector<float>> d = {
      {1, 2}, {-1, 0.5f}, {3, -2}, {0.25f, 4}};
  return d;
}

/// How a test session is made.
struct Options {
  pipe_rt_ps_transfer transfer = PIPE_RT_PS_TRANSFER_F32;
  bool sgd = false;      // SGD with momentum 0.9 and lr 0.01; else AdamW
  uint64_t capacity = 0; // per device; 0 = unlimited
  /// Prepares the session (selects a backend); may be null.
  int (*enable)(pipe_rt_session *, std::string &) = nullptr;
};

/// A session of `p` (kept alive by the caller); `error` says why it could
/// not be made or why the last call failed.
struct Session {
  pipe_rt_session *s = nullptr;
  std::string error;
  Session(Program &p, const std::string &weights, const Options &o = {}) {
    pipe_rt_session_options opts;
    pipe_rt_session_options_init(&opts);
    opts.weights_path = weights.c_str();
    opts.optimizer_threads = 1;
    opts.watchdog_seconds = 20;
    opts.ps_transfer = o.transfer;
    opts.capacity_bytes = o.capacity;
    if (o.sgd) {
      opts.optimizer = PIPE_RT_OPTIM_SGD;
      opts.sgd.lr = 0.01f;
      opts.sgd.momentum = 0.9f;
    }
    char buf[512] = "";
    if (pipe_rt_session_create(Program::lookup, &p, &opts, &s, buf,
                               sizeof(buf)))
      error = std::string("create: ") + buf;
    else if (o.enable && o.enable(s, error))
      error = "enable: " + error;
  }
  ~Session() {
    if (s)
      pipe_rt_session_destroy(s);
  }
  /// One run of the first schedule on the data above from row `first` on;
  /// appends its losses.
  bool run(std::vector<float> &losses, int first = 0) {
    int steps = 0, mbs = 0;
    pipe_rt_session_schedule_info(s, 0, nullptr, &mbs, &steps);
    std::vector<const void *> in;
    for (int i = 0; i < steps * mbs; ++i)
      in.push_back(data()[(first + i) % data().size()].data());
    std::vector<float> l(steps * mbs);
    if (pipe_rt_session_run(s, 0, in.data(), l.data())) {
      error = std::string("run: ") + pipe_rt_session_error(s);
      return false;
    }
    losses.insert(losses.end(), l.begin(), l.end());
    return true;
  }
  /// w1 then w2.
  std::vector<float> params() {
    std::vector<float> v(4);
    pipe_rt_session_read_param(s, 0, v.data());
    pipe_rt_session_read_param(s, 1, v.data() + 2);
    return v;
  }
};

/// Runs `rounds` runs of `p`; fills the losses and the final params, or
/// returns the error. `profile` (may be null) receives
/// pipe_rt_session_profile_json of the runs.
inline std::string train(Program &p, const std::string &weights, int rounds,
                         std::vector<float> &losses, std::vector<float> &params,
                         const Options &o = {},
                         std::string *profile = nullptr) {
  Session session(p, weights, o);
  if (!session.error.empty())
    return session.error;
  if (profile)
    pipe_rt_session_enable_trace(session.s, 1);
  losses.clear();
  for (int r = 0; r < rounds; ++r)
    if (!session.run(losses))
      return session.error;
  params = session.params();
  if (profile)
    *profile = pipe_rt_session_profile_json(session.s);
  return "";
}

} // namespace tiny

#endif // PIPE_TEST_UNIT_RUNTIME_TINYPROGRAM_H
