// Attributes: compile-time constants attached to ops (dimension lists, comparison directions, dense
// tensor literals, ...). One tagged tree type keeps the reader, the verifier and the kernels
// simple; accessors return nullopt instead of asserting so malformed programs become errors, not
// crashes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/type.h"

namespace kiln::ir {

struct Attr {
  enum class Kind : uint8_t {
    kNone,  // an absent optional attribute (VHLO writes `none` placeholders)
    kUnit,
    kBool,
    kInt,    // integer scalar; `type` holds its element type
    kFloat,  // float scalar; `type` holds its element type
    kString,
    kEnum,  // enum case by its StableHLO spelling: "LT", "FLOAT", "DEFAULT", ...
    kArray,
    kDict,
    kType,       // a type used as a value (e.g. function_type)
    kElements,   // dense tensor literal: `type` is the tensor type, `data` its row-major bytes
    kSymbolRef,  // @name
    kOpaque,     // something Kiln does not interpret; `str` holds a description
  };

  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string str;
  Type type;
  std::vector<Attr> array;
  std::vector<std::pair<std::string, Attr>> dict;
  // kElements: fully expanded (splats are materialised), one element per DTypeByteSize,
  // little-endian.
  std::vector<uint8_t> data;

  static Attr None() { return Attr(); }
  static Attr Unit() {
    Attr a;
    a.kind = Kind::kUnit;
    return a;
  }
  static Attr Bool(bool v) {
    Attr a;
    a.kind = Kind::kBool;
    a.b = v;
    return a;
  }
  static Attr Int(int64_t v, Type t = Type::Tensor(DType::kS64, {})) {
    Attr a;
    a.kind = Kind::kInt;
    a.i = v;
    a.type = std::move(t);
    return a;
  }
  static Attr Float(double v, Type t = Type::Tensor(DType::kF64, {})) {
    Attr a;
    a.kind = Kind::kFloat;
    a.f = v;
    a.type = std::move(t);
    return a;
  }
  static Attr String(std::string s) {
    Attr a;
    a.kind = Kind::kString;
    a.str = std::move(s);
    return a;
  }
  static Attr Enum(std::string s) {
    Attr a;
    a.kind = Kind::kEnum;
    a.str = std::move(s);
    return a;
  }
  static Attr SymbolRef(std::string s) {
    Attr a;
    a.kind = Kind::kSymbolRef;
    a.str = std::move(s);
    return a;
  }
  static Attr Opaque(std::string s) {
    Attr a;
    a.kind = Kind::kOpaque;
    a.str = std::move(s);
    return a;
  }
  static Attr TypeValue(Type t) {
    Attr a;
    a.kind = Kind::kType;
    a.type = std::move(t);
    return a;
  }
  static Attr Array(std::vector<Attr> v) {
    Attr a;
    a.kind = Kind::kArray;
    a.array = std::move(v);
    return a;
  }

  bool is_none() const { return kind == Kind::kNone; }

  // Integer list from either an array of ints or an integer dense literal (VHLO encodes
  // `array<i64: ...>` as a 1-D tensor literal).
  std::optional<std::vector<int64_t>> AsInts() const;
  // Boolean list from an array of bools or an i1 dense literal.
  std::optional<std::vector<bool>> AsBools() const;
  // Scalar integer from kInt, kBool or a one-element integer literal.
  std::optional<int64_t> AsInt() const;
  // Looks up a key of a kDict attribute.
  const Attr* Find(std::string_view key) const;

  std::string ToString() const;
};

struct NamedAttr {
  std::string name;
  Attr value;
};

}  // namespace kiln::ir
