//===- SafetensorsIO.cpp - Minimal safetensors reader/writer --------------===//
//
// Format: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
//  "__metadata__": {...}}, then the data; offsets are relative to the data.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsIO.h"
#include "OutputFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace pipe_rt {
namespace {

const std::map<std::string, size_t> &dtypeSizes() {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1},
      {"U16", 2}, {"U32", 4}, {"U64", 8}};
  return sizes;
}

/// "BF16, BOOL, ...": the supported dtypes, for errors.
std::string stDtypeNames() {
  std::string names;
  for (const auto &entry : dtypeSizes())
    names += (names.empty() ? "" : ", ") + entry.first;
  return names;
}

/// The reader's JSON: a parser that knows the header's schema, so that every
/// error names the tensor and the field, and that nothing but the output is
/// allocated (a generic JSON tree of a hostile header can be many times its
/// size). Strings are checked to be UTF-8 before parsing.
class HeaderParser {
public:
  HeaderParser(const char *begin, const char *end, uint64_t dataSize)
      : begin(begin), p(begin), end(end), dataSize(dataSize) {}

  bool parse(StFile &out, std::string &error) {
    size_t badByte;
    if (!isUtf8(badByte)) {
      error = "header is not valid UTF-8 (byte " + std::to_string(badByte) +
              " of the header)";
      return false;
    }
    bool ok = parseRoot(out) && checkLayout(out);
    if (!ok)
      error = msg;
    return ok;
  }

private:
  const char *begin, *p, *end;
  uint64_t dataSize;
  std::string msg;

  bool fail(const std::string &what) {
    if (msg.empty())
      msg = what;
    return false;
  }
  bool syntax(const char *what) {
    return fail("malformed JSON header at byte " + std::to_string(p - begin) +
                ": " + what);
  }
  static std::string tensorField(const std::string &tensor,
                                 const std::string &field) {
    return "tensor '" + tensor + "': " + field + ": ";
  }

