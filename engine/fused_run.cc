// Running a fused step (engine/fused_run.h: RunFused): the plan's tiles in parallel, each tile's
// members in order, native code where the plan has it, and the joined row reductions (ahead of
// the members, and between the members before and after it) on the tile's rows.
#include "engine/fused_run.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/parallel.h"

namespace kiln::engine {

using lower::FusedPlan;
using lower::kMaxMapInputs;
using lower::kMaxMembers;
using lower::kTileScratchBytes;
namespace {

// Pointers a native tile reads (lower::NativeTile::Run): inputs (up to kMaxMapInputs per member and
// 3 for the joined reductions), temporaries and outputs (one per member, 2 for the reductions):
// fewer.
constexpr size_t kMaxPointers = kMaxMembers * (kMaxMapInputs + 2) + 2;
using lower::FusedPlan;
using lower::kMaxMapInputs;
using lower::kMaxMembers;
using lower::kTileScratchBytes;
using Ref = FusedPlan::Ref;
using Member = FusedPlan::Member;

}  // namespace

Status RunFused(const FusedPlan& f, std::span<const runtime::View> in,
                std::span<const runtime::View> out) {
  if (in.size() != f.input_elements.size()) return Internal(f.name + ": wrong number of inputs");
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].elements != f.input_elements[i] ||
        ir::DTypeByteSize(in[i].dtype) != f.input_widths[i]) {
      return Internal(f.name + ": input #" + std::to_string(i) + " does not match the plan");
    }
  }
  const int64_t n = f.elements;
  const int64_t tiles = (n + f.tile - 1) / f.tile;
  const size_t members = f.members.size();
  runtime::ParallelFor(tiles, f.chunk, [&](int64_t t0, int64_t t1) {
    alignas(64) std::byte scratch[kTileScratchBytes];
    std::byte* temps[kMaxMembers];
    {
      size_t offset = 0;
      for (size_t t = 0; t < f.temp_widths.size(); ++t) {
        temps[t] = scratch + offset;
        offset += (static_cast<size_t>(f.tile) * static_cast<size_t>(f.temp_widths[t]) + 63) &
                  ~size_t{63};
      }
    }
    auto address = [&](const Ref& r, int64_t b) -> void* {
      switch (r.kind) {
        case Ref::kInput:
          return static_cast<std::byte*>(in[static_cast<size_t>(r.index)].ptr) +
                 (r.scalar ? 0 : b * r.width);
        case Ref::kOutput:
          return static_cast<std::byte*>(out[static_cast<size_t>(r.index)].ptr) + b * r.width;
        case Ref::kTemp:
          break;
      }
      return temps[r.index];
    };
    // The tile's rows, reduced from the tile's part of the value they reduce.
    auto reduce = [&](const FusedPlan::Rows& rows, int64_t b, int64_t len) {
      if (rows.fn == nullptr) return;
      const size_t result = static_cast<size_t>(rows.result);
      const int64_t row0 = b / rows.row_length;
      rows.fn(
          rows.state.get(), address(rows.x, b), in[static_cast<size_t>(rows.init)].ptr,
          static_cast<std::byte*>(out[result].ptr) + row0 * ir::DTypeByteSize(out[result].dtype), 0,
          len / rows.row_length);
    };
    auto reduce_rows = [&](int64_t b, int64_t len) { reduce(f.rows, b, len); };
    // Index maps (absolute members) of [m0, m1) into their tiles: they read inputs whole, or, after
    // the reduction, its output.
    auto index_maps = [&](size_t m0, size_t m1, int64_t b, int64_t len, bool native = false) {
      for (size_t i = m0; i < m1; ++i) {
        const Member& m = f.members[i];
        if (!m.absolute || (native && m.row_value)) continue;
        const void* whole[kMaxMapInputs] = {nullptr, nullptr, nullptr};
        for (size_t r = 0; r < m.in.size(); ++r) {
          const Ref& ref = m.in[r];
          whole[r] = (ref.kind == Ref::kOutput ? out : in)[static_cast<size_t>(ref.index)].ptr;
        }
        m.range(whole, address(m.out, b), b, b + len, m.state.get());
      }
    };
    // Native code that needs no tile in L1 runs over the chunk's tiles in one call.
    const bool whole = f.native != nullptr && f.native->untiled && f.native_post == nullptr &&
                       f.rows.fn == nullptr && f.pre.fn == nullptr && f.post_begin >= members;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t * f.tile;
      const int64_t len = std::min(n, (whole ? t1 : t + 1) * f.tile) - b;
      if (whole) t = t1 - 1;
      reduce(f.pre, b, len);
      if (f.native != nullptr) {
        // Index maps into their tiles, then every other member in registers.
        void* ptrs[kMaxPointers];
        size_t k = 0;
        for (size_t i = 0; i < in.size(); ++i) {  // scalars and whole inputs are not offset
          const bool elementwise = f.input_elements[i] == n;
          ptrs[k++] =
              static_cast<std::byte*>(in[i].ptr) + (elementwise ? b * f.input_widths[i] : 0);
        }
        for (size_t i = 0; i < f.temp_widths.size(); ++i) ptrs[k++] = temps[i];
        for (size_t i = 0; i < out.size(); ++i) {  // the reduction's output too (never read)
          ptrs[k++] = static_cast<std::byte*>(out[i].ptr) + b * ir::DTypeByteSize(out[i].dtype);
        }
        // A broadcast of one value per row, in tiles of one row, or of a one-element input: the
        // code reads that value.
        for (const Member& m : f.members) {
          if (!m.row_value) continue;
          const Ref& src = m.in[0];
          const bool one =
              src.kind == Ref::kInput && f.input_elements[static_cast<size_t>(src.index)] == 1;
          ptrs[in.size() + static_cast<size_t>(m.out.index)] =
              static_cast<std::byte*>(
                  (src.kind == Ref::kOutput ? out : in)[static_cast<size_t>(src.index)].ptr) +
              (one ? 0 : b / f.tile * src.width);
        }
        index_maps(0, f.post_begin, b, len, true);
        f.native->Run(ptrs, len);
        reduce_rows(b, len);
        if (f.post_begin < members) {
          index_maps(f.post_begin, members, b, len, true);
          f.native_post->Run(ptrs, len);
        }
        continue;
      }
      for (size_t i = 0; i < members; ++i) {
        if (i == f.post_begin) reduce_rows(b, len);
        const Member& m = f.members[i];
        if (m.absolute) {
          index_maps(i, i + 1, b, len);
          continue;
        }
        const void* ptrs[kMaxMapInputs] = {nullptr, nullptr, nullptr};
        for (size_t r = 0; r < m.in.size(); ++r) ptrs[r] = address(m.in[r], b);
        m.range(ptrs, address(m.out, b), 0, len, m.state.get());
      }
      if (f.post_begin >= members) reduce_rows(b, len);
    }
  });
  return Status::Ok();
}

}  // namespace kiln::engine
