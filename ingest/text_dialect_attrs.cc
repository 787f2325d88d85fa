// #stablehlo.* and #sdy.* attributes, as dictionaries and enums shaped like the bytecode reader's
// (ingest/vhlo_attrs.cc, ingest/sdy_attrs.cc).
#include <cctype>

#include "ingest/text_parser.h"

namespace kiln::ingest::text {
namespace {

bool IsEnumKind(std::string_view m) {
  for (std::string_view k :
       {"comparison_direction", "comparison_type", "precision", "fft_type", "rng_algorithm",
        "rng_distribution", "transpose", "result_accuracy_mode", "custom_call_api_version"}) {
    if (m == k) return true;
  }
  return false;
}

ir::Attr Tagged(const char* kind, std::vector<std::pair<std::string, ir::Attr>> fields) {
  fields.insert(fields.begin(), {"sdy", ir::Attr::String(kind)});
  return ir::Attr::Dict(std::move(fields));
}

const ir::Attr* Field(const ir::Attr& dict, std::string_view key) { return dict.Find(key); }

}  // namespace

Status Parser::SkipBalanced(char open, char close) {
  const size_t start = pos_;
  int depth = 0;
  do {
    if (pos_ >= text_.size()) return ErrorAt(start, "unterminated '" + std::string(1, open) + "'");
    if (text_[pos_] == '"') {
      KILN_RETURN_IF_ERROR(ParseStringLiteral().status());
      continue;
    }
    if (text_[pos_] == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '>') {
      pos_ += 2;  // an arrow inside (sharding rules: `([i, j])->([k])`), not a closing '>'
      continue;
    }
    if (text_[pos_] == open) ++depth;
    if (text_[pos_] == close) --depth;
    ++pos_;
  } while (depth > 0);
  return Status::Ok();
}

StatusOr<ir::Attr> Parser::ParseConvDims() {
  // Three bracketed lists; each position names the role of that dimension.
  std::vector<std::pair<std::string, ir::Attr>> out;
  const char* roles[3][2] = {{"b", "f"}, {"i", "o"}, {"b", "f"}};
  const char* prefixes[3] = {"input_", "kernel_", "output_"};
  const char* names[3][2] = {{"batch_dimension", "feature_dimension"},
                             {"input_feature_dimension", "output_feature_dimension"},
                             {"batch_dimension", "feature_dimension"}};
  for (int part = 0; part < 3; ++part) {
    if (part == 1 && !Consume('x'))
      return Error("expected 'x' between convolution dimension lists");
    if (part == 2 && !ConsumeStr("->")) return Error("expected '->' in convolution dimensions");
    KILN_RETURN_IF_ERROR(Expect('[', "to open a convolution dimension list"));
    int64_t first = -1, second = -1;
    std::vector<std::pair<int64_t, int64_t>> spatial;  // (spatial index, position)
    int64_t position = 0;
    if (!Consume(']')) {
      do {
        SkipSpace();
        if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
          KILN_ASSIGN_OR_RETURN(int64_t k, ParseInt("a spatial dimension"));
          spatial.emplace_back(k, position);
        } else {
          KILN_ASSIGN_OR_RETURN(std::string role, ParseBareId("a dimension role"));
          if (role == roles[part][0]) {
            first = position;
          } else if (role == roles[part][1]) {
            second = position;
          } else {
            return Error("unknown convolution dimension '" + role + "'");
          }
        }
        ++position;
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect(']', "to close a convolution dimension list"));
    }
    if (first < 0 || second < 0) return Error("convolution dimensions lack a required role");
    std::vector<int64_t> dims(spatial.size(), -1);
    for (const auto& [k, p] : spatial) {
      if (k < 0 || static_cast<size_t>(k) >= dims.size() || dims[static_cast<size_t>(k)] >= 0) {
        return Error("convolution spatial dimensions must be 0.." +
                     std::to_string(spatial.size() - 1) + ", each once");
      }
      dims[static_cast<size_t>(k)] = p;
    }
    const std::string prefix = prefixes[part];
    out.emplace_back(
        part == 1 ? std::string(names[1][0]).insert(0, "kernel_") : prefix + names[part][0],
        ir::Attr::Int(first));
    out.emplace_back(
        part == 1 ? std::string(names[1][1]).insert(0, "kernel_") : prefix + names[part][1],
        ir::Attr::Int(second));
    out.emplace_back(prefix + "spatial_dimensions", ir::Attr::IntArray(dims));
  }
  return ir::Attr::Dict(std::move(out));
}

