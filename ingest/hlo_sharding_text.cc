// OpSharding (xla_data.proto) as the text of XLA's HloSharding, the form `mhlo.sharding` holds
// (grammar in lower/hlo_sharding.h), so that an HLO program's entry shardings reach the
// partitioner as a StableHLO program's do. Fields: type 1 (REPLICATED 0, MAXIMAL 1, TUPLE 2,
// OTHER 3, MANUAL 4, UNKNOWN 5, UNREDUCED 6), tile_assignment_dimensions 3,
// tile_assignment_devices 4, tuple_shardings 5, replicate_on_last_tile_dim 6, last_tile_dims 8
// (repeated Type), iota_reshape_dims 9, iota_transpose_perm 10, named_sharding 14.
#include <string>
#include <vector>

#include "ingest/hlo_proto_parts.h"

namespace kiln::ingest::hlo {
namespace {

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

StatusOr<std::string> SubgroupName(Reader& r, int64_t type) {
  switch (type) {
    case 0:
      return std::string("replicated");
    case 1:
      return std::string("maximal");
    case 4:
      return std::string("manual");
    case 6:
      return std::string("unreduced");
    default:
      return r.Error("sharding subgroup type " + std::to_string(type));
  }
}

Status Decode(Reader r, int depth, std::vector<std::string>& leaves) {
  if (depth > kMaxDepth) return r.Error("shardings nested too deeply");
  int64_t type = 0;
  bool replicate_last = false, named = false;
  std::vector<int64_t> dims, devices, last, reshape, perm;
  std::vector<std::string> elements;
  KILN_RETURN_IF_ERROR(ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    switch (f.number) {
      case 1: {
        KILN_ASSIGN_OR_RETURN(type, Int(f, in));
        return true;
      }
      case 3:
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, dims));
        return true;
      case 4:
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, devices));
        return true;
      case 5: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        KILN_RETURN_IF_ERROR(Decode(sub, depth + 1, elements));
        return true;
      }
      case 6: {
        KILN_ASSIGN_OR_RETURN(int64_t v, Int(f, in));
        replicate_last = v != 0;
        return true;
      }
      case 8:
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, last));
        return true;
      case 9:
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, reshape));
        return true;
      case 10:
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, perm));
        return true;
      case 14:
        named = true;
        return false;
      default:
        return false;
    }
  }));
  if (named) return Unimplemented("a named sharding (OpSharding.named_sharding)");
  switch (type) {
    case 0:
      leaves.push_back("{replicated}");
      return Status::Ok();
    case 2:
      leaves.insert(leaves.end(), elements.begin(), elements.end());
      return Status::Ok();
    case 4:
      leaves.push_back("{manual}");
      return Status::Ok();
    case 5:
      leaves.push_back("{unknown}");
      return Status::Ok();
    case 6:
      leaves.push_back("{unreduced}");
      return Status::Ok();
    case 1:
      if (devices.size() != 1) return r.Error("a maximal sharding without one device");
      leaves.push_back("{maximal device=" + std::to_string(devices[0]) + "}");
      return Status::Ok();
    case 3:
      break;
    default:
      return r.Error("sharding type " + std::to_string(type));
  }
  std::string s = "{devices=[" + Join(dims) + "]";
  if (!reshape.empty()) {
    s += "<=[" + Join(reshape) + "]";
    if (!perm.empty()) s += "T(" + Join(perm) + ")";
  } else {
    s += Join(devices);
  }
  if (replicate_last) s += " last_tile_dim_replicate";
  if (!last.empty()) {
    s += " last_tile_dims={";
    for (size_t i = 0; i < last.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(std::string name, SubgroupName(r, last[i]));
      s += (i ? ", " : "") + name;
    }
    s += "}";
  }
  leaves.push_back(s + "}");
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<std::string>> DecodeShardingText(Reader r) {
  std::vector<std::string> leaves;
  KILN_RETURN_IF_ERROR(Decode(r, 0, leaves));
  return leaves;
}

}  // namespace kiln::ingest::hlo
