// Literal and attribute syntax of WriteMlirText (ir/mlir_text.h): numbers with their types, dense
// literals (floats as hex bits, so values are exact), arrays, dictionaries and Shardy's #sdy
// attributes, each the inverse of what ingest/text_*.cc reads.
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ir/mlir_text_internal.h"

namespace kiln::ir::mlir_text {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

bool IsBareId(std::string_view s, bool allow_dollar_dot) {
  if (s.empty()) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0])) && s[0] != '_') return false;
  for (char c : s) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                    (allow_dollar_dot && (c == '$' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

// Element `i` of an integer or boolean literal, sign- or zero-extended.
int64_t IntAt(const Attr& a, size_t i) {
  const DType t = a.type.dtype;
  const size_t size = static_cast<size_t>(DTypeByteSize(t));
  uint64_t raw = 0;
  for (size_t b = 0; b < size; ++b) raw |= uint64_t{a.data[i * size + b]} << (8 * b);
  if (t == DType::kPred) return raw != 0;
  const int bits = DTypeBits(t);
  if (bits < 64) {
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    raw &= mask;
    if (IsSignedInt(t) && ((raw >> (bits - 1)) & 1)) raw |= ~mask;
  }
  return static_cast<int64_t>(raw);
}

std::string IntText(DType t, int64_t v) {
  if (t == DType::kPred) return v != 0 ? "true" : "false";
  if (!IsSignedInt(t)) return std::to_string(static_cast<uint64_t>(v));
  return std::to_string(v);
}

// `elements` nested by `dims` ("[[1, 2], [3, 4]]"); rank 0 is the element alone.
void Nest(const std::vector<std::string>& elements, const std::vector<int64_t>& dims, size_t dim,
          size_t& next, std::string& out) {
  if (dim == dims.size()) {
    out += elements[next++];
    return;
  }
  out += '[';
  for (int64_t k = 0; k < dims[dim]; ++k) {
    if (k > 0) out += ", ";
    Nest(elements, dims, dim + 1, next, out);
  }
  out += ']';
}

std::string HexBits(uint64_t bits, int digits) {
  std::string s = "0x";
  for (int d = digits - 1; d >= 0; --d) s += kHex[(bits >> (4 * d)) & 0xF];
  return s;
}

std::string FloatText(const Attr& a) {
  if (a.type.dtype == DType::kF32) {
    return HexBits(std::bit_cast<uint32_t>(static_cast<float>(a.f)), 8) + " : f32";
  }
  if (a.type.dtype == DType::kF64) return HexBits(std::bit_cast<uint64_t>(a.f), 16) + " : f64";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17e", a.f);
  return std::string(buf) + " : " + std::string(DTypeName(a.type.dtype));
}

Status NotPrintable(const std::string& what) {
  return Unimplemented("Kiln's MLIR writer cannot print " + what + " exactly");
}

StatusOr<std::string> SdyAxisList(const Attr& axes, bool open) {
  std::string out = "{";
  bool first = true;
  for (const Attr& ref : axes.array) {
    const Attr* name = ref.Find("name");
    if (name == nullptr || name->kind != Attr::Kind::kString) return NotPrintable("an sdy axis");
    out += (first ? "" : ", ") + Quote(name->str);
    first = false;
    if (const Attr* sub = ref.Find("sub_axis_info"); sub != nullptr) {
      const Attr* pre = sub->Find("pre_size");
      const Attr* size = sub->Find("size");
      if (pre == nullptr || size == nullptr) return NotPrintable("an sdy sub-axis");
      out += ":(" + std::to_string(pre->i) + ")" + std::to_string(size->i);
    }
  }
  if (open) out += first ? "?" : ", ?";
  return out + "}";
}

// `<@mesh, [{"x"}, {}], replicated={"y"}>` (without the #sdy.sharding prefix).
StatusOr<std::string> SdyShardingBody(const Attr& s) {
  const Attr* mesh = s.Find("mesh");
  const Attr* dims = s.Find("dims");
  if (mesh == nullptr || dims == nullptr || dims->kind != Attr::Kind::kArray) {
    return NotPrintable("an sdy sharding without mesh or dimensions");
  }
  if (const Attr* r = s.Find("reduction"); r != nullptr && r->i != 0) {
    return NotPrintable("an sdy sharding with a reduction");
  }
  KILN_ASSIGN_OR_RETURN(std::string out, Value(*mesh));
  out = "<" + out + ", [";
  for (size_t i = 0; i < dims->array.size(); ++i) {
    const Attr& d = dims->array[i];
    const Attr* axes = d.Find("axes");
    const Attr* closed = d.Find("closed");
    if (axes == nullptr || axes->kind != Attr::Kind::kArray) return NotPrintable("an sdy dim");
    KILN_ASSIGN_OR_RETURN(
        std::string list,
        SdyAxisList(*axes, closed != nullptr && closed->kind == Attr::Kind::kBool && !closed->b));
    out += (i ? ", " : "") + list;
    if (const Attr* p = d.Find("priority"); p != nullptr) out += "p" + std::to_string(p->i);
  }
  out += "]";
  for (const char* key : {"replicated", "unreduced"}) {
    const Attr* axes = s.Find(key);
    if (axes == nullptr || axes->kind != Attr::Kind::kArray || axes->array.empty()) continue;
    KILN_ASSIGN_OR_RETURN(std::string list, SdyAxisList(*axes, false));
    out += std::string(", ") + key + "=" + list;
  }
  return out + ">";
}

StatusOr<std::string> SdyAttr(const Attr& a, std::string_view kind) {
  if (kind == "mesh") {
    const Attr* axes = a.Find("axes");
    const Attr* ids = a.Find("device_ids");
    std::string out = "#sdy.mesh<";
    bool any = false;
    if (axes != nullptr && (!axes->array.empty() || ids == nullptr || ids->array.empty())) {
      out += "[";
      for (size_t i = 0; i < axes->array.size(); ++i) {
        const Attr* name = axes->array[i].Find("name");
        const Attr* size = axes->array[i].Find("size");
        if (name == nullptr || size == nullptr) return NotPrintable("an sdy mesh axis");
        out += (i ? ", " : "") + Quote(name->str) + "=" + std::to_string(size->i);
      }
      out += "]";
      any = true;
    }
    if (ids != nullptr) {
      std::optional<std::vector<int64_t>> v = ids->AsInts();
      if (!v) return NotPrintable("sdy mesh device ids");
      if (!v->empty()) {
        out += any ? ", device_ids=[" : "device_ids=[";
        for (size_t i = 0; i < v->size(); ++i) out += (i ? ", " : "") + std::to_string((*v)[i]);
        out += "]";
      }
    }
    return out + ">";
  }
  if (kind == "sharding") {
    KILN_ASSIGN_OR_RETURN(std::string body, SdyShardingBody(a));
    return "#sdy.sharding" + body;
  }
  if (kind == "sharding_per_value") {
    const Attr* list = a.Find("shardings");
    if (list == nullptr) return NotPrintable("an sdy sharding_per_value");
    std::string out = "#sdy.sharding_per_value<[";
    for (size_t i = 0; i < list->array.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(std::string body, SdyShardingBody(list->array[i]));
      out += (i ? ", " : "") + body;
    }
    return out + "]>";
  }
  if (kind == "manual_axes") {
    const Attr* axes = a.Find("axes");
    if (axes == nullptr) return NotPrintable("sdy manual axes");
    // Its body is not `<...>`, so MLIR spells it in the dialect's own brackets.
    std::string out = "#sdy<manual_axes{";
    for (size_t i = 0; i < axes->array.size(); ++i)
      out += (i ? ", " : "") + Quote(axes->array[i].str);
    return out + "}>";
  }
  return NotPrintable("the Shardy attribute " + std::string(kind));
}

}  // namespace

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7F) {
      out += '\\';
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Symbol(std::string_view name) {
  return IsBareId(name, true) ? "@" + std::string(name) : "@" + Quote(name);
}

std::string Key(std::string_view name) {
  return IsBareId(name, true) ? std::string(name) : Quote(name);
}

StatusOr<std::string> Dense(const Attr& a, std::string_view element_type) {
  const Type& t = a.type;
  if (a.kind != Attr::Kind::kElements || !t.is_tensor() || !t.has_static_shape()) {
    return NotPrintable("a dense literal that is not a static tensor");
  }
  const DType d = t.dtype;
  const int64_t count = t.num_elements();
  const int width = DTypeByteSize(d);
  if (count < 0 || width <= 0 || d == DType::kS1 ||
      a.data.size() != static_cast<size_t>(count) * static_cast<size_t>(width)) {
    return NotPrintable("the dense literal of type " + t.ToString());
  }
  std::string type_text = t.ToString();
  if (!element_type.empty()) {
    type_text = "tensor<";
    for (int64_t dim : t.dims) type_text += std::to_string(dim) + "x";
    type_text += std::string(element_type) + ">";
  }
  if (count == 0) return "dense<> : " + type_text;
  const size_t n = static_cast<size_t>(count), w = static_cast<size_t>(width);
  bool splat = true;
  for (size_t i = 1; i < n && splat; ++i) {
    splat = std::memcmp(a.data.data(), a.data.data() + i * w, w) == 0;
  }
  if (d == DType::kPred || IsInteger(d)) {
    if (splat) return "dense<" + IntText(d, IntAt(a, 0)) + "> : " + type_text;
    std::vector<std::string> elements;
    elements.reserve(n);
    for (size_t i = 0; i < n; ++i) elements.push_back(IntText(d, IntAt(a, i)));
    std::string out = "dense<";
    size_t next = 0;
    Nest(elements, t.dims, 0, next, out);
    return out + "> : " + type_text;
  }
  // Floats and complex numbers: the bytes as MLIR's hex form (one element when all are equal).
  std::string out = "dense<\"0x";
  const size_t bytes = splat ? w : a.data.size();
  out.reserve(out.size() + 2 * bytes + 32);
  for (size_t i = 0; i < bytes; ++i) {
    out += kHex[a.data[i] >> 4];
    out += kHex[a.data[i] & 0xF];
  }
  return out + "\"> : " + type_text;
}

StatusOr<std::string> DenseArray(const Attr& a) {
  bool pred = a.kind == Attr::Kind::kElements && a.type.dtype == DType::kPred;
  if (a.kind == Attr::Kind::kArray && !a.array.empty() && a.array[0].kind == Attr::Kind::kBool) {
    pred = true;
  }
  if (a.kind == Attr::Kind::kElements && a.type.rank() != 1) {
    return NotPrintable("a rank-" + std::to_string(a.type.rank()) + " literal as an array");
  }
  std::string out = pred ? "array<i1" : "array<i64";
  if (pred) {
    std::optional<std::vector<bool>> v = a.AsBools();
    if (!v) return NotPrintable("a boolean array");
    for (size_t i = 0; i < v->size(); ++i)
      out += (i ? ", " : ": ") + std::string((*v)[i] ? "true" : "false");
  } else {
    std::optional<std::vector<int64_t>> v = a.AsInts();
    if (!v) return NotPrintable("an integer array");
    for (size_t i = 0; i < v->size(); ++i) out += (i ? ", " : ": ") + std::to_string((*v)[i]);
  }
  return out + ">";
}

StatusOr<std::string> DictOf(const std::vector<NamedAttr>& attrs) {
  std::string out = "{";
  for (size_t i = 0; i < attrs.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::string v, Value(attrs[i].value), attrs[i].name);
    out += (i ? ", " : "") + Key(attrs[i].name) +
           (attrs[i].value.kind == Attr::Kind::kUnit ? "" : " = " + v);
  }
  return out + "}";
}

