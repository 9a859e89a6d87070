//===- Launch.cpp - A process's place in a run started without MPI --------===//

#include "pipe/Runtime/Launch.h"

#include "Format.h"

#include "pipe/Runtime/Status.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace pipe_rt;

namespace {

struct VariableSet {
  const char *rank, *size, *localRank;
};

/// In the order they are looked for: ours first, so that they override a
/// launcher's.
constexpr VariableSet kSets[] = {
    {"PIPE_RANK", "PIPE_WORLD_SIZE", "PIPE_LOCAL_RANK"},
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
};

bool parseCount(const char *name, const char *text, long lowest, int &out,
                std::string &error) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  // Digits only: strtol would also take a sign and leading blanks.
  if (*text < '0' || *text > '9' || *end || errno || v < lowest ||
      v > INT_MAX) {
    error = format("%s='%s' is not %s", name, text,
                   lowest ? "a count from 1" : "a number from 0");
    return false;
  }
  out = int(v);
  return true;
}

constexpr const char *kFileHeader = "pipe-mlir shared id";

/// The launcher's name for this run (LaunchEnvironment::runId).
std::string readRunId(const std::function<const char *(const char *)> &get) {
  auto given = [&](const char *name) {
    const char *v = get(name);
    return v ? std::string(v) : std::string();
  };
  std::string id = given("PIPE_RUN_ID");
  if (id.empty() && given("TORCHELASTIC_RUN_ID") != "none")
    id = given("TORCHELASTIC_RUN_ID"); // "none": torchrun's default
  if (id.empty() && !given("SLURM_JOB_ID").empty())
    id = given("SLURM_JOB_ID") +
         (given("SLURM_STEP_ID").empty() ? "" : "." + given("SLURM_STEP_ID"));
  if (id.empty())
    id = given("PMIX_NAMESPACE");
  for (char &c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' &&
        c != ':' && c != '-')
      c = '_';
  return id;
}

/// The first line of the file: what it is, its run and its size.
std::string fileHeader(const std::string &runId, size_t bytes) {
  return format("%s run=%s %zu ", kFileHeader,
                runId.empty() ? "-" : runId.c_str(), bytes);
}

/// The run id of a file written by shareThroughFile ("" if none or not
/// one).
std::string runIdOf(const std::string &content) {
  std::string prefix = std::string(kFileHeader) + " run=";
  if (content.compare(0, prefix.size(), prefix) != 0)
    return "";
  size_t end = content.find(' ', prefix.size());
  std::string id = content.substr(prefix.size(), end == std::string::npos
                                                     ? std::string::npos
                                                     : end - prefix.size());
  return id == "-" ? "" : id;
}

/// The whole file, or false when it cannot be opened (errno says why).
bool readFile(const std::string &path, std::string &content) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  content.clear();
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    content.append(buffer, n);
  std::fclose(f);
  return true;
}

int nibble(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

} // namespace

bool pipe_rt::readLaunchEnvironment(
    const std::function<const char *(const char *)> &get,
    LaunchEnvironment &env, bool &found, std::string &error) {
  found = false;
  for (const VariableSet &set : kSets) {
    const char *rank = get(set.rank), *size = get(set.size);
    const char *local = get(set.localRank);
    if (!rank || !size) {
      // Half of our own set is a mistake, not another launcher's set.
      if (&set == &kSets[0] && (rank || size || local)) {
        error = format("%s is set but %s is not (a rank needs both)",
                       rank   ? set.rank
                       : size ? set.size
                              : set.localRank,
                       rank ? set.size : set.rank);
        return false;
      }
      continue;
    }
    LaunchEnvironment e;
    if (!parseCount(set.size, size, 1, e.size, error) ||
        !parseCount(set.rank, rank, 0, e.rank, error))
      return false;
    if (e.rank >= e.size) {
      error = format("%s=%d is not below %s=%d", set.rank, e.rank, set.size,
                     e.size);
      return false;
    }
    e.localRank = e.rank;
    if (local && !parseCount(set.localRank, local, 0, e.localRank, error))
      return false;
    if (e.localRank > e.rank) {
      error = format("%s=%d is above %s=%d (a host's processes are numbered "
                     "from 0 within the ranks)",
                     set.localRank, e.localRank, set.rank, e.rank);
      return false;
    }
    e.source = format("%s/%s/%s", set.rank, set.size, set.localRank);
    e.runId = readRunId(get);
    env = e;
    found = true;
    return true;
  }
  return true;
}

