// FlatProgram::ResolveCached: resolved tables kept per thread, so a loop or branch whose operands
// do not move between executions (it runs inside another loop's frame) resolves them once.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/flat_program.h"

namespace kiln::engine {
namespace {

// Per thread: a clock for the recency of its own tables, and hints, each the table a program last
// returned to this thread for some addresses, so a hit needs no lock. An entry is only ever changed
// by its own thread, and lives as long as its program, which the serial identifies (a program
// built later at the same address has another).
struct Hint {
  const void* program = nullptr;
  uint64_t serial = 0;
  void* entry = nullptr;
};
// Two ways per set: a loop's two carry sets may hash alike (the sampled addresses are carries the
// body passes through), and then both stay hinted.
constexpr size_t kHintSets = 128;
thread_local uint64_t tls_clock = 0;
thread_local Hint tls_hints[kHintSets][2];

// From a few addresses only, so a lookup stays cheap for loops of many carries.
size_t HintSet(const void* program, const std::byte* memory, std::span<const runtime::View> params,
               std::span<const runtime::View> results) {
  uint64_t h = reinterpret_cast<uintptr_t>(program) ^ (reinterpret_cast<uintptr_t>(memory) << 1);
  if (!params.empty()) {
    h = (h ^ reinterpret_cast<uintptr_t>(params.front().ptr)) * 0x100000001B3ull;
    h = (h ^ reinterpret_cast<uintptr_t>(params[params.size() / 2].ptr)) * 0x100000001B3ull;
  }
  if (!results.empty())
    h = (h ^ reinterpret_cast<uintptr_t>(results.front().ptr)) * 0x100000001B3ull;
  return static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> 57) % kHintSets;
}

// Makes `entry` this set's first way (the other keeps the previous first).
void Remember(Hint* set, Hint hint) {
  if (set[0].entry != hint.entry) set[1] = set[0];
  set[0] = hint;
}

}  // namespace

StatusOr<std::byte*> FlatProgram::ResolveCached(std::span<const runtime::View> params,
                                                std::span<const runtime::View> results,
                                                std::byte* memory, std::byte* fallback) const {
  const std::thread::id self = std::this_thread::get_id();
  auto matches = [&](const CachedTable& c) {
    if (c.thread != self || c.key.size() != 1 + params.size() + results.size() ||
        c.key[0] != memory) {
      return false;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (c.key[1 + i] != params[i].ptr) return false;
    }
    for (size_t i = 0; i < results.size(); ++i) {
      if (c.key[1 + params.size() + i] != results[i].ptr) return false;
    }
    return true;
  };
  Hint* hints = tls_hints[HintSet(this, memory, params, results)];
  for (int way = 0; way < 2; ++way) {
    if (hints[way].program != this || hints[way].serial != serial_) continue;
    auto* c = static_cast<CachedTable*>(hints[way].entry);
    if (matches(*c)) {
      c->used = ++tls_clock;
      Remember(hints, hints[way]);
      return c->table;
    }
  }
  CachedTable* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    CachedTable* oldest = nullptr;
    size_t mine = 0, threads = 0;
    std::vector<std::thread::id> seen;
    for (const std::unique_ptr<CachedTable>& c : cache_) {
      if (matches(*c)) {
        c->used = ++tls_clock;
        Remember(hints, {this, serial_, c.get()});
        return c->table;
      }
      if (std::find(seen.begin(), seen.end(), c->thread) == seen.end()) {
        seen.push_back(c->thread);
        ++threads;
      }
      if (c->thread != self) continue;
      ++mine;
      if (oldest == nullptr || c->used < oldest->used) oldest = c.get();
    }
    if (mine >= kCachedTables) {
      entry = oldest;  // this thread's least recently used: not one a running loop still reads
    } else if (mine > 0 || threads < kMaxCacheThreads) {
      auto c = std::make_unique<CachedTable>();
      c->thread = self;
      c->storage = std::make_unique<std::byte[]>(table_bytes_ + 63);
      const auto address = reinterpret_cast<uintptr_t>(c->storage.get());
      c->table = c->storage.get() + ((64 - address % 64) % 64);
      entry = c.get();
      cache_.push_back(std::move(c));
    }
    if (entry != nullptr) {
      entry->used = ++tls_clock;
      entry->key.clear();  // not a match until resolved below
    }
  }
  std::byte* table = entry != nullptr ? entry->table : fallback;
  KILN_RETURN_IF_ERROR(Resolve(params, results, memory, table));
  if (entry != nullptr) {
    std::vector<const void*> key;
    key.reserve(1 + params.size() + results.size());
    key.push_back(memory);
    for (const runtime::View& v : params) key.push_back(v.ptr);
    for (const runtime::View& v : results) key.push_back(v.ptr);
    std::lock_guard<std::mutex> lock(cache_mu_);
    entry->key = std::move(key);
    Remember(hints, {this, serial_, entry});
  }
  return table;
}

}  // namespace kiln::engine
