// Elementwise steps that read a whole view of a value (a reshape, a broadcast or transpose that
// only adds or moves unit dimensions: same element type, same elements, from byte 0) read the value
// itself, and views nothing reads any more are dropped. The fusion pass (compiler/fusion.h) runs it
// first: a run's member whose result the next member read through such a view (JAX's masked
// softmax: the scaled scores transposed over a unit axis, the mask's `true` splat given a leading
// unit axis) had to write that result out for the view, and native code refuses a run whose index
// map writes an output; now the result stays in its tile.
#pragma once

#include "lower/program.h"

namespace kiln::compiler {

void ReadThroughWholeViews(lower::Program& program);

}  // namespace kiln::compiler
