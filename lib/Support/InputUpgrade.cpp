//===- InputUpgrade.cpp - Older MLIR syntax explained and upgraded --------===//

#include "pipe/Support/InputUpgrade.h"
#include "pipe/Support/InputGuard.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <optional>
#include <string>

using namespace mlir;
using namespace mlir::pipe;
using llvm::StringRef;

namespace {

/// Rewrites of one kind printed before the rest are only counted: an export
/// has hundreds of `tosa.const`s.
constexpr unsigned kWarningsPerKind = 10;

bool isIdChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

/// A `key = value` entry of an attribute dictionary (`value` empty for a
/// unit attribute).
struct DictEntry {
  StringRef key;
  StringRef value;
  StringRef whole;
};

/// How an attribute of an older TOSA op becomes an operand.
enum class OperandKind { Shape, Shift };

struct Edit {
  size_t offset;
  size_t length;
  std::string text;
};

/// Splits `text` at the commas outside brackets and strings.
SmallVector<StringRef> splitTopLevel(StringRef text) {
  SmallVector<StringRef> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = endOfStringLiteral(text, i);
      if (end == StringRef::npos)
        break;
      i = end - 1;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}' || c == '>') &&
               !(c == '>' && i > 0 && text[i - 1] == '-')) {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  StringRef last = text.substr(start).trim();
  if (!last.empty() || !parts.empty())
    parts.push_back(last);
  return parts;
}

SmallVector<DictEntry> parseDict(StringRef body) {
  SmallVector<DictEntry> entries;
  for (StringRef part : splitTopLevel(body)) {
    auto [key, value] = part.split('=');
    entries.push_back({key.trim().trim('"'), value.trim(), part});
  }
  return entries;
}

/// The integers of `array<i64: 1, 2>`, `[1, 2]` (with optional `: i64`
/// suffixes) or `dense<[1, 2]> : tensor<2xi64>`.
std::optional<SmallVector<int64_t>> parseIntList(StringRef value) {
  StringRef list;
  if (value.consume_front("array<")) {
    // `array<i64>` (empty) has no colon.
    StringRef rest = value.split(':').second;
    list = rest.take_front(rest.rfind('>'));
  } else if (value.consume_front("dense<")) {
    list = value.take_front(value.find('>'));
    list = list.trim().trim("[]");
  } else if (value.starts_with("[")) {
    list = value.take_front(value.find(']')).drop_front();
  } else {
    return std::nullopt;
  }
  SmallVector<int64_t> ints;
  for (StringRef part : splitTopLevel(list)) {
    int64_t v;
    if (part.split(':').first.trim().getAsInteger(10, v))
      return std::nullopt;
    ints.push_back(v);
  }
  return ints;
}

/// The static shape of `tensor<2x3xf32>` at the start of `type`; false if it
/// is not a ranked tensor type, `dynamic` if a dimension is `?`.
bool parseTensorShape(StringRef type, SmallVector<int64_t> &shape,
                      bool &dynamic) {
  dynamic = false;
  if (!type.consume_front("tensor<"))
    return false;
  for (;;) {
    if (type.starts_with("?x")) {
      dynamic = true;
      shape.push_back(-1);
      type = type.drop_front(2);
      continue;
    }
    size_t digits = 0;
    while (digits < type.size() && llvm::isDigit(type[digits]))
      ++digits;
    if (digits == 0 || digits >= type.size() || type[digits] != 'x')
      return true;
    int64_t dim;
    if (type.take_front(digits).getAsInteger(10, dim))
      return false;
    shape.push_back(dim);
    type = type.drop_front(digits + 1);
  }
}

std::string joinInts(ArrayRef<int64_t> ints) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(ints, os);
  return text;
}

