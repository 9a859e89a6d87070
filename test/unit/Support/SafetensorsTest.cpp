//===- SafetensorsTest.cpp - Unit tests for the safetensors reader/writer -===//

#include "pipe/Support/Safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlir;
using namespace mlir::pipe;

#ifndef PIPE_SUPPORT_TEST_INPUTS
#error "PIPE_SUPPORT_TEST_INPUTS must name test/unit/Support/Inputs"
#endif

namespace {

/// The message of a failed Expected, or "" if it succeeded.
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "";
  return llvm::toString(value.takeError());
}

std::string errorOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : "";
}

/// A file with `header` as its JSON header and `dataBytes` zero bytes of data.
std::unique_ptr<llvm::MemoryBuffer> makeFile(llvm::StringRef header,
                                             size_t dataBytes = 0) {
  std::string contents(8, '\0');
  llvm::support::endian::write64le(contents.data(), header.size());
  contents += header.str();
  contents.append(dataBytes, '\0');
  return llvm::MemoryBuffer::getMemBufferCopy(contents, "bad.safetensors");
}

std::string parseError(llvm::StringRef header, size_t dataBytes = 0) {
  return errorOf(SafetensorsFile::parse(makeFile(header, dataBytes)));
}

template <typename T>
llvm::ArrayRef<char> bytesOf(const std::vector<T> &values) {
  return llvm::ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                              values.size() * sizeof(T));
}

template <typename T> std::vector<T> valuesOf(const SafetensorsTensor &tensor) {
  std::vector<T> values(tensor.data.size() / sizeof(T));
  std::memcpy(values.data(), tensor.data.data(), tensor.data.size());
  return values;
}

std::string writeToString(const SafetensorsWriter &writer) {
  std::string result;
  llvm::raw_string_ostream os(result);
  llvm::Error err = writer.write(os);
  EXPECT_FALSE(err) << llvm::toString(std::move(err));
  return result;
}

/// A fresh empty directory, removed with its contents on destruction.
struct TempDir {
  llvm::SmallString<128> path;
  TempDir() {
    std::error_code ec =
        llvm::sys::fs::createUniqueDirectory("safetensors-test", path);
    EXPECT_FALSE(ec) << ec.message();
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> result(path);
    llvm::sys::path::append(result, name);
    return std::string(result);
  }
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec))
      names.push_back(std::string(llvm::sys::path::filename(it->path())));
    llvm::sort(names);
    return names;
  }
};

//===----------------------------------------------------------------------===//
// DTypes
//===----------------------------------------------------------------------===//

