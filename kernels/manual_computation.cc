// sdy.manual_computation (shard_map, pmap): the body is per-device code. Kiln runs the global
// program once and, at this op, runs the body once per device of the mesh, concurrently (each
// instance on its own thread: collectives make them wait for each other). Instance d gets its
// piece of every operand along the manual axes (ShardOf) and its results are placed back into the
// global results once all instances are done; axes the body does not split are whole in every
// instance, and a result that is replicated along an axis is written by the instance at
// coordinate 0 of that axis. Along unreduced axes, results are summed over the instances (what
// XLA's all-reduce gives whoever consumes them). Values of the program's boundary that pass per
// device (ExecContext::device_values): instance d reads device d's partial sum of an unreduced
// argument, and writes its own value of a result into device d's buffer, as on XLA. Any other
// unreduced operand is a total in global view: the instances at the unreduced axes' origin get
// it, the others zeros.
//
// GSPMD's shard_map and pmap arrive as kiln.gspmd_manual_computation (compiler/gspmd_manual.h):
// every device manual, each value split by its own sharding (kernels/manual_computation_gspmd.cc).
//
// A manual computation nested in another's body runs in place in each device's instance
// (RunNested). Scratch: per instance, [local operands][local results][body frame], 64-byte
// aligned.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/run_program.h"
#include "kernels/families.h"
#include "kernels/manual_plan.h"
#include "lower/op_registry.h"
#include "lower/program.h"
#include "lower/sharding.h"
#include "runtime/box_copy.h"
#include "runtime/rendezvous.h"
#include "support/thread.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using lower::ShardBox;
using lower::TensorSharding;
using manual::ManualPlan;
using manual::Piece;
using runtime::View;

// The sharding restricted to the manual axes (the only ones the body sees split).
TensorSharding ManualPart(const TensorSharding& s, const std::vector<bool>& manual) {
  TensorSharding out = s;
  for (auto& refs : out.dims) {
    refs.erase(std::remove_if(
                   refs.begin(), refs.end(),
                   [&](const lower::AxisRef& a) { return !manual[static_cast<size_t>(a.axis)]; }),
               refs.end());
  }
  out.unreduced.erase(std::remove_if(out.unreduced.begin(), out.unreduced.end(),
                                     [&](int axis) { return !manual[static_cast<size_t>(axis)]; }),
                      out.unreduced.end());
  return out;
}

StatusOr<const lower::DeviceValues*> FindDeviceValues(const ExecContext& ec, ir::ValueId value,
                                                      int devices) {
  for (const lower::DeviceValues& p : ec.device_values) {
    if (p.value == value && p.per_device.size() == static_cast<size_t>(devices) &&
        p.offsets.size() == p.per_device.size()) {
      return &p;
    }
  }
  return Internal("the per-device pieces of a boundary value are missing");
}

// Copies device d's piece of instance d's local result `local` (whose global box is `box`) into
// device d's own buffer of a boundary result.
Status WriteDeviceValue(const lower::DeviceValues& dst, int d, int devices, const std::byte* local,
                        const ir::Type& local_type, const ShardBox& box) {
  if (dst.per_device.size() != static_cast<size_t>(devices) ||
      dst.offsets.size() != dst.per_device.size() ||
      dst.offsets[static_cast<size_t>(d)].size() != box.offsets.size()) {
    return Internal("the per-device pieces of a result do not match the manual computation");
  }
  const View& mine = dst.per_device[static_cast<size_t>(d)];
  const std::vector<int64_t>& at = dst.offsets[static_cast<size_t>(d)];
  std::vector<int64_t> from(at.size());
  for (size_t k = 0; k < at.size(); ++k) {
    from[k] = at[k] - box.offsets[k];
    if (k >= mine.dims.size() || from[k] < 0 || from[k] + mine.dims[k] > box.dims[k]) {
      return Internal("a device's piece of a result is outside its instance's block");
    }
  }
  const std::vector<int64_t> zero(at.size(), 0);
  const std::vector<int64_t> extent(mine.dims.begin(), mine.dims.end());
  runtime::CopyBox(local, local_type.dims, from, static_cast<std::byte*>(mine.ptr), extent, zero,
                   extent, static_cast<size_t>(ir::DTypeByteSize(local_type.dtype)));
  return Status::Ok();
}

