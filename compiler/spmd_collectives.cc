// The SPMD partitioner's resharding (compiler/spmd_rewriter.h): all_gather along dims whose split
// changes, local dynamic slices along dims that become split, all_reduce of partial sums.
#include <algorithm>
#include <map>
#include <utility>

#include "compiler/spmd_rewriter.h"

namespace kiln::compiler::spmd {

using lower::AxisRef;
using lower::TensorSharding;

ir::Attr I64Literal(const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::kElements;
  a.type = ir::Type::Tensor(ir::DType::kS64, std::move(dims));
  a.data.reserve(values.size() * 8);
  for (int64_t v : values) {
    const auto u = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) a.data.push_back(static_cast<uint8_t>(u >> (8 * b)));
  }
  return a;
}

namespace {

bool SameRefs(const std::vector<AxisRef>& a, const std::vector<AxisRef>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].axis != b[i].axis || a[i].pre_size != b[i].pre_size || a[i].size != b[i].size) {
      return false;
    }
  }
  return true;
}

ir::Type Scalar(ir::DType dtype) { return ir::Type::Tensor(dtype, {}); }

}  // namespace

TensorSharding Rewriter::Replicated(size_t rank) const {
  TensorSharding s;
  s.mesh = mesh_;
  s.dims.assign(rank, {});
  return s;
}

bool Rewriter::Usable(const TensorSharding& s) const {
  if (!s.unreduced.empty()) return false;
  bool split = false;
  for (const auto& refs : s.dims) {
    for (const AxisRef& ref : refs) {
      split = true;
      if (ref.axis < 0 || static_cast<size_t>(ref.axis) >= s.mesh.axis_sizes.size() ||
          ref.pre_size != 1 || ref.size != s.mesh.axis_sizes[static_cast<size_t>(ref.axis)]) {
        return false;
      }
    }
  }
  return !split || (s.mesh.axis_names == mesh_.axis_names &&
                    s.mesh.axis_sizes == mesh_.axis_sizes && s.mesh.device_ids == mesh_.device_ids);
}

ir::Type Rewriter::LocalType(const ir::Type& global, const TensorSharding& s) {
  ir::Type t = global;
  for (size_t d = 0; d < t.dims.size() && d < s.dims.size(); ++d) t.dims[d] /= s.BlockCount(d);
  return t;
}

ir::Attr Rewriter::ShardingAttr(const TensorSharding& s) const {
  std::vector<ir::Attr> dims;
  for (const auto& refs : s.dims) {
    std::vector<ir::Attr> axes;
    for (const AxisRef& ref : refs) {
      axes.push_back(ir::Attr::Dict(
          {{"sdy", ir::Attr::String("axis_ref")},
           {"name", ir::Attr::String(mesh_.axis_names[static_cast<size_t>(ref.axis)])}}));
    }
    dims.push_back(ir::Attr::Dict({{"sdy", ir::Attr::String("dim_sharding")},
                                   {"axes", ir::Attr::Array(std::move(axes))},
                                   {"closed", ir::Attr::Bool(true)}}));
  }
  return ir::Attr::Dict({{"sdy", ir::Attr::String("sharding")},
                         {"mesh", ir::Attr::SymbolRef(mesh_.name)},
                         {"dims", ir::Attr::Array(std::move(dims))},
                         {"replicated", ir::Attr::Array({})},
                         {"unreduced", ir::Attr::Array({})}});
}

ir::Op& Rewriter::Emit(std::string name, std::vector<ir::ValueId> operands,
                       std::vector<ir::Type> types, std::vector<ir::NamedAttr> attrs) {
  ir::Op op;
  op.name = std::move(name);
  op.operands = std::move(operands);
  for (ir::Type& t : types) op.results.push_back(m_.AddValue(std::move(t)));
  op.attrs = std::move(attrs);
  body_.ops.push_back(std::move(op));
  return body_.ops.back();
}

ir::Op& Rewriter::Append(ir::Op op) {
  body_.ops.push_back(std::move(op));
  return body_.ops.back();
}

const ir::Op* Rewriter::Defining(ir::ValueId v) const {
  for (auto it = body_.ops.rbegin(); it != body_.ops.rend(); ++it) {
    if (std::find(it->results.begin(), it->results.end(), v) != it->results.end()) return &*it;
  }
  return nullptr;
}

