// The data movement of native loops (NativeEmitter, native_emitter.h): copies of carries, the byte
// copies of slices, concatenates and broadcasts (Direct::pieces), and dynamic_update_slice of one
// contiguous run (Direct::update). Small float elements go through the register cache, so the
// steps that read a copy take it from the register that computed it.
#include <xbyak/xbyak.h>
#include <xbyak/xbyak_util.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "codegen/native_emitter.h"
#include "ir/dtype_dispatch.h"

namespace kiln::codegen {

using lower::BytePiece;
using lower::UpdateSliceCode;
namespace {

constexpr uint64_t kMaxInlineCopyBytes = 32;
constexpr auto kView = static_cast<uint32_t>(sizeof(runtime::View));
constexpr auto kPtr = static_cast<uint32_t>(offsetof(runtime::View, ptr));

}  // namespace

// Copies `bytes` from in[0] to out of the Operands entry at `op` unless they are the same.
void NativeEmitter::Copy(uint32_t op, uint32_t out_field, uint64_t bytes, const void* copy_fn,
                         const std::pair<uint64_t, uint64_t> roots[2], bool f64) {
  const auto [in_key, in_base] = roots[0];
  const auto [out_key, out_base] = roots[1];
  ForgetKey(out_key);
  if (bytes == 0) return;
  mov(rax, ptr[rbx + op]);
  mov(rsi, ptr[rbx + op + out_field]);
  if (bytes > kMaxInlineCopyBytes) {
    mov(rdi, rsi);
    mov(rsi, rax);
    mov(rdx, bytes);
    Call(copy_fn);
    return;
  }
  Xbyak::Label skip;
  if (bytes % 4 == 0) {
    // f32 elements, most likely (a small carry), or f64 ones: through the register cache, as
    // Pieces does. Every element is in a register before the branch, so the cache holds on both of
    // its paths (when the two are the same memory, the copy's registers hold its bytes too).
    const bool wide = f64 && bytes % 8 == 0;
    const uint64_t width = wide ? 8 : 4;
    const auto elements = static_cast<int>(bytes / width);
    int regs[8];
    for (int i = 0; i < elements; ++i) {
      const uint64_t at = static_cast<uint64_t>(i) * width;
      regs[i] = Fetch([&] { return rax + static_cast<size_t>(at); }, in_key, in_base + at, wide);
    }
    cmp(rax, rsi);
    je(skip, T_NEAR);
    for (int i = 0; i < elements; ++i)
      StoreFloat(rsi + static_cast<size_t>(i * width), Xbyak::Xmm(regs[i]), wide);
    L(skip);
    for (int i = 0; i < elements; ++i)
      Alias(out_key, out_base + static_cast<uint64_t>(i) * width, regs[i], wide);
    return;
  }
  cmp(rax, rsi);
  je(skip, T_NEAR);
  // Everything is loaded before anything is stored, as memmove would.
  const Xbyak::Reg64 regs[] = {rcx, rdx, rdi, r8, r9, r10, r11};
  struct Piece {
    uint32_t offset;
    int size;
  };
  Piece pieces[7];
  int count = 0;
  uint32_t at = 0;
  for (int size : {8, 4, 2, 1}) {
    while (bytes - at >= static_cast<uint64_t>(size)) {
      pieces[count++] = {at, size};
      at += static_cast<uint32_t>(size);
    }
  }
  for (int i = 0; i < count; ++i) Load(regs[i], rax + pieces[i].offset, pieces[i].size);
  for (int i = 0; i < count; ++i) Store(rsi + pieces[i].offset, regs[i], pieces[i].size);
  L(skip);
}

// The byte copies of a data-movement step (Direct::pieces) whose views start at `views`.
void NativeEmitter::Pieces(const std::vector<BytePiece>& pieces, uint32_t views, uint16_t n_in,
                           const std::vector<std::pair<uint64_t, uint64_t>>& roots, bool f64) {
  const auto [out_key, out_base] = roots[n_in];
  ForgetKey(out_key);
  mov(rsi, ptr[rbx + views + n_in * kView + kPtr]);
  int64_t loaded = -1;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const BytePiece& p = pieces[i];
    if (p.input >= n_in) continue;  // not made by PiecesOf
    // The input's pointer is loaded unless the piece is one element the cache holds (as
    // MoveBytes takes it: f64 when the output's elements are or the cache holds one there).
    const auto [in_key, in_base] = roots[p.input];
    const uint64_t element = in_base + p.from;
    const bool cached =
        (p.bytes == 4 && Holds(in_key, element, false)) ||
        (p.bytes == 8 && ((f64 && p.from % 8 == 0) || Find(in_key, element, true) >= 0) &&
         Holds(in_key, element, true));
    const bool splat = i + 1 < pieces.size() && pieces[i + 1].input == p.input &&
                       pieces[i + 1].from == p.from && pieces[i + 1].bytes == p.bytes;
    if (loaded != p.input && (!cached || splat)) {
      mov(rax, ptr[rbx + views + p.input * kView + kPtr]);
      loaded = p.input;
    }
    if (p.bytes == 4 || p.bytes == 8) {
      // One element copied to consecutive places (a broadcast): one register broadcast and wide
      // stores, which a wide load of the result can take from the store buffer (eight 4-byte
      // stores read back by a 32-byte load cannot be, and stall).
      size_t run = 1;
      while (i + run < pieces.size() && pieces[i + run].input == p.input &&
             pieces[i + run].bytes == p.bytes && pieces[i + run].from == p.from &&
             pieces[i + run].to == p.to + run * p.bytes) {
        ++run;
      }
      if (run * p.bytes >= 16) {
        const bool wide = p.bytes == 8 && (f64 || Find(in_key, in_base + p.from, true) >= 0);
        Splat(rax + static_cast<size_t>(p.from), in_key, in_base + p.from,
              rsi + static_cast<size_t>(p.to), out_key, out_base + p.to, static_cast<int>(p.bytes),
              wide, run);
        i += run - 1;
        continue;
      }
    }
    // Inputs and the output never overlap (the kernel contract): copy front to back.
    MoveBytes(rax, p.from, rsi, p.to, p.bytes, roots[p.input], &roots[n_in], f64);
  }
}

