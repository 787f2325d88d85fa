// stablehlo.rng_bit_generator: counter-based random bits, bit-identical to XLA:CPU.
//
// The state is u64[N]; state[0] is the key. XLA defines the output (and JAX's `rbg` and
// `unsafe_rbg` PRNGs depend on it), so Kiln reproduces the exact stream:
//  * THREE_FRY (state u64[2], counter = state[1]): Threefry-2x32, 20 rounds, key split into its
//    low and high 32-bit halves. 64-bit outputs take one block per element (counter + linear
//    index; low word first). 32-bit outputs pair elements along one "split" dimension, the first
//    of even size, else the first of largest size: elements 2h and 2h+1 along it come from the
//    block at half-index h. Narrower outputs are the 32-bit stream truncated. The new counter is
//    the old one plus the number of blocks used.
//  * PHILOX and DEFAULT (XLA:CPU's default is Philox; state u64[2] or u64[3]): Philox-4x32, 10
//    rounds, on a 128-bit counter: for u64[3] it is state[2]:state[1] (high:low); for u64[2] it
//    is state[0]:state[1], i.e. the key doubles as the counter's high word, and only the low word
//    is written back. Block i (counter + i) yields four 32-bit words, assigned to elements
//    4i..4i+3 (64-bit outputs: two words per element, elements 2i and 2i+1).
//  * Any output type of 8, 16, 32 or 64 bits receives the bits as they are (floats included).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "lower/op_registry.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

enum class Algorithm { kThreeFry, kPhilox };

struct Words2 {
  uint32_t a, b;
};
struct Words4 {
  uint32_t w[4];
};

inline uint32_t RotateLeft(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

Words2 ThreeFry2x32(uint64_t key, uint64_t counter) {
  static constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const uint32_t k2 = 0x1BD11BDAu ^ k0 ^ k1;
  const uint32_t ks[3] = {k0, k1, k2};
  uint32_t x0 = static_cast<uint32_t>(counter) + k0;
  uint32_t x1 = static_cast<uint32_t>(counter >> 32) + k1;
  for (int group = 0; group < 5; ++group) {
    const int* rot = kRotations + (group % 2) * 4;
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = RotateLeft(x1, rot[r]) ^ x0;
    }
    // Key injection after every four rounds: ks[(g+1)%3], ks[(g+2)%3] + (g+1).
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + static_cast<uint32_t>(group + 1);
  }
  return {x0, x1};
}

Words4 Philox4x32(uint64_t key, uint64_t lo, uint64_t hi) {
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  uint32_t x[4] = {static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32),
                   static_cast<uint32_t>(hi), static_cast<uint32_t>(hi >> 32)};
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{x[0]} * 0xD2511F53u;
    const uint64_t p1 = uint64_t{x[2]} * 0xCD9E8D57u;
    const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k0;
    const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k1;
    x[0] = y0;
    x[1] = static_cast<uint32_t>(p1);
    x[2] = y2;
    x[3] = static_cast<uint32_t>(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{x[0], x[1], x[2], x[3]}};
}

// Everything the kernel needs, fixed at lowering.
struct RngPlan {
  Algorithm algorithm = Algorithm::kPhilox;
  int state_words = 2;  // 2 or 3
  int out_bytes = 4;    // 1, 2, 4 or 8
  int64_t elements = 0;
  // THREE_FRY, 32 bits and narrower: the output as [outer, split, inner].
  int64_t outer = 1, split = 1, inner = 1;
  uint64_t blocks = 0;  // counter increment
  ir::DType state_dtype = ir::DType::kU64;
  std::vector<int64_t> state_dims;
  ir::DType out_dtype = ir::DType::kU32;
  std::vector<int64_t> out_dims;
};

template <typename T>
inline void Store(void* out, int64_t i, uint64_t bits) {
  static_cast<T*>(out)[i] = static_cast<T>(bits);
}