/// MLIR 22's form of a TOSA op whose attributes became operands.
StringRef mlir22Form(StringRef op) {
  if (op == "tosa.reshape")
    return "`tosa.reshape %x, %shape : (tensor<6xf32>, !tosa.shape<2>) -> "
           "tensor<2x3xf32>` with `%shape = \"tosa.const_shape\"() <{values = "
           "dense<[2, 3]> : tensor<2xindex>}> : () -> !tosa.shape<2>`";
  if (op == "tosa.tile")
    return "`tosa.tile %x, %multiples : (tensor<2x3xf32>, !tosa.shape<2>) -> "
           "tensor<4x3xf32>` with `%multiples` a `tosa.const_shape` of the "
           "old attribute's values";
  if (op == "tosa.slice")
    return "`tosa.slice %x, %start, %size : (tensor<4xf32>, !tosa.shape<1>, "
           "!tosa.shape<1>) -> tensor<2xf32>` with `%start` and `%size` "
           "`tosa.const_shape`s of the old attributes' values";
  if (op == "tosa.mul")
    return "`tosa.mul %a, %b, %shift` with `%shift = \"tosa.const\"() "
           "<{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>`";
  if (op == "tosa.clamp")
    return "`min_val` and `max_val` of the element type (`{min_val = 0.0 : "
           "f32, max_val = 6.0 : f32}`)";
  return {};
}

/// TOSA's convolutions, which took their zero points as an attribute
/// (`quantization_info`, absent for floats) until MLIR 20.
bool isConvolution(StringRef op) {
  return llvm::is_contained({"tosa.conv2d", "tosa.conv3d",
                             "tosa.depthwise_conv2d", "tosa.transpose_conv2d"},
                            op);
}

constexpr const char *kFullyConnected =
    "tosa.fully_connected is older TOSA syntax, which MLIR 22 rejects (the op "
    "was removed in MLIR 20): MLIR 22 writes a dense layer as `tosa.matmul` "
    "of 3-d tensors (the input reshaped to 1xNxIC, the weight transposed and "
    "reshaped to 1xICxOC, with zero points as operands) followed by "
    "`tosa.reshape` and `tosa.add` of the bias; re-export with a newer TOSA "
    "exporter";

/// The attributes of older TOSA ops that MLIR 22 no longer has.
ArrayRef<StringRef> oldTosaAttributes(StringRef op) {
  static const StringRef reshape[] = {"new_shape"};
  static const StringRef tile[] = {"multiples"};
  static const StringRef slice[] = {"start", "size"};
  static const StringRef mul[] = {"shift"};
  static const StringRef clamp[] = {"min_fp", "max_fp", "min_int", "max_int"};
  if (op == "tosa.reshape")
    return reshape;
  if (op == "tosa.tile")
    return tile;
  if (op == "tosa.slice")
    return slice;
  if (op == "tosa.mul")
    return mul;
  if (op == "tosa.clamp")
    return clamp;
  return {};
}

class Upgrader {
public:
  Upgrader(const llvm::MemoryBuffer &file, bool upgrade)
      : file(file), text(file.getBuffer()), upgrade(upgrade) {}

  LogicalResult run();
  std::unique_ptr<llvm::MemoryBuffer> takeResult();

private:
  void handleCustom(StringRef name, size_t begin, size_t end);
  void handleGeneric(StringRef name, size_t begin, size_t end);
  void upgradeExpandShape(size_t begin, size_t end);
  void upgradeConstValue(size_t begin, size_t end);
  void upgradeAttrsToOperands(StringRef name, size_t begin, size_t end);
  void checkTranspose(size_t begin, size_t end);
  void checkPad(size_t begin, size_t end);
  void upgradeConvolution(StringRef name, size_t begin, size_t end);
  void upgradeClamp(size_t begin, size_t end);

  size_t lineEnd(size_t i) const {
    size_t eol = text.find('\n', i);
    return eol == StringRef::npos ? text.size() : eol;
  }
  size_t skipSpace(size_t i) const {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    return i;
  }
  size_t matchClose(size_t open, size_t limit) const;
  /// The attribute dictionary `{...}` after the op name ending at `end`, on
  /// its line: its braces, the line's end and its entries.
  struct AttrDict {
    size_t open, close, limit;
    SmallVector<DictEntry> entries;
  };
  std::optional<AttrDict> findAttrDict(size_t end) const;
  size_t findOnLine(size_t from, StringRef stops) const;
  size_t statementBegin(size_t name) const;
  void report(size_t offset, const llvm::Twine &message) {
    (void)reportAtOffset(file, offset, message);
    ok = false;
  }
  void warn(size_t offset, StringRef kind, const llvm::Twine &message);
  /// Reports older syntax `what` (at `offset`) that is not upgraded, `why`
  /// and the way out.
  void refuseUpgrade(size_t offset, StringRef what, StringRef why) {
    report(offset, llvm::Twine(what) + "; " + why +
                       "re-export with a newer TOSA exporter");
  }
  /// "<op> with attribute `<key>` is older TOSA syntax, ...".
  static std::string olderAttribute(StringRef op, StringRef key) {
    return (op + " with attribute `" + key +
            "` is older TOSA syntax, which MLIR 22 rejects: MLIR 22 writes " +
            mlir22Form(op))
        .str();
  }

