//===- Format.cpp - printf-style messages for the runtime -----------------===//

#include "Format.h"

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
