//===- JSONUtilsTest.cpp - Unit tests for the strict-JSON helpers ---------===//

#include "pipe/Support/JSONUtils.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

std::string findDuplicate(llvm::StringRef text) {
  std::optional<DuplicateJSONKey> dup = findDuplicateJSONKey(text);
  if (!dup)
    return "";
  std::string path = formatJSONPath(dup->path);
  return (path.empty() ? "" : path + ": ") + dup->key;
}

TEST(JSONUtils, NoDuplicates) {
  EXPECT_EQ(findDuplicate(R"({})"), "");
  EXPECT_EQ(findDuplicate(R"([1, "a", "a"])"), "");
  EXPECT_EQ(findDuplicate(R"({"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]})"), "");
  // Strings that look like keys or structure inside values do not count.
  EXPECT_EQ(findDuplicate(R"({"a": "\"a\": {", "b": "}, \"a\""})"), "");
}

TEST(JSONUtils, FindsDuplicatesWithTheirPath) {
  EXPECT_EQ(findDuplicate(R"({"a": 1, "a": 2})"), "a");
  EXPECT_EQ(findDuplicate(R"({"a": 1, "\u0061": 2})"), "a");
  EXPECT_EQ(findDuplicate(R"({"x": {"y": [0, {"k": 1, "k": 2}]}})"),
            "x.y[1]: k");
  EXPECT_EQ(findDuplicate(R"({"d": [{"n": 1}, {"n": 2, "m": 1, "n": 3}]})"),
            "d[1]: n");
  EXPECT_EQ(findDuplicate(R"([[], [{"a\"b": 1, "a\"b": 2}]])"), "[1][0]: a\"b");
}

TEST(JSONUtils, FormatPath) {
  EXPECT_EQ(formatJSONPath({}), "");
  EXPECT_EQ(
      formatJSONPath(
          {{"devices", std::nullopt}, {"", 0}, {"memory_bytes", std::nullopt}}),
      "devices[0].memory_bytes");
}

} // namespace