// `bytes` from src + from to dst + to: 32- and 16-byte chunks through ymm0/xmm0, whole 4- and
// 8-byte elements through the register cache (f32, or f64 when `f64_elements` says so or the cache
// holds one there: a few scalars, most likely, which their readers then take from the registers
// that computed them; if they are not floats, readers only miss the cache), the rest through r8.
// The destination's elements are recorded in the cache when `out_root` is given (a place known at
// compile time), not otherwise.
void NativeEmitter::MoveBytes(const Xbyak::Reg64& src, uint64_t from, const Xbyak::Reg64& dst,
                              uint64_t to, uint64_t bytes, std::pair<uint64_t, uint64_t> in_root,
                              const std::pair<uint64_t, uint64_t>* out_root, bool f64_elements) {
  const auto [in_key, in_base] = in_root;
  uint64_t at = 0;
  while (at < bytes) {
    const uint64_t left = bytes - at;
    const Xbyak::RegExp s = src + static_cast<size_t>(from + at);
    const Xbyak::RegExp d = dst + static_cast<size_t>(to + at);
    if (left < 16 && left % 4 == 0) {
      const uint64_t element = in_base + from + at;
      const bool f64 =
          left >= 8 && ((f64_elements && (from + at) % 8 == 0) || Find(in_key, element, true) >= 0);
      if (out_root != nullptr) {
        CopyFloat(s, in_key, element, d, out_root->first, out_root->second + to + at, f64);
      } else {
        StoreFloat(d, Xbyak::Xmm(Fetch([&] { return s; }, in_key, element, f64)), f64);
      }
      at += f64 ? 8 : 4;
    } else {
      at += PlainStep(s, d, left);
    }
  }
}

uint64_t NativeEmitter::PlainStep(const Xbyak::RegExp& s, const Xbyak::RegExp& d, uint64_t left) {
  if (left >= 32) {
    vmovups(ymm0, ptr[s]);
    vmovups(ptr[d], ymm0);
    upper_dirty_ = true;
    return 32;
  }
  if (left >= 16) {
    vmovups(xmm0, ptr[s]);
    vmovups(ptr[d], xmm0);
    return 16;
  }
  const int size = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
  Load(r8, s, size);
  Store(d, r8, size);
  return static_cast<uint64_t>(size);
}

// `count` copies of the `width`-byte element at src (cache key and offset src_key, src_offset),
// one after another from dst (dst_key, dst_offset).
void NativeEmitter::Splat(const Xbyak::RegExp& src, uint64_t src_key, uint64_t src_offset,
                          const Xbyak::RegExp& dst, uint64_t dst_key, uint64_t dst_offset,
                          int width, bool f64, uint64_t count) {
  static const bool avx2 = Xbyak::util::Cpu().has(Xbyak::util::Cpu::tAVX2);
  const uint64_t total = count * static_cast<uint64_t>(width);
  int reg = -1;
  if (width == 4 || f64) {
    reg = Fetch([&] { return src; }, src_key, src_offset, f64);
    if (avx2) {
      f64 ? vbroadcastsd(ymm0, Xbyak::Xmm(reg)) : vbroadcastss(ymm0, Xbyak::Xmm(reg));
    } else {  // AVX broadcasts from memory only: from the first copy, stored first
      StoreFloat(dst, Xbyak::Xmm(reg), f64);
      f64 ? vbroadcastsd(ymm0, qword[dst]) : vbroadcastss(ymm0, dword[dst]);
    }
  } else {
    vbroadcastsd(ymm0, qword[src]);  // eight bytes that are not an f64 the cache holds
  }
  upper_dirty_ = true;
  uint64_t at = 0;
  for (; total - at >= 32; at += 32) vmovups(ptr[dst + static_cast<size_t>(at)], ymm0);
  if (total - at >= 16) {
    vmovups(ptr[dst + static_cast<size_t>(at)], xmm0);
    at += 16;
  }
  if (total - at >= 8) {
    vmovsd(qword[dst + static_cast<size_t>(at)], xmm0);
    at += 8;
  }
  if (total - at >= 4) vmovss(dword[dst + static_cast<size_t>(at)], xmm0);
  if (reg >= 0) {
    for (uint64_t k = 0; k < count; ++k) {
      Alias(dst_key, dst_offset + k * static_cast<uint64_t>(width), reg, f64);
    }
  }
}

