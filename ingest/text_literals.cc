// Literals: numbers with their types (`1 : i32`, `0x7FC00000 : f32`), dense<...> tensor literals
// (nested lists, splats, complex pairs, "0x..." hex blobs) and array<T: ...>, encoded as the
// bytecode reader stores them (row-major, little-endian, splats expanded, one byte per i1 and per
// sub-byte element), within ReadLimits' literal budgets.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "ingest/text_parser.h"

namespace kiln::ingest::text {
namespace {

// One element of a dense literal as written, converted once the type is known.
struct Element {
  std::string re, im;  // im: complex elements only
  bool complex = false;
};

uint16_t FloatToBf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t FloatToF16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 16) & 0x8000;
  const uint32_t abs = bits & 0x7FFFFFFF;
  if (abs >= 0x7F800000)
    return static_cast<uint16_t>(sign | 0x7C00 | (abs > 0x7F800000 ? 0x200 : 0));
  const int exp = static_cast<int>(abs >> 23) - 127 + 15;
  uint32_t mant = (abs & 0x7FFFFF) | 0x800000;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00);
  int shift = 13;
  uint32_t base_exp = static_cast<uint32_t>(exp);
  if (exp <= 0) {
    shift = 14 - exp;
    base_exp = 0;
    if (shift > 24) return static_cast<uint16_t>(sign);
  }
  uint32_t half = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1);
  const uint32_t mid = 1u << (shift - 1);
  if (exp > 0) half &= 0x3FF;
  uint32_t out = (base_exp << 10) + half;
  if (rest > mid || (rest == mid && (out & 1))) ++out;
  return static_cast<uint16_t>(sign | out);
}

// An exactly representable decimal value in a one-byte float format (float8, float6, float4):
// MLIR prints such constants in decimal only when the digits give the value back exactly (others
// as hex bits). Rounds to nearest even all the same; false if the value is out of range.
bool EncodeNarrowFloat(double v, ir::DType dtype, uint64_t& bits) {
  const int e_bits = ir::FloatExponentBits(dtype), m_bits = ir::FloatMantissaBits(dtype);
  const std::string_view name = ir::DTypeName(dtype);
  const bool fnuz = name.find("FNUZ") != std::string_view::npos;
  const bool unsigned_format = name == "f8E8M0FNU";
  int bias = (1 << (e_bits - 1)) - (fnuz ? 0 : 1);
  if (name == "f8E4M3B11FNUZ") bias = 11;
  if (unsigned_format) bias = 127;
  if (!std::isfinite(v) || e_bits <= 0) return false;
  const bool negative = std::signbit(v);
  if (negative && unsigned_format) return false;
  double a = std::fabs(v);
  uint64_t field = 0;
  if (a != 0.0) {
    int e = std::ilogb(a);
    const int min_normal = unsigned_format ? -127 : 1 - bias;
    uint64_t exp_field = 0;
    double scaled = 0.0;
    if (e < min_normal) {
      if (unsigned_format) return false;
      scaled = std::ldexp(a, -min_normal + m_bits);  // subnormal: exponent field 0
    } else {
      exp_field = static_cast<uint64_t>(e + bias);
      scaled = std::ldexp(a, -e + m_bits) - std::ldexp(1.0, m_bits);
    }
    double rounded = std::nearbyint(scaled);
    uint64_t mant = static_cast<uint64_t>(rounded);
    if (mant >> m_bits) {  // rounding carried into the exponent
      mant = 0;
      ++exp_field;
    }
    field = (exp_field << m_bits) | mant;
    if (field >> (e_bits + m_bits)) return false;
  }
  const int sign_shift = e_bits + m_bits;
  if (negative && !unsigned_format && !(fnuz && field == 0)) field |= uint64_t{1} << sign_shift;
  bits = field;
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void PutLE(std::vector<uint8_t>& out, uint64_t bits, int bytes) {
  for (int b = 0; b < bytes; ++b) out.push_back(static_cast<uint8_t>(bits >> (8 * b)));
}

}  // namespace

Status Parser::ChargeAttrBytes(uint64_t bytes) {
  if (bytes > limits_.max_literal_bytes) {
    return ResourceExhausted(Where(pos_) + ": a dense literal of " + std::to_string(bytes) +
                             " bytes exceeds the limit of " +
                             std::to_string(limits_.max_literal_bytes));
  }
  attr_bytes_ += bytes;
  if (attr_bytes_ > limits_.max_total_attr_bytes) {
    return ResourceExhausted(Where(pos_) + ": the program's literals exceed " +
                             std::to_string(limits_.max_total_attr_bytes) + " bytes");
  }
  return Status::Ok();
}