std::vector<std::vector<int64_t>> Rewriter::Groups(const std::vector<int>& axes) const {
  const size_t n = mesh_.axis_sizes.size();
  std::map<std::vector<int64_t>, std::vector<int64_t>> groups;  // other axes' coords -> members
  int64_t width = 1;
  for (int a : axes) width *= mesh_.axis_sizes[static_cast<size_t>(a)];
  const int64_t total = mesh_.num_devices();
  for (int64_t pos = 0; pos < total; ++pos) {
    std::vector<int64_t> coords(n);
    int64_t rest = pos;
    for (size_t k = n; k-- > 0;) {
      coords[k] = rest % mesh_.axis_sizes[k];
      rest /= mesh_.axis_sizes[k];
    }
    std::vector<int64_t> key;
    for (size_t k = 0; k < n; ++k) {
      if (std::find(axes.begin(), axes.end(), static_cast<int>(k)) == axes.end()) {
        key.push_back(coords[k]);
      }
    }
    int64_t index = 0;
    for (int a : axes)
      index = index * mesh_.axis_sizes[static_cast<size_t>(a)] + coords[static_cast<size_t>(a)];
    std::vector<int64_t>& members = groups[key];
    members.resize(static_cast<size_t>(width), -1);
    members[static_cast<size_t>(index)] =
        mesh_.device_ids.empty() ? pos : mesh_.device_ids[static_cast<size_t>(pos)];
  }
  std::vector<std::vector<int64_t>> out;
  for (auto& [key, members] : groups) out.push_back(std::move(members));
  return out;
}

namespace {

ir::Attr GroupsAttr(const std::vector<std::vector<int64_t>>& groups) {
  std::vector<int64_t> flat;
  for (const auto& g : groups) flat.insert(flat.end(), g.begin(), g.end());
  const int64_t width = groups.empty() ? 0 : static_cast<int64_t>(groups[0].size());
  return I64Literal(flat, {static_cast<int64_t>(groups.size()), width});
}

}  // namespace

ir::ValueId Rewriter::Gather(ir::ValueId v, TensorSharding& s, size_t dim) {
  std::vector<int> axes;
  for (const AxisRef& ref : s.dims[dim]) axes.push_back(ref.axis);
  ir::Type t = m_.type_of(v);
  t.dims[dim] *= s.BlockCount(dim);
  s.dims[dim].clear();
  const int64_t channel = next_channel_++;
  return Emit("stablehlo.all_gather", {v}, {std::move(t)},
              {{"all_gather_dim", ir::Attr::Int(static_cast<int64_t>(dim))},
               {"replica_groups", GroupsAttr(Groups(axes))},
               {"channel_id", ir::Attr::Int(channel)},
               {"use_global_device_ids", ir::Attr::Bool(true)}})
      .results[0];
}

ir::ValueId Rewriter::PartitionIndex() {
  if (partition_index_ >= 0) return partition_index_;
  const ir::ValueId id = Emit("stablehlo.partition_id", {}, {Scalar(ir::DType::kU32)}).results[0];
  partition_index_ = Emit("stablehlo.convert", {id}, {Scalar(ir::DType::kS64)}).results[0];
  return partition_index_;
}

