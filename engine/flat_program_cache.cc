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
  CachedTable* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    CachedTable* oldest = nullptr;
    size_t mine = 0, threads = 0;
    std::vector<std::thread::id> seen;
    for (const std::unique_ptr<CachedTable>& c : cache_) {
      if (matches(*c)) {
        c->used = ++cache_clock_;
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
      entry->used = ++cache_clock_;
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
  }
  return table;
}

}  // namespace kiln::engine
