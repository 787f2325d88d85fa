// Collectives of SPMD programs: all_reduce, all_gather, reduce_scatter, all_to_all,
// collective_permute and collective_broadcast. The device instances of one execution run
// concurrently (kernels/manual_computation.cc) and meet in a runtime::Rendezvous: each posts its
// input views, reads its group's inputs, and departs once everyone has read. Outside an SPMD
// execution (one device) every group is the device alone.
//
// Who meets is kernels/collective_groups.h (StableHLO's group modes); how an all_reduce's or a
// reduce_scatter's members combine is kernels/collective_reducer.h. Members combine in group
// order, so every device computes bit-identical reductions.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/collective_groups.h"
#include "kernels/collective_reducer.h"
#include "kernels/collectives_across.h"
#include "kernels/families.h"
#include "kernels/float16.h"
#include "lower/op_registry.h"
#include "runtime/box_copy.h"
#include "runtime/rendezvous.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

// Posts this device's inputs, runs `body(inputs_of)` where inputs_of(m) are participant m's
// input views, then departs. With no rendezvous (one device), only participant 0 exists. In a
// per-device run over several processes, the process's leader first gathers every other
// process's participants' inputs (kernels/collectives_across.h).
template <typename Body>
Status Meet(ExecContext& ec, std::span<const View> in, const std::string& what, Body&& body) {
  const int me = ec.replica_id * ec.num_partitions + ec.partition_id;
  if (ec.rendezvous == nullptr) {
    if (ec.num_replicas * ec.num_partitions != 1) {
      return Internal(what + ": a collective outside the device instances of an SPMD execution");
    }
    return body([&](int) { return in.data(); });
  }
  KILN_ASSIGN_OR_RETURN(std::span<const void* const> posted,
                        ec.rendezvous->Exchange(me, in.data(), what.c_str()));
  Status status = Status::Ok();
  if (ec.network != nullptr) {
    std::unique_ptr<GatheredInputs> gathered;  // the leader's, read by all until they depart
    if (LeadsProcess(ec, me)) {
      StatusOr<std::unique_ptr<GatheredInputs>> g =
          GatheredInputs::Gather(ec, posted, in, what.c_str());
      if (!g.ok()) {
        ec.rendezvous->Abort(g.status());
        return g.status();
      }
      gathered = std::move(g).value();
      ec.rendezvous->shared = gathered.get();
    }
    KILN_RETURN_IF_ERROR(ec.rendezvous->Sync(me, what.c_str()));
    const auto* all = static_cast<const GatheredInputs*>(ec.rendezvous->shared);
    status = body([&](int m) { return all->views(m); });
    Status departed = ec.rendezvous->Depart(me, what.c_str());
    if (!status.ok()) {
      ec.rendezvous->Abort(status);
      return status;
    }
    return departed;
  }
  status = body([&](int m) { return static_cast<const View*>(posted[static_cast<size_t>(m)]); });
  Status departed = ec.rendezvous->Depart(me, what.c_str());
  if (!status.ok()) {
    ec.rendezvous->Abort(status);
    return status;
  }
  return departed;
}

