//===- Safetensors.cpp - Safetensors reader and writer --------------------===//
//
// The reader checks the whole header before exposing any tensor so that a
// truncated download or a hand-edited header produces an error naming the
// file, the tensor and the field, never an out-of-bounds view.
//
//===----------------------------------------------------------------------===//

#include "pipe/Support/Safetensors.h"
#include "pipe/Support/InputFile.h"
#include "pipe/Support/JSONUtils.h"
#include "pipe/Support/OutputFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::pipe;

static constexpr llvm::StringLiteral kMetadataKey = "__metadata__";

//===----------------------------------------------------------------------===//
// DTypes
//===----------------------------------------------------------------------===//

namespace {
struct DTypeInfo {
  SafetensorsDType dtype;
  llvm::StringLiteral name;
  unsigned bytes;
};
} // namespace

static constexpr DTypeInfo kDTypes[] = {
    {SafetensorsDType::F64, "F64", 8}, {SafetensorsDType::F32, "F32", 4},
    {SafetensorsDType::F16, "F16", 2}, {SafetensorsDType::BF16, "BF16", 2},
    {SafetensorsDType::I64, "I64", 8}, {SafetensorsDType::I32, "I32", 4},
    {SafetensorsDType::I16, "I16", 2}, {SafetensorsDType::I8, "I8", 1},
    {SafetensorsDType::U8, "U8", 1},   {SafetensorsDType::Bool, "BOOL", 1},
};

static const DTypeInfo &getInfo(SafetensorsDType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info;
  llvm_unreachable("unhandled safetensors dtype");
}

llvm::StringRef mlir::pipe::stringifyDType(SafetensorsDType dtype) {
  return getInfo(dtype).name;
}

std::optional<SafetensorsDType> mlir::pipe::parseDType(llvm::StringRef name) {
  for (const DTypeInfo &info : kDTypes)
    if (info.name == name)
      return info.dtype;
  return std::nullopt;
}

unsigned mlir::pipe::getDTypeBytes(SafetensorsDType dtype) {
  return getInfo(dtype).bytes;
}

int64_t SafetensorsTensor::getNumElements() const {
  int64_t n = 1;
  for (int64_t dim : shape)
    n *= dim;
  return n;
}

/// Bytes needed by `shape` of `dtype`, or nullopt if a dimension is negative
/// or the product does not fit in 64 bits.
static std::optional<uint64_t> getByteSize(llvm::ArrayRef<int64_t> shape,
                                           SafetensorsDType dtype) {
  uint64_t bytes = getDTypeBytes(dtype);
  bool overflow = false;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    bytes = llvm::SaturatingMultiply(bytes, uint64_t(dim), &overflow);
    if (overflow)
      return std::nullopt;
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(std::errc::invalid_argument,
                                 message.str().c_str());
}

namespace {
/// Validates one header; errors are prefixed with the file name.
class HeaderParser {
public:
  HeaderParser(llvm::StringRef fileName, uint64_t dataSize)
      : fileName(fileName), dataSize(dataSize) {}

  llvm::Error error(const llvm::Twine &message) {
    return makeError(fileName + ": " + message);
  }
  llvm::Error tensorError(llvm::StringRef tensor, const llvm::Twine &message) {
    return error("tensor '" + tensor + "': " + message);
  }

  llvm::Error parseMetadata(const llvm::json::Value &value,
                            std::map<std::string, std::string> &metadata) {
    const llvm::json::Object *object = value.getAsObject();
    if (!object)
      return error(kMetadataKey + ": expected an object of strings");
    for (const auto &[key, entry] : *object) {
      std::optional<llvm::StringRef> str = entry.getAsString();
      if (!str)
        return error(kMetadataKey + "." + key.str() + ": expected a string");
      metadata[key.str()] = str->str();
    }
    return llvm::Error::success();
  }

  /// Reads one `[begin, end]` or shape entry: a JSON integer >= 0.
  llvm::Error parseUnsigned(llvm::StringRef tensor, const llvm::Twine &field,
                            const llvm::json::Value &value, uint64_t &result) {
    if (std::optional<uint64_t> u = value.getAsUINT64()) {
      result = *u;
      return llvm::Error::success();
    }
    if (std::optional<int64_t> i = value.getAsInteger(); i && *i < 0)
      return tensorError(tensor, field +
                                     ": expected a non-negative integer, "
                                     "got " +
                                     llvm::Twine(*i));
    return tensorError(tensor, field + ": expected a non-negative integer");
  }