// Runs device d's instance of the body with context `ec`, its buffers at `base`; `outer` is the
// context the op itself runs in.
Status RunInstance(const ManualPlan& p, ExecContext& ec, const ExecContext& outer, int d,
                   std::byte* base, std::span<const View> in) {
  const size_t n_in = p.in_local.size();
  std::vector<View> params, results;
  for (size_t i = 0; i < n_in; ++i) {
    const Piece& piece = p.in[static_cast<size_t>(d)][i];
    if (p.in_per_device[i] >= 0) {
      KILN_ASSIGN_OR_RETURN(const lower::DeviceValues* partials,
                            FindDeviceValues(outer, p.in_per_device[i], p.devices));
      const View& mine = partials->per_device[static_cast<size_t>(d)];
      if (!mine.Is(p.in_local[i].dtype, p.in_local[i].dims)) {
        return Internal(p.name + ": a device's partial sum of operand #" + std::to_string(i) +
                        " is not the body's " + p.in_local[i].ToString());
      }
      params.push_back(mine);
      continue;
    }
    if (piece.whole) {
      params.push_back(in[i]);
      continue;
    }
    std::byte* local = base + piece.offset;
    if (piece.zeros) {
      std::memset(local, 0,
                  static_cast<size_t>(p.in_local[i].num_elements()) *
                      static_cast<size_t>(ir::DTypeByteSize(p.in_local[i].dtype)));
      params.push_back(View::Of(p.in_local[i], local));
      continue;
    }
    const std::vector<int64_t>& local_dims = p.in_local[i].dims;
    const std::vector<int64_t> zero(local_dims.size(), 0);
    runtime::CopyBox(static_cast<const std::byte*>(in[i].ptr), in[i].dims, piece.box.offsets, local,
                     local_dims, zero, piece.box.dims,
                     static_cast<size_t>(ir::DTypeByteSize(in[i].dtype)));
    params.push_back(View::Of(p.in_local[i], local));
  }
  for (size_t i = n_in; i < in.size(); ++i) params.push_back(in[i]);  // captured values
  for (size_t r = 0; r < p.out_local.size(); ++r) {
    results.push_back(View::Of(p.out_local[r], base + p.out[static_cast<size_t>(d)][r].offset));
  }
  KILN_RETURN_IF_ERROR(engine::RunProgram(*p.body, ec, params, results, base + p.frame_offset));
  for (size_t r = 0; r < p.out_local.size(); ++r) {
    if (p.out_per_device[r] < 0) continue;
    // Every boundary result this value is (the program may return it more than once).
    const Piece& piece = p.out[static_cast<size_t>(d)][r];
    bool written = false;
    for (const lower::DeviceValues& values : outer.device_values) {
      if (values.value != p.out_per_device[r]) continue;
      KILN_RETURN_IF_ERROR(
          WriteDeviceValue(values, d, p.devices, base + piece.offset, p.out_local[r], piece.box));
      written = true;
    }
    if (!written) return Internal(p.name + ": the per-device pieces of a result are missing");
  }
  return Status::Ok();
}

// Puts one instance's local result `local` (of type `local_type`) into `global` at `box`: the
// primary holder copies its block, a partial holder (along unreduced axes) adds its own.
Status PlacePiece(TensorSharding::Holder holder, const std::byte* local, const ir::Type& local_type,
                  const View& global, const ShardBox& box) {
  const std::vector<int64_t> zero(box.dims.size(), 0);
  auto* dst = static_cast<std::byte*>(global.ptr);
  if (holder == TensorSharding::Holder::kPrimary) {
    runtime::CopyBox(local, local_type.dims, zero, dst, global.dims, box.offsets, box.dims,
                     static_cast<size_t>(ir::DTypeByteSize(global.dtype)));
    return Status::Ok();
  }
  return runtime::AddBox(local, local_type.dims, zero, dst, global.dims, box.offsets, box.dims,
                         global.dtype);
}

