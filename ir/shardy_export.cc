// ExportShardyForHlo (ir/shardy_export.h).
#include "ir/shardy_export.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kiln::ir {
namespace {

struct Mesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> device_ids;  // empty: iota
};

Status NoGspmdForm(const std::string& what) {
  return Unimplemented(what + " has no GSPMD form Kiln writes for jaxlib");
}

StatusOr<Mesh> MeshOf(const Attr& mesh) {
  Mesh out;
  const Attr* axes = mesh.Find("axes");
  if (axes == nullptr || axes->kind != Attr::Kind::kArray)
    return NoGspmdForm("a mesh without axes");
  for (const Attr& axis : axes->array) {
    const Attr* name = axis.Find("name");
    const Attr* size = axis.Find("size");
    if (name == nullptr || size == nullptr || size->i < 1)
      return NoGspmdForm("a malformed mesh axis");
    out.names.push_back(name->str);
    out.sizes.push_back(size->i);
  }
  if (const Attr* ids = mesh.Find("device_ids"); ids != nullptr) {
    std::optional<std::vector<int64_t>> v = ids->AsInts();
    if (!v) return NoGspmdForm("mesh device ids");
    out.device_ids = *v;
  }
  return out;
}

StatusOr<Mesh> LookUpMesh(const Attr& ref, const std::vector<Op>& meshes) {
  if (ref.kind == Attr::Kind::kDict) return MeshOf(ref);
  if (ref.kind != Attr::Kind::kSymbolRef) return NoGspmdForm("a sharding without a mesh");
  for (const Op& op : meshes) {
    const Attr* name = op.attr("sym_name");
    const Attr* mesh = op.attr("mesh");
    if (op.name == "sdy.mesh" && name != nullptr && name->str == ref.str && mesh != nullptr) {
      return MeshOf(*mesh);
    }
  }
  return NoGspmdForm("a sharding on the undefined mesh @" + ref.str);
}

std::string Joined(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

StatusOr<std::vector<size_t>> AxesOf(const Attr& list, const Mesh& mesh) {
  std::vector<size_t> out;
  for (const Attr& ref : list.array) {
    if (ref.Find("sub_axis_info") != nullptr) return NoGspmdForm("a sharding over a sub-axis");
    const Attr* name = ref.Find("name");
    if (name == nullptr) return NoGspmdForm("a malformed axis reference");
    auto it = std::find(mesh.names.begin(), mesh.names.end(), name->str);
    if (it == mesh.names.end()) return NoGspmdForm("a sharding over the unknown axis " + name->str);
    out.push_back(static_cast<size_t>(it - mesh.names.begin()));
  }
  return out;
}

constexpr char kManual[] = "{manual}";

}  // namespace

