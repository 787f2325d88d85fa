// StableHLO attributes as the portable-artifact reader produces them. A portable artifact carries
// VHLO, which has no default attribute values and no structured dimension-number records: the
// serializer (StableHLO's legalize-to-VHLO) fills in defaults and flattens the records, and
// ReadPortableArtifact names the result by the VHLO schema. This file does the same to the
// attributes of a parsed text op so that both readers give one ir::Module.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "ingest/text_parser.h"
#include "ingest/vhlo_op_table.h"

namespace kiln::ingest::text {
namespace {

struct Schema {
  std::string_view vhlo;
  std::vector<const char*> attrs;
};

struct SchemaRow {
  const char *vhlo, *shlo, *min, *max;
  std::initializer_list<const char*> attrs;
  int regions;
};

#define KILN_VHLO_OP(vhlo, shlo, min, max, ...) {vhlo, shlo, min, max, __VA_ARGS__},
const SchemaRow kRows[] = {
#include "ingest/vhlo_op_schemas.inc"
};
#undef KILN_VHLO_OP

// "1.17.0" as a comparable number; "current" is above every version.
int64_t VersionNumber(const char* v) {
  if (std::strcmp(v, "current") == 0) return INT64_MAX;
  int64_t parts[3] = {0, 0, 0};
  for (int i = 0; i < 3 && *v != '\0'; ++i) {
    char* end = nullptr;
    parts[i] = std::strtoll(v, &end, 10);
    v = *end == '.' ? end + 1 : end;
  }
  return (parts[0] * 1000 + parts[1]) * 1000 + parts[2];
}

// Per StableHLO op, the VHLO op version a serializer targeting Kiln's advertised version
// (kCurrentReadableVersion, what JAX serializes for Kiln) writes; ops newer than that version
// take their newest form. Reading text therefore gives the IR the bytecode JAX sends would give.
const Schema* SchemaOf(std::string_view name) {
  static const auto* table = [] {
    const int64_t target =
        (int64_t{kCurrentReadableVersion.major} * 1000 + kCurrentReadableVersion.minor) * 1000 +
        kCurrentReadableVersion.patch;
    auto* t = new std::unordered_map<std::string_view, Schema>();
    std::unordered_map<std::string_view, int64_t> chosen_min;
    for (const SchemaRow& row : kRows) {
      const int64_t min = VersionNumber(row.min), max = VersionNumber(row.max);
      const bool fits = min <= target && target <= max;
      auto it = chosen_min.find(row.shlo);
      // Prefer the version in force at the target; else the newest one.
      const bool better = it == chosen_min.end() ||
                          (fits && (it->second > target || min > it->second)) ||
                          (!fits && it->second > target && min > it->second);
      if (!better) continue;
      chosen_min[row.shlo] = min;
      (*t)[row.shlo] = Schema{row.vhlo, std::vector<const char*>(row.attrs)};
    }
    return t;
  }();
  if (name == "func.return") name = "stablehlo.return";
  auto it = table->find(name);
  return it == table->end() ? nullptr : &it->second;
}

ir::Attr* Find(AttrList& attrs, std::string_view name) {
  for (ir::NamedAttr& a : attrs) {
    if (a.name == name) return &a.value;
  }
  return nullptr;
}

// The schema of the op being normalised: defaults exist only for attributes it has (VHLO ops of
// older versions lack some, e.g. custom_call_v1's result_tilings).
thread_local const Schema* current_schema = nullptr;

void SetDefault(AttrList& attrs, const char* name, ir::Attr value) {
  if (Find(attrs, name) != nullptr) return;
  if (current_schema != nullptr &&
      std::none_of(current_schema->attrs.begin(), current_schema->attrs.end(),
                   [&](const char* a) { return std::strcmp(a, name) == 0; })) {
    return;
  }
  attrs.push_back({name, std::move(value)});
}

// A list of integers (array of ints or dense literal) as VHLO's i64 tensor.
ir::Attr AsI64Tensor(const ir::Attr* a) {
  if (a == nullptr) return I64Tensor({});
  if (a->kind == ir::Attr::Kind::kElements) return *a;
  std::optional<std::vector<int64_t>> ints = a->AsInts();
  return I64Tensor(ints ? *ints : std::vector<int64_t>{});
}

ir::Attr AsI64(const ir::Attr* a) {
  if (a == nullptr) return ir::Attr::Int(0);
  std::optional<int64_t> v = a->AsInt();
  return ir::Attr::Int(v ? *v : 0);
}

// Replaces the record `record_name` (a dictionary) by its fields, each under `prefix + field`.
void Flatten(AttrList& attrs, std::string_view record_name,
             const std::vector<std::pair<const char*, bool>>& fields) {
  auto it = std::find_if(attrs.begin(), attrs.end(),
                         [&](const ir::NamedAttr& a) { return a.name == record_name; });
  if (it == attrs.end() || it->value.kind != ir::Attr::Kind::kDict) return;
  const ir::Attr record = std::move(it->value);
  attrs.erase(it);
  for (const auto& [field, is_list] : fields) {
    const ir::Attr* value = record.Find(field);
    attrs.push_back({field, is_list ? AsI64Tensor(value) : AsI64(value)});
  }
}

ir::Attr DefaultPrecision() {
  return ir::Attr::Array({ir::Attr::Enum("DEFAULT"), ir::Attr::Enum("DEFAULT")});
}

int64_t ListSize(const ir::Attr* a) {
  if (a == nullptr) return 0;
  if (a->kind == ir::Attr::Kind::kElements) return a->type.num_elements();
  std::optional<std::vector<int64_t>> v = a->AsInts();
  return v ? static_cast<int64_t>(v->size()) : 0;
}

Status ApplySpecialsAndDefaults(std::string_view name, AttrList& attrs) {
  const std::string_view op = name.substr(name.find('.') + 1);
  if (op == "dot_general") {
    Flatten(attrs, "dot_dimension_numbers",
            {{"lhs_batching_dimensions", true},
             {"rhs_batching_dimensions", true},
             {"lhs_contracting_dimensions", true},
             {"rhs_contracting_dimensions", true}});
    if (ir::Attr* algorithm = Find(attrs, "algorithm"); algorithm != nullptr) {
      const ir::Attr a = *algorithm;
      attrs.erase(std::find_if(attrs.begin(), attrs.end(),
                               [](const ir::NamedAttr& n) { return n.name == "algorithm"; }));
      for (const char* f :
           {"lhs_precision_type", "rhs_precision_type", "accumulation_type", "lhs_component_count",
            "rhs_component_count", "num_primitive_operations", "allow_imprecise_accumulation"}) {
        const ir::Attr* v = a.Find(f);
        attrs.push_back({f, v != nullptr ? *v : ir::Attr::None()});
      }
    }
    for (const char* f :
         {"lhs_precision_type", "rhs_precision_type", "accumulation_type", "lhs_component_count",
          "rhs_component_count", "num_primitive_operations", "allow_imprecise_accumulation"}) {
      SetDefault(attrs, f, ir::Attr::None());
    }
    SetDefault(attrs, "precision_config", DefaultPrecision());
  } else if (op == "dot") {
    SetDefault(attrs, "precision_config", DefaultPrecision());
  } else if (op == "convolution" || op == "dynamic_conv") {
    Flatten(attrs, "dimension_numbers",
            {{"input_batch_dimension", false},
             {"input_feature_dimension", false},
             {"input_spatial_dimensions", true},
             {"kernel_input_feature_dimension", false},
             {"kernel_output_feature_dimension", false},
             {"kernel_spatial_dimensions", true},
             {"output_batch_dimension", false},
             {"output_feature_dimension", false},
             {"output_spatial_dimensions", true}});
    const int64_t n = ListSize(Find(attrs, "input_spatial_dimensions"));
    SetDefault(attrs, "window_strides", I64Tensor(std::vector<int64_t>(n, 1)));
    if (op == "convolution") {
      SetDefault(attrs, "padding",
                 DenseOf(ir::DType::kS64, {n, 2}, std::vector<int64_t>(2 * n, 0)));
    }
    SetDefault(attrs, "lhs_dilation", I64Tensor(std::vector<int64_t>(n, 1)));
    SetDefault(attrs, "rhs_dilation", I64Tensor(std::vector<int64_t>(n, 1)));
    SetDefault(attrs, "window_reversal",
               DenseOf(ir::DType::kPred, {n}, std::vector<int64_t>(n, 0)));
    SetDefault(attrs, "precision_config", DefaultPrecision());
  } else if (op == "gather" || op == "dynamic_gather") {
    Flatten(attrs, "dimension_numbers",
            {{"offset_dims", true},
             {"collapsed_slice_dims", true},
             {"operand_batching_dims", true},
             {"start_indices_batching_dims", true},
             {"start_index_map", true},
             {"index_vector_dim", false}});
    SetDefault(attrs, "indices_are_sorted", ir::Attr::Bool(false));
  } else if (op == "scatter") {
    Flatten(attrs, "scatter_dimension_numbers",
            {{"update_window_dims", true},
             {"inserted_window_dims", true},
             {"input_batching_dims", true},
             {"scatter_indices_batching_dims", true},
             {"scatter_dims_to_operand_dims", true},
             {"index_vector_dim", false}});
    SetDefault(attrs, "indices_are_sorted", ir::Attr::Bool(false));
    SetDefault(attrs, "unique_indices", ir::Attr::Bool(false));
  } else if (op == "compare") {
    SetDefault(attrs, "compare_type", ir::Attr::Enum("NOTYPE"));
  } else if (op == "sort") {
    SetDefault(attrs, "dimension", ir::Attr::Int(-1));
    SetDefault(attrs, "is_stable", ir::Attr::Bool(false));
  } else if (op == "cholesky") {
    SetDefault(attrs, "lower", ir::Attr::Bool(false));
  } else if (op == "reduce_window" || op == "select_and_scatter") {
    const int64_t n = ListSize(Find(attrs, "window_dimensions"));
    SetDefault(attrs, "window_strides", I64Tensor(std::vector<int64_t>(n, 1)));
    if (op == "reduce_window") {
      SetDefault(attrs, "base_dilations", I64Tensor(std::vector<int64_t>(n, 1)));
      SetDefault(attrs, "window_dilations", I64Tensor(std::vector<int64_t>(n, 1)));
    }
    SetDefault(attrs, "padding", DenseOf(ir::DType::kS64, {n, 2}, std::vector<int64_t>(2 * n, 0)));
  } else if (op == "custom_call") {
    if (ir::Attr* api = Find(attrs, "api_version");
        api != nullptr && api->kind == ir::Attr::Kind::kInt) {
      static const char* const kNames[] = {
          "API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
          "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};
      if (api->i < 0 || api->i > 4) {
        return InvalidArgument("custom_call api_version " + std::to_string(api->i) +
                               " is not valid");
      }
      *api = ir::Attr::Enum(kNames[api->i]);
    }
    SetDefault(attrs, "api_version", ir::Attr::Enum("API_VERSION_ORIGINAL"));
    const ir::Attr* api = Find(attrs, "api_version");
    SetDefault(attrs, "backend_config",
               api->str == "API_VERSION_TYPED_FFI" ? ir::Attr::Dict({}) : ir::Attr::String(""));
    SetDefault(attrs, "has_side_effect", ir::Attr::Bool(false));
    for (const char* f : {"called_computations", "operand_layouts", "result_layouts",
                          "output_operand_aliases", "result_tilings"}) {
      SetDefault(attrs, f, ir::Attr::Array({}));
    }
  } else if (op == "all_gather" || op == "all_reduce" || op == "reduce_scatter" ||
             op == "all_to_all" || op == "collective_permute" || op == "collective_broadcast" ||
             op == "collective_reduce") {
    auto it = std::find_if(attrs.begin(), attrs.end(),
                           [](const ir::NamedAttr& a) { return a.name == "channel_handle"; });
    if (it != attrs.end()) {
      const ir::Attr* handle = it->value.Find("handle");
      ir::Attr id = AsI64(handle);
      attrs.erase(it);
      attrs.push_back({"channel_id", id});
    }
    for (const char* f : {"use_global_device_ids", "has_dynamic_root"}) {
      if (ir::Attr* a = Find(attrs, f); a != nullptr && a->kind == ir::Attr::Kind::kUnit) {
        *a = ir::Attr::Bool(true);
      }
    }
    SetDefault(attrs, "channel_id", ir::Attr::Int(0));
    if (op == "all_gather" || op == "all_reduce" || op == "reduce_scatter" ||
        op == "collective_reduce") {
      SetDefault(attrs, "use_global_device_ids", ir::Attr::Bool(false));
    }
    if (op == "collective_broadcast" || op == "collective_reduce") {
      SetDefault(attrs, "has_dynamic_root", ir::Attr::Bool(false));
    }
  } else if (op == "send" || op == "recv") {
    auto it = std::find_if(attrs.begin(), attrs.end(),
                           [](const ir::NamedAttr& a) { return a.name == "channel_handle"; });
    if (it != attrs.end()) {
      const ir::Attr handle = it->value;
      attrs.erase(it);
      attrs.push_back({"channel_id", AsI64(handle.Find("handle"))});
      attrs.push_back({"channel_type", AsI64(handle.Find("type"))});
    }
    SetDefault(attrs, "is_host_transfer", ir::Attr::Bool(false));
    SetDefault(attrs, "source_target_pairs", I64Tensor({}));
  } else if (op == "dynamic_broadcast_in_dim") {
    SetDefault(attrs, "known_expanding_dimensions", I64Tensor({}));
    SetDefault(attrs, "known_nonexpanding_dimensions", I64Tensor({}));
  } else if (op == "infeed") {
    SetDefault(attrs, "infeed_config", ir::Attr::String(""));
    SetDefault(attrs, "layout", ir::Attr::Array({}));
  } else if (op == "outfeed") {
    SetDefault(attrs, "outfeed_config", ir::Attr::String(""));
  } else if (op == "composite") {
    SetDefault(attrs, "version", ir::Attr::Int(0));
    SetDefault(attrs, "composite_attributes", ir::Attr::Dict({}));
  } else if (op == "cbrt" || op == "cosine" || op == "exponential" ||
             op == "exponential_minus_one" || op == "log" || op == "log_plus_one" ||
             op == "logistic" || op == "rsqrt" || op == "sine" || op == "sqrt" || op == "tan" ||
             op == "tanh") {
    SetDefault(attrs, "result_accuracy",
               ir::Attr::Dict({{"atol", ir::Attr::Float(0.0)},
                               {"rtol", ir::Attr::Float(0.0)},
                               {"ulps", ir::Attr::Int(0)},
                               {"mode", ir::Attr::Enum("DEFAULT")}}));
  }
  return Status::Ok();
}

// Properties of the sdy ops Kiln partitions (ingest/op_translation.cc reads the same ones).
const std::vector<const char*>* SdyPropertyNames(std::string_view op_name) {
  static const auto* table = new std::unordered_map<std::string_view, std::vector<const char*>>{
      {"sdy.mesh", {"mesh", "sym_name"}},
      {"sdy.manual_computation", {"in_shardings", "manual_axes", "out_shardings"}},
      {"sdy.sharding_constraint", {"sharding"}},
      {"sdy.reshard", {"sharding"}},
  };
  auto it = table->find(op_name);
  return it == table->end() ? nullptr : &it->second;
}

void SortByName(AttrList& attrs) {
  std::stable_sort(attrs.begin(), attrs.end(),
                   [](const ir::NamedAttr& a, const ir::NamedAttr& b) { return a.name < b.name; });
}

}  // namespace

ir::Attr DenseOf(ir::DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::kElements;
  a.type = ir::Type::Tensor(dtype, std::move(shape));
  const int width = ir::DTypeByteSize(dtype);
  for (int64_t v : values) {
    for (int b = 0; b < width; ++b)
      a.data.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * b)));
  }
  return a;
}

