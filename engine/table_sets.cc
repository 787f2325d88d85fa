// TableSets (table_sets.h): per-thread resolved tables of a loop, one lookup per run.
#include "engine/table_sets.h"

#include <atomic>
#include <cstring>
#include <utility>

namespace kiln::engine {

struct TableSets::Entry {
  uint64_t serial = 0;  // the owner's; 0: empty
  uint64_t used = 0;    // by the thread's clock
  uint32_t leases = 0;
  std::vector<const void*> key;
  std::unique_ptr<std::byte[]> storage;
  size_t capacity = 0;  // bytes of storage past its 64-byte alignment
  std::vector<std::byte*> tables;
};

namespace {

struct ThreadSets {
  uint64_t clock = 0;
  TableSets::Entry sets[TableSets::kSets][TableSets::kWays];
};
thread_local ThreadSets tls_sets;

std::atomic<uint64_t> next_serial{0};

size_t SetOf(uint64_t serial, std::span<const void* const> key) {
  uint64_t h = serial * 0x9E3779B97F4A7C15ull;
  if (!key.empty()) {
    h = (h ^ reinterpret_cast<uintptr_t>(key.front())) * 0x100000001B3ull;
    h = (h ^ reinterpret_cast<uintptr_t>(key[key.size() / 2])) * 0x100000001B3ull;
    h = (h ^ reinterpret_cast<uintptr_t>(key.back())) * 0x100000001B3ull;
  }
  return static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> 58) % TableSets::kSets;
}

bool SameKey(const std::vector<const void*>& a, std::span<const void* const> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), b.size() * sizeof(void*)) == 0;
}

}  // namespace

TableSets::Lease::Lease() = default;

TableSets::Lease::~Lease() {
  if (entry_ != nullptr && own_ == nullptr) --entry_->leases;
}

std::byte* const* TableSets::Lease::tables() const { return entry_->tables.data(); }

TableSets::TableSets(std::vector<size_t> table_bytes)
    : table_bytes_(std::move(table_bytes)), serial_(++next_serial) {
  for (size_t b : table_bytes_) total_bytes_ += b;
}

void TableSets::Fit(Entry& e) const {
  if (e.storage == nullptr || e.capacity < total_bytes_) {
    e.storage = std::make_unique<std::byte[]>(total_bytes_ + 63);
    e.capacity = total_bytes_;
  }
  const auto address = reinterpret_cast<uintptr_t>(e.storage.get());
  std::byte* at = e.storage.get() + ((64 - address % 64) % 64);
  e.tables.clear();
  for (size_t b : table_bytes_) {
    e.tables.push_back(at);
    at += b;
  }
}

Status TableSets::Get(std::span<const void* const> key,
                      FunctionRef<Status(std::byte* const* tables)> resolve, Lease* lease) const {
  ThreadSets& t = tls_sets;
  Entry* ways = t.sets[SetOf(serial_, key)];
  Entry* victim = nullptr;
  for (size_t w = 0; w < kWays; ++w) {
    Entry& e = ways[w];
    if (e.serial == serial_ && e.leases == 0 && SameKey(e.key, key)) {
      e.used = ++t.clock;
      ++e.leases;
      lease->entry_ = &e;
      return Status::Ok();
    }
    if (e.leases == 0 && (victim == nullptr || e.used < victim->used)) victim = &e;
  }
  if (victim == nullptr) {  // every way runs: this run gets tables of its own
    lease->own_ = std::make_unique<Entry>();
    victim = lease->own_.get();
  }
  victim->serial = 0;  // not a match until resolved
  victim->key.clear();
  Fit(*victim);
  KILN_RETURN_IF_ERROR(resolve(victim->tables.data()));
  victim->serial = serial_;
  victim->key.assign(key.begin(), key.end());
  victim->used = ++t.clock;
  if (lease->own_ == nullptr) ++victim->leases;
  lease->entry_ = victim;
  return Status::Ok();
}

}  // namespace kiln::engine