  llvm::Error parseTensor(llvm::StringRef name, const llvm::json::Value &value,
                          SafetensorsTensor &tensor, uint64_t &begin,
                          uint64_t &end) {
    tensor.name = name.str();
    const llvm::json::Object *object = value.getAsObject();
    if (!object)
      return tensorError(name, "expected an object with dtype, shape and "
                               "data_offsets");
    for (const auto &entry : *object) {
      llvm::StringRef key = entry.first;
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        return tensorError(name, "unknown field '" + key + "'");
    }

    // dtype
    const llvm::json::Value *dtypeValue = object->get("dtype");
    if (!dtypeValue)
      return tensorError(name, "dtype: missing");
    std::optional<llvm::StringRef> dtypeName = dtypeValue->getAsString();
    if (!dtypeName)
      return tensorError(name, "dtype: expected a string");
    std::optional<SafetensorsDType> dtype = parseDType(*dtypeName);
    if (!dtype) {
      std::string known;
      for (const DTypeInfo &info : kDTypes)
        known += (known.empty() ? "" : ", ") + info.name.str();
      return tensorError(name, "dtype: unknown dtype '" + *dtypeName +
                                   "' (supported: " + known + ")");
    }
    tensor.dtype = *dtype;

    // shape
    const llvm::json::Value *shapeValue = object->get("shape");
    if (!shapeValue)
      return tensorError(name, "shape: missing");
    const llvm::json::Array *shape = shapeValue->getAsArray();
    if (!shape)
      return tensorError(name, "shape: expected an array of integers");
    for (auto [i, dimValue] : llvm::enumerate(*shape)) {
      uint64_t dim;
      if (llvm::Error err = parseUnsigned(name, "shape[" + llvm::Twine(i) + "]",
                                          dimValue, dim))
        return err;
      if (dim > uint64_t(std::numeric_limits<int64_t>::max()))
        return tensorError(name, "shape[" + llvm::Twine(i) +
                                     "]: dimension too large");
      tensor.shape.push_back(int64_t(dim));
    }

    // data_offsets
    const llvm::json::Value *offsetsValue = object->get("data_offsets");
    if (!offsetsValue)
      return tensorError(name, "data_offsets: missing");
    const llvm::json::Array *offsets = offsetsValue->getAsArray();
    if (!offsets || offsets->size() != 2)
      return tensorError(name, "data_offsets: expected an array [begin, end]");
    if (llvm::Error err =
            parseUnsigned(name, "data_offsets[0]", (*offsets)[0], begin))
      return err;
    if (llvm::Error err =
            parseUnsigned(name, "data_offsets[1]", (*offsets)[1], end))
      return err;
    if (begin > end)
      return tensorError(name, "data_offsets: begin " + llvm::Twine(begin) +
                                   " is after end " + llvm::Twine(end));
    if (end > dataSize)
      return tensorError(name, "data_offsets: end " + llvm::Twine(end) +
                                   " is beyond the data buffer (" +
                                   llvm::Twine(dataSize) + " bytes)");

    std::optional<uint64_t> bytes = getByteSize(tensor.shape, tensor.dtype);
    if (!bytes)
      return tensorError(name, "shape: element count overflows");
    if (*bytes != end - begin)
      return tensorError(name, "data_offsets: span of " +
                                   llvm::Twine(end - begin) +
                                   " bytes does not match shape and dtype (" +
                                   llvm::Twine(*bytes) + " bytes)");
    return llvm::Error::success();
  }

private:
  llvm::StringRef fileName;
  uint64_t dataSize;
};
} // namespace

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readInputFile(path, /*isText=*/false, /*requiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path +
                     ": cannot open: " + llvm::toString(buffer.takeError()));
  return parse(std::move(*buffer));
}

llvm::Expected<SafetensorsFile>
SafetensorsFile::parse(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  llvm::StringRef fileName = buffer->getBufferIdentifier();
  llvm::StringRef contents = buffer->getBuffer();
  if (contents.size() < 8)
    return makeError(fileName + ": file is " + llvm::Twine(contents.size()) +
                     " bytes, too short for the 8-byte header length");
  uint64_t headerSize = llvm::support::endian::read64le(contents.data());
  uint64_t available = contents.size() - 8;
  if (headerSize > kSafetensorsMaxHeaderBytes)
    return makeError(fileName + ": header length " + llvm::Twine(headerSize) +
                     " exceeds the limit of " +
                     llvm::Twine(kSafetensorsMaxHeaderBytes) + " bytes");
  if (headerSize > available)
    return makeError(fileName + ": header length " + llvm::Twine(headerSize) +
                     " exceeds the " + llvm::Twine(available) +
                     " bytes that follow it");
  llvm::StringRef headerText = contents.substr(8, headerSize);
  llvm::StringRef data = contents.substr(8 + headerSize);

  llvm::Expected<llvm::json::Value> header = llvm::json::parse(headerText);
  if (!header)
    return makeError(fileName + ": header is not valid JSON: " +
                     llvm::toString(header.takeError()));
  const llvm::json::Object *object = header->getAsObject();
  if (!object)
    return makeError(fileName + ": header is not a JSON object");
  if (std::optional<DuplicateJSONKey> dup = findDuplicateJSONKey(headerText)) {
    if (dup->path.empty())
      return makeError(fileName + ": duplicate tensor name '" + dup->key + "'");
    if (dup->path.front().key == kMetadataKey)
      return makeError(fileName + ": " + kMetadataKey + ": duplicate key '" +
                       dup->key + "'");
    return makeError(fileName + ": tensor '" + dup->path.front().key +
                     "': duplicate field '" + dup->key + "'");
  }

  SafetensorsFile file;
  HeaderParser parser(fileName, data.size());
  struct Span {
    uint64_t begin, end;
  };
  std::vector<Span> spans;
  for (const auto &[key, value] : *object) {
    if (llvm::StringRef(key) == kMetadataKey) {
      if (llvm::Error err = parser.parseMetadata(value, file.metadata))
        return std::move(err);
      continue;
    }
    SafetensorsTensor tensor;
    Span span;
    if (llvm::Error err =
            parser.parseTensor(key, value, tensor, span.begin, span.end))
      return std::move(err);
    tensor.data =
        llvm::ArrayRef<char>(data.data() + span.begin, span.end - span.begin);
    file.tensors.push_back(std::move(tensor));
    spans.push_back(span);
  }

  // File order: by position in the data buffer; the name breaks ties between
  // empty tensors, so the order does not depend on hashing.
  std::vector<unsigned> order(file.tensors.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    if (spans[a].begin != spans[b].begin)
      return spans[a].begin < spans[b].begin;
    if (spans[a].end != spans[b].end)
      return spans[a].end < spans[b].end;
    return file.tensors[a].name < file.tensors[b].name;
  });

  // The tensors tile the data buffer, as the reference library requires: in
  // file order each begins where the previous one ends (empty tensors
  // included) and the last ends with the file, so that no byte is shared or
  // unaccounted for.
  uint64_t covered = 0;
  std::optional<unsigned> previous;
  for (unsigned i : order) {
    auto range = [&](unsigned t) {
      return ("[" + llvm::Twine(spans[t].begin) + ", " +
              llvm::Twine(spans[t].end) + "]")
          .str();
    };
    if (spans[i].begin < covered)
      return makeError(fileName + ": tensor '" + file.tensors[i].name +
                       "': data_offsets: " + range(i) + " overlaps tensor '" +
                       file.tensors[*previous].name + "' " + range(*previous));
    if (spans[i].begin > covered)
      return makeError(fileName + ": tensor '" + file.tensors[i].name +
                       "': data_offsets: " + range(i) + " leaves data bytes [" +
                       llvm::Twine(covered) + ", " +
                       llvm::Twine(spans[i].begin) +
                       ") unused (tensors must cover the data exactly)");
    covered = spans[i].end;
    previous = i;
  }
  if (covered != data.size())
    return makeError(fileName + ": the tensors cover " + llvm::Twine(covered) +
                     " of the " + llvm::Twine(data.size()) +
                     " data bytes (trailing bytes after the last tensor)");

  std::vector<SafetensorsTensor> sorted;
  sorted.reserve(order.size());
  for (unsigned i : order)
    sorted.push_back(std::move(file.tensors[i]));
  file.tensors = std::move(sorted);
  for (auto [i, tensor] : llvm::enumerate(file.tensors))
    file.index[tensor.name] = i;
  file.buffer = std::move(buffer);
  return std::move(file);
}

const SafetensorsTensor *SafetensorsFile::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  if (it == index.end())
    return nullptr;
  return &tensors[it->second];
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void SafetensorsWriter::addTensor(llvm::StringRef name, SafetensorsDType dtype,
                                  llvm::ArrayRef<int64_t> shape,
                                  llvm::ArrayRef<char> data) {
  tensors.push_back(
      {name.str(), dtype, llvm::SmallVector<int64_t>(shape), data.vec()});
}

void SafetensorsWriter::setMetadata(llvm::StringRef key,
                                    llvm::StringRef value) {
  metadata[key.str()] = value.str();
}

llvm::Error SafetensorsWriter::write(llvm::raw_ostream &os) const {
  // Validate everything before the first byte goes out.
  // JSON text must be UTF-8; llvm::json would silently repair it otherwise.
  for (const auto &[key, value] : metadata)
    if (!llvm::json::isUTF8(key) || !llvm::json::isUTF8(value))
      return makeError(kMetadataKey + "." + key +
                       ": key or value is not valid UTF-8");
  llvm::StringSet<> names;
  for (const PendingTensor &tensor : tensors) {
    if (!llvm::json::isUTF8(tensor.name))
      return makeError("tensor '" + tensor.name + "': name is not valid UTF-8");
    if (tensor.name == kMetadataKey)
      return makeError("tensor '" + tensor.name + "': name is reserved");
    if (!names.insert(tensor.name).second)
      return makeError("duplicate tensor name '" + tensor.name + "'");
    for (auto [i, dim] : llvm::enumerate(tensor.shape))
      if (dim < 0)
        return makeError("tensor '" + tensor.name + "': shape[" +
                         llvm::Twine(i) + "]: negative dimension " +
                         llvm::Twine(dim));
    std::optional<uint64_t> bytes = getByteSize(tensor.shape, tensor.dtype);
    if (!bytes)
      return makeError("tensor '" + tensor.name +
                       "': shape: element count overflows");
    if (*bytes != tensor.data.size())
      return makeError("tensor '" + tensor.name +
                       "': data: " + llvm::Twine(tensor.data.size()) +
                       " bytes given, shape and dtype need " +
                       llvm::Twine(*bytes));
  }

  // Largest elements first, then by name: every tensor starts at a multiple
  // of its element size without padding between tensors.
  std::vector<const PendingTensor *> order;
  for (const PendingTensor &tensor : tensors)
    order.push_back(&tensor);
  llvm::stable_sort(order, [](const PendingTensor *a, const PendingTensor *b) {
    unsigned sizeA = getDTypeBytes(a->dtype), sizeB = getDTypeBytes(b->dtype);
    if (sizeA != sizeB)
      return sizeA > sizeB;
    return a->name < b->name;
  });

  std::string header;
  {
    llvm::raw_string_ostream headerStream(header);
    llvm::json::OStream json(headerStream);
    json.object([&] {
      if (!metadata.empty()) {
        json.attributeObject(kMetadataKey, [&] {
          for (const auto &[key, value] : metadata)
            json.attribute(key, value);
        });
      }
      uint64_t offset = 0;
      for (const PendingTensor *tensor : order) {
        json.attributeObject(tensor->name, [&] {
          json.attribute("dtype", stringifyDType(tensor->dtype));
          json.attributeArray("shape", [&] {
            for (int64_t dim : tensor->shape)
              json.value(dim);
          });
          json.attributeArray("data_offsets", [&] {
            json.value(offset);
            json.value(offset + tensor->data.size());
          });
        });
        offset += tensor->data.size();
      }
    });
  }
  // Pad with spaces so that the data buffer starts 8-byte aligned.
  header.append(llvm::alignTo(header.size(), 8) - header.size(), ' ');

  char length[8];
  llvm::support::endian::write64le(length, header.size());
  os.write(length, sizeof(length));
  os << header;
  for (const PendingTensor *tensor : order)
    os.write(tensor->data.data(), tensor->data.size());
  return llvm::Error::success();
}

llvm::Error SafetensorsWriter::writeAtomically(llvm::StringRef path) const {
  return writeFallibleOutputFile(
      path, [&](llvm::raw_ostream &os) { return write(os); });
}
