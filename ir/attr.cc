#include "ir/attr.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

namespace kiln::ir {
namespace {

// Bit width of integer values (pred: 1; sub-byte types: their own width).
int IntegerBits(DType t) { return t == DType::kPred ? 1 : DTypeBits(t); }

// Element `i` of an integer (or boolean) literal, sign- or zero-extended to 64 bits.
std::optional<int64_t> IntElement(const Attr& literal, size_t i) {
  const DType t = literal.type.dtype;
  if (!IsInteger(t) && t != DType::kPred) return std::nullopt;
  const size_t size = static_cast<size_t>(DTypeByteSize(t));
  if (size == 0 || (i + 1) * size > literal.data.size()) return std::nullopt;
  uint64_t raw = 0;
  for (size_t b = 0; b < size; ++b) raw |= uint64_t{literal.data[i * size + b]} << (8 * b);
  if (t == DType::kPred) return static_cast<int64_t>(raw != 0);
  const int bits = IntegerBits(t);
  if (bits < 64) {
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    raw &= mask;
    if (IsSignedInt(t) && ((raw >> (bits - 1)) & 1)) raw |= ~mask;
  }
  return static_cast<int64_t>(raw);
}

size_t ElementCount(const Attr& literal) {
  const int size = DTypeByteSize(literal.type.dtype);
  return size > 0 ? literal.data.size() / static_cast<size_t>(size) : 0;
}

std::string QuoteString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7F) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '\\';
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string FormatDouble(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// One element of a dense literal as text; non-integer exotic types print as hex bytes.
std::string ElementToString(const Attr& literal, size_t i) {
  const DType t = literal.type.dtype;
  if (std::optional<int64_t> v = IntElement(literal, i)) {
    if (t == DType::kPred) return *v ? "true" : "false";
    if (t == DType::kU64) return std::to_string(static_cast<uint64_t>(*v));
    return std::to_string(*v);
  }
  const size_t size = static_cast<size_t>(DTypeByteSize(t));
  const uint8_t* p = literal.data.data() + i * size;
  if (t == DType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return FormatDouble(f);
  }
  if (t == DType::kF64) {
    double d;
    std::memcpy(&d, p, 8);
    return FormatDouble(d);
  }
  if (t == DType::kBF16) {
    uint32_t bits = uint32_t{p[0]} << 16 | uint32_t{p[1]} << 24;
    return FormatDouble(std::bit_cast<float>(bits));
  }
  std::string hex = "0x";
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (size_t b = size; b-- > 0;) {
    hex += kHex[p[b] >> 4];
    hex += kHex[p[b] & 0xF];
  }
  return hex;
}

}  // namespace

std::optional<std::vector<int64_t>> Attr::AsInts() const {
  std::vector<int64_t> out;
  if (kind == Kind::kArray) {
    out.reserve(array.size());
    for (const Attr& element : array) {
      std::optional<int64_t> v = element.AsInt();
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
  if (kind == Kind::kElements) {
    const size_t count = ElementCount(*this);
    out.reserve(count);
    for (size_t k = 0; k < count; ++k) {
      std::optional<int64_t> v = IntElement(*this, k);
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
  return std::nullopt;
}

std::optional<std::vector<bool>> Attr::AsBools() const {
  std::vector<bool> out;
  if (kind == Kind::kArray) {
    for (const Attr& element : array) {
      if (element.kind != Kind::kBool) return std::nullopt;
      out.push_back(element.b);
    }
    return out;
  }
  if (kind == Kind::kElements && type.dtype == DType::kPred) {
    for (uint8_t byte : data) out.push_back(byte != 0);
    return out;
  }
  return std::nullopt;
}

std::optional<int64_t> Attr::AsInt() const {
  switch (kind) {
    case Kind::kInt:
      return i;
    case Kind::kBool:
      return b ? 1 : 0;
    case Kind::kElements:
      if (ElementCount(*this) == 1) return IntElement(*this, 0);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

const Attr* Attr::Find(std::string_view key) const {
  if (kind != Kind::kDict) return nullptr;
  for (const auto& [name, value] : dict) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::string Attr::ToString() const {
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kUnit:
      return "unit";
    case Kind::kBool:
      return b ? "true" : "false";
    case Kind::kInt:
      return std::to_string(i) + " : " + std::string(DTypeName(type.dtype));
    case Kind::kFloat:
      return FormatDouble(f) + " : " + std::string(DTypeName(type.dtype));
    case Kind::kString:
      return QuoteString(str);
    case Kind::kEnum:
      return "#" + str;
    case Kind::kArray: {
      std::string out = "[";
      for (size_t k = 0; k < array.size(); ++k) out += (k ? ", " : "") + array[k].ToString();
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = "{";
      for (size_t k = 0; k < dict.size(); ++k) {
        out += (k ? ", " : "") + dict[k].first + " = " + dict[k].second.ToString();
      }
      return out + "}";
    }
    case Kind::kType:
      return type.ToString();
    case Kind::kElements: {
      // Long literals are abbreviated: the dump is for reading, not round-tripping.
      constexpr size_t kMaxShown = 16;
      const size_t count = ElementCount(*this);
      std::string out = "dense<[";
      for (size_t k = 0; k < count && k < kMaxShown; ++k) {
        out += (k ? ", " : "") + ElementToString(*this, k);
      }
      if (count > kMaxShown) out += ", ... (" + std::to_string(count) + " elements)";
      return out + "]> : " + type.ToString();
    }
    case Kind::kSymbolRef:
      return "@" + str;
    case Kind::kOpaque:
      return "<" + str + ">";
  }
  return "<invalid attribute>";
}

}  // namespace kiln::ir
