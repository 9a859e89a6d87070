//===- InputNesting.cpp - Cheap nesting estimate of textual MLIR ----------===//

#include "pipe/Support/InputNesting.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;
using llvm::StringRef;

namespace {

bool isBareStart(char c) { return llvm::isAlpha(c) || c == '_'; }
bool isBareChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}
/// Characters of `%x`, `@x`, `^x`, `#x`, `!x` names (MLIR's suffix-id).
bool isSuffixChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

/// One open bracket, and the affine operators pending inside it.
struct Frame {
  char closer;
  unsigned ops = 0;
};

class Scanner {
public:
  Scanner(StringRef text, unsigned limit, uint64_t expansionLimit)
      : text(text), limit(limit), expansionLimit(expansionLimit) {
    frames.push_back({'\0'});
  }

  NestingEstimate run();

private:
  /// Records that nesting `depth` is reached at `pos`; true to stop.
  bool reach(uint64_t depth, size_t pos) {
    if (inDefinition && depth > definitionDepth)
      definitionDepth = depth;
    if (depth <= best.depth)
      return false;
    best.depth = depth > UINT32_MAX ? UINT32_MAX : unsigned(depth);
    best.offset = pos;
    return limit != 0 && depth > limit;
  }
  /// Ends the expression pending in the innermost bracket.
  void resetOps() {
    total -= frames.back().ops;
    frames.back().ops = 0;
  }
  bool open(char closer, size_t pos) {
    frames.push_back({closer});
    ++total;
    return reach(total, pos);
  }
  void close(char closer) {
    // A closer that does not match the innermost bracket (the `>` of `>=`)
    // closes nothing; ignoring it can only overcount.
    if (frames.size() == 1 || frames.back().closer != closer)
      return;
    total -= frames.back().ops + 1;
    frames.pop_back();
  }
  bool affineOp(size_t pos) {
    ++frames.back().ops;
    ++total;
    return reach(total, pos);
  }
  /// Records a use of alias `name` at `pos` that stands for `bytes` bytes;
  /// true to stop.
  bool expand(StringRef name, uint64_t bytes, size_t pos) {
    uint64_t extra = bytes == UINT64_MAX   ? bytes
                     : bytes > name.size() ? bytes - name.size()
                                           : 0;
    if (inDefinition) {
      definitionExtra = llvm::SaturatingAdd(definitionExtra, extra);
      return false;
    }
    best.expandedBytes = llvm::SaturatingAdd(best.expandedBytes, extra);
    if (expansionLimit == 0 || best.expandedBytes <= expansionLimit)
      return false;
    best.expansionOffset = pos;
    return true;
  }
  void finishDefinition(size_t end) {
    if (!inDefinition)
      return;
    inDefinition = false;
    // A top-level `!t = ...` may also be an op's type and its initializer;
    // keeping the larger values never undercounts.
    Alias &alias = aliases[definitionName];
    alias.depth = std::max(alias.depth, definitionDepth);
    // The printer keeps locations, affine maps and integer sets as aliases;
    // everything else is printed in full at every use.
    StringRef value = text.slice(definitionValue, end).ltrim();
    uint64_t bytes = value.starts_with("loc(") ||
                             value.starts_with("affine_map<") ||
                             value.starts_with("affine_set<")
                         ? definitionName.size()
                         : llvm::SaturatingAdd<uint64_t>(end - definitionValue,
                                                         definitionExtra);
    alias.bytes = std::max(alias.bytes, bytes);
  }
  bool atTopLevel() const { return frames.size() == 1; }

  StringRef text;
  unsigned limit;
  uint64_t expansionLimit;
  NestingEstimate best;
  llvm::SmallVector<Frame> frames;
  uint64_t total = 0;

  struct Alias {
    uint64_t depth = 0;
    uint64_t bytes = 0;
  };
  llvm::StringMap<Alias> aliases;
  bool inDefinition = false;
  bool definitionHasValue = false;
  std::string definitionName;
  uint64_t definitionDepth = 0;
  size_t definitionValue = 0;
  uint64_t definitionExtra = 0;
};