StatusOr<std::string> Value(const Attr& a) {
  switch (a.kind) {
    case Attr::Kind::kNone:
      return NotPrintable("an absent attribute");
    case Attr::Kind::kUnit:
      return std::string("unit");
    case Attr::Kind::kBool:
      return std::string(a.b ? "true" : "false");
    case Attr::Kind::kInt:
      if (!IsInteger(a.type.dtype) && a.type.dtype != DType::kPred) {
        return NotPrintable("an integer of type " + a.type.ToString());
      }
      return IntText(a.type.dtype, a.i) + " : " + std::string(DTypeName(a.type.dtype));
    case Attr::Kind::kFloat:
      if (a.type.dtype != DType::kF32 && a.type.dtype != DType::kF64 && !std::isfinite(a.f)) {
        return NotPrintable("a non-finite " + a.type.ToString() + " attribute");
      }
      if (!IsFloat(a.type.dtype)) return NotPrintable("a float of type " + a.type.ToString());
      return FloatText(a);
    case Attr::Kind::kString:
      return Quote(a.str);
    case Attr::Kind::kEnum:
      return NotPrintable("the enum value " + a.str + " outside a known attribute");
    case Attr::Kind::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < a.array.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(std::string v, Value(a.array[i]));
        out += (i ? ", " : "") + v;
      }
      return out + "]";
    }
    case Attr::Kind::kDict: {
      if (const Attr* tag = a.Find("sdy"); tag != nullptr && tag->kind == Attr::Kind::kString) {
        return SdyAttr(a, tag->str);
      }
      std::string out = "{";
      for (size_t i = 0; i < a.dict.size(); ++i) {
        const auto& [k, v] = a.dict[i];
        KILN_ASSIGN_OR_RETURN(std::string text, Value(v), k);
        out += (i ? ", " : "") + Key(k) + (v.kind == Attr::Kind::kUnit ? "" : " = " + text);
      }
      return out + "}";
    }
    case Attr::Kind::kType:
      return a.type.ToString();
    case Attr::Kind::kElements:
      return Dense(a);
    case Attr::Kind::kSymbolRef:
      return Symbol(a.str);
    case Attr::Kind::kOpaque:
      // The text reader keeps Shardy attributes it does not interpret verbatim.
      if (a.str.rfind("#sdy.", 0) == 0) return a.str;
      return NotPrintable("the attribute <" + a.str + ">");
  }
  return NotPrintable("an attribute of unknown kind");
}

}  // namespace kiln::ir::mlir_text
