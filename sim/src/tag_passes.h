#pragma once
// Per-tag spans over the passes of a program's loops (Counters::span_cycles). A tag's span is
// counted from its first issue to its last done within each pass and summed over the passes,
// a pass ending at every taken backward branch: a layer that a batch-chunk loop runs once per
// chunk reports the time of its own code, not the whole run from its first pass to its last.
// Without a backward branch there is one pass, and the span is last done - first issue.
#include <cstdint>
#include <vector>

#include "vtpu/sim/stats.h"

namespace vtpu::sim {

class TagPasses {
 public:
  explicit TagPasses(size_t tags = 0) : open_(tags) {}
  void issued(uint16_t tag, uint64_t cycle) {
    Open& o = open_[tag];
    if (o.pass == pass_) return;
    fold(o);
    o.pass = pass_, o.first = cycle, o.last = 0;
  }
  void done(uint16_t tag, uint64_t cycle) {
    Open& o = open_[tag];
    if (o.pass != kNone && cycle > o.last) o.last = cycle;
  }
  void next_pass() { ++pass_; }
  // Every tag's span into its counters (once, at the end of the run).
  void close(std::vector<Counters>& per_tag) {
    for (size_t t = 0; t < open_.size() && t < per_tag.size(); ++t) {
      fold(open_[t]);
      per_tag[t].span_cycles = open_[t].span;
    }
  }

 private:
  static constexpr uint64_t kNone = UINT64_MAX;
  struct Open {
    uint64_t pass = kNone, first = 0, last = 0, span = 0;
  };
  static void fold(Open& o) {
    if (o.pass != kNone && o.last > o.first) o.span += o.last - o.first;
    o.pass = kNone;
  }
  uint64_t pass_ = 0;
  std::vector<Open> open_;
};

}  // namespace vtpu::sim