  const llvm::MemoryBuffer &file;
  StringRef text;
  bool upgrade;
  bool ok = true;
  bool sawTorch = false;
  unsigned fresh = 0;
  SmallVector<Edit> edits;
  llvm::StringMap<unsigned> rewrites;
};

} // namespace

size_t Upgrader::matchClose(size_t open, size_t limit) const {
  SmallVector<char> closers;
  for (size_t i = open; i < limit; ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = endOfStringLiteral(text, i);
      if (end == StringRef::npos || end > limit)
        return StringRef::npos;
      i = end - 1;
      continue;
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      closers.push_back(c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>');
    } else if (!closers.empty() && c == closers.back() &&
               !(c == '>' && text[i - 1] == '-')) {
      closers.pop_back();
      if (closers.empty())
        return i + 1;
    }
  }
  return StringRef::npos;
}

std::optional<Upgrader::AttrDict> Upgrader::findAttrDict(size_t end) const {
  size_t open = findOnLine(end, "{:");
  if (open == StringRef::npos || text[open] != '{')
    return std::nullopt;
  size_t limit = lineEnd(open);
  size_t close = matchClose(open, limit);
  if (close == StringRef::npos)
    return std::nullopt;
  return AttrDict{open, close, limit,
                  parseDict(text.slice(open + 1, close - 1))};
}

size_t Upgrader::findOnLine(size_t from, StringRef stops) const {
  for (size_t i = from, e = lineEnd(from); i < e; ++i)
    if (stops.contains(text[i]))
      return i;
  return StringRef::npos;
}

/// Where the op named at `name` starts (its results), if it is the first
/// thing on its line: new operands are defined right there.
size_t Upgrader::statementBegin(size_t name) const {
  size_t lineStart = text.rfind('\n', name);
  lineStart = lineStart == StringRef::npos ? 0 : lineStart + 1;
  StringRef head = text.slice(lineStart, name);
  StringRef trimmed = head.ltrim();
  size_t begin = lineStart + head.size() - trimmed.size();
  trimmed = trimmed.rtrim();
  if (trimmed.empty() ||
      (trimmed.starts_with("%") && trimmed.ends_with("=") &&
       llvm::all_of(trimmed.drop_back(), [](char c) {
         return isIdChar(c) || StringRef("%#, -").contains(c);
       })))
    return begin;
  return StringRef::npos;
}

void Upgrader::warn(size_t offset, StringRef kind,
                    const llvm::Twine &message) {
  if (++rewrites[kind] <= kWarningsPerKind)
    printAtOffset(file, offset, "warning", message);
}

void Upgrader::handleCustom(StringRef name, size_t begin, size_t end) {
  if (name == "tensor.expand_shape")
    upgradeExpandShape(begin, end);
  else if (name == "tosa.const")
    upgradeConstValue(begin, end);
  else if (name == "tosa.transpose")
    checkTranspose(begin, end);
  else if (name == "tosa.pad")
    checkPad(begin, end);
  else if (isConvolution(name))
    upgradeConvolution(name, begin, end);
  else if (name == "tosa.clamp")
    upgradeClamp(begin, end);
  else if (name == "tosa.fully_connected")
    report(begin, kFullyConnected);
  else if (!oldTosaAttributes(name).empty())
    upgradeAttrsToOperands(name, begin, end);
}

/// What an older tosa.transpose, custom or generic, is told.
static constexpr const char *kOldTranspose =
    "tosa.transpose with a `perms` operand is older TOSA syntax, which MLIR "
    "22 rejects: the permutation is an attribute, `tosa.transpose %x {perms "
    "= array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>`, with the "
    "values of the old operand's constant; re-export with a newer TOSA "
    "exporter";