template <typename T>
void ThreeFryNarrow(const RngPlan& p, uint64_t key, uint64_t counter, void* out, int64_t begin,
                    int64_t end) {
  // Rows of the [outer, ceil(split/2), inner] block grid; row r covers half-index h of outer o.
  const int64_t half = (p.split + 1) / 2;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t o = r / half, h = r % half;
    for (int64_t j = 0; j < p.inner; ++j) {
      const Words2 w = ThreeFry2x32(key, counter + static_cast<uint64_t>(r * p.inner + j));
      const int64_t base = (o * p.split + 2 * h) * p.inner + j;
      Store<T>(out, base, w.a);
      if (2 * h + 1 < p.split) Store<T>(out, base + p.inner, w.b);
    }
  }
}

template <typename T>
void PhiloxNarrow(const RngPlan& p, uint64_t key, uint64_t lo, uint64_t hi, void* out,
                  int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const uint64_t l = lo + static_cast<uint64_t>(b);
    const Words4 w = Philox4x32(key, l, l < lo ? hi + 1 : hi);
    for (int k = 0; k < 4 && 4 * b + k < p.elements; ++k) Store<T>(out, 4 * b + k, w.w[k]);
  }
}

void Generate(const RngPlan& p, const uint64_t* state, void* out) {
  const uint64_t key = state[0];
  if (p.algorithm == Algorithm::kThreeFry) {
    const uint64_t counter = state[1];
    if (p.out_bytes == 8) {
      runtime::ParallelFor(p.elements, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const Words2 w = ThreeFry2x32(key, counter + static_cast<uint64_t>(i));
          static_cast<uint64_t*>(out)[i] = w.a | (uint64_t{w.b} << 32);
        }
      });
      return;
    }
    const int64_t rows = p.outer * ((p.split + 1) / 2);
    const int64_t min_rows = std::max<int64_t>(1, 4096 / std::max<int64_t>(p.inner, 1));
    runtime::ParallelFor(rows, min_rows, [&](int64_t begin, int64_t end) {
      switch (p.out_bytes) {
        case 1:
          return ThreeFryNarrow<uint8_t>(p, key, counter, out, begin, end);
        case 2:
          return ThreeFryNarrow<uint16_t>(p, key, counter, out, begin, end);
        default:
          return ThreeFryNarrow<uint32_t>(p, key, counter, out, begin, end);
      }
    });
    return;
  }
  // Philox: for u64[2] the key is also the counter's high word (XLA reverses the state).
  const uint64_t lo = state[1];
  const uint64_t hi = p.state_words == 3 ? state[2] : state[0];
  const int64_t blocks = static_cast<int64_t>(p.blocks);
  runtime::ParallelFor(blocks, 1024, [&](int64_t begin, int64_t end) {
    if (p.out_bytes == 8) {
      for (int64_t b = begin; b < end; ++b) {
        const uint64_t l = lo + static_cast<uint64_t>(b);
        const Words4 w = Philox4x32(key, l, l < lo ? hi + 1 : hi);
        auto* o = static_cast<uint64_t*>(out);
        o[2 * b] = w.w[0] | (uint64_t{w.w[1]} << 32);
        if (2 * b + 1 < p.elements) o[2 * b + 1] = w.w[2] | (uint64_t{w.w[3]} << 32);
      }
      return;
    }
    switch (p.out_bytes) {
      case 1:
        return PhiloxNarrow<uint8_t>(p, key, lo, hi, out, begin, end);
      case 2:
        return PhiloxNarrow<uint16_t>(p, key, lo, hi, out, begin, end);
      default:
        return PhiloxNarrow<uint32_t>(p, key, lo, hi, out, begin, end);
    }
  });
}

void WriteState(const RngPlan& p, const uint64_t* in, uint64_t* out) {
  out[0] = in[0];
  const uint64_t lo = in[1] + p.blocks;
  out[1] = lo;
  if (p.state_words == 3) out[2] = lo < in[1] ? in[2] + 1 : in[2];
}