StatusOr<ir::Attr> Parser::ParseStablehloAttr(std::string_view mnemonic) {
  const std::string what = "#stablehlo." + std::string(mnemonic);
  if (IsEnumKind(mnemonic)) {
    KILN_RETURN_IF_ERROR(Expect('<', "after " + what));
    KILN_ASSIGN_OR_RETURN(std::string value, ParseBareId("a value of " + what));
    KILN_RETURN_IF_ERROR(Expect('>', "to close " + what));
    return ir::Attr::Enum(std::move(value));
  }
  if (mnemonic == "conv") {
    KILN_RETURN_IF_ERROR(Expect('<', "after " + what));
    ir::Attr dims;
    if (ConsumeKeyword("raw")) {
      std::vector<std::pair<std::string, ir::Attr>> fields;
      do {
        KILN_ASSIGN_OR_RETURN(std::string key, ParseBareId("a field of #stablehlo.conv"));
        KILN_RETURN_IF_ERROR(Expect('=', "after " + key));
        if (Peek() == '[') {
          KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, ParseIntListBrackets());
          fields.emplace_back(key, ir::Attr::IntArray(v));
        } else {
          KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt("an integer"));
          fields.emplace_back(key, ir::Attr::Int(v));
        }
      } while (Consume(','));
      dims = ir::Attr::Dict(std::move(fields));
    } else {
      KILN_ASSIGN_OR_RETURN(dims, ParseConvDims());
    }
    KILN_RETURN_IF_ERROR(Expect('>', "to close " + what));
    return dims;
  }
  if (mnemonic == "dot" || mnemonic == "gather" || mnemonic == "scatter" ||
      mnemonic == "channel_handle" || mnemonic == "dot_algorithm") {
    return ParseStructuredBody(what);
  }
  if (mnemonic == "output_operand_alias") {
    KILN_ASSIGN_OR_RETURN(ir::Attr body, ParseStructuredBody(what));
    auto get = [&](const char* key, ir::Attr fallback) {
      const ir::Attr* f = Field(body, key);
      return f != nullptr ? *f : fallback;
    };
    return ir::Attr::Dict(
        {{"output_tuple_indices", get("output_tuple_indices", ir::Attr::IntArray({}))},
         {"operand_index", get("operand_index", ir::Attr::Int(0))},
         {"operand_tuple_indices", get("operand_tuple_indices", ir::Attr::IntArray({}))}});
  }
  if (mnemonic == "result_accuracy") {
    KILN_ASSIGN_OR_RETURN(ir::Attr body, ParseStructuredBody(what));
    auto as_double = [&](const char* key) {
      const ir::Attr* f = Field(body, key);
      if (f == nullptr) return 0.0;
      return f->kind == ir::Attr::Kind::kFloat ? f->f : static_cast<double>(f->i);
    };
    const ir::Attr* ulps = Field(body, "ulps");
    const ir::Attr* mode = Field(body, "mode");
    return ir::Attr::Dict({{"atol", ir::Attr::Float(as_double("atol"))},
                           {"rtol", ir::Attr::Float(as_double("rtol"))},
                           {"ulps", ir::Attr::Int(ulps != nullptr ? ulps->i : 0)},
                           {"mode", mode != nullptr ? *mode : ir::Attr::Enum("DEFAULT")}});
  }
  if (mnemonic == "bounds" || mnemonic == "type_extensions") {
    if (Peek() == '<') KILN_RETURN_IF_ERROR(SkipBalanced('<', '>'));
    return ir::Attr::Opaque(what);
  }
  return Error("unknown attribute " + what);
}

