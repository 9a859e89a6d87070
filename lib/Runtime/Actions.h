//===- Actions.h - What the pipe_rt_act_* entry points share ----*- C++ -*-===//
//
// Private to the runtime: the argument checks, names and error recording of
// the actions of device programs (ComputeActions.cpp, Reductions.cpp,
// Transfers.cpp, ParameterServer.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_ACTIONS_H
#define PIPE_RUNTIME_ACTIONS_H

#include "Executor.h"

#include <string>

namespace pipe_rt {

/// Records the first error of `ctx`'s device; returns `status`.
int fail(pipe_rt_device_ctx *ctx, int status, const std::string &msg);

inline DeviceState &deviceOf(pipe_rt_device_ctx *ctx) {
  return *ctx->run->devices[ctx->device];
}

/// The gradient of param `param` at `step` on `ctx`'s device (null: none).
BufferPtr gradientOf(pipe_rt_device_ctx *ctx, int param, int step);

inline const TypeInfo &valueType(const Manifest &m, int v) {
  return m.types[m.valueTypes[v]];
}

/// "device 1: forward stage 's1' mb 0 step 0".
std::string describe(pipe_rt_device_ctx *ctx, const char *action, int stage,
                     int mb, int step);

/// The name of an action on its trace track: `what` without the device.
inline std::string traceName(const std::string &what) {
  return what.substr(what.find(':') + 2);
}

/// Checks the common action arguments; the stage must be on this device.
int checkAction(pipe_rt_device_ctx *ctx, const std::string &what, int stage,
                int mb, int step);

/// dst += src elementwise for float types (both on `dst`'s device); other
/// types are left alone.
int addInto(Buffer &dst, const Buffer &src, const TypeInfo &t,
            std::string &error);

/// Adds `b` into a gradient/cotangent slot (adopting it when empty).
int accumulate(BufferPtr &slot, BufferPtr b, const TypeInfo &t,
               std::string &error);

/// The transport ABI's element type of `dtype` (pipe/Runtime/Comm.h; i1
/// travels as bytes).
int32_t commDtype(DType dtype);

/// Global gradient-norm clipping before the first update of `step`: the
/// norm over every device's gradients (Reductions.cpp).
int clipGradients(pipe_rt_device_ctx *ctx, int step, const std::string &what);

/// A zeroed buffer of type `t` on `ctx`'s device.
int zeros(pipe_rt_device_ctx *ctx, const TypeInfo &t, const std::string &what,
          BufferPtr &out);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_ACTIONS_H
