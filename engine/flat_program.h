// Flat programs: how loops run their condition and body without paying for the program runner on
// every iteration.
//
// RunProgram (lower/program.h) fills a program's view table and gathers each step's operand
// views every time it runs; a func.call inside runs a second program the same way. For a loop
// whose body is a handful of small ops, that bookkeeping costs more than the arithmetic. Inside one
// execution of a loop, though, nothing it computes moves: the frame is the same memory every
// iteration and the carries alternate between two fixed buffer sets. So a FlatProgram is built
// once at compile time from a program, with every func.call (and composite) inlined, and
//  * Resolve() works out, once per loop execution and per carry set, the address of every value
//    and the operand views of every step, into a table in the loop's scratch memory;
//  * Run() then runs the steps from that table: elementwise kernels on a few elements are called
//    through their range function directly (no checks, no thread pool), everything else through
//    its kernel's direct form (Kernel::direct) or its kernel with the prepared views.
// Results are identical to RunProgram's: the same kernels run in the same order on the same
// memory (an inlined callee's frame is where RunProgram would have put it: the call step's
// scratch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "lower/program.h"

namespace kiln::codegen {
class NativeEmitter;
}

namespace kiln::engine {

class FlatProgram {
 public:
  // Flattens `program`, inlining calls (Kernel::callee) and the branches of case/if steps
  // (Kernel::branches: a jump to the chosen branch's steps, each ending in a jump past the others)
  // up to a size limit; calls and cases beyond it stay steps that run their programs.
  static std::shared_ptr<const FlatProgram> Build(std::shared_ptr<const lower::Program> program);

  // Bytes of the table Resolve() fills (64-byte multiple).
  size_t table_bytes() const { return table_bytes_; }
  const lower::Program& program() const { return *root_; }
  // kBranch steps: one per inlined case/if, two per inlined while (flat_branches.cc).
  size_t branch_steps() const;

  // Fills `table` (table_bytes() bytes, 64-byte aligned) for a run with these parameters and
  // results and the program's memory at `memory` (program().total_bytes bytes). Checks the
  // parameters' and results' types as RunProgram does.
  Status Resolve(std::span<const runtime::View> params, std::span<const runtime::View> results,
                 std::byte* memory, std::byte* table) const;

  // A table resolved for these parameters, results and memory, kept by the program for the
  // calling thread: a later call with the same addresses (a loop nested in a loop, a branch run
  // every iteration: their operands are in the enclosing frame, which does not move) returns it
  // without resolving again. Each thread keeps up to kCachedTables, the least recently used
  // replaced, so the two tables a loop uses at once (its carry sets) stay valid while it runs;
  // past kMaxCacheThreads threads, `fallback` (table_bytes(), 64-byte aligned) is resolved and
  // returned instead.
  static constexpr size_t kCachedTables = 4, kMaxCacheThreads = 8;
  StatusOr<std::byte*> ResolveCached(std::span<const runtime::View> params,
                                     std::span<const runtime::View> results, std::byte* memory,
                                     std::byte* fallback) const;

  // Whether result `index` may be computed in the very memory of parameter `index` (a loop carry
  // updated in place): one step alone reads the parameter (through any views of it), and that
  // step writes the result and may write it over that input (Kernel::in_place_input).
  bool UpdatesInPlace(size_t index) const;

  // Runs the program as resolved in `table`. Errors carry the failing step's description and
  // those of the calls it was inlined from.
  Status Run(lower::ExecContext& ctx, const std::byte* table) const;

  // Adds the description of step `index` and of the calls it was inlined from to `s` (an error
  // the native loop code reports for that step).
  Status StepContext(Status s, size_t index) const;

 private:
  enum class SlotKind : uint8_t { kParam, kResult, kFrame, kAlias, kConst };
  struct Slot {
    SlotKind kind;
    int32_t index;    // parameter / result index, or the aliased flat slot
    uint64_t offset;  // kFrame: from the root program's memory; kAlias: from the aliased slot
  };
  // kBranch: the inlined case/if (or the test of an inlined while's condition) whose selector is
  // io_[io] goes on at the step targets_[target + chosen branch]; kJump: goes on at step `target`
  // (past the other branches, or back to an inlined while's condition).
  enum class StepKind : uint8_t { kMap, kDirect, kKernel, kCopy, kBranch, kJump };
  struct FlatStep {
    StepKind kind;
    const lower::Step* step =
        nullptr;      // kMap (the map or fused step it comes from), kDirect, kKernel
    uint32_t io = 0;  // kDirect, kKernel, kCopy: first entry in io_ (inputs, then outputs)
    uint16_t n_in = 0, n_out = 0;
    uint64_t scratch = 0;  // kKernel: the step's scratch, from the root program's memory;
                           // kCopy: bytes to copy
    int32_t call = -1;     // the inlined call it came from (calls_), or -1
    // kMap: range(in, out, 0, elements, state), with in/out from refs_[refs ..].
    lower::RangeFn range = nullptr;
    const void* state = nullptr;
    int64_t elements = 0;
    uint32_t refs = 0;         // n_in inputs, then the output
    lower::MapCode code = {};  // kMap: what `range` computes (MapInfo::code)
    uint8_t scalar = 0;        // kMap: bit r set when range input r is one element, never offset
    // kBranch: first of its branches' entries in targets_ (`elements` of them; `scalar` 1 when
    // the selector is a predicate, true taking branch 0); kJump: the step to go on at.
    uint32_t target = 0;
  };
  // Where a map step's operand is: a resolved io_ entry's address, or a fused step's temporary
  // (`index` bytes into the table's temporaries).
  struct PtrRef {
    bool temp;
    uint32_t index;
  };
  struct Call {
    const lower::Step* step;
    int32_t parent;
  };
  // Per-step resolved operands (kMap: range inputs and output; kCopy: from, to; kKernel: out is
  // the scratch).
  struct Operands {
    const void* in[lower::kMaxMapInputs];
    void* out;
  };