// all_reduce of one group of every participant in a per-device run over several processes, in
// two levels: the process's leader reduces its instances' inputs into its result, reduces that
// across the processes in place (runtime::Communicator::AllReduce), and the other instances copy
// it. Every process ends with the same bits.
Status AllReduceAcross(ExecContext& ec, std::span<const View> in, std::span<const View> out,
                       const std::vector<int>& members, const std::vector<Reducer>& reducers,
                       const std::string& what) {
  struct Posted {
    const View* in;
    const View* out;
  };
  const int me = ec.replica_id * ec.num_partitions + ec.partition_id;
  const Posted mine{in.data(), out.data()};
  KILN_ASSIGN_OR_RETURN(std::span<const void* const> posted,
                        ec.rendezvous->Exchange(me, &mine, what.c_str()));
  auto of = [&](int m) { return static_cast<const Posted*>(posted[static_cast<size_t>(m)]); };
  if (LeadsProcess(ec, me)) {
    Status status = [&]() -> Status {
      bool first = true;
      for (int m : members) {
        if (ec.RemoteParticipant(m)) continue;
        for (size_t i = 0; i < out.size(); ++i) {
          if (first) {
            std::memcpy(out[i].ptr, of(m)->in[i].ptr, out[i].byte_size());
          } else {
            reducers[i].fn(out[i].ptr, of(m)->in[i].ptr, out[i].elements * reducers[i].scale);
          }
        }
        first = false;
      }
      KILN_ASSIGN_OR_RETURN(runtime::Communicator * comm, RunCommunicator(ec, what.c_str()));
      size_t bytes = 0;
      for (const View& v : out) bytes += v.byte_size();
      KILN_RETURN_IF_ERROR(CheckSamePoint(ec, *comm, what.c_str(), bytes));
      for (size_t i = 0; i < out.size(); ++i) {
        KILN_RETURN_IF_ERROR(comm->AllReduce(out[i].ptr, static_cast<size_t>(out[i].elements),
                                             out[i].dtype, *reducers[i].net, what.c_str()));
      }
      return Status::Ok();
    }();
    if (!status.ok()) {
      ec.rendezvous->Abort(status);
      return status;
    }
    ec.rendezvous->shared = const_cast<Posted*>(of(me));
  }
  KILN_RETURN_IF_ERROR(ec.rendezvous->Sync(me, what.c_str()));
  const auto* leader = static_cast<const Posted*>(ec.rendezvous->shared);
  if (leader->out != out.data()) {
    for (size_t i = 0; i < out.size(); ++i) {
      std::memcpy(out[i].ptr, leader->out[i].ptr, out[i].byte_size());
    }
  }
  return ec.rendezvous->Depart(me, what.c_str());
}

StatusOr<Kernel> LowerAllReduce(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(Groups groups, ReadGroups(op, true));
  if (op.operands.empty() || op.operands.size() != op.results.size()) {
    return InvalidArgument("needs as many results as operands");
  }
  std::vector<Reducer> reducers;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (ctx.operand_type(i) != ctx.result_type(i)) {
      return InvalidArgument("result type differs from operand type");
    }
    KILN_ASSIGN_OR_RETURN(Reducer r, LowerReducer(ctx, ctx.operand_type(i).dtype));
    reducers.push_back(r);
  }
  const size_t n = op.operands.size();
  const std::string name = op.name;
  return Kernel([=](ExecContext& ec, std::span<const View> in, std::span<const View> out) {
    KILN_ASSIGN_OR_RETURN(Group g, ResolveGroup(groups, ec, name));
    // Across processes, small values go in one gather of everyone's inputs (one round trip);
    // from kTwoLevelBytes per participant the two-level reduction moves less (bench/collective.py:
    // 2 processes, 1 MiB 1.1 ms gathered vs 2.4 ms two-level; 64 MiB 181 vs 81 ms).
    constexpr size_t kTwoLevelBytes = 4 << 20;
    size_t bytes = 0;
    for (const View& v : out) bytes += v.byte_size();
    if (ec.network != nullptr && ec.rendezvous != nullptr && bytes >= kTwoLevelBytes &&
        static_cast<int>(g.members.size()) == ec.num_replicas * ec.num_partitions &&
        std::all_of(reducers.begin(), reducers.end(),
                    [](const Reducer& r) { return r.net.has_value(); })) {
      return AllReduceAcross(ec, in, out, g.members, reducers, name);
    }
    return Meet(ec, in, name, [&](auto inputs_of) -> Status {
      for (size_t i = 0; i < n; ++i) {
        if (reducers[i].bf16_wide != nullptr) {
          const auto* first = static_cast<const bf16_t*>(inputs_of(g.members[0])[i].ptr);
          std::vector<float> acc(static_cast<size_t>(out[i].elements));
          for (size_t e = 0; e < acc.size(); ++e) acc[e] = ToFloat(first[e]);
          for (size_t m = 1; m < g.members.size(); ++m) {
            reducers[i].bf16_wide(acc.data(), inputs_of(g.members[m])[i].ptr, out[i].elements);
          }
          auto* dst = static_cast<bf16_t*>(out[i].ptr);
          for (size_t e = 0; e < acc.size(); ++e) dst[e] = ToBf16(acc[e]);
          continue;
        }
        std::memcpy(out[i].ptr, inputs_of(g.members[0])[i].ptr, out[i].byte_size());
        for (size_t m = 1; m < g.members.size(); ++m) {
          reducers[i].fn(out[i].ptr, inputs_of(g.members[m])[i].ptr,
                         out[i].elements * reducers[i].scale);
        }
      }
      return Status::Ok();
    });
  });
}