TEST(SafetensorsDType, NamesAndSizes) {
  struct Case {
    SafetensorsDType dtype;
    const char *name;
    unsigned bytes;
  } cases[] = {
      {SafetensorsDType::F64, "F64", 8}, {SafetensorsDType::F32, "F32", 4},
      {SafetensorsDType::F16, "F16", 2}, {SafetensorsDType::BF16, "BF16", 2},
      {SafetensorsDType::I64, "I64", 8}, {SafetensorsDType::I32, "I32", 4},
      {SafetensorsDType::I16, "I16", 2}, {SafetensorsDType::I8, "I8", 1},
      {SafetensorsDType::U8, "U8", 1},   {SafetensorsDType::Bool, "BOOL", 1}};
  for (const Case &c : cases) {
    EXPECT_EQ(stringifyDType(c.dtype), c.name);
    EXPECT_EQ(getDTypeBytes(c.dtype), c.bytes);
    EXPECT_EQ(parseDType(c.name), c.dtype);
  }
  EXPECT_EQ(parseDType("f32"), std::nullopt);
  EXPECT_EQ(parseDType("F8_E4M3"), std::nullopt);
  EXPECT_EQ(parseDType(""), std::nullopt);
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(Safetensors, RoundTripInMemory) {
  std::vector<float> weight = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> step = {7};
  std::vector<uint8_t> mask = {1, 0, 1};
  std::vector<double> scale = {0.5, -0.25};

  SafetensorsWriter writer;
  writer.addTensor("w", SafetensorsDType::F32, {2, 3}, bytesOf(weight));
  writer.addTensor("mask", SafetensorsDType::Bool, {3}, bytesOf(mask));
  writer.addTensor("step", SafetensorsDType::I64, {}, bytesOf(step));
  writer.addTensor("scale", SafetensorsDType::F64, {2, 1}, bytesOf(scale));
  writer.addTensor("none", SafetensorsDType::BF16, {4, 0}, {});
  writer.setMetadata("format", "pt");
  writer.setMetadata("note", "overwritten");
  writer.setMetadata("note", "quote \" and \\ and \xc3\xa9");
  std::string bytes = writeToString(writer);

  // The data buffer starts 8-byte aligned.
  uint64_t headerSize = llvm::support::endian::read64le(bytes.data());
  EXPECT_EQ(headerSize % 8, 0u);

  llvm::Expected<SafetensorsFile> file = SafetensorsFile::parse(
      llvm::MemoryBuffer::getMemBufferCopy(bytes, "mem.safetensors"));
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->getFileName(), "mem.safetensors");

  // File order: 8-byte elements first (scale, step), then 4, 2, 1, each
  // group by name; the empty tensor sits at its offset.
  std::vector<std::string> names;
  for (const SafetensorsTensor &tensor : file->getTensors())
    names.push_back(tensor.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"scale", "step", "w", "none", "mask"}));

  const SafetensorsTensor *w = file->lookup("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, SafetensorsDType::F32);
  EXPECT_EQ(w->shape, (llvm::SmallVector<int64_t>{2, 3}));
  EXPECT_EQ(w->getNumElements(), 6);
  EXPECT_EQ(valuesOf<float>(*w), weight);

  const SafetensorsTensor *s = file->lookup("step");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->getNumElements(), 1);
  EXPECT_EQ(valuesOf<int64_t>(*s), step);

  EXPECT_EQ(valuesOf<double>(*file->lookup("scale")), scale);
  EXPECT_EQ(valuesOf<uint8_t>(*file->lookup("mask")), mask);
  const SafetensorsTensor *none = file->lookup("none");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->getNumElements(), 0);
  EXPECT_TRUE(none->data.empty());
  EXPECT_EQ(file->lookup("missing"), nullptr);

  std::map<std::string, std::string> expected = {
      {"format", "pt"}, {"note", "quote \" and \\ and \xc3\xa9"}};
  EXPECT_EQ(file->getMetadata(), expected);

  // Each tensor is naturally aligned inside the data buffer ("scale" is
  // first, at offset 0).
  const char *dataStart = file->getTensors().front().data.data();
  for (const SafetensorsTensor &tensor : file->getTensors()) {
    size_t offset = tensor.data.data() - dataStart;
    EXPECT_EQ(offset % getDTypeBytes(tensor.dtype), 0u) << tensor.name;
  }
}

TEST(Safetensors, EmptyFileRoundTrips) {
  SafetensorsWriter writer;
  std::string bytes = writeToString(writer);
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::parse(
      llvm::MemoryBuffer::getMemBufferCopy(bytes, "empty.safetensors"));
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_TRUE(file->getTensors().empty());
  EXPECT_TRUE(file->getMetadata().empty());
}