ir::Attr I64Tensor(const std::vector<int64_t>& values) {
  return DenseOf(ir::DType::kS64, {static_cast<int64_t>(values.size())}, values);
}

Status ToVhloForm(ir::Op& op, AttrList props, AttrList dict, const ir::Module&) {
  const std::string_view dialect = std::string_view(op.name).substr(0, op.name.find('.'));
  const Schema* schema = SchemaOf(op.name);
  if (schema == nullptr) {
    if (dialect == "stablehlo" || (dialect == "func" && op.name != "func.func")) {
      return InvalidArgument("unknown operation '" + op.name +
                             "' (Kiln's op table covers VHLO up to " +
                             std::string(VhloSchemaVersion()) + ")");
    }
    op.foreign = true;
    SortByName(dict);
    op.discardable = std::move(dict);
    if (const std::vector<const char*>* names = SdyPropertyNames(op.name); names != nullptr) {
      for (const char* name : *names) {
        if (ir::Attr* a = Find(props, name); a != nullptr)
          op.attrs.push_back({name, std::move(*a)});
      }
    }
    return Status::Ok();
  }
  // Inherent attributes may arrive as properties or, in the generic form, in the dictionary.
  AttrList all = std::move(props);
  for (ir::NamedAttr& a : dict) all.push_back(std::move(a));
  current_schema = schema;
  Status normalised = ApplySpecialsAndDefaults(op.name, all);
  current_schema = nullptr;
  KILN_RETURN_IF_ERROR(normalised.WithContext(op.name));
  std::vector<bool> used(all.size(), false);
  for (const char* name : schema->attrs) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (!used[i] && all[i].name == name) {
        used[i] = true;
        op.attrs.push_back(std::move(all[i]));
        break;
      }
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (!used[i]) op.discardable.push_back(std::move(all[i]));
  }
  SortByName(op.discardable);
  return Status::Ok();
}

}  // namespace kiln::ingest::text
