// Scatters of one contiguous window in native loops (NativeEmitter, native_emitter.h): the direct
// form lower::RunDropUpdate (lower/drop_update.h, made by kernels/scatter_one.cc for
// x.at[i].set(v) with a scalar i) as loads and stores, with the scatter's rule for a start out of
// range: the update is dropped, not clamped.
#include <xbyak/xbyak.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "codegen/native_emitter.h"

namespace kiln::codegen {

namespace {

constexpr auto kView = static_cast<uint32_t>(sizeof(runtime::View));
constexpr auto kPtr = static_cast<uint32_t>(offsetof(runtime::View, ptr));

}  // namespace

// The operand is copied into the result unless they are the same memory (a carry updated in
// place), as for dynamic_update_slice. The start is loaded as its type reads (sign- or
// zero-extended to 64 bits) and is in range exactly when it is at most start_max as an unsigned
// number (a negative start is a huge unsigned one; a u64 start past INT64_MAX is out of range
// either way). The update's bytes go to the result + start * stride or, when the start is out of
// range, to a scratch area below the stack pointer that a cmov picks: no branch, so the update's
// elements sit in the same registers of the cache whichever way it goes.
void NativeEmitter::DropUpdate(const lower::DropUpdateCode& code, uint32_t views,
                               const void* copy_fn,
                               const std::vector<std::pair<uint64_t, uint64_t>>& roots) {
  ForgetKey(roots[0].first);  // the operand's bytes change when the result is its memory
  ForgetKey(roots[3].first);
  CopyUnlessInPlace(views, 3, code.operand_bytes, copy_fn);  // rsi: the result
  mov(rax, ptr[rbx + views + kView + kPtr]);
  LoadIndex(code.start_type);
  mov(rdi, r8);
  if (code.stride != 1) {
    mov(r9, code.stride);
    imul(rdi, r9);  // wraps for starts out of range, whose address is never used
  }
  add(rsi, rdi);
  const uint64_t scratch = (code.update_bytes + 31) / 32 * 32;
  sub(rsp, static_cast<uint32_t>(scratch));
  mov(r10, rsp);
  mov(r9, static_cast<uint64_t>(code.start_max));
  cmp(r8, r9);
  cmova(rsi, r10);
  mov(rdx, ptr[rbx + views + 2 * kView + kPtr]);
  MoveBytes(rdx, 0, rsi, 0, code.update_bytes, roots[2], nullptr, false);
  add(rsp, static_cast<uint32_t>(scratch));
}

}  // namespace kiln::codegen
