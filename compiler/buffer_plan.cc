#include "compiler/buffer_plan.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>

namespace kiln::compiler {

using lower::AlignUp64;
using lower::Program;
using lower::SlotKind;
using lower::SlotPlan;
using lower::Step;
namespace {

// Larger than any buffer a machine could hold; keeps offset arithmetic far from overflow.
constexpr uint64_t kMaxBufferBytes = uint64_t{1} << 50;

// First-fit allocator over frame offsets, with coalescing of freed ranges.
class FrameAllocator {
 public:
  uint64_t Allocate(uint64_t bytes) {
    if (bytes == 0) return 0;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= bytes) {
        const uint64_t offset = it->first;
        const uint64_t rest = it->second - bytes;
        free_.erase(it);
        if (rest > 0) free_.emplace(offset + bytes, rest);
        return offset;
      }
    }
    // Grow: start inside a free range that ends at the top, if there is one.
    uint64_t offset = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    top_ = offset + bytes;
    return offset;
  }

  void Free(uint64_t offset, uint64_t bytes) {
    if (bytes == 0) return;
    auto [it, inserted] = free_.emplace(offset, bytes);
    (void)inserted;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  uint64_t high_water() const { return top_; }

 private:
  std::map<uint64_t, uint64_t> free_;  // offset -> size
  uint64_t top_ = 0;
};

// Values that die into a result: when the step that computes result x reads a frame value v
// element by element at the same width (Step::overwritable) and nothing reads v afterwards, v is
// computed straight into x's buffer and the step then overwrites it in place, and so on up the
// chain (v's own producer may take its operand the same way). The intermediate then needs no frame
// memory: a softmax's exponentials live in its output. Only for `fresh` results, buffers of their
// own while the program runs (the entry function's; not a loop's carries, which may share memory
// with its parameters, nor a result a donated argument may become).
void ComputeIntoResults(Program& p, const std::vector<uint64_t>& bytes,
                        const std::vector<int32_t>& producer, const std::vector<bool>& fresh) {
  if (std::find(fresh.begin(), fresh.end(), true) == fresh.end()) return;
  const size_t n = p.slots.size();
  // The last step reading each slot, and which slots are viewed by an alias.
  std::vector<int32_t> last_reader(n, -1);
  std::vector<bool> viewed(n, false);
  for (size_t si = 0; si < p.steps.size(); ++si) {
    for (int32_t in : p.steps[si].inputs) {
      last_reader[static_cast<size_t>(in)] = static_cast<int32_t>(si);
    }
  }
  for (size_t s = 0; s < n; ++s) {
    if (p.slots[s].kind == SlotKind::kAlias) viewed[static_cast<size_t>(p.slots[s].index)] = true;
  }
  std::vector<bool> returned(n, false);
  for (int32_t r : p.result_slots) returned[static_cast<size_t>(r)] = true;
  for (size_t k = 0; k < p.result_slots.size() && k < fresh.size(); ++k) {
    const int32_t x = p.result_slots[k];
    const auto xs = static_cast<size_t>(x);
    if (!fresh[k] || p.slots[xs].kind != SlotKind::kResult ||
        p.slots[xs].index != static_cast<int32_t>(k)) {
      continue;
    }
    size_t cur = xs;
    while (producer[cur] >= 0) {
      const Step& step = p.steps[static_cast<size_t>(producer[cur])];
      const auto o = static_cast<size_t>(
          std::find(step.outputs.begin(), step.outputs.end(), static_cast<int32_t>(cur)) -
          step.outputs.begin());
      if (o >= step.overwritable.size()) break;
      size_t take = n;
      for (int32_t j : step.overwritable[o]) {
        const auto v = static_cast<size_t>(step.inputs[static_cast<size_t>(j)]);
        // A frame value of the same size, last read by this step (as one of its inputs only),
        // never viewed or returned. Steps before may read it: it is in x's memory from the start.
        if (p.slots[v].kind == SlotKind::kFrame && !viewed[v] && !returned[v] &&
            bytes[v] == bytes[xs] && last_reader[v] == producer[cur] &&
            std::count(step.inputs.begin(), step.inputs.end(),
                       step.inputs[static_cast<size_t>(j)]) == 1 &&
            producer[v] >= 0 && producer[v] < producer[cur]) {
          take = v;
          break;
        }
      }
      if (take == n) break;
      p.slots[take] = {SlotKind::kAlias, x, 0};
      cur = take;
    }
  }
}

}  // namespace

