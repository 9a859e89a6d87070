//===- ParamData.h - Bytes of parameter values for the passes --*- C++ -*-===//
//
// The parameter passes (lifting, externalizing, loading) all need the same
// few facts about tensor data: how many bytes a tensor type takes, whether a
// dense_resource blob really holds that many, and the raw little-endian
// bytes of an initial value; so does the host lowering, which writes the
// initial values into the runtime's weights file.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PARAMDATA_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_PARAMDATA_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "pipe/Support/Safetensors.h"

#include <optional>
#include <vector>

namespace mlir::pipe {

/// Bytes per element of `type`'s elements, or nullopt where the elements
/// are not a whole number of bytes (i1, i4, ...), so that no size applies.
std::optional<uint64_t> getElementBytes(ShapedType type);

/// Bytes of a statically shaped tensor of byte-sized elements, or nullopt.
std::optional<uint64_t> getTensorBytes(ShapedType type);

/// The blob of a dense_resource value, or null when the module lacks it
/// (elided or never written).
const AsmResourceBlob *getBlob(DenseResourceElementsAttr attr);

/// The packed little-endian bytes of `value`, splats expanded into
/// `storage` (other values are returned without a copy); nullopt for values
/// whose bytes are not available (missing blob, elements that are not
/// byte-sized, other ElementsAttr kinds, a big-endian host).
std::optional<ArrayRef<char>> getRawBytes(ElementsAttr value,
                                          std::vector<char> &storage);

/// The safetensors dtype that stores elements of `type`, or nullopt (i1,
/// index, complex and other types have none that round-trips exactly).
std::optional<SafetensorsDType> getSafetensorsDType(Type type);

/// "F32 [4, 8]": how a tensor of a file is described in diagnostics.
std::string describeTensor(const SafetensorsTensor &tensor);

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PARAMDATA_H