void Upgrader::handleGeneric(StringRef name, size_t begin, size_t end) {
  if (name == "tosa.const") {
    upgradeConstValue(begin, end);
    return;
  }
  if (name == "tosa.fully_connected")
    return report(begin, kFullyConnected);
  if (name == "tosa.transpose") {
    // "tosa.transpose"(%x, %perms): the permutation as an operand.
    size_t close = text.find(')', end);
    if (end < text.size() && text[end] == '(' && close != StringRef::npos &&
        text.slice(end, close).contains(','))
      report(begin, kOldTranspose);
    return;
  }
  if (name != "tensor.expand_shape" && oldTosaAttributes(name).empty())
    return;
  // "op"(operands) <{properties}> {attributes}: the first dictionary.
  size_t open = findOnLine(end, "{:");
  if (open == StringRef::npos || text[open] != '{')
    open = StringRef::npos;
  SmallVector<DictEntry> entries;
  if (open != StringRef::npos) {
    size_t close = matchClose(open, lineEnd(open));
    if (close == StringRef::npos)
      return;
    entries = parseDict(text.slice(open + 1, close - 1));
  }
  auto has = [&](StringRef key) {
    return llvm::any_of(entries,
                        [&](const DictEntry &e) { return e.key == key; });
  };
  if (name == "tensor.expand_shape") {
    if (has("reassociation") && !has("static_output_shape"))
      report(begin, "generic tensor.expand_shape without "
                    "`static_output_shape` is the syntax of MLIR before LLVM "
                    "19 (older torch-mlir exports), which MLIR 22 rejects: "
                    "re-export with a newer torch-mlir, or print the op in "
                    "custom form (`tensor.expand_shape %x [[0, 1]] "
                    "output_shape [2, 3] : tensor<6xf32> into "
                    "tensor<2x3xf32>`), which is upgraded");
    return;
  }
  for (StringRef key : oldTosaAttributes(name))
    if (has(key)) {
      report(begin, "generic " + name + " with attribute `" + key +
                        "` is older TOSA syntax, which MLIR 22 rejects "
                        "(only the custom form is upgraded): MLIR 22 writes " +
                        mlir22Form(name) +
                        "; re-export with a newer TOSA exporter");
      return;
    }
}

void Upgrader::upgradeExpandShape(size_t begin, size_t end) {
  size_t p = skipSpace(end);
  if (p >= text.size() || text[p] != '%')
    return;
  for (++p; p < text.size() && (isIdChar(text[p]) || text[p] == '#'); ++p) {
  }
  p = skipSpace(p);
  if (p >= text.size() || text[p] != '[')
    return;
  size_t close = matchClose(p, lineEnd(p));
  if (close == StringRef::npos)
    return;
  size_t next = skipSpace(close);
  if (text.substr(next).starts_with("output_shape"))
    return;
  StringRef rest = text.slice(next, lineEnd(next));
  size_t into = rest.find(" into ");
  if (into == StringRef::npos)
    return;
  StringRef type = rest.substr(into + 6).ltrim();
  SmallVector<int64_t> shape;
  bool dynamic;
  if (!parseTensorShape(type, shape, dynamic))
    return;
  std::string list = "[" + joinInts(shape) + "]";
  StringRef what = "tensor.expand_shape without `output_shape` is the syntax "
                   "of MLIR before LLVM 19 (older torch-mlir exports), which "
                   "MLIR 22 rejects";
  if (dynamic) {
    report(begin, what + ": MLIR 22 writes `output_shape [...]` after the "
                         "reassociation, an index value for each dynamic "
                         "dimension, which the old form does not name, so it "
                         "is not upgraded: re-export with a newer torch-mlir "
                         "(with static shapes)");
    return;
  }
  if (!upgrade) {
    report(begin, what + ": write `output_shape " + list +
                      "` (the result type's shape) after the "
                      "reassociation, re-export with a newer torch-mlir, or "
                      "leave --pipe-upgrade-input on");
    return;
  }
  edits.push_back({close, 0, " output_shape " + list});
  warn(begin, "expand_shape",
       "upgraded older syntax: tensor.expand_shape without `output_shape` "
       "(MLIR before LLVM 19) now has `output_shape " +
           list + "`, its static result shape");
}