bool pipe_rt::ncclIdSource(const LaunchEnvironment &launch,
                           const std::function<const char *(const char *)> &get,
                           std::string &idFile, std::string &error) {
  idFile.clear();
  const char *commId = get("NCCL_COMM_ID"), *file = get("PIPE_NCCL_ID_FILE");
  if (launch.size == 1 || (commId && *commId))
    return true;
  if (file && *file) {
    idFile = file;
    return true;
  }
  error = format("%d ranks (%s) need NCCL's unique id: set NCCL_COMM_ID="
                 "HOST:PORT (rank 0's host and a free port) or "
                 "PIPE_NCCL_ID_FILE=PATH (a file that rank 0 writes and every "
                 "rank can read)",
                 launch.size, launch.source.c_str());
  return false;
}

int pipe_rt::shareThroughFile(const std::string &path, bool writer, void *data,
                              size_t bytes, double timeoutSeconds,
                              const std::string &runId, std::string &error) {
  const auto *in = static_cast<const unsigned char *>(data);
  if (writer) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      std::string old, oldRun;
      if (readFile(path, old))
        oldRun = runIdOf(old);
      if (runId.empty() || oldRun.empty() || oldRun == runId) {
        error = path + " exists already: an earlier run left it, or another "
                       "run uses it (remove it, or name another file)";
        return PIPE_RT_INVALID_ARGUMENT;
      }
      ::unlink(path.c_str()); // run oldRun's, which is over
    }
    std::string text = fileHeader(runId, bytes);
    for (size_t i = 0; i < bytes; ++i)
      text += format("%02x", in[i]);
    text += "\n";
    std::string temp = format("%s.%ld.tmp", path.c_str(), long(::getpid()));
    int fd =
        ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 &&
              ::write(fd, text.data(), text.size()) == ssize_t(text.size()) &&
              ::fsync(fd) == 0;
    int saved = errno;
    if (fd >= 0)
      ::close(fd);
    // link() rather than rename(): it fails if another writer got there
    // first instead of replacing its file.
    if (ok && ::link(temp.c_str(), path.c_str()) != 0) {
      ok = false;
      saved = errno;
    }
    ::unlink(temp.c_str());
    if (!ok) {
      error = "cannot write " + path + ": " + std::strerror(saved);
      return PIPE_RT_INVALID_ARGUMENT;
    }
    return PIPE_RT_OK;
  }
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeoutSeconds);
  std::string content, staleRun;
  for (;;) {
    if (readFile(path, content)) {
      // An earlier run's file: wait for rank 0 to replace it.
      std::string fileRun = runIdOf(content);
      if (runId.empty() || fileRun.empty() || fileRun == runId)
        break;
      staleRun = fileRun;
    } else if (errno != ENOENT) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      return PIPE_RT_INVALID_ARGUMENT;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      error = format("%s did not appear within %g s: did rank 0 start (it "
                     "writes the file), and do the ranks share its folder?",
                     path.c_str(), timeoutSeconds);
      if (!staleRun.empty())
        error += format(" (it holds the id of run %s, not of this run %s)",
                        staleRun.c_str(), runId.c_str());
      return PIPE_RT_TIMEOUT;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string expected = fileHeader(runIdOf(content), bytes);
  bool ok = content.size() == expected.size() + 2 * bytes + 1 &&
            content.compare(0, expected.size(), expected) == 0 &&
            content.back() == '\n';
  auto *out = static_cast<unsigned char *>(data);
  const char *hex = content.c_str() + expected.size();
  for (size_t i = 0; ok && i < bytes; ++i) {
    int high = nibble(hex[2 * i]), low = nibble(hex[2 * i + 1]);
    ok = high >= 0 && low >= 0;
    out[i] = static_cast<unsigned char>(high * 16 + low);
  }
  if (!ok) {
    error = format("%s is not an id of %zu bytes written by rank 0 of a "
                   "pipe-mlir run",
                   path.c_str(), bytes);
    return PIPE_RT_INVALID_ARGUMENT;
  }
  return PIPE_RT_OK;
}
