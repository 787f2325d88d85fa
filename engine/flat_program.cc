#include "engine/flat_program.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "engine/run_program.h"
#include "lower/fused_plan.h"

namespace kiln::engine {

using lower::AlignUp64;
using lower::ExecContext;
using lower::FusedPlan;
using lower::kMaxMapInputs;
using lower::MapCode;
using lower::MapInfo;
using lower::Program;
using lower::RangeFn;
using lower::SlotPlan;
using lower::Step;
namespace {

// Inlining stops at this depth of calls, or once the flat program has this many steps: past that,
// a call runs its callee with RunProgram, as it would outside a loop.
constexpr int kMaxCallDepth = 16;
constexpr size_t kMaxFlatSteps = 1 << 14;

// Whether a map step runs on the calling thread alone (runtime::ParallelFor would not split it),
// so its range function can be called directly.
bool DirectMap(const Step& step) {
  return step.kernel.map != nullptr && step.kernel.map->range != nullptr &&
         step.kernel.map->input_order.size() <= kMaxMapInputs &&
         step.kernel.map->elements < 2 * std::max<int64_t>(step.kernel.map->chunk, 1) &&
         step.inputs.size() >= step.kernel.map->input_order.size() && step.outputs.size() == 1;
}

}  // namespace

std::shared_ptr<const FlatProgram> FlatProgram::Build(std::shared_ptr<const Program> program) {
  static std::atomic<uint64_t> serials{0};
  auto flat = std::make_shared<FlatProgram>();
  flat->serial_ = ++serials;
  flat->root_ = std::move(program);
  flat->Inline(*flat->root_, {}, {}, 0, -1, 0);
  size_t offset = AlignUp64(flat->slots_.size() * sizeof(runtime::View));
  flat->io_views_offset_ = offset;
  offset += AlignUp64(flat->io_.size() * sizeof(runtime::View));
  flat->operands_offset_ = offset;
  offset += AlignUp64(flat->steps_.size() * sizeof(Operands));
  flat->temps_offset_ = offset;
  offset += AlignUp64(flat->temp_bytes_);
  flat->table_bytes_ = offset;
  return flat;
}

void FlatProgram::Inline(const Program& p, std::span<const int32_t> param_slots,
                         std::span<const int32_t> result_slots, uint64_t memory, int32_t call,
                         int depth) {
  const bool root = call < 0;
  std::vector<int32_t> flat(static_cast<size_t>(p.num_slots), -1);
  auto add = [&](Slot slot, size_t local) {
    flat[local] = static_cast<int32_t>(slots_.size());
    slots_.push_back(slot);
    template_.push_back(p.view_template[local]);
  };
  for (size_t s = 0; s < p.slots.size(); ++s) {
    if (p.slots[s].kind == lower::SlotKind::kConst) add({SlotKind::kConst, -1, 0}, s);
  }
  // patch_order lists parameters, results and frame values before aliases, so an alias's root
  // always has its flat slot already.
  for (int32_t s : p.patch_order) {
    const SlotPlan& plan = p.slots[static_cast<size_t>(s)];
    const auto local = static_cast<size_t>(s);
    const auto index = static_cast<size_t>(plan.index);
    switch (plan.kind) {
      case lower::SlotKind::kParam:
        add(root ? Slot{SlotKind::kParam, plan.index, 0}
                 : Slot{SlotKind::kAlias, param_slots[index], 0},
            local);
        break;
      case lower::SlotKind::kResult:
        add(root ? Slot{SlotKind::kResult, plan.index, 0}
                 : Slot{SlotKind::kAlias, result_slots[index], 0},
            local);
        break;
      case lower::SlotKind::kFrame:
        add({SlotKind::kFrame, -1, memory + p.buffers_offset + plan.offset}, local);
        break;
      case lower::SlotKind::kAlias:
        add({SlotKind::kAlias, flat[index], plan.offset}, local);
        break;
      case lower::SlotKind::kConst:
        break;
    }
  }
  const uint64_t scratch = memory + p.frame_bytes;
  for (const Step& step : p.steps) {
    if (!step.kernel.fn) continue;
    std::vector<int32_t> ins, outs;
    for (int32_t s : step.inputs) ins.push_back(flat[static_cast<size_t>(s)]);
    for (int32_t s : step.outputs) outs.push_back(flat[static_cast<size_t>(s)]);
    if (step.kernel.callee != nullptr && depth < kMaxCallDepth && steps_.size() < kMaxFlatSteps &&
        step.kernel.callee->param_slots.size() == ins.size() &&
        step.kernel.callee->result_slots.size() == outs.size()) {
      const auto c = static_cast<int32_t>(calls_.size());
      calls_.push_back({&step, call});
      keep_.push_back(step.kernel.callee);
      Inline(*step.kernel.callee, ins, outs, scratch, c, depth + 1);
      continue;
    }
    if (step.kernel.loop != nullptr &&
        InlineWhile(step, ins, outs, scratch, call, depth,
                    depth < kMaxCallDepth && steps_.size() < kMaxFlatSteps)) {
      continue;
    }
    if (!step.kernel.branches.empty() &&
        InlineBranches(step, ins, outs, scratch, call, depth,
                       depth < kMaxCallDepth && steps_.size() < kMaxFlatSteps)) {
      continue;
    }
    const auto io = static_cast<uint32_t>(io_.size());
    io_.insert(io_.end(), ins.begin(), ins.end());
    io_.insert(io_.end(), outs.begin(), outs.end());
    // A direct range call: `in` then the output, as refs_ entries.
    auto add_map = [&](RangeFn range, const void* state, int64_t elements,
                       const std::vector<PtrRef>& in, PtrRef out, MapCode code, uint8_t scalar) {
      FlatStep f{.kind = StepKind::kMap, .step = &step, .call = call};
      f.range = range;
      f.state = state;
      f.elements = elements;
      f.code = code;
      f.scalar = scalar;
      f.n_in = static_cast<uint16_t>(in.size());
      f.refs = static_cast<uint32_t>(refs_.size());
      refs_.insert(refs_.end(), in.begin(), in.end());
      refs_.push_back(out);
      steps_.push_back(f);
    };
    auto io_ref = [&](size_t k) { return PtrRef{false, io + static_cast<uint32_t>(k)}; };
    if (DirectMap(step)) {
      const MapInfo& map = *step.kernel.map;
      std::vector<PtrRef> in;
      uint8_t scalar = 0;
      for (size_t r = 0; r < map.input_order.size(); ++r) {
        in.push_back(io_ref(static_cast<size_t>(map.input_order[r])));
        if (r < map.scalar.size() && map.scalar[r]) scalar |= static_cast<uint8_t>(1u << r);
      }
      add_map(map.range, map.state.get(), map.elements, in, io_ref(ins.size()), map.code, scalar);
      continue;
    }
    if (step.fused != nullptr && step.fused->elements <= step.fused->tile &&
        step.fused->rows.fn == nullptr && step.fused->pre.fn == nullptr &&
        step.fused->native == nullptr) {
      // One tile: the members run one after another over all elements, as RunFused would,
      // with the temporaries in the table instead of on the stack. (A step with native code runs
      // as its kernel: one pass of registers over the tile beats a call per member.)
      const FusedPlan& plan = *step.fused;
      std::vector<uint32_t> temps;
      for (int width : plan.temp_widths) {
        temps.push_back(static_cast<uint32_t>(temp_bytes_));
        temp_bytes_ += AlignUp64(static_cast<size_t>(plan.elements) * static_cast<size_t>(width));
      }
      auto ref = [&](const FusedPlan::Ref& r) -> PtrRef {
        switch (r.kind) {
          case FusedPlan::Ref::kInput:
            return io_ref(static_cast<size_t>(r.index));
          case FusedPlan::Ref::kOutput:
            return io_ref(ins.size() + static_cast<size_t>(r.index));
          case FusedPlan::Ref::kTemp:
            break;
        }
        return {true, temps[static_cast<size_t>(r.index)]};
      };
      for (const FusedPlan::Member& m : plan.members) {
        std::vector<PtrRef> in;
        uint8_t scalar = 0;
        for (size_t r = 0; r < m.in.size(); ++r) {
          in.push_back(ref(m.in[r]));
          if (m.in[r].scalar) scalar |= static_cast<uint8_t>(1u << r);
        }
        add_map(m.range, m.state.get(), plan.elements, in, ref(m.out), m.code, scalar);
      }
      continue;
    }
    FlatStep f{.kind = step.kernel.direct.fn != nullptr ? StepKind::kDirect : StepKind::kKernel,
               .step = &step,
               .call = call};
    f.io = io;
    f.n_in = static_cast<uint16_t>(ins.size());
    f.n_out = static_cast<uint16_t>(outs.size());
    f.scratch = scratch;
    steps_.push_back(f);
  }
  // Results no step wrote in place are copied when the program ends.
  for (const auto& [slot, index] : p.result_copies) {
    int32_t to;
    if (root) {
      to = static_cast<int32_t>(slots_.size());
      slots_.push_back({SlotKind::kResult, index, 0});
      template_.push_back(p.view_template[static_cast<size_t>(slot)]);
    } else {
      to = result_slots[static_cast<size_t>(index)];
    }
    FlatStep f;
    f.kind = StepKind::kCopy;
    f.io = static_cast<uint32_t>(io_.size());
    f.n_in = 1;
    f.n_out = 1;
    f.scratch = template_[static_cast<size_t>(to)].byte_size();  // bytes to copy
    f.call = call;
    io_.push_back(flat[static_cast<size_t>(slot)]);
    io_.push_back(to);
    steps_.push_back(f);
  }
}

Status FlatProgram::Resolve(std::span<const runtime::View> params,
                            std::span<const runtime::View> results, std::byte* memory,
                            std::byte* table) const {
  const Program& p = *root_;
  if (params.size() != p.param_slots.size() || results.size() != p.result_slots.size()) {
    return Internal("program expects " + std::to_string(p.param_slots.size()) + " arguments and " +
                    std::to_string(p.result_slots.size()) + " results, got " +
                    std::to_string(params.size()) + " and " + std::to_string(results.size()));
  }
  auto* views = reinterpret_cast<runtime::View*>(table);
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    runtime::View* v = new (&views[i]) runtime::View(template_[i]);
    const runtime::View* given = nullptr;
    switch (s.kind) {
      case SlotKind::kParam:
        given = &params[static_cast<size_t>(s.index)];
        break;
      case SlotKind::kResult:
        given = &results[static_cast<size_t>(s.index)];
        break;
      case SlotKind::kFrame:
        v->ptr = memory + s.offset;
        break;
      case SlotKind::kAlias: {
        auto* root = static_cast<std::byte*>(views[s.index].ptr);
        v->ptr = root == nullptr ? nullptr : root + s.offset;
        break;
      }
      case SlotKind::kConst:
        break;
    }
    if (given != nullptr) {
      if (given->dtype != v->dtype || given->elements != v->elements) {
        return Internal(
            std::string(s.kind == SlotKind::kParam ? "argument" : "result") + " #" +
            std::to_string(s.index) + " is " + std::string(ir::DTypeName(given->dtype)) + " with " +
            std::to_string(given->elements) + " elements, but the program declares " +
            std::to_string(v->elements) + " of " + std::string(ir::DTypeName(v->dtype)));
      }
      v->ptr = given->ptr;
    }
  }
  auto* io = reinterpret_cast<runtime::View*>(table + io_views_offset_);
  for (size_t i = 0; i < io_.size(); ++i) {
    new (&io[i]) runtime::View(views[static_cast<size_t>(io_[i])]);
  }
  auto* operands = reinterpret_cast<Operands*>(table + operands_offset_);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const FlatStep& f = steps_[i];
    Operands* o = new (&operands[i]) Operands{};
    switch (f.kind) {
      case StepKind::kMap: {
        auto address = [&](const PtrRef& r) -> void* {
          return r.temp ? table + temps_offset_ + r.index : io[r.index].ptr;
        };
        for (uint16_t r = 0; r < f.n_in; ++r) o->in[r] = address(refs_[f.refs + r]);
        o->out = address(refs_[f.refs + f.n_in]);
        break;
      }
      case StepKind::kCopy:
        o->in[0] = io[f.io].ptr;
        o->out = io[f.io + 1].ptr;
        break;
      case StepKind::kKernel:
        o->out = memory + f.scratch;
        break;
      case StepKind::kDirect:
      case StepKind::kBranch:
      case StepKind::kJump:
        break;
    }
  }
  return Status::Ok();
}

