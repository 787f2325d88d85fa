// Element gathers (kernels/index_geometry.h, MakeElementGather): every window one element, one
// index per batch position, so each result element is read straight from its clamped index, with
// no table of bases in between. The kernel is also an index map (MapInfo::absolute): the fusion
// pass runs it tile by tile ahead of the elementwise ops that read it (take_along_axis's select
// of the fill value), so the gathered values never reach memory.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "kernels/dispatch.h"
#include "kernels/index_geometry.h"
#include "kernels/lowering.h"
#include "runtime/parallel.h"

namespace kiln::kernels::indexing {
namespace {

using lower::ExecContext;
using lower::Kernel;
using runtime::View;

// Batch positions per task (a few microseconds each).
constexpr int64_t kElementsPerTask = 1 << 14;

struct ElementPlan {
  IndexGeometry g;
  ir::Type operand, indices;
  int64_t limit = 0, stride = 0;  // the indexed axis: largest start, operand stride
  int64_t wrap = 0;               // added to a negative index first (the axis size, or 0)
  bool avx2 = false;              // 4-byte elements, int32 indices, offsets that fit in int32
};

bool HasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

// dst[j] = src[base + j * step + clamp(idx[j], 0, limit) * stride] for j < n, eight at a time
// with vpgatherdd (every offset fits in int32: ElementPlan::avx2), the rest one by one.
__attribute__((target("avx2"))) void GatherRunAvx2(const int32_t* src, const int32_t* idx,
                                                   int32_t* dst, int64_t n, int64_t base,
                                                   int64_t step, int32_t limit, int32_t stride,
                                                   int32_t wrap) {
  const int32_t* from = src + base;
  const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(limit);
  const __m256i wrap8 = _mm256_set1_epi32(wrap);
  const __m256i lane_step = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                               _mm256_set1_epi32(static_cast<int32_t>(step)));
  const __m256i stride8 = _mm256_set1_epi32(stride);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256i i = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + j));
    // i + wrap where i < 0: no overflow (i < 0 <= wrap < 2^31).
    if (wrap != 0) i = _mm256_add_epi32(i, _mm256_and_si256(_mm256_cmpgt_epi32(zero, i), wrap8));
    i = _mm256_max_epi32(_mm256_min_epi32(i, top), zero);
    if (stride != 1) i = _mm256_mullo_epi32(i, stride8);
    if (step != 0) {
      i = _mm256_add_epi32(
          i, _mm256_add_epi32(lane_step, _mm256_set1_epi32(static_cast<int32_t>(j * step))));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), _mm256_i32gather_epi32(from, i, 4));
  }
  for (; j < n; ++j) {
    const int32_t i = idx[j] < 0 ? idx[j] + wrap : idx[j];
    dst[j] = from[j * step + std::clamp(i, 0, limit) * stride];
  }
}

template <typename I, typename E>
void GatherRun(const ElementPlan& p, const E* src, const I* idx, E* dst, int64_t n, int64_t base,
               int64_t step) {
  if constexpr (sizeof(E) == 4 && std::is_same_v<I, int32_t>) {
    if (p.avx2) {
      return GatherRunAvx2(reinterpret_cast<const int32_t*>(src), idx,
                           reinterpret_cast<int32_t*>(dst), n, base, step,
                           static_cast<int32_t>(p.limit), static_cast<int32_t>(p.stride),
                           static_cast<int32_t>(p.wrap));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = IndexValue(idx[j]);
    if (i < 0) i += p.wrap;
    dst[j] = src[base + j * step + std::clamp<int64_t>(i, 0, p.limit) * p.stride];
  }
}

// Result elements [begin, end) into dst[0, end - begin).
template <typename I, typename E>
void GatherElements(const ElementPlan& p, const E* src, const I* idx, E* dst, int64_t begin,
                    int64_t end) {
  ForEachIndexRun(p.g, begin, end, [&](int64_t b, int64_t n, int64_t base, int64_t step) {
    GatherRun<I, E>(p, src, idx + b, dst + (b - begin), n, base, step);
  });
}

// The index map: the operand and the indices read whole.
template <typename I, typename E>
void ElementGatherRange(const void* const* in, void* out, int64_t begin, int64_t end,
                        const void* state) {
  GatherElements<I, E>(*static_cast<const ElementPlan*>(state), static_cast<const E*>(in[0]),
                       static_cast<const I*>(in[1]), static_cast<E*>(out), begin, end);
}

}  // namespace

Kernel MakeElementGather(const std::string& name, const IndexGeometry& g, const ir::Type& operand,
                         const ir::Type& indices) {
  auto plan = std::make_shared<ElementPlan>();
  plan->g = g;
  plan->operand = operand;
  plan->indices = indices;
  const size_t axis = static_cast<size_t>(g.start_map[0]);
  plan->limit = g.operand_dims[axis] - g.window_extent[axis];  // >= 0, checked
  plan->stride = g.operand_strides[axis];
  plan->wrap = g.wrap_negative ? g.operand_dims[axis] : 0;
  static const bool avx2 = HasAvx2();
  plan->avx2 = avx2 && operand.num_elements() <= std::numeric_limits<int32_t>::max();
  const size_t elem = static_cast<size_t>(ir::DTypeByteSize(operand.dtype));
  auto map = std::make_shared<lower::MapInfo>();
  (void)Dispatch<ir::kIntegers>(name, indices.dtype, [&]<typename I>() -> Status {
    return DispatchElementSize(elem, [&]<typename E>() -> Status {
      map->range = &ElementGatherRange<I, E>;
      return Status::Ok();
    });
  });
  map->state = plan;
  map->input_order = {0, 1};
  map->scalar = {false, false};
  map->in_widths = {static_cast<int>(elem), static_cast<int>(ir::DTypeByteSize(indices.dtype))};
  map->elements = indices.num_elements();
  map->out_width = static_cast<int>(elem);
  map->chunk = kElementsPerTask;
  map->absolute = true;
  std::shared_ptr<const ElementPlan> p = plan;
  Kernel kernel(
      [name, p, elem](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
        if (in.size() < 2 || in[0].dtype != p->operand.dtype ||
            !runtime::SameDims(in[0].dims, p->operand.dims) || in[1].dtype != p->indices.dtype ||
            !runtime::SameDims(in[1].dims, p->indices.dims)) {
          return Internal("inputs do not match the lowered types");
        }
        const int64_t count = out[0].num_elements();
        if (count == 0) return Status::Ok();
        return Dispatch<ir::kIntegers>(name, in[1].dtype, [&]<typename I>() -> Status {
          const I* idx = in[1].data_as<const I>();
          return DispatchElementSize(elem, [&]<typename E>() -> Status {
            const E* src = in[0].data_as<const E>();
            E* dst = out[0].data_as<E>();
            runtime::ParallelFor(count, kElementsPerTask, [&](int64_t b, int64_t e) {
              GatherElements<I, E>(*p, src, idx, dst + b, b, e);
            });
            return Status::Ok();
          });
        });
      });
  if (map->range != nullptr && map->elements > 0) kernel.map = std::move(map);
  return kernel;
}

}  // namespace kiln::kernels::indexing