// Places every instance's results (left in its scratch) into the global results: primary holders
// copy their blocks, then partial holders add theirs.
Status PlaceResults(const ManualPlan& p, const ExecContext& outer, std::span<const View> out) {
  using Holder = TensorSharding::Holder;
  for (Holder pass : {Holder::kPrimary, Holder::kPartial}) {
    for (int d = 0; d < p.devices; ++d) {
      // Another process's device (a per-device run): its results stay with its process, and
      // this process's global results are read only through its own devices' values.
      if (outer.network != nullptr && outer.RemoteParticipant(d)) continue;
      const std::byte* base = outer.scratch + static_cast<size_t>(d) * p.instance_bytes;
      for (size_t r = 0; r < p.out_local.size(); ++r) {
        const Piece& piece = p.out[static_cast<size_t>(d)][r];
        if (piece.holder != pass) continue;
        KILN_RETURN_IF_ERROR(
            PlacePiece(pass, base + piece.offset, p.out_local[r], out[r], piece.box));
      }
    }
  }
  return Status::Ok();
}

// A manual computation inside another one's body (a shard_map in a shard_map over other axes):
// every device already runs its own instance of the outer body, so each runs its instance of this
// body in place, on its piece along the new manual axes, and the results are gathered from the
// devices that differ from it only along those axes (its group) through the rendezvous.
Status RunNested(const ManualPlan& p, ExecContext& ec, std::span<const View> in,
                 std::span<const View> out) {
  const int d = ec.partition_id;
  if (ec.num_partitions != p.devices || d < 0 || d >= p.devices) {
    return Unimplemented(p.name + " nested in a manual computation over other devices");
  }
  std::byte* base = ec.scratch;
  ExecContext body = ec;
  KILN_RETURN_IF_ERROR(RunInstance(p, body, ec, d, base, in));
  const auto& mine = p.out[static_cast<size_t>(d)];
  std::vector<const void*> results(mine.size());
  for (size_t r = 0; r < mine.size(); ++r) results[r] = base + mine[r].offset;
  const char* what = "sdy.manual_computation";
  KILN_ASSIGN_OR_RETURN(std::span<const void* const> posted,
                        ec.rendezvous->Exchange(d, results.data(), what));
  using Holder = TensorSharding::Holder;
  Status status = Status::Ok();
  for (Holder pass : {Holder::kPrimary, Holder::kPartial}) {
    for (int peer : p.peers[static_cast<size_t>(d)]) {
      const auto* theirs = static_cast<const void* const*>(posted[static_cast<size_t>(peer)]);
      for (size_t r = 0; r < out.size() && status.ok(); ++r) {
        if (p.group_holders[static_cast<size_t>(peer)][r] != pass) continue;
        status = PlacePiece(pass, static_cast<const std::byte*>(theirs[r]), p.out_local[r], out[r],
                            p.out[static_cast<size_t>(peer)][r].box);
      }
    }
  }
  Status departed = ec.rendezvous->Depart(d, what);
  if (!status.ok()) {
    ec.rendezvous->Abort(status);
    return status;
  }
  return departed;
}