std::pair<int32_t, uint64_t> FlatProgram::RootOf(int32_t slot) const {
  uint64_t offset = 0;
  while (slots_[static_cast<size_t>(slot)].kind == SlotKind::kAlias) {
    offset += slots_[static_cast<size_t>(slot)].offset;
    slot = slots_[static_cast<size_t>(slot)].index;
  }
  return {slot, offset};
}

bool FlatProgram::UpdatesInPlace(size_t index) const {
  int32_t param = -1, result = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.index != static_cast<int32_t>(index)) continue;
    if (s.kind == SlotKind::kParam) param = static_cast<int32_t>(i);
    if (s.kind == SlotKind::kResult && result < 0) result = static_cast<int32_t>(i);
  }
  if (param < 0 || result < 0 ||
      template_[static_cast<size_t>(param)].byte_size() !=
          template_[static_cast<size_t>(result)].byte_size()) {
    return false;
  }
  int readers = 0;
  bool writer_reads_it = false;
  for (const FlatStep& f : steps_) {
    for (uint16_t k = 0; k < f.n_in; ++k) {
      int32_t slot;
      if (f.kind == StepKind::kMap) {
        const PtrRef& r = refs_[f.refs + k];
        if (r.temp) continue;
        slot = io_[r.index];
      } else {
        slot = io_[f.io + k];
      }
      if (RootOf(slot).first != param) continue;
      ++readers;
      const bool kernel = f.kind == StepKind::kKernel || f.kind == StepKind::kDirect;
      const auto out =
          kernel && f.n_out == 1 ? RootOf(io_[f.io + f.n_in]) : std::pair<int32_t, uint64_t>{-1, 0};
      writer_reads_it = kernel && f.step->kernel.in_place_input == k && RootOf(slot).second == 0 &&
                        out.first == result && out.second == 0;
    }
  }
  return readers == 1 && writer_reads_it;
}