// The box of `dims` with `dim` narrowed to block `block` of size `size`.
struct Box {
  std::vector<int64_t> offsets, extent;
};
Box Block(std::span<const int64_t> dims, size_t dim, int64_t block, int64_t size) {
  Box b{std::vector<int64_t>(dims.size(), 0), std::vector<int64_t>(dims.begin(), dims.end())};
  b.offsets[dim] = block * size;
  b.extent[dim] = size;
  return b;
}

StatusOr<size_t> ReadDim(const ir::Op& op, const char* name, size_t rank) {
  const ir::Attr* a = op.attr(name);
  std::optional<int64_t> v = a == nullptr ? std::nullopt : a->AsInt();
  if (!v || *v < 0 || static_cast<size_t>(*v) >= rank) {
    return InvalidArgument("`" + std::string(name) + "` is missing or out of range");
  }
  return static_cast<size_t>(*v);
}

StatusOr<Kernel> LowerAllGather(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(Groups groups, ReadGroups(op, true));
  if (op.operands.empty() || op.operands.size() != op.results.size()) {
    return InvalidArgument("needs as many results as operands");
  }
  KILN_ASSIGN_OR_RETURN(size_t dim, ReadDim(op, "all_gather_dim", ctx.operand_type(0).dims.size()));
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const ir::Type &a = ctx.operand_type(i), &r = ctx.result_type(i);
    if (a.dtype != r.dtype || a.dims.size() != r.dims.size() || a.dims[dim] == 0 ||
        r.dims[dim] % a.dims[dim] != 0) {
      return InvalidArgument("result " + r.ToString() + " does not gather " + a.ToString() +
                             " along dimension " + std::to_string(dim));
    }
  }
  const std::string name = op.name;
  return Kernel([=](ExecContext& ec, std::span<const View> in, std::span<const View> out) {
    KILN_ASSIGN_OR_RETURN(Group g, ResolveGroup(groups, ec, name));
    for (size_t i = 0; i < in.size(); ++i) {
      if (out[i].dims[dim] != in[i].dims[dim] * static_cast<int64_t>(g.members.size())) {
        return InvalidArgument("the result does not hold " + std::to_string(g.members.size()) +
                               " pieces");
      }
    }
    return Meet(ec, in, name, [&](auto inputs_of) -> Status {
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t piece = in[i].dims[dim];
        for (size_t m = 0; m < g.members.size(); ++m) {
          const View& src = inputs_of(g.members[m])[i];
          Box dst = Block(out[i].dims, dim, static_cast<int64_t>(m), piece);
          const std::vector<int64_t> zero(src.dims.size(), 0);
          runtime::CopyBox(static_cast<const std::byte*>(src.ptr), src.dims, zero,
                           static_cast<std::byte*>(out[i].ptr), out[i].dims, dst.offsets,
                           dst.extent, static_cast<size_t>(ir::DTypeByteSize(src.dtype)));
        }
      }
      return Status::Ok();
    });
  });
}