StatusOr<std::string> GspmdShardingText(const Attr& sharding, int64_t rank,
                                        const std::vector<Op>& meshes) {
  const Attr* mesh_ref = sharding.Find("mesh");
  const Attr* dims = sharding.Find("dims");
  if (mesh_ref == nullptr || dims == nullptr || dims->kind != Attr::Kind::kArray) {
    return NoGspmdForm("a malformed sdy sharding");
  }
  if (const Attr* u = sharding.Find("unreduced"); u != nullptr && !u->array.empty()) {
    return NoGspmdForm("a sharding with unreduced axes");
  }
  KILN_ASSIGN_OR_RETURN(Mesh mesh, LookUpMesh(*mesh_ref, meshes));
  if (mesh.names.empty()) {
    if (mesh.device_ids.size() == 1) {
      return "{maximal device=" + std::to_string(mesh.device_ids[0]) + "}";
    }
    return std::string("{replicated}");
  }
  if (static_cast<int64_t>(dims->array.size()) != rank) {
    return NoGspmdForm("a sharding of " + std::to_string(dims->array.size()) +
                       " dimensions on a rank-" + std::to_string(rank) + " value");
  }
  std::vector<size_t> order;  // mesh axes in tile order: each dimension's, then the rest
  std::vector<int64_t> tile;
  std::set<size_t> used;
  for (const Attr& dim : dims->array) {
    const Attr* axes = dim.Find("axes");
    if (axes == nullptr) return NoGspmdForm("a malformed dimension sharding");
    KILN_ASSIGN_OR_RETURN(std::vector<size_t> ids, AxesOf(*axes, mesh));
    int64_t size = 1;
    for (size_t a : ids) {
      if (!used.insert(a).second)
        return NoGspmdForm("a sharding using axis " + mesh.names[a] + " twice");
      size *= mesh.sizes[a];
      order.push_back(a);
    }
    tile.push_back(size);
  }
  int64_t replicated = 1;
  for (size_t a = 0; a < mesh.names.size(); ++a) {
    if (used.count(a) == 0) {
      order.push_back(a);
      replicated *= mesh.sizes[a];
    }
  }
  if (std::all_of(tile.begin(), tile.end(), [](int64_t t) { return t == 1; })) {
    return std::string("{replicated}");
  }
  std::vector<int64_t> tile_dims = tile;
  if (replicated > 1) tile_dims.push_back(replicated);
  std::string devices;
  const int64_t total = std::accumulate(mesh.sizes.begin(), mesh.sizes.end(), int64_t{1},
                                        [](int64_t a, int64_t b) { return a * b; });
  bool iota = mesh.device_ids.empty();
  if (!iota) {
    if (static_cast<int64_t>(mesh.device_ids.size()) != total) {
      return NoGspmdForm("a mesh of " + std::to_string(total) + " devices with " +
                         std::to_string(mesh.device_ids.size()) + " device ids");
    }
    iota = true;
    for (int64_t i = 0; i < total; ++i) iota = iota && mesh.device_ids[static_cast<size_t>(i)] == i;
  }
  if (iota) {
    // Axes of size 1 do not change the order; the rest are transposed into tile order.
    std::vector<int64_t> shape, perm;
    std::vector<int64_t> position(mesh.names.size(), -1);
    for (size_t a = 0; a < mesh.names.size(); ++a) {
      if (mesh.sizes[a] > 1) {
        position[a] = static_cast<int64_t>(shape.size());
        shape.push_back(mesh.sizes[a]);
      }
    }
    for (size_t a : order) {
      if (position[a] >= 0) perm.push_back(position[a]);
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity = identity && perm[i] == static_cast<int64_t>(i);
    devices = identity ? "<=[" + std::to_string(total) + "]"
                       : "<=[" + Joined(shape) + "]T(" + Joined(perm) + ")";
  } else {
    // Explicit devices: the mesh's device ids (row-major over its axes) transposed to tile order.
    std::vector<int64_t> strides(mesh.sizes.size(), 1);
    for (size_t a = mesh.sizes.size(); a-- > 1;) strides[a - 1] = strides[a] * mesh.sizes[a];
    std::vector<int64_t> index(order.size(), 0), list;
    for (int64_t n = 0; n < total; ++n) {
      int64_t source = 0;
      for (size_t k = 0; k < order.size(); ++k) source += index[k] * strides[order[k]];
      list.push_back(mesh.device_ids[static_cast<size_t>(source)]);
      for (size_t k = order.size(); k-- > 0;) {
        if (++index[k] < mesh.sizes[order[k]]) break;
        index[k] = 0;
      }
    }
    devices = Joined(list);
  }
  return "{devices=[" + Joined(tile_dims) + "]" + devices +
         (replicated > 1 ? " last_tile_dim_replicate}" : "}");
}

namespace {

class Exporter {
 public:
  explicit Exporter(Module& module) : m_(module) {
    for (const Op& op : module.other_ops) {
      if (op.name == "sdy.mesh") meshes_.push_back(op);
    }
  }

  Status Run() {
    std::vector<Op> kept;
    for (Op& op : m_.other_ops) {
      if (op.name == "sdy.mesh") continue;
      if (op.name.starts_with("sdy.")) return NoGspmdForm(op.name);
      kept.push_back(std::move(op));
    }
    m_.other_ops = std::move(kept);
    // Functions added for manual computations are appended and converted in turn.
    for (size_t f = 0; f < m_.functions.size(); ++f) {
      for (size_t i = 0; i < m_.functions[f].arg_types.size(); ++i) {
        if (i < m_.functions[f].arg_attrs.size()) {
          KILN_RETURN_IF_ERROR(
              ConvertValueAttrs(m_.functions[f].arg_attrs[i], m_.functions[f].arg_types[i]));
        }
      }
      for (size_t i = 0; i < m_.functions[f].result_types.size(); ++i) {
        if (i < m_.functions[f].result_attrs.size()) {
          KILN_RETURN_IF_ERROR(
              ConvertValueAttrs(m_.functions[f].result_attrs[i], m_.functions[f].result_types[i]));
        }
      }
      Region body = std::move(m_.functions[f].body);
      for (Block& block : body.blocks) KILN_RETURN_IF_ERROR(ConvertBlock(block, 0));
      m_.functions[f].body = std::move(body);
    }
    return Status::Ok();
  }

 private:
  // An argument's or result's attribute dictionary: sdy.sharding -> mhlo.sharding.
  Status ConvertValueAttrs(Attr& attrs, const Type& type) {
    if (attrs.kind != Attr::Kind::kDict) return Status::Ok();
    std::vector<std::pair<std::string, Attr>> out;
    for (auto& [key, value] : attrs.dict) {
      if (key == "sdy.sharding") {
        KILN_ASSIGN_OR_RETURN(std::string text, GspmdShardingText(value, type.rank(), meshes_));
        out.emplace_back("mhlo.sharding", Attr::String(std::move(text)));
      } else if (!key.starts_with("sdy.")) {
        out.emplace_back(std::move(key), std::move(value));
      }
    }
    attrs.dict = std::move(out);
    return Status::Ok();
  }

  Op CustomCall(const char* target, ValueId operand, ValueId result, std::string sharding,
                int32_t loc) {
    Op op;
    op.name = "stablehlo.custom_call";
    op.operands = {operand};
    op.results = {result};
    op.loc = loc;
    op.attrs = {{"api_version", Attr::Enum("API_VERSION_ORIGINAL")},
                {"backend_config", Attr::String("")},
                {"call_target_name", Attr::String(target)},
                {"called_computations", Attr::Array({})},
                {"has_side_effect", Attr::Bool(false)},
                {"operand_layouts", Attr::Array({})},
                {"output_operand_aliases", Attr::Array({})},
                {"result_layouts", Attr::Array({})}};
    op.discardable = {{"mhlo.sharding", Attr::String(std::move(sharding))}};
    return op;
  }

  std::string FreshFunctionName() {
    for (;;) {
      std::string name = "shmap_body" + (next_body_ == 0 ? "" : "_" + std::to_string(next_body_));
      ++next_body_;
      if (m_.FindFunction(name) == nullptr) return name;
    }
  }

  Status ConvertBlock(Block& block, int depth) {
    if (depth > kMaxNestingDepth) return ResourceExhausted("regions nest too deeply");
    std::vector<Op> out;
    out.reserve(block.ops.size());
    for (Op& op : block.ops) {
      for (Region& region : op.regions) {
        for (Block& inner : region.blocks) KILN_RETURN_IF_ERROR(ConvertBlock(inner, depth + 1));
      }
      if (op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard") {
        const Attr* sharding = op.attr("sharding");
        if (sharding == nullptr || op.operands.size() != 1 || op.results.size() != 1) {
          return NoGspmdForm("a malformed " + op.name);
        }
        KILN_ASSIGN_OR_RETURN(
            std::string text,
            GspmdShardingText(*sharding, m_.type_of(op.operands[0]).rank(), meshes_), op.name);
        out.push_back(
            CustomCall("Sharding", op.operands[0], op.results[0], std::move(text), op.loc));
        continue;
      }
      if (op.name == "sdy.manual_computation") {
        KILN_RETURN_IF_ERROR(ConvertManual(op, out).WithContext(op.name));
        continue;
      }
      // sdy.return ends a manual computation's body, which ConvertManual makes a function.
      if (op.name.starts_with("sdy.") && op.name != "sdy.return") return NoGspmdForm(op.name);
      KILN_RETURN_IF_ERROR(ConvertOpAttrs(op));
      out.push_back(std::move(op));
    }
    block.ops = std::move(out);
    return Status::Ok();
  }

  // sdy.sharding (one sharding per result) -> mhlo.sharding; other sdy.* attributes dropped.
  Status ConvertOpAttrs(Op& op) {
    std::vector<NamedAttr> kept;
    for (NamedAttr& a : op.discardable) {
      if (a.name == "sdy.sharding") {
        const Attr* list = a.value.Find("shardings");
        if (list == nullptr || list->array.size() != op.results.size()) {
          return NoGspmdForm("an sdy.sharding of " + op.name + " that does not match its results");
        }
        std::vector<std::string> texts;
        for (size_t i = 0; i < op.results.size(); ++i) {
          KILN_ASSIGN_OR_RETURN(
              std::string text,
              GspmdShardingText(list->array[i], m_.type_of(op.results[i]).rank(), meshes_),
              op.name);
          texts.push_back(std::move(text));
        }
        std::string text = texts.size() == 1 ? texts[0] : "{";
        if (texts.size() != 1) {
          for (size_t i = 0; i < texts.size(); ++i) text += (i ? ", " : "") + texts[i];
          text += "}";
        }
        kept.push_back({"mhlo.sharding", Attr::String(std::move(text))});
      } else if (!a.name.starts_with("sdy.")) {
        kept.push_back(std::move(a));
      }
    }
    op.discardable = std::move(kept);
    return Status::Ok();
  }

  Status ConvertManual(Op& op, std::vector<Op>& out) {
    const Attr* in = op.attr("in_shardings");
    const Attr* outs = op.attr("out_shardings");
    const Attr* manual = op.attr("manual_axes");
    const Attr* in_list = in != nullptr ? in->Find("shardings") : nullptr;
    const Attr* out_list = outs != nullptr ? outs->Find("shardings") : nullptr;
    const Attr* manual_list = manual != nullptr ? manual->Find("axes") : nullptr;
    if (in_list == nullptr || out_list == nullptr || manual_list == nullptr ||
        op.regions.size() != 1 || op.regions[0].blocks.size() != 1 ||
        in_list->array.size() != op.operands.size() ||
        out_list->array.size() != op.results.size()) {
      return NoGspmdForm("a malformed sdy.manual_computation");
    }
    Block& body = op.regions[0].blocks[0];
    if (body.args.size() != op.operands.size() || body.ops.empty() ||
        body.ops.back().name != "sdy.return" ||
        body.ops.back().operands.size() != op.results.size()) {
      return NoGspmdForm("a malformed sdy.manual_computation body");
    }
    // GSPMD's manual sharding is over every device: the computation must be manual in every axis
    // of its mesh that has more than one device.
    const Attr* some = !in_list->array.empty()    ? &in_list->array[0]
                       : !out_list->array.empty() ? &out_list->array[0]
                                                  : nullptr;
    if (some != nullptr && some->Find("mesh") != nullptr) {
      KILN_ASSIGN_OR_RETURN(Mesh mesh, LookUpMesh(*some->Find("mesh"), meshes_));
      for (size_t a = 0; a < mesh.names.size(); ++a) {
        const bool listed = std::any_of(manual_list->array.begin(), manual_list->array.end(),
                                        [&](const Attr& x) { return x.str == mesh.names[a]; });
        if (mesh.sizes[a] > 1 && !listed) {
          return NoGspmdForm("a manual computation over part of the mesh (axis " + mesh.names[a] +
                             " stays automatic)");
        }
      }
    }
    Function fn;
    fn.name = FreshFunctionName();
    fn.visibility = "private";
    fn.loc = op.loc;
    for (ValueId v : body.args) fn.arg_types.push_back(m_.type_of(v));
    for (ValueId v : body.ops.back().operands) fn.result_types.push_back(m_.type_of(v));
    fn.arg_attrs.assign(fn.arg_types.size(), Attr::None());
    fn.result_attrs.assign(fn.result_types.size(), Attr::None());
    body.ops.back().name = "func.return";
    Op call;
    call.name = "func.call";
    call.loc = op.loc;
    call.attrs = {{"callee", Attr::SymbolRef(fn.name)}};
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const ValueId global = op.operands[i];
      KILN_ASSIGN_OR_RETURN(
          std::string text,
          GspmdShardingText(in_list->array[i], m_.type_of(global).rank(), meshes_));
      const ValueId sharded = m_.AddValue(m_.type_of(global));
      const ValueId local = m_.AddValue(fn.arg_types[i]);
      out.push_back(CustomCall("Sharding", global, sharded, std::move(text), op.loc));
      out.push_back(CustomCall("SPMDFullToShardShape", sharded, local, kManual, op.loc));
      call.operands.push_back(local);
    }
    std::vector<ValueId> locals;
    for (const Type& t : fn.result_types) {
      locals.push_back(m_.AddValue(t));
      call.results.push_back(locals.back());
    }
    out.push_back(std::move(call));
    for (size_t j = 0; j < op.results.size(); ++j) {
      KILN_ASSIGN_OR_RETURN(
          std::string text,
          GspmdShardingText(out_list->array[j], m_.type_of(op.results[j]).rank(), meshes_));
      const ValueId marked = m_.AddValue(fn.result_types[j]);
      out.push_back(CustomCall("Sharding", locals[j], marked, kManual, op.loc));
      out.push_back(
          CustomCall("SPMDShardToFullShape", marked, op.results[j], std::move(text), op.loc));
    }
    fn.body.blocks.push_back(std::move(body));
    m_.functions.push_back(std::move(fn));
    return Status::Ok();
  }

  Module& m_;
  std::vector<Op> meshes_;
  int next_body_ = 0;
};

}  // namespace

StatusOr<Module> ExportShardyForHlo(const Module& module) {
  Module copy = module;
  KILN_RETURN_IF_ERROR(Exporter(copy).Run());
  return copy;
}

}  // namespace kiln::ir
