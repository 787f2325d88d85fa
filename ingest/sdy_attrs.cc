// Shardy (sdy) attribute encodings: `varint code` then the fields of the attribute, in the order
// Shardy's bytecode definition lists them (nested attributes by index, strings by string-table
// index, sizes as zigzag varints, booleans as one raw byte). Each becomes a dictionary whose first
// entry `sdy` names the attribute kind, read by lower/sharding.h:
//   mesh               {sdy, axes: [{name, size}], device_ids: [i64]}
//   axis_ref           {sdy, name, sub_axis_info?: {pre_size, size}}
//   dim_sharding       {sdy, axes: [axis_ref], closed: bool, priority?: i64}
//   sharding           {sdy, mesh: @symbol or mesh, dims: [dim_sharding], replicated: [axis_ref],
//                       unreduced: [axis_ref]}
//   sharding_per_value {sdy, shardings: [sharding]}
//   manual_axes        {sdy, axes: [string]}
// Kinds Kiln does not interpret (sharding rules, collective parameters) stay opaque; their bytes
// are size-delimited, so skipping them is safe.
#include <string>
#include <utility>
#include <vector>

#include "ingest/attr_type_decoder.h"

namespace kiln::ingest {
namespace {

enum SdyAttrCode : uint64_t {
  kSdyManualAxes = 0,
  kSdyMeshAxis = 1,
  kSdyMesh = 2,
  kSdySubAxisInfo = 3,
  kSdyAxisRef = 4,
  kSdyDimensionSharding = 5,
  kSdyTensorShardingV1 = 6,
  kSdyTensorShardingPerValueV1 = 7,
  kSdyTensorShardingV2 = 15,
  kSdyTensorShardingPerValueV2 = 16,
  kSdyTensorShardingV3 = 17,
};

using Fields = std::vector<std::pair<std::string, ir::Attr>>;

ir::Attr Tagged(const char* kind, Fields fields) {
  fields.insert(fields.begin(), {"sdy", ir::Attr::String(kind)});
  return ir::Attr::Dict(std::move(fields));
}

}  // namespace

StatusOr<ir::Attr> AttrTypeDecoder::DecodeSdyAttr(ByteReader& r, uint64_t code) {
  switch (code) {
    case kSdyManualAxes: {
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> axes, ReadAttrList(r));
      for (const ir::Attr& axis : axes) {
        if (axis.kind != ir::Attr::Kind::kString) return r.Error("manual axis is not a string");
      }
      return Tagged("manual_axes", {{"axes", ir::Attr::Array(std::move(axes))}});
    }
    case kSdyMeshAxis: {
      KILN_ASSIGN_OR_RETURN(std::string_view name, container_.ReadStringRef(r));
      KILN_ASSIGN_OR_RETURN(int64_t size, r.ReadSignedVarInt());
      return Tagged("mesh_axis",
                    {{"name", ir::Attr::String(std::string(name))}, {"size", ir::Attr::Int(size)}});
    }
    case kSdyMesh: {
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> axes, ReadAttrList(r));
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> device_ids, ReadSignedList(r));
      return Tagged("mesh", {{"axes", ir::Attr::Array(std::move(axes))},
                             {"device_ids", ir::Attr::IntArray(device_ids)}});
    }
    case kSdySubAxisInfo: {
      KILN_ASSIGN_OR_RETURN(int64_t pre_size, r.ReadSignedVarInt());
      KILN_ASSIGN_OR_RETURN(int64_t size, r.ReadSignedVarInt());
      return Tagged("sub_axis_info",
                    {{"pre_size", ir::Attr::Int(pre_size)}, {"size", ir::Attr::Int(size)}});
    }
    case kSdyAxisRef: {
      KILN_ASSIGN_OR_RETURN(std::string_view name, container_.ReadStringRef(r));
      Fields fields = {{"name", ir::Attr::String(std::string(name))}};
      KILN_ASSIGN_OR_RETURN(FlaggedVarInt sub_axis, r.ReadVarIntWithFlag());
      if (sub_axis.flag) {
        KILN_ASSIGN_OR_RETURN(const ir::Attr* info, Attr(sub_axis.value));
        fields.emplace_back("sub_axis_info", *info);
      }
      return Tagged("axis_ref", std::move(fields));
    }
    case kSdyDimensionSharding: {
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> axes, ReadAttrList(r));
      KILN_ASSIGN_OR_RETURN(uint8_t closed, r.ReadByte());
      if (closed > 1) return r.Error("is_closed byte " + std::to_string(closed) + " is not 0 or 1");
      Fields fields = {{"axes", ir::Attr::Array(std::move(axes))},
                       {"closed", ir::Attr::Bool(closed == 1)}};
      KILN_ASSIGN_OR_RETURN(FlaggedVarInt priority, r.ReadVarIntWithFlag());
      if (priority.flag) {
        fields.emplace_back("priority", ir::Attr::Int(static_cast<int64_t>(priority.value)));
      }
      return Tagged("dim_sharding", std::move(fields));
    }
    case kSdyTensorShardingV1:
    case kSdyTensorShardingV2:
    case kSdyTensorShardingV3: {
      KILN_ASSIGN_OR_RETURN(const ir::Attr* mesh, ReadAttr(r));
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> dims, ReadAttrList(r));
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> replicated, ReadAttrList(r));
      std::vector<ir::Attr> unreduced;
      if (code != kSdyTensorShardingV1) {
        KILN_ASSIGN_OR_RETURN(unreduced, ReadAttrList(r));
      }
      Fields fields = {{"mesh", *mesh},
                       {"dims", ir::Attr::Array(std::move(dims))},
                       {"replicated", ir::Attr::Array(std::move(replicated))},
                       {"unreduced", ir::Attr::Array(std::move(unreduced))}};
      if (code == kSdyTensorShardingV3) {
        KILN_ASSIGN_OR_RETURN(int64_t reduction, r.ReadSignedVarInt());
        fields.emplace_back("reduction", ir::Attr::Int(reduction));
      }
      return Tagged("sharding", std::move(fields));
    }
    case kSdyTensorShardingPerValueV1:
    case kSdyTensorShardingPerValueV2: {
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> shardings, ReadAttrList(r));
      return Tagged("sharding_per_value", {{"shardings", ir::Attr::Array(std::move(shardings))}});
    }
    default:
      KILN_RETURN_IF_ERROR(r.Skip(r.remaining()));
      return ir::Attr::Opaque("#sdy attribute (kind " + std::to_string(code) + ")");
  }
}

}  // namespace kiln::ingest
