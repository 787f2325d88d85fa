// The buffer plan: decides, at compile time, where every value of a Program lives while it runs.
//
//  * Parameters and results are the caller's memory. The step that computes a result writes it
//    straight into the caller's buffer (no copy), unless the result is a parameter, a constant, a
//    view of another value or a value returned twice; those are copied when the program ends.
//  * Views (reshape, leading-axis slices, optimization_barrier) point into the value they view;
//    constants point at their literal. Neither has a buffer.
//  * Every other value gets a 64-byte-aligned range of the program's frame, live from the step that
//    writes it to the last step that reads it or any view of it. Ranges are reused first-fit as
//    values die, so a program's frame is about the largest set of values live at once, not their
//    sum. A step's outputs never share memory with its inputs, except that in the entry function a
//    value last read, element by element, by the step computing a result lives in that result's
//    buffer and is overwritten in place.
#pragma once

#include <vector>

#include "lower/program.h"
#include "support/status.h"

namespace kiln::compiler {

// Fills program.slots, result_copies, result_is_param and the frame layout from the steps.
// `fresh_results` (per result; missing = false): the result is a buffer of its own for the whole
// run (the entry function's, unless a donated argument may become it), so a value that dies into
// the step computing it may be computed in its buffer.
Status PlanBuffers(lower::Program& program, const std::vector<bool>& fresh_results = {});

}  // namespace kiln::compiler
