//===- pipe-runner.cpp - Train a compiled pipe program artifact -----------===//
//
// pipe-runner ARTIFACT.so --weights W.safetensors [training options]
//
// dlopens a compiled program (its imports resolve against this executable,
// which exports the whole runtime), checks its ABI, creates a session and
// runs the trainer of pipe/Runtime/Trainer.h: the same loop pipe-train runs
// in-process. Options and exit codes: --help and docs/trainer.md.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/Blas.h"
#include "pipe/Runtime/Program.h"
#include "pipe/Runtime/Trainer.h"
#include "pipe/Runtime/TrainerFlags.h"
#include "pipe/Runtime/Transport.h"
#ifdef PIPE_RUNNER_CUDA
#include "pipe/Runtime/CUDA.h"
#include "pipe/Runtime/Launch.h"
#include "pipe/Runtime/NcclTransport.h"
#endif
#ifdef PIPE_RUNNER_MPI
#include "pipe/Runtime/MPI.h"
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

int die(const std::string &msg, int code = pipe_rt::ExitError) {
  std::fprintf(stderr, "pipe-runner: %s\n", msg.c_str());
  return code;
}

void *lookup(void *handle, const char *name) { return dlsym(handle, name); }

#if defined(PIPE_RUNNER_MPI) || defined(PIPE_RUNNER_CUDA)
/// One rank's share of the trainer's outputs: rank 0 prints and writes
/// every file; each rank writes its own profile (PATH for rank 0,
/// PATH.rankR for the others) with its transport figures.
void distribute(pipe_rt::Transport &t, pipe_rt_session *session,
                pipe_rt::TrainerOptions &training) {
  int rank = t.rank();
  if (rank != 0) {
    training.print = [](const std::string &) {};
    training.saveWeights.clear();
    training.logJson.clear();
    training.tracePath.clear();
    training.writesCheckpoints = false;
    if (!training.profilePath.empty())
      training.profilePath += ".rank" + std::to_string(rank);
  }
  training.agreeToStop = [&t](bool stop) {
    int64_t any = stop;
    std::string error;
    if (pipe_rt::agreeMax(t, &any, 1, "the stop check", error) !=
        PIPE_RT_OK) {
      std::fprintf(stderr, "pipe-runner: rank %d: %s\n", t.rank(),
                   error.c_str());
      t.abortJob(pipe_rt::ExitError);
    }
    return any != 0;
  };
  training.shareState = [session](std::string &error) {
    return pipe_rt::shareParams(session, error) == PIPE_RT_OK;
  };
  std::function<std::string()> extra = training.profileExtra;
  training.profileExtra = [&t, extra] {
    std::string text = extra ? extra() + "," : "";
    std::string ran;
    for (int d = 0; d < 64; ++d)
      if (t.devicesRan.load() >> d & 1)
        ran += (ran.empty() ? "" : ",") + std::to_string(d);
    char figures[512];
    std::snprintf(figures, sizeof(figures),
                  "\"transport\":{\"name\":\"%s\",\"rank\":%d,\"ranks\":%d,"
                  "\"local_rank\":%d,\"pid\":%ld,\"devices_run\":[%s],"
                  "\"sent_bytes\":%llu,\"received_bytes\":%llu,"
                  "\"wait_seconds\":%.6f,\"all_reduces\":%llu}",
                  t.name(), t.rank(), t.size(), t.localRank(), long(getpid()),
                  ran.c_str(), (unsigned long long)t.sentBytes.load(),
                  (unsigned long long)t.receivedBytes.load(),
                  double(t.waitNanoseconds.load()) * 1e-9,
                  (unsigned long long)t.allReduces.load());
    return text + figures;
  };
}
#endif

