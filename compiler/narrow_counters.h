// uint64 counter arithmetic narrowed to uint32 where its values provably fit.
//
// jax.random builds threefry's counters in uint64 and splits them into two uint32 words:
// `iota : ui64`, `multiply` by a broadcast 1, `shift_right_logical` by 32, and two
// `convert ui64 -> ui32`. Native fused code serves 32-bit integer members only, so that prefix ran
// interpreted. This pass bounds every ui64 value of a block from above (an interval [0, max]) and
// rewrites each `convert ui64 -> ui32` whose operand is at most 2^32 - 1 into the same computation
// done in ui32, which the convert then no longer needs. The rules (ui64 only; signed types and
// everything else are left alone):
//   iota                 max = (size of the iota dimension) - 1
//   constant             max = its largest element
//   broadcast_in_dim     max of the operand (a ui32 twin broadcasts the operand's twin)
//   convert ui32 -> ui64 max = 2^32 - 1 (its twin is the ui32 operand itself)
//   add, multiply        max = ma + mb, ma * mb, kept only when below 2^32 (so no wrap, in ui64 or
//                        ui32)
//   shift_left by c      max = ma << c when c is a splat constant and the result stays below 2^32
//   shift_right_logical  max = ma >> c for a splat constant c (0 from c >= 64, as StableHLO)
//   and                  max = min(ma, mb); or, xor: 2^k - 1 for the bit width k of max(ma, mb)
// Only values with max < 2^32 get a ui32 twin; a splat value (0, a shift count, JAX's broadcast 1)
// is a scalar ui32 constant, broadcast; x * 1, x + 0, x | 0, x ^ 0 and x >> 0 / x << 0 are x's
// twin itself (JAX's counter is `1 * iota`, so its twin is a ui32 iota). For every such value the
// twin computes the same number in ui32 (no operation wraps, a shift's count is below 32 or the
// result is the splat 0), so the convert's result equals the twin bit for bit. Uses of the
// convert's result read the twin; the pure ops left without uses are removed. Ops with discardable
// attributes (a sharding, ...) stay as they are, since a twin would not carry them. Blocks are
// analysed one at a time (a value defined in an enclosing block is unbounded).
#pragma once

#include "ir/module.h"

namespace kiln::compiler {

// Whether some block of `module` has a convert NarrowCounters rewrites.
bool HasNarrowableCounters(const ir::Module& module);

// Rewrites those converts (in every function and region) as described above.
void NarrowCounters(ir::Module& module);

}  // namespace kiln::compiler
