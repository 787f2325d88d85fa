#include "compiler/gspmd_manual.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lower/hlo_sharding.h"

namespace kiln::compiler {
namespace {

constexpr char kFullToShard[] = "SPMDFullToShardShape";
constexpr char kShardToFull[] = "SPMDShardToFullShape";

// The target of a custom call, or "".
std::string Target(const ir::Op& op) {
  if (op.name != "stablehlo.custom_call") return "";
  const ir::Attr* t = op.attr("call_target_name");
  return t != nullptr && t->kind == ir::Attr::Kind::kString ? t->str : "";
}

// The `mhlo.sharding` text of `op`, or "".
std::string ShardingText(const ir::Op& op) {
  const ir::Attr* s = op.attr("mhlo.sharding");
  return s != nullptr && s->kind == ir::Attr::Kind::kString ? s->str : "";
}

// Whether `text` is a sharding of the values between the bridges: `{manual}` (every device
// manual), or manual along a subgroup of the devices and whole otherwise (a shard_map manual
// over some of the mesh's axes: `{devices=[1,1,2,2]<=[4] last_tile_dims={manual, replicated}}`).
// Either way the body runs once per device: devices that differ only along the other axes hold
// the same pieces and compute the same values.
bool IsManual(const std::string& text) {
  StatusOr<lower::HloSharding> s = lower::ParseHloSharding(text);
  if (!s.ok()) return false;
  if (s->kind == lower::HloSharding::Kind::kManual) return true;
  if (s->kind != lower::HloSharding::Kind::kTiled) return false;
  for (size_t d = 0; d < s->data_rank(); ++d) {
    if (s->tile_dims[d] != 1) return false;
  }
  return std::find(s->subgroups.begin(), s->subgroups.end(),
                   lower::HloSharding::Subgroup::kManual) != s->subgroups.end();
}

struct Group {
  size_t call = 0;
  std::vector<size_t> removed;  // op indices dropped with the call
  std::vector<ir::ValueId> operands, results;
  std::vector<ir::Attr> in_shardings, out_shardings;
};

// Whether `block` (or a region in it) holds a GSPMD bridge (@SPMDFullToShardShape or
// @SPMDShardToFullShape; a shard_map without operands has only the latter).
bool BlockHas(const ir::Block& block, int depth) {
  if (depth > ir::kMaxNestingDepth) return false;
  for (const ir::Op& op : block.ops) {
    if (Target(op) == kFullToShard || Target(op) == kShardToFull) return true;
    for (const ir::Region& region : op.regions) {
      for (const ir::Block& inner : region.blocks) {
        if (BlockHas(inner, depth + 1)) return true;
      }
    }
  }
  return false;
}

// Records op `index` as a user of every value `op` (or an op in its regions) reads.
void CollectUses(const ir::Op& op, size_t index, std::map<ir::ValueId, std::vector<size_t>>& users,
                 int depth) {
  for (ir::ValueId v : op.operands) users[v].push_back(index);
  if (depth > ir::kMaxNestingDepth) return;
  for (const ir::Region& region : op.regions) {
    for (const ir::Block& inner : region.blocks) {
      for (const ir::Op& nested : inner.ops) CollectUses(nested, index, users, depth + 1);
    }
  }
}

// Rewrites the groups of `block`, after those of the regions in it.
void RewriteBlock(ir::Block& block, int64_t devices, int depth) {
  if (depth > ir::kMaxNestingDepth) return;
  for (ir::Op& op : block.ops) {
    for (ir::Region& region : op.regions) {
      for (ir::Block& inner : region.blocks) RewriteBlock(inner, devices, depth + 1);
    }
  }
  std::map<ir::ValueId, size_t> producer;
  std::map<ir::ValueId, std::vector<size_t>> users;
  for (size_t i = 0; i < block.ops.size(); ++i) {
    for (ir::ValueId v : block.ops[i].results) producer[v] = i;
    CollectUses(block.ops[i], i, users, 0);
  }
  auto only_user = [&](ir::ValueId v) -> long {
    auto it = users.find(v);
    return it != users.end() && it->second.size() == 1 ? static_cast<long>(it->second[0]) : -1;
  };
  auto made_by = [&](ir::ValueId v) -> const ir::Op* {
    auto it = producer.find(v);
    return it != producer.end() ? &block.ops[it->second] : nullptr;
  };
  std::vector<Group> groups;
  for (size_t c = 0; c < block.ops.size(); ++c) {
    const ir::Op& call = block.ops[c];
    if (call.name != "func.call" || (call.operands.empty() && call.results.empty())) continue;
    Group g;
    g.call = c;
    bool ok = true;
    for (ir::ValueId local : call.operands) {
      const ir::Op* bridge = made_by(local);
      if (bridge == nullptr || Target(*bridge) != kFullToShard ||
          !IsManual(ShardingText(*bridge)) || bridge->operands.size() != 1 ||
          only_user(local) != static_cast<long>(c)) {
        ok = false;
        break;
      }
      const ir::Op* annotation = made_by(bridge->operands[0]);
      const std::string s = annotation != nullptr && Target(*annotation) == "Sharding"
                                ? ShardingText(*annotation)
                                : "";
      if (s.empty()) {
        ok = false;
        break;
      }
      g.removed.push_back(producer[local]);
      g.operands.push_back(bridge->operands[0]);
      g.in_shardings.push_back(ir::Attr::String(s));
    }
    for (size_t j = 0; ok && j < call.results.size(); ++j) {
      const long m = only_user(call.results[j]);
      const ir::Op* manual = m >= 0 ? &block.ops[static_cast<size_t>(m)] : nullptr;
      if (manual == nullptr || Target(*manual) != "Sharding" || !IsManual(ShardingText(*manual)) ||
          manual->results.size() != 1) {
        ok = false;
        break;
      }
      const long u = only_user(manual->results[0]);
      const ir::Op* bridge = u >= 0 ? &block.ops[static_cast<size_t>(u)] : nullptr;
      if (bridge == nullptr || Target(*bridge) != kShardToFull || bridge->results.size() != 1 ||
          ShardingText(*bridge).empty()) {
        ok = false;
        break;
      }
      g.removed.push_back(static_cast<size_t>(m));
      g.removed.push_back(static_cast<size_t>(u));
      g.results.push_back(bridge->results[0]);
      g.out_shardings.push_back(ir::Attr::String(ShardingText(*bridge)));
    }
    if (ok) groups.push_back(std::move(g));
  }
  if (groups.empty()) return;
  std::vector<bool> drop(block.ops.size(), false);
  std::map<size_t, ir::Op> replacement;
  for (Group& g : groups) {
    const ir::Op& call = block.ops[g.call];
    ir::Op op;
    op.name = "kiln.gspmd_manual_computation";
    op.loc = call.loc;
    op.operands = g.operands;
    op.results = g.results;
    op.attrs.push_back({"in_shardings", ir::Attr::Array(std::move(g.in_shardings))});
    op.attrs.push_back({"out_shardings", ir::Attr::Array(std::move(g.out_shardings))});
    op.attrs.push_back({"num_devices", ir::Attr::Int(devices)});
    // The body: the call on the devices' pieces (the bridges' values), returning its results.
    ir::Block body;
    body.args = call.operands;
    body.ops.push_back(call);
    ir::Op ret;
    ret.name = "sdy.return";
    ret.loc = call.loc;
    ret.operands = call.results;
    body.ops.push_back(std::move(ret));
    op.regions.emplace_back();
    op.regions[0].blocks.push_back(std::move(body));
    for (size_t i : g.removed) drop[i] = true;
    drop[g.call] = true;
    replacement[g.call] = std::move(op);
  }
  std::vector<ir::Op> ops;
  for (size_t i = 0; i < block.ops.size(); ++i) {
    if (auto it = replacement.find(i); it != replacement.end()) {
      ops.push_back(std::move(it->second));
    } else if (!drop[i]) {
      ops.push_back(std::move(block.ops[i]));
    }
  }
  block.ops = std::move(ops);
}

}  // namespace

bool HasGspmdManual(const ir::Module& module) {
  for (const ir::Function& fn : module.functions) {
    for (const ir::Block& block : fn.body.blocks) {
      if (BlockHas(block, 0)) return true;
    }
  }
  return false;
}

Status RewriteGspmdManual(ir::Module& module, int64_t devices) {
  for (ir::Function& fn : module.functions) {
    for (ir::Block& block : fn.body.blocks) RewriteBlock(block, devices, 0);
  }
  return Status::Ok();
}

}  // namespace kiln::compiler
