// Donation: which results of @main may be computed straight into a donated parameter's buffer,
// so that a step like `params - lr * grads` with `donate_argnums` reuses the parameters' memory
// instead of allocating its result (XLA's input-output aliasing).
//
// A result may take parameter p's buffer when it has the same type, the step that computes it
// writes it in place (it is not a copy made when the program ends), and nothing reads p after
// that step starts, except that step itself element by element (Step::overwritable). Whether the
// buffer is really taken is decided at each run (engine/executable.cc): only if the caller donated
// it and nothing else holds its memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lower/program.h"

namespace kiln::compiler {

// `donated_to[p]`: the result parameter p is donated to (`tf.aliasing_output`), kAnyResult for a
// donation without one (`jax.buffer_donor`: the first result of its type that can take it), or
// -1. Returns, per result, the parameter whose buffer it may take, or -1.
inline constexpr int32_t kAnyResult = -2;
std::vector<int32_t> PlanDonations(const lower::Program& program,
                                   std::span<const int32_t> donated_to);

}  // namespace kiln::compiler
