//===- Format.cpp - printf-style messages for the runtime -----------------===//

#include "Format.h"

#include "pipe/Runtime/Devices.h"

#include <cstdarg>
#include <cstdio>

std::string pipe_rt::format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list measure;
  va_copy(measure, ap);
  int length = std::vsnprintf(nullptr, 0, fmt, measure);
  va_end(measure);
  std::string text(length > 0 ? size_t(length) : 0, '\0');
  if (length > 0)
    std::vsnprintf(text.data(), text.size() + 1, fmt, ap);
  va_end(ap);
  return text;
}

std::string pipe_rt::describeChannelKey(const pipe_rt_channel_key &k) {
  const char *kind = k.kind == PIPE_RT_CHANNEL_ACTIVATION ? "activation"
                     : k.kind == PIPE_RT_CHANNEL_GRADIENT ? "gradient"
                                                          : "message";
  return format("%s s%d->s%d mb %d step %d", kind, k.src_stage, k.dst_stage,
                k.micro_batch, k.step);
}
