//===- MemoryTest.cpp - The memory room: buffers, copies, call scopes -----===//

#include "Memory.h"

#include "pipe/Runtime/Program.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace pipe_rt;

namespace {

/// The host backend's memory over two simulated devices of 4 KiB each.
struct TwoDevices : testing::Test {
  void SetUp() override {
    uint64_t caps[2] = {4096, 4096};
    devs = pipe_rt_devices_create(2, caps, 10);
    ASSERT_TRUE(devs);
    std::string error;
    ASSERT_EQ(memory.create(*stagedBackend(), devs, 2, caps, {}, 10, error),
              PIPE_RT_OK)
        << error;
  }
  void TearDown() override {
    memory.release();
    pipe_rt_devices_destroy(devs);
  }
  uint64_t inUse(int d) {
    uint64_t n = 0;
    memory->usage(d, &n, nullptr);
    return n;
  }
  pipe_rt_devices *devs = nullptr;
  RunMemory memory;
};

TEST_F(TwoDevices, CountsCopiesPerDeviceAndLane) {
  std::string error;
  BufferPtr a, b;
  ASSERT_EQ(memory.alloc(0, 64, "a", a, error), PIPE_RT_OK);
  ASSERT_EQ(memory.alloc(1, 64, "b", b, error), PIPE_RT_OK);
  EXPECT_EQ(inUse(0), 64u);
  float host[16] = {1, 2, 3};
  ASSERT_EQ(memory.toDevice(Lane::H2D, *a, host, 64, error), PIPE_RT_OK);
  ASSERT_EQ(memory.copyPeer(1, b->data, 0, a->data, 64, error), PIPE_RT_OK);
  std::vector<unsigned char> staging;
  int st;
  const unsigned char *view =
      memory.hostView(Lane::D2H, *b, staging, error, st);
  ASSERT_EQ(st, PIPE_RT_OK);
  // Staged: the host cannot address the device, so the view is a copy.
  EXPECT_EQ(view, staging.data());
  EXPECT_EQ(std::memcmp(view, host, 64), 0);
  EXPECT_EQ(memory.copied(0, Lane::H2D), 64u);
  EXPECT_EQ(memory.copied(1, Lane::Compute), 64u);
  EXPECT_EQ(memory.copied(1, Lane::D2H), 64u);
  EXPECT_EQ(memory.copied(0, Lane::D2H), 0u);
  a.reset();
  EXPECT_EQ(inUse(0), 0u);
}

TEST_F(TwoDevices, OverCapacityNamesTheBuffer) {
  std::string error;
  BufferPtr big;
  EXPECT_EQ(memory.alloc(1, 8192, "big one", big, error),
            PIPE_RT_OUT_OF_MEMORY);
  EXPECT_NE(error.find("big one"), std::string::npos) << error;
}

TEST_F(TwoDevices, ACallScopeFreesWhatItsBlockLeft) {
  std::string what = "device 1: forward";
  void *kept;
  {
    CallScope scope(memory.backend(), 1, what);
    scope.enter();
    EXPECT_EQ(callScopeDevice(), 1);
    kept = callScopeAlloc(128);
    void *left = callScopeAlloc(256);
    void *freed = callScopeAlloc(64);
    ASSERT_TRUE(kept && left && freed);
    EXPECT_TRUE(callScopeFree(freed));
    EXPECT_FALSE(callScopeFree(freed));
    // The staged backend's hooks hand out host memory.
    void *host = _mlir_memref_to_llvm_alloc(32);
    ASSERT_TRUE(host);
    scope.leave();
    EXPECT_EQ(callScopeDevice(), -1);
    EXPECT_EQ(inUse(1), 384u);
    EXPECT_TRUE(scope.adopt(kept));
    EXPECT_FALSE(scope.adopt(host));
  }
  // The adopted result stays; the rest went with the scope.
  EXPECT_EQ(inUse(1), 128u);
  memory->free(1, kept);
}

TEST_F(TwoDevices, ACallScopeKeepsItsFirstError) {
  std::string what = "device 0: backward";
  CallScope scope(memory.backend(), 0, what);
  scope.enter();
  EXPECT_EQ(callScopeAlloc(1 << 20), nullptr);
  pipe_rt_index_fault("gather", 7, 3);
  scope.leave();
  EXPECT_EQ(scope.errorStatus(), PIPE_RT_OUT_OF_MEMORY);
  EXPECT_NE(scope.error().find("device 0: backward"), std::string::npos)
      << scope.error();
  // Outside a scope an index fault has nowhere to go.
  pipe_rt_index_fault("gather", 7, 3);
}

TEST(Memory, HooksOutsideACallUseHostMemory) {
  EXPECT_EQ(callScopeDevice(), -1);
  EXPECT_EQ(callScopeAlloc(16), nullptr);
  void *p = _mlir_memref_to_llvm_aligned_alloc(128, 100);
  ASSERT_TRUE(p);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 128, 0u);
  _mlir_memref_to_llvm_free(p);
}

} // namespace
