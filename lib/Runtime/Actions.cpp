//===- Actions.cpp - What the pipe_rt_act_* entry points share ------------===//

#include "Actions.h"

#include "Format.h"

using namespace pipe_rt;

int pipe_rt::fail(pipe_rt_device_ctx *ctx, int status, const std::string &msg) {
  if (ctx->error.empty()) {
    ctx->error = msg;
    ctx->status = status;
  }
  return status;
}

BufferPtr pipe_rt::gradientOf(pipe_rt_device_ctx *ctx, int param, int step) {
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> lock(ds.mu);
  auto it = ds.grads.find({param, step});
  return it == ds.grads.end() ? nullptr : it->second;
}

std::string pipe_rt::describe(pipe_rt_device_ctx *ctx, const char *action,
                              int stage, int mb, int step) {
  const Manifest &m = *ctx->run->m;
  const RunState &run = *ctx->run;
  std::string s =
      run.localReplicas > 1
          ? format("replica %d device %d: %s", run.replicaOf(ctx->device),
                   run.programDevice(ctx->device), action)
          : format("device %d: %s", ctx->device, action);
  if (stage >= 0 && stage < int(m.stages.size()))
    s += " stage '" + m.stages[stage].name + "'";
  else if (stage != INT32_MIN)
    s += format(" stage %d", stage);
  if (mb >= 0)
    s += format(" mb %d", mb);
  return s + format(" step %d", step);
}

int pipe_rt::checkAction(pipe_rt_device_ctx *ctx, const std::string &what,
                         int stage, int mb, int step) {
  if (!ctx || !ctx->run)
    return PIPE_RT_INVALID_ARGUMENT;
  const Manifest &m = *ctx->run->m;
  const ScheduleInfo &x = *ctx->run->schedule;
  if (stage < 0 || stage >= int(m.stages.size()))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no such stage");
  if (m.stages[stage].device != ctx->run->programDevice(ctx->device))
    return fail(
        ctx, PIPE_RT_INVALID_ARGUMENT,
        what + format(": the stage is on device %d", m.stages[stage].device));
  if (mb < -1 || mb >= x.microbatches)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what +
                    format(": micro-batch out of range (%d)", x.microbatches));
  if (step < 0 || step >= x.steps)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": step out of range (%d)", x.steps));
  return PIPE_RT_OK;
}

int pipe_rt::addInto(Buffer &dst, const Buffer &src, const TypeInfo &t,
                     std::string &error) {
  if (t.dtype != DType::F32 && t.dtype != DType::F64)
    return PIPE_RT_OK;
  return dst.memory->add(dst.device, Lane::Compute, dst.data, src.data,
                         t.dtype == DType::F64, t.numel, error);
}

int32_t pipe_rt::commDtype(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return PIPE_RT_DTYPE_F32;
  case DType::F64:
    return PIPE_RT_DTYPE_F64;
  case DType::I32:
    return PIPE_RT_DTYPE_I32;
  case DType::I64:
    return PIPE_RT_DTYPE_I64;
  case DType::I1:
    break;
  }
  return PIPE_RT_DTYPE_BYTES;
}

int pipe_rt::zeros(pipe_rt_device_ctx *ctx, const TypeInfo &t,
                   const std::string &what, BufferPtr &out) {
  std::string error;
  int st =
      ctx->run->memory.alloc(ctx->device, t.bytes(), what.c_str(), out, error);
  if (st == PIPE_RT_OK)
    st = ctx->run->memory->zero(ctx->device, Lane::Compute, out->data,
                                t.bytes(), error);
  if (st != PIPE_RT_OK)
    return fail(ctx, st, what + ": " + error);
  return PIPE_RT_OK;
}

int pipe_rt::accumulate(BufferPtr &slot, BufferPtr b, const TypeInfo &t,
                        std::string &error) {
  if (!slot) {
    slot = std::move(b);
    return PIPE_RT_OK;
  }
  return addInto(*slot, *b, t, error);
}