StatusOr<ir::Attr> Parser::ParseSdyAxisList() {
  KILN_RETURN_IF_ERROR(Expect('{', "to open a list of mesh axes"));
  std::vector<ir::Attr> axes;
  bool open = false;
  if (!Consume('}')) {
    do {
      if (Consume('?')) {
        open = true;
        continue;
      }
      KILN_ASSIGN_OR_RETURN(std::string name, ParseStringLiteral());
      std::vector<std::pair<std::string, ir::Attr>> fields = {{"name", ir::Attr::String(name)}};
      if (Consume(':')) {  // sub-axis "x":(pre)size
        KILN_RETURN_IF_ERROR(Expect('(', "to open a sub-axis"));
        KILN_ASSIGN_OR_RETURN(int64_t pre, ParseInt("a sub-axis pre-size"));
        KILN_RETURN_IF_ERROR(Expect(')', "to close a sub-axis pre-size"));
        KILN_ASSIGN_OR_RETURN(int64_t size, ParseInt("a sub-axis size"));
        fields.emplace_back("sub_axis_info",
                            Tagged("sub_axis_info", {{"pre_size", ir::Attr::Int(pre)},
                                                     {"size", ir::Attr::Int(size)}}));
      }
      axes.push_back(Tagged("axis_ref", std::move(fields)));
    } while (Consume(','));
    KILN_RETURN_IF_ERROR(Expect('}', "to close a list of mesh axes"));
  }
  ir::Attr out = ir::Attr::Array(std::move(axes));
  out.b = open;
  return out;
}

StatusOr<ir::Attr> Parser::ParseSdySharding() {
  KILN_RETURN_IF_ERROR(Expect('<', "to open a sharding"));
  ir::Attr mesh;
  if (Peek() == '@') {
    KILN_ASSIGN_OR_RETURN(std::string name, ParseSymbolName());
    mesh = ir::Attr::SymbolRef(std::move(name));
  } else {
    KILN_ASSIGN_OR_RETURN(mesh, ParseAttr());
  }
  KILN_RETURN_IF_ERROR(Expect(',', "after the sharding's mesh"));
  KILN_RETURN_IF_ERROR(Expect('[', "to open the dimension shardings"));
  std::vector<ir::Attr> dims;
  if (!Consume(']')) {
    do {
      KILN_ASSIGN_OR_RETURN(ir::Attr axes, ParseSdyAxisList());
      const bool open = axes.b;
      axes.b = false;
      std::vector<std::pair<std::string, ir::Attr>> fields = {{"axes", std::move(axes)},
                                                              {"closed", ir::Attr::Bool(!open)}};
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == 'p') {
        ++pos_;
        KILN_ASSIGN_OR_RETURN(int64_t priority, ParseInt("a priority"));
        fields.emplace_back("priority", ir::Attr::Int(priority));
      }
      dims.push_back(Tagged("dim_sharding", std::move(fields)));
    } while (Consume(','));
    KILN_RETURN_IF_ERROR(Expect(']', "to close the dimension shardings"));
  }
  ir::Attr replicated = ir::Attr::Array({}), unreduced = ir::Attr::Array({});
  while (Consume(',')) {
    KILN_ASSIGN_OR_RETURN(std::string key, ParseBareId("replicated= or unreduced="));
    KILN_RETURN_IF_ERROR(Expect('=', "after " + key));
    KILN_ASSIGN_OR_RETURN(ir::Attr axes, ParseSdyAxisList());
    axes.b = false;
    if (key == "replicated") {
      replicated = std::move(axes);
    } else if (key == "unreduced") {
      unreduced = std::move(axes);
    } else {
      return Error("unknown sharding field '" + key + "'");
    }
  }
  KILN_RETURN_IF_ERROR(Expect('>', "to close a sharding"));
  return Tagged("sharding", {{"mesh", std::move(mesh)},
                             {"dims", ir::Attr::Array(std::move(dims))},
                             {"replicated", std::move(replicated)},
                             {"unreduced", std::move(unreduced)}});
}

