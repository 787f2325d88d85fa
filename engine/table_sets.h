// Table sets: resolved flat-program tables a loop keeps per thread and per set of addresses, so a
// loop that runs again with the same operands (a while nested in another loop's body: its
// operands, results and scratch are in the enclosing frame, which does not move) finds all of its
// tables with one lookup instead of building its parameter views and resolving (or looking up)
// each table again.
//
// A TableSets is made once per loop at compile time with the sizes of the tables of a set (a
// while: its condition and body, each for both carry sets). Each thread keeps its own entries,
// owned by the thread (freed when it exits): a key (the addresses the tables were resolved for)
// and the tables' memory, kWays entries per hashed key set, the least recently used replaced. An
// entry is only ever read and changed by its thread, so a lookup takes no lock; an owner destroyed
// and another made at the same address are told apart by a serial. An entry is leased while its
// tables run (they also hold a run's temporaries) and is never replaced then: a loop nested in
// another runs while the outer one's lease is held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "support/function_ref.h"
#include "support/status.h"

namespace kiln::engine {

class TableSets {
 public:
  struct Entry;

  // The tables of one run, held until it ends.
  class Lease {
   public:
    Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    std::byte* const* tables() const;

   private:
    friend class TableSets;
    Entry* entry_ = nullptr;
    std::unique_ptr<Entry> own_;  // when every way of the set was leased: a one-run entry
  };

  // Tables of these sizes (each a 64-byte multiple) per set.
  explicit TableSets(std::vector<size_t> table_bytes);

  // Leases the calling thread's tables for `key` (its first entry should tell apart the memory
  // of different runs, e.g. the loop's scratch; then every address the tables depend on). When
  // they are not resolved for that key yet, `resolve` fills them (64-byte aligned); if it fails,
  // the entry is forgotten and its error returned.
  Status Get(std::span<const void* const> key,
             FunctionRef<Status(std::byte* const* tables)> resolve, Lease* lease) const;

  // Entries per hashed key set: a loop in another loop's body sees two address sets (the outer
  // carries alternate between two buffer sets), so two ways keep both.
  static constexpr size_t kWays = 2, kSets = 64;

 private:
  void Fit(Entry& e) const;  // gives `e` this owner's tables

  std::vector<size_t> table_bytes_;
  size_t total_bytes_ = 0;
  uint64_t serial_ = 0;
};

}  // namespace kiln::engine
