//===- NamePattern.h - Parameter-name patterns ------------------*- C++ -*-===//
//
// The patterns that name parameters on the command line (pipe-freeze-params,
// pipe-train --freeze and --lr-group): a glob on the whole name, or `re:`
// and an extended regular expression searched anywhere in it. One matcher,
// so that a pattern names the same parameters for every option.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_NAMEPATTERN_H
#define PIPE_SUPPORT_NAMEPATTERN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Regex.h"

#include <memory>
#include <string>
#include <variant>

namespace mlir::pipe {

class NamePattern {
public:
  /// Parses `text`; an invalid glob or regular expression is an error
  /// quoting it ("invalid glob '...': why").
  static llvm::Expected<NamePattern> parse(llvm::StringRef text);

  bool matches(llvm::StringRef name) const;
  /// The pattern as written (with its `re:` prefix).
  llvm::StringRef getText() const { return text; }

private:
  std::string text;
  std::variant<llvm::GlobPattern, std::unique_ptr<llvm::Regex>> matcher;
};

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_NAMEPATTERN_H
