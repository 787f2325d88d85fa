// LiteralProto decoding for the HLO reader: the one data field an element type selects, as the
// row-major little-endian bytes of an ir dense literal (field numbers: xla/xla_data.proto).
#include <cstdint>
#include <string>

#include "ingest/hlo_proto.h"
#include "ingest/proto_wire.h"

namespace kiln::ingest::hlo {
namespace {

using proto_wire::Field;
using proto_wire::ForEachField;
using proto_wire::Reader;
using proto_wire::ReadVarints;

// Appends `count` little-endian values of `width` bytes taken from the varints in `ints`.
void AppendInts(const std::vector<int64_t>& ints, int width, std::vector<uint8_t>& out) {
  for (int64_t v : ints) {
    const uint64_t u = static_cast<uint64_t>(v);
    for (int b = 0; b < width; ++b) out.push_back(static_cast<uint8_t>(u >> (8 * b)));
  }
}

}  // namespace

StatusOr<std::vector<uint8_t>> DecodeLiteral(const Literal& literal, int element_type,
                                             int64_t count, int byte_size) {
  // The LiteralProto field holding each primitive type's data, and how it is encoded.
  enum class Enc { kVarint, kFixed, kBytes };
  struct Source {
    uint32_t field;
    Enc enc;
  };
  Source src{0, Enc::kBytes};
  switch (element_type) {
    case 1:
      src = {2, Enc::kVarint};
      break;  // PRED: preds
    case 4:
      src = {4, Enc::kVarint};
      break;  // S32
    case 5:
      src = {5, Enc::kVarint};
      break;  // S64
    case 8:
      src = {6, Enc::kVarint};
      break;  // U32
    case 9:
      src = {7, Enc::kVarint};
      break;  // U64
    case 11:
      src = {8, Enc::kFixed};
      break;  // F32
    case 12:
      src = {9, Enc::kFixed};
      break;  // F64
    case 15:
      src = {12, Enc::kFixed};
      break;  // C64: interleaved floats
    case 18:
      src = {18, Enc::kFixed};
      break;  // C128: interleaved doubles
    case 2:
      src = {15, Enc::kBytes};
      break;  // S8
    case 6:
      src = {3, Enc::kBytes};
      break;  // U8
    case 3:
      src = {17, Enc::kBytes};
      break;  // S16
    case 7:
      src = {16, Enc::kBytes};
      break;  // U16
    case 10:
      src = {11, Enc::kBytes};
      break;  // F16
    case 16:
      src = {13, Enc::kBytes};
      break;  // BF16
    case 21:
    case 22:
    case 26:
    case 27:
    case 30:
    case 31:  // S4 U4 S2 U2 S1 U1
    case 19:
    case 20:
    case 23:
    case 24:
    case 25:
    case 28:
    case 29:
    case 32:
    case 33:
      src = {static_cast<uint32_t>(element_type), Enc::kBytes};  // field number = type number
      break;
    default:
      return Unimplemented("constants of element type " + std::to_string(element_type));
  }
  if (count < 0 || byte_size <= 0 ||
      static_cast<uint64_t>(count) > SIZE_MAX / static_cast<uint64_t>(byte_size)) {
    return DataLoss("literal of " + std::to_string(count) + " elements is too large");
  }
  const size_t want = static_cast<size_t>(count) * static_cast<size_t>(byte_size);
  std::vector<uint8_t> out;
  std::vector<int64_t> ints;
  Reader reader(literal.message, literal.offset);
  KILN_RETURN_IF_ERROR(ForEachField(reader, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number != src.field) return false;
    if (src.enc == Enc::kVarint) {
      KILN_RETURN_IF_ERROR(ReadVarints(f, in, ints));
      if (ints.size() > static_cast<size_t>(count)) return in.Error("literal has too many values");
      return true;
    }
    if (src.enc == Enc::kFixed) {
      const size_t width = (element_type == 11 || element_type == 15) ? 4 : 8;
      KILN_RETURN_IF_ERROR(proto_wire::ReadFixed(f, in, width, out));
      if (out.size() > want) return in.Error("literal has too many values");
      return true;
    }
    if (f.type != proto_wire::kLengthDelimited) return in.Error("bytes field with a wrong type");
    KILN_ASSIGN_OR_RETURN(uint64_t length, in.Varint());
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> b, in.Bytes(length));
    out.insert(out.end(), b.begin(), b.end());
    if (out.size() > want) return in.Error("literal has too many values");
    return true;
  }));
  if (src.enc == Enc::kVarint) AppendInts(ints, byte_size, out);
  if (out.size() != want) {
    return DataLoss("literal holds " + std::to_string(out.size()) + " bytes of data; its shape (" +
                    std::to_string(count) + " elements) needs " + std::to_string(want));
  }
  return out;
}

}  // namespace kiln::ingest::hlo
