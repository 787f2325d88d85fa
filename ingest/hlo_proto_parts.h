// Pieces of the HloModuleProto decoder shared by its files: typed reads of one field, and the
// decoders of the sub-messages (shapes, windows, dimension numbers, shardings, replica groups).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "ingest/hlo_proto.h"
#include "ingest/proto_wire.h"

namespace kiln::ingest::hlo {

using proto_wire::Field;
using proto_wire::ForEachField;
using proto_wire::Reader;
using proto_wire::ReadVarints;

inline constexpr int kMaxDepth = 64;

inline StatusOr<int64_t> Int(const Field& f, Reader& r) {
  if (f.type != proto_wire::kVarint) return r.Error("integer field with a wrong wire type");
  KILN_ASSIGN_OR_RETURN(uint64_t v, r.Varint());
  return static_cast<int64_t>(v);
}

inline StatusOr<Reader> Message(const Field& f, Reader& r) {
  if (f.type != proto_wire::kLengthDelimited)
    return r.Error("message field with a wrong wire type");
  return r.Sub();
}

inline StatusOr<std::string> Str(const Field& f, Reader& r) {
  if (f.type != proto_wire::kLengthDelimited) return r.Error("string field with a wrong wire type");
  return r.String();
}

template <typename Set>
inline Status DecodeInts(Reader r, Set&& set) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.type != proto_wire::kVarint) return false;
    KILN_ASSIGN_OR_RETURN(uint64_t v, in.Varint());
    set(f.number, static_cast<int64_t>(v));
    return true;
  });
}

// A message whose fields are all int64 (scalar or repeated): `lists[number]` receives them.
inline Status DecodeIntLists(
    Reader r, std::initializer_list<std::pair<uint32_t, std::vector<int64_t>*>> lists) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    for (const auto& [number, out] : lists) {
      if (number == f.number) {
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, *out));
        return true;
      }
    }
    return false;
  });
}

inline int64_t Last(const std::vector<int64_t>& v) { return v.empty() ? 0 : v.back(); }

Status DecodeShape(Reader r, Shape& shape, int depth);
Status DecodeWindow(Reader r, std::vector<WindowDim>& window);
Status DecodeConvDims(Reader r, ConvDims& c);
// OpSharding: true if it (or a tuple element) tiles data across devices.
StatusOr<bool> DecodeShardingTiled(Reader r, int depth);
// OpSharding as HloSharding's text, one per leaf (a tuple sharding's elements, flattened):
// what `mhlo.sharding` holds (ingest/hlo_sharding_text.cc). A named sharding is UNIMPLEMENTED.
StatusOr<std::vector<std::string>> DecodeShardingText(Reader r);
Status DecodeReplicaGroup(Reader r, std::vector<std::vector<int64_t>>& groups);
Status DecodeDeviceList(Reader r, std::vector<std::vector<int64_t>>& groups);

}  // namespace kiln::ingest::hlo