/// Checks that `path` is a whole ELF shared library for this machine before
/// dlopen maps it: dlopen maps the segments of a truncated file past its
/// end, and the first touch of such a page is a SIGBUS, not an error. Every
/// program header's segment and every section must lie inside the file
/// (the section headers come last, so any truncation cuts them).
bool checkSharedLibrary(const std::string &path, std::string &error) {
  auto bad = [&](const std::string &why) {
    error = path + ": " + why;
    return false;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return bad(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  bool statOk = ::fstat(fd, &st) == 0;
  std::vector<unsigned char> bytes;
  if (statOk && S_ISREG(st.st_mode)) {
    bytes.resize(size_t(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n =
          ::pread(fd, bytes.data() + done, bytes.size() - done, off_t(done));
      if (n <= 0)
        break;
      done += size_t(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (!statOk || !S_ISREG(st.st_mode))
    return bad("not a regular file");
  if (bytes.size() != size_t(st.st_size))
    return bad("cannot read the whole file");
  uint64_t size = bytes.size();
  Elf64_Ehdr eh;
  if (size < sizeof(eh))
    return bad("not a shared library (" + std::to_string(size) +
               " bytes, shorter than an ELF header)");
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return bad("not a shared library (no ELF magic)");
#if defined(__x86_64__)
  const int machine = EM_X86_64;
#elif defined(__aarch64__)
  const int machine = EM_AARCH64;
#else
  const int machine = eh.e_machine;
#endif
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_DYN ||
      eh.e_machine != machine)
    return bad("not a 64-bit little-endian shared library for this machine");
  // [offset, offset + count * entry) inside the file, without overflow.
  auto inside = [&](uint64_t offset, uint64_t count, uint64_t entry) {
    return offset <= size && (entry == 0 || count <= (size - offset) / entry);
  };
  auto truncated = [&](const std::string &what, uint64_t begin, uint64_t end) {
    return bad("truncated or corrupt: " + what + " (bytes " +
               std::to_string(begin) + ".." + std::to_string(end) +
               ") is past the end of the file (" + std::to_string(size) +
               " bytes)");
  };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !inside(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr)))
    return truncated("the program headers", eh.e_phoff,
                     eh.e_phoff + uint64_t(eh.e_phnum) * eh.e_phentsize);
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (!inside(ph.p_offset, ph.p_filesz, 1))
      return truncated("segment " + std::to_string(i), ph.p_offset,
                       ph.p_offset + ph.p_filesz);
  }
  if (eh.e_shnum != 0) {
    if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !inside(eh.e_shoff, eh.e_shnum, sizeof(Elf64_Shdr)))
      return truncated("the section headers", eh.e_shoff,
                       eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize);
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, bytes.data() + eh.e_shoff + i * sizeof(sh), sizeof(sh));
      if (sh.sh_type != SHT_NOBITS && !inside(sh.sh_offset, sh.sh_size, 1))
        return truncated("section " + std::to_string(i), sh.sh_offset,
                         sh.sh_offset + sh.sh_size);
    }
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  pipe_rt_blas_configure(argv);
  std::vector<std::string> args(argv + 1, argv + argc);
#ifdef PIPE_RUNNER_CUDA
  // pipe-runner-cuda: the session's devices are GPUs (docs/cuda-runtime.md)
  // unless --cpu; --gpu-map=0,0,1 maps logical devices to GPU ordinals.
  bool useGpu = true;
  std::string deviceMap;
  for (auto it = args.begin(); it != args.end();) {
    if (*it == "--cpu") {
      useGpu = false;
      it = args.erase(it);
    } else if (it->rfind("--gpu-map=", 0) == 0) {
      deviceMap = it->substr(10);
      it = args.erase(it);
    } else {
      ++it;
    }
  }
#endif
  // Distributed runs (docs/distributed.md): under an MPI launcher every
  // process is one rank unless --transport in-process.
  std::string transportName;
  // replicas 0: the program's.
  int devicesPerRank = 1, replicas = 0;
  const std::string distributedFlags[] = {"--transport", "--devices-per-rank",
                                         "--data-parallel"};
  for (auto it = args.begin(); it != args.end();) {
    // --flag value or --flag=value.
    size_t eq = it->find('=');
    std::string flag = it->substr(0, eq);
    if (std::find(std::begin(distributedFlags), std::end(distributedFlags),
                  flag) == std::end(distributedFlags)) {
      ++it;
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = it->substr(eq + 1);
      it = args.erase(it);
    } else if (it + 1 == args.end()) {
      return die(flag + " needs a value", pipe_rt::ExitUsage);
    } else {
      value = *(it + 1);
      it = args.erase(it, it + 2);
    }
    if (flag == "--transport") {
#ifdef PIPE_RUNNER_CUDA
      const char *known = "in-process, mpi, mpi-in-order, nccl";
      bool isKnown = value == "nccl";
#else
      const char *known = "in-process, mpi, mpi-in-order";
      bool isKnown = false;
#endif
      isKnown |=
          value == "mpi" || value == "mpi-in-order" || value == "in-process";
      if (!isKnown)
        return die("--transport: '" + value + "' is not a transport (" + known +
                       ")",
                   pipe_rt::ExitUsage);
      transportName = value;
    } else {
      char *end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || n < 1 || n > 4096)
        return die(flag + ": '" + value + "' is not a count from 1 to 4096",
                   pipe_rt::ExitUsage);
      (flag == "--data-parallel" ? replicas : devicesPerRank) = int(n);
    }
  }
  // --transport nccl: between the ranks' GPUs under an MPI launcher (MPI
  // starts them), or under another launcher without MPI (its variables,
  // pipe/Runtime/Launch.h), else between the GPUs of this one process.
  bool ncclBetweenRanks = false, ncclWithoutMpi = false;