void Upgrader::upgradeConstValue(size_t begin, size_t end) {
  size_t p = skipSpace(end);
  if (text.substr(p).starts_with("()"))
    p = skipSpace(p + 2);
  if (p < text.size() && text[p] == '<')
    ++p;
  if (p >= text.size() || text[p] != '{')
    return;
  p = skipSpace(p + 1);
  if (!text.substr(p).starts_with("value"))
    return;
  size_t after = p + 5;
  if (after < text.size() && isIdChar(text[after]))
    return;
  size_t equals = skipSpace(after);
  if (equals >= text.size() || text[equals] != '=')
    return;
  if (!upgrade) {
    report(begin, "tosa.const with `value = ...` is older TOSA syntax, which "
                  "MLIR 22 rejects: the attribute is called `values` "
                  "(`\"tosa.const\"() <{values = dense<...> : ...}> : () -> "
                  "...`); re-export with a newer TOSA exporter, or leave "
                  "--pipe-upgrade-input on");
    return;
  }
  edits.push_back({after, 0, "s"});
  warn(begin, "tosa.const",
       "upgraded older syntax: tosa.const `value =` is now `values =`, "
       "MLIR 22's name of the attribute");
}

void Upgrader::upgradeAttrsToOperands(StringRef name, size_t begin,
                                      size_t end) {
  std::optional<AttrDict> dict = findAttrDict(end);
  if (!dict)
    return;
  auto [open, close, limit, entries] = *dict;
  ArrayRef<StringRef> keys = oldTosaAttributes(name);
  SmallVector<const DictEntry *> found;
  for (StringRef key : keys)
    for (const DictEntry &entry : entries)
      if (entry.key == key)
        found.push_back(&entry);
  if (found.empty())
    return;
  std::string what = olderAttribute(name, found.front()->key);
  auto refuse = [&](StringRef why) { refuseUpgrade(begin, what, why); };
  if (!upgrade)
    return refuse("leave --pipe-upgrade-input on, or ");
  if (found.size() != keys.size())
    return refuse("the op lacks the other attributes, so it is not upgraded: ");
  size_t stmt = statementBegin(begin);
  size_t colon = skipSpace(close);
  size_t types = colon < limit && text[colon] == ':' ? skipSpace(colon + 1)
                                                     : StringRef::npos;
  size_t typesEnd = types < limit && text[types] == '('
                        ? matchClose(types, limit)
                        : StringRef::npos;
  if (stmt == StringRef::npos || typesEnd == StringRef::npos)
    return refuse("the op is not alone on its line in the form `%r = " +
                  name.str() +
                  " operands {attributes} : (types) -> type`, so it is "
                  "not upgraded: ");

  std::string defs, operands, operandTypes, shown;
  for (const DictEntry *entry : found) {
    std::string id = "%__pipe_upgrade_" + std::to_string(fresh++);
    if (name == "tosa.mul") {
      int64_t shift;
      if (entry->value.split(':').first.trim().getAsInteger(10, shift))
        return refuse("its value is not an integer, so it is not upgraded: ");
      defs += id + " = \"tosa.const\"() <{values = dense<" +
              std::to_string(shift) +
              "> : tensor<1xi8>}> : () -> tensor<1xi8> ";
      operandTypes += ", tensor<1xi8>";
    } else {
      std::optional<SmallVector<int64_t>> ints = parseIntList(entry->value);
      if (!ints)
        return refuse("its value is not a list of integers, so it is not "
                      "upgraded: ");
      std::string count = std::to_string(ints->size());
      defs += id + " = \"tosa.const_shape\"() <{values = dense<[" +
              joinInts(*ints) + "]> : tensor<" + count +
              "xindex>}> : () -> !tosa.shape<" + count + "> ";
      operandTypes += ", !tosa.shape<" + count + ">";
    }
    operands += ", " + id;
    shown += (shown.empty() ? "`" : ", `") + entry->key.str() + "`";
  }
  SmallVector<StringRef> kept;
  for (const DictEntry &entry : entries)
    if (!llvm::is_contained(keys, entry.key))
      kept.push_back(entry.whole);
  std::string head = text.slice(end, open).rtrim().str() + operands;
  if (!kept.empty())
    head += " {" + llvm::join(kept, ", ") + "}";
  edits.push_back({stmt, 0, defs});
  edits.push_back({end, close - end, head});
  edits.push_back({typesEnd - 1, 0, operandTypes});
  warn(begin, name,
       "upgraded older syntax: " + name + " attribute(s) " + shown +
           " are now operands defined right before it, as MLIR 22 has them");
}

