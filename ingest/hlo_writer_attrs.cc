// Attribute reads and shared sub-messages of the HLO writer (ingest/hlo_writer.h): integer lists,
// enums by their HLO numbers, windows, replica groups, precision configs and typed-FFI backend
// configs, as the HLO reader takes them back (ingest/hlo_ops*.cc, hlo_backend_config.cc).
#include <cstdio>
#include <optional>
#include <string>

#include "ingest/hlo_writer_internal.h"

namespace kiln::ingest::hlo_writer {

const ir::Attr* Present(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = op.attr(name);
  return a == nullptr || a->is_none() ? nullptr : a;
}

StatusOr<std::vector<int64_t>> Ints(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = Present(op, name);
  std::optional<std::vector<int64_t>> v = a != nullptr ? a->AsInts() : std::nullopt;
  if (!v) return InvalidArgument(Describe(op) + " has no integer list `" + std::string(name) + "`");
  return *v;
}

// An optional integer list: `fallback` when absent.
StatusOr<std::vector<int64_t>> IntsOr(const ir::Op& op, std::string_view name,
                                      std::vector<int64_t> fallback) {
  if (Present(op, name) == nullptr) return fallback;
  return Ints(op, name);
}

StatusOr<int64_t> IntAttr(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = Present(op, name);
  std::optional<int64_t> v = a != nullptr ? a->AsInt() : std::nullopt;
  if (!v) return InvalidArgument(Describe(op) + " has no integer `" + std::string(name) + "`");
  return *v;
}

bool BoolAttr(const ir::Op& op, std::string_view name, bool fallback) {
  const ir::Attr* a = Present(op, name);
  if (a == nullptr) return fallback;
  if (a->kind == ir::Attr::Kind::kBool) return a->b;
  std::optional<int64_t> v = a->AsInt();
  return v ? *v != 0 : fallback;
}

std::string EnumAttr(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = Present(op, name);
  return a != nullptr && (a->kind == ir::Attr::Kind::kEnum || a->kind == ir::Attr::Kind::kString)
             ? a->str
             : std::string();
}

// The index of `value` in `names`, or an error naming the op's attribute.
StatusOr<int64_t> EnumIndex(const ir::Op& op, std::string_view attr, const std::string& value,
                            std::initializer_list<std::string_view> names) {
  int64_t i = 0;
  for (std::string_view n : names) {
    if (n == value) return i;
    ++i;
  }
  return Unimplemented(Describe(op) + " has " + std::string(attr) + " '" + value +
                       "', which HLO does not have");
}

Status PrecisionConfig(const ir::Op& op, Encoder& fields) {
  const ir::Attr* a = Present(op, "precision_config");
  if (a == nullptr) return Status::Ok();
  if (a->kind != ir::Attr::Kind::kArray)
    return InvalidArgument(Describe(op) + ": precision_config");
  std::vector<int64_t> values;
  for (const ir::Attr& p : a->array) {
    KILN_ASSIGN_OR_RETURN(int64_t v,
                          EnumIndex(op, "precision", p.str, {"DEFAULT", "HIGH", "HIGHEST"}));
    values.push_back(v);
  }
  Encoder config;
  config.PackedInts(1, values);  // operand_precision
  fields.Message(kPrecisionConfig, config);
  return Status::Ok();
}

// Window: one WindowDimension (size 1, stride 2, padding_low 3, padding_high 4, window_dilation 5,
// base_dilation 6, window_reversal 7) per spatial dimension.
Status WriteWindow(const ir::Op& op, const std::vector<int64_t>& size,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& base_dilation,
                   const std::vector<int64_t>& window_dilation, const std::vector<bool>& reversal,
                   Encoder& fields) {
  const size_t n = size.size();
  if (strides.size() != n || padding.size() != 2 * n || base_dilation.size() != n ||
      window_dilation.size() != n || reversal.size() != n) {
    return InvalidArgument(Describe(op) + " has window attributes of different ranks");
  }
  Encoder window;
  for (size_t i = 0; i < n; ++i) {
    Encoder d;
    d.Int(1, size[i]).Int(2, strides[i]).Int(3, padding[2 * i]).Int(4, padding[2 * i + 1]);
    d.Int(5, window_dilation[i]).Int(6, base_dilation[i]).Bool(7, reversal[i]);
    window.Message(1, d);
  }
  fields.Message(kWindow, window);
  return Status::Ok();
}

// Replica groups as ReplicaGroup messages (replica_ids = 1), StableHLO's -1 padding dropped.
Status WriteGroups(const ir::Op& op, Encoder& fields) {
  const ir::Attr* a = Present(op, "replica_groups");
  if (a == nullptr) return Status::Ok();
  if (a->kind != ir::Attr::Kind::kElements) {
    return Unimplemented(Describe(op) + " with replica_groups " + a->ToString() +
                         " in Kiln's HLO writer (it writes explicit replica groups)");
  }
  std::optional<std::vector<int64_t>> flat = a->AsInts();
  if (!flat || a->type.dims.size() != 2) {
    return InvalidArgument(Describe(op) + " has malformed replica_groups " + a->ToString());
  }
  const int64_t rows = a->type.dims[0], width = a->type.dims[1];
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> ids;
    for (int64_t c = 0; c < width; ++c) {
      const int64_t id = (*flat)[static_cast<size_t>(r * width + c)];
      if (id >= 0) ids.push_back(id);
    }
    Encoder group;
    group.PackedInts(1, ids);
    fields.Message(kReplicaGroups, group);
  }
  return Status::Ok();
}

Status WriteChannel(const ir::Op& op, Encoder& fields) {
  if (Present(op, "channel_id") == nullptr) return Status::Ok();
  KILN_ASSIGN_OR_RETURN(int64_t channel, IntAttr(op, "channel_id"));
  if (channel > 0) fields.Int(kChannelId, channel);
  return Status::Ok();
}

// A typed-FFI backend_config dictionary as the MLIR attribute text XLA writes for it (what
// hlo::TypedFfiBackendConfig reads): `{name = 1 : i64, flag = true, s = "x"}`.
StatusOr<std::string> FfiConfigText(const ir::Op& op, const ir::Attr& dict) {
  std::string out = "{";
  for (size_t i = 0; i < dict.dict.size(); ++i) {
    const auto& [key, value] = dict.dict[i];
    out += (i ? ", " : "") + key;
    switch (value.kind) {
      case ir::Attr::Kind::kUnit:
        break;
      case ir::Attr::Kind::kBool:
        out += value.b ? " = true" : " = false";
        break;
      case ir::Attr::Kind::kInt:
        out += " = " + std::to_string(value.i) + " : " +
               std::string(value.type.is_tensor() ? ir::DTypeName(value.type.dtype) : "i64");
        break;
      case ir::Attr::Kind::kFloat: {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.17e", value.f);
        out += std::string(" = ") + buf + " : " +
               std::string(value.type.is_tensor() ? ir::DTypeName(value.type.dtype) : "f64");
        break;
      }
      case ir::Attr::Kind::kString: {
        out += " = \"";
        for (char c : value.str) {
          if (c == '"' || c == '\\') out += '\\';
          out += c;
        }
        out += "\"";
        break;
      }
      default:
        return Unimplemented(Describe(op) + " has backend_config entry '" + key +
                             "' of a kind Kiln's HLO writer does not print (" + value.ToString() +
                             ")");
    }
  }
  return out + "}";
}

}  // namespace kiln::ingest::hlo_writer
