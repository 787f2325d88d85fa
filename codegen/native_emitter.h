// The x86-64 code generator of native loops (codegen/native_loop.cc): the instructions
// for one map step (native_emitter.cc; loads, stores and the register cache in
// native_registers.cc) and the loop around the steps. Internal to codegen/.
#pragma once

#include <xbyak/xbyak.h>

#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "codegen/native_ops.h"
#include "engine/flat_program.h"
#include "lower/drop_update.h"
#include "lower/small_ops.h"

namespace kiln::codegen {

// An element type the generator handles in registers.
struct ElemType {
  int width = 0;
  bool is_float = false;
  bool is_signed = false;
  bool is_pred = false;
};

// Where a map step's operands are, for the register cache (NativeEmitter): a key per range input
// and for the output (index 3) naming the memory (the root value of a flat slot, or a fused
// step's temporary) and the byte offset of the operand in it. Equal keys and offsets are the same
// bytes; different ones may still be (a loop carry updated in place), which only costs a load.
// Also how each is addressed: through its pointer in the step's Operands entry, or, for values
// whose place is fixed relative to the loop's memory, directly: a fused step's temporary at
// [table + disp], a frame value of the program at [frame + disp].
struct OperandKeys {
  enum Where : uint8_t { kPointer, kTable, kFrame };
  uint64_t key[4] = {0, 0, 0, 0};
  uint64_t base[4] = {0, 0, 0, 0};
  Where where[4] = {kPointer, kPointer, kPointer, kPointer};
  uint32_t disp[4] = {0, 0, 0, 0};
};

// How a map step is emitted inline, if it is.
enum class Form {
  kCall,
  kFloatPacked,
  kFloatCompare,
  kInteger,
  kIntegerCompare,
  kSelect,
  kConvert,
  kBroadcast,
  kVectorCall
};

// How map step `code` on `elements` elements with `n_in` range inputs is emitted.
Form FormOf(const lower::MapCode& code, int64_t elements, uint16_t n_in);

// The generator of a loop's code (codegen/native_loop.cc; data movement in
// native_moves.cc, map steps in native_emitter.cc, reductions in native_reduce.cc). Registers: rbx
// the table of the program running, r12 the programs' frame memory, r13 the four tables, r15 the
// carry set, rbp the predicate (all callee-saved, so they survive calls); the ExecContext and
// Status* on the stack; range input r's address in rax, rcx, rdx, the output's in rsi; r8-r11 and
// xmm0-xmm7 as temporaries.
class NativeEmitter : public Xbyak::CodeGenerator {
 public:
  NativeEmitter() : Xbyak::CodeGenerator(4096, Xbyak::AutoGrow) {}
  // fn(tables, ctx, error, pred, set, memory): while (cond) body, from and to *set.
  void Loop(const engine::FlatProgram& cond, const engine::FlatProgram& body);
  // An element of a carry kept in a register across iterations (Loop()): an f32 or f64 element
  // (byte `offset` into the carry), its slots in the condition and the body (cache keys; the byte
  // offsets of their views' pointers in the tables) and its register.
  struct CarryReg {
    int reg;
    bool f64;
    uint64_t cond_key, body_key, result_key;
    uint32_t cond_ptr, result_ptr, offset;
  };
  static std::vector<CarryReg> CarryRegisters(const engine::FlatProgram& cond,
                                              const engine::FlatProgram& body);
  // One run of `program` (a case/if branch), called as a NativeLoop::Fn: tables[0] is its table,
  // `pred` is not read, *set is left as it was; a failed step returns (1 << 32) | (index + 1).
  void Once(const engine::FlatProgram& program);
  // Loop()'s and Once()'s shared prologue and failure exits + epilogue (native_loop.cc).
  void Enter(bool pred_in_rbp);
  void Leave(bool write_set);
  // The steps of one flat program, run on the table in rbx; a failed kernel step jumps to
  // fail_[program_tag] (0: the condition, 1: the body). `live_out`: the register-cache keys read
  // from the cache after the program's last step (the carries Loop() moves into registers).
  void Flat(const engine::FlatProgram& p, uint32_t program_tag,
            const std::vector<uint64_t>& live_out);
  void Call(const void* fn);
  // range(in, out, 0, elements, state), `in` being the Operands entry at `op`.
  void CallRange(uint32_t op, uint32_t out_field, lower::RangeFn range, int64_t elements,
                 const void* state);
  void CallDirect(lower::DirectFn fn, const void* state, uint32_t in_views, uint32_t out_views);
  // RunKernelStep(program, ctx, table, error, index); a failure leaves the loop.
  void CallKernel(const void* fn, const void* program, uint64_t index, uint32_t program_tag);
  // Copies `bytes` from in[0] to out of the Operands entry at `op` unless they are the same;
  // `roots` holds the register-cache key and base offset of in[0] and of out; `f64`: the
  // elements are f64 (else 4-byte elements are taken for f32).
  void Copy(uint32_t op, uint32_t out_field, uint64_t bytes, const void* copy_fn,
            const std::pair<uint64_t, uint64_t> roots[2], bool f64);
  // The byte copies of a data-movement step (Direct::pieces) whose views start at `views`;
  // `roots` holds the register-cache key and base offset of each input and then of the output.
  // `f64`: the output's elements are f64, copied as such through the cache (not as halves).
  void Pieces(const std::vector<lower::BytePiece>& pieces, uint32_t views, uint16_t n_in,
              const std::vector<std::pair<uint64_t, uint64_t>>& roots, bool f64);
  // Direct::update inline (native_moves.cc): input 0 the operand, 1 the update, then the start
  // indices, then the output, as views at `views`; `copy_fn(to, from, bytes)` copies the operand
  // when the output is other memory; `roots` as for Pieces.
  void UpdateSlice(const lower::UpdateSliceCode& code, uint32_t views, uint16_t n_in,
                   const void* copy_fn, const std::vector<std::pair<uint64_t, uint64_t>>& roots);
  // Direct::slice inline (native_moves.cc): input 0 the operand, then the start indices, then
  // the output, as views at `views`; `out_key` the output's register-cache key.
  void DynamicSlice(const lower::UpdateSliceCode& code, uint32_t views, uint16_t n_in,
                    uint64_t out_key);
  // rdi = the clamped start offset in bytes of a slice whose start indices are the views from
  // `first` on (Direct::update, Direct::slice); uses rax and r8-r10.
  void StartOffset(const lower::UpdateSliceCode& code, uint32_t views, uint32_t first);
  // r8 = the index at [rax] of type `t`, sign- or zero-extended by its width and signedness (s64,
  // u64 and any non-integer type: 8 bytes).
  void LoadIndex(ir::DType t);
  // rsi = the output (the view after the n_in inputs at `views`), input 0's `bytes` copied into
  // it first unless it is input 0's memory (native_moves.cc).
  void CopyUnlessInPlace(uint32_t views, uint16_t n_in, uint64_t bytes, const void* copy_fn);
  // A one-window scatter's direct form (lower::RunDropUpdate) inline (native_scatter.cc): inputs
  // operand, start, update and the output as views at `views`; `roots` their register-cache keys
  // and base offsets.
  void DropUpdate(const lower::DropUpdateCode& code, uint32_t views, const void* copy_fn,
                  const std::vector<std::pair<uint64_t, uint64_t>>& roots);
  // Direct::reduce_all inline (native_reduce.cc): input 0 (n elements) and 1 (the initial value)
  // and the output are the views at `views`; `roots` the register-cache key and base offset of
  // each. Elements come from the register cache (or are loaded into it), and the result stays in
  // it.
  void ReduceAll(const lower::MapCode& code, int64_t n, uint32_t views,
                 const std::pair<uint64_t, uint64_t> roots[3]);
  // A tiny dot inline (lower::SmallDotCode, native_dots.cc): input 0 (lhs), 1 (rhs) and the output
  // are the views at `views`; `roots` as for ReduceAll. Operand elements come from the register
  // cache (or are loaded into it); each output element is summed in xmm0 and then stays in the
  // cache.
  void SmallDot(const lower::SmallDotCode& code, uint32_t views,
                const std::pair<uint64_t, uint64_t> roots[3]);
  // A bitwise reduction inline (lower::BitReduceCode, native_reduce.cc): input 0, the initial value
  // and the output are the views at `views`, folded in r8 through memory; `out_key` the output's
  // cache key.
  void ReduceBits(const lower::BitReduceCode& code, uint32_t views, uint64_t out_key);
  // Emits map step `f` inline (FormOf(...) != kCall), its operands in the entry at `op`.
  void Map(Form form, const lower::MapCode& code, int64_t n, uint8_t scalar, uint32_t op,
           uint32_t out_field, const OperandKeys& keys);
  void Forget() { cache_.clear(); }
  // With KILN_PERF_MAP=1 (PerfMapEnabled), where each step's code starts, named after the step
  // ("step 12 map: stablehlo.add (f32) at model.py:3"; a condition's steps "cond step ..."), for
  // perf's map; empty otherwise.
  const std::vector<CodeMark>& marks() const { return marks_; }
  // Around a call of a vector function (native_calls.cc): the pool registers the cache uses are
  // stored on the stack (whole ymm where a cached vector is 32 bytes) and loaded back after it,
  // so that the cache and the carry registers survive the call. Returns the saved registers and
  // their widths for RestoreLive.
  std::vector<std::pair<int, int>> SaveLive();
  void RestoreLive(const std::vector<std::pair<int, int>>& saved);
  void ForgetKey(uint64_t key);
  // Register-cache keys: a flat slot's root, or a fused step's temporary (its byte offset with
  // the top bit set).
  static constexpr uint64_t kTempKey = uint64_t{1} << 63;
  static uint64_t RefKey(const engine::FlatProgram& p, const engine::FlatProgram::PtrRef& ref);
  // Whether a kDirect step is emitted inline (else it is a call, which empties the cache).
  static bool DirectInline(const engine::FlatProgram::FlatStep& f);
  // A dynamic_update_slice or dynamic_slice moving more than this is a call (of its direct form).
  static constexpr uint64_t kMaxInlineUpdateBytes = 256;

