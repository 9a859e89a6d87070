//===- Status.cpp - Status codes of the pipe runtime ----------------------===//

#include "pipe/Runtime/Status.h"

extern "C" const char *pipe_rt_status_string(int status) {
  switch (status) {
  case PIPE_RT_OK:
    return "ok";
  case PIPE_RT_INVALID_ARGUMENT:
    return "invalid argument";
  case PIPE_RT_OUT_OF_MEMORY:
    return "out of device memory";
  case PIPE_RT_SIZE_MISMATCH:
    return "send/recv size mismatch";
  case PIPE_RT_TIMEOUT:
    return "watchdog timeout";
  case PIPE_RT_ABORTED:
    return "aborted";
  case PIPE_RT_DEVICE_ERROR:
    return "device error";
  default:
    return "unknown status";
  }
}