Status FlatProgram::Context(Status s, const FlatStep& f) const {
  if (f.step != nullptr) s = s.WithContext(f.step->what);
  for (int32_t c = f.call; c >= 0; c = calls_[static_cast<size_t>(c)].parent) {
    s = s.WithContext(calls_[static_cast<size_t>(c)].step->what);
  }
  return s;
}

uint64_t FlatProgram::RunKernelStep(const FlatProgram* self, ExecContext* ctx,
                                    const std::byte* table, Status* error, uint64_t index) {
  const FlatStep& f = self->steps_[index];
  const auto* io = reinterpret_cast<const runtime::View*>(table + self->io_views_offset_);
  const auto* operands = reinterpret_cast<const Operands*>(table + self->operands_offset_);
  std::byte* const saved_scratch = ctx->scratch;
  ctx->scratch = static_cast<std::byte*>(operands[index].out);
  Status s = f.step->kernel.fn(*ctx, std::span<const runtime::View>(io + f.io, f.n_in),
                               std::span<const runtime::View>(io + f.io + f.n_in, f.n_out));
  ctx->scratch = saved_scratch;
  if (s.ok()) return 0;
  *error = std::move(s);
  return index + 1;
}

Status FlatProgram::StepContext(Status s, size_t index) const {
  if (index >= steps_.size()) return s;
  return Context(std::move(s), steps_[index]);
}