#ifdef PIPE_RUNNER_MPI
  ncclBetweenRanks =
      transportName == "nccl" && pipe_rt::launchedByMpiLauncher();
#endif
#ifdef PIPE_RUNNER_CUDA
  pipe_rt::LaunchEnvironment launch;
  if (transportName == "nccl" && !ncclBetweenRanks) {
    // Checked here as well as by the transport: a usage error before any
    // artifact is loaded.
    std::string problem, idFile;
    if (!pipe_rt::readLaunchEnvironment(std::getenv, launch, ncclWithoutMpi,
                                        problem))
      return die("--transport nccl: " + problem, pipe_rt::ExitUsage);
    if (ncclWithoutMpi &&
        !pipe_rt::ncclIdSource(launch, std::getenv, idFile, problem))
      return die("--transport nccl: " + problem, pipe_rt::ExitUsage);
    if (ncclWithoutMpi && launch.size > 1 && devicesPerRank != 1)
      return die("--transport nccl without MPI (" + launch.source +
                     "): each rank runs one device; launch one process per "
                     "device instead of --devices-per-rank " +
                     std::to_string(devicesPerRank),
                 pipe_rt::ExitUsage);
  }
#endif
  if (transportName == "nccl" && !ncclBetweenRanks && !ncclWithoutMpi &&
      (devicesPerRank != 1 || replicas > 1))
    return die("--transport nccl runs every device in this process: "
               "--devices-per-rank and --data-parallel are for ranks (started "
               "by mpirun, torchrun or srun)",
               pipe_rt::ExitUsage);
#ifdef PIPE_RUNNER_MPI
  if (transportName.empty())
    transportName =
        pipe_rt::launchedByMpiLauncher() ? "mpi" : std::string("in-process");
#else
  if (transportName.rfind("mpi", 0) == 0 ||
      (!ncclWithoutMpi && (devicesPerRank != 1 || replicas > 1)))
    return die("--transport mpi, --devices-per-rank, --data-parallel: this "
               "pipe-runner was built without MPI (install libopenmpi-dev "
               "and rebuild; pipe-runner-cuda --transport nccl runs ranks "
               "without it)",
               pipe_rt::ExitUsage);