StatusOr<Kernel> LowerReduceScatter(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(Groups groups, ReadGroups(op, true));
  if (op.operands.size() != 1 || op.results.size() != 1) {
    return InvalidArgument("expected one operand and one result");
  }
  const ir::Type &a = ctx.operand_type(0), &r = ctx.result_type(0);
  KILN_ASSIGN_OR_RETURN(size_t dim, ReadDim(op, "scatter_dimension", a.dims.size()));
  if (a.dtype != r.dtype || a.dims.size() != r.dims.size() || r.dims[dim] == 0 ||
      a.dims[dim] % r.dims[dim] != 0) {
    return InvalidArgument("result " + r.ToString() + " is not a piece of " + a.ToString() +
                           " along dimension " + std::to_string(dim));
  }
  KILN_ASSIGN_OR_RETURN(Reducer reducer, LowerReducer(ctx, a.dtype));
  const std::string name = op.name;
  Kernel k([=](ExecContext& ec, std::span<const View> in, std::span<const View> out) {
    KILN_ASSIGN_OR_RETURN(Group g, ResolveGroup(groups, ec, name));
    const int64_t piece = out[0].dims[dim];
    if (in[0].dims[dim] != piece * static_cast<int64_t>(g.members.size())) {
      return InvalidArgument("the operand does not split into " + std::to_string(g.members.size()) +
                             " pieces");
    }
    std::byte* scratch = ec.scratch;
    return Meet(ec, in, name, [&](auto inputs_of) -> Status {
      const Box src = Block(in[0].dims, dim, static_cast<int64_t>(g.position), piece);
      const std::vector<int64_t> zero(out[0].dims.size(), 0);
      const size_t width = static_cast<size_t>(ir::DTypeByteSize(out[0].dtype));
      for (size_t m = 0; m < g.members.size(); ++m) {
        const View& x = inputs_of(g.members[m])[0];
        std::byte* dst = m == 0 ? static_cast<std::byte*>(out[0].ptr) : scratch;
        runtime::CopyBox(static_cast<const std::byte*>(x.ptr), x.dims, src.offsets, dst,
                         out[0].dims, zero, src.extent, width);
        if (m > 0) reducer.fn(out[0].ptr, scratch, out[0].elements * reducer.scale);
      }
      return Status::Ok();
    });
  });
  k.scratch_bytes =
      static_cast<size_t>(r.num_elements()) * static_cast<size_t>(ir::DTypeByteSize(r.dtype));
  return k;
}

StatusOr<Kernel> LowerAllToAll(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(Groups groups, ReadGroups(op, false));
  if (op.operands.empty() || op.operands.size() != op.results.size()) {
    return InvalidArgument("needs as many results as operands");
  }
  const size_t rank = ctx.operand_type(0).dims.size();
  KILN_ASSIGN_OR_RETURN(size_t split, ReadDim(op, "split_dimension", rank));
  KILN_ASSIGN_OR_RETURN(size_t concat, ReadDim(op, "concat_dimension", rank));
  const ir::Attr* count_attr = op.attr("split_count");
  const int64_t count = count_attr == nullptr ? 0 : count_attr->AsInt().value_or(0);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const ir::Type &a = ctx.operand_type(i), &r = ctx.result_type(i);
    if (count < 1 || a.dims.size() != rank || a.dims[split] % count != 0 || a.dtype != r.dtype) {
      return InvalidArgument("operand " + a.ToString() + " does not split into " +
                             std::to_string(count) + " along dimension " + std::to_string(split));
    }
  }
  const std::string name = op.name;
  return Kernel([=](ExecContext& ec, std::span<const View> in, std::span<const View> out) {
    KILN_ASSIGN_OR_RETURN(Group g, ResolveGroup(groups, ec, name));
    if (static_cast<int64_t>(g.members.size()) != count) {
      return InvalidArgument("split_count " + std::to_string(count) + " but the group has " +
                             std::to_string(g.members.size()) + " devices");
    }
    return Meet(ec, in, name, [&](auto inputs_of) -> Status {
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t block = in[i].dims[split] / count;
        const size_t width = static_cast<size_t>(ir::DTypeByteSize(in[i].dtype));
        for (size_t m = 0; m < g.members.size(); ++m) {
          const View& x = inputs_of(g.members[m])[i];
          const Box src = Block(x.dims, split, static_cast<int64_t>(g.position), block);
          std::vector<int64_t> dst_offsets(rank, 0);
          dst_offsets[concat] = static_cast<int64_t>(m) * src.extent[concat];
          runtime::CopyBox(static_cast<const std::byte*>(x.ptr), x.dims, src.offsets,
                           static_cast<std::byte*>(out[i].ptr), out[i].dims, dst_offsets,
                           src.extent, width);
        }
      }
      return Status::Ok();
    });
  });
}

