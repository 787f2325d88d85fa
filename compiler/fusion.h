// Elementwise fusion: runs of elementwise ("map") steps over the same number of elements become one
// step that evaluates them tile by tile; broadcasts (index maps, MapInfo::absolute) join the run
// and produce their tiles in place of a whole broadcast array. Each tile of every intermediate
// stays in L1 (a few KiB on the stack of the thread computing it) instead of making a round trip
// through memory; only values read outside the run, or returned, are written out. A reduction of
// one of the run's values over its last axis (Direct::rows) that follows the run joins it too:
// tiles then hold whole rows, and each tile's rows are reduced right after the tile is written,
// while they are still in cache (a softmax's row sum of its exponentials). And a second run that
// reads the reduction's result broadcast back along its rows, with the first run's values (the
// division of each exponential by its row's sum), may follow it into the same tile loop: its
// members run on each tile after the tile's rows are reduced, so the first run's values need not
// leave the tile. A row reduction of an input just before a run that reads its result broadcast
// along its rows joins ahead of it (softmax's row maximum). Runs on a Program's steps before the
// buffer plan, so fused-away intermediates never get a buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compiler/fused_native.h"
#include "compiler/program.h"

namespace kiln::compiler {

// Longest run fused into one step, and the per-thread tile scratch (bytes) its temporaries share.
inline constexpr size_t kMaxMembers = 32;
inline constexpr size_t kTileScratchBytes = 48 << 10;

// A fused step's plan (Step::fused): its members in order, each a map kernel's range function
// reading fused-step inputs, earlier members' temporaries or outputs.
struct FusedPlan {
  // Where a member reads range input r from, or writes its result to.
  struct Ref {
    enum Kind : uint8_t { kInput, kTemp, kOutput } kind;
    int32_t index;  // fused-step input / temporary / fused-step output
    bool scalar = false;
    int width = 0;
  };
  struct Member {
    RangeFn range;
    std::shared_ptr<const void> state;
    MapCode code = {};      // MapInfo::code
    bool absolute = false;  // MapInfo::absolute: `in` are read whole (fused-step inputs, or the
                            // row reduction's output for a row broadcast after it)
    // An index map broadcasting one value per row (MapInfo::row_broadcast) in tiles of exactly one
    // row, whose tile only native code reads: that code reads the row's value from the source
    // instead (RunFused points at it and skips the fill).
    bool row_value = false;
    Ref out;
    std::vector<Ref> in;  // per range input
  };
  std::vector<Member> members;
  std::vector<int64_t> input_elements;  // per fused-step input: n or 1
  std::vector<int> input_widths;
  std::vector<int> temp_widths;
  int64_t elements = 0;
  int64_t tile = 0;   // elements per tile
  int64_t chunk = 1;  // tiles per parallel chunk
  // The row reduction that joined the run, if one did: after members [0, post_begin) of each tile,
  // rows(state, x, in[init], out[result] + the tile's first row, 0, rows in the tile), x being the
  // tile's first element of member output or temporary `x` (`tile` is a multiple of row_length).
  // The members write every output but `result`.
  struct Rows {
    RowsFn fn = nullptr;
    std::shared_ptr<const void> state;
    int64_t row_length = 0;
    int32_t init = -1, result = -1;
    Ref x{Ref::kTemp, -1};
  } rows;
  // A row reduction of a fused-step input (`pre.x`, read element by element) that joined the run
  // ahead of it, if one did: first on each tile, rows(state, x, in[init], out[result] + the tile's
  // first row, 0, rows in the tile); the members read its output only through broadcasts along the
  // rows (absolute members' Ref kOutput `pre.result`). Softmax's row maximum.
  Rows pre;
  // Members [post_begin, size) run on each tile after its rows are reduced; their index maps may
  // read the reduction's output (an absolute member's Ref kOutput `rows.result`).
  size_t post_begin = 0;
  std::string name;
  // The element-wise members as native code (fused_native.h), when the generator handles them all:
  // those before post_begin, and those from it on.
  std::shared_ptr<const FusedNative> native;
  std::shared_ptr<const FusedNative> native_post;
};

// Runs a fused step (compiler/fused_run.cc): tile by tile, in parallel, each tile's members in
// order (native code when the plan has it), the joined reductions ahead of and between them.
Status RunFused(const FusedPlan& f, std::span<const runtime::View> in,
                std::span<const runtime::View> out);

// Rewrites program.steps in place. Steps without code (constants, views) between elementwise steps
// do not break a run.
void FuseElementwise(Program& program);

}  // namespace kiln::compiler
