//===- LaunchTest.cpp - A process's place in a run started without MPI ----===//
//
// readLaunchEnvironment over a map of variables, and shareThroughFile
// between threads standing for ranks (pipe/Runtime/Launch.h).
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/Launch.h"
#include "pipe/Runtime/Status.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <unistd.h>

using namespace pipe_rt;

namespace {

struct Read {
  bool ok = false, found = false;
  LaunchEnvironment env;
  std::string error;
};

Read readFrom(const std::map<std::string, std::string> &vars) {
  Read r;
  r.ok = readLaunchEnvironment(
      [&](const char *name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      r.env, r.found, r.error);
  return r;
}

std::string tempPath(const char *name) {
  return ::testing::TempDir() + name + std::to_string(::getpid());
}

} // namespace

TEST(LaunchEnvironment, NoneSetIsNotFound) {
  Read r = readFrom({{"HOME", "/root"}});
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.found);
}

TEST(LaunchEnvironment, TorchrunVariables) {
  Read r = readFrom({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}});
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.env.rank, 3);
  EXPECT_EQ(r.env.size, 4);
  EXPECT_EQ(r.env.localRank, 1);
  EXPECT_EQ(r.env.source, "RANK/WORLD_SIZE/LOCAL_RANK");
}

TEST(LaunchEnvironment, OursOverrideALaunchers) {
  Read r = readFrom({{"PIPE_RANK", "0"},
                     {"PIPE_WORLD_SIZE", "2"},
                     {"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "8"}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.env.rank, 0);
  EXPECT_EQ(r.env.size, 2);
}

TEST(LaunchEnvironment, SlurmAndOpenMpiSets) {
  Read slurm = readFrom(
      {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}});
  ASSERT_TRUE(slurm.found);
  EXPECT_EQ(slurm.env.rank, 5);
  EXPECT_EQ(slurm.env.localRank, 1);
  Read ompi = readFrom({{"OMPI_COMM_WORLD_RANK", "1"},
                        {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  ASSERT_TRUE(ompi.found);
  EXPECT_EQ(ompi.env.size, 2);
}

TEST(LaunchEnvironment, LocalRankDefaultsToTheRank) {
  Read r = readFrom({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.env.localRank, 1);
}

TEST(LaunchEnvironment, AnIncompleteLaunchersSetIsSkipped) {
  // torchrun's RANK alone (a user's own variable, say) is not a launch.
  Read r = readFrom({{"RANK", "1"}});
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.found);
}

TEST(LaunchEnvironment, MalformedValuesNameTheVariable) {
  struct Case {
    std::map<std::string, std::string> vars;
    std::string message;
  } cases[] = {
      {{{"PIPE_RANK", "0"}}, "PIPE_RANK is set but PIPE_WORLD_SIZE is not"},
      {{{"PIPE_WORLD_SIZE", "2"}}, "PIPE_WORLD_SIZE is set but PIPE_RANK"},
      {{{"RANK", "x"}, {"WORLD_SIZE", "2"}}, "RANK='x' is not a number"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, "RANK='-1' is not a number"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE='0' is not a count"},
      {{{"RANK", "+1"}, {"WORLD_SIZE", "2"}}, "RANK='+1' is not a number"},
      {{{"RANK", " 1"}, {"WORLD_SIZE", "2"}}, "RANK=' 1' is not a number"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}},
       "WORLD_SIZE='99999999999' is not a count"},
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}},
       "RANK=2 is not below WORLD_SIZE=2"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}},
       "LOCAL_RANK=1 is above RANK=0"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0x"}},
       "LOCAL_RANK='0x' is not a number"},
  };
  for (const Case &c : cases) {
    Read r = readFrom(c.vars);
    EXPECT_FALSE(r.ok) << c.message;
    EXPECT_NE(r.error.find(c.message), std::string::npos) << r.error;
  }
}