Status FlatProgram::Run(ExecContext& ctx, const std::byte* table) const {
  const auto* io = reinterpret_cast<const runtime::View*>(table + io_views_offset_);
  const auto* operands = reinterpret_cast<const Operands*>(table + operands_offset_);
  const size_t n = steps_.size();
  for (size_t i = 0; i < n;) {
    const FlatStep& f = steps_[i];
    const Operands& o = operands[i];
    size_t next = i + 1;
    switch (f.kind) {
      case StepKind::kMap:
        f.range(o.in, o.out, 0, f.elements, f.state);
        break;
      case StepKind::kCopy:
        if (o.in[0] != o.out && f.scratch > 0) std::memmove(o.out, o.in[0], f.scratch);
        break;
      case StepKind::kDirect:
        f.step->kernel.direct.fn(f.step->kernel.direct.state.get(), io + f.io, io + f.io + f.n_in);
        break;
      case StepKind::kKernel: {
        Status error;
        if (RunKernelStep(this, &ctx, table, &error, i) != 0) return Context(std::move(error), f);
        break;
      }
      case StepKind::kBranch:
        next = targets_[f.target + Chosen(f, io[f.io].ptr)];
        break;
      case StepKind::kJump:
        next = f.target;
        break;
    }
    i = next;
  }
  return Status::Ok();
}

Status NativeLoop::Run(ExecContext& ctx, std::byte* const tables[4], std::byte* memory,
                       const uint8_t* pred, int* set) const {
  Status error;
  const uint64_t failed = fn_(tables, &ctx, &error, pred, set, memory);
  if (failed == 0) return Status::Ok();
  const bool in_body = (failed >> 32) != 0;
  const size_t index = static_cast<size_t>(failed & 0xffffffffu) - 1;
  return (in_body ? body_ : cond_)
      ->StepContext(std::move(error), index)
      .WithContext(in_body ? "in the body of stablehlo.while"
                           : "in the condition of stablehlo.while");
}

Status NativeLoop::RunOnce(ExecContext& ctx, std::byte* table, std::byte* memory) const {
  Status error;
  std::byte* const tables[4] = {table, table, table, table};
  const uint8_t pred = 0;
  int set = 0;
  const uint64_t failed = fn_(tables, &ctx, &error, &pred, &set, memory);
  if (failed == 0) return Status::Ok();
  return body_->StepContext(std::move(error), static_cast<size_t>(failed & 0xffffffffu) - 1);
}

}  // namespace kiln::engine