Status RunManual(const ManualPlan& p, ExecContext& ec, std::span<const View> in,
                 std::span<const View> out) {
  if (ec.rendezvous != nullptr) return RunNested(p, ec, in, out);
  // In a per-device run over several processes, only this process's devices' instances run here.
  auto runs_here = [&](int d) { return ec.network == nullptr || !ec.RemoteParticipant(d); };
  int present = 0;
  for (int d = 0; d < p.devices; ++d) present += runs_here(d) ? 1 : 0;
  runtime::Rendezvous rv(p.devices, present);
  std::vector<Status> statuses(static_cast<size_t>(p.devices), Status::Ok());
  auto run = [&](int d) {
    ExecContext instance;
    instance.device_ordinal = ec.device_ordinal;
    instance.partition_id = d;
    instance.num_partitions = p.devices;
    instance.rendezvous = &rv;
    instance.remote = ec.remote;
    instance.network = ec.network;
    instance.process_of = ec.process_of;
    instance.program_id = ec.program_id;
    instance.ffi_user_data = ec.ffi_user_data;
    instance.run_id = ec.run_id;
    Status s =
        RunInstance(p, instance, ec, d, ec.scratch + static_cast<size_t>(d) * p.instance_bytes, in);
    if (s.ok()) {
      rv.Leave(d);
    } else {
      s = s.WithContext("on device " + std::to_string(d));
      rv.Abort(s);
    }
    statuses[static_cast<size_t>(d)] = std::move(s);
  };
  std::vector<int> here;
  for (int d = 0; d < p.devices; ++d) {
    if (runs_here(d)) here.push_back(d);
  }
  if (here.empty()) return Internal("a manual computation with none of its devices here");
  std::vector<Thread> threads;
  for (size_t i = 1; i < here.size(); ++i) {
    const int d = here[i];
    StatusOr<Thread> t = Thread::Start([&run, d] { run(d); });
    if (!t.ok()) {
      rv.Abort(t.status());
      for (Thread& started : threads) started.Join();
      return t.status();
    }
    threads.push_back(std::move(t).value());
  }
  run(here[0]);
  for (Thread& t : threads) t.Join();
  for (const Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return PlaceResults(p, ec, out);
}

// ManualPlan::peers and group_holders (used when the op runs nested).
Status PlanGroups(ManualPlan& plan, const lower::Mesh& mesh, const std::vector<bool>& manual,
                  const std::vector<TensorSharding>& outs) {
  std::vector<std::vector<int64_t>> coords;
  for (int d = 0; d < plan.devices; ++d) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> c, mesh.CoordinatesOf(d));
    coords.push_back(std::move(c));
  }
  using Holder = TensorSharding::Holder;
  for (int d = 0; d < plan.devices; ++d) {
    std::vector<int> group;
    for (int e = 0; e < plan.devices; ++e) {
      bool same = true;
      for (size_t a = 0; a < manual.size(); ++a) {
        if (!manual[a] && coords[static_cast<size_t>(d)][a] != coords[static_cast<size_t>(e)][a]) {
          same = false;
        }
      }
      if (same) group.push_back(e);
    }
    plan.peers.push_back(std::move(group));
    std::vector<Holder> holders;
    for (const TensorSharding& s : outs) {
      const std::vector<int> split = s.ShardingAxes();
      Holder h = Holder::kPrimary;
      for (size_t a = 0; a < manual.size(); ++a) {
        const int axis = static_cast<int>(a);
        if (!manual[a] || coords[static_cast<size_t>(d)][a] == 0 ||
            std::find(split.begin(), split.end(), axis) != split.end()) {
          continue;
        }
        if (std::find(s.unreduced.begin(), s.unreduced.end(), axis) == s.unreduced.end()) {
          h = Holder::kReplica;
          break;
        }
        h = Holder::kPartial;
      }
      holders.push_back(h);
    }
    plan.group_holders.push_back(std::move(holders));
  }
  return Status::Ok();
}

StatusOr<Kernel> FinishManual(LowerContext& ctx, const std::shared_ptr<ManualPlan>& plan);

