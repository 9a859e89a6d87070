//===- InputGuard.cpp - Reading untrusted IR without crashing -------------===//

#include "pipe/Support/InputGuard.h"
#include "pipe/Support/InputFile.h"
#include "pipe/Support/InputNesting.h"
#include "pipe/Support/InputUpgrade.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/thread.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <pthread.h>
#endif

using namespace mlir;
using namespace mlir::pipe;
using llvm::StringRef;

namespace cl = llvm::cl;

const InputLimits &
pipe::registerInputLimitOptions(cl::OptionCategory *category) {
  static InputLimits limits;
  static cl::opt<unsigned, true> maxNesting(
      "pipe-max-nesting",
      cl::desc("Reject input whose brackets, affine expressions and alias "
               "chains nest deeper than this before parsing it (0: no "
               "limit; deep input can then exhaust the stack)"),
      cl::location(limits.maxNesting), cl::init(limits.maxNesting));
  static cl::opt<uint64_t, true> maxExpansion(
      "pipe-max-expansion",
      cl::desc("Reject input whose alias uses expand to more than this many "
               "bytes before parsing it (0: no limit; a chain of aliases "
               "that each use the previous one twice can then take forever "
               "to print)"),
      cl::location(limits.maxExpansion), cl::init(limits.maxExpansion));
  static cl::opt<bool, true> allowBytecode(
      "pipe-allow-bytecode",
      cl::desc("Read MLIR bytecode input (MLIR's bytecode reader does not "
               "survive damaged files; only use trusted ones)"),
      cl::location(limits.allowBytecode), cl::init(limits.allowBytecode));
  static cl::opt<bool, true> containParse(
      "pipe-contain-parse",
      cl::desc("Parse the input in a child process first, so that a crash "
               "of MLIR's parser is reported instead of taking the tool "
               "down (false: parse once, in-process)"),
      cl::location(limits.containParse), cl::init(limits.containParse));
  static cl::opt<bool, true> upgradeSyntax(
      "pipe-upgrade-input",
      cl::desc("Rewrite older syntax of torch-mlir and TOSA exports that has "
               "one MLIR 22 form (tensor.expand_shape without output_shape, "
               "tosa.const value =, ...), with a warning for each rewrite "
               "(false: report it as an error)"),
      cl::location(limits.upgradeSyntax), cl::init(limits.upgradeSyntax));
  if (category)
    for (cl::Option *option : std::initializer_list<cl::Option *>{
             &maxNesting, &maxExpansion, &allowBytecode, &containParse,
             &upgradeSyntax})
      option->addCategory(*category);
  return limits;
}

void pipe::printAtOffset(const llvm::MemoryBuffer &file, size_t offset,
                         StringRef severity, const llvm::Twine &message) {
  StringRef text = file.getBuffer();
  offset = std::min(offset, text.size());
  StringRef before = text.take_front(offset);
  size_t line = before.count('\n') + 1;
  size_t lineStart = before.rfind('\n');
  size_t column = lineStart == StringRef::npos ? offset + 1
                                               : offset - lineStart;
  llvm::errs() << file.getBufferIdentifier() << ':' << line << ':' << column
               << ": " << severity << ": " << message << "\n";
}

LogicalResult pipe::reportAtOffset(const llvm::MemoryBuffer &file,
                                   size_t offset, const llvm::Twine &message) {
  printAtOffset(file, offset, "error", message);
  return failure();
}

size_t pipe::endOfStringLiteral(StringRef text, size_t begin) {
  for (size_t i = begin + 1; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;
    else if (text[i] == '"')
      return i + 1;
  }
  return StringRef::npos;
}

namespace {

/// Checks the string literals of the file: each must end before the file
/// does (MLIR 22's lexer reads past the end of a file truncated inside a
/// resource's hex string), and hex blobs in the metadata section must start
/// with a power-of-two alignment (alignment 0 makes the parser ask for all
/// of memory).
LogicalResult checkStrings(const llvm::MemoryBuffer &file) {
  StringRef text = file.getBuffer();
  size_t metadata = text.find("{-#");
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      size_t eol = text.find('\n', i);
      if (eol == StringRef::npos)
        break;
      i = eol;
      continue;
    }
    if (c != '"')
      continue;
    size_t end = endOfStringLiteral(text, i);
    if (end == StringRef::npos)
      return reportAtOffset(file, i,
                            "string literal not terminated before the end "
                            "of the file (is the file truncated?)");
    StringRef literal = text.slice(i + 1, end - 1);
    if (metadata != StringRef::npos && i > metadata &&
        literal.starts_with("0x") && literal.size() >= 10) {
      // Little-endian uint32 alignment, then the data.
      uint32_t alignment = 0;
      bool hex = true;
      for (int b = 3; b >= 0 && hex; --b) {
        unsigned value;
        hex = !literal.substr(2 + 2 * b, 2).getAsInteger(16, value);
        alignment = alignment << 8 | value;
      }
      if (hex && (alignment == 0 || !llvm::isPowerOf2_32(alignment) ||
                  alignment > (1u << 16)))
        return reportAtOffset(
            file, i,
            "resource blob declares alignment " + llvm::Twine(alignment) +
                " (its first 4 bytes); a blob's alignment is a power of two "
                "no larger than 65536, e.g. \"0x04000000...\" for 4");
    }
    i = end - 1;
  }
  return success();
}

