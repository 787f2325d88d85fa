// The StableHLO form of an op's attributes for WriteMlirText (ir/mlir_text.h): the inverse of
// ingest/text_vhlo_form.cc. The IR holds the VHLO reader's form (defaults filled in, dimension
// numbers flattened, channel handles as ids, enums by spelling); this regroups the records, gives
// each enum its StableHLO kind and picks `array<i64: ...>` or `dense<...>` as StableHLO's op
// definitions do. Absent optional attributes (none) are left out, as are VHLO's empty defaults
// the readers fill back in.
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "ir/mlir_text_internal.h"

namespace kiln::ir::mlir_text {
namespace {

Status NotPrintable(const Op& op, const std::string& what) {
  return Unimplemented("Kiln's MLIR writer cannot print " + what + " of " + op.name);
}

// Attributes whose StableHLO type is DenseIntElementsAttr (`dense<...> : tensor<...>`); every other
// integer or boolean list of a StableHLO op is a dense array (`array<i64: ...>`).
bool IsDenseElementsAttr(std::string_view name) {
  return name == "value" || name == "padding" || name == "replica_groups" ||
         name == "source_target_pairs";
}

// StableHLO's enum kind of an attribute that holds an enum, by the attribute's name.
const char* EnumKind(std::string_view name) {
  if (name == "comparison_direction") return "comparison_direction";
  if (name == "compare_type") return "comparison_type";
  if (name == "fft_type") return "fft_type";
  if (name == "rng_algorithm") return "rng_algorithm";
  if (name == "rng_distribution") return "rng_distribution";
  if (name == "transpose_a") return "transpose";
  return nullptr;
}

StatusOr<std::string> Precision(const Op& op, const Attr& a) {
  if (a.kind != Attr::Kind::kArray) return NotPrintable(op, "precision_config");
  std::string out = "[";
  for (size_t i = 0; i < a.array.size(); ++i) {
    if (a.array[i].kind != Attr::Kind::kEnum) return NotPrintable(op, "precision_config");
    out += (i ? ", " : "") + std::string("#stablehlo<precision ") + a.array[i].str + ">";
  }
  return out + "]";
}

std::string IntList(const Attr* a) {
  std::string out = "[";
  if (a != nullptr) {
    std::optional<std::vector<int64_t>> v = a->AsInts();
    if (v) {
      for (size_t i = 0; i < v->size(); ++i) out += (i ? ", " : "") + std::to_string((*v)[i]);
    }
  }
  return out + "]";
}

bool IsEmptyList(const Attr* a) {
  if (a == nullptr) return true;
  if (a->kind == Attr::Kind::kArray) return a->array.empty();
  if (a->kind == Attr::Kind::kElements) return a->data.empty();
  return false;
}

// A structured record `#stablehlo.<kind><field = [..], ...>` from flattened fields; `lists` are
// integer lists (left out when empty, as StableHLO prints them), `scalars` integers. A field the op
// lacks (a program that never had the record) is refused, not defaulted.
StatusOr<std::string> Record(const Op& op, const char* kind,
                             std::initializer_list<const char*> fields,
                             std::initializer_list<const char*> scalars,
                             std::vector<std::string>& used) {
  std::string out = std::string("#stablehlo.") + kind + "<";
  bool first = true;
  for (const char* f : fields) {
    used.push_back(f);
    const Attr* a = op.attr(f);
    // Batching dimensions came with gather_v2 / scatter_v2: older op versions have none.
    const bool optional = std::string_view(f).find("batching") != std::string_view::npos &&
                          std::string_view(kind) != "dot";
    if ((a == nullptr && !optional) || (a != nullptr && !a->AsInts())) {
      return NotPrintable(op, std::string("a missing or malformed ") + f);
    }
    if (IsEmptyList(a)) continue;
    out += (first ? "" : ", ") + std::string(f) + " = " + IntList(a);
    first = false;
  }
  for (const char* f : scalars) {
    used.push_back(f);
    const Attr* a = op.attr(f);
    std::optional<int64_t> v = a != nullptr ? a->AsInt() : std::nullopt;
    if (!v) return NotPrintable(op, std::string("a missing or malformed ") + f);
    out += (first ? "" : ", ") + std::string(f) + " = " + std::to_string(*v);
    first = false;
  }
  return out + ">";
}

bool IsDefaultAccuracy(const Attr& a) {
  const Attr* atol = a.Find("atol");
  const Attr* rtol = a.Find("rtol");
  const Attr* ulps = a.Find("ulps");
  const Attr* mode = a.Find("mode");
  return atol != nullptr && atol->f == 0.0 && rtol != nullptr && rtol->f == 0.0 &&
         ulps != nullptr && ulps->i == 0 && mode != nullptr && mode->str == "DEFAULT";
}

StatusOr<std::string> Accuracy(const Op& op, const Attr& a) {
  const Attr* atol = a.Find("atol");
  const Attr* rtol = a.Find("rtol");
  const Attr* ulps = a.Find("ulps");
  const Attr* mode = a.Find("mode");
  if (atol == nullptr || rtol == nullptr || ulps == nullptr || mode == nullptr) {
    return NotPrintable(op, "result_accuracy");
  }
  // Decimal with 17 significant digits: the record's fields are f64, and both parsers read these
  // back to the same double.
  char at[40], rt[40];
  std::snprintf(at, sizeof(at), "%.17e", atol->f);
  std::snprintf(rt, sizeof(rt), "%.17e", rtol->f);
  return std::string("#stablehlo.result_accuracy<atol = ") + at + ", rtol = " + rt +
         ", ulps = " + std::to_string(ulps->i) + ", mode = #stablehlo.result_accuracy_mode<" +
         mode->str + ">>";
}

StatusOr<std::string> CustomCallValue(const Op& op, const NamedAttr& a, bool& skip) {
  const std::string& n = a.name;
  if (n == "api_version") {
    static const char* const kNames[] = {
        "API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
        "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};
    for (int i = 0; i < 5; ++i) {
      if (a.value.str == kNames[i]) return std::to_string(i) + " : i32";
    }
    return NotPrintable(op, "api_version " + a.value.str);
  }
  if (n == "called_computations" || n == "operand_layouts" || n == "result_layouts" ||
      n == "output_operand_aliases" || n == "result_tilings") {
    if (a.value.kind != Attr::Kind::kArray) return NotPrintable(op, n);
    skip = a.value.array.empty();
    if (skip) return std::string();
    if (n == "called_computations") return Value(a.value);
    std::string out = "[";
    for (size_t i = 0; i < a.value.array.size(); ++i) {
      const Attr& e = a.value.array[i];
      std::string text;
      if (n == "operand_layouts" || n == "result_layouts") {
        KILN_ASSIGN_OR_RETURN(text, Dense(e, "index"));
      } else if (n == "output_operand_aliases") {
        const Attr* index = e.Find("operand_index");
        if (index == nullptr) return NotPrintable(op, n);
        text = "#stablehlo.output_operand_alias<output_tuple_indices = " +
               IntList(e.Find("output_tuple_indices")) +
               ", operand_index = " + std::to_string(index->i) +
               ", operand_tuple_indices = " + IntList(e.Find("operand_tuple_indices")) + ">";
      } else {
        return NotPrintable(op, n);
      }
      out += (i ? ", " : "") + text;
    }
    return out + "]";
  }
  return Value(a.value);
}

}  // namespace

Status OpAttributes(const Op& op, AttrTexts& properties, AttrTexts& discardable) {
  const std::string_view name = op.name;
  const bool stablehlo = name.starts_with("stablehlo.");
  const std::string_view mnemonic = stablehlo ? name.substr(10) : std::string_view();
  std::vector<std::string> used;
  // Records regrouped from the flattened fields.
  if (mnemonic == "dot_general") {
    KILN_ASSIGN_OR_RETURN(std::string dims,
                          Record(op, "dot",
                                 {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                  "lhs_contracting_dimensions", "rhs_contracting_dimensions"},
                                 {}, used));
    properties.emplace_back("dot_dimension_numbers", std::move(dims));
    static const char* const kAlgorithm[] = {
        "lhs_precision_type",          "rhs_precision_type",  "accumulation_type",
        "lhs_component_count",         "rhs_component_count", "num_primitive_operations",
        "allow_imprecise_accumulation"};
    bool any = false;
    for (const char* f : kAlgorithm) {
      used.push_back(f);
      const Attr* a = op.attr(f);
      any = any || (a != nullptr && !a->is_none());
    }
    if (any) {
      std::string out = "#stablehlo.dot_algorithm<";
      for (size_t i = 0; i < 7; ++i) {
        const Attr* a = op.attr(kAlgorithm[i]);
        if (a == nullptr || a->is_none()) return NotPrintable(op, "a partial dot algorithm");
        std::string v;
        if (a->kind == Attr::Kind::kType && a->type.is_tensor() &&
            a->type.dtype == DType::kInvalid) {
          // An element type the IR does not hold (tf32, ...): its spelling is lost.
          return NotPrintable(op, std::string("the dot algorithm's ") + kAlgorithm[i]);
        }
        if (a->kind == Attr::Kind::kType) {
          v = a->type.is_tensor() && a->type.dims.empty() ? std::string(DTypeName(a->type.dtype))
                                                          : a->type.ToString();
        } else if (a->kind == Attr::Kind::kBool) {
          v = a->b ? "true" : "false";
        } else if (a->kind == Attr::Kind::kInt) {
          v = std::to_string(a->i);
        } else {
          return NotPrintable(op, std::string("dot algorithm field ") + kAlgorithm[i]);
        }
        out += (i ? ", " : "") + std::string(kAlgorithm[i]) + " = " + v;
      }
      properties.emplace_back("algorithm", out + ">");
    }
  } else if (mnemonic == "convolution" || mnemonic == "dynamic_conv") {
    std::string raw = "#stablehlo.conv<raw ";
    bool first = true;
    for (const char* f :
         {"input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions",
          "kernel_input_feature_dimension", "kernel_output_feature_dimension",
          "kernel_spatial_dimensions", "output_batch_dimension", "output_feature_dimension",
          "output_spatial_dimensions"}) {
      used.push_back(f);
      const Attr* a = op.attr(f);
      if (a == nullptr) return NotPrintable(op, std::string("the convolution field ") + f);
      const bool list = std::string_view(f).ends_with("spatial_dimensions");
      std::optional<int64_t> v = list ? std::nullopt : a->AsInt();
      if ((!list && !v) || (list && !a->AsInts())) {
        return NotPrintable(op, std::string("the convolution field ") + f);
      }
      raw +=
          (first ? "" : ", ") + std::string(f) + " = " + (list ? IntList(a) : std::to_string(*v));
      first = false;
    }
    properties.emplace_back("dimension_numbers", raw + ">");
  } else if (mnemonic == "gather" || mnemonic == "dynamic_gather") {
    KILN_ASSIGN_OR_RETURN(std::string dims,
                          Record(op, "gather",
                                 {"offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                  "start_indices_batching_dims", "start_index_map"},
                                 {"index_vector_dim"}, used));
    properties.emplace_back("dimension_numbers", std::move(dims));
  } else if (mnemonic == "scatter") {
    KILN_ASSIGN_OR_RETURN(
        std::string dims,
        Record(op, "scatter",
               {"update_window_dims", "inserted_window_dims", "input_batching_dims",
                "scatter_indices_batching_dims", "scatter_dims_to_operand_dims"},
               {"index_vector_dim"}, used));
    properties.emplace_back("scatter_dimension_numbers", std::move(dims));
  } else if (mnemonic == "send" || mnemonic == "recv") {
    used.push_back("channel_id");
    used.push_back("channel_type");
    const Attr* id = op.attr("channel_id");
    const Attr* type = op.attr("channel_type");
    properties.emplace_back(
        "channel_handle",
        "#stablehlo.channel_handle<handle = " +
            std::to_string(id != nullptr ? id->AsInt().value_or(0) : 0) +
            ", type = " + std::to_string(type != nullptr ? type->AsInt().value_or(0) : 0) + ">");
  } else if (op.attr("channel_id") != nullptr && stablehlo) {
    used.push_back("channel_id");
    const std::optional<int64_t> id = op.attr("channel_id")->AsInt();
    if (!id) return NotPrintable(op, "channel_id");
    // StableHLO's collectives carry a handle of type DEVICE_TO_DEVICE (1), as JAX writes them.
    if (*id != 0) {
      properties.emplace_back("channel_handle", "#stablehlo.channel_handle<handle = " +
                                                    std::to_string(*id) + ", type = 1>");
    }
  }
  for (const NamedAttr& a : op.attrs) {
    if (std::find(used.begin(), used.end(), a.name) != used.end()) continue;
    if (a.value.is_none()) continue;
    const std::string& n = a.name;
    std::string text;
    if (!stablehlo) {
      KILN_ASSIGN_OR_RETURN(text, Value(a.value), op.name + " " + n);
    } else if (n == "precision_config") {
      KILN_ASSIGN_OR_RETURN(text, Precision(op, a.value));
    } else if (const char* kind = EnumKind(n); kind != nullptr) {
      if (a.value.kind != Attr::Kind::kEnum) return NotPrintable(op, n);
      text = std::string("#stablehlo<") + kind + " " + a.value.str + ">";
    } else if (n == "replica_groups" && a.value.kind != Attr::Kind::kElements) {
      return NotPrintable(op, "replica_groups other than a dense literal");
    } else if (n == "result_accuracy") {
      if (IsDefaultAccuracy(a.value)) continue;
      KILN_ASSIGN_OR_RETURN(text, Accuracy(op, a.value));
    } else if (mnemonic == "custom_call") {
      bool skip = false;
      KILN_ASSIGN_OR_RETURN(text, CustomCallValue(op, a, skip));
      if (skip) continue;
    } else if ((n == "use_global_device_ids" || n == "has_dynamic_root") &&
               a.value.kind == Attr::Kind::kBool) {
      if (!a.value.b) continue;
      properties.emplace_back(n, "");
      continue;
    } else if (n == "source_target_pairs" && IsEmptyList(&a.value) &&
               (mnemonic == "send" || mnemonic == "recv")) {
      continue;
    } else if (a.value.kind == Attr::Kind::kElements) {
      if (IsDenseElementsAttr(n) || a.value.type.rank() != 1 ||
          (!IsInteger(a.value.type.dtype) && a.value.type.dtype != DType::kPred)) {
        KILN_ASSIGN_OR_RETURN(text, Dense(a.value), op.name + " " + n);
      } else {
        KILN_ASSIGN_OR_RETURN(text, DenseArray(a.value), op.name + " " + n);
      }
    } else {
      KILN_ASSIGN_OR_RETURN(text, Value(a.value), op.name + " " + n);
    }
    properties.emplace_back(n, std::move(text));
  }
  for (const NamedAttr& a : op.discardable) {
    KILN_ASSIGN_OR_RETURN(std::string text, Value(a.value), op.name + " " + a.name);
    discardable.emplace_back(a.name, a.value.kind == Attr::Kind::kUnit ? "" : text);
  }
  return Status::Ok();
}

}  // namespace kiln::ir::mlir_text
