#include "compiler/spmd_partitioner.h"

#include <cstdlib>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/partition.h"
#include "compiler/spmd_rewriter.h"
#include "compiler/verifier.h"

namespace kiln::compiler {
namespace {

using lower::TensorSharding;
using spmd::Local;
using spmd::Rewriter;

constexpr int kMaxCallDepth = 16;

bool SplitsNothing(const TensorSharding& s) {
  for (const auto& refs : s.dims) {
    if (!refs.empty()) return false;
  }
  return true;
}

// Walks @main (and the functions it calls, inlined) in order, giving every value its local form.
class Walker {
 public:
  Walker(Rewriter& rw, const lower::MeshTable& meshes) : rw_(rw), meshes_(meshes) {}

  void Bind(ir::ValueId original, Local local) { map_[original] = std::move(local); }

  StatusOr<Local> Get(ir::ValueId v) const {
    auto it = map_.find(v);
    if (it == map_.end()) return Unimplemented("a value defined outside the walked code");
    return it->second;
  }

  // Every op of `block` but its terminator.
  Status Walk(const ir::Block& block, int depth) {
    for (const ir::Op& op : block.ops) {
      if (op.name == "func.return") break;
      KILN_RETURN_IF_ERROR(Visit(op, depth));
    }
    return Status::Ok();
  }

 private:
  // `s` normalized: one that splits nothing is on the program's mesh.
  TensorSharding Normal(const TensorSharding& s, size_t rank) const {
    return SplitsNothing(s) ? rw_.Replicated(rank) : s;
  }