/// A child's stderr, read until it closes, at most `limit` bytes kept.
std::string drain(int fd, size_t limit) {
  std::string kept;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (kept.size() < limit)
      kept.append(buffer, std::min(size_t(n), limit - kept.size()));
  }
  return kept;
}

/// What the child said about what went wrong: its first diagnostic (the
/// parser's own error, which says where), or else a runtime's last words
/// (LLVM ERROR, glibc's heap checks).
std::string lastWords(StringRef output) {
  SmallVector<StringRef> lines;
  output.split(lines, '\n');
  for (StringRef line : lines)
    if (line.contains(": error: "))
      return line.trim().take_front(300).str();
  for (StringRef line : lines) {
    line = line.trim();
    if (line.starts_with("LLVM ERROR") || line.contains("double free") ||
        line.contains("corrupted") || line.contains("free()"))
      return line.take_front(300).str();
  }
  return {};
}

} // namespace

bool pipe::isBytecode(const llvm::MemoryBuffer &file) {
  return file.getBuffer().starts_with("ML\xefR");
}

void pipe::noteBytecodeFailure(StringRef name) {
  llvm::errs() << name
               << ": note: the input is MLIR bytecode, whose errors carry no "
                  "location, and older syntax is upgraded in text only: if "
                  "another MLIR release wrote it, convert it to text with "
                  "that release's mlir-opt\n";
}

LogicalResult pipe::checkInputText(const llvm::MemoryBuffer &file,
                                   const InputLimits &limits) {
  StringRef text = file.getBuffer();
  if (isBytecode(file)) {
    if (limits.allowBytecode)
      return success();
    return reportAtOffset(
        file, 0,
        "input is MLIR bytecode, which is read only with "
        "--pipe-allow-bytecode (MLIR's bytecode reader is not safe on "
        "damaged files); use textual IR");
  }
  // The MLIR lexer skips NUL bytes silently, so a file with binary junk
  // after a NUL could "parse"; text input never contains one.
  size_t nul = text.find('\0');
  if (nul != StringRef::npos)
    return reportAtOffset(file, nul,
                          "input contains a NUL byte; MLIR text never does "
                          "(is this a binary file?)");
  if (limits.maxNesting != 0 || limits.maxExpansion != 0) {
    NestingEstimate estimate =
        estimateNesting(text, limits.maxNesting, limits.maxExpansion);
    if (limits.maxNesting != 0 && estimate.depth > limits.maxNesting)
      return reportAtOffset(
          file, estimate.offset,
          "input nests more than " + llvm::Twine(limits.maxNesting) +
              " levels deep here (brackets, affine operators and alias "
              "chains count); it is rejected before parsing to avoid "
              "exhausting the stack (see --pipe-max-nesting)");
    if (limits.maxExpansion != 0 &&
        estimate.expandedBytes > limits.maxExpansion)
      return reportAtOffset(
          file, estimate.expansionOffset,
          "alias uses up to here expand to more than " +
              llvm::Twine(limits.maxExpansion) +
              " bytes when printed; the input is rejected before parsing "
              "(see --pipe-max-expansion)");
  }
  return checkStrings(file);
}

