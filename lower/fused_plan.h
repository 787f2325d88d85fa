// FusedPlan: what one fused elementwise step computes, tile by tile. The fusion pass
// (compiler/fusion.h) makes it, the code generator (codegen/fused_native.h) may turn its members
// into native code, and the engine runs it (engine/fused_run.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lower/kernel.h"

namespace kiln::lower {

// Native code for members of a fused run, made by codegen/fused_native.h: Run(ptrs, len) runs
// them over elements [0, len) of a tile. ptrs: one per fused-step input (at the tile's first
// element, or the element of a scalar input), per temporary (the tile's buffer; only index maps'
// are read), per output (at the tile's first element). `code` owns the memory `fn` points into.
struct NativeTile {
  void (*fn)(void* const* ptrs, int64_t len) = nullptr;
  std::shared_ptr<const void> code;
  // The code reads and writes no temporary's tile (every index map it reads is a one-element
  // input's broadcast, every result it stores an output): it may run over many tiles at once.
  bool untiled = false;
  void Run(void* const* ptrs, int64_t len) const { fn(ptrs, len); }
};

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
    // row, or broadcasting a one-element fused-step input (a splat constant), whose tile only
    // native code reads: that code reads the value from the source instead (RunFused points at
    // it and skips the fill).
    bool row_value = false;
    Ref out;
    std::vector<Ref> in;  // per range input
  };
  std::vector<Member> members;
  std::vector<int64_t> input_elements;  // per fused-step input: n or 1
  std::vector<int> input_widths;
  // Per fused-step input read element by element or as a scalar: whether it is a constant whose
  // elements are all the same (a splat the program folded), and their bits (zero-extended). Native
  // code broadcasts such an input, and divides by it as by that known number.
  struct Splat {
    bool known = false;
    uint64_t bits = 0;
  };
  std::vector<Splat> input_splat;
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
  // The element-wise members as native code (codegen/fused_native.h), when the generator handles
  // them all: those before post_begin, and those from it on.
  std::shared_ptr<const NativeTile> native;
  std::shared_ptr<const NativeTile> native_post;
};

}  // namespace kiln::lower
