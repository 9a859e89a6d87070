//===- NamePattern.cpp - Parameter-name patterns --------------------------===//

#include "pipe/Support/NamePattern.h"

using namespace mlir::pipe;

llvm::Expected<NamePattern> NamePattern::parse(llvm::StringRef text) {
  NamePattern pattern;
  pattern.text = text.str();
  llvm::StringRef body = text;
  if (body.consume_front("re:")) {
    auto regex = std::make_unique<llvm::Regex>(body);
    std::string error;
    if (!regex->isValid(error))
      return llvm::createStringError("invalid regular expression '" + body +
                                     "': " + error);
    pattern.matcher = std::move(regex);
    return std::move(pattern);
  }
  llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(body);
  if (!glob)
    return llvm::createStringError("invalid glob '" + body +
                                   "': " + llvm::toString(glob.takeError()));
  pattern.matcher = std::move(*glob);
  return std::move(pattern);
}

bool NamePattern::matches(llvm::StringRef name) const {
  if (auto *glob = std::get_if<llvm::GlobPattern>(&matcher))
    return glob->match(name);
  return std::get<std::unique_ptr<llvm::Regex>>(matcher)->match(name);
}