  // Inlined case/if branches (FlatProgram kBranch/kJump steps; native_branches.cc). A label per
  // step that is jumped to, and the register-cache states of the jumps to it: where several paths
  // meet, the cache keeps what every one of them holds.
  struct BranchPoints;
  // Labels for the jump targets of `p`'s steps, or null when it has no branches.
  std::unique_ptr<BranchPoints> PrepareBranches(const engine::FlatProgram& p);
  // Before emitting step `i` (or i == steps, after the last): defines its label if it is a target
  // and sets the cache to what every path to it holds.
  void AtStep(BranchPoints& b, size_t i);
  // A kBranch step: the selector's compares and jumps; a kJump step: the jump.
  void Branch(BranchPoints& b, const engine::FlatProgram& p, size_t i);
  void Jump(BranchPoints& b, const engine::FlatProgram& p, size_t i);

 private:
  static std::string StepMarkName(const engine::FlatProgram::FlatStep& f, size_t index);
  // Liveness of the register cache's keys in the program Flat() is emitting (native_calls.cc),
  // computed once before its first step: per key, the steps that read it from the cache and the
  // steps that write it, and the steps that empty the cache (calls). A cached value is live after
  // step `step_` when a step reads its key before any step writes it or empties the cache, or
  // when nothing does and the key is live out of the program.
  struct Liveness {
    struct Uses {
      std::vector<uint32_t> reads, writes;
    };
    std::vector<std::pair<uint64_t, Uses>> keys;  // sorted by key
    std::vector<uint32_t> barriers;
    std::vector<uint64_t> live_out;  // sorted
  };
  void PlanLiveness(const engine::FlatProgram& p, const std::vector<uint64_t>& live_out);
  bool LiveAfter(uint64_t key) const;
  // Drops the cache's entries whose values are dead after step_ (their registers become free).
  void DropDead();
  // Loads `size` bytes into the low part of `r` (zero-extended to 64 bits for 1, 2 and 4).
  void Load(const Xbyak::Reg64& r, const Xbyak::RegExp& a, int size);
  void Store(const Xbyak::RegExp& a, const Xbyak::Reg64& r, int size);
  // An element of type t into 64-bit `r`, sign- or zero-extended as its type says. A pred reads
  // as 1 when its byte is non-zero (PredByte's rule).
  void LoadInt(const Xbyak::Reg64& r, const Xbyak::RegExp& e, const ElemType& t);
  void LoadFloat(const Xbyak::Xmm& x, const Xbyak::RegExp& a, bool f64);
  void StoreFloat(const Xbyak::RegExp& a, const Xbyak::Xmm& x, bool f64);
  // r8 = op(r8, r9) for integers extended to 64 bits: the low `width` bytes are the wrapped
  // result; maximum/minimum compare the extended values (signed or unsigned as the type).
  void Integer(lower::MapOp op, const ElemType& t);
  void Shift(lower::MapOp op, const ElemType& t);
  void Convert(const ElemType& from, const ElemType& to, const Xbyak::RegExp& src,
               const Xbyak::RegExp& dst);
  // Float arithmetic on n elements: 32-byte chunks in ymm, then 16-byte chunks in xmm, then one
  // element at a time. xmm0/xmm1 hold the operands, xmm2 the result, xmm3 a temporary and xmm7
  // the sign mask of negate/abs.
  template <typename At, typename AtOut>
  void FloatPacked(lower::MapOp op, bool f64, int64_t n, uint8_t scalar, At at, AtOut at_out,
                   const OperandKeys& keys);
  // Builds the `bytes` (16 or 32) vector of f32/f64 elements at (key, offset) in xmm/ymm `to`
  // when the cache holds any of its elements one by one (they were written one at a time: one
  // wide load of them would miss store forwarding and stall): cached elements from their
  // registers, the others loaded one by one from `at()` (element 0's address), xmm3 a temporary.
  // False (nothing emitted) when no element is cached.
  template <typename At>
  bool ComposeVector(int to, uint64_t key, uint64_t offset, int bytes, bool f64, At at);
  int Find(uint64_t key, uint64_t offset, bool f64);
  // Whether the cache holds element (key, offset), alone or in a vector (Find or Extract then
  // takes it without a load).
  bool Holds(uint64_t key, uint64_t offset, bool f64) const;
  // Element (key, offset) taken out of a cached vector holding it (a lane permute, and for the
  // upper half of a ymm an extract) into a pool register other than pin0, pin1 and the vector's,
  // which then holds it too; -1 (nothing emitted) when no cached vector holds it. Cheaper than
  // loading it back from the vector's store.
  int Extract(uint64_t key, uint64_t offset, bool f64, int pin0, int pin1);
  // The cache register holding the `bytes` (16 or 32) at (key, offset) as one vector, or -1.
  int FindVector(uint64_t key, uint64_t offset, int bytes);
  // The register holding every one of the `count` elements from (key, offset) (a splat's copies),
  // or -1.
  int FindSplat(uint64_t key, uint64_t offset, bool f64, int64_t count);
  // The cache register holding element (key, offset), else a pool register other than pin0 and
  // pin1 that it is loaded into from at() (called only then: it may load a pointer first).
  template <typename At>
  int Fetch(At at, uint64_t key, uint64_t offset, bool f64, int pin0 = -1, int pin1 = -1) {
    int reg = Find(key, offset, f64);
    if (reg < 0) reg = Extract(key, offset, f64, pin0, pin1);
    if (reg < 0) {
      reg = Allocate(pin0, pin1);
      LoadFloat(Xbyak::Xmm(reg), at(), f64);
      Remember(key, offset, reg, f64);
    }
    return reg;
  }
  // `bytes` from src + from to dst + to (native_moves.cc); in_root and out_root (nullptr when the
  // destination is not known at compile time) are the register-cache key and base offset.
  void MoveBytes(const Xbyak::Reg64& src, uint64_t from, const Xbyak::Reg64& dst, uint64_t to,
                 uint64_t bytes, std::pair<uint64_t, uint64_t> in_root,
                 const std::pair<uint64_t, uint64_t>* out_root, bool f64);
  // The next piece of a plain copy from s to d with `left` bytes to go, not through the register
  // cache: a ymm, an xmm, or an 8/4/2/1-byte integer move. Returns the bytes moved.
  uint64_t PlainStep(const Xbyak::RegExp& s, const Xbyak::RegExp& d, uint64_t left);
  // Copies one f32/f64 element from `src` (key, offset) to `dst` through a cache register: the one
  // holding it, or one it is loaded into; the register then also stands for the copy.
  void CopyFloat(const Xbyak::RegExp& src, uint64_t src_key, uint64_t src_offset,
                 const Xbyak::RegExp& dst, uint64_t dst_key, uint64_t dst_offset, bool f64);
  // `count` copies of the `width`-byte element at src (register-cache key and offset src_key,
  // src_offset; an f64 when `f64`, else f32 when 4 bytes, raw bytes when 8) one after another from
  // dst (dst_key, dst_offset): one broadcast into ymm0 and wide stores, which a wide load of the
  // copies can take from the store buffer (single-element stores read back by one 32-byte load
  // cannot be, and stall). The element's register then stands for every copy.
  void Splat(const Xbyak::RegExp& src, uint64_t src_key, uint64_t src_offset,
             const Xbyak::RegExp& dst, uint64_t dst_key, uint64_t dst_offset, int width, bool f64,
             uint64_t count);
  // A pool register other than `a` and `b` and the carry registers: a free one, else the least
  // recently used one.
  int Allocate(int a, int b);
  // Whether `reg` holds a loop carry across iterations (Loop(): the last reserved_ of kPool).
  bool Reserved(int reg) const {
    return reserved_ > 0 && reg > kPool[std::size(kPool) - 1 - reserved_];
  }
  // `reg` now holds these bytes and nothing else / also these bytes (a copy's destination).
  void Remember(uint64_t key, uint64_t offset, int reg, bool f64);
  void Alias(uint64_t key, uint64_t offset, int reg, bool f64);
  // `reg` now holds the `bytes` (16 or 32) at (key, offset) as one vector, and nothing else.
  void RememberVector(uint64_t key, uint64_t offset, int reg, int bytes);