  Status Visit(const ir::Op& op, int depth) {
    ir::Module& m = rw_.module();
    if (op.name == "func.call") {
      const ir::Attr* callee_attr = op.attr("callee");
      const ir::Function* callee =
          callee_attr != nullptr ? m.FindFunction(callee_attr->str) : nullptr;
      if (callee == nullptr || callee->body.blocks.size() != 1 || depth >= kMaxCallDepth) {
        return Unimplemented("a call the partitioner does not inline");
      }
      const ir::Block& body = callee->body.blocks[0];
      if (body.args.size() != op.operands.size() || body.ops.empty() ||
          body.ops.back().name != "func.return" ||
          body.ops.back().operands.size() != op.results.size()) {
        return Unimplemented("a malformed call");
      }
      for (size_t k = 0; k < op.operands.size(); ++k) {
        KILN_ASSIGN_OR_RETURN(Local l, Get(op.operands[k]));
        Bind(body.args[k], std::move(l));
      }
      KILN_RETURN_IF_ERROR(Walk(body, depth + 1));
      for (size_t k = 0; k < op.results.size(); ++k) {
        KILN_ASSIGN_OR_RETURN(Local l, Get(body.ops.back().operands[k]));
        Bind(op.results[k], std::move(l));
      }
      return Status::Ok();
    }
    if ((op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard") &&
        op.operands.size() == 1 && op.results.size() == 1) {
      const ir::Attr* attr = op.attr("sharding");
      if (attr == nullptr) return Unimplemented("a constraint without a sharding");
      const ir::Type type = m.type_of(op.results[0]);
      KILN_ASSIGN_OR_RETURN(TensorSharding s,
                            lower::ParseSharding(*attr, meshes_, type, "sharding constraint"));
      KILN_ASSIGN_OR_RETURN(Local x, Get(op.operands[0]));
      KILN_ASSIGN_OR_RETURN(Local r, rw_.Reshard(x, Normal(s, type.dims.size())));
      Bind(op.results[0], std::move(r));
      return Status::Ok();
    }
    if (op.name == "builtin.unrealized_conversion_cast" && op.operands.size() == 1 &&
        op.results.size() == 1 && m.type_of(op.operands[0]) == m.type_of(op.results[0])) {
      KILN_ASSIGN_OR_RETURN(Local x, Get(op.operands[0]));
      Bind(op.results[0], std::move(x));
      return Status::Ok();
    }
    std::vector<Local> operands;
    for (ir::ValueId v : op.operands) {
      KILN_ASSIGN_OR_RETURN(Local l, Get(v));
      operands.push_back(std::move(l));
    }
    spmd::CloneFn clone = [this](const ir::Op& original, std::vector<ir::ValueId> values,
                                 std::vector<ir::Type> types) {
      return Clone(original, std::move(values), std::move(types));
    };
    KILN_ASSIGN_OR_RETURN(std::vector<Local> results, spmd::ApplyRule(rw_, op, operands, clone));
    for (size_t k = 0; k < op.results.size() && k < results.size(); ++k) {
      Bind(op.results[k], std::move(results[k]));
    }
    return Status::Ok();
  }

  // A copy of `op` appended to the body: the given operands and result types, its regions copied
  // with fresh values (values they take from outside must be whole on every device).
  StatusOr<std::vector<ir::ValueId>> Clone(const ir::Op& op, std::vector<ir::ValueId> operands,
                                           std::vector<ir::Type> types) {
    ir::Module& m = rw_.module();
    ir::Op copy;
    copy.name = op.name;
    copy.attrs = op.attrs;
    copy.discardable = op.discardable;
    copy.loc = op.loc;
    copy.foreign = op.foreign;
    copy.operands = std::move(operands);
    for (ir::Type& t : types) copy.results.push_back(m.AddValue(std::move(t)));
    std::unordered_map<ir::ValueId, ir::ValueId> inner;
    for (const ir::Region& region : op.regions) {
      KILN_ASSIGN_OR_RETURN(ir::Region r, CloneRegion(region, inner, 0));
      copy.regions.push_back(std::move(r));
    }
    return rw_.Append(std::move(copy)).results;
  }

  StatusOr<ir::Region> CloneRegion(const ir::Region& region,
                                   std::unordered_map<ir::ValueId, ir::ValueId>& inner, int depth) {
    if (depth > 64) return Unimplemented("regions nested too deeply");
    ir::Module& m = rw_.module();
    ir::Region out;
    for (const ir::Block& block : region.blocks) {
      ir::Block& b = out.blocks.emplace_back();
      for (ir::ValueId a : block.args) {
        const ir::Type t = m.type_of(a);
        b.args.push_back(inner[a] = m.AddValue(t));
      }
      for (const ir::Op& op : block.ops) {
        ir::Op copy = op;
        copy.regions.clear();
        for (ir::ValueId& v : copy.operands) {
          auto it = inner.find(v);
          if (it != inner.end()) {
            v = it->second;
            continue;
          }
          KILN_ASSIGN_OR_RETURN(Local outer, Get(v));
          if (!SplitsNothing(outer.sharding)) {
            return Unimplemented("a region that takes a split value from outside");
          }
          v = outer.value;
        }
        for (ir::ValueId& v : copy.results) {
          const ir::Type t = m.type_of(v);
          v = inner[v] = m.AddValue(t);
        }
        for (const ir::Region& r : op.regions) {
          KILN_ASSIGN_OR_RETURN(ir::Region cloned, CloneRegion(r, inner, depth + 1));
          copy.regions.push_back(std::move(cloned));
        }
        b.ops.push_back(std::move(copy));
      }
    }
    return out;
  }

  Rewriter& rw_;
  const lower::MeshTable& meshes_;
  std::unordered_map<ir::ValueId, Local> map_;
};

ir::Attr ShardingList(const Rewriter& rw, const std::vector<lower::ValueLayout>& values) {
  std::vector<ir::Attr> list;
  for (const lower::ValueLayout& v : values) {
    list.push_back(rw.ShardingAttr(SplitsNothing(v.sharding) ? rw.Replicated(v.global.dims.size())
                                                             : v.sharding));
  }
  return ir::Attr::Dict({{"sdy", ir::Attr::String("sharding_per_value")},
                         {"shardings", ir::Attr::Array(std::move(list))}});
}

// `attrs` (a dictionary or none) with `sdy.sharding` set to `sharding`.
void SetSharding(ir::Attr& attrs, ir::Attr sharding) {
  if (attrs.kind != ir::Attr::Kind::kDict) attrs = ir::Attr::Dict({});
  for (auto& [key, value] : attrs.dict) {
    if (key == "sdy.sharding") {
      value = std::move(sharding);
      return;
    }
  }
  attrs.dict.emplace_back("sdy.sharding", std::move(sharding));
}

// The per-device @main of `out` (a copy of the program), or UNIMPLEMENTED naming what has no rule.
Status Rewrite(ir::Module& out, ir::Function& fn, const lower::SpmdLayout& layout,
               const lower::Mesh& mesh, const lower::MeshTable& meshes) {
  ir::Block& main_block = fn.body.blocks[0];
  if (main_block.ops.empty() || main_block.args.size() != layout.args.size()) {
    return Unimplemented("@main without a body");
  }
  ir::Block body;
  Rewriter rw(out, mesh, body);
  for (const auto* values : {&layout.args, &layout.results}) {
    for (const lower::ValueLayout& v : *values) {
      if (!rw.Usable(v.sharding)) return Unimplemented("a boundary sharding");
    }
  }
  Walker walker(rw, meshes);
  for (size_t i = 0; i < main_block.args.size(); ++i) {
    const lower::ValueLayout& v = layout.args[i];
    TensorSharding s = SplitsNothing(v.sharding) ? rw.Replicated(v.global.dims.size()) : v.sharding;
    const ir::ValueId local = out.AddValue(Rewriter::LocalType(v.global, s));
    body.args.push_back(local);
    walker.Bind(main_block.args[i], {local, std::move(s)});
  }
  KILN_RETURN_IF_ERROR(walker.Walk(main_block, 0));
  const ir::Op ret = main_block.ops.back();
  if (ret.name != "func.return" || ret.operands.size() != layout.results.size()) {
    return Unimplemented("@main without a return of its results");
  }
  ir::Op sdy_return;
  sdy_return.name = "sdy.return";
  sdy_return.foreign = true;
  for (size_t k = 0; k < ret.operands.size(); ++k) {
    const lower::ValueLayout& v = layout.results[k];
    KILN_ASSIGN_OR_RETURN(Local x, walker.Get(ret.operands[k]));
    KILN_ASSIGN_OR_RETURN(
        Local r, rw.Reshard(x, SplitsNothing(v.sharding) ? rw.Replicated(v.global.dims.size())
                                                         : v.sharding));
    sdy_return.operands.push_back(r.value);
  }
  body.ops.push_back(std::move(sdy_return));

  ir::Op manual;
  manual.name = "sdy.manual_computation";
  manual.foreign = true;
  manual.loc = ret.loc;
  manual.operands = main_block.args;
  for (const lower::ValueLayout& v : layout.results)
    manual.results.push_back(out.AddValue(v.global));
  std::vector<ir::Attr> axes;
  for (const std::string& name : mesh.axis_names) axes.push_back(ir::Attr::String(name));
  manual.attrs = {{"in_shardings", ShardingList(rw, layout.args)},
                  {"out_shardings", ShardingList(rw, layout.results)},
                  {"manual_axes", ir::Attr::Dict({{"sdy", ir::Attr::String("manual_axes")},
                                                  {"axes", ir::Attr::Array(std::move(axes))}})}};
  manual.regions.emplace_back().blocks.push_back(std::move(body));
  ir::Op new_ret = ret;
  new_ret.operands = manual.results;
  main_block.ops.clear();
  main_block.ops.push_back(std::move(manual));
  main_block.ops.push_back(std::move(new_ret));
  // The boundary's shardings as PlanPartitions found them, given explicitly.
  fn.arg_attrs.resize(layout.args.size());
  fn.result_attrs.resize(layout.results.size());
  for (size_t i = 0; i < layout.args.size(); ++i) {
    if (!SplitsNothing(layout.args[i].sharding)) {
      SetSharding(fn.arg_attrs[i], rw.ShardingAttr(layout.args[i].sharding));
    }
  }
  for (size_t k = 0; k < layout.results.size(); ++k) {
    if (!SplitsNothing(layout.results[k].sharding)) {
      SetSharding(fn.result_attrs[k], rw.ShardingAttr(layout.results[k].sharding));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<ir::Module>> PartitionSpmd(const ir::Module& module,
                                                    const ingest::CompileOptions& options) {
  if (options.num_replicas != 1 || options.num_partitions <= 1)
    return std::shared_ptr<ir::Module>();
  if (const char* env = std::getenv("KILN_SPMD_PARTITIONER");
      env != nullptr && std::string(env) == "0") {
    return std::shared_ptr<ir::Module>();
  }
  const ir::Function* main = module.MainFunction();
  if (main == nullptr || main->body.blocks.size() != 1) return std::shared_ptr<ir::Module>();
  for (const auto* types : {&main->arg_types, &main->result_types}) {
    for (const ir::Type& t : *types) {
      if (!t.is_tensor() || !t.has_static_shape()) return std::shared_ptr<ir::Module>();
    }
  }
  KILN_ASSIGN_OR_RETURN(lower::SpmdLayout layout, PlanPartitions(module, *main, main->arg_types,
                                                                 main->result_types, options));
  if (layout.per_device || !layout.partial_sums.empty()) return std::shared_ptr<ir::Module>();
  const lower::Mesh* mesh = nullptr;
  for (const auto* values : {&layout.args, &layout.results}) {
    for (const lower::ValueLayout& v : *values) {
      if (!v.sharding.unreduced.empty()) return std::shared_ptr<ir::Module>();
      if (mesh == nullptr && !SplitsNothing(v.sharding)) mesh = &v.sharding.mesh;
    }
  }
  // Nothing split at the boundary: the global program is every device's.
  if (mesh == nullptr || mesh->num_devices() != options.num_partitions) {
    return std::shared_ptr<ir::Module>();
  }
  // Shardings are rewritten by name: the mesh must be one of the module's sdy.mesh ops (GSPMD's
  // `mhlo.sharding` texts make meshes of their own).
  KILN_ASSIGN_OR_RETURN(lower::MeshTable meshes, lower::MeshTable::FromModule(module));
  const lower::Mesh* named = meshes.Find(mesh->name);
  if (named == nullptr || named->axis_names != mesh->axis_names ||
      named->axis_sizes != mesh->axis_sizes || named->device_ids != mesh->device_ids) {
    return std::shared_ptr<ir::Module>();
  }
  auto out = std::make_shared<ir::Module>(module);
  ir::Function& fn =
      out->functions[static_cast<size_t>(out->MainFunction() - out->functions.data())];
  if (!Rewrite(*out, fn, layout, *mesh, meshes).ok())
    return std::shared_ptr<ir::Module>();  // stays global
  if (!VerifyModule(*out).ok()) return std::shared_ptr<ir::Module>();
  return out;
}

}  // namespace kiln::compiler