StatusOr<Kernel> LowerCollectivePermute(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 1 || op.results.size() != 1 ||
      ctx.operand_type(0) != ctx.result_type(0)) {
    return InvalidArgument("expected one operand and a result of its type");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> pairs,
                        ReadIdLists(op, "source_target_pairs"));
  for (const auto& pair : pairs) {
    if (pair.size() != 2) return InvalidArgument("malformed source_target_pairs");
  }
  const bool cross_partition = ChannelId(op) > 0;
  const std::string name = op.name;
  return Kernel([=](ExecContext& ec, std::span<const View> in, std::span<const View> out) {
    const int64_t P = ec.num_partitions;
    const int64_t my_id = cross_partition ? ec.partition_id : ec.replica_id;
    const int64_t limit = cross_partition ? P : ec.num_replicas;
    int source = -1;
    for (const auto& pair : pairs) {
      if (pair[0] < 0 || pair[0] >= limit || pair[1] >= limit) {
        return InvalidArgument("source_target_pairs name a device out of range");
      }
      if (pair[1] == my_id) {
        source = static_cast<int>(cross_partition ? ec.replica_id * P + pair[0]
                                                  : pair[0] * P + ec.partition_id);
      }
    }
    return Meet(ec, in, name, [&](auto inputs_of) -> Status {
      if (source < 0) {
        std::memset(out[0].ptr, 0, out[0].byte_size());
      } else {
        std::memcpy(out[0].ptr, inputs_of(source)[0].ptr, out[0].byte_size());
      }
      return Status::Ok();
    });
  });
}

StatusOr<Kernel> LowerCollectiveBroadcast(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 1 || op.results.size() != 1 ||
      ctx.operand_type(0) != ctx.result_type(0)) {
    return InvalidArgument("expected one operand and a result of its type");
  }
  KILN_ASSIGN_OR_RETURN(Groups groups, ReadGroups(op, false));
  const std::string name = op.name;
  return Kernel([=](ExecContext& ec, std::span<const View> in, std::span<const View> out) {
    KILN_ASSIGN_OR_RETURN(Group g, ResolveGroup(groups, ec, name));
    return Meet(ec, in, name, [&](auto inputs_of) -> Status {
      std::memcpy(out[0].ptr, inputs_of(g.members[0])[0].ptr, out[0].byte_size());
      return Status::Ok();
    });
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterCollectiveOps(OpRegistry& registry) {
  static constexpr char kFamily[] = "collective";  // outlives the registry's string_views
  registry.Add({"stablehlo.all_reduce", kFamily, &kernels::LowerAllReduce});
  registry.Add({"stablehlo.all_gather", kFamily, &kernels::LowerAllGather});
  registry.Add({"stablehlo.reduce_scatter", kFamily, &kernels::LowerReduceScatter});
  registry.Add({"stablehlo.all_to_all", kFamily, &kernels::LowerAllToAll});
  registry.Add({"stablehlo.collective_permute", kFamily, &kernels::LowerCollectivePermute});
  registry.Add({"stablehlo.collective_broadcast", kFamily, &kernels::LowerCollectiveBroadcast});
}

}  // namespace kiln::kernels
