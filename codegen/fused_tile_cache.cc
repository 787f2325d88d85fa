// The process's generated fused runs, by what their code depends on (fused_tile_cache.h).
#include "codegen/fused_tile_cache.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kiln::codegen {

using lower::FusedPlan;
using lower::MapCode;
using Ref = FusedPlan::Ref;
using Member = FusedPlan::Member;

namespace {

// Identical runs get the same code: a model's layers repeat the same fused runs (a 24-layer
// transformer's gradient has 434 native runs, 18 different), and generating one costs about 12 us
// (an mmap, the emission, an mprotect). TileKey is everything TileEmitter reads from the plan:
// every member's code, references and flags (Plan() also looks at the members outside [begin,
// end)), the number of inputs and their widths, the temporaries' widths, the row reduction's
// input, the range and the register width. Not the functions' states (the code does not read
// them) nor the element count beyond the kMinElements check. The static_asserts stop a new plan
// field from going unnoticed: whoever adds one decides whether the code depends on it, and adds
// it to the key if it does.
static_assert(sizeof(FusedPlan::Member) == 88, "a FusedPlan::Member field: update TileKey");
static_assert(sizeof(FusedPlan::Ref) == 16, "a FusedPlan::Ref field: update TileKey");
static_assert(sizeof(MapCode) == 16, "a MapCode field: update TileKey");
static_assert(sizeof(FusedPlan) == 328, "a FusedPlan field: update TileKey");
static_assert(sizeof(FusedPlan::Splat) == 16, "a FusedPlan::Splat field: update TileKey");

void AppendKey(std::string& key, int64_t v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void AppendRef(std::string& key, const Ref& r) {
  AppendKey(key, r.kind);
  AppendKey(key, r.index);
  AppendKey(key, r.scalar);
  AppendKey(key, r.width);
}

}  // namespace

std::string TileKey(const FusedPlan& plan, size_t begin, size_t end, bool f64, bool avx512) {
  std::string key;
  key.reserve(64 * (plan.members.size() + 2));
  AppendKey(key, static_cast<int64_t>(begin));
  AppendKey(key, static_cast<int64_t>(end));
  AppendKey(key, f64);
  AppendKey(key, avx512);
  AppendKey(key, static_cast<int64_t>(plan.members.size()));
  for (const Member& m : plan.members) {
    AppendKey(key, m.absolute);
    AppendKey(key, m.row_value);
    AppendKey(key, static_cast<int64_t>(m.code.op));
    AppendKey(key, static_cast<int64_t>(m.code.in));
    AppendKey(key, static_cast<int64_t>(m.code.out));
    AppendKey(key, static_cast<int64_t>(reinterpret_cast<uintptr_t>(m.code.fn)));
    AppendRef(key, m.out);
    AppendKey(key, static_cast<int64_t>(m.in.size()));
    for (const Ref& r : m.in) AppendRef(key, r);
  }
  // The code reads the inputs' count; whether one is a single element (a member's Ref says how
  // it is read) is in the key too, its element count otherwise is not: lengths come at run time.
  AppendKey(key, static_cast<int64_t>(plan.input_elements.size()));
  for (int64_t v : plan.input_elements) AppendKey(key, v == 1);
  for (const auto* list : {&plan.input_widths, &plan.temp_widths}) {
    AppendKey(key, static_cast<int64_t>(list->size()));
    for (int v : *list) AppendKey(key, v);
  }
  // Splat constants are read as scalars, and divided by as known numbers.
  AppendKey(key, static_cast<int64_t>(plan.input_splat.size()));
  for (const FusedPlan::Splat& c : plan.input_splat) {
    AppendKey(key, c.known);
    AppendKey(key, static_cast<int64_t>(c.bits));
  }
  AppendKey(key, plan.rows.fn != nullptr);
  AppendRef(key, plan.rows.x);
  return key;
}

namespace {

// The process's generated runs by key, held weakly: code lives as long as a program uses it.
class TileCache {
 public:
  std::shared_ptr<const lower::NativeTile> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tiles_.find(key);
    return it == tiles_.end() ? nullptr : it->second.lock();
  }
  void Add(const std::string& key, const std::shared_ptr<const lower::NativeTile>& tile) {
    std::lock_guard<std::mutex> lock(mu_);
    if (tiles_.size() >= prune_at_) {  // drop the expired entries now and then
      std::erase_if(tiles_, [](const auto& entry) { return entry.second.expired(); });
      prune_at_ = std::max<size_t>(1024, 2 * tiles_.size());
    }
    tiles_[key] = tile;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::weak_ptr<const lower::NativeTile>> tiles_;
  size_t prune_at_ = 1024;
};

TileCache& Tiles() {
  static TileCache* cache = new TileCache();  // never destroyed: programs may outlive statics
  return *cache;
}

}  // namespace

std::shared_ptr<const lower::NativeTile> FindTile(const std::string& key) {
  return Tiles().Find(key);
}

void AddTile(const std::string& key, const std::shared_ptr<const lower::NativeTile>& tile) {
  Tiles().Add(key, tile);
}

}  // namespace kiln::codegen
