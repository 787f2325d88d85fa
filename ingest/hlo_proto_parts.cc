// Sub-message decoders of the HloModuleProto reader: ShapeProto (with its layout), Window,
// ConvolutionDimensionNumbers, OpSharding, ReplicaGroup and CollectiveDeviceListProto (including
// the iota form). Field numbers from xla/xla_data.proto.
#include "ingest/hlo_proto_parts.h"

#include <string>

namespace kiln::ingest::hlo {

namespace {

Status DecodeLayout(Reader r, Shape& shape) {
  shape.has_layout = true;
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    switch (f.number) {
      case 1:  // minor_to_major
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, shape.minor_to_major));
        return true;
      case 6:   // tiles
      case 7:   // element_size_in_bits
      case 8:   // memory_space
      case 9:   // dim_level_types
      case 10:  // physical_shape
      case 17:  // split_configs
        if (f.type == proto_wire::kVarint) {
          KILN_ASSIGN_OR_RETURN(int64_t v, Int(f, in));
          if (v != 0) shape.layout_unusual = true;
          return true;
        }
        shape.layout_unusual = true;
        return false;
      default:
        return false;
    }
  });
}

}  // namespace

Status DecodeShape(Reader r, Shape& shape, int depth) {
  if (depth > kMaxDepth) return r.Error("shapes nested too deeply");
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    switch (f.number) {
      case 2: {
        KILN_ASSIGN_OR_RETURN(int64_t t, Int(f, in));
        shape.element_type = static_cast<int>(t);
        return true;
      }
      case 3:
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, shape.dims));
        return true;
      case 4: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        shape.tuple.emplace_back();
        KILN_RETURN_IF_ERROR(DecodeShape(sub, shape.tuple.back(), depth + 1));
        return true;
      }
      case 5: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        KILN_RETURN_IF_ERROR(DecodeLayout(sub, shape));
        return true;
      }
      case 6: {
        std::vector<int64_t> flags;
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, flags));
        for (int64_t flag : flags) shape.any_dynamic |= flag != 0;
        return true;
      }
      default:
        return false;
    }
  });
}

// A message of scalar int64 fields: `set(number, value)` stores the ones it knows.
Status DecodeWindow(Reader r, std::vector<WindowDim>& window) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number != 1) return false;
    KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
    WindowDim d;
    KILN_RETURN_IF_ERROR(DecodeInts(sub, [&](uint32_t n, int64_t v) {
      switch (n) {
        case 1:
          d.size = v;
          break;
        case 2:
          d.stride = v;
          break;
        case 3:
          d.padding_low = v;
          break;
        case 4:
          d.padding_high = v;
          break;
        case 5:
          d.window_dilation = v;
          break;
        case 6:
          d.base_dilation = v;
          break;
        case 7:
          d.reversal = v != 0;
          break;
        default:
          break;
      }
    }));
    window.push_back(d);
    return true;
  });
}

Status DecodeConvDims(Reader r, ConvDims& c) {
  std::vector<int64_t> ib, ifeat, kif, kof, ob, of;
  KILN_RETURN_IF_ERROR(DecodeIntLists(r, {{7, &ib},
                                          {8, &ifeat},
                                          {11, &c.input_spatial},
                                          {3, &kif},
                                          {4, &kof},
                                          {6, &c.kernel_spatial},
                                          {9, &ob},
                                          {10, &of},
                                          {12, &c.output_spatial}}));
  c.input_batch = Last(ib);
  c.input_feature = Last(ifeat);
  c.kernel_input_feature = Last(kif);
  c.kernel_output_feature = Last(kof);
  c.output_batch = Last(ob);
  c.output_feature = Last(of);
  return Status::Ok();
}

// OpSharding: true if it (or a tuple element) tiles data across devices (type OTHER).
StatusOr<bool> DecodeShardingTiled(Reader r, int depth) {
  if (depth > kMaxDepth) return r.Error("shardings nested too deeply");
  bool tiled = false;
  KILN_RETURN_IF_ERROR(ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number == 1 && f.type == proto_wire::kVarint) {
      KILN_ASSIGN_OR_RETURN(int64_t type, Int(f, in));
      tiled |= type == 3;
      return true;
    }
    if (f.number == 5) {
      KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
      KILN_ASSIGN_OR_RETURN(bool inner, DecodeShardingTiled(sub, depth + 1));
      tiled |= inner;
      return true;
    }
    if (f.number == 14) {  // named_sharding
      tiled = true;
      return false;
    }
    return false;
  }));
  return tiled;
}

Status DecodeReplicaGroup(Reader r, std::vector<std::vector<int64_t>>& groups) {
  groups.emplace_back();
  return DecodeIntLists(r, {{1, &groups.back()}});
}

// IotaReplicaGroupListProto: iota(groups * size) reshaped to `dims`, transposed by `perm`, then
// read as `groups` rows of `size`.
namespace {

Status DecodeIotaGroups(Reader r, std::vector<std::vector<int64_t>>& groups) {
  std::vector<int64_t> num_groups, per_group, dims, perm;
  KILN_RETURN_IF_ERROR(
      DecodeIntLists(r, {{1, &num_groups}, {2, &per_group}, {3, &dims}, {4, &perm}}));
  const int64_t g = Last(num_groups), s = Last(per_group);
  if (g < 0 || s < 0 || (s != 0 && g > (int64_t{1} << 24) / s)) {
    return r.Error("iota replica group list of " + std::to_string(g) + " x " + std::to_string(s));
  }
  const int64_t total = g * s;
  if (dims.empty()) dims = {total};
  if (perm.empty()) {
    for (size_t i = 0; i < dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  }
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d <= 0 || d > total) return r.Error("invalid iota_reshape_dims");
    product *= d;
  }
  std::vector<bool> seen(dims.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= dims.size() || seen[static_cast<size_t>(p)]) {
      return r.Error("iota_transpose_perm is not a permutation");
    }
    seen[static_cast<size_t>(p)] = true;
  }
  if (product != total || perm.size() != dims.size()) {
    return r.Error("iota replica group dims do not match the group sizes");
  }
  // Row-major strides of the reshaped iota, then walk the transposed shape.
  const size_t rank = dims.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> flat;
  flat.reserve(static_cast<size_t>(total));
  for (int64_t n = 0; n < total; ++n) {
    int64_t value = 0;
    for (size_t i = 0; i < rank; ++i) value += index[i] * strides[static_cast<size_t>(perm[i])];
    flat.push_back(value);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < dims[static_cast<size_t>(perm[i])]) break;
      index[i] = 0;
    }
  }
  for (int64_t i = 0; i < g; ++i) {
    groups.emplace_back(flat.begin() + i * s, flat.begin() + (i + 1) * s);
  }
  return Status::Ok();
}

}  // namespace

Status DecodeDeviceList(Reader r, std::vector<std::vector<int64_t>>& groups) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number != 1 && f.number != 2) return false;
    KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
    KILN_RETURN_IF_ERROR(f.number == 1 ? DecodeReplicaGroup(sub, groups)
                                       : DecodeIotaGroups(sub, groups));
    return true;
  });
}

}  // namespace kiln::ingest::hlo
