//===- ParamData.cpp - Bytes of parameter values, shared by the passes ----===//

#include "pipe/Dialect/Pipe/Transforms/ParamData.h"

#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;
using namespace mlir::pipe;

std::optional<uint64_t> pipe::getElementBytes(ShapedType type) {
  Type element = type.getElementType();
  if (!element.isIntOrIndexOrFloat())
    return std::nullopt;
  unsigned bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  if (bits % 8 != 0)
    return std::nullopt;
  return bits / 8;
}

std::optional<uint64_t> pipe::getTensorBytes(ShapedType type) {
  std::optional<uint64_t> elementBytes = getElementBytes(type);
  if (!elementBytes || !type.hasStaticShape())
    return std::nullopt;
  return *elementBytes * static_cast<uint64_t>(type.getNumElements());
}

const AsmResourceBlob *pipe::getBlob(DenseResourceElementsAttr attr) {
  return attr.getRawHandle().getBlob();
}

std::optional<ArrayRef<char>> pipe::getRawBytes(ElementsAttr value,
                                                std::vector<char> &storage) {
  if (llvm::sys::IsBigEndianHost)
    return std::nullopt;
  auto type = cast<ShapedType>(value.getType());
  std::optional<uint64_t> bytes = getTensorBytes(type);
  if (!bytes)
    return std::nullopt;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    const AsmResourceBlob *blob = getBlob(resource);
    if (!blob || blob->getData().size() != *bytes)
      return std::nullopt;
    return blob->getData();
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense || isa<ComplexType>(type.getElementType()))
    return std::nullopt;
  ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat())
    return raw.size() == *bytes ? std::optional<ArrayRef<char>>(raw)
                                : std::nullopt;
  uint64_t elementBytes = *getElementBytes(type);
  if (raw.size() != elementBytes)
    return std::nullopt;
  storage.resize(*bytes);
  for (uint64_t offset = 0; offset < *bytes; offset += elementBytes)
    std::memcpy(storage.data() + offset, raw.data(), elementBytes);
  return ArrayRef<char>(storage);
}

std::optional<SafetensorsDType> pipe::getSafetensorsDType(Type type) {
  if (type.isF64())
    return SafetensorsDType::F64;
  if (type.isF32())
    return SafetensorsDType::F32;
  if (type.isF16())
    return SafetensorsDType::F16;
  if (type.isBF16())
    return SafetensorsDType::BF16;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer)
    return std::nullopt;
  if (integer.isUnsigned())
    return integer.getWidth() == 8 ? std::optional(SafetensorsDType::U8)
                                   : std::nullopt;
  switch (integer.getWidth()) {
  case 64:
    return SafetensorsDType::I64;
  case 32:
    return SafetensorsDType::I32;
  case 16:
    return SafetensorsDType::I16;
  case 8:
    return SafetensorsDType::I8;
  default:
    return std::nullopt;
  }
}

std::string pipe::describeTensor(const SafetensorsTensor &tensor) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << stringifyDType(tensor.dtype) << " [";
  llvm::interleaveComma(tensor.shape, os);
  os << "]";
  return text;
}