StatusOr<Kernel> LowerManualComputation(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  const ir::Module& m = ctx.module();
  KILN_ASSIGN_OR_RETURN(lower::MeshTable meshes, lower::MeshTable::FromModule(m));
  const ir::Attr* in_attr = op.attr("in_shardings");
  const ir::Attr* out_attr = op.attr("out_shardings");
  const ir::Attr* axes_attr = op.attr("manual_axes");
  const bool gspmd = op.name == "kiln.gspmd_manual_computation";
  if (in_attr == nullptr || out_attr == nullptr || (axes_attr == nullptr && !gspmd) ||
      op.regions.size() != 1 || op.regions[0].blocks.size() != 1) {
    return InvalidArgument(op.name + " without shardings, manual axes or a body");
  }
  auto plan = std::make_shared<ManualPlan>();
  plan->name = op.name;
  for (size_t i = 0; i < op.operands.size(); ++i) plan->in_global.push_back(ctx.operand_type(i));
  for (size_t i = 0; i < op.results.size(); ++i) plan->out_global.push_back(ctx.result_type(i));
  if (gspmd) {
    KILN_RETURN_IF_ERROR(manual::PlanGspmd(ctx, *plan));
    return FinishManual(ctx, plan);
  }
  KILN_ASSIGN_OR_RETURN(
      std::vector<TensorSharding> ins,
      lower::ParseShardingPerValue(*in_attr, meshes, plan->in_global, op.name + " operand"));
  KILN_ASSIGN_OR_RETURN(
      std::vector<TensorSharding> outs,
      lower::ParseShardingPerValue(*out_attr, meshes, plan->out_global, op.name + " result"));
  // The mesh: that of the shardings (they must agree); a program without operands or results
  // has nothing to split and runs on the module's only mesh.
  const lower::Mesh* mesh = nullptr;
  for (const auto* list : {&ins, &outs}) {
    for (const TensorSharding& s : *list) {
      if (mesh == nullptr) mesh = &s.mesh;
      if (s.mesh.axis_names != mesh->axis_names || s.mesh.axis_sizes != mesh->axis_sizes) {
        return Unimplemented(op.name + " over shardings of different meshes");
      }
    }
  }
  if (mesh == nullptr && meshes.meshes().size() == 1) mesh = &meshes.meshes()[0];
  if (mesh == nullptr) return InvalidArgument("cannot tell which mesh it runs on");
  std::vector<bool> manual(mesh->axis_names.size(), false);
  const ir::Attr* axis_list = axes_attr->Find("axes");
  if (axis_list == nullptr || axis_list->kind != ir::Attr::Kind::kArray) {
    return InvalidArgument("malformed manual_axes");
  }
  for (const ir::Attr& a : axis_list->array) {
    const int index = mesh->AxisIndex(a.str);
    if (index < 0) return InvalidArgument("manual axis \"" + a.str + "\" not in mesh");
    manual[static_cast<size_t>(index)] = true;
  }
  plan->devices = static_cast<int>(mesh->num_devices());
  if (plan->devices < 1 || plan->devices > 4096) {
    return Unimplemented(op.name + " over " + std::to_string(plan->devices) + " devices");
  }
  for (size_t i = 0; i < ins.size(); ++i) {
    // An unreduced operand: the program's own argument passes per device (device_values);
    // any other is a total in global view, split as the total on the devices at the unreduced
    // axes' origin and zeros on the others (compiler/partition.h).
    const bool linked = ctx.IsPerDevice(op.operands[i]);
    plan->in_per_device.push_back(linked ? op.operands[i] : -1);
    ins[i] = ManualPart(ins[i], manual);
  }
  for (size_t r = 0; r < outs.size(); ++r) {
    plan->out_per_device.push_back(ctx.IsPerDevice(op.results[r]) ? op.results[r] : -1);
    outs[r] = ManualPart(outs[r], manual);
  }

  KILN_RETURN_IF_ERROR(PlanGroups(*plan, *mesh, manual, outs));
  plan->ins = std::move(ins);
  plan->outs = std::move(outs);
  return FinishManual(ctx, plan);
}