TEST(Safetensors, WriteAtomicallyAndOpen) {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  std::vector<int32_t> values = {1, 2, 3};
  SafetensorsWriter writer;
  writer.addTensor("x", SafetensorsDType::I32, {3}, bytesOf(values));
  ASSERT_FALSE(errorOf(writer.writeAtomically(path)).size());
  EXPECT_EQ(dir.list(), std::vector<std::string>{"model.safetensors"});

  llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(valuesOf<int32_t>(*file->lookup("x")), values);
  // Views survive moving the file object.
  SafetensorsFile moved = std::move(*file);
  EXPECT_EQ(valuesOf<int32_t>(*moved.lookup("x")), values);

  // Overwriting replaces the whole file.
  SafetensorsWriter other;
  other.addTensor("y", SafetensorsDType::U8, {1}, llvm::ArrayRef<char>("z", 1));
  ASSERT_FALSE(errorOf(other.writeAtomically(path)).size());
  llvm::Expected<SafetensorsFile> reread = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(reread)) << llvm::toString(reread.takeError());
  EXPECT_EQ(reread->lookup("x"), nullptr);
  ASSERT_NE(reread->lookup("y"), nullptr);
}

TEST(Safetensors, FailedWriteLeavesTargetUntouched) {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  SafetensorsWriter good;
  good.addTensor("a", SafetensorsDType::U8, {1}, llvm::ArrayRef<char>("a", 1));
  ASSERT_FALSE(errorOf(good.writeAtomically(path)).size());

  SafetensorsWriter bad;
  bad.addTensor("a", SafetensorsDType::F32, {2},
                llvm::ArrayRef<char>("abc", 3));
  std::string err = errorOf(bad.writeAtomically(path));
  EXPECT_NE(err.find("model.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("tensor 'a'"), std::string::npos) << err;
  // The old file is intact and no temporary file is left behind.
  EXPECT_EQ(dir.list(), std::vector<std::string>{"model.safetensors"});
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_NE(file->lookup("a"), nullptr);

  // A directory that does not exist: an error naming the path, no file.
  std::string missing = dir.file("no-such-dir/model.safetensors");
  err = errorOf(good.writeAtomically(missing));
  EXPECT_NE(err.find(missing), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// A file written by the Python side (Inputs/make_safetensors.py)
//===----------------------------------------------------------------------===//

uint16_t halfBits(const SafetensorsTensor &tensor, size_t i) {
  return valuesOf<uint16_t>(tensor)[i];
}

TEST(Safetensors, ReadsFileWrittenByPython) {
  std::string path = PIPE_SUPPORT_TEST_INPUTS "/tiny.safetensors";
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->getTensors().size(), 11u);

  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"producer", "make_safetensors.py"}};
  EXPECT_EQ(file->getMetadata(), metadata);

  const SafetensorsTensor *embed = file->lookup("embed.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->dtype, SafetensorsDType::F32);
  EXPECT_EQ(embed->shape, (llvm::SmallVector<int64_t>{2, 3}));
  EXPECT_EQ(valuesOf<float>(*embed),
            (std::vector<float>{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f}));

  const SafetensorsTensor *bias = file->lookup("layers.0.bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->dtype, SafetensorsDType::F16);
  EXPECT_EQ(halfBits(*bias, 0), 0x3E00); // 1.5
  EXPECT_EQ(halfBits(*bias, 1), 0xC000); // -2.0
  EXPECT_EQ(halfBits(*bias, 2), 0x3400); // 0.25

  const SafetensorsTensor *scale = file->lookup("layers.0.scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->dtype, SafetensorsDType::BF16);
  EXPECT_EQ(halfBits(*scale, 0), 0x3F80); // 1.0
  EXPECT_EQ(halfBits(*scale, 1), 0xC000); // -2.0

  const SafetensorsTensor *step = file->lookup("step");
  ASSERT_NE(step, nullptr);
  EXPECT_TRUE(step->shape.empty());
  EXPECT_EQ(valuesOf<int64_t>(*step), std::vector<int64_t>{42});

  EXPECT_EQ(valuesOf<int32_t>(*file->lookup("ids")),
            (std::vector<int32_t>{1, -2, 3, -4}));
  EXPECT_EQ(valuesOf<int16_t>(*file->lookup("offsets")),
            (std::vector<int16_t>{-300, 300}));
  EXPECT_EQ(valuesOf<int8_t>(*file->lookup("signs")),
            (std::vector<int8_t>{-1, 0, 1}));
  EXPECT_EQ(valuesOf<uint8_t>(*file->lookup("bytes")),
            (std::vector<uint8_t>{0, 127, 255}));
  EXPECT_EQ(file->lookup("mask")->dtype, SafetensorsDType::Bool);
  EXPECT_EQ(valuesOf<uint8_t>(*file->lookup("mask")),
            (std::vector<uint8_t>{1, 0, 1, 1}));
  EXPECT_EQ(valuesOf<double>(*file->lookup("lr")), std::vector<double>{0.001});
  EXPECT_EQ(file->lookup("empty")->shape, (llvm::SmallVector<int64_t>{0, 4}));
  EXPECT_TRUE(file->lookup("empty")->data.empty());

  // The C++ writer, given the same tensors, reproduces the file byte for
  // byte: both sides agree on the layout.
  SafetensorsWriter writer;
  for (const SafetensorsTensor &tensor : file->getTensors())
    writer.addTensor(tensor.name, tensor.dtype, tensor.shape, tensor.data);
  for (const auto &[key, value] : file->getMetadata())
    writer.setMetadata(key, value);
  std::string rewritten = writeToString(writer);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> original =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  ASSERT_TRUE(bool(original));
  EXPECT_EQ(rewritten, (*original)->getBuffer().str());
}

//===----------------------------------------------------------------------===//
// Reader errors
//===----------------------------------------------------------------------===//

void expectError(const std::string &err,
                 std::initializer_list<const char *> parts) {
  EXPECT_FALSE(err.empty()) << "expected an error";
  for (const char *part : parts)
    EXPECT_NE(err.find(part), std::string::npos)
        << "'" << part << "' not in: " << err;
}

TEST(SafetensorsErrors, FileLevel) {
  expectError(errorOf(SafetensorsFile::parse(
                  llvm::MemoryBuffer::getMemBufferCopy("abc", "t.st"))),
              {"t.st: ", "too short"});

  // Header length beyond the file, including a huge one that must not wrap.
  std::string contents(8, '\0');
  llvm::support::endian::write64le(contents.data(), 100);
  contents += "{}";
  expectError(errorOf(SafetensorsFile::parse(
                  llvm::MemoryBuffer::getMemBufferCopy(contents, "t.st"))),
              {"t.st: ", "header length 100 exceeds the 2 bytes"});
  llvm::support::endian::write64le(contents.data(), ~uint64_t(0));
  expectError(errorOf(SafetensorsFile::parse(
                  llvm::MemoryBuffer::getMemBufferCopy(contents, "t.st"))),
              {"t.st: ", "exceeds"});
  llvm::support::endian::write64le(contents.data(), ~uint64_t(0) - 6);
  expectError(errorOf(SafetensorsFile::parse(
                  llvm::MemoryBuffer::getMemBufferCopy(contents, "t.st"))),
              {"t.st: ", "exceeds"});

  expectError(parseError("{\"a\": "), {"bad.safetensors: ", "not valid JSON"});
  expectError(parseError("[1, 2]"), {"bad.safetensors: ", "not a JSON object"});
  expectError(parseError(""), {"bad.safetensors: ", "not valid JSON"});

  expectError(errorOf(SafetensorsFile::open("/nonexistent/x.safetensors")),
              {"/nonexistent/x.safetensors: cannot open"});
}

TEST(SafetensorsErrors, Metadata) {
  expectError(parseError(R"({"__metadata__": [1]})"),
              {"bad.safetensors: __metadata__: expected an object"});
  expectError(parseError(R"({"__metadata__": {"k": 1}})"),
              {"bad.safetensors: __metadata__.k: expected a string"});
  expectError(parseError(R"({"__metadata__": {"k": "a", "k": "b"}})"),
              {"bad.safetensors: __metadata__: duplicate key 'k'"});
}

TEST(SafetensorsErrors, Fields) {
  struct Case {
    const char *header;
    size_t dataBytes;
    std::initializer_list<const char *> parts;
  } cases[] = {
      {R"({"t": 3})", 0, {"tensor 't': expected an object"}},
      {R"({"t": {"shape": [], "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': dtype: missing"}},
      {R"({"t": {"dtype": 4, "shape": [], "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': dtype: expected a string"}},
      {R"({"t": {"dtype": "F8_E4M3", "shape": [], "data_offsets": [0, 1]}})",
       1,
       {"tensor 't': dtype: unknown dtype 'F8_E4M3'", "BF16"}},
      {R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': shape: missing"}},
      {R"({"t": {"dtype": "F32", "shape": 1, "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': shape: expected an array"}},
      {R"({"t": {"dtype": "F32", "shape": ["1"], "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': shape[0]: expected a non-negative integer"}},
      {R"({"t": {"dtype": "F32", "shape": [1, -2], "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': shape[1]: expected a non-negative integer, got -2"}},
      {R"({"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': shape[0]: expected a non-negative integer"}},
      {R"({"t": {"dtype": "F32", "shape": [1]}})",
       4,
       {"tensor 't': data_offsets: missing"}},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})",
       4,
       {"tensor 't': data_offsets: expected an array [begin, end]"}},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": {}}})",
       4,
       {"tensor 't': data_offsets: expected an array [begin, end]"}},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [-1, 4]}})",
       4,
       {"tensor 't': data_offsets[0]: expected a non-negative integer"}},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, "4"]}})",
       4,
       {"tensor 't': data_offsets[1]: expected a non-negative integer"}},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})",
       4,
       {"tensor 't': data_offsets: begin 4 is after end 0"}},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
       3,
       {"tensor 't': data_offsets: end 4 is beyond the data buffer (3 bytes)"}},
      {R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})",
       4,
       {"tensor 't': data_offsets: span of 4 bytes does not match shape and "
        "dtype (8 bytes)"}},
      // 2^62 * 2^62 elements: the byte count must not wrap around to 0.
      {R"({"t": {"dtype": "F32", "shape": [4611686018427387904,
                 4611686018427387904], "data_offsets": [0, 0]}})",
       0,
       {"tensor 't': shape: element count overflows"}},
      {R"({"t": {"dtype": "U8", "shape": [18446744073709551615],
                 "data_offsets": [0, 0]}})",
       0,
       {"tensor 't': shape[0]: dimension too large"}},
      {R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1],
                 "extra": 1}})",
       1,
       {"tensor 't': unknown field 'extra'"}},
      {R"({"t": {"dtype": "U8", "dtype": "I8", "shape": [1],
                 "data_offsets": [0, 1]}})",
       1,
       {"tensor 't': duplicate field 'dtype'"}},
      {R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
           "t": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
       2,
       {"duplicate tensor name 't'"}},
      // Equal after unescaping.
      {R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
           "\u0074": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
       2,
       {"duplicate tensor name 't'"}},
      {R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
           "b": {"dtype": "U8", "shape": [2], "data_offsets": [3, 5]}})",
       5,
       {"tensor 'b': data_offsets: [3, 5] overlaps tensor 'a' [0, 4]"}},
      // A tensor nested inside another still overlaps the outer one.
      {R"({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
           "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]},
           "c": {"dtype": "U8", "shape": [2], "data_offsets": [5, 7]}})",
       8,
       {"tensor 'b': data_offsets: [2, 4] overlaps tensor 'a' [0, 8]"}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    std::string err = parseError(c.header, c.dataBytes);
    expectError(err, {"bad.safetensors: "});
    expectError(err, c.parts);
  }
}