  /// Strict UTF-8 (no overlong forms, surrogates or code points above
  /// U+10FFFF); `bad` is the offset of the first bad byte.
  bool isUtf8(size_t &bad) const {
    const auto *s = reinterpret_cast<const unsigned char *>(begin);
    size_t n = size_t(end - begin);
    for (size_t i = 0; i < n;) {
      unsigned c = s[i];
      size_t len = c < 0x80             ? 1
                   : (c & 0xE0) == 0xC0 ? 2
                   : (c & 0xF0) == 0xE0 ? 3
                   : (c & 0xF8) == 0xF0 ? 4
                                        : 0;
      bad = i;
      if (!len || n - i < len)
        return false;
      unsigned cp = len == 1 ? c : c & (0x7F >> len);
      for (size_t k = 1; k < len; ++k) {
        if ((s[i + k] & 0xC0) != 0x80)
          return false;
        cp = (cp << 6) | (s[i + k] & 0x3F);
      }
      static const unsigned minimum[] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < minimum[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
        return false;
      i += len;
    }
    return true;
  }

  void skipSpace() {
    while (p != end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
      ++p;
  }
  /// Consumes `c` (after white space) if it is next.
  bool consume(char c) {
    skipSpace();
    if (p == end || *p != c)
      return false;
    ++p;
    return true;
  }
  bool peek(char c) {
    skipSpace();
    return p != end && *p == c;
  }

  /// `{ "key": <value>, ... }`, calling `member(key)` with `p` at the value.
  template <typename F> bool parseObject(F member) {
    if (!consume('{'))
      return syntax("expected '{'");
    if (consume('}'))
      return true;
    while (true) {
      std::string key;
      skipSpace();
      if (!parseString(key))
        return false;
      if (!consume(':'))
        return syntax("expected ':'");
      skipSpace();
      if (!member(key))
        return false;
      if (consume(','))
        continue;
      if (consume('}'))
        return true;
      return syntax("expected ',' or '}'");
    }
  }
  /// `[ <value>, ... ]`, calling `item(index)` with `p` at the value.
  template <typename F> bool parseArray(F item) {
    if (!consume('['))
      return syntax("expected '['");
    if (consume(']'))
      return true;
    for (size_t i = 0;; ++i) {
      skipSpace();
      if (!item(i))
        return false;
      if (consume(','))
        continue;
      if (consume(']'))
        return true;
      return syntax("expected ',' or ']'");
    }
  }

  bool parseString(std::string &out) {
    if (p == end || *p != '"')
      return syntax("expected a string");
    ++p;
    while (true) {
      if (p == end)
        return syntax("unterminated string");
      char c = *p++;
      if (c == '"')
        return true;
      if ((unsigned char)c < 0x20)
        return syntax("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (p == end)
        return syntax("unterminated escape");
      char e = *p++;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out.push_back(e);
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        unsigned cp = 0;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) { // surrogate pair
          unsigned lo = 0;
          if (end - p < 2 || p[0] != '\\' || p[1] != 'u')
            return syntax("unpaired surrogate");
          p += 2;
          if (!hex4(lo) || lo < 0xDC00 || lo >= 0xE000)
            return syntax("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return syntax("unpaired surrogate");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return syntax("unknown escape");
      }
    }
  }
  bool hex4(unsigned &out) {
    if (end - p < 4)
      return syntax("short \\u escape");
    for (int i = 0; i < 4; ++i) {
      char c = *p++;
      unsigned v = c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : 16;
      if (v == 16)
        return syntax("bad \\u escape");
      out = out * 16 + v;
    }
    return true;
  }
  static void appendUtf8(std::string &s, unsigned cp) {
    if (cp < 0x80) {
      s.push_back(char(cp));
    } else if (cp < 0x800) {
      s.push_back(char(0xC0 | (cp >> 6)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(char(0xE0 | (cp >> 12)));
      s.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(char(0xF0 | (cp >> 18)));
      s.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    }
  }

  /// A JSON integer >= 0 (no sign, fraction, exponent or leading zero), for
  /// field `what` of tensor `tensor`.
  bool parseUnsigned(const std::string &tensor, const std::string &what,
                     uint64_t &out) {
    std::string where = tensorField(tensor, what);
    if (p != end && *p == '-')
      return fail(where + "expected a non-negative integer");
    if (p == end || !(*p >= '0' && *p <= '9'))
      return fail(where + "expected a non-negative integer");
    const char *digits = p;
    out = 0;
    while (p != end && *p >= '0' && *p <= '9') {
      unsigned d = unsigned(*p++ - '0');
      if (out > (UINT64_MAX - d) / 10)
        return fail(where + "integer out of range");
      out = out * 10 + d;
    }
    if (p - digits > 1 && *digits == '0')
      return fail(where + "integer with a leading zero");
    if (p != end && (*p == '.' || *p == 'e' || *p == 'E'))
      return fail(where + "expected an integer, not a fraction");
    return true;
  }

  bool parseRoot(StFile &out) {
    if (!peek('{'))
      return fail("the header is not a JSON object");
    std::set<std::string> names;
    bool metadata = false;
    bool ok = parseObject([&](const std::string &key) {
      if (key == "__metadata__") {
        if (metadata)
          return fail("__metadata__ appears twice");
        metadata = true;
        return parseMetadata();
      }
      if (!names.insert(key).second)
        return fail("duplicate tensor name '" + key + "'");
      out.tensors.emplace_back();
      return parseTensor(key, out.tensors.back());
    });
    if (!ok)
      return false;
    skipSpace();
    return p == end || syntax("trailing characters after the JSON header");
  }

  /// `__metadata__`: an object of strings; the runtime keeps none of it.
  bool parseMetadata() {
    std::set<std::string> keys;
    if (!peek('{'))
      return fail("__metadata__: expected an object of strings");
    return parseObject([&](const std::string &key) {
      if (!keys.insert(key).second)
        return fail("__metadata__: duplicate key '" + key + "'");
      std::string value;
      if (!peek('"'))
        return fail("__metadata__." + key + ": expected a string");
      return parseString(value);
    });
  }

  bool parseTensor(const std::string &name, StTensor &t) {
    t.name = name;
    if (!peek('{'))
      return fail("tensor '" + name +
                  "': expected an object with dtype, shape and data_offsets");
    bool hasDtype = false, hasShape = false, hasOffsets = false;
    uint64_t offsets[2] = {0, 0};
    bool ok = parseObject([&](const std::string &key) {
      bool *seen = key == "dtype"          ? &hasDtype
                   : key == "shape"        ? &hasShape
                   : key == "data_offsets" ? &hasOffsets
                                           : nullptr;
      if (!seen)
        return fail("tensor '" + name + "': unknown field '" + key + "'");
      if (*seen)
        return fail("tensor '" + name + "': duplicate field '" + key + "'");
      *seen = true;
      if (key == "dtype") {
        if (!peek('"'))
          return fail(tensorField(name, key) + "expected a string");
        return parseString(t.dtype);
      }
      if (!peek('['))
        return fail(tensorField(name, key) +
                    (key == "shape" ? "expected an array of integers"
                                    : "expected an array [begin, end]"));
      if (key == "shape")
        return parseArray([&](size_t i) {
          uint64_t dim;
          std::string what = "shape[" + std::to_string(i) + "]";
          if (!parseUnsigned(name, what, dim))
            return false;
          if (dim > uint64_t(INT64_MAX))
            return fail(tensorField(name, what) + "dimension too large");
          t.shape.push_back(int64_t(dim));
          return true;
        });
      size_t count = 0;
      return parseArray([&](size_t i) {
               if (i >= 2)
                 return fail(tensorField(name, key) +
                             "expected an array [begin, end]");
               ++count;
               return parseUnsigned(
                   name, "data_offsets[" + std::to_string(i) + "]", offsets[i]);
             }) &&
             (count == 2 ||
              fail(tensorField(name, key) + "expected an array [begin, end]"));
    });
    if (!ok)
      return false;
    if (!hasDtype)
      return fail(tensorField(name, "dtype") + "missing");
    if (!hasShape)
      return fail(tensorField(name, "shape") + "missing");
    if (!hasOffsets)
      return fail(tensorField(name, "data_offsets") + "missing");
    size_t elemSize = stDtypeSize(t.dtype);
    if (!elemSize)
      return fail(tensorField(name, "dtype") + "unknown dtype '" + t.dtype +
                  "' (supported: " + stDtypeNames() + ")");
    t.begin = offsets[0];
    t.end = offsets[1];
    std::string where = tensorField(name, "data_offsets");
    if (t.begin > t.end)
      return fail(where + "begin " + std::to_string(t.begin) +
                  " is after end " + std::to_string(t.end));
    if (t.end > dataSize)
      return fail(where + "end " + std::to_string(t.end) +
                  " is beyond the data buffer (" + std::to_string(dataSize) +
                  " bytes)");
    uint64_t bytes = elemSize;
    for (int64_t d : t.shape) {
      if (d && bytes > UINT64_MAX / uint64_t(d))
        return fail(tensorField(name, "shape") + "element count overflows");
      bytes *= uint64_t(d);
    }
    if (bytes != t.end - t.begin)
      return fail(where + "span of " + std::to_string(t.end - t.begin) +
                  " bytes does not match shape and dtype (" +
                  std::to_string(bytes) + " bytes)");
    return true;
  }

  /// The tensors tile the data buffer: sorted by offsets, each begins where
  /// the previous one ends and the last ends at the end of the file (as the
  /// reference library requires), so no byte is shared or unaccounted for.
  bool checkLayout(const StFile &out) {
    std::vector<const StTensor *> order;
    for (const StTensor &t : out.tensors)
      order.push_back(&t);
    std::sort(order.begin(), order.end(),
              [](const StTensor *a, const StTensor *b) {
                return std::tie(a->begin, a->end, a->name) <
                       std::tie(b->begin, b->end, b->name);
              });
    uint64_t covered = 0;
    const StTensor *previous = nullptr;
    for (const StTensor *t : order) {
      std::string range =
          "[" + std::to_string(t->begin) + ", " + std::to_string(t->end) + "]";
      if (t->begin < covered)
        return fail(tensorField(t->name, "data_offsets") + range +
                    " overlaps tensor '" + previous->name + "' [" +
                    std::to_string(previous->begin) + ", " +
                    std::to_string(previous->end) + "]");
      if (t->begin > covered)
        return fail(tensorField(t->name, "data_offsets") + range +
                    " leaves data bytes [" + std::to_string(covered) + ", " +
                    std::to_string(t->begin) +
                    ") unused (tensors must cover the data exactly)");
      covered = t->end;
      previous = t;
    }
    if (covered != dataSize)
      return fail("the tensors cover " + std::to_string(covered) + " of the " +
                  std::to_string(dataSize) +
                  " data bytes (trailing bytes after the last tensor)");
    return true;
  }
};

/// Safetensors are read whole: a device or a pipe (/dev/zero never ends, a
/// FIFO without a writer blocks the open) is refused before reading.
bool readAll(const std::string &path, std::vector<unsigned char> &out,
             std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file (a safetensors file is read whole)";
    return false;
  }
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  unsigned char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    out.insert(out.end(), buf, buf + n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad)
    error = path + ": read error";
  return !bad;
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if ((unsigned char)c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", unsigned(c));
      out += esc;
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

bool writeFully(int fd, const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += n;
    bytes -= size_t(n);
  }
  return true;
}

} // namespace

const StTensor *StFile::find(const std::string &name) const {
  for (const StTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

size_t stDtypeSize(const std::string &dtype) {
  auto it = dtypeSizes().find(dtype);
  return it == dtypeSizes().end() ? 0 : it->second;
}

bool parseSafetensors(const std::string &name, const unsigned char *bytes,
                      size_t size, StFile &out, std::string &error) {
  auto bad = [&](const std::string &what) {
    error = name + ": " + what;
    return false;
  };
  if (size < 8)
    return bad("file is " + std::to_string(size) +
               " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | bytes[i];
  if (n > kStMaxHeaderBytes)
    return bad("header length " + std::to_string(n) + " exceeds the limit of " +
               std::to_string(kStMaxHeaderBytes) + " bytes");
  if (n > size - 8)
    return bad("header length " + std::to_string(n) + " exceeds the " +
               std::to_string(size - 8) +
               " bytes that follow it (truncated file?)");
  const char *hdr = reinterpret_cast<const char *>(bytes + 8);
  StFile file;
  std::string what;
  if (!HeaderParser(hdr, hdr + n, size - 8 - n).parse(file, what))
    return bad(what);
  file.data.assign(bytes + 8 + n, bytes + size);
  out = std::move(file);
  return true;
}

bool readSafetensors(const std::string &path, StFile &out, std::string &error) {
  std::vector<unsigned char> bytes;
  if (!readAll(path, bytes, error))
    return false;
  return parseSafetensors(path, bytes.data(), bytes.size(), out, error);
}

bool writeSafetensors(const std::string &path,
                      const std::vector<StWriteTensor> &tensors,
                      std::string &error) {
  std::string header = "{";
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const StWriteTensor &t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape)
      numel *= uint64_t(d);
    uint64_t bytes = numel * stDtypeSize(t.dtype);
    sizes.push_back(bytes);
    if (header.size() > 1)
      header += ",";
    header += jsonString(t.name) + ":{\"dtype\":" + jsonString(t.dtype) +
              ",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  // Pad with spaces so the data starts 8-byte aligned, as other writers do.
  while ((header.size() + 8) % 8)
    header.push_back(' ');

  std::string dir = ".";
  size_t slash = path.rfind('/');
  if (slash != std::string::npos)
    dir = slash == 0 ? "/" : path.substr(0, slash);
  if (!checkReplaceable(path, error))
    return false;
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    error = tmp + ": cannot create: " + std::strerror(errno);
    return false;
  }
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = (uint64_t(header.size()) >> (8 * i)) & 0xFF;
  bool ok =
      writeFully(fd, len, 8) && writeFully(fd, header.data(), header.size());
  for (size_t i = 0; ok && i < tensors.size(); ++i)
    ok = writeFully(fd, tensors[i].data, sizes[i]);
  ok = ok && ::fsync(fd) == 0;
  int savedErrno = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok) {
    error = tmp + ": write failed: " + std::strerror(savedErrno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error =
        path + ": cannot rename the temporary file: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  // Make the rename itself durable.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

} // namespace pipe_rt
