//===- TrainingData.cpp - Micro-batch sources of the trainer --------------===//
//
// Text data: byte-level language modelling. A micro-batch whose two inputs
// have shape [..., T] holds R = numel / T windows of T + 1 consecutive bytes;
// window r gives tokens[r] = bytes[o .. o+T) and targets[r] = bytes[o+1 ..
// o+T]. Training windows start at offsets drawn uniformly from the training
// split; evaluation windows tile the held-out split with stride T.
//
// Safetensors data: rows of pre-made inputs, used in order: micro-batches
// [N, B, ...], or samples [S, ...] taken B at a time (a remainder of fewer
// than B samples is not used).
//
//===----------------------------------------------------------------------===//

#include "TrainingData.h"
#include "Manifest.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <sys/stat.h>

namespace pipe_rt {

int64_t InputSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t InputSpec::elemSize() const {
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "i1")
    return 1;
  return 4;
}

uint64_t drawOffset(std::mt19937_64 &rng, uint64_t range, uint64_t &draws) {
  // limit = range * floor(2^64 / range), computed without overflow; 0 means
  // 2^64 (range a power of two): every draw is accepted.
  uint64_t limit = range * (UINT64_MAX / range);
  if (UINT64_MAX % range == range - 1)
    limit = 0;
  for (;;) {
    uint64_t x = rng();
    ++draws;
    if (limit == 0 || x < limit)
      return x % range;
  }
}

int64_t wrapRow(int64_t first, int64_t m, int64_t count) {
  int64_t r = first % count;
  if (r < 0)
    r += count;
  return int64_t((uint64_t(r) + uint64_t(m % count)) % uint64_t(count));
}

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Data files are read whole: a device, pipe or directory (/dev/zero never
/// ends) or a file beyond the budget is refused before reading.
bool checkDataFile(const std::string &path, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return true; // the reader says why it cannot open it
  if (!S_ISREG(st.st_mode)) {
    error = path + ": the data file is not a regular file";
    return false;
  }
  if (uint64_t(st.st_size) > kMaxDataFileBytes) {
    error = path + ": the data file has " + std::to_string(st.st_size) +
            " bytes, more than the " + std::to_string(kMaxDataFileBytes) +
            " a data file may have";
    return false;
  }
  return true;
}

bool readFile(const std::string &path, std::vector<unsigned char> &out,
              std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot read the data file: " + std::strerror(errno);
    return false;
  }
  unsigned char buf[1 << 16];
  size_t n;
  bool ok = true;
  try {
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0 &&
           (ok = out.size() + n <= kMaxDataFileBytes))
      out.insert(out.end(), buf, buf + n);
  } catch (const std::bad_alloc &) {
    std::fclose(f);
    error = path + ": not enough memory to read the data file";
    return false;
  }
  if (!ok)
    error = path + ": the data file grew past " +
            std::to_string(kMaxDataFileBytes) + " bytes while being read";
  else if (std::ferror(f))
    error = path + ": read error";
  ok = ok && !std::ferror(f);
  std::fclose(f);
  return ok;
}

/// Element `i` of an integer buffer of `in`'s dtype.
int64_t loadInteger(const unsigned char *buf, const InputSpec &in, int64_t i) {
  if (in.dtype == "i64") {
    int64_t x;
    std::memcpy(&x, buf + i * 8, 8);
    return x;
  }
  int32_t x;
  std::memcpy(&x, buf + i * 4, 4);
  return x;
}

/// Checks every element of `rows` rows of input k (tensor `name`, rows
/// starting at `base`) against the input's range, and that not every one is
/// a value the program ignores (targets all -100 would count nothing: a
/// loss of 0 that says nothing, or no gradient at all).
bool checkRows(const std::string &path, const std::string &name, size_t k,
               const InputSpec &in, const unsigned char *base, int64_t rows,
               std::string &error) {
  if (!in.isInteger() || in.range.bound == 0)
    return true;
  int64_t numel = in.numel();
  bool counted = in.range.exempt.empty() || rows == 0;
  for (int64_t r = 0; r < rows; ++r) {
    const unsigned char *row = base + size_t(r) * in.bytes();
    for (int64_t i = 0; i < numel; ++i) {
      int64_t v = loadInteger(row, in, i);
      if (in.range.allows(v)) {
        counted = counted || (v >= 0 && v < in.range.bound);
        continue;
      }
      error = path + ": tensor '" + name + "' row " + std::to_string(r) +
              " element " + std::to_string(i) + ": value " + std::to_string(v) +
              " is outside the range " + in.range.describe() +
              " of the program's input " + std::to_string(k);
      return false;
    }
  }
  if (!counted) {
    std::string ignored;
    for (int64_t v : in.range.exempt)
      ignored += (ignored.empty() ? "" : " or ") + std::to_string(v);
    error = path + ": tensor '" + name + "': every value is " + ignored +
            ", which the program's input " + std::to_string(k) +
            " ignores: nothing in it would be counted";
    return false;
  }
  return true;
}

