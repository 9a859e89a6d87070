//===- OutputFile.cpp - Outputs checked first, written atomically ---------===//

#include "OutputFile.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace pipe_rt {
namespace {

/// The directory `path` is in ("." for a bare name).
std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool writeFully(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

} // namespace

/// `path` made absolute with its `.` and `..` removed, by their spelling.
static std::string withoutDots(const std::string &path) {
  std::string absolute = path;
  if (path.empty() || path[0] != '/') {
    char *cwd = ::getcwd(nullptr, 0);
    absolute = std::string(cwd ? cwd : ".") + "/" + path;
    std::free(cwd);
  }
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= absolute.size()) {
    size_t end = absolute.find('/', start);
    if (end == std::string::npos)
      end = absolute.size();
    std::string part = absolute.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty())
        parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (const std::string &part : parts)
    out += "/" + part;
  return out.empty() ? "/" : out;
}

/// The directory of `path` resolved (links, `.`, `..`) where it exists,
/// else spelled without dots, and its file name: one spelling per file
/// that may not exist yet (as pipe::isSameFile of the compiler tools).
static std::string canonicalPath(const std::string &path) {
  std::string plain = withoutDots(path);
  size_t slash = plain.rfind('/');
  std::string directory = slash == 0 ? "/" : plain.substr(0, slash);
  char *resolved = ::realpath(directory.c_str(), nullptr);
  if (!resolved)
    return plain;
  std::string out = std::string(resolved) + plain.substr(slash);
  std::free(resolved);
  return out;
}

bool isSameFile(const std::string &a, const std::string &b) {
  if (a == b)
    return true;
  struct stat sa, sb;
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  // Outputs usually do not exist yet: `./x` and `x` are still one file.
  return canonicalPath(a) == canonicalPath(b);
}

bool checkOutputPath(const std::string &flag, const std::string &path,
                     OutputKind kind, std::string &error) {
  auto bad = [&](const std::string &why) {
    error = flag + " '" + path + "': " + why;
    return false;
  };
  if (path.empty())
    return bad("empty path");
  if (path.back() == '/')
    return bad("names a directory, not a file");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return bad("is a directory");
    if (!S_ISREG(st.st_mode)) {
      // Renaming a temporary over a device or a pipe would replace it.
      if (kind == OutputKind::Replaced)
        return bad("is not a regular file (outputs are written to a "
                   "temporary file renamed over the path)");
      if (::access(path.c_str(), W_OK) != 0)
        return bad(std::string("cannot write: ") + std::strerror(errno));
      return true;
    }
    if (kind == OutputKind::Streamed && ::access(path.c_str(), W_OK) != 0)
      return bad(std::string("cannot write: ") + std::strerror(errno));
  }
  std::string dir = directoryOf(path);
  if (::stat(dir.c_str(), &st) != 0)
    return bad("directory '" + dir + "' does not exist");
  if (!S_ISDIR(st.st_mode))
    return bad("'" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return bad("cannot write in directory '" + dir +
               "': " + std::strerror(errno));
  return true;
}

std::string temporaryPath(const std::string &path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void removeStaleTemporaries(const std::string &path) {
  std::string dir = directoryOf(path);
  // rfind gives npos for a bare name, and npos + 1 is 0.
  std::string prefix = path.substr(path.rfind('/') + 1) + ".tmp.";
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  while (const struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix))
      continue;
    std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    pid_t pid = pid_t(std::stol(digits));
    // Only a process that surely no longer exists: a live one (another
    // writer of the same path, or an unrelated process that reused the pid)
    // keeps its file.
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
      ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
}

bool checkReplaceable(const std::string &path, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode))
    return true;
  error = path + ": not a regular file (the file is replaced atomically, "
                 "which only a regular file can be)";
  return false;
}

bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error) {
  if (!checkReplaceable(path, error))
    return false;
  removeStaleTemporaries(path);
  std::string tmp = temporaryPath(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    error = path + ": cannot create the temporary file " + tmp + ": " +
            std::strerror(errno);
    return false;
  }
  bool ok = writeFully(fd, bytes.data(), bytes.size()) && ::fsync(fd) == 0;
  int savedErrno = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    error = path + ": cannot write: " + std::strerror(savedErrno);
    return false;
  }
  // Make the rename itself durable.
  int dfd = ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

} // namespace pipe_rt
