// Native code for loops: a stablehlo.while's condition and body, as flat programs, in one x86-64
// loop (NativeLoop), generated once at compile time with Xbyak (a JIT assembler, BSD-3-Clause).
//
// FlatProgram::Run walks its steps and calls a function per step; on the one to a few elements a
// loop body usually holds, those calls cost more than the arithmetic (a scalar fori_loop: ~50 ns
// per iteration for four ops). The generated loop runs the same steps in the same order, on the
// same resolved tables (flat_program.h: a table holds every step's operand addresses, so one
// function serves both directions of the carries and every execution of the loop):
//  * map steps whose op and element types it knows (MapInfo::code) and that are small become
//    instructions: float arithmetic as packed AVX (ymm, then xmm, then scalar for the tail), the
//    rest element by element;
//  * data-movement steps that list their byte copies (Direct::pieces) become loads and stores, and
//    so does a dynamic_update_slice of one contiguous run (Direct::update: clamped start indices
//    times strides, then the update's bytes; native_moves.cc);
//  * every other step is a call, exactly the one Run() would make: the range function, the
//    direct form, or RunKernelStep for a kernel (whose error ends the loop).
// Small float values stay in a register cache between steps (NativeEmitter); every result is
// still stored. The instructions compute what the range functions compute, bit for bit: IEEE
// arithmetic and square root are correctly rounded either way; maximum/minimum follow
// FloatMax/FloatMin (NaN first operand, then NaN second, then +0 over -0), integers wrap, compares
// are the ordered predicates C++ uses (!= unordered), conversions are the ones static_cast makes.
// Anything else (float to integer conversion, integer division, transcendental functions, ...)
// stays a call. Only which of two NaN operands comes out may differ (a compiler may swap a
// commutative op's operands; x86 returns the first).
//
// Only machines with AVX get native code; KILN_LOOP_JIT=0 turns it off (the flat programs are then
// interpreted), KILN_LOOP_JIT_DUMP=<prefix> writes each loop's code to a file, and
// KILN_PERF_MAP=1 names each step's code in perf's map (codegen::DumpNativeCode).
#include "codegen/native_loop.h"

#include <xbyak/xbyak.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/native_emitter.h"
#include "engine/flat_program.h"
#include "ir/dtype.h"
#include "lower/small_ops.h"

