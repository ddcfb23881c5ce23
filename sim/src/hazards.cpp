// The hazard checker (docs/microarch.md, "Memory hazards are errors"): the accesses in
// flight to each memory, and an error for one that overlaps another while either writes.
#include <fmt/format.h>

#include <algorithm>

#include "machine.h"

namespace vtpu::sim::detail {

namespace {

const char* space_name(Space s) {
  switch (s) {
    case Space::Ub: return "unified-buffer bytes";
    case Space::Acc: return "accumulator rows";
    case Space::Hbm: return "HBM bytes";
  }
  return "?";
}

}  // namespace

void HazardChecker::retire_before(uint64_t cycle) {
  std::erase_if(live_, [&](const Access& a) { return a.t1 <= cycle; });
}

void HazardChecker::set_end(uint64_t xfer, uint64_t t1) {
  for (Access& a : live_)
    if (a.xfer == xfer) a.t1 = t1;
}

namespace {
// Does any touched range of `x` intersect one of `y`? Both bounding boxes overlap already.
bool overlaps(const Access& x, const Access& y) {
  if (!x.rows && !y.rows) return true;
  const Access& strided = x.rows ? x : y;
  const Access& other = x.rows ? y : x;
  for (auto [b, e] : *strided.rows) {
    if (!other.rows) {
      if (b < other.hi && other.lo < e) return true;
      continue;
    }
    // other's rows are sorted by begin and all no longer than their bytes: look at the
    // candidates that begin before e.
    const auto& o = *other.rows;
    auto it = std::lower_bound(o.begin(), o.end(), std::pair{e, uint64_t(0)});
    uint64_t len = o.front().second - o.front().first;
    while (it != o.begin()) {
      --it;
      if (it->second > b) return true;
      if (it->first + len <= b) break;  // earlier rows end even sooner
    }
  }
  return false;
}
}  // namespace

void HazardChecker::check_and_add(const Access& a, const isa::Program& prog) {
  for (const Access& l : live_) {
    if (l.space != a.space || l.t1 <= a.t0 || a.t1 <= l.t0) continue;
    if (l.hi <= a.lo || a.hi <= l.lo) continue;
    if (!l.write && !a.write) continue;
    if (!overlaps(l, a)) continue;
    if (l.op.bundle == a.op.bundle && l.op.slot == a.op.slot) continue;  // an operation's own operands
    if (a.space == Space::Acc && l.mxu >= 0 && l.mxu == a.mxu) continue;  // in-order array
    uint64_t lo = std::max(l.lo, a.lo), hi = std::min(l.hi, a.hi);
    auto tagname = [&](const Access& x) {
      // Another chip's tags are not this program's.
      uint16_t t = x.op.tag;
      return x.remote_chip < 0 && t < prog.tags.size() && !prog.tags[t].empty() ? " [" + prog.tags[t] + "]" : std::string();
    };
    auto chip = [](const Access& x) { return x.remote_chip < 0 ? std::string() : fmt::format("chip {}'s ", x.remote_chip); };
    auto until = [](uint64_t t1) { return t1 == kUnknown ? std::string("its transfer completes") : fmt::format("cycle {}", t1); };
    auto last = [](uint64_t t1) { return t1 == kUnknown ? std::string("its completion") : std::to_string(t1 - 1); };
    throw SimError(fmt::format(
        "race: {}bundle {} ({}){} {} {} {}..{} during cycles {}..{}, but {}bundle {} ({}){} {} them until "
        "{}. Make bundle {} wait on a flag that bundle {} increments (or move one of them).",
        chip(a), a.op.bundle, a.op.def->mnemonic, tagname(a), a.write ? "writes" : "reads", space_name(a.space),
        lo, hi - 1, a.t0, last(a.t1), chip(l), l.op.bundle, l.op.def->mnemonic, tagname(l),
        l.write ? "writes" : "reads", until(l.t1), a.op.bundle, l.op.bundle));
  }
  live_.push_back(a);
}

}  // namespace vtpu::sim::detail
