#include "compiler/fusion.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/fused_native.h"
#include "compiler/whole_views.h"
#include "engine/fused_run.h"
#include "runtime/trace.h"

namespace kiln::compiler {

using engine::RunFused;
using lower::ExecContext;
using lower::FusedPlan;
using lower::kMaxMapInputs;
using lower::kMaxMembers;
using lower::kTileScratchBytes;
using lower::MapInfo;
using lower::MapOp;
using lower::Program;
using lower::Step;
namespace {

using Ref = FusedPlan::Ref;
using Member = FusedPlan::Member;

// Fuses steps[group] (map steps, in order) into one step; `used_outside` says which member
// outputs are read outside the group or returned. `rows`, if not null, is a row reduction
// (Direct::rows) of a member's output that may join the run: *joined says whether it did. Members
// from `post_begin` on (group.size() when none) run after the reduction: they may read its output,
// or an alias of it (`rows_aliases`), only through index maps that broadcast it along its rows;
// such a group is made only if the reduction joins (else nullopt).
// `pre`, if not null, is a row reduction of a value complete before the run, which the members
// read only through index maps broadcasting its result (or an alias of it, `pre_aliases`) along
// its rows: it joins ahead of the members, or no step is made (nullopt).
std::optional<Step> MakeFusedStep(const Program& p, const std::vector<const void*>& constant_of,
                                  const std::vector<size_t>& group, size_t post_begin,
                                  const std::vector<bool>& used_outside, const Step* rows,
                                  const std::vector<int32_t>& rows_aliases, bool* joined,
                                  bool small_native, const Step* pre = nullptr,
                                  const std::vector<int32_t>& pre_aliases = {}) {
  *joined = false;
  auto f = std::make_shared<FusedPlan>();
  Step fused;
  std::vector<int32_t> producer_ref(static_cast<size_t>(p.num_slots), -1);  // slot -> member
  std::vector<Ref> slot_ref(static_cast<size_t>(p.num_slots));
  std::vector<bool> input_scalar;    // per fused-step input
  std::vector<bool> input_absolute;  // per fused-step input: read whole by an index-map member
  int64_t min_chunk = INT64_MAX;
  int max_width = 1;
  auto add_input = [&](int32_t slot, bool scalar, int64_t elements, int width,
                       bool absolute = false) {
    fused.inputs.push_back(slot);
    input_scalar.push_back(scalar);
    input_absolute.push_back(absolute);
    f->input_elements.push_back(elements);
    f->input_widths.push_back(width);
    return static_cast<int32_t>(fused.inputs.size() - 1);
  };
  // A joined row reduction `s` of x: its initial value an input, its result an output.
  auto add_reduction = [&](FusedPlan::Rows& r, const Step& s, const Ref& x) {
    r.fn = s.kernel.direct.rows;
    r.state = s.kernel.direct.state;
    r.row_length = s.kernel.direct.row_length;
    r.x = x;
    r.init = add_input(s.inputs[1], true, 1, x.width);
    r.result = static_cast<int32_t>(fused.outputs.size());
    fused.outputs.push_back(s.outputs[0]);
  };
  // The trailing reduction is registered before the members that read its result, else after all
  // members; it reduces a member's value.
  auto add_rows = [&]() {
    add_reduction(f->rows, *rows, slot_ref[static_cast<size_t>(rows->inputs[0])]);
  };
  if (pre != nullptr) {  // its operand is an input read element by element
    const ir::Type& xt = p.slot_types[static_cast<size_t>(pre->inputs[0])];
    const int width = ir::DTypeByteSize(xt.dtype);
    const int32_t x = add_input(pre->inputs[0], false, xt.num_elements(), width);
    add_reduction(f->pre, *pre, Ref{Ref::kInput, x, false, width});
  }
  const bool post = post_begin < group.size();
  for (size_t gi = 0; gi < group.size(); ++gi) {
    if (post && gi == post_begin) add_rows();
    const Step& s = p.steps[group[gi]];
    const MapInfo& map = *s.kernel.map;
    Member m;
    m.range = map.range;
    m.state = map.state;
    m.code = map.code;
    m.absolute = map.absolute;
    for (size_t r = 0; r < map.input_order.size(); ++r) {
      const size_t ki = static_cast<size_t>(map.input_order[r]);
      const int32_t slot = s.inputs[ki];
      if (producer_ref[static_cast<size_t>(slot)] >= 0) {  // FuseElementwise keeps absolute out
        m.in.push_back(slot_ref[static_cast<size_t>(slot)]);
        continue;
      }
      if (pre != nullptr &&
          std::find(pre_aliases.begin(), pre_aliases.end(), slot) != pre_aliases.end()) {
        // A row broadcast of the leading reduction's result (FuseElementwise checked).
        m.in.push_back(Ref{Ref::kOutput, f->pre.result, false, map.in_widths[ki]});
        continue;
      }
      if (gi >= post_begin &&
          std::find(rows_aliases.begin(), rows_aliases.end(), slot) != rows_aliases.end()) {
        // A row broadcast of the reduction's result (FuseElementwise checked): read whole.
        m.in.push_back(Ref{Ref::kOutput, f->rows.result, false, map.in_widths[ki]});
        continue;
      }
      // An input from outside the group: one fused-step input per distinct slot and kind.
      const bool scalar = map.scalar[r] && !map.absolute;
      int32_t index = -1;
      for (size_t i = 0; i < fused.inputs.size(); ++i) {
        if (fused.inputs[i] == slot && input_scalar[i] == scalar &&
            input_absolute[i] == map.absolute) {
          index = static_cast<int32_t>(i);
        }
      }
      if (index < 0) {
        index = add_input(slot, scalar,
                          map.absolute ? p.slot_types[static_cast<size_t>(slot)].num_elements()
                                       : (scalar ? 1 : map.elements),
                          map.in_widths[ki], map.absolute);
      }
      m.in.push_back(Ref{Ref::kInput, index, scalar, map.in_widths[ki]});
    }
    const int32_t out_slot = s.outputs[0];
    Ref out;
    out.width = map.out_width;
    if (used_outside[gi]) {
      out.kind = Ref::kOutput;
      out.index = static_cast<int32_t>(fused.outputs.size());
      fused.outputs.push_back(out_slot);
    } else {
      out.kind = Ref::kTemp;
      out.index = static_cast<int32_t>(f->temp_widths.size());
      f->temp_widths.push_back(map.out_width);
    }
    m.out = out;
    producer_ref[static_cast<size_t>(out_slot)] = static_cast<int32_t>(gi);
    slot_ref[static_cast<size_t>(out_slot)] = out;
    f->members.push_back(std::move(m));
    f->elements = map.elements;
    min_chunk = std::min(min_chunk, map.chunk);
    max_width = std::max(max_width, map.out_width);
  }
  // Each tile runs the members in order, so an output may be computed into an input that only
  // members up to its own read, element by element at its width.
  fused.overwritable.resize(fused.outputs.size());
  for (size_t m = 0; m < f->members.size(); ++m) {
    const Ref& out = f->members[m].out;
    if (out.kind != Ref::kOutput) continue;
    for (size_t fi = 0; fi < fused.inputs.size(); ++fi) {
      // Not an input read whole (a broadcast's operand), nor by a later member of the run.
      if (input_scalar[fi] || input_absolute[fi] || f->input_widths[fi] != out.width) continue;
      bool read_later = false;
      for (size_t other = 0; other < fused.inputs.size(); ++other) {
        if (input_absolute[other] && fused.inputs[other] == fused.inputs[fi]) read_later = true;
      }
      for (size_t later = m + 1; later < f->members.size() && !read_later; ++later) {
        for (const Ref& r : f->members[later].in) {
          if (r.kind == Ref::kInput && static_cast<size_t>(r.index) == fi) read_later = true;
        }
      }
      if (!read_later) {
        fused.overwritable[static_cast<size_t>(out.index)].push_back(static_cast<int32_t>(fi));
      }
    }
  }
  size_t temp_bytes_per_element = 0;
  for (int w : f->temp_widths) temp_bytes_per_element += static_cast<size_t>(w);
  int64_t tile = 1024;
  while (tile > 64 &&
         static_cast<size_t>(tile) * temp_bytes_per_element + 64 * f->temp_widths.size() >
             kTileScratchBytes) {
    tile /= 2;
  }
  // A row reduction joins when whole rows fit a tile and there are several tiles (a single
  // tile's members run inline in loops: flat_program.h); both, when their rows are as long.
  auto fits = [&](int64_t length) {
    return length > 0 && length <= tile && f->elements % length == 0 &&
           f->elements > tile / length * length;
  };
  const int64_t row_length = rows != nullptr ? rows->kernel.direct.row_length : 0;
  if (pre != nullptr) {
    const int64_t length = pre->kernel.direct.row_length;
    if (!fits(length) || (row_length > 0 && row_length != length) ||
        f->input_elements[static_cast<size_t>(f->pre.x.index)] != f->elements) {
      return std::nullopt;
    }
    tile = tile / length * length;
  }
  if (fits(row_length)) {
    tile = tile / row_length * row_length;
    if (!post) add_rows();
    fused.overwritable.resize(fused.outputs.size());
    *joined = true;
  } else if (post) {
    return std::nullopt;
  }
  f->post_begin = post ? post_begin : f->members.size();
  f->tile = tile;
  for (size_t gi = 0; gi < group.size(); ++gi) {
    Member& m = f->members[gi];
    const bool reduced =
        f->rows.fn != nullptr && f->rows.x.kind == m.out.kind && f->rows.x.index == m.out.index;
    m.row_value = m.absolute && p.steps[group[gi]].kernel.map->row_broadcast == tile && !reduced;
    // A broadcast of a one-element input (a constant splat): native code reads the element.
    if (m.absolute && m.code.op == MapOp::kBroadcast && m.in.size() == 1 &&
        m.in[0].kind == Ref::kInput && f->input_elements[static_cast<size_t>(m.in[0].index)] == 1) {
      m.row_value = true;
    }
  }
  f->chunk = std::max<int64_t>(1, min_chunk / tile);
  // Inputs that are constants of one repeated value (folded splats: jnp's divisors, `x * 3`).
  f->input_splat.assign(fused.inputs.size(), {});
  for (size_t i = 0; i < fused.inputs.size(); ++i) {
    const auto* c =
        static_cast<const std::byte*>(constant_of[static_cast<size_t>(fused.inputs[i])]);
    const auto width = static_cast<size_t>(f->input_widths[i]);
    if (c == nullptr || width > 8) continue;
    const auto bytes = static_cast<size_t>(f->input_elements[i]) * width;
    bool same = bytes >= width;
    for (size_t b = width; b < bytes && same; b += width) same = std::memcmp(c, c + b, width) == 0;
    if (!same) continue;
    f->input_splat[i].known = true;
    std::memcpy(&f->input_splat[i].bits, c, width);
  }
  runtime::TraceSpan span("compile: native code", "compile");
  f->native = codegen::BuildNativeTile(*f, 0, f->post_begin, small_native);
  if (post) {
    f->native_post = codegen::BuildNativeTile(*f, f->post_begin, f->members.size(), small_native);
    if (f->native == nullptr || f->native_post == nullptr) f->native = f->native_post = nullptr;
  }
  f->name = "fused " + std::to_string(group.size()) + " elementwise ops" +
            (pre != nullptr && *joined ? " with two row reductions"
             : pre != nullptr          ? " after a row reduction"
             : *joined                 ? (post ? " around a row reduction" : " and a row reduction")
                                       : "") +
            (f->native != nullptr ? " (native code)" : "") + " from " + p.steps[group.front()].what;
  fused.what = f->name;
  fused.family = "fused elementwise";
  fused.kernel.fn = [f](ExecContext&, std::span<const runtime::View> in,
                        std::span<const runtime::View> out) {
    return engine::RunFused(*f, in, out);
  };
  fused.fused = std::move(f);
  return fused;
}

}  // namespace

void FuseElementwise(Program& p, bool small_native) {
  ReadThroughWholeViews(p);
  const size_t num_steps = p.steps.size();
  // The bytes of each slot a constant step defines, or a view of one from its start (the steps
  // move out of p.steps as runs are made; the bytes stay where their kernels keep them).
  std::vector<const void*> constant_of(static_cast<size_t>(p.num_slots), nullptr);
  for (const Step& s : p.steps) {
    if (s.outputs.size() != 1) continue;
    const auto out = static_cast<size_t>(s.outputs[0]);
    if (s.kernel.constant != nullptr) {
      constant_of[out] = s.kernel.constant.get();
    } else if (!s.kernel.fn && s.kernel.aliases.size() == 1 && s.inputs.size() == 1 &&
               s.kernel.aliases[0].input == 0 && s.kernel.aliases[0].byte_offset == 0) {
      constant_of[out] = constant_of[static_cast<size_t>(s.inputs[0])];
    }
  }
  // Who reads each slot: the step indices, and whether the program returns it.
  std::vector<std::vector<size_t>> readers(static_cast<size_t>(p.num_slots));
  for (size_t i = 0; i < num_steps; ++i) {
    for (int32_t s : p.steps[i].inputs) readers[static_cast<size_t>(s)].push_back(i);
  }
  std::vector<bool> returned(static_cast<size_t>(p.num_slots), false);
  for (int32_t s : p.result_slots) returned[static_cast<size_t>(s)] = true;

  // The step that defines each slot (parameters: none).
  std::vector<size_t> producer(static_cast<size_t>(p.num_slots), SIZE_MAX);
  for (size_t k = 0; k < num_steps; ++k) {
    for (int32_t s : p.steps[k].outputs) producer[static_cast<size_t>(s)] = k;
  }

  // Per step of `steps`: whether its output is returned or read by a step other than those and
  // `joined` (a reduction that joins them).
  auto UsedOutside = [&](const std::vector<size_t>& steps, size_t joined) {
    std::unordered_set<size_t> inside(steps.begin(), steps.end());
    std::vector<bool> outside(steps.size(), false);
    for (size_t gi = 0; gi < steps.size(); ++gi) {
      const int32_t slot = p.steps[steps[gi]].outputs[0];
      outside[gi] = returned[static_cast<size_t>(slot)];
      for (size_t r : readers[static_cast<size_t>(slot)]) {
        if (!inside.count(r) && r != joined) outside[gi] = true;
      }
    }
    return outside;
  };

  auto contains = [](const std::vector<int32_t>& slots, int32_t slot) {
    return std::find(slots.begin(), slots.end(), slot) != slots.end();
  };
  // A step without code whose output is its input from byte 0 (a reshape) of one of `slots`.
  auto whole_view_of = [&](const Step& v, const std::vector<int32_t>& slots) {
    return v.inputs.size() == 1 && v.outputs.size() == 1 && v.kernel.aliases.size() == 1 &&
           v.kernel.aliases[0].input == 0 && v.kernel.aliases[0].byte_offset == 0 &&
           contains(slots, v.inputs[0]);
  };

  auto fusible = [&](const Step& s) {
    return s.kernel.fn && s.kernel.map != nullptr && s.outputs.size() == 1 &&
           s.kernel.map->elements > 0 && s.kernel.map->input_order.size() <= kMaxMapInputs;
  };

  std::vector<Step> out;
  out.reserve(num_steps);
  size_t i = 0;
  while (i < num_steps) {
    if (!fusible(p.steps[i])) {
      out.push_back(std::move(p.steps[i]));
      ++i;
      continue;
    }
    const int64_t n = p.steps[i].kernel.map->elements;
    std::vector<size_t> group{i};
    std::vector<size_t> passive;  // steps without code inside the run (constants, views)
    // Steps inside the run that read only values complete before it (or made by such steps): they
    // move ahead of the fused step, so that they do not split it (the scalar compares and selects
    // of jnp's `%` and `//` between the array ops).
    std::vector<size_t> hoisted;
    // A step without code (a constant, a view) inside the run that a hoisted step reads moves
    // ahead with it (the interpreter sets a view up when its step runs); it is ready when what it
    // reads is. `needed` collects such steps.
    auto ready = [&](auto&& self, const Step& s, std::vector<size_t>& needed) -> bool {
      for (int32_t in : s.inputs) {
        const size_t k = producer[static_cast<size_t>(in)];
        if (k == SIZE_MAX || k < i) continue;
        if (std::find(hoisted.begin(), hoisted.end(), k) != hoisted.end()) continue;
        if (p.steps[k].kernel.fn || !self(self, p.steps[k], needed)) return false;
        if (std::find(needed.begin(), needed.end(), k) == needed.end()) needed.push_back(k);
      }
      return true;
    };
    size_t j = i + 1;
    for (; j < num_steps && group.size() < kMaxMembers; ++j) {
      const Step& s = p.steps[j];
      if (!s.kernel.fn) {
        passive.push_back(j);
        continue;
      }
      std::vector<size_t> needed;
      if (!fusible(s) || s.kernel.map->elements != n) {
        // Only elementwise steps of a smaller size and steps on single elements move (not data
        // movement of arrays, whose in-place and aliasing plans assume their place; not larger
        // elementwise steps, which a run of their own size fuses: a loop counter's scalar run
        // ahead of a body's array ops would take them out of their run one by one).
        auto scalar = [&](int32_t slot) {
          return p.slot_types[static_cast<size_t>(slot)].num_elements() == 1;
        };
        const bool movable =
            (fusible(s) && !s.kernel.map->absolute && s.kernel.map->elements < n) ||
            (s.kernel.aliases.empty() && std::all_of(s.inputs.begin(), s.inputs.end(), scalar) &&
             std::all_of(s.outputs.begin(), s.outputs.end(), scalar));
        if (!movable || s.outputs.empty() || !ready(ready, s, needed) ||
            hoisted.size() >= kMaxMembers) {
          break;
        }
        for (size_t k : needed) {
          hoisted.push_back(k);
          passive.erase(std::remove(passive.begin(), passive.end(), k), passive.end());
        }
        hoisted.push_back(j);
        std::sort(hoisted.begin(), hoisted.end());
        continue;
      }
      // An index map reads its operand whole, so the operand must be complete before the run
      // starts: not written by the run itself, nor a view of something it writes.
      // (The constants and views it reads move ahead of the run too.)
      if (s.kernel.map->absolute) {
        if (!ready(ready, s, needed)) break;
        for (size_t k : needed) {
          hoisted.push_back(k);
          passive.erase(std::remove(passive.begin(), passive.end(), k), passive.end());
        }
        std::sort(hoisted.begin(), hoisted.end());
      }
      group.push_back(j);
    }
    // A trailing index map (a broadcast whose reader the member limit cut off) is read by no
    // member: as the run's last member its tile would be written out in full, and native code
    // refuses such a run. It starts the next run instead, beside its reader.
    while (group.size() > 1 && p.steps[group.back()].kernel.map->absolute) group.pop_back();
    // Trailing passive and hoisted steps belong after the run, not inside it.
    while (!passive.empty() && passive.back() > group.back()) passive.pop_back();
    while (!hoisted.empty() && hoisted.back() > group.back()) hoisted.pop_back();
    const size_t end = group.back() + 1;
    if (group.size() == 1) {
      for (size_t k = i; k < end; ++k) out.push_back(std::move(p.steps[k]));
      i = end;
      continue;
    }
    std::unordered_set<size_t> members(group.begin(), group.end());
    const std::vector<bool> used_outside = UsedOutside(group, SIZE_MAX);
    // A row reduction just before the run (passive steps between), over rows of as many elements
    // as the run has, whose result (or a view of it) the run reads only through broadcasts along
    // its rows, may join ahead of the members (softmax's row maximum): out[pre_at].
    size_t pre_at = out.size();
    while (pre_at > 0 && !out[pre_at - 1].kernel.fn) --pre_at;
    const Step* pre = nullptr;
    std::vector<int32_t> pre_aliases;
    if (pre_at > 0 && hoisted.empty()) {  // (a hoisted step may read the reduction)
      const Step& r = out[pre_at - 1];
      const int64_t length = r.kernel.direct.row_length;
      if (r.kernel.direct.rows != nullptr && r.fused == nullptr && r.inputs.size() == 2 &&
          r.outputs.size() == 1 && length > 0 &&
          p.slot_types[static_cast<size_t>(r.inputs[0])].num_elements() == n) {
        pre_aliases.push_back(r.outputs[0]);
        for (size_t k = pre_at; k < out.size(); ++k) {
          if (whole_view_of(out[k], pre_aliases)) pre_aliases.push_back(out[k].outputs[0]);
        }
        bool reads = false, ok = true;
        for (size_t k : group) {
          const Step& s = p.steps[k];
          for (int32_t slot : s.inputs) {
            if (!contains(pre_aliases, slot)) continue;
            reads = true;
            ok = ok && s.kernel.map->absolute && s.kernel.map->row_broadcast == length;
          }
        }
        if (reads && ok) pre = &r;
      }
    }
    // The fused step, with the leading reduction if it joins, else without; nullopt when a
    // trailing reduction with a run after it (post_begin < steps) does not join.
    bool with_pre = false;
    auto make = [&](const std::vector<size_t>& steps, size_t post_begin,
                    const std::vector<bool>& outside, const Step* rows,
                    const std::vector<int32_t>& rows_aliases, bool* joined) {
      std::optional<Step> fused;
      if (pre != nullptr) {
        fused = MakeFusedStep(p, constant_of, steps, post_begin, outside, rows, rows_aliases,
                              joined, small_native, pre, pre_aliases);
      }
      with_pre = fused.has_value();
      if (!with_pre)
        fused = MakeFusedStep(p, constant_of, steps, post_begin, outside, rows, rows_aliases,
                              joined, small_native);
      return fused;
    };
    // Appends it after the hoisted steps: a leading reduction that joined leaves `out`, and the
    // views of its result after it follow the fused step.
    auto emit = [&](std::optional<Step> fused) {
      for (size_t k : hoisted) out.push_back(std::move(p.steps[k]));
      if (!with_pre) {
        out.push_back(std::move(*fused));
        return;
      }
      std::vector<Step> kept, views;
      for (size_t k = pre_at; k < out.size(); ++k) {
        const bool view = !out[k].outputs.empty() && contains(pre_aliases, out[k].outputs[0]);
        (view ? views : kept).push_back(std::move(out[k]));
      }
      out.resize(pre_at - 1);
      for (Step& k : kept) out.push_back(std::move(k));
      out.push_back(std::move(*fused));
      for (Step& v : views) out.push_back(std::move(v));
    };
    // A row reduction of a member's output right after the run (passive steps between) may join
    // it, when its initial value is there before the run starts.
    size_t next = end;
    while (next < num_steps && !p.steps[next].kernel.fn) ++next;
    const Step* rows = nullptr;
    if (next < num_steps) {
      const Step& r = p.steps[next];
      if (r.kernel.direct.rows != nullptr && r.inputs.size() == 2 && r.outputs.size() == 1 &&
          members.count(producer[static_cast<size_t>(r.inputs[0])]) != 0) {
        const size_t init = producer[static_cast<size_t>(r.inputs[1])];
        if (init == SIZE_MAX || init < i ||
            (!p.steps[init].kernel.fn && p.steps[init].kernel.constant)) {
          rows = &r;
        }
      }
    }
    // A run after the reduction that reads the reduction's result only through broadcasts along
    // its rows, and the first run's values only element by element, may join as well: it then
    // runs on each tile after the tile's rows are reduced (softmax's division by each row's sum).
    std::vector<size_t> post_group, post_passive;
    std::vector<int32_t> rows_aliases;
    if (rows != nullptr) {
      const int64_t row_length = rows->kernel.direct.row_length;
      rows_aliases.push_back(rows->outputs[0]);
      std::unordered_set<size_t> post_members;
      for (size_t k = next + 1; k < num_steps && group.size() + post_group.size() < kMaxMembers;
           ++k) {
        const Step& s = p.steps[k];
        if (!s.kernel.fn) {
          if (whole_view_of(s, rows_aliases)) rows_aliases.push_back(s.outputs[0]);
          post_passive.push_back(k);
          continue;
        }
        if (!fusible(s) || s.kernel.map->elements != n) break;
        bool ok = true;
        for (int32_t slot : s.inputs) {
          const size_t prod = producer[static_cast<size_t>(slot)];
          if (contains(rows_aliases, slot)) {
            ok = ok && s.kernel.map->absolute && s.kernel.map->row_broadcast == row_length;
          } else if (members.count(prod) != 0 || post_members.count(prod) != 0) {
            ok = ok && !s.kernel.map->absolute;
          } else {
            ok = ok && (prod == SIZE_MAX || prod < i ||
                        (!p.steps[prod].kernel.fn && p.steps[prod].kernel.constant));
          }
        }
        if (!ok) break;
        post_group.push_back(k);
        post_members.insert(k);
      }
      // Only a run that reads the result joins; passive steps after it stay where they are.
      bool reads_result = false;
      for (size_t k : post_group) {
        for (int32_t slot : p.steps[k].inputs) {
          reads_result = reads_result || contains(rows_aliases, slot);
        }
      }
      if (!reads_result) post_group.clear();
      while (!post_passive.empty() &&
             (post_group.empty() || post_passive.back() > post_group.back())) {
        post_passive.pop_back();
      }
    }
    if (!post_group.empty()) {
      std::vector<size_t> all = group;
      all.insert(all.end(), post_group.begin(), post_group.end());
      const std::vector<bool> outside_all = UsedOutside(all, next);  // the reduction joins
      bool joined = false;
      std::optional<Step> fused = make(all, group.size(), outside_all, rows, rows_aliases, &joined);
      if (fused.has_value()) {
        emit(std::move(fused));
        for (size_t k : passive) out.push_back(std::move(p.steps[k]));
        for (size_t k = end; k < next; ++k) out.push_back(std::move(p.steps[k]));
        for (size_t k : post_passive) out.push_back(std::move(p.steps[k]));
        i = post_group.back() + 1;
        continue;
      }
    }
    bool joined = false;
    emit(make(group, group.size(), used_outside, rows, {}, &joined));
    for (size_t k : passive) out.push_back(std::move(p.steps[k]));
    i = end;
    if (joined) {
      // The passive steps up to the reduction follow the fused step; the reduction is gone.
      for (size_t k = end; k < next; ++k) out.push_back(std::move(p.steps[k]));
      i = next + 1;
    }
  }
  p.steps = std::move(out);
}

}  // namespace kiln::compiler