TEST(SafetensorsErrors, TensorsTileTheData) {
  // In file order each tensor begins where the previous one ends, empty
  // tensors included, and the last ends with the file.
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::parse(makeFile(
      R"({"b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]},
          "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
          "e": {"dtype": "F32", "shape": [0], "data_offsets": [2, 2]}})",
      4));
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  ASSERT_EQ(file->getTensors().size(), 3u);
  EXPECT_EQ(file->getTensors()[0].name, "a");
  EXPECT_EQ(file->getTensors()[1].name, "e");
  EXPECT_EQ(file->getTensors()[2].name, "b");

  // Gaps, trailing bytes and an empty tensor inside another are errors (the
  // reference library rejects them too).
  expectError(
      parseError(R"({"b": {"dtype": "U8", "shape": [2], "data_offsets": [6, 8]},
                     "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})",
                 8),
      {"bad.safetensors: tensor 'b': data_offsets: [6, 8] leaves data bytes "
       "[2, 6) unused"});
  expectError(
      parseError(
          R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})",
          12),
      {"bad.safetensors: the tensors cover 2 of the 12 data bytes"});
  expectError(
      parseError(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                     "e": {"dtype": "U8", "shape": [0], "data_offsets": [1, 1]}})",
                 2),
      {"bad.safetensors: tensor 'e': data_offsets: [1, 1] overlaps tensor 'a' "
       "[0, 2]"});
  expectError(parseError("{}", 1),
              {"bad.safetensors: the tensors cover 0 of the 1 data bytes"});
}