/// A convolution of the old form has three operands (input, weight, bias):
/// MLIR 22 adds the input's and the weight's zero points as operands and
/// the accumulator type as an attribute. A float one is upgraded with zero
/// zero points and an f32 accumulator, what the old form meant; a quantized
/// one (`quantization_info`) is left to a newer exporter.
void Upgrader::upgradeConvolution(StringRef name, size_t begin, size_t end) {
  size_t open = findOnLine(end, "{:");
  if (open == StringRef::npos)
    return;
  size_t limit = lineEnd(open);
  size_t close = text[open] == '{' ? matchClose(open, limit) : open;
  if (close == StringRef::npos)
    return;
  size_t colon = text[open] == '{' ? skipSpace(close) : open;
  if (colon >= limit || text[colon] != ':')
    return;
  size_t types = skipSpace(colon + 1);
  size_t typesEnd = types < limit && text[types] == '('
                        ? matchClose(types, limit)
                        : StringRef::npos;
  if (typesEnd == StringRef::npos)
    return;
  SmallVector<StringRef> operandTypes =
      splitTopLevel(text.slice(types + 1, typesEnd - 1));
  if (operandTypes.size() != 3)
    return;
  SmallVector<DictEntry> entries;
  if (text[open] == '{')
    entries = parseDict(text.slice(open + 1, close - 1));
  auto elementOf = [](StringRef type) {
    StringRef inner = type.rsplit('>').first;
    return inner.rsplit('x').second;
  };
  StringRef inputElement = elementOf(operandTypes[0]);
  StringRef weightElement = elementOf(operandTypes[1]);
  std::string what =
      (name +
       " with three operands is older TOSA syntax, which MLIR 22 "
       "rejects: MLIR 22 writes `" +
       name +
       " %input, %weight, %bias, %input_zp, %weight_zp {acc_type = f32, "
       "...}` with the zero points `tosa.const`s of shape 1 and the input's "
       "and the weight's element types")
          .str();
  auto refuse = [&](StringRef why) { refuseUpgrade(begin, what, why); };
  bool isFloat = llvm::is_contained({"f32", "f16", "bf16"}, inputElement) &&
                 llvm::is_contained({"f32", "f16", "bf16"}, weightElement);
  if (!isFloat || llvm::any_of(entries, [](const DictEntry &e) {
        return e.key == "quantization_info";
      }))
    return refuse("a quantized convolution is not upgraded: ");
  // transpose_conv2d's `out_shape` went with the old form.
  if (llvm::any_of(entries,
                   [](const DictEntry &e) { return e.key == "out_shape"; }))
    return refuse("its `out_shape` has no MLIR 22 form, so it is not "
                  "upgraded: ");
  if (!upgrade)
    return refuse("leave --pipe-upgrade-input on, or ");
  size_t stmt = statementBegin(begin);
  if (stmt == StringRef::npos)
    return refuse("the op is not alone on its line, so it is not upgraded: ");
  std::string input = "%__pipe_upgrade_" + std::to_string(fresh++);
  std::string weight = "%__pipe_upgrade_" + std::to_string(fresh++);
  auto zeroPoint = [](const std::string &id, StringRef element) {
    return id + " = \"tosa.const\"() <{values = dense<0.0> : tensor<1x" +
           element.str() + ">}> : () -> tensor<1x" + element.str() + "> ";
  };
  edits.push_back(
      {stmt, 0,
       zeroPoint(input, inputElement) + zeroPoint(weight, weightElement)});
  // The zero points follow the bias operand, right before the attributes
  // or the colon.
  size_t operandsEnd = text[open] == '{' ? open : colon;
  while (operandsEnd > end && text[operandsEnd - 1] == ' ')
    --operandsEnd;
  edits.push_back({operandsEnd, 0, ", " + input + ", " + weight});
  if (text[open] == '{')
    edits.push_back(
        {open + 1, 0, entries.empty() ? "acc_type = f32" : "acc_type = f32, "});
  else
    edits.push_back({operandsEnd, 0, " {acc_type = f32}"});
  edits.push_back({typesEnd - 1, 0,
                   ", tensor<1x" + inputElement.str() + ">, tensor<1x" +
                       weightElement.str() + ">"});
  warn(begin, name,
       "upgraded older syntax: " + name +
           " without zero points is now written with zero `input_zp` and "
           "`weight_zp` operands and `acc_type = f32`, as MLIR 22 has it (it "
           "also wants each padded input extent less the dilated kernel's "
           "divisible by the stride, which exports that sized outputs by "
           "floor may miss: its verifier then says 'wholly divisible by "
           "stride', and the input needs a tosa.slice to the rows used)");
}