// The rest of a manual computation's lowering, once its shardings and groups are planned: the
// body, and each device's pieces.
StatusOr<Kernel> FinishManual(LowerContext& ctx, const std::shared_ptr<ManualPlan>& plan) {
  const ir::Op& op = ctx.op();
  const ir::Module& m = ctx.module();
  const std::vector<TensorSharding>& ins = plan->ins;
  const std::vector<TensorSharding>& outs = plan->outs;
  const bool gspmd = op.name == "kiln.gspmd_manual_computation";
  const ir::Block& block = op.regions[0].blocks[0];
  if (block.args.size() != op.operands.size()) {
    return InvalidArgument("the body takes " + std::to_string(block.args.size()) + " values for " +
                           std::to_string(op.operands.size()) + " operands");
  }
  for (size_t i = 0; i < block.args.size(); ++i) plan->in_local.push_back(m.type_of(block.args[i]));
  KILN_ASSIGN_OR_RETURN(plan->body, ctx.CompileRegion(0));
  if (plan->body->result_slots.size() != op.results.size()) {
    return InvalidArgument("the body returns the wrong number of values");
  }
  for (int32_t slot : plan->body->result_slots) {
    plan->out_local.push_back(plan->body->slot_types[static_cast<size_t>(slot)]);
  }

  size_t offset = 0;
  auto reserve = [&offset](const ir::Type& t) {
    const size_t at = offset;
    offset += lower::AlignUp64(static_cast<size_t>(t.num_elements()) *
                               static_cast<size_t>(ir::DTypeByteSize(t.dtype)));
    return at;
  };
  for (int d = 0; d < plan->devices; ++d) {
    std::vector<Piece> in_pieces, out_pieces;
    offset = 0;
    for (size_t i = 0; i < ins.size(); ++i) {
      Piece piece;
      KILN_ASSIGN_OR_RETURN(piece.box, lower::ShardOf(ins[i], plan->in_global[i].dims, d));
      if (piece.box.dims != plan->in_local[i].dims) {
        return InvalidArgument("operand #" + std::to_string(i) + " " +
                               plan->in_global[i].ToString() + " split by its sharding does not " +
                               "give the body's " + plan->in_local[i].ToString());
      }
      piece.whole = ins[i].IsReplicated();
      if (!piece.whole && plan->in_per_device[i] < 0) piece.offset = reserve(plan->in_local[i]);
      KILN_ASSIGN_OR_RETURN(bool origin, ins[i].AtUnreducedOrigin(d));
      piece.zeros = !origin && plan->in_per_device[i] < 0;
      in_pieces.push_back(std::move(piece));
    }
    for (size_t r = 0; r < outs.size(); ++r) {
      Piece piece;
      KILN_ASSIGN_OR_RETURN(piece.box, lower::ShardOf(outs[r], plan->out_global[r].dims, d));
      if (piece.box.dims != plan->out_local[r].dims) {
        return InvalidArgument("result #" + std::to_string(r) + " " +
                               plan->out_local[r].ToString() + " does not make " +
                               plan->out_global[r].ToString() + " by its sharding");
      }
      piece.offset = reserve(plan->out_local[r]);
      KILN_ASSIGN_OR_RETURN(piece.holder, outs[r].HolderOf(d));
      // GSPMD: a result declared replicated is device 0's (each device may compute its own when
      // check_vma=False; XLA's global value is the first device's).
      if (gspmd && d != 0 && outs[r].IsReplicated())
        piece.holder = TensorSharding::Holder::kReplica;
      out_pieces.push_back(std::move(piece));
    }
    plan->in.push_back(std::move(in_pieces));
    plan->out.push_back(std::move(out_pieces));
  }
  plan->frame_offset = offset;  // the same layout for every instance
  plan->instance_bytes = lower::AlignUp64(offset + plan->body->total_bytes);
  Kernel k([plan](ExecContext& ec, std::span<const View> in, std::span<const View> out) {
    return RunManual(*plan, ec, in, out);
  });
  k.scratch_bytes = plan->instance_bytes * static_cast<size_t>(plan->devices);
  return k;
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterManualComputation(OpRegistry& registry) {
  registry.Add({"sdy.manual_computation", "sharding", &kernels::LowerManualComputation});
  registry.Add({"kiln.gspmd_manual_computation", "sharding", &kernels::LowerManualComputation});
}

}  // namespace kiln::kernels