  // The loop code generator (codegen/native_loop.cc) reads the tables' layout to emit the steps.
  friend class codegen::NativeEmitter;
  // Called by the native code for a kKernel step: runs step `index` as Run() would; returns 0, or
  // index + 1 with the step's status in *error.
  static uint64_t RunKernelStep(const FlatProgram* self, lower::ExecContext* ctx,
                                const std::byte* table, Status* error, uint64_t index);

  void Inline(const lower::Program& p, std::span<const int32_t> param_slots,
              std::span<const int32_t> result_slots, uint64_t memory, int32_t call, int depth);
  // Inlines case/if `step` (flat_branches.cc): false, nothing added, when it cannot be (`room`
  // false: past the depth or size limit); the step then runs as its kernel.
  bool InlineBranches(const lower::Step& step, std::span<const int32_t> ins,
                      std::span<const int32_t> outs, uint64_t scratch, int32_t call, int depth,
                      bool room);
  // The branch a kBranch step takes, its selector at `selector` (flat_branches.cc).
  static size_t Chosen(const FlatStep& f, const void* selector);
  // Inlines while `step` (flat_loops.cc) as the kernel runs it: its carries copied into set 0 of
  // its scratch, condition and body unrolled twice (reading set 0, then set 1) with a jump back,
  // the last carries copied out. False, nothing added, when it cannot be or would make the
  // program too large; the step then runs as its kernel.
  bool InlineWhile(const lower::Step& step, std::span<const int32_t> ins,
                   std::span<const int32_t> outs, uint64_t scratch, int32_t call, int depth,
                   bool room);
  // A kCopy step of template_[to].byte_size() bytes, and a new kFrame slot at `offset` viewed as
  // `like` (flat_loops.cc).
  void AddCopy(int32_t from, int32_t to, int32_t call);
  int32_t AddFrameSlot(uint64_t offset, const runtime::View& like);
  Status Context(Status s, const FlatStep& f) const;
  // The slot `slot` is a view of (itself if not an alias), and the byte offset into it.
  std::pair<int32_t, uint64_t> RootOf(int32_t slot) const;

  std::shared_ptr<const lower::Program> root_;
  std::vector<std::shared_ptr<const lower::Program>> keep_;  // inlined callees
  std::vector<Slot> slots_;                                  // in resolution order
  std::vector<runtime::View> template_;                      // per flat slot
  std::vector<FlatStep> steps_;
  std::vector<int32_t> io_;  // flat slots
  std::vector<PtrRef> refs_;
  std::vector<uint32_t> targets_;  // kBranch steps' branch entries (step indices)
  std::vector<Call> calls_;
  // ResolveCached's tables.
  struct CachedTable {
    std::thread::id thread;
    uint64_t used = 0;             // when last returned, by its thread's clock
    std::vector<const void*> key;  // memory, then every parameter's and result's address
    std::unique_ptr<std::byte[]> storage;
    std::byte* table = nullptr;  // 64-byte aligned in storage
  };
  mutable std::mutex cache_mu_;
  mutable std::vector<std::unique_ptr<CachedTable>> cache_;  // live as long as the program
  // Unique per program built: tells a thread's hints apart (flat_program_cache.cc).
  uint64_t serial_ = 0;
  size_t temp_bytes_ = 0;  // fused steps' temporaries
  size_t io_views_offset_ = 0, operands_offset_ = 0, temps_offset_ = 0, table_bytes_ = 0;
};

// A whole stablehlo.while as native code, made once at compile time by codegen/native_loop.h
// (BuildNativeLoop) when the machine has AVX and KILN_LOOP_JIT is not 0: the condition's and the
// body's steps in one x86-64 loop, each running on the table of the carry set of the iteration, so
// an iteration costs its steps and a compare.
class NativeLoop {
 public:
  // fn(tables, ctx, error, pred, set, memory) returns 0, or (1 << 32 for the body) | (step index +
  // 1).
  using Fn = uint64_t (*)(std::byte* const* tables, lower::ExecContext* ctx, Status* error,
                          const uint8_t* pred, int* set, std::byte* memory);
  // `code` owns the memory `fn` points into.
  NativeLoop(std::shared_ptr<const FlatProgram> cond, std::shared_ptr<const FlatProgram> body,
             Fn fn, std::shared_ptr<const void> code)
      : cond_(std::move(cond)), body_(std::move(body)), code_(std::move(code)), fn_(fn) {}

  // Runs `while (cond) body` from carry set *set (0 or 1) until the condition, written to
  // *pred, is false. tables: the resolved tables of cond reading set 0, set 1, then body reading
  // set 0, set 1, all resolved with the programs' memory at `memory`. On return *set is the set
  // holding the carries. Errors carry the failing step.
  Status Run(lower::ExecContext& ctx, std::byte* const tables[4], std::byte* memory,
             const uint8_t* pred, int* set) const;

  // For code made by codegen::BuildNativeOnce (one run of a branch): runs it on `table`, resolved
  // with the program's memory at `memory`. Errors carry the failing step.
  Status RunOnce(lower::ExecContext& ctx, std::byte* table, std::byte* memory) const;

 private:
  std::shared_ptr<const FlatProgram> cond_, body_;
  std::shared_ptr<const void> code_;
  Fn fn_ = nullptr;
};

}  // namespace kiln::engine
