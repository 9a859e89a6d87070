//===- JSONUtils.h - Helpers for strict JSON readers ------------*- C++ -*-===//
//
// llvm::json::parse keeps the last of several equal keys in an object without
// a word. The project's readers treat a repeated key as an error (a repeated
// tensor name or a field given twice is almost always a mistake), so they run
// this check over the text after it parsed.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_JSONUTILS_H
#define PIPE_SUPPORT_JSONUTILS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::pipe {

/// One step of a path into a JSON document: an object key, or an array index
/// when `index` is set.
struct JSONPathSegment {
  std::string key;
  std::optional<uint64_t> index;
};

/// Renders a path the way error messages show it: `devices[0].memory_bytes`.
std::string formatJSONPath(llvm::ArrayRef<JSONPathSegment> path);

struct DuplicateJSONKey {
  /// Path of the object that repeats the key (empty: the top-level object).
  llvm::SmallVector<JSONPathSegment> path;
  /// The repeated key, unescaped.
  std::string key;
};

/// The first key that appears twice in one object of `text`, if any. `text`
/// must be valid JSON (llvm::json::parse accepted it).
std::optional<DuplicateJSONKey> findDuplicateJSONKey(llvm::StringRef text);

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_JSONUTILS_H