/// tosa.clamp's bounds were `min_fp`/`max_fp` and `min_int`/`max_int`
/// (both pairs always given) until MLIR 20; MLIR 22 has `min_val`/`max_val`
/// of the operand's element type: the float pair for f32, the integer pair
/// for integers. f16 and bf16 bounds (the old ones are f32 values, often
/// f32's largest) are left to a newer exporter.
void Upgrader::upgradeClamp(size_t begin, size_t end) {
  std::optional<AttrDict> dict = findAttrDict(end);
  if (!dict)
    return;
  auto [open, close, limit, entries] = *dict;
  auto find = [&](StringRef key) -> const DictEntry * {
    for (const DictEntry &entry : entries)
      if (entry.key == key)
        return &entry;
    return nullptr;
  };
  ArrayRef<StringRef> oldKeys = oldTosaAttributes("tosa.clamp");
  if (llvm::none_of(oldKeys, find))
    return;
  std::string what =
      olderAttribute("tosa.clamp", *llvm::find_if(oldKeys, find));
  auto refuse = [&](StringRef why) { refuseUpgrade(begin, what, why); };
  if (!upgrade)
    return refuse("leave --pipe-upgrade-input on, or ");
  size_t colon = skipSpace(close);
  size_t types = colon < limit && text[colon] == ':' ? skipSpace(colon + 1)
                                                     : StringRef::npos;
  StringRef element;
  if (types < limit && text[types] == '(') {
    size_t typesEnd = matchClose(types, limit);
    if (typesEnd != StringRef::npos)
      element = text.slice(types + 1, typesEnd - 1)
                    .trim()
                    .rsplit('>')
                    .first.rsplit('x')
                    .second;
  }
  bool isFloat = element == "f32";
  bool isInt = element.size() > 1 && element[0] == 'i' &&
               llvm::all_of(element.drop_front(), llvm::isDigit);
  const DictEntry *low = find(isFloat ? "min_fp" : "min_int");
  const DictEntry *high = find(isFloat ? "max_fp" : "max_int");
  if (!(isFloat || isInt) || !low || !high)
    return refuse("only f32 and integer operands with both bounds are "
                  "upgraded: ");
  auto bound = [&](const DictEntry *entry) {
    return entry->value.split(':').first.trim().str() + " : " + element.str();
  };
  SmallVector<std::string> kept;
  for (const DictEntry &entry : entries)
    if (!llvm::is_contained(oldKeys, entry.key))
      kept.push_back(entry.whole.str());
  kept.push_back("min_val = " + bound(low));
  kept.push_back("max_val = " + bound(high));
  edits.push_back({open + 1, close - open - 2, llvm::join(kept, ", ")});
  warn(begin, "tosa.clamp",
       "upgraded older syntax: tosa.clamp `" + low->key + "`/`" + high->key +
           "` are now `min_val`/`max_val` of the element type, as MLIR 22 "
           "has them");
}

void Upgrader::checkTranspose(size_t begin, size_t end) {
  size_t stop = findOnLine(end, "{:");
  if (stop == StringRef::npos || !text.slice(end, stop).contains(','))
    return;
  report(begin, kOldTranspose);
}