// The element converted to its storage bytes in `dtype`.
static Status EncodeElement(const Element& e, ir::DType dtype, std::vector<uint8_t>& out,
                            std::string& error) {
  const int bytes = ir::DTypeByteSize(dtype);
  auto parse_int = [&](const std::string& s, uint64_t& bits) -> bool {
    if (s == "true") return bits = 1, true;
    if (s == "false") return bits = 0, true;
    const bool neg = !s.empty() && s[0] == '-';
    const char* p = s.c_str() + (neg || (!s.empty() && s[0] == '+') ? 1 : 0);
    char* end = nullptr;
    errno = 0;
    const bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    const unsigned long long v = std::strtoull(hex ? p + 2 : p, &end, hex ? 16 : 10);
    if (hex && p[2] == '\0') return false;
    if (end == p || *end != '\0' || errno == ERANGE) return false;
    bits = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    return true;
  };
  auto parse_float_bits = [&](const std::string& s, int width, uint64_t& bits) -> bool {
    if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0) return parse_int(s, bits);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') return false;
    if (width == 64) {
      bits = std::bit_cast<uint64_t>(v);
    } else if (width == 32) {
      bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    } else if (dtype == ir::DType::kBF16 || (ir::IsComplex(dtype) && false)) {
      bits = FloatToBf16(static_cast<float>(v));
    } else if (dtype == ir::DType::kF16) {
      bits = FloatToF16(static_cast<float>(v));
    } else if (ir::DTypeByteSize(dtype) == 1) {
      return EncodeNarrowFloat(v, dtype, bits);
    } else {
      return false;
    }
    return true;
  };
  if (ir::IsComplex(dtype)) {
    const int half = bytes / 2;
    uint64_t re = 0, im = 0;
    if (!parse_float_bits(e.re, half * 8, re) ||
        !parse_float_bits(e.complex ? e.im : "0", half * 8, im)) {
      error = "malformed complex element (" + e.re + ", " + e.im + ")";
      return Status::Ok();
    }
    PutLE(out, re, half);
    PutLE(out, im, half);
    return Status::Ok();
  }
  if (e.complex) {
    error = "a complex element in a literal of type " + std::string(ir::DTypeName(dtype));
    return Status::Ok();
  }
  uint64_t bits = 0;
  if (ir::IsFloat(dtype)) {
    if (!parse_float_bits(e.re, bytes * 8, bits)) {
      const bool hex = e.re.rfind("0x", 0) == 0;
      error = hex || ir::DTypeByteSize(dtype) != 1
                  ? "malformed element '" + e.re + "' of type " + std::string(ir::DTypeName(dtype))
                  : "element '" + e.re + "' is not a value of type " +
                        std::string(ir::DTypeName(dtype));
      return Status::Ok();
    }
  } else if (!parse_int(e.re, bits)) {
    error = "malformed element '" + e.re + "' of type " + std::string(ir::DTypeName(dtype));
    return Status::Ok();
  }
  if (dtype == ir::DType::kPred) bits = bits != 0 ? 1 : 0;
  if (ir::IsSubByte(dtype)) bits &= (uint64_t{1} << ir::DTypeBits(dtype)) - 1;
  PutLE(out, bits, bytes);
  return Status::Ok();
}

