//===- SafetensorsIO.cpp - Minimal safetensors reader/writer --------------===//
//
// Format: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
//  "__metadata__": {...}}, then the data; offsets are relative to the data.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsIO.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace pipe_rt {
namespace {

/// A parsed JSON value; only what safetensors headers need.
struct Json {
  enum Kind { Null, Bool, Int, String, Array, Object } kind = Null;
  int64_t integer = 0;
  bool boolean = false;
  std::string string;
  std::vector<Json> items;                           // Array
  std::vector<std::pair<std::string, Json>> members; // Object, in order
};

class JsonParser {
public:
  JsonParser(const char *begin, const char *end) : p(begin), end(end) {}

  bool parseDocument(Json &out, std::string &error) {
    if (!parseValue(out, 0) || (skipSpace(), p != end)) {
      error = msg.empty() ? "trailing characters after the JSON header" : msg;
      return false;
    }
    return true;
  }

private:
  const char *p, *end;
  std::string msg;

  bool fail(const char *what) {
    if (msg.empty())
      msg = std::string("malformed JSON header: ") + what;
    return false;
  }
  void skipSpace() {
    while (p != end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
      ++p;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (size_t(end - p) < n || std::memcmp(p, word, n) != 0)
      return fail("unknown literal");
    p += n;
    return true;
  }

  bool parseString(std::string &out) {
    if (p == end || *p != '"')
      return fail("expected a string");
    ++p;
    while (true) {
      if (p == end)
        return fail("unterminated string");
      char c = *p++;
      if (c == '"')
        return true;
      if ((unsigned char)c < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (p == end)
        return fail("unterminated escape");
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
            return fail("unpaired surrogate");
          p += 2;
          if (!hex4(lo) || lo < 0xDC00 || lo >= 0xE000)
            return fail("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return fail("unpaired surrogate");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return fail("unknown escape");
      }
    }
  }
  bool hex4(unsigned &out) {
    if (end - p < 4)
      return fail("short \\u escape");
    for (int i = 0; i < 4; ++i) {
      char c = *p++;
      unsigned v = c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : 16;
      if (v == 16)
        return fail("bad \\u escape");
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

  bool parseValue(Json &out, int depth) {
    if (depth > 64)
      return fail("nested too deeply");
    skipSpace();
    if (p == end)
      return fail("unexpected end");
    char c = *p;
    if (c == '"') {
      out.kind = Json::String;
      return parseString(out.string);
    }
    if (c == '{') {
      out.kind = Json::Object;
      ++p;
      skipSpace();
      if (p != end && *p == '}')
        return ++p, true;
      while (true) {
        skipSpace();
        std::pair<std::string, Json> member;
        if (!parseString(member.first))
          return false;
        skipSpace();
        if (p == end || *p != ':')
          return fail("expected ':'");
        ++p;
        if (!parseValue(member.second, depth + 1))
          return false;
        out.members.push_back(std::move(member));
        skipSpace();
        if (p != end && *p == ',') {
          ++p;
          continue;
        }
        if (p != end && *p == '}')
          return ++p, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      out.kind = Json::Array;
      ++p;
      skipSpace();
      if (p != end && *p == ']')
        return ++p, true;
      while (true) {
        out.items.emplace_back();
        if (!parseValue(out.items.back(), depth + 1))
          return false;
        skipSpace();
        if (p != end && *p == ',') {
          ++p;
          continue;
        }
        if (p != end && *p == ']')
          return ++p, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == 't' || c == 'f') {
      out.kind = Json::Bool;
      out.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n')
      return literal("null");
    if (c == '-' || (c >= '0' && c <= '9')) {
      // Integers only: safetensors headers never need fractions, and a
      // metadata value that is a number is skipped as an integer too.
      bool neg = c == '-';
      if (neg)
        ++p;
      if (p == end || !(*p >= '0' && *p <= '9'))
        return fail("bad number");
      uint64_t v = 0;
      while (p != end && *p >= '0' && *p <= '9') {
        if (v > (uint64_t(INT64_MAX) - (*p - '0')) / 10)
          return fail("integer out of range");
        v = v * 10 + (*p++ - '0');
      }
      if (p != end && (*p == '.' || *p == 'e' || *p == 'E'))
        return fail("non-integer number");
      out.kind = Json::Int;
      out.integer = neg ? -int64_t(v) : int64_t(v);
      return true;
    }
    return fail("unexpected character");
  }
};

bool readAll(const std::string &path, std::vector<unsigned char> &out,
             std::string &error) {
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
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1},
      {"U16", 2}, {"U32", 4}, {"U64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

bool readSafetensors(const std::string &path, StFile &out, std::string &error) {
  std::vector<unsigned char> bytes;
  if (!readAll(path, bytes, error))
    return false;
  auto bad = [&](const std::string &what) {
    error = path + ": " + what;
    return false;
  };
  if (bytes.size() < 8)
    return bad("truncated (no header length)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | bytes[i];
  if (n > bytes.size() - 8)
    return bad("truncated (header length " + std::to_string(n) +
               " exceeds the file)");
  const char *hdr = reinterpret_cast<const char *>(bytes.data() + 8);
  Json root;
  std::string jsonError;
  if (!JsonParser(hdr, hdr + n).parseDocument(root, jsonError))
    return bad(jsonError);
  if (root.kind != Json::Object)
    return bad("the header is not a JSON object");
  uint64_t dataSize = bytes.size() - 8 - n;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto &[name, v] : root.members) {
    if (name == "__metadata__")
      continue;
    if (v.kind != Json::Object)
      return bad("tensor '" + name + "': entry is not an object");
    StTensor t;
    t.name = name;
    const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (auto &[key, field] : v.members) {
      if (key == "dtype")
        dtype = &field;
      else if (key == "shape")
        shape = &field;
      else if (key == "data_offsets")
        offsets = &field;
    }
    if (!dtype || dtype->kind != Json::String || !stDtypeSize(dtype->string))
      return bad("tensor '" + name + "': missing or unknown dtype");
    t.dtype = dtype->string;
    if (!shape || shape->kind != Json::Array)
      return bad("tensor '" + name + "': missing shape");
    uint64_t numel = 1;
    for (const Json &d : shape->items) {
      if (d.kind != Json::Int || d.integer < 0)
        return bad("tensor '" + name + "': bad shape");
      t.shape.push_back(d.integer);
      if (d.integer && numel > UINT64_MAX / uint64_t(d.integer))
        return bad("tensor '" + name + "': shape overflows");
      numel *= uint64_t(d.integer);
    }
    if (!offsets || offsets->kind != Json::Array ||
        offsets->items.size() != 2 || offsets->items[0].kind != Json::Int ||
        offsets->items[1].kind != Json::Int)
      return bad("tensor '" + name + "': bad data_offsets");
    int64_t b = offsets->items[0].integer, e = offsets->items[1].integer;
    if (b < 0 || e < b || uint64_t(e) > dataSize)
      return bad("tensor '" + name + "': data_offsets [" + std::to_string(b) +
                 ", " + std::to_string(e) + "] outside the data (truncated?)");
    size_t es = stDtypeSize(t.dtype);
    if (numel > UINT64_MAX / es || uint64_t(e - b) != numel * es)
      return bad("tensor '" + name + "': " + std::to_string(e - b) +
                 " bytes do not match its dtype and shape");
    t.begin = uint64_t(b);
    t.end = uint64_t(e);
    if (out.find(name))
      return bad("tensor '" + name + "' appears twice");
    ranges.push_back({t.begin, t.end});
    out.tensors.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return bad("tensor data ranges overlap");
  out.data.assign(bytes.begin() + 8 + n, bytes.end());
  return true;
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