/// Writes byte value `v` as element `i` of an integer buffer.
void storeToken(unsigned char *buf, const InputSpec &in, int64_t i,
                unsigned char v) {
  if (in.dtype == "i64") {
    int64_t x = v;
    std::memcpy(buf + i * 8, &x, 8);
  } else {
    int32_t x = v;
    std::memcpy(buf + i * 4, &x, 4);
  }
}

} // namespace

std::unique_ptr<TrainingData>
TrainingData::open(const DataSpec &spec, const std::vector<InputSpec> &inputs,
                   std::string &error) {
  std::unique_ptr<TrainingData> d(new TrainingData());
  d->inputs = inputs;
  DataSpec::Format format = spec.format;
  if (format == DataSpec::Format::Auto)
    format = endsWith(spec.path, ".safetensors") ? DataSpec::Format::Safetensors
                                                 : DataSpec::Format::Text;
  const std::string &path = spec.path;

  if (format == DataSpec::Format::Text) {
    d->text = true;
    // Two integer inputs (tokens, targets) of one shape [..., T].
    auto describe = [&]() {
      std::string s;
      for (size_t k = 0; k < inputs.size(); ++k)
        s += (k ? ", " : "") + inputs[k].dtype + " " +
             formatShape(inputs[k].shape);
      return inputs.empty() ? std::string("none") : s;
    };
    if (inputs.size() != 2 || !inputs[0].isInteger() ||
        inputs[0].dtype != inputs[1].dtype ||
        inputs[0].shape != inputs[1].shape || inputs[0].shape.empty() ||
        inputs[0].numel() < 1) {
      error = "text data (" + path +
              ") needs a model with two integer inputs of one shape [B, T] "
              "(tokens, targets); this program's inputs are: " +
              describe() + " (use a safetensors data file instead)";
      return nullptr;
    }
    d->window = inputs[0].shape.back();
    d->rows = inputs[0].numel() / d->window;
    if (!checkDataFile(path, error) || !readFile(path, d->bytes, error))
      return nullptr;
    // Every byte is a token, a target or both.
    for (size_t k = 0; k < 2; ++k)
      for (size_t i = 0; i < d->bytes.size(); ++i)
        if (!inputs[k].range.allows(d->bytes[i])) {
          error = path + ": byte " + std::to_string(d->bytes[i]) +
                  " at offset " + std::to_string(i) + " is outside the range " +
                  inputs[k].range.describe() + " of the program's input " +
                  std::to_string(k) + (k ? " (targets)" : " (tokens)") +
                  "; text data needs a vocabulary of 256 (token = byte), or "
                  "a text whose bytes are all in range";
          return nullptr;
        }
    int64_t size = int64_t(d->bytes.size());
    if (!(spec.trainFraction > 0 && spec.trainFraction <= 1)) {
      error = "the train fraction must be in (0, 1]";
      return nullptr;
    }
    d->trainCount = int64_t(double(size) * spec.trainFraction);
    d->evalSizeValue = size - d->trainCount;
    if (d->trainCount < d->window + 1) {
      error = path + ": too short: its training part has " +
              std::to_string(d->trainCount) + " bytes, one window needs " +
              std::to_string(d->window + 1) + " (T + 1)";
      return nullptr;
    }
    // Held-out windows: start trainCount + j * T, length T + 1.
    int64_t windows =
        d->evalSizeValue > d->window ? (d->evalSizeValue - 1) / d->window : 0;
    d->evalCount = windows / d->rows;
    d->seedRng(0, 0);
    return d;
  }

  // Safetensors rows.
  if (!checkDataFile(path, error) || !readSafetensors(path, d->file, error))
    return nullptr;
  auto bind = [&](const std::string &prefix,
                  std::vector<const unsigned char *> &base,
                  int64_t &count) -> bool {
    count = -1;
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::string name = prefix + std::to_string(k);
      const StTensor *t = d->file.find(name);
      if (!t) {
        error = path + ": no tensor '" + name + "'";
        return false;
      }
      std::string want = inputs[k].dtype == "i1" ? "BOOL" : inputs[k].dtype;
      for (char &c : want)
        c = char(std::toupper(static_cast<unsigned char>(c)));
      const std::vector<int64_t> &shape = inputs[k].shape;
      // [N, shape...]: N micro-batches. [S, shape[1:]...]: S samples, read
      // as S / B micro-batches of the program's B (the same bytes).
      int64_t rows = -1;
      if (t->shape.size() == shape.size() + 1 &&
          std::equal(shape.begin(), shape.end(), t->shape.begin() + 1))
        rows = t->shape[0];
      else if (!shape.empty() && t->shape.size() == shape.size() &&
               shape[0] > 0 &&
               std::equal(shape.begin() + 1, shape.end(), t->shape.begin() + 1))
        rows = t->shape[0] / shape[0];
      if (t->dtype != want || rows < 1) {
        // "[N, 4, 8]": `dims` after a leading dimension named `lead`.
        auto led = [](const char *lead, const std::vector<int64_t> &dims) {
          return std::string("[") + lead + (dims.empty() ? "" : ", ") +
                 formatShape(dims).substr(1);
        };
        error = path + ": tensor '" + name + "' is " + t->dtype + " " +
                formatShape(t->shape) + ", input " + std::to_string(k) +
                " of the program needs " + want + " " + led("N", shape) +
                " (N >= 1 micro-batches)";
        if (!shape.empty())
          error +=
              " or " +
              led("S", std::vector<int64_t>(shape.begin() + 1, shape.end())) +
              " (S >= " + std::to_string(shape[0]) + " samples)";
        return false;
      }
      if (count >= 0 && rows != count) {
        error = path + ": tensor '" + name + "' has " + std::to_string(rows) +
                " micro-batches, '" + prefix + "0' has " +
                std::to_string(count);
        return false;
      }
      count = rows;
      base.push_back(d->file.data.data() + t->begin);
      if (!checkRows(path, name, k, inputs[k], base.back(), count, error))
        return false;
    }
    if (count < 0)
      count = 1; // no inputs at all: every micro-batch is the same
    return true;
  };
  if (!bind("input", d->trainBase, d->trainCount))
    return nullptr;
  if (!inputs.empty() && d->file.find("eval_input0")) {
    if (!bind("eval_input", d->evalBase, d->evalCount))
      return nullptr;
    d->evalSizeValue = d->evalCount;
  }
  return d;
}