StatusOr<ir::Attr> Parser::ParseDense(const ir::Type* elided_type) {
  KILN_RETURN_IF_ERROR(Expect('<', "after 'dense'"));
  const size_t content_pos = pos_;
  std::vector<Element> elements;
  std::vector<uint8_t> hex;
  bool is_hex = false;
  if (Peek() == '"') {
    KILN_ASSIGN_OR_RETURN(std::string s, ParseStringLiteral());
    if (s.size() < 2 || s.substr(0, 2) != "0x" || s.size() % 2 != 0) {
      return ErrorAt(content_pos, "a dense hex literal is \"0x\" followed by pairs of hex digits");
    }
    KILN_RETURN_IF_ERROR(ChargeAttrBytes(s.size() / 2));
    for (size_t i = 2; i < s.size(); i += 2) {
      const int hi = HexValue(s[i]), lo = HexValue(s[i + 1]);
      if (hi < 0 || lo < 0) return ErrorAt(content_pos, "bad hex digit in a dense literal");
      hex.push_back(static_cast<uint8_t>(hi * 16 + lo));
    }
    is_hex = true;
  } else if (Peek() != '>') {
    // Nested lists flatten to elements in row-major order.
    int open = 0;
    while (true) {
      const char c = Peek();
      if (c == '[') {
        if (++open > 64) return Error("dense literal nests too deeply");
        ++pos_;
        continue;
      }
      if (c == ']') {
        if (--open < 0) return Error("unbalanced ']' in a dense literal");
        ++pos_;
      } else if (c == '(') {
        ++pos_;
        Element e;
        e.complex = true;
        for (std::string* part : {&e.re, &e.im}) {
          SkipSpace();
          const size_t s = pos_;
          while (pos_ < text_.size() &&
                 (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                  text_[pos_] == '-' || text_[pos_] == '+')) {
            ++pos_;
          }
          *part = std::string(text_.substr(s, pos_ - s));
          if (part == &e.re) KILN_RETURN_IF_ERROR(Expect(',', "in a complex element"));
        }
        KILN_RETURN_IF_ERROR(Expect(')', "to close a complex element"));
        elements.push_back(std::move(e));
      } else {
        SkipSpace();
        const size_t s = pos_;
        while (pos_ < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                text_[pos_] == '-' || text_[pos_] == '+')) {
          ++pos_;
        }
        if (pos_ == s) return Error("expected an element of a dense literal");
        Element e;
        e.re = std::string(text_.substr(s, pos_ - s));
        elements.push_back(std::move(e));
        if (elements.size() > limits_.max_literal_bytes) return Error("dense literal is too large");
      }
      if (open == 0) break;
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != ']') {
        return Error("expected ',' or ']' in a dense literal");
      }
    }
  }
  KILN_RETURN_IF_ERROR(Expect('>', "to close the dense literal"));
  ir::Type type;
  if (Consume(':')) {
    KILN_ASSIGN_OR_RETURN(type, ParseType());
  } else if (elided_type != nullptr) {
    type = *elided_type;
  } else {
    return Error("expected ':' and the type of the dense literal");
  }
  if (!type.is_tensor() || !type.has_static_shape() || type.dtype == ir::DType::kInvalid) {
    return ErrorAt(content_pos,
                   "a dense literal needs a statically shaped tensor type, not " + type.ToString());
  }
  const int64_t count = type.num_elements();
  const int width = ir::DTypeByteSize(type.dtype);
  if (count < 0 || width <= 0)
    return ErrorAt(content_pos, "bad dense literal type " + type.ToString());
  const uint64_t total = static_cast<uint64_t>(count) * static_cast<uint64_t>(width);
  KILN_RETURN_IF_ERROR(ChargeAttrBytes(total));
  ir::Attr attr;
  attr.kind = ir::Attr::Kind::kElements;
  attr.type = type;
  if (is_hex) {
    if (type.dtype == ir::DType::kPred && hex.size() != static_cast<uint64_t>(count) &&
        hex.size() == (static_cast<uint64_t>(count) + 7) / 8 && hex.size() != 1) {
      for (int64_t i = 0; i < count; ++i)
        attr.data.push_back((hex[static_cast<size_t>(i / 8)] >> (i % 8)) & 1);
    } else if (hex.size() == total) {
      attr.data = std::move(hex);
    } else if (hex.size() == static_cast<size_t>(width)) {  // splat
      attr.data.reserve(total);
      for (int64_t i = 0; i < count; ++i) attr.data.insert(attr.data.end(), hex.begin(), hex.end());
    } else {
      return ErrorAt(content_pos, "hex literal has " + std::to_string(hex.size()) + " bytes; " +
                                      type.ToString() + " needs " + std::to_string(total));
    }
    if (type.dtype == ir::DType::kPred) {
      for (uint8_t& b : attr.data) b = b != 0 ? 1 : 0;
    }
    return attr;
  }
  if (elements.size() != static_cast<size_t>(count) && elements.size() != 1) {
    return ErrorAt(content_pos, "dense literal has " + std::to_string(elements.size()) +
                                    " elements; " + type.ToString() + " has " +
                                    std::to_string(count));
  }
  std::vector<uint8_t> encoded;
  std::string error;
  for (const Element& e : elements) {
    KILN_RETURN_IF_ERROR(EncodeElement(e, type.dtype, encoded, error));
    if (!error.empty()) return ErrorAt(content_pos, error);
  }
  if (elements.size() == 1 && count != 1) {
    attr.data.reserve(total);
    for (int64_t i = 0; i < count; ++i)
      attr.data.insert(attr.data.end(), encoded.begin(), encoded.end());
  } else {
    attr.data = std::move(encoded);
  }
  return attr;
}