ContainedRun pipe::runContained(llvm::function_ref<void()> work) {
  ContainedRun run;
  int pipeFds[2];
  if (::pipe(pipeFds) != 0) {
    run.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return run;
  }
  // Flush what the parent has buffered, or the child prints it again.
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) {
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
    run.error = std::string("cannot fork: ") + std::strerror(errno);
    return run;
  }
  run.started = true;
  if (child == 0) {
    // A crash ends the child at once: LLVM's handlers, inherited from the
    // parent, would print a stack trace, and with the heap corrupted (what
    // a crash of the parser often means) their malloc can wait forever on
    // the lock the failing malloc holds, leaving the parent waiting too.
    for (int signal :
         {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS})
      ::signal(signal, SIG_DFL);
    ::close(pipeFds[0]);
    ::dup2(pipeFds[1], STDERR_FILENO);
    ::dup2(pipeFds[1], STDOUT_FILENO);
    work();
#if defined(__GLIBC__)
    // Walks the heap: corruption that did not crash `work` aborts here.
    malloc_trim(0);
#endif
    ::_exit(0);
  }
  ::close(pipeFds[1]);
  run.output = drain(pipeFds[0], 64 << 10);
  ::close(pipeFds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    run.ok = true;
  } else if (WIFSIGNALED(status)) {
    run.error = std::string("crashed (") + ::strsignal(WTERMSIG(status)) + ")";
  } else {
    run.error = "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return run;
}

LogicalResult pipe::probeParse(const llvm::MemoryBuffer &file,
                               const DialectRegistry &registry,
                               StringRef splitMarker) {
  StringRef name = file.getBufferIdentifier();
  ContainedRun run = runContained([&] {
    // Only this thread exists in the child: no thread pool.
    MLIRContext context(registry, MLIRContext::Threading::DISABLED);
    auto parseChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                          raw_ostream &) -> LogicalResult {
      llvm::SourceMgr sourceMgr;
      sourceMgr.AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
      // Into the pipe: the last diagnostic before a crash says where.
      SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());
      OwningOpRef<ModuleOp> module =
          parseSourceFile<ModuleOp>(sourceMgr, &context);
      return success(bool(module));
    };
    auto copy = llvm::MemoryBuffer::getMemBufferCopy(file.getBuffer(), name);
    if (splitMarker.empty())
      (void)parseChunk(std::move(copy), llvm::nulls());
    else
      (void)splitAndProcessBuffer(std::move(copy),
                                  NoSourceChunkBufferHandler(parseChunk),
                                  llvm::nulls(), splitMarker, splitMarker);
  });
  if (run.ok)
    return success();
  if (run.started) {
    llvm::errs() << name << ": error: MLIR's parser " << run.error
                 << " while reading this file, so it was not read; this is a "
                    "bug in MLIR 22 that this input triggers: check the file "
                    "for damage";
    std::string words = lastWords(run.output);
    if (!words.empty())
      llvm::errs() << " (the parser said: " << words << ")";
    llvm::errs() << "\n";
    return failure();
  }
  llvm::errs() << name << ": error: " << run.error
               << " to parse the input safely (--pipe-contain-parse=false "
                  "parses it in-process)\n";
  return failure();
}

std::unique_ptr<llvm::MemoryBuffer>
pipe::readUntrustedFile(StringRef path, const DialectRegistry &registry,
                        const InputLimits &limits, StringRef splitMarker) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> read =
      readInputFile(path, /*isText=*/false);
  if (!read) {
    llvm::errs() << path
                 << ": error: cannot open: " << llvm::toString(read.takeError())
                 << "\n";
    return nullptr;
  }
  std::unique_ptr<llvm::MemoryBuffer> file = std::move(*read);
  if (failed(checkInputText(*file, limits)))
    return nullptr;
  FailureOr<std::unique_ptr<llvm::MemoryBuffer>> upgraded =
      upgradeOlderSyntax(*file, limits.upgradeSyntax);
  if (failed(upgraded))
    return nullptr;
  if (*upgraded)
    file = std::move(*upgraded);
  if (limits.containParse &&
      failed(probeParse(*file, registry, splitMarker)))
    return nullptr;
  return file;
}

OwningOpRef<ModuleOp> pipe::parseUntrustedFile(StringRef path,
                                               MLIRContext &context,
                                               llvm::SourceMgr &sourceMgr,
                                               const InputLimits &limits) {
  std::unique_ptr<llvm::MemoryBuffer> file =
      readUntrustedFile(path, context.getDialectRegistry(), limits);
  if (!file)
    return nullptr;
  bool bytecode = isBytecode(*file);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module && bytecode)
    noteBytecodeFailure(path);
  return module;
}

void pipe::runWithLargeStack(llvm::function_ref<void()> work) {
#if defined(__GLIBC__)
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) == 0) {
    if (pthread_attr_setstacksize(&attr, size_t(64) << 20) == 0)
      (void)pthread_setattr_default_np(&attr);
    pthread_attr_destroy(&attr);
  }
#endif
  llvm::thread worker(std::optional<unsigned>(256u << 20), [&] { work(); });
  worker.join();
}