TEST(SafetensorsErrors, HeaderBudget) {
  // A header length just above the limit fails before anything is read,
  // whatever the file holds; one at the limit is only checked against the
  // file.
  std::string contents(8, '\0');
  contents += "{}";
  llvm::support::endian::write64le(contents.data(),
                                   kSafetensorsMaxHeaderBytes + 1);
  expectError(errorOf(SafetensorsFile::parse(
                  llvm::MemoryBuffer::getMemBufferCopy(contents, "t.st"))),
              {"t.st: header length 100000001 exceeds the limit of 100000000 "
               "bytes"});
  llvm::support::endian::write64le(contents.data(), kSafetensorsMaxHeaderBytes);
  expectError(errorOf(SafetensorsFile::parse(
                  llvm::MemoryBuffer::getMemBufferCopy(contents, "t.st"))),
              {"t.st: header length 100000000 exceeds the 2 bytes"});
}

//===----------------------------------------------------------------------===//
// Writer errors
//===----------------------------------------------------------------------===//

TEST(SafetensorsErrors, Writer) {
  auto writeError = [](auto fill) {
    SafetensorsWriter writer;
    fill(writer);
    std::string out;
    llvm::raw_string_ostream os(out);
    std::string err = errorOf(writer.write(os));
    EXPECT_TRUE(out.empty()) << "nothing is written on error";
    return err;
  };
  expectError(writeError([](SafetensorsWriter &w) {
                w.addTensor("a", SafetensorsDType::U8, {1}, {"x", 1});
                w.addTensor("a", SafetensorsDType::U8, {1}, {"y", 1});
              }),
              {"duplicate tensor name 'a'"});
  expectError(writeError([](SafetensorsWriter &w) {
                w.addTensor("a", SafetensorsDType::F32, {3}, {"xyz", 3});
              }),
              {"tensor 'a': data: 3 bytes given, shape and dtype need 12"});
  expectError(writeError([](SafetensorsWriter &w) {
                w.addTensor("a", SafetensorsDType::F32, {2, -1}, {});
              }),
              {"tensor 'a': shape[1]: negative dimension -1"});
  expectError(writeError([](SafetensorsWriter &w) {
                w.addTensor("a", SafetensorsDType::F64,
                            {int64_t(1) << 62, int64_t(1) << 62}, {});
              }),
              {"tensor 'a': shape: element count overflows"});
  expectError(writeError([](SafetensorsWriter &w) {
                w.addTensor("__metadata__", SafetensorsDType::U8, {0}, {});
              }),
              {"tensor '__metadata__': name is reserved"});
}

} // namespace
