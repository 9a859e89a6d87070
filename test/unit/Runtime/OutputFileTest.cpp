//===- OutputFileTest.cpp - Unit tests for the runtime's atomic writes ----===//

#include "OutputFile.h"
#include "SafetensorsIO.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

using namespace pipe_rt;

namespace {

bool isCharDevice(const char *path) {
  struct stat st;
  return ::stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

// Renaming a temporary over a device would replace it with a regular file.
TEST(OutputFile, DevicesAreNeverReplaced) {
  ASSERT_TRUE(isCharDevice("/dev/null"));
  std::string error;
  EXPECT_FALSE(writeFileAtomically("/dev/null", "bytes", error));
  EXPECT_NE(error.find("/dev/null: not a regular file"), std::string::npos)
      << error;
  EXPECT_TRUE(isCharDevice("/dev/null"));

  error.clear();
  float value = 1.0f;
  std::vector<StWriteTensor> tensors = {{"w", "F32", {1}, &value}};
  EXPECT_FALSE(writeSafetensors("/dev/null", tensors, error));
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
  EXPECT_TRUE(isCharDevice("/dev/null"));
}

TEST(OutputFile, RegularFilesAreReplacedWhole) {
  std::string path = ::testing::TempDir() + "output-file-test.txt";
  std::string error;
  ASSERT_TRUE(writeFileAtomically(path, "first", error)) << error;
  ASSERT_TRUE(writeFileAtomically(path, "second", error)) << error;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  char text[16] = {0};
  size_t n = std::fread(text, 1, sizeof(text) - 1, f);
  std::fclose(f);
  EXPECT_EQ(std::string(text, n), "second");
  std::remove(path.c_str());
}

TEST(OutputFile, PathsOfFilesNotYetWrittenCompareBySpelling) {
  // Outputs usually do not exist yet, nor their directory: `./` and `..`
  // must not make one file two.
  EXPECT_TRUE(isSameFile("no-such-dir/./x.bin", "no-such-dir/x.bin"));
  EXPECT_TRUE(isSameFile("no-such-dir/sub/../x.bin", "./no-such-dir/x.bin"));
  EXPECT_FALSE(isSameFile("no-such-dir/x.bin", "no-such-dir/y.bin"));
  EXPECT_FALSE(isSameFile("no-such-dir/x.bin", "other-dir/x.bin"));
}

} // namespace