NestingEstimate Scanner::run() {
  const size_t size = text.size();
  size_t i = 0;
  while (i < size) {
    char c = text[i];
    size_t start = i;

    if (c == '\n') {
      if (inDefinition && definitionHasValue && atTopLevel())
        finishDefinition(i);
      ++i;
      continue;
    }
    if (llvm::isSpace(c)) {
      ++i;
      continue;
    }
    if (atTopLevel() && inDefinition)
      definitionHasValue = true;

    // Comments.
    if (c == '/' && i + 1 < size && text[i + 1] == '/') {
      while (i < size && text[i] != '\n')
        ++i;
      continue;
    }
    // Strings end at an unescaped quote or, as in MLIR's lexer, at a
    // newline (which is an error there).
    if (c == '"') {
      ++i;
      while (i < size && text[i] != '"' && text[i] != '\n')
        i += text[i] == '\\' ? 2 : 1;
      if (i < size && text[i] == '"')
        ++i;
      resetOps();
      continue;
    }
    // File metadata `{-# ... #-}`.
    if (c == '{' && text.substr(i, 3) == "{-#") {
      i += 3;
      if (open('}', start))
        return best;
      continue;
    }
    if (c == '#' && text.substr(i, 3) == "#-}") {
      i += 3;
      close('}');
      continue;
    }
    switch (c) {
    case '(':
    case '[':
    case '{':
    case '<': {
      char closer = c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>';
      ++i;
      if (open(closer, start))
        return best;
      continue;
    }
    case ')':
    case ']':
    case '}':
    case '>':
      ++i;
      close(c);
      continue;
    case '-':
      if (i + 1 < size && text[i + 1] == '>') {
        i += 2;
        resetOps();
        continue;
      }
      [[fallthrough]];
    case '+':
    case '*':
      ++i;
      if (affineOp(start))
        return best;
      continue;
    case ',':
    case ':':
    case '=':
      ++i;
      resetOps();
      continue;
    default:
      break;
    }

    // Prefixed names: aliases and their definitions, SSA values, symbols,
    // block labels.
    if (c == '#' || c == '!' || c == '%' || c == '@' || c == '^') {
      ++i;
      while (i < size && isSuffixChar(text[i]))
        ++i;
      StringRef name = text.slice(start, i);
      if (c == '%' || name.size() == 1)
        continue; // SSA names may appear inside affine expressions.
      if (c == '@' || c == '^') {
        resetOps();
        continue;
      }
      // An alias definition `#name = ...` or `!name = ...` at top level.
      if (atTopLevel()) {
        size_t j = i;
        while (j < size && llvm::isSpace(text[j]))
          ++j;
        if (j < size && text[j] == '=' &&
            (j + 1 >= size || text[j + 1] != '=')) {
          finishDefinition(start);
          // If `name` is known, this is an op's type followed by `=` (or an
          // invalid redefinition): count it as a use too.
          auto known = aliases.find(name);
          if (known != aliases.end() &&
              (reach(total + known->second.depth, start) ||
               expand(name, known->second.bytes, start)))
            return best;
          inDefinition = true;
          definitionHasValue = false;
          definitionName = name.str();
          definitionDepth = 0;
          definitionValue = j + 1;
          definitionExtra = 0;
          resetOps();
          i = j + 1;
          continue;
        }
      }
      resetOps();
      auto it = aliases.find(name);
      if (it != aliases.end() && (reach(total + it->second.depth, start) ||
                                  expand(name, it->second.bytes, start)))
        return best;
      continue;
    }

    // Numbers, including `4x4xf32` and `1.0e-05`.
    if (llvm::isDigit(c)) {
      bool isFloat = false;
      ++i;
      while (i < size) {
        char d = text[i];
        if (d == '.')
          isFloat = true;
        if (isBareChar(d) || (isFloat && (d == '-' || d == '+') &&
                              (text[i - 1] == 'e' || text[i - 1] == 'E'))) {
          ++i;
          continue;
        }
        break;
      }
      continue;
    }

    // Bare identifiers and keywords; three of them are affine operators.
    if (isBareStart(c)) {
      ++i;
      while (i < size && isBareChar(text[i]))
        ++i;
      StringRef word = text.slice(start, i);
      if (word == "floordiv" || word == "ceildiv" || word == "mod")
        if (affineOp(start))
          return best;
      continue;
    }

    // Anything else (`?`, `.`, garbage bytes) neither nests nor separates.
    ++i;
  }
  return best;
}

} // namespace

NestingEstimate mlir::pipe::estimateNesting(StringRef text,
                                            unsigned nestingLimit,
                                            uint64_t expansionLimit) {
  return Scanner(text, nestingLimit, expansionLimit).run();
}