StatusOr<ir::Attr> Parser::ParseSdyAttr(std::string_view mnemonic) {
  if (mnemonic == "mesh") {
    KILN_RETURN_IF_ERROR(Expect('<', "after #sdy.mesh"));
    std::vector<ir::Attr> axes;
    std::vector<int64_t> device_ids;
    if (Peek() == '[') {
      ++pos_;
      if (!Consume(']')) {
        do {
          KILN_ASSIGN_OR_RETURN(std::string name, ParseStringLiteral());
          KILN_RETURN_IF_ERROR(Expect('=', "after a mesh axis name"));
          KILN_ASSIGN_OR_RETURN(int64_t size, ParseInt("a mesh axis size"));
          axes.push_back(Tagged("mesh_axis",
                                {{"name", ir::Attr::String(name)}, {"size", ir::Attr::Int(size)}}));
        } while (Consume(','));
        KILN_RETURN_IF_ERROR(Expect(']', "to close the mesh axes"));
      }
      Consume(',');
    }
    if (ConsumeKeyword("device_ids")) {
      KILN_RETURN_IF_ERROR(Expect('=', "after device_ids"));
      KILN_ASSIGN_OR_RETURN(device_ids, ParseIntListBrackets());
    }
    KILN_RETURN_IF_ERROR(Expect('>', "to close #sdy.mesh"));
    return Tagged("mesh", {{"axes", ir::Attr::Array(std::move(axes))},
                           {"device_ids", ir::Attr::IntArray(device_ids)}});
  }
  if (mnemonic == "sharding") return ParseSdySharding();
  if (mnemonic == "sharding_per_value") {
    KILN_RETURN_IF_ERROR(Expect('<', "after #sdy.sharding_per_value"));
    KILN_RETURN_IF_ERROR(Expect('[', "to open the shardings"));
    std::vector<ir::Attr> shardings;
    if (!Consume(']')) {
      do {
        KILN_ASSIGN_OR_RETURN(ir::Attr s, ParseSdySharding());
        shardings.push_back(std::move(s));
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect(']', "to close the shardings"));
    }
    KILN_RETURN_IF_ERROR(Expect('>', "to close #sdy.sharding_per_value"));
    return Tagged("sharding_per_value", {{"shardings", ir::Attr::Array(std::move(shardings))}});
  }
  if (mnemonic == "manual_axes") {
    // `#sdy.manual_axes<{...}>`, or the body alone inside `#sdy<manual_axes{...}>`.
    const bool angled = Consume('<');
    KILN_RETURN_IF_ERROR(Expect('{', "to open the manual axes"));
    std::vector<ir::Attr> axes;
    if (!Consume('}')) {
      do {
        KILN_ASSIGN_OR_RETURN(std::string name, ParseStringLiteral());
        axes.push_back(ir::Attr::String(std::move(name)));
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect('}', "to close the manual axes"));
    }
    if (angled) KILN_RETURN_IF_ERROR(Expect('>', "to close #sdy.manual_axes"));
    return Tagged("manual_axes", {{"axes", ir::Attr::Array(std::move(axes))}});
  }
  // Other Shardy attributes (sharding rules, ...) are not interpreted: kept opaque.
  const size_t start = pos_;
  if (Peek() == '<') KILN_RETURN_IF_ERROR(SkipBalanced('<', '>'));
  return ir::Attr::Opaque("#sdy." + std::string(mnemonic) +
                          std::string(text_.substr(start, pos_ - start)));
}

}  // namespace kiln::ingest::text