#endif
  for (const std::string &a : args)
    if (a == "-h" || a == "--help") {
      std::printf("usage: pipe-runner ARTIFACT.so --weights W.safetensors "
                  "[options]\n\n%s\n",
                  pipe_rt::trainerFlagsUsage());
      std::printf("Distributed runs (mpirun -np N pipe-runner ...):\n"
                  "  --transport T          in-process (one process runs "
                  "every device) or mpi\n"
                  "                         (one process per rank; the "
                  "default under mpirun)\n"
                  "                         or mpi-in-order (MPI with "
                  "NCCL's rules: transfers\n"
                  "                         matched by order only, sends "
                  "synchronous; needs a\n"
                  "                         program compiled with "
                  "peer-order)\n"
                  "  --devices-per-rank N   devices each rank runs (default "
                  "1)\n"
                  "  --data-parallel R      check that the program was "
                  "compiled for R replicas\n"
                  "                         of the pipeline (each on ranks/R "
                  "ranks, on its share\n"
                  "                         of every step's micro-batches; "
                  "default: the program's)\n");
#ifdef PIPE_RUNNER_CUDA
      std::printf("GPUs (pipe-runner-cuda):\n"
                  "  --gpu-map=M            GPU ordinal of each logical "
                  "device, e.g. 0,0,1\n"
                  "                         (default: device d on GPU d mod "
                  "count)\n"
                  "  --cpu                  run on the simulated devices "
                  "instead\n"
                  "  --transport nccl       one process: every copy between "
                  "devices through NCCL\n"
                  "                         (send/recv pairs; self send/recv "
                  "on a shared GPU);\n"
                  "                         under mpirun: transfers between "
                  "the ranks' GPUs through\n"
                  "                         NCCL (a program compiled with "
                  "peer-order; never run yet);\n"
                  "                         under torchrun, srun or "
                  "PIPE_RANK/PIPE_WORLD_SIZE\n"
                  "                         without MPI: everything between "
                  "the ranks through NCCL,\n"
                  "                         its id from NCCL_COMM_ID or "
                  "PIPE_NCCL_ID_FILE\n"
                  "                         (docs/distributed.md)\n");
#endif
      return pipe_rt::ExitOk;
    }
  pipe_rt::TrainerFlags flags;
  std::string message;
  if (!pipe_rt::parseTrainerFlags(args, flags, message))
    return die(message, pipe_rt::ExitUsage);
  if (flags.positional.size() > 1)
    return die("more than one artifact given (see --help)", pipe_rt::ExitUsage);
  if (flags.positional.empty() || flags.weights.empty())
    return die("an artifact and --weights are required (see --help)",
               pipe_rt::ExitUsage);
  const std::string &artifact = flags.positional.front();
  flags.options.inputs = {{"artifact", artifact}, {"--weights", flags.weights}};
  if (!pipe_rt::checkOutputPaths(flags.options, message))
    return die(message, pipe_rt::ExitUsage);

  // A name without a slash would be searched on the library path, not here.
  std::string file =
      artifact.find('/') == std::string::npos ? "./" + artifact : artifact;
  if (!checkSharedLibrary(artifact, message))
    return die(message);
  // RTLD_NOW: an artifact with an unresolved import fails here, by name.
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return die(dlerror());
  auto *abi =
      static_cast<const int32_t *>(dlsym(handle, "pipe_program_abi_version"));
  if (!abi)
    return die(artifact + ": missing symbol pipe_program_abi_version (not a "
                          "compiled pipe program?)");
  if (*abi != PIPE_RT_ABI_VERSION)
    return die(artifact + ": compiled for runtime ABI " + std::to_string(*abi) +
               ", this runner is " + std::to_string(PIPE_RT_ABI_VERSION));

  pipe_rt_session_options options;
  pipe_rt_session_options_init(&options);
  flags.applyTo(options);
  options.weights_path = flags.weights.c_str();
  pipe_rt_session *session = nullptr;
  char error[1024];
  if (pipe_rt_session_create(lookup, handle, &options, &session, error,
                             sizeof(error)) != PIPE_RT_OK)
    return die(artifact + ": " + error);
#ifdef PIPE_RUNNER_CUDA
  if (useGpu && pipe_rt_cuda_session_enable(session, deviceMap.c_str(), error,
                                            sizeof(error)) != PIPE_RT_OK) {
    pipe_rt_session_destroy(session);
    return die(artifact + ": " + error);
  }
  if (transportName == "nccl" &&
      (!useGpu || (!ncclBetweenRanks && !ncclWithoutMpi &&
                   pipe_rt_cuda_session_use_nccl(
                       session, error, sizeof(error)) != PIPE_RT_OK))) {
    pipe_rt_session_destroy(session);
    return die("--transport nccl: " +
                   std::string(useGpu ? error : "needs the GPUs, not --cpu"),
               useGpu ? pipe_rt::ExitError : pipe_rt::ExitUsage);
  }