  // The register cache: which xmm/ymm registers (of kPool) hold which float elements or 16- and
  // 32-byte vectors of them, so that a value a step has just computed or loaded is read from its
  // register by the next steps instead of from memory (every result is still stored). A register
  // may stand for several places (a value and its copies made by slices, concatenates and
  // broadcasts). Emptied at calls, at the start of the condition and of the body; a step's output
  // key is dropped before the step writes it.
  struct Cached {
    uint64_t key, offset;
    int reg;
    bool f64;
    uint64_t used;
    int bytes = 0;  // 0: one element (f64 or f32); 16 or 32: a vector of them
  };
  static constexpr int kPool[] = {4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  std::vector<Cached> cache_;
  uint64_t clock_ = 0;
  size_t reserved_ = 0;  // carry registers: xmm15, xmm14, xmm13 (Loop())
  Liveness live_;
  uint32_t step_ = 0;
  bool planned_ = false;  // live_ describes the program being emitted
  Xbyak::Label done_, fail_[2];
  bool upper_dirty_ = false;
  std::vector<CodeMark> marks_;
};

// Labels and register-cache states of a flat program's inlined branches (native_branches.cc).
struct NativeEmitter::BranchPoints {
  struct State {
    std::vector<Cached> cache;
    bool upper_dirty;
  };
  std::unique_ptr<Xbyak::Label[]> labels;  // per step index, and one past the last
  std::vector<bool> target;
  std::vector<bool> head;                    // jumped to from a later step (an inlined while's top)
  std::vector<std::vector<State>> incoming;  // per step index: the states jumped in with
  bool dead = false;                         // the last instruction was an unconditional jump
};

}  // namespace kiln::codegen