StatusOr<ir::ValueId> Rewriter::SliceLocal(ir::ValueId v, TensorSharding& s,
                                           const TensorSharding& target) {
  // The dims to split: whole here, split in `target`. Each device's offsets into its whole dims
  // are what ShardOf gives a sharding of the local type that splits only those.
  const ir::Type from = m_.type_of(v);
  TensorSharding cut = Replicated(from.dims.size());
  bool any = false;
  for (size_t d = 0; d < from.dims.size(); ++d) {
    if (s.dims[d].empty() && !target.dims[d].empty()) {
      cut.dims[d] = target.dims[d];
      any = true;
    }
  }
  if (!any) return v;
  const int64_t devices = mesh_.num_devices();
  std::vector<std::vector<int64_t>> offsets(from.dims.size());
  ir::Type local = from;
  for (int64_t d = 0; d < devices; ++d) {
    KILN_ASSIGN_OR_RETURN(lower::ShardBox box, lower::ShardOf(cut, from.dims, d));
    for (size_t k = 0; k < from.dims.size(); ++k) offsets[k].push_back(box.offsets[k]);
    if (d == 0) local.dims = box.dims;
  }
  for (size_t k = 0; k < from.dims.size(); ++k) {
    if (!cut.dims[k].empty()) s.dims[k] = target.dims[k];
  }
  // A broadcast scalar (`x + 1`'s 1) is broadcast again at the local shape instead of sliced.
  if (const ir::Op* def = Defining(v);
      def != nullptr && def->name == "stablehlo.broadcast_in_dim" && def->operands.size() == 1 &&
      m_.type_of(def->operands[0]).dims.empty()) {
    const ir::Op copy = *def;
    return Emit(copy.name, copy.operands, {local}, copy.attrs).results[0];
  }
  const ir::ValueId index = PartitionIndex();
  std::vector<ir::ValueId> starts;
  for (size_t k = 0; k < from.dims.size(); ++k) {
    if (cut.dims[k].empty()) {
      if (zero_ < 0) {
        zero_ = Emit("stablehlo.constant", {}, {Scalar(ir::DType::kS64)},
                     {{"value", I64Literal({0}, {})}})
                    .results[0];
      }
      starts.push_back(zero_);
      continue;
    }
    auto cached = offsets_.find(offsets[k]);
    if (cached != offsets_.end()) {
      starts.push_back(cached->second);
      continue;
    }
    const ir::Type table_type = ir::Type::Tensor(ir::DType::kS64, {devices});
    const ir::ValueId table =
        Emit("stablehlo.constant", {}, {table_type}, {{"value", I64Literal(offsets[k], {devices})}})
            .results[0];
    const ir::ValueId entry =
        Emit("stablehlo.dynamic_slice", {table, index}, {ir::Type::Tensor(ir::DType::kS64, {1})},
             {{"slice_sizes", I64Literal({1}, {1})}})
            .results[0];
    const ir::ValueId start =
        Emit("stablehlo.reshape", {entry}, {Scalar(ir::DType::kS64)}).results[0];
    offsets_[offsets[k]] = start;
    starts.push_back(start);
  }
  std::vector<ir::ValueId> operands = {v};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return Emit("stablehlo.dynamic_slice", std::move(operands), {local},
              {{"slice_sizes", I64Literal(local.dims, {static_cast<int64_t>(local.dims.size())})}})
      .results[0];
}

StatusOr<Local> Rewriter::Reshard(const Local& x, const TensorSharding& target) {
  Local out = x;
  if (!Usable(target) || target.dims.size() != x.sharding.dims.size()) {
    return Unimplemented("a sharding the partitioner does not rewrite");
  }
  for (size_t d = 0; d < out.sharding.dims.size(); ++d) {
    if (!out.sharding.dims[d].empty() && !SameRefs(out.sharding.dims[d], target.dims[d])) {
      out.value = Gather(out.value, out.sharding, d);
    }
  }
  KILN_ASSIGN_OR_RETURN(out.value, SliceLocal(out.value, out.sharding, target));
  out.sharding = target;
  out.sharding.mesh = mesh_;
  return out;
}

ir::Region Rewriter::ScalarRegion(ir::DType dtype, const std::string& op_name) {
  ir::Region region;
  ir::Block& block = region.blocks.emplace_back();
  const ir::ValueId a = m_.AddValue(Scalar(dtype)), b = m_.AddValue(Scalar(dtype));
  block.args = {a, b};
  ir::Op combine;
  combine.name = op_name;
  combine.operands = {a, b};
  combine.results = {m_.AddValue(Scalar(dtype))};
  ir::Op ret;
  ret.name = "stablehlo.return";
  ret.operands = combine.results;
  block.ops.push_back(std::move(combine));
  block.ops.push_back(std::move(ret));
  return region;
}

ir::ValueId Rewriter::AllReduce(ir::ValueId v, const std::vector<int>& axes, ir::Region reducer) {
  const int64_t channel = next_channel_++;
  ir::Op& op = Emit("stablehlo.all_reduce", {v}, {m_.type_of(v)},
                    {{"replica_groups", GroupsAttr(Groups(axes))},
                     {"channel_id", ir::Attr::Int(channel)},
                     {"use_global_device_ids", ir::Attr::Bool(true)}});
  op.regions.push_back(std::move(reducer));
  return op.results[0];
}

}  // namespace kiln::compiler::spmd