StatusOr<Kernel> LowerRngBitGenerator(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 1 || op.results.size() != 2) {
    return InvalidArgument("expected 1 operand (the state) and 2 results (new state, bits)");
  }
  const ir::Type& state = ctx.operand_type(0);
  const ir::Type& out = ctx.result_type(1);
  KILN_RETURN_IF_ERROR(CheckStaticTensor(state, "state"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(out, "output"));
  if (ctx.result_type(0).dtype != state.dtype || ctx.result_type(0).dims != state.dims) {
    return InvalidArgument("the output state must have the type of the initial state");
  }
  auto plan = std::make_shared<RngPlan>();
  const ir::Attr* alg = FindAttr(op, "rng_algorithm");
  const std::string name = alg != nullptr ? alg->str : "DEFAULT";
  if (name == "THREE_FRY") {
    plan->algorithm = Algorithm::kThreeFry;
  } else if (name == "PHILOX" || name == "DEFAULT") {
    plan->algorithm = Algorithm::kPhilox;
  } else {
    return InvalidArgument("unknown rng_algorithm '" + name + "'");
  }
  if (state.dtype != ir::DType::kU64 && state.dtype != ir::DType::kS64) {
    return Unimplemented("stablehlo.rng_bit_generator: the state must be 64-bit integers, not " +
                         std::string(ir::DTypeName(state.dtype)));
  }
  const bool three_fry = plan->algorithm == Algorithm::kThreeFry;
  if (state.dims.size() != 1 || state.dims[0] < 2 || state.dims[0] > (three_fry ? 2 : 3)) {
    return InvalidArgument(std::string("the state of ") + (three_fry ? "THREE_FRY" : "PHILOX") +
                           " must be u64[" + (three_fry ? "2" : "2] or u64[3") + "], not " +
                           state.ToString());
  }
  plan->state_words = static_cast<int>(state.dims[0]);
  if (out.dtype == ir::DType::kPred || ir::IsComplex(out.dtype) || out.dtype == ir::DType::kS4 ||
      out.dtype == ir::DType::kU4) {
    return Unimplemented("stablehlo.rng_bit_generator does not support element type " +
                         std::string(ir::DTypeName(out.dtype)));
  }
  plan->out_bytes = ir::DTypeByteSize(out.dtype);
  if (plan->out_bytes != 1 && plan->out_bytes != 2 && plan->out_bytes != 4 &&
      plan->out_bytes != 8) {
    return UnsupportedDType(op.name, out.dtype);
  }
  plan->elements = out.num_elements();
  if (three_fry && plan->out_bytes < 8) {
    // The split dimension: the first of even size, else the first of the largest size. A scalar
    // is one pair of which only the first word is used.
    const int64_t rank = static_cast<int64_t>(out.dims.size());
    int64_t s = -1;
    for (int64_t i = 0; i < rank && s < 0; ++i) {
      if (out.dims[i] % 2 == 0) s = i;
    }
    if (s < 0) {
      for (int64_t i = 0; i < rank; ++i) {
        if (s < 0 || out.dims[i] > out.dims[s]) s = i;
      }
    }
    if (s < 0) {
      plan->split = 1;
    } else {
      for (int64_t i = 0; i < s; ++i) plan->outer *= out.dims[i];
      plan->split = out.dims[s];
      for (int64_t i = s + 1; i < rank; ++i) plan->inner *= out.dims[i];
    }
    plan->blocks = static_cast<uint64_t>(plan->outer * ((plan->split + 1) / 2) * plan->inner);
  } else if (three_fry) {
    plan->blocks = static_cast<uint64_t>(plan->elements);
  } else {
    const int64_t words = plan->out_bytes == 8 ? 2 * plan->elements : plan->elements;
    plan->blocks = static_cast<uint64_t>((words + 3) / 4);
  }
  plan->state_dtype = state.dtype;
  plan->state_dims = state.dims;
  plan->out_dtype = out.dtype;
  plan->out_dims = out.dims;
  return Kernel([name = op.name, plan](ExecContext&, std::span<const View> in,
                                       std::span<const View> outs) -> Status {
    if (in.size() != 1 || outs.size() != 2 || !in[0].Is(plan->state_dtype, plan->state_dims) ||
        !outs[0].Is(plan->state_dtype, plan->state_dims) ||
        !outs[1].Is(plan->out_dtype, plan->out_dims)) {
      return Internal("inputs do not match the lowered types");
    }
    const auto* state_in = in[0].data_as<const uint64_t>();
    if (plan->elements > 0) Generate(*plan, state_in, outs[1].data());
    WriteState(*plan, state_in, outs[0].data_as<uint64_t>());
    return Status::Ok();
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterRandomOps(OpRegistry& registry) {
  registry.Add({"stablehlo.rng_bit_generator", "random", &kernels::LowerRngBitGenerator});
}

}  // namespace kiln::kernels
