//===- JSONUtils.cpp - Helpers for strict JSON readers --------------------===//

#include "pipe/Support/JSONUtils.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::pipe;

std::string mlir::pipe::formatJSONPath(llvm::ArrayRef<JSONPathSegment> path) {
  std::string result;
  llvm::raw_string_ostream os(result);
  for (const JSONPathSegment &segment : path) {
    if (segment.index) {
      os << '[' << *segment.index << ']';
      continue;
    }
    if (!result.empty())
      os << '.';
    os << segment.key;
  }
  return result;
}

namespace {
/// An open object or array while scanning.
struct Frame {
  bool isObject;
  bool expectingKey;
  uint64_t index = 0;     // arrays: the element being read
  std::string currentKey; // objects: the key whose value is being read
  llvm::StringSet<> keys;
};
} // namespace

std::optional<DuplicateJSONKey>
mlir::pipe::findDuplicateJSONKey(llvm::StringRef text) {
  llvm::SmallVector<Frame> stack;
  auto pathTo = [&](size_t depth) {
    llvm::SmallVector<JSONPathSegment> path;
    for (size_t i = 0; i < depth; ++i) {
      if (stack[i].isObject)
        path.push_back({stack[i].currentKey, std::nullopt});
      else
        path.push_back({"", stack[i].index});
    }
    return path;
  };

  for (size_t pos = 0, e = text.size(); pos < e; ++pos) {
    char c = text[pos];
    switch (c) {
    case '{':
      stack.push_back({/*isObject=*/true, /*expectingKey=*/true});
      break;
    case '[':
      stack.push_back({/*isObject=*/false, /*expectingKey=*/false});
      break;
    case '}':
    case ']':
      if (!stack.empty())
        stack.pop_back();
      break;
    case ',':
      if (!stack.empty()) {
        if (stack.back().isObject)
          stack.back().expectingKey = true;
        else
          ++stack.back().index;
      }
      break;
    case '"': {
      // Find the closing quote, skipping escaped characters.
      size_t end = pos + 1;
      while (end < e && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      llvm::StringRef token = text.slice(pos, std::min(end + 1, e));
      pos = end;
      if (stack.empty() || !stack.back().isObject || !stack.back().expectingKey)
        break;
      // Decode escapes so that "a" and "\u0061" count as the same key.
      std::string key;
      if (llvm::Expected<llvm::json::Value> value = llvm::json::parse(token)) {
        if (std::optional<llvm::StringRef> str = value->getAsString())
          key = str->str();
      } else {
        llvm::consumeError(value.takeError());
        key = token.str();
      }
      Frame &frame = stack.back();
      frame.expectingKey = false;
      if (!frame.keys.insert(key).second)
        return DuplicateJSONKey{pathTo(stack.size() - 1), key};
      frame.currentKey = key;
      break;
    }
    default:
      break;
    }
  }
  return std::nullopt;
}
