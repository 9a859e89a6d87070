//===- Format.h - printf-style messages for the runtime ---------*- C++ -*-===//
//
// Private to the runtime (and its CUDA flavour): the one formatter every
// error message and progress line goes through.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_RUNTIME_FORMAT_H
#define PIPE_LIB_RUNTIME_FORMAT_H

#include <string>

struct pipe_rt_channel_key;

namespace pipe_rt {

/// vsnprintf into a std::string of whatever length the message needs.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/// "activation s0->s1 mb 3 step 0": a transfer's channel key, as every
/// message about a transfer names it.
std::string describeChannelKey(const pipe_rt_channel_key &key);

} // namespace pipe_rt

#endif // PIPE_LIB_RUNTIME_FORMAT_H