void Upgrader::checkPad(size_t begin, size_t end) {
  size_t colon = findOnLine(end, "{:");
  if (colon != StringRef::npos && text[colon] == '{') {
    size_t close = matchClose(colon, lineEnd(colon));
    colon = close == StringRef::npos ? close : findOnLine(close, ":");
  }
  if (colon == StringRef::npos)
    return;
  size_t open = skipSpace(colon + 1);
  if (open >= text.size() || text[open] != '(')
    return;
  size_t close = matchClose(open, lineEnd(open));
  if (close == StringRef::npos)
    return;
  SmallVector<StringRef> types = splitTopLevel(text.slice(open + 1, close - 1));
  if (types.size() < 2 || !types[1].starts_with("tensor<"))
    return;
  report(begin, "tosa.pad with a tensor `padding` operand is older TOSA "
                "syntax, which MLIR 22 rejects: the padding is a "
                "`!tosa.shape<2*rank>` (`%p = \"tosa.const_shape\"() <{values "
                "= dense<[0, 0, 1, 1]> : tensor<4xindex>}> : () -> "
                "!tosa.shape<4>`) followed by the pad value as a "
                "`tensor<1xT>` operand; re-export with a newer TOSA exporter");
}

LogicalResult Upgrader::run() {
  for (size_t i = 0, size = text.size(); i < size;) {
    char c = text[i];
    if (c == '/' && i + 1 < size && text[i + 1] == '/') {
      i = lineEnd(i);
      continue;
    }
    // Resources and other metadata: no ops after this.
    if (c == '{' && text.substr(i, 3) == "{-#")
      break;
    if (c == '"') {
      size_t end = endOfStringLiteral(text, i);
      if (end == StringRef::npos)
        break;
      handleGeneric(text.slice(i + 1, end - 1), i, end);
      i = end;
      continue;
    }
    // torch dialect IR does not parse without the torch dialect, and MLIR
    // only advises -allow-unregistered-dialect, which does not help: say
    // what does, once, before the parser's error.
    if (c == '!' && text.substr(i).starts_with("!torch.") && !sawTorch) {
      sawTorch = true;
      printAtOffset(file, i, "warning",
                    "this is torch dialect IR (`!" +
                        text.substr(i + 1).take_while(isIdChar) +
                        "`), which is not accepted: lower it to "
                        "linalg-on-tensors first (torch_mlir.fx."
                        "export_and_import(..., "
                        "output_type=\"linalg-on-tensors\"))");
    }
    // SSA names, symbols, aliases, blocks: never an op name.
    if (StringRef("%@#!^").contains(c)) {
      for (++i; i < size && (isIdChar(text[i]) || text[i] == '-'); ++i) {
      }
      continue;
    }
    if (llvm::isAlpha(c) || c == '_') {
      size_t begin = i;
      while (i < size && isIdChar(text[i]))
        ++i;
      handleCustom(text.slice(begin, i), begin, i);
      continue;
    }
    ++i;
  }
  size_t shownTotal = 0, total = 0;
  for (const auto &kind : rewrites) {
    total += kind.getValue();
    shownTotal += std::min(kind.getValue(), kWarningsPerKind);
  }
  if (total > shownTotal)
    llvm::errs() << file.getBufferIdentifier() << ": warning: "
                 << total - shownTotal
                 << " more rewrite(s) of older syntax not shown (at most "
                 << kWarningsPerKind << " of each kind are)\n";
  return success(ok);
}

std::unique_ptr<llvm::MemoryBuffer> Upgrader::takeResult() {
  if (edits.empty())
    return nullptr;
  llvm::stable_sort(edits, [](const Edit &a, const Edit &b) {
    return a.offset < b.offset;
  });
  std::string out;
  out.reserve(text.size() + edits.size() * 64);
  size_t at = 0;
  for (const Edit &edit : edits) {
    out.append(text.data() + at, edit.offset - at);
    out += edit.text;
    at = edit.offset + edit.length;
  }
  out.append(text.data() + at, text.size() - at);
  return llvm::MemoryBuffer::getMemBufferCopy(out,
                                              file.getBufferIdentifier());
}

FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
pipe::upgradeOlderSyntax(const llvm::MemoryBuffer &file, bool upgrade) {
  Upgrader upgrader(file, upgrade);
  if (failed(upgrader.run()))
    return failure();
  return upgrader.takeResult();
}