#endif

  pipe_rt::TrainerOptions training = flags.options;
  std::shared_ptr<pipe_rt::Transport> transport;
  int compiledReplicas = pipe_rt::programReplicas(session);
  if (replicas == 0)
    replicas = compiledReplicas;
  if (replicas != compiledReplicas) {
    pipe_rt_session_destroy(session);
    return die(artifact + ": --data-parallel " + std::to_string(replicas) +
                   ": the program was compiled for " +
                   std::to_string(compiledReplicas) +
                   " replica(s) (pipe-opt --pipe-place=replicas=R, "
                   "pipe-train --data-parallel R)",
               pipe_rt::ExitUsage);
  }
#ifdef PIPE_RUNNER_MPI
  if (transportName == "mpi" || transportName == "mpi-in-order" ||
      ncclBetweenRanks) {
    transport = pipe_rt::createMpiTransport(&argc, &argv, message,
                                            transportName == "mpi-in-order");
#ifdef PIPE_RUNNER_CUDA
    // MPI starts the ranks and carries their agreements; NCCL the transfers.
    if (transport && ncclBetweenRanks)
      transport = pipe_rt::createNcclTransport(session, transport, message);
#endif
    if (!transport) {
      pipe_rt_session_destroy(session);
      return die((ncclBetweenRanks ? "--transport nccl: " : "") + message);
    }
  }
#endif
#ifdef PIPE_RUNNER_CUDA
  if (ncclWithoutMpi) {
    transport = pipe_rt::createNcclTransport(session, launch,
                                             options.watchdog_seconds, message);
    if (!transport) {
      pipe_rt_session_destroy(session);
      return die("--transport nccl: " + message);
    }
  }
#endif
#if defined(PIPE_RUNNER_MPI) || defined(PIPE_RUNNER_CUDA)
  if (transport) {
    if (pipe_rt::attachTransport(
            session, transport, devicesPerRank, replicas, message,
            pipe_rt::trainingFingerprint(flags.options)) != PIPE_RT_OK) {
      pipe_rt_session_destroy(session);
      die("rank " + std::to_string(transport->rank()) + ": " + artifact +
          ": " + message);
      transport->abortJob(pipe_rt::ExitError);
    }
    // The groups of ranks that draw data: one per replica, or one per rank
    // where each rank runs several replicas on its parameter server.
    int ranksPerReplica = std::max(1, transport->size() / replicas);
    training.replicas = transport->size() / ranksPerReplica;
    training.replica = transport->rank() / ranksPerReplica;
    distribute(*transport, session, training);
  }
#endif
#ifdef PIPE_RUNNER_CUDA
  // The profile's memory figures of the GPUs: the runtime's pool (every
  // allocation the runtime makes, cuBLAS workspaces included) and the
  // driver's view of the whole device.
  if (useGpu)
    training.profileExtra = [] {
      std::string pools, driver;
      for (int g = 0; g < pipe_rt_cuda_device_count(nullptr, 0); ++g) {
        uint64_t inUse = 0, peak = 0, reserved = 0, used = 0, total = 0;
        pipe_rt_cuda_pool_stats(g, &inUse, &peak, &reserved);
        pipe_rt_cuda_device_memory(g, &used, &total);
        std::string sep = g ? "," : "";
        pools += sep + "{\"peak\":" + std::to_string(peak) +
                 ",\"reserved\":" + std::to_string(reserved) + "}";
        driver += sep + "{\"used\":" + std::to_string(used) +
                  ",\"total\":" + std::to_string(total) + "}";
      }
      return "\"gpu_pool_bytes\":[" + pools + "],\"gpu_driver_bytes\":[" +
             driver + "]";
    };
#endif

  pipe_rt::TrainerSummary summary;
  bool ok = pipe_rt::runTraining(session, training, summary, message);
  pipe_rt_session_destroy(session);
  if (!ok && transport) {
    // The other ranks may wait for this one: end them too.
    die("rank " + std::to_string(transport->rank()) + ": " + message);
    transport->abortJob(pipe_rt::ExitError);
  }
  if (!ok)
    return die(message);
  if (summary.interrupted) {
    if (!transport || transport->rank() == 0)
      std::printf("stopped at step %lld%s\n", (long long)summary.steps,
                  summary.checkpointWritten.empty()
                      ? " (no --checkpoint: progress is lost)"
                      : "; continue with --resume");
    return pipe_rt::ExitInterrupted;
  }
  return pipe_rt::ExitOk;
}
