// select(p, a, b) over 4- and 8-byte elements with AVX2 blends (select_simd_avx2.cc): the
// elementwise select loop (elementwise_map.h: SelectLoop) runs these blocks first, then its own
// loop, which GCC -O2 for baseline x86-64 leaves mostly scalar for 8-byte elements (complex64
// selects, the escape-time loops' `where`). Per element the same choice: y = p != 0 ? a : b.
#pragma once

#include <cstdint>

namespace kiln::kernels::ew {

// y[i] for i in [0, r), r a multiple of 8 (r <= n), where the CPU has AVX2; else 0.
int64_t SelectBlocks(const uint8_t* p, const uint32_t* a, const uint32_t* b, uint32_t* y,
                     int64_t n);
int64_t SelectBlocks(const uint8_t* p, const uint64_t* a, const uint64_t* b, uint64_t* y,
                     int64_t n);

namespace select_simd {
int64_t SelectAvx2(const uint8_t* p, const uint32_t* a, const uint32_t* b, uint32_t* y, int64_t n);
int64_t SelectAvx2(const uint8_t* p, const uint64_t* a, const uint64_t* b, uint64_t* y, int64_t n);
}  // namespace select_simd

}  // namespace kiln::kernels::ew
