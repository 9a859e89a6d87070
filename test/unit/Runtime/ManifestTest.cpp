//===- ManifestTest.cpp - The manifest schema's writer and reader ---------===//

#include "Manifest.h"

#include "pipe/Runtime/ManifestSchema.h"

#include <gtest/gtest.h>

namespace {

/// Records added out of section order come out in it, and read back.
TEST(Manifest, WriterOrdersSectionsForTheReader) {
  pipe_rt::ManifestWriter writer;
  writer.param(0, "w", 0, true);
  writer.type(0, "f32", {2, 3});
  writer.value(0, 0);
  writer.input(0, 0);
  std::string text = writer.str();
  EXPECT_EQ(text, "pipe-program " + std::to_string(pipe_rt::kManifestVersion) +
                      "\ntype 0 f32 2 2 3\nparam 0 w 0 1\nvalue 0 0\n"
                      "input 0 0\nend\n");
  pipe_rt::Manifest m;
  std::string error;
  ASSERT_TRUE(pipe_rt::parseManifest(text.c_str(), m, error)) << error;
  ASSERT_EQ(m.types.size(), 1u);
  EXPECT_EQ(m.types[0].numel, 6);
  EXPECT_EQ(m.params[0].name, "w");
}

TEST(Manifest, ReaderChecksTheFormatVersion) {
  pipe_rt::Manifest m;
  std::string error;
  EXPECT_FALSE(pipe_rt::parseManifest("pipe-program 999\nend\n", m, error));
  EXPECT_EQ(error, "manifest line 1: format version 999, this runtime reads "
                   "version " +
                       std::to_string(pipe_rt::kManifestVersion) +
                       " (recompile the program)");
}

TEST(Manifest, ReaderTellsAnOlderProgramToRecompile) {
  // Format 1 predates the `versions` record: a runtime reading it as its own
  // would run a weight-versioned schedule without its versions.
  pipe_rt::Manifest m;
  std::string error;
  EXPECT_FALSE(pipe_rt::parseManifest("pipe-program 1\nend\n", m, error));
  EXPECT_EQ(error, "manifest line 1: format version 1 is older than this "
                   "runtime's version " +
                       std::to_string(pipe_rt::kManifestVersion) +
                       ": recompile the program with this release's "
                       "pipe-compile (or pipe-train)");
}

/// A schedule's data-parallel replicas: 1 without a record, the record's
/// count with one, and a count below 1 refused with its line.
TEST(Manifest, ReplicasRecord) {
  auto manifest = [](int replicas) {
    pipe_rt::ManifestWriter writer;
    writer.type(0, "f32", {2});
    writer.stage(0, "s0", 0, {});
    writer.schedule(0, "train", "gpipe", 1, 1, 1, false);
    writer.device(0, 0, 0, "pipe_device_0_0");
    if (replicas != 1)
      writer.replicas(0, replicas);
    return writer.str();
  };
  pipe_rt::Manifest m;
  std::string error;
  ASSERT_TRUE(pipe_rt::parseManifest(manifest(1).c_str(), m, error)) << error;
  EXPECT_EQ(m.schedules[0].replicas, 1);
  m = pipe_rt::Manifest();
  ASSERT_TRUE(pipe_rt::parseManifest(manifest(3).c_str(), m, error)) << error;
  EXPECT_EQ(m.schedules[0].replicas, 3);
  m = pipe_rt::Manifest();
  EXPECT_FALSE(pipe_rt::parseManifest(manifest(0).c_str(), m, error));
  EXPECT_NE(error.find("replicas"), std::string::npos) << error;
}

/// Task metrics: i64 [2] counts after the loss, named with a word; the
/// reader refuses a metric before the loss, of another type, with an odd
/// name, or named twice.
TEST(Manifest, MetricRecord) {
  auto manifest = [](bool loss, int type, const std::string &name, bool twice) {
    pipe_rt::ManifestWriter writer;
    writer.type(0, "f32", {});
    writer.type(1, "i64", {2});
    writer.type(2, "i64", {3});
    writer.value(0, 0);
    writer.value(1, type);
    writer.value(2, type);
    if (loss)
      writer.loss(0, 1.0);
    writer.metric(1, name);
    if (twice)
      writer.metric(2, name);
    return writer.str();
  };
  pipe_rt::Manifest m;
  std::string error;
  ASSERT_TRUE(pipe_rt::parseManifest(
      manifest(true, 1, "accuracy", false).c_str(), m, error))
      << error;
  ASSERT_EQ(m.metrics.size(), 1u);
  EXPECT_EQ(m.metrics[0].name, "accuracy");
  EXPECT_EQ(m.metrics[0].value, 1);
  struct Bad {
    bool loss;
    int type;
    const char *name;
    bool twice;
    const char *message;
  } bad[] = {
      {false, 1, "accuracy", false, "'metric' before the 'loss' record"},
      {true, 2, "accuracy", false, "must be an i64 [2] tensor of counts"},
      {true, 1, "acc\"x", false, "letters, digits"},
      {true, 1, "accuracy", true, "second metric 'accuracy'"},
  };
  for (const Bad &b : bad) {
    m = pipe_rt::Manifest();
    EXPECT_FALSE(pipe_rt::parseManifest(
        manifest(b.loss, b.type, b.name, b.twice).c_str(), m, error));
    EXPECT_NE(error.find(b.message), std::string::npos) << error;
  }
}

/// A stage lists a param once: a damaged owns list could otherwise update
/// one twice and another never, with exit 0.
TEST(Manifest, OwnsRecordListsAParamOnce) {
  auto manifest = [](std::vector<int64_t> owned) {
    pipe_rt::ManifestWriter writer;
    writer.type(0, "f32", {2});
    writer.param(0, "a", 0, true);
    writer.param(1, "b", 0, true);
    writer.stage(0, "s0", 0, {});
    writer.schedule(0, "train", "gpipe", 1, 1, 1, false);
    writer.device(0, 0, 0, "pipe_device_0_0");
    writer.owns(0, 0, owned);
    return writer.str();
  };
  pipe_rt::Manifest m;
  std::string error;
  ASSERT_TRUE(pipe_rt::parseManifest(manifest({0, 1}).c_str(), m, error))
      << error;
  m = pipe_rt::Manifest();
  EXPECT_FALSE(pipe_rt::parseManifest(manifest({0, 1, 0}).c_str(), m, error));
  EXPECT_NE(error.find("param id 0 repeated in the stage's list"),
            std::string::npos)
      << error;
}

} // namespace
