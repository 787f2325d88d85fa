// MLIR attributes to XLA FFI attributes (kernels/ffi_call.h), as XLA converts a typed-FFI call's
// backend config: booleans and integers and floats to scalars of their own width, strings to byte
// spans, dense arrays and dense literals to flat arrays, dictionaries to nested dictionaries.
#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/ffi_call.h"

namespace kiln::kernels {

struct FfiAttrs::Value {
  XLA_FFI_Scalar scalar{};
  alignas(16) unsigned char scalar_bytes[16] = {};
  XLA_FFI_Array array{};
  std::vector<unsigned char> array_bytes;
  XLA_FFI_ByteSpan span{};
  std::string str;
  std::unique_ptr<FfiAttrs> dict;
};

FfiAttrs::~FfiAttrs() = default;

// Kiln's dtypes (numbered as PJRT_Buffer_Type) beside XLA's PrimitiveType numbers.
constexpr std::pair<ir::DType, XLA_FFI_DataType> kFfiTypes[] = {
    {ir::DType::kPred, XLA_FFI_DataType_PRED},
    {ir::DType::kS8, XLA_FFI_DataType_S8},
    {ir::DType::kS16, XLA_FFI_DataType_S16},
    {ir::DType::kS32, XLA_FFI_DataType_S32},
    {ir::DType::kS64, XLA_FFI_DataType_S64},
    {ir::DType::kU8, XLA_FFI_DataType_U8},
    {ir::DType::kU16, XLA_FFI_DataType_U16},
    {ir::DType::kU32, XLA_FFI_DataType_U32},
    {ir::DType::kU64, XLA_FFI_DataType_U64},
    {ir::DType::kF16, XLA_FFI_DataType_F16},
    {ir::DType::kF32, XLA_FFI_DataType_F32},
    {ir::DType::kF64, XLA_FFI_DataType_F64},
    {ir::DType::kBF16, XLA_FFI_DataType_BF16},
    {ir::DType::kC64, XLA_FFI_DataType_C64},
    {ir::DType::kC128, XLA_FFI_DataType_C128},
    {ir::DType::kF8E5M2, XLA_FFI_DataType_F8E5M2},
    {ir::DType::kF8E4M3FN, XLA_FFI_DataType_F8E4M3FN},
    {ir::DType::kF8E4M3B11FNUZ, XLA_FFI_DataType_F8E4M3B11FNUZ},
    {ir::DType::kF8E5M2FNUZ, XLA_FFI_DataType_F8E5M2FNUZ},
    {ir::DType::kF8E4M3FNUZ, XLA_FFI_DataType_F8E4M3FNUZ},
    {ir::DType::kS4, XLA_FFI_DataType_S4},
    {ir::DType::kU4, XLA_FFI_DataType_U4},
    {ir::DType::kToken, XLA_FFI_DataType_TOKEN},
    {ir::DType::kS2, XLA_FFI_DataType_S2},
    {ir::DType::kU2, XLA_FFI_DataType_U2},
    {ir::DType::kF8E4M3, XLA_FFI_DataType_F8E4M3},
    {ir::DType::kF8E3M4, XLA_FFI_DataType_F8E3M4},
    {ir::DType::kF8E8M0FNU, XLA_FFI_DataType_F8E8M0FNU},
    {ir::DType::kF4E2M1FN, XLA_FFI_DataType_F4E2M1FN},
    {ir::DType::kS1, XLA_FFI_DataType_S1},
    {ir::DType::kU1, XLA_FFI_DataType_U1},
};

XLA_FFI_DataType FfiDataType(ir::DType dtype) {
  for (const auto& [kiln, xla] : kFfiTypes) {
    if (kiln == dtype) return xla;
  }
  return XLA_FFI_DataType_INVALID;
}

namespace {

// Scalars and array elements XLA FFI attributes carry: booleans, integers of 8 to 64 bits, f32
// and f64.
bool IsAttrElementType(ir::DType t) {
  const ir::DTypeKind kind = ir::KindOf(t);
  return kind == ir::DTypeKind::kPred ||
         ((kind == ir::DTypeKind::kSigned || kind == ir::DTypeKind::kUnsigned) &&
          ir::DTypeBits(t) >= 8) ||
         t == ir::DType::kF32 || t == ir::DType::kF64;
}

// Appends one scalar (kBool, kInt or kFloat) as `dtype` to `out`.
void AppendScalar(const ir::Attr& a, ir::DType dtype, std::vector<unsigned char>& out) {
  unsigned char bytes[8] = {};
  if (dtype == ir::DType::kF32) {
    const float f = static_cast<float>(a.kind == ir::Attr::Kind::kFloat ? a.f : a.i);
    std::memcpy(bytes, &f, 4);
  } else if (dtype == ir::DType::kF64) {
    const double d = a.kind == ir::Attr::Kind::kFloat ? a.f : static_cast<double>(a.i);
    std::memcpy(bytes, &d, 8);
  } else {
    const int64_t v = a.kind == ir::Attr::Kind::kBool ? (a.b ? 1 : 0) : a.i;
    std::memcpy(bytes, &v, 8);  // little-endian: the low bytes are the narrower value
  }
  const int size = ir::DTypeByteSize(dtype);
  out.insert(out.end(), bytes, bytes + size);
}

// The element type of a scalar attribute, or kInvalid.
ir::DType ScalarType(const ir::Attr& a) {
  if (a.kind == ir::Attr::Kind::kBool) return ir::DType::kPred;
  if (a.kind == ir::Attr::Kind::kInt || a.kind == ir::Attr::Kind::kFloat) {
    return a.type.kind == ir::Type::Kind::kTensor ? a.type.dtype : ir::DType::kInvalid;
  }
  return ir::DType::kInvalid;
}

std::string KindName(const ir::Attr& a) {
  switch (a.kind) {
    case ir::Attr::Kind::kNone:
      return "an absent value";
    case ir::Attr::Kind::kUnit:
      return "a unit attribute";
    case ir::Attr::Kind::kEnum:
      return "an enum (" + a.str + ")";
    case ir::Attr::Kind::kType:
      return "a type";
    case ir::Attr::Kind::kSymbolRef:
      return "a symbol reference";
    case ir::Attr::Kind::kOpaque:
      return "an attribute Kiln does not interpret (" + a.str + ")";
    default:
      return "this kind of attribute";
  }
}

}  // namespace

Status FfiAttrs::Add(const std::string& name, const ir::Attr& a, const std::string& where) {
  auto v = std::make_unique<Value>();
  XLA_FFI_AttrType type;
  void* ptr = nullptr;
  const std::string what = where + ": attribute `" + name + "`";
  const ir::DType scalar = ScalarType(a);
  if (a.kind == ir::Attr::Kind::kBool || a.kind == ir::Attr::Kind::kInt ||
      a.kind == ir::Attr::Kind::kFloat) {
    if (!IsAttrElementType(scalar)) {
      return Unimplemented(what + " has element type " + std::string(ir::DTypeName(scalar)) +
                           ", which XLA FFI attributes do not carry");
    }
    std::vector<unsigned char> bytes;
    AppendScalar(a, scalar, bytes);
    std::memcpy(v->scalar_bytes, bytes.data(), bytes.size());
    v->scalar = {FfiDataType(scalar), v->scalar_bytes};
    type = XLA_FFI_AttrType_SCALAR;
    ptr = &v->scalar;
  } else if (a.kind == ir::Attr::Kind::kString) {
    v->str = a.str;
    v->span = {v->str.data(), v->str.size()};
    type = XLA_FFI_AttrType_STRING;
    ptr = &v->span;
  } else if (a.kind == ir::Attr::Kind::kElements) {
    const ir::DType t = a.type.dtype;
    if (!IsAttrElementType(t)) {
      return Unimplemented(what + " is an array of " + std::string(ir::DTypeName(t)) +
                           ", which XLA FFI attributes do not carry");
    }
    const size_t elem = static_cast<size_t>(ir::DTypeByteSize(t));
    v->array_bytes = a.data;
    v->array = {FfiDataType(t), elem > 0 ? v->array_bytes.size() / elem : 0, v->array_bytes.data()};
    type = XLA_FFI_AttrType_ARRAY;
    ptr = &v->array;
  } else if (a.kind == ir::Attr::Kind::kArray) {
    // A list of scalars of one type (an MLIR ArrayAttr): a flat array as well.
    ir::DType t = a.array.empty() ? ir::DType::kS64 : ScalarType(a.array.front());
    for (const ir::Attr& e : a.array) {
      if (ScalarType(e) != t || !IsAttrElementType(t)) {
        return Unimplemented(what + " is a list that is not of scalars of one type");
      }
      AppendScalar(e, t, v->array_bytes);
    }
    v->array = {FfiDataType(t), a.array.size(), v->array_bytes.data()};
    type = XLA_FFI_AttrType_ARRAY;
    ptr = &v->array;
  } else if (a.kind == ir::Attr::Kind::kDict) {
    KILN_ASSIGN_OR_RETURN(v->dict, FromDict(a.dict, what));
    type = XLA_FFI_AttrType_DICTIONARY;
    ptr = &v->dict->attrs();
  } else {
    return Unimplemented(what + " is " + KindName(a) + ", which XLA FFI has no attribute type for");
  }
  names_.push_back(name);
  types_.push_back(type);
  ptrs_.push_back(ptr);
  values_.push_back(std::move(v));
  return Status::Ok();
}

StatusOr<std::unique_ptr<FfiAttrs>> FfiAttrs::FromDict(
    const std::vector<std::pair<std::string, ir::Attr>>& entries, const std::string& where) {
  std::vector<const std::pair<std::string, ir::Attr>*> sorted;
  for (const auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  auto out = std::make_unique<FfiAttrs>();
  for (const auto* e : sorted) KILN_RETURN_IF_ERROR(out->Add(e->first, e->second, where));
  // Every vector is complete: take the pointers now.
  out->name_spans_.resize(out->names_.size());
  out->name_ptrs_.resize(out->names_.size());
  for (size_t i = 0; i < out->names_.size(); ++i) {
    out->name_spans_[i] = {out->names_[i].data(), out->names_[i].size()};
    out->name_ptrs_[i] = &out->name_spans_[i];
  }
  out->attrs_.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Attrs, attrs);
  out->attrs_.extension_start = nullptr;
  out->attrs_.size = static_cast<int64_t>(out->names_.size());
  out->attrs_.types = out->types_.data();
  out->attrs_.names = out->name_ptrs_.data();
  out->attrs_.attrs = out->ptrs_.data();
  return out;
}

}  // namespace kiln::kernels
