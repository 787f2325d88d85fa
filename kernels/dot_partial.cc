// The dot_general of a partitioned program whose result's per-device pieces are partial sums
// (lower::PartialContraction, kernels/dot.h): the total in global view, as any dot, then for each
// device the dot of its blocks of the contracting dims, its piece of which goes into its buffer
// (ExecContext::device_values).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/dot.h"
#include "kernels/lowering.h"
#include "lower/spmd_layout.h"
#include "runtime/box_copy.h"

namespace kiln::kernels::dot {

using lower::ExecContext;
using lower::Kernel;
using runtime::View;

namespace {

constexpr size_t kAlign = 64;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
size_t Bytes(const ir::Type& t) {
  return AlignUp(static_cast<size_t>(t.num_elements()) *
                 static_cast<size_t>(ir::DTypeByteSize(t.dtype)));
}

}  // namespace

// A dot_general whose result's per-device pieces are partial sums (lower::PartialContraction):
// the total in global view, as any dot, then for each device the dot of its blocks of the
// contracting dims, its piece of which goes into its buffer (ExecContext::device_values).
// Scratch: [lhs block][rhs block][one device's partial result].
StatusOr<Kernel> MakePartialDotKernel(std::string name, std::shared_ptr<const DotPlan> plan,
                                      const ir::Type& lhs, const ir::Type& rhs,
                                      const ir::Type& result, const std::vector<int64_t>& lhs_batch,
                                      const std::vector<int64_t>& rhs_batch,
                                      const std::vector<int64_t>& lhs_contract,
                                      const std::vector<int64_t>& rhs_contract,
                                      const lower::PartialContraction& partial, ir::ValueId value) {
  if (partial.pair >= lhs_contract.size() || partial.pair >= rhs_contract.size() ||
      partial.parts < 1) {
    return Internal("a partial-sum dot_general names no contracting dims");
  }
  const auto lc = static_cast<size_t>(lhs_contract[partial.pair]);
  const auto rc = static_cast<size_t>(rhs_contract[partial.pair]);
  if (lc >= lhs.dims.size() || rc >= rhs.dims.size() || lhs.dims[lc] % partial.parts != 0 ||
      lhs.dims[lc] != rhs.dims[rc]) {
    return Internal("a partial-sum dot_general's contracting dims do not split evenly");
  }
  const int64_t block = lhs.dims[lc] / partial.parts;
  ir::Type lhs_block = lhs, rhs_block = rhs;
  lhs_block.dims[lc] = block;
  rhs_block.dims[rc] = block;
  KILN_ASSIGN_OR_RETURN(
      std::shared_ptr<const DotPlan> block_plan,
      PlanDot(lhs_block, rhs_block, result, lhs_batch, rhs_batch, lhs_contract, rhs_contract));
  const size_t lhs_bytes = Bytes(lhs_block);
  const size_t rhs_bytes = Bytes(rhs_block);
  // After the blocks and the block's product: the dots' own scratch (16-bit results).
  const size_t dot_offset = (lhs_bytes + rhs_bytes + Bytes(result) + 63) / 64 * 64;
  const size_t dot_bytes = std::max(DotScratch(*plan, result.num_elements()),
                                    DotScratch(*block_plan, result.num_elements()));
  Kernel k([name, plan, block_plan, lhs, rhs, lhs_block, rhs_block, result, lc, rc, block, partial,
            value, lhs_bytes, rhs_bytes, dot_offset](ExecContext& ec, std::span<const View> in,
                                                     std::span<const View> out) -> Status {
    if (in.size() < 2 || !in[0].Is(lhs.dtype, lhs.dims) || !in[1].Is(rhs.dtype, rhs.dims)) {
      return Internal("inputs do not match the lowered types");
    }
    std::byte* dot_scratch = ec.scratch + dot_offset;
    KILN_RETURN_IF_ERROR(RunDot(name, *plan, in[0], in[1], out[0], dot_scratch));
    // Every boundary result this value is (the program may return it more than once).
    std::vector<const lower::DeviceValues*> results;
    for (const lower::DeviceValues& p : ec.device_values) {
      if (p.value != value) continue;
      if (p.per_device.size() != partial.part.size() || p.offsets.size() != p.per_device.size()) {
        return Internal(name + ": the per-device pieces of a partial sum do not match its devices");
      }
      results.push_back(&p);
    }
    if (results.empty())
      return Internal(name + ": the per-device pieces of a partial sum are missing");
    std::byte* lhs_mem = ec.scratch;
    std::byte* rhs_mem = ec.scratch + lhs_bytes;
    std::byte* out_mem = ec.scratch + lhs_bytes + rhs_bytes;
    const View out_view = View::Of(result, out_mem);
    const size_t lhs_elem = static_cast<size_t>(ir::DTypeByteSize(lhs.dtype));
    const size_t rhs_elem = static_cast<size_t>(ir::DTypeByteSize(rhs.dtype));
    for (size_t d = 0; d < partial.part.size(); ++d) {
      bool wanted = false;
      for (const lower::DeviceValues* p : results)
        wanted = wanted || p->per_device[d].ptr != nullptr;
      if (!wanted) continue;  // a device of another process
      std::vector<int64_t> lhs_at(lhs.dims.size(), 0), rhs_at(rhs.dims.size(), 0);
      lhs_at[lc] = partial.part[d] * block;
      rhs_at[rc] = partial.part[d] * block;
      const std::vector<int64_t> lhs_zero(lhs.dims.size(), 0), rhs_zero(rhs.dims.size(), 0);
      runtime::CopyBox(static_cast<const std::byte*>(in[0].ptr), lhs.dims, lhs_at, lhs_mem,
                       lhs_block.dims, lhs_zero, lhs_block.dims, lhs_elem);
      runtime::CopyBox(static_cast<const std::byte*>(in[1].ptr), rhs.dims, rhs_at, rhs_mem,
                       rhs_block.dims, rhs_zero, rhs_block.dims, rhs_elem);
      KILN_RETURN_IF_ERROR(RunDot(name, *block_plan, View::Of(lhs_block, lhs_mem),
                                  View::Of(rhs_block, rhs_mem), out_view, dot_scratch));
      const std::vector<int64_t> zero(result.dims.size(), 0);
      for (const lower::DeviceValues* p : results) {
        const View& mine = p->per_device[d];
        const std::vector<int64_t>& at = p->offsets[d];
        if (mine.ptr == nullptr) continue;
        if (at.size() != result.dims.size() || mine.dims.size() != result.dims.size()) {
          return Internal(name + ": a partial sum's piece does not match the result");
        }
        for (size_t k = 0; k < at.size(); ++k) {
          if (at[k] < 0 || at[k] + mine.dims[k] > result.dims[k]) {
            return Internal(name + ": a partial sum's piece lies outside the result");
          }
        }
        runtime::CopyBox(out_mem, result.dims, at, static_cast<std::byte*>(mine.ptr), mine.dims,
                         zero, mine.dims, static_cast<size_t>(ir::DTypeByteSize(result.dtype)));
      }
    }
    return Status::Ok();
  });
  k.scratch_bytes = dot_offset + dot_bytes;
  return k;
}

}  // namespace kiln::kernels::dot