StatusOr<ir::Attr> Parser::ParseDenseArray() {
  KILN_RETURN_IF_ERROR(Expect('<', "after 'array'"));
  KILN_ASSIGN_OR_RETURN(ir::DType dtype, ParseElementType());
  std::vector<Element> elements;
  if (Consume(':')) {
    do {
      SkipSpace();
      const size_t s = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
              text_[pos_] == '-' || text_[pos_] == '+')) {
        ++pos_;
      }
      if (pos_ == s) return Error("expected an element of array<...>");
      elements.push_back({std::string(text_.substr(s, pos_ - s)), "", false});
    } while (Consume(','));
  }
  KILN_RETURN_IF_ERROR(Expect('>', "to close array<...>"));
  ir::Attr attr;
  attr.kind = ir::Attr::Kind::kElements;
  attr.type = ir::Type::Tensor(dtype, {static_cast<int64_t>(elements.size())});
  KILN_RETURN_IF_ERROR(
      ChargeAttrBytes(elements.size() * static_cast<uint64_t>(ir::DTypeByteSize(dtype))));
  std::string error;
  for (const Element& e : elements) {
    KILN_RETURN_IF_ERROR(EncodeElement(e, dtype, attr.data, error));
    if (!error.empty()) return Error(error);
  }
  return attr;
}

StatusOr<ir::Attr> Parser::ParseNumberAttr() {
  SkipSpace();
  const size_t start = pos_;
  size_t end = pos_;
  if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
  bool is_float = false;
  if (text_.substr(end, 2) == "0x") {
    end += 2;
    while (end < text_.size() && HexValue(text_[end]) >= 0) ++end;
  } else {
    while (end < text_.size()) {
      const char c = text_[end];
      if (std::isdigit(static_cast<unsigned char>(c))) {
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
      } else if ((c == '-' || c == '+') && (text_[end - 1] == 'e' || text_[end - 1] == 'E')) {
      } else {
        break;
      }
      ++end;
    }
  }
  const std::string token(text_.substr(start, end - start));
  pos_ = end;
  ir::Type type = ir::Type::Tensor(is_float ? ir::DType::kF64 : ir::DType::kS64, {});
  if (Consume(':')) {
    KILN_ASSIGN_OR_RETURN(type, ParseType());
  }
  Element e{token, "", false};
  std::vector<uint8_t> bytes;
  std::string error;
  if (!type.is_tensor() || !type.dims.empty() || type.dtype == ir::DType::kInvalid) {
    return ErrorAt(start, "a number's type must be a scalar element type");
  }
  if (ir::IsFloat(type.dtype) || is_float) {
    char* stop = nullptr;
    double v = std::strtod(token.c_str(), &stop);
    const bool hex_bits = token.find("0x") != std::string::npos;  // the float's bits, in hex
    if (hex_bits || stop != token.c_str() + token.size()) {
      uint64_t bits = 0;
      KILN_RETURN_IF_ERROR(EncodeElement(e, ir::DType::kU64, bytes, error));
      if (!error.empty()) return ErrorAt(start, error);
      std::memcpy(&bits, bytes.data(), 8);
      if (type.dtype == ir::DType::kF32) {
        v = std::bit_cast<float>(static_cast<uint32_t>(bits));
      } else if (type.dtype == ir::DType::kBF16) {
        v = std::bit_cast<float>(static_cast<uint32_t>(bits << 16));
      } else if (type.dtype == ir::DType::kF16) {
        const int exp = static_cast<int>((bits >> 10) & 0x1F);
        const double mant = static_cast<double>(bits & 0x3FF);
        v = exp == 0    ? std::ldexp(mant, -24)
            : exp == 31 ? (mant == 0 ? INFINITY : NAN)
                        : std::ldexp(1024.0 + mant, exp - 25);
        if (bits & 0x8000) v = -v;
      } else if (type.dtype == ir::DType::kF64) {
        v = std::bit_cast<double>(bits);
      } else {
        return ErrorAt(start,
                       "hex float attributes of type " + type.ToString() + " are not supported");
      }
    }
    if (!ir::IsFloat(type.dtype))
      return ErrorAt(start, "a float with integer type " + type.ToString());
    return ir::Attr::Float(v, type);
  }
  KILN_RETURN_IF_ERROR(EncodeElement(e, ir::DType::kS64, bytes, error));
  if (!error.empty()) return ErrorAt(start, error);
  int64_t value = 0;
  std::memcpy(&value, bytes.data(), 8);
  if (type.dtype == ir::DType::kPred) return ir::Attr::Bool(value != 0);
  return ir::Attr::Int(value, type);
}

}  // namespace kiln::ingest::text