// Direct::update inline. The operand is copied into the result only when they are different
// memory (a loop's carry is updated in place), by a call that keeps every vector register, so the
// register cache holds on both paths. Then each start index is clamped and scaled into rdi, and
// the update's bytes are stored from rsi + rdi.
void NativeEmitter::UpdateSlice(const UpdateSliceCode& code, uint32_t views, uint16_t n_in,
                                const void* copy_fn,
                                const std::vector<std::pair<uint64_t, uint64_t>>& roots) {
  ForgetKey(roots[0].first);  // the operand's bytes change when the result is its memory
  ForgetKey(roots[n_in].first);
  CopyUnlessInPlace(views, n_in, code.operand_bytes, copy_fn);
  StartOffset(code, views, 2);
  mov(rdx, ptr[rbx + views + kView + kPtr]);
  add(rsi, rdi);
  MoveBytes(rdx, 0, rsi, 0, code.update_bytes, roots[1], nullptr, false);  // a place known only now
}

// rsi = the output (the view after the n_in inputs at `views`), input 0's `bytes` copied into it
// first unless it is input 0's memory, by a call that keeps every vector register.
void NativeEmitter::CopyUnlessInPlace(uint32_t views, uint16_t n_in, uint64_t bytes,
                                      const void* copy_fn) {
  mov(rax, ptr[rbx + views + kPtr]);
  mov(rsi, ptr[rbx + views + n_in * kView + kPtr]);
  Xbyak::Label in_place;
  cmp(rax, rsi);
  je(in_place, T_NEAR);
  constexpr int kSaved = 16 * 32;
  sub(rsp, kSaved);
  for (int i = 0; i < 16; ++i) vmovups(ptr[rsp + i * 32], Xbyak::Ymm(i));
  vzeroupper();
  mov(rdi, rsi);
  mov(rsi, rax);
  mov(rdx, bytes);
  mov(rax, reinterpret_cast<uint64_t>(copy_fn));
  call(rax);
  for (int i = 0; i < 16; ++i) vmovups(Xbyak::Ymm(i), ptr[rsp + i * 32]);
  add(rsp, kSaved);
  mov(rsi, ptr[rbx + views + n_in * kView + kPtr]);
  L(in_place);
}

void NativeEmitter::LoadIndex(ir::DType t) {
  const int bytes = ir::InSet(t, ir::kIntegers) ? ir::DTypeByteSize(t) : 8;
  if (bytes == 1) {
    ir::IsSignedInt(t) ? movsx(r8, byte[rax]) : movzx(r8d, byte[rax]);
  } else if (bytes == 2) {
    ir::IsSignedInt(t) ? movsx(r8, word[rax]) : movzx(r8d, word[rax]);
  } else if (bytes == 4) {
    ir::IsSignedInt(t) ? movsxd(r8, dword[rax]) : mov(r8d, dword[rax]);
  } else {
    mov(r8, qword[rax]);
  }
}

void NativeEmitter::StartOffset(const UpdateSliceCode& code, uint32_t views, uint32_t first) {
  xor_(edi, edi);
  for (size_t i = 0; i < code.start_types.size(); ++i) {
    const int64_t max = code.start_max[i];
    if (max <= 0) continue;  // the update spans this dimension: its start is always 0
    mov(rax, ptr[rbx + views + (first + static_cast<uint32_t>(i)) * kView + kPtr]);
    const ir::DType t = code.start_types[i];
    LoadIndex(t);
    mov(r9, static_cast<uint64_t>(max));
    if (t == ir::DType::kU64) {
      cmp(r8, r9);  // unsigned: a start above INT64_MAX is clamped to the top as well
      cmova(r8, r9);
    } else {
      xor_(r10d, r10d);
      cmp(r8, r10);
      cmovl(r8, r10);
      cmp(r8, r9);
      cmovg(r8, r9);
    }
    const int64_t stride = code.start_stride[i];
    if (stride != 1) {
      mov(r9, static_cast<uint64_t>(stride));
      imul(r8, r9);
    }
    add(rdi, r8);
  }
}

void NativeEmitter::DynamicSlice(const UpdateSliceCode& code, uint32_t views, uint16_t n_in,
                                 uint64_t out_key) {
  ForgetKey(out_key);
  StartOffset(code, views, 1);
  mov(rax, ptr[rbx + views + kPtr]);
  add(rax, rdi);
  mov(rsi, ptr[rbx + views + n_in * kView + kPtr]);
  // The source is a place known only now: plain loads and stores, not through the cache.
  const uint64_t bytes = code.update_bytes;
  for (uint64_t at = 0; at < bytes;) {
    at += PlainStep(rax + static_cast<size_t>(at), rsi + static_cast<size_t>(at), bytes - at);
  }
}

}  // namespace kiln::codegen