TEST(SharedIdFile, ReadersGetTheWritersBytes) {
  std::string path = tempPath("launch-id-");
  std::remove(path.c_str());
  unsigned char id[128];
  for (int i = 0; i < 128; ++i)
    id[i] = static_cast<unsigned char>(i * 7 + 3);
  unsigned char got[2][128] = {};
  int status[2] = {-1, -1};
  std::string errors[2];
  // Readers start before the file exists and wait for it.
  std::thread readers[2];
  for (int r = 0; r < 2; ++r)
    readers[r] = std::thread([&, r] {
      status[r] = shareThroughFile(path, false, got[r], sizeof(got[r]), 10, "",
                                   errors[r]);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::string error;
  ASSERT_EQ(shareThroughFile(path, true, id, sizeof(id), 10, "", error),
            PIPE_RT_OK)
      << error;
  for (int r = 0; r < 2; ++r) {
    readers[r].join();
    ASSERT_EQ(status[r], PIPE_RT_OK) << errors[r];
    EXPECT_EQ(std::memcmp(got[r], id, sizeof(id)), 0);
  }
  // A second writer refuses the file the first one left.
  EXPECT_EQ(shareThroughFile(path, true, id, sizeof(id), 10, "", error),
            PIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(error.find("exists already"), std::string::npos) << error;
  std::remove(path.c_str());
}

TEST(SharedIdFile, AReaderTimesOutNamingTheFile) {
  std::string path = tempPath("launch-missing-");
  std::remove(path.c_str());
  unsigned char id[16];
  std::string error;
  EXPECT_EQ(shareThroughFile(path, false, id, sizeof(id), 0.1, "", error),
            PIPE_RT_TIMEOUT);
  EXPECT_NE(error.find(path + " did not appear within 0.1 s"),
            std::string::npos)
      << error;
}

TEST(SharedIdFile, AForeignOrShortFileIsRefused) {
  std::string path = tempPath("launch-foreign-");
  unsigned char id[4] = {1, 2, 3, 4};
  for (const char *content : {"hello\n", "pipe-mlir shared id run=- 4 010203\n",
                              "pipe-mlir shared id run=- 8 0102030405060708\n",
                              "pipe-mlir shared id run=- 4 0102030g\n",
                              "pipe-mlir shared id run=- 4 01020304",
                              "pipe-mlir shared id 4 01020304\n"}) {
    std::ofstream(path) << content;
    std::string error;
    EXPECT_EQ(shareThroughFile(path, false, id, sizeof(id), 1, "", error),
              PIPE_RT_INVALID_ARGUMENT)
        << content;
    EXPECT_NE(error.find(path + " is not an id of 4 bytes"), std::string::npos)
        << error;
  }
  std::remove(path.c_str());
}

TEST(NcclIdSource, OneRankOrNcclCommIdNeedsNoFile) {
  std::string file, error;
  LaunchEnvironment one, two;
  two.size = 2;
  two.source = "RANK/WORLD_SIZE/LOCAL_RANK";
  auto none = [](const char *) -> const char * { return nullptr; };
  EXPECT_TRUE(ncclIdSource(one, none, file, error));
  EXPECT_EQ(file, "");
  auto commId = [](const char *name) -> const char * {
    return std::string(name) == "NCCL_COMM_ID" ? "node0:29500" : nullptr;
  };
  EXPECT_TRUE(ncclIdSource(two, commId, file, error));
  EXPECT_EQ(file, "");
  auto idFile = [](const char *name) -> const char * {
    return std::string(name) == "PIPE_NCCL_ID_FILE" ? "shared/run.id" : nullptr;
  };
  EXPECT_TRUE(ncclIdSource(two, idFile, file, error));
  EXPECT_EQ(file, "shared/run.id");
  EXPECT_FALSE(ncclIdSource(two, none, file, error));
  EXPECT_NE(error.find("2 ranks (RANK/WORLD_SIZE/LOCAL_RANK) need NCCL's "
                       "unique id: set NCCL_COMM_ID=HOST:PORT"),
            std::string::npos)
      << error;
}

TEST(LaunchEnvironment, RunIds) {
  auto runId = [](std::map<std::string, std::string> vars) {
    vars["RANK"] = "0";
    vars["WORLD_SIZE"] = "2";
    return readFrom(vars).env.runId;
  };
  EXPECT_EQ(runId({}), "");
  EXPECT_EQ(runId({{"PIPE_RUN_ID", "a b/c"}, {"SLURM_JOB_ID", "7"}}), "a_b_c");
  // torchrun's default is no id.
  EXPECT_EQ(runId({{"TORCHELASTIC_RUN_ID", "none"}}), "");
  EXPECT_EQ(runId({{"TORCHELASTIC_RUN_ID", "job-42"}}), "job-42");
  EXPECT_EQ(runId({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "3"}}), "7.3");
  EXPECT_EQ(runId({{"PMIX_NAMESPACE", "prterun-host-1@1"}}),
            "prterun-host-1_1");
}

TEST(SharedIdFile, AnEarlierRunsFileIsReplacedNotRead) {
  std::string path = tempPath("launch-stale-");
  std::remove(path.c_str());
  unsigned char old[4] = {1, 2, 3, 4}, fresh[4] = {5, 6, 7, 8}, got[4] = {};
  std::string error;
  ASSERT_EQ(shareThroughFile(path, true, old, 4, 10, "run-1", error),
            PIPE_RT_OK)
      << error;
  // A reader of run 2 does not take run 1's id: it waits for its own.
  int status = -1;
  std::string readError;
  std::thread reader([&] {
    status = shareThroughFile(path, false, got, 4, 10, "run-2", readError);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(shareThroughFile(path, true, fresh, 4, 10, "run-2", error),
            PIPE_RT_OK)
      << error;
  reader.join();
  ASSERT_EQ(status, PIPE_RT_OK) << readError;
  EXPECT_EQ(std::memcmp(got, fresh, 4), 0);
  // The same run's file, or one without run ids, is refused.
  EXPECT_EQ(shareThroughFile(path, true, fresh, 4, 10, "run-2", error),
            PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(shareThroughFile(path, true, fresh, 4, 10, "", error),
            PIPE_RT_INVALID_ARGUMENT);
  // A reader that only finds an earlier run's file says so.
  EXPECT_EQ(shareThroughFile(path, false, got, 4, 0.1, "run-3", error),
            PIPE_RT_TIMEOUT);
  EXPECT_NE(error.find("it holds the id of run run-2, not of this run run-3"),
            std::string::npos)
      << error;
  std::remove(path.c_str());
}
