// Shapes and literals of the HLO writer (ingest/hlo_writer.h): ShapeProto with its layout and
// LiteralProto with the one data field its element type selects, the inverse of
// ingest/hlo_proto_parts.cc and ingest/hlo_literal.cc (field numbers: xla/xla_data.proto).
#include <string>

#include "ingest/hlo_proto.h"
#include "ingest/hlo_translate.h"
#include "ingest/hlo_writer_internal.h"

namespace kiln::ingest::hlo_writer {

int PrimitiveOf(ir::DType dtype) {
  // The reader's table (hlo::DTypeOf) read backwards: xla.PrimitiveType values stay below 64.
  for (int p = 1; p < 64; ++p) {
    if (hlo::DTypeOf(p) == dtype) return p;
  }
  return 0;
}

StatusOr<Encoder> ShapeOf(const ir::Type& type, const std::vector<int64_t>* minor_to_major) {
  Encoder shape;
  switch (type.kind) {
    case ir::Type::Kind::kToken:
      shape.Int(2, hlo::kPrimitiveToken);
      return shape;
    case ir::Type::Kind::kTuple: {
      shape.Int(2, hlo::kPrimitiveTuple);
      for (const ir::Type& element : type.elements) {
        KILN_ASSIGN_OR_RETURN(Encoder e, ShapeOf(element));
        shape.Message(4, e);
      }
      return shape;
    }
    case ir::Type::Kind::kOpaque:
      return Unimplemented("type " + type.ToString() + " has no HLO shape");
    case ir::Type::Kind::kTensor:
      break;
  }
  const int primitive = PrimitiveOf(type.dtype);
  if (primitive == 0) return Unimplemented("element type of " + type.ToString() + " in HLO");
  if (!type.has_static_shape()) {
    return Unimplemented("dynamic shape " + type.ToString() +
                         " in HLO (Kiln writes static shapes)");
  }
  shape.Int(2, primitive);
  shape.PackedInts(3, type.dims);
  // is_dynamic_dimension: all false, one per dimension (packed bools).
  shape.PackedInts(6, std::vector<int64_t>(type.dims.size(), 0));
  Encoder layout;
  std::vector<int64_t> order;
  if (minor_to_major != nullptr) {
    order = *minor_to_major;
  } else {
    for (size_t d = type.dims.size(); d-- > 0;) order.push_back(static_cast<int64_t>(d));
  }
  if (order.size() != type.dims.size()) {
    return InvalidArgument("layout of " + std::to_string(order.size()) + " dimensions for " +
                           type.ToString());
  }
  layout.PackedInts(1, order);
  shape.Message(5, layout);
  return shape;
}

StatusOr<Encoder> ShapeOfAll(const std::vector<ir::Type>& types) {
  if (types.size() == 1) return ShapeOf(types[0]);
  return ShapeOf(ir::Type::Tuple(types));
}

StatusOr<Encoder> LiteralOf(const ir::Attr& value) {
  if (value.kind != ir::Attr::Kind::kElements || !value.type.is_tensor()) {
    return Unimplemented("a constant that is not a dense literal (" + value.ToString() + ")");
  }
  const ir::DType dtype = value.type.dtype;
  const int primitive = PrimitiveOf(dtype);
  const int64_t count = value.type.num_elements();
  const int width = ir::DTypeByteSize(dtype);
  if (primitive == 0 || count < 0 || width <= 0) {
    return Unimplemented("constant of type " + value.type.ToString() + " in HLO");
  }
  if (value.data.size() != static_cast<size_t>(count) * static_cast<size_t>(width)) {
    return InvalidArgument("constant of type " + value.type.ToString() + " holds " +
                           std::to_string(value.data.size()) + " bytes");
  }
  KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(value.type));
  Encoder literal;
  literal.Message(1, shape);
  // Integer fields are varints (signed types sign-extended); the rest are the raw bytes.
  uint32_t varint_field = 0;
  switch (primitive) {
    case 1:  // PRED: preds
      varint_field = 2;
      break;
    case 4:  // S32
      varint_field = 4;
      break;
    case 5:  // S64
      varint_field = 5;
      break;
    case 8:  // U32
      varint_field = 6;
      break;
    case 9:  // U64
      varint_field = 7;
      break;
    default:
      break;
  }
  if (varint_field != 0) {
    std::vector<int64_t> ints;
    ints.reserve(static_cast<size_t>(count));
    const bool is_signed = ir::IsSignedInt(dtype);
    for (int64_t k = 0; k < count; ++k) {
      uint64_t u = 0;
      for (int b = 0; b < width; ++b) {
        u |= uint64_t{value.data[static_cast<size_t>(k * width + b)]} << (8 * b);
      }
      if (is_signed && width < 8 && (u >> (8 * width - 1)) != 0) u |= ~uint64_t{0} << (8 * width);
      ints.push_back(static_cast<int64_t>(u));
    }
    if (!ints.empty()) literal.PackedInts(varint_field, ints);
    return literal;
  }
  uint32_t bytes_field = 0;
  switch (primitive) {
    case 11:  // F32: f32s (packed fixed32)
      bytes_field = 8;
      break;
    case 12:  // F64
      bytes_field = 9;
      break;
    case 15:  // C64: interleaved floats
      bytes_field = 12;
      break;
    case 18:  // C128
      bytes_field = 18;
      break;
    case 2:  // S8
      bytes_field = 15;
      break;
    case 6:  // U8
      bytes_field = 3;
      break;
    case 3:  // S16
      bytes_field = 17;
      break;
    case 7:  // U16
      bytes_field = 16;
      break;
    case 10:  // F16
      bytes_field = 11;
      break;
    case 16:  // BF16
      bytes_field = 13;
      break;
    default:  // sub-byte integers and 8-bit floats: the field numbered as the type
      if (primitive >= 19 && primitive <= 33) bytes_field = static_cast<uint32_t>(primitive);
      break;
  }
  if (bytes_field == 0) {
    return Unimplemented("constant of type " + value.type.ToString() + " in HLO");
  }
  if (!value.data.empty()) literal.Bytes(bytes_field, value.data);
  return literal;
}

}  // namespace kiln::ingest::hlo_writer