Status PlanBuffers(Program& p, const std::vector<bool>& fresh_results) {
  const size_t n = static_cast<size_t>(p.num_slots);
  if (p.slot_types.size() != n) return Internal("buffer plan: slot types missing");
  std::vector<uint64_t> bytes(n);
  for (size_t s = 0; s < n; ++s) {
    const ir::Type& t = p.slot_types[s];
    const int64_t elements = t.num_elements();
    if (elements < 0) return ResourceExhausted("a value of type " + t.ToString() + " is too large");
    const uint64_t b =
        static_cast<uint64_t>(elements) * static_cast<uint64_t>(ir::DTypeByteSize(t.dtype));
    if (b > kMaxBufferBytes)
      return ResourceExhausted("a value of type " + t.ToString() + " is too large");
    bytes[s] = b;
  }

  p.slots.assign(n, SlotPlan{});
  std::vector<bool> defined(n, false);
  for (size_t i = 0; i < p.param_slots.size(); ++i) {
    const size_t s = static_cast<size_t>(p.param_slots[i]);
    p.slots[s] = {SlotKind::kParam, static_cast<int32_t>(i), 0};
    defined[s] = true;
  }
  std::vector<int32_t> producer(n, -1);
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& step = p.steps[si];
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const size_t x = static_cast<size_t>(step.outputs[o]);
      producer[x] = static_cast<int32_t>(si);
      defined[x] = true;
      const int alias = o < step.kernel.aliases.size() ? step.kernel.aliases[o].input : -1;
      if (alias >= 0) {
        if (static_cast<size_t>(alias) >= step.inputs.size()) {
          return Internal(step.what + ": output #" + std::to_string(o) + " views a missing input");
        }
        const size_t y = static_cast<size_t>(step.inputs[static_cast<size_t>(alias)]);
        size_t root = y;
        uint64_t offset = step.kernel.aliases[o].byte_offset;
        if (p.slots[y].kind == SlotKind::kAlias) {
          root = static_cast<size_t>(p.slots[y].index);
          offset += p.slots[y].offset;
        }
        if (offset + bytes[x] > bytes[root]) {
          return Internal(step.what + ": output #" + std::to_string(o) +
                          " would view bytes past the end of its input");
        }
        p.slots[x] = {SlotKind::kAlias, static_cast<int32_t>(root), offset};
      } else if (o == 0 && step.kernel.constant != nullptr) {
        p.slots[x] = {SlotKind::kConst, static_cast<int32_t>(si), 0};
      } else {
        p.slots[x] = {SlotKind::kFrame, -1, 0};
      }
    }
  }
  for (size_t s = 0; s < n; ++s) {
    if (!defined[s]) p.slots[s] = {SlotKind::kConst, -1, 0};  // never read: no step defines it
  }

  auto root_of = [&](size_t s) {
    return p.slots[s].kind == SlotKind::kAlias ? static_cast<size_t>(p.slots[s].index) : s;
  };

  // Results: computed values are written in place; everything else is copied at the end.
  p.result_copies.clear();
  p.result_is_param.assign(p.result_slots.size(), -1);
  for (size_t k = 0; k < p.result_slots.size(); ++k) {
    const size_t x = static_cast<size_t>(p.result_slots[k]);
    if (p.slots[x].kind == SlotKind::kFrame) {
      p.slots[x] = {SlotKind::kResult, static_cast<int32_t>(k), 0};
      continue;
    }
    if (p.slots[x].kind == SlotKind::kParam) p.result_is_param[k] = p.slots[x].index;
    p.result_copies.emplace_back(static_cast<int32_t>(x), static_cast<int32_t>(k));
  }

  ComputeIntoResults(p, bytes, producer, fresh_results);

  // Liveness of frame values: from the producing step to the last reader of the value or a view
  // of it; values copied out at the end live to the end.
  const int32_t end = static_cast<int32_t>(p.steps.size());
  std::vector<int32_t> last(n, -1);
  for (size_t s = 0; s < n; ++s) {
    if (p.slots[s].kind == SlotKind::kFrame) last[s] = producer[s];
  }
  for (size_t si = 0; si < p.steps.size(); ++si) {
    for (int32_t in : p.steps[si].inputs) {
      const size_t r = root_of(static_cast<size_t>(in));
      if (p.slots[r].kind == SlotKind::kFrame)
        last[r] = std::max(last[r], static_cast<int32_t>(si));
    }
  }
  for (const auto& [slot, k] : p.result_copies) {
    (void)k;
    const size_t r = root_of(static_cast<size_t>(slot));
    if (p.slots[r].kind == SlotKind::kFrame) last[r] = end;
  }

  FrameAllocator frame;
  std::vector<std::vector<size_t>> dies_after(p.steps.size());
  for (size_t s = 0; s < n; ++s) {
    if (p.slots[s].kind == SlotKind::kFrame && last[s] >= 0 && last[s] < end) {
      dies_after[static_cast<size_t>(last[s])].push_back(s);
    }
  }
  size_t max_io = 0;
  size_t max_scratch = 0;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& step = p.steps[si];
    max_io = std::max(max_io, step.inputs.size() + step.outputs.size());
    max_scratch = std::max(max_scratch, step.kernel.scratch_bytes);
    for (int32_t out : step.outputs) {
      const size_t x = static_cast<size_t>(out);
      if (p.slots[x].kind != SlotKind::kFrame) continue;
      p.slots[x].offset = frame.Allocate(AlignUp64(bytes[x]));
    }
    for (size_t s : dies_after[si]) frame.Free(p.slots[s].offset, AlignUp64(bytes[s]));
  }

  p.view_template.assign(n, runtime::View{});
  p.patch_order.clear();
  for (size_t s = 0; s < n; ++s) {
    const SlotPlan& plan = p.slots[s];
    void* constant = nullptr;
    if (plan.kind == SlotKind::kConst && plan.index >= 0) {
      constant = const_cast<void*>(p.steps[static_cast<size_t>(plan.index)].kernel.constant.get());
    }
    p.view_template[s] = runtime::View::Of(p.slot_types[s], constant);
    if (plan.kind != SlotKind::kConst && plan.kind != SlotKind::kAlias) {
      p.patch_order.push_back(static_cast<int32_t>(s));
    }
  }
  for (size_t s = 0; s < n; ++s) {
    if (p.slots[s].kind == SlotKind::kAlias) p.patch_order.push_back(static_cast<int32_t>(s));
  }

  p.views_offset = 0;
  p.io_offset = AlignUp64(n * sizeof(runtime::View));
  p.buffers_offset = AlignUp64(p.io_offset + max_io * sizeof(runtime::View));
  p.buffer_bytes = frame.high_water();
  p.frame_bytes = p.buffers_offset + AlignUp64(p.buffer_bytes);
  p.total_bytes = p.frame_bytes + AlignUp64(max_scratch);
  if (p.total_bytes > kMaxBufferBytes) {
    return ResourceExhausted("the program needs " + std::to_string(p.total_bytes) +
                             " bytes of working memory");
  }
  return Status::Ok();
}

}  // namespace kiln::compiler