namespace kiln::codegen {

using engine::FlatProgram;
using engine::NativeLoop;
using lower::Direct;
using lower::DirectFn;
using lower::MapCode;
using lower::MapOp;
using lower::RangeFn;
namespace {

bool NativeAllowed() {
  static const bool allowed = NativeCodeAllowed("KILN_LOOP_JIT");
  return allowed;
}

}  // namespace

// The frame Loop() and Once() share: callee-saved registers, rsp 16-byte aligned at the calls,
// [rsp]: set, [rsp + 8]: ctx, [rsp + 16]: error; r13 tables, r12 memory, r15d *set (rbp pred).
void NativeEmitter::Enter(bool pred_in_rbp) {
  push(rbx);
  push(rbp);
  push(r12);
  push(r13);
  push(r15);
  sub(rsp, 32);
  mov(r13, rdi);
  mov(ptr[rsp + 8], rsi);
  mov(ptr[rsp + 16], rdx);
  if (pred_in_rbp) mov(rbp, rcx);
  mov(ptr[rsp], r8);
  mov(r12, r9);
  mov(r15d, dword[r8]);
}

// The failure exits (a failed step jumps to fail_[tag] with its index + 1 in rax; the body's
// carry tag 1 in the upper half), done_, and the frame's teardown; write_set stores r15d to *set.
void NativeEmitter::Leave(bool write_set) {
  L(fail_[1]);
  mov(rcx, uint64_t{1} << 32);
  or_(rax, rcx);
  jmp(done_, T_NEAR);
  L(fail_[0]);
  jmp(done_, T_NEAR);
  L(done_);
  if (upper_dirty_) vzeroupper();
  if (write_set) {
    mov(rcx, ptr[rsp]);
    mov(dword[rcx], r15d);
  }
  add(rsp, 32);
  pop(r15);
  pop(r13);
  pop(r12);
  pop(rbp);
  pop(rbx);
  ret();
}

// Up to three f32 or f64 carries of kMaxCarryElements elements (one: carries of 2-3 elements
// measured slower, Lorenz RK4 f64[3] 1.14 -> 1.18x XLA:CPU, rk4 f32[3] 1.06 -> 1.10x: their
// registers leave the body's values fewer) that the condition and the body read as parameters and
// the body writes as a result of its own.
std::vector<NativeEmitter::CarryReg> NativeEmitter::CarryRegisters(const FlatProgram& cond,
                                                                   const FlatProgram& body) {
  constexpr auto kView = static_cast<uint32_t>(sizeof(runtime::View));
  constexpr auto kPtr = static_cast<uint32_t>(offsetof(runtime::View, ptr));
  constexpr size_t kMaxCarryRegs = 3;
  constexpr int64_t kMaxCarryElements = 1;
  auto slot_of = [](const FlatProgram& p, FlatProgram::SlotKind kind, size_t index) -> int64_t {
    for (size_t s = 0; s < p.slots_.size(); ++s) {
      if (p.slots_[s].kind == kind && static_cast<size_t>(p.slots_[s].index) == index) {
        return static_cast<int64_t>(s);
      }
    }
    return -1;
  };
  std::vector<CarryReg> out;
  const size_t n = body.program().result_slots.size();
  for (size_t i = 0; i < n && out.size() < kMaxCarryRegs; ++i) {
    const int64_t c = slot_of(cond, FlatProgram::SlotKind::kParam, i);
    const int64_t b = slot_of(body, FlatProgram::SlotKind::kParam, i);
    const int64_t r = slot_of(body, FlatProgram::SlotKind::kResult, i);
    if (c < 0 || b < 0 || r < 0) continue;
    const runtime::View& v = body.template_[static_cast<size_t>(r)];
    if (v.elements > kMaxCarryElements ||
        out.size() + static_cast<size_t>(v.elements) > kMaxCarryRegs ||
        (v.dtype != ir::DType::kF32 && v.dtype != ir::DType::kF64)) {
      continue;
    }
    const runtime::View& cv = cond.template_[static_cast<size_t>(c)];
    const runtime::View& bv = body.template_[static_cast<size_t>(b)];
    if (cv.elements != v.elements || cv.dtype != v.dtype || bv.elements != v.elements ||
        bv.dtype != v.dtype) {
      continue;
    }
    const bool f64 = v.dtype == ir::DType::kF64;
    for (int64_t e = 0; e < v.elements; ++e) {
      const int reg = kPool[std::size(kPool) - 1 - out.size()];
      out.push_back({reg, f64, static_cast<uint64_t>(c), static_cast<uint64_t>(b),
                     static_cast<uint64_t>(r), static_cast<uint32_t>(c) * kView + kPtr,
                     static_cast<uint32_t>(r) * kView + kPtr,
                     static_cast<uint32_t>(e * (f64 ? 8 : 4))});
    }
  }
  return out;
}

// fn(tables, ctx, error, pred, set, memory): while (cond) body, from and to *set.
//
// Small float carries (CarryRegisters) stay in registers of their own across iterations, so
// an iteration does not read back what the last one stored (a store-to-load round trip on the
// loop's critical path): loaded before the loop, they stand for the condition's parameters; for
// the body's where the condition left them alone (no call); the body's results are moved into
// them at its end (loaded from memory if no register holds one). Every value is still stored.
void NativeEmitter::Loop(const FlatProgram& cond, const FlatProgram& body) {
  const std::vector<CarryReg> carries = CarryRegisters(cond, body);
  reserved_ = carries.size();
  Enter(/*pred_in_rbp=*/true);
  Xbyak::Label top, exit;
  if (!carries.empty()) {
    mov(rbx, ptr[r13 + r15 * 8]);
    for (const CarryReg& c : carries) {
      mov(rax, ptr[rbx + c.cond_ptr]);
      LoadFloat(Xbyak::Xmm(c.reg), rax + c.offset, c.f64);
    }
  }
  L(top);
  Forget();
  for (const CarryReg& c : carries) Remember(c.cond_key, c.offset, c.reg, c.f64);
  mov(rbx, ptr[r13 + r15 * 8]);
  std::vector<uint64_t> live_out;
  for (const CarryReg& c : carries) live_out.push_back(c.cond_key);
  Flat(cond, 0, live_out);
  cmp(byte[rbp], 0);
  je(exit, T_NEAR);
  std::vector<bool> held;
  for (const CarryReg& c : carries) held.push_back(Find(c.cond_key, c.offset, c.f64) == c.reg);
  Forget();  // the cache's keys are the condition's
  for (size_t k = 0; k < carries.size(); ++k) {
    if (held[k]) Remember(carries[k].body_key, carries[k].offset, carries[k].reg, carries[k].f64);
  }
  mov(rbx, ptr[r13 + r15 * 8 + 16]);
  live_out.clear();
  for (const CarryReg& c : carries) live_out.push_back(c.result_key);
  Flat(body, 1, live_out);
  // The results into the carry registers: directly, or through xmm0-2 first when one result's
  // register is another carry's.
  // Elements in vector registers only are taken out first (which may evict another element's
  // register: that one is then loaded).
  for (const CarryReg& c : carries) {
    if (Find(c.result_key, c.offset, c.f64) < 0) Extract(c.result_key, c.offset, c.f64, -1, -1);
  }
  std::vector<int> from;
  bool crossed = false;
  for (const CarryReg& c : carries) {
    from.push_back(Find(c.result_key, c.offset, c.f64));
    crossed = crossed || (from.back() >= 0 && Reserved(from.back()) && from.back() != c.reg);
  }
  for (size_t k = 0; k < carries.size(); ++k) {
    const CarryReg& c = carries[k];
    if (from[k] == c.reg) continue;
    const Xbyak::Xmm t(crossed ? static_cast<int>(k) : c.reg);
    if (from[k] >= 0) {
      vmovaps(t, Xbyak::Xmm(from[k]));
    } else {
      mov(rax, ptr[rbx + c.result_ptr]);
      LoadFloat(t, rax + c.offset, c.f64);
    }
  }
  for (size_t k = 0; k < carries.size() && crossed; ++k) {
    if (from[k] != carries[k].reg) {
      vmovaps(Xbyak::Xmm(carries[k].reg), Xbyak::Xmm(static_cast<int>(k)));
    }
  }
  xor_(r15d, 1);
  jmp(top, T_NEAR);
  L(exit);
  xor_(eax, eax);
  jmp(done_, T_NEAR);
  Leave(/*write_set=*/true);
  reserved_ = 0;
}

void NativeEmitter::Once(const FlatProgram& program) {
  Enter(/*pred_in_rbp=*/false);  // Loop()'s frame: the steps are emitted as in a body
  Forget();
  mov(rbx, ptr[r13]);
  Flat(program, 1, {});
  xor_(eax, eax);
  jmp(done_, T_NEAR);
  Leave(/*write_set=*/false);
}

void NativeEmitter::Call(const void* fn) {
  Forget();  // calls clobber xmm registers and may write any memory
  if (upper_dirty_) vzeroupper();
  upper_dirty_ = false;
  mov(rax, reinterpret_cast<uint64_t>(fn));
  call(rax);
}

// range(in, out, 0, elements, state), `in` being the Operands entry at `op`.
void NativeEmitter::CallRange(uint32_t op, uint32_t out_field, RangeFn range, int64_t elements,
                              const void* state) {
  lea(rdi, ptr[rbx + op]);
  mov(rsi, ptr[rbx + op + out_field]);
  xor_(edx, edx);
  mov(rcx, static_cast<uint64_t>(elements));
  mov(r8, reinterpret_cast<uint64_t>(state));
  Call(reinterpret_cast<const void*>(range));
}

void NativeEmitter::CallDirect(DirectFn fn, const void* state, uint32_t in_views,
                               uint32_t out_views) {
  mov(rdi, reinterpret_cast<uint64_t>(state));
  lea(rsi, ptr[rbx + in_views]);
  lea(rdx, ptr[rbx + out_views]);
  Call(reinterpret_cast<const void*>(fn));
}

// RunKernelStep(program, ctx, table, error, index); a failure leaves the loop.
void NativeEmitter::CallKernel(const void* fn, const void* program, uint64_t index,
                               uint32_t program_tag) {
  mov(rdi, reinterpret_cast<uint64_t>(program));
  mov(rsi, ptr[rsp + 8]);
  mov(rdx, rbx);
  mov(rcx, ptr[rsp + 16]);
  mov(r8, index);
  Call(fn);
  test(rax, rax);
  jnz(fail_[program_tag], T_NEAR);
}

namespace {

void CopyDistinct(void* to, const void* from, size_t bytes) {
  if (to != from) std::memmove(to, from, bytes);
}

}  // namespace

// A step's name in perf's map: its index, how it is emitted and the op it runs.
std::string NativeEmitter::StepMarkName(const FlatProgram::FlatStep& f, size_t index) {
  const char* how = "";
  switch (f.kind) {
    case FlatProgram::StepKind::kMap:
      how = FormOf(f.code, f.elements, f.n_in) == Form::kCall ? "range call" : "map";
      break;
    case FlatProgram::StepKind::kDirect:
      how = DirectInline(f) ? "direct" : "direct call";
      break;
    case FlatProgram::StepKind::kKernel:
      how = "kernel call";
      break;
    case FlatProgram::StepKind::kCopy:
      how = "copy";
      break;
    case FlatProgram::StepKind::kBranch:
      how = "branch";
      break;
    case FlatProgram::StepKind::kJump:
      how = "jump";
      break;
  }
  std::string name = "step " + std::to_string(index) + " " + how;
  if (f.step != nullptr) name += ": " + f.step->what;
  if (f.kind == FlatProgram::StepKind::kCopy) name += " (" + std::to_string(f.scratch) + " bytes)";
  return name;
}

void NativeEmitter::Flat(const FlatProgram& p, uint32_t program_tag,
                         const std::vector<uint64_t>& live_out) {
  PlanLiveness(p, live_out);
  constexpr uint64_t kMaxFrameDisp = uint64_t{1} << 30;
  const auto out_field = static_cast<uint32_t>(offsetof(FlatProgram::Operands, out));
  const std::unique_ptr<BranchPoints> branches = PrepareBranches(p);
  for (size_t i = 0; i < p.steps_.size(); ++i) {
    if (i > 0) DropDead();  // the values step i - 1 left that no later step reads
    step_ = static_cast<uint32_t>(i);
    const FlatProgram::FlatStep& f = p.steps_[i];
    if (branches != nullptr) AtStep(*branches, i);
    if (PerfMapEnabled()) {
      marks_.push_back({getSize(), (program_tag == 0 ? "cond " : "") + StepMarkName(f, i)});
    }
    const auto op = static_cast<uint32_t>(p.operands_offset_ + i * sizeof(FlatProgram::Operands));
    switch (f.kind) {
      case FlatProgram::StepKind::kMap: {
        const Form form = FormOf(f.code, f.elements, f.n_in);
        if (form == Form::kCall) {
          CallRange(op, out_field, f.range, f.elements, f.state);
          break;
        }
        OperandKeys keys;
        for (uint16_t r = 0; r <= f.n_in && r < 4; ++r) {
          const FlatProgram::PtrRef& ref = p.refs_[f.refs + r];
          const int k = r == f.n_in ? 3 : r;
          keys.key[k] = RefKey(p, ref);
          if (ref.temp) {
            keys.where[k] = OperandKeys::kTable;
            keys.disp[k] = static_cast<uint32_t>(p.temps_offset_ + ref.index);
          } else {
            const auto [root, offset] = p.RootOf(p.io_[ref.index]);
            keys.base[k] = offset;
            const FlatProgram::Slot& slot = p.slots_[static_cast<size_t>(root)];
            if (slot.kind == FlatProgram::SlotKind::kFrame &&
                slot.offset + offset < kMaxFrameDisp) {
              keys.where[k] = OperandKeys::kFrame;
              keys.disp[k] = static_cast<uint32_t>(slot.offset + offset);
            }
          }
        }
        Map(form, f.code, f.elements, f.scalar, op, out_field, keys);
        break;
      }
      case FlatProgram::StepKind::kCopy: {
        std::pair<uint64_t, uint64_t> roots[2];
        for (int k = 0; k < 2; ++k) {
          const auto [root, offset] = p.RootOf(p.io_[f.io + static_cast<uint32_t>(k)]);
          roots[k] = {static_cast<uint64_t>(root), offset};
        }
        const bool f64 = p.template_[static_cast<size_t>(p.io_[f.io + 1])].dtype == ir::DType::kF64;
        Copy(op, out_field, f.scratch, reinterpret_cast<const void*>(&CopyDistinct), roots, f64);
      } break;
      case FlatProgram::StepKind::kDirect: {
        const auto views = static_cast<uint32_t>(p.io_views_offset_ + f.io * sizeof(runtime::View));
        if (!DirectInline(f)) {
          CallDirect(f.step->kernel.direct.fn, f.step->kernel.direct.state.get(), views,
                     views + static_cast<uint32_t>(f.n_in * sizeof(runtime::View)));
          break;
        }
        if (const Direct& d = f.step->kernel.direct; d.reduce_all.op != MapOp::kNone) {
          std::pair<uint64_t, uint64_t> roots[3];
          for (uint32_t k = 0; k < 3; ++k) {
            const auto [root, offset] = p.RootOf(p.io_[f.io + k]);
            roots[k] = {static_cast<uint64_t>(root), offset};
          }
          ReduceAll(d.reduce_all, d.reduce_elements, views, roots);
          break;
        }
        if (const lower::SmallDotCode* dot = lower::SmallDotOf(f.step->kernel.direct)) {
          std::pair<uint64_t, uint64_t> roots[3];
          for (uint32_t k = 0; k < 3; ++k) {
            const auto [root, offset] = p.RootOf(p.io_[f.io + k]);
            roots[k] = {static_cast<uint64_t>(root), offset};
          }
          SmallDot(*dot, views, roots);
          break;
        }
        if (const lower::BitReduceCode* bits = lower::BitReduceOf(f.step->kernel.direct)) {
          ReduceBits(*bits, views, static_cast<uint64_t>(p.RootOf(p.io_[f.io + 2]).first));
          break;
        }
        const Direct& d = f.step->kernel.direct;
        if (d.fn == &lower::RunDropUpdate) {
          std::vector<std::pair<uint64_t, uint64_t>> roots;
          for (uint32_t k = 0; k < 4; ++k) {
            const auto [root, offset] = p.RootOf(p.io_[f.io + k]);
            roots.emplace_back(static_cast<uint64_t>(root), offset);
          }
          DropUpdate(*static_cast<const lower::DropUpdateCode*>(d.state.get()), views,
                     reinterpret_cast<const void*>(&CopyDistinct), roots);
          break;
        }
        if (d.slice != nullptr && f.n_out == 1 && f.n_in == 1 + d.slice->start_types.size() &&
            d.slice->update_bytes <= kMaxInlineUpdateBytes) {
          DynamicSlice(*d.slice, views, f.n_in,
                       static_cast<uint64_t>(p.RootOf(p.io_[f.io + f.n_in]).first));
          break;
        }
        if (d.pieces != nullptr || (d.update != nullptr && f.n_out == 1 &&
                                    d.update->update_bytes <= kMaxInlineUpdateBytes)) {
          std::vector<std::pair<uint64_t, uint64_t>> roots;
          for (uint16_t k = 0; k <= f.n_in; ++k) {
            const auto [root, offset] = p.RootOf(p.io_[f.io + k]);
            roots.emplace_back(static_cast<uint64_t>(root), offset);
          }
          if (d.pieces != nullptr) {
            const auto out_slot = static_cast<size_t>(p.io_[f.io + f.n_in]);
            Pieces(*d.pieces, views, f.n_in, roots, p.template_[out_slot].dtype == ir::DType::kF64);
          } else {
            UpdateSlice(*d.update, views, f.n_in, reinterpret_cast<const void*>(&CopyDistinct),
                        roots);
          }
          break;
        }
        break;
      }
      case FlatProgram::StepKind::kKernel:
        CallKernel(reinterpret_cast<const void*>(&FlatProgram::RunKernelStep), &p, i, program_tag);
        break;
      case FlatProgram::StepKind::kBranch:
        Branch(*branches, p, i);
        break;
      case FlatProgram::StepKind::kJump:
        Jump(*branches, p, i);
        break;
    }
  }
  if (branches != nullptr) AtStep(*branches, p.steps_.size());
  planned_ = false;
}

std::shared_ptr<const NativeLoop> BuildNativeLoop(std::shared_ptr<const FlatProgram> cond,
                                                  std::shared_ptr<const FlatProgram> body) {
  // Table offsets are 32-bit displacements.
  constexpr size_t kMaxTable = size_t{1} << 30;
  if (!NativeAllowed() || cond->table_bytes() >= kMaxTable || body->table_bytes() >= kMaxTable) {
    return nullptr;
  }
  try {
    auto gen = std::make_shared<NativeEmitter>();
    gen->Loop(*cond, *body);
    gen->readyRE();
    DumpNativeCode("KILN_LOOP_JIT_DUMP", gen->getCode(), gen->getSize(), gen->marks());
    const auto fn = gen->getCode<NativeLoop::Fn>();
    return std::make_shared<NativeLoop>(std::move(cond), std::move(body), fn, std::move(gen));
  } catch (...) {
    // Xbyak reports failures (no executable memory, ...) by throwing: the loop is then
    // interpreted, as without native code.
    return nullptr;
  }
}

std::shared_ptr<const NativeLoop> BuildNativeOnce(std::shared_ptr<const FlatProgram> program) {
  constexpr size_t kMaxTable = size_t{1} << 30;
  if (!NativeAllowed() || program->table_bytes() >= kMaxTable) return nullptr;
  try {
    auto gen = std::make_shared<NativeEmitter>();
    gen->Once(*program);
    gen->readyRE();
    DumpNativeCode("KILN_LOOP_JIT_DUMP", gen->getCode(), gen->getSize(), gen->marks());
    const auto fn = gen->getCode<NativeLoop::Fn>();
    return std::make_shared<NativeLoop>(program, program, fn, std::move(gen));
  } catch (...) {
    return nullptr;  // as for loops: the branch is then interpreted
  }
}

}  // namespace kiln::codegen