void TrainingData::seedRng(uint64_t seed, uint64_t count) {
  rng.seed(seed);
  rng.discard(count);
  draws = count;
}

void TrainingData::resize(int count) {
  buffers.resize(size_t(count));
  for (auto &mb : buffers) {
    mb.resize(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k)
      mb[k].resize(inputs[k].bytes());
  }
  pointers.assign(size_t(count) * inputs.size(), nullptr);
  for (int m = 0; m < count; ++m)
    for (size_t k = 0; k < inputs.size(); ++k)
      pointers[size_t(m) * inputs.size() + k] = buffers[m][k].data();
}

void TrainingData::textWindow(uint64_t start, int mb, int row) {
  for (int64_t t = 0; t < window; ++t) {
    int64_t i = row * window + t;
    storeToken(buffers[mb][0].data(), inputs[0], i, bytes[start + t]);
    storeToken(buffers[mb][1].data(), inputs[1], i, bytes[start + t + 1]);
  }
}

const void *const *TrainingData::train(int64_t first, int count) {
  if (text) {
    resize(count);
    uint64_t range = uint64_t(trainCount - window); // offsets [0, range)
    for (int m = 0; m < count; ++m)
      for (int r = 0; r < rows; ++r)
        textWindow(drawOffset(rng, range, draws), m, r);
    return pointers.data();
  }
  pointers.assign(size_t(count) * inputs.size(), nullptr);
  for (int m = 0; m < count; ++m) {
    int64_t row = wrapRow(first, m, trainCount);
    for (size_t k = 0; k < inputs.size(); ++k)
      pointers[size_t(m) * inputs.size() + k] =
          trainBase[k] + size_t(row) * inputs[k].bytes();
  }
  return pointers.data();
}

const void *const *TrainingData::eval(int64_t first, int count) {
  if (evalCount == 0)
    return nullptr;
  if (text) {
    resize(count);
    for (int m = 0; m < count; ++m) {
      int64_t j = wrapRow(first, m, evalCount);
      for (int r = 0; r < rows; ++r)
        textWindow(uint64_t(trainCount + (j * rows + r) * window), m, r);
    }
    return pointers.data();
  }
  pointers.assign(size_t(count) * inputs.size(), nullptr);
  for (int m = 0; m < count; ++m) {
    int64_t row = wrapRow(first, m, evalCount);
    for (size_t k = 0; k < inputs.size(); ++k)
      pointers[size_t(m) * inputs.size() + k] =
          evalBase[k] + size_t(row) * inputs[k].bytes();
  }
  return pointers.data();
}

} // namespace pipe_rt
