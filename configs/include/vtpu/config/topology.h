#pragma once
// The chips of a config and the ICI links between them: coordinates, neighbours and the
// dimension-ordered routes of docs/microarch.md ("Chips and links"). Derived once from
// system.chips and ici.*; the simulator, the collectives and reports all ask this class.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vtpu/config/config.h"

namespace vtpu::config {

// ICI links each chip of a torus of `shape` needs (the ici.links check of the loader): 2 per
// dimension of 3 or more (both ring neighbours), 1 per dimension of 2, none for 1.
uint32_t links_needed(const std::vector<uint32_t>& shape);

class Topology {
 public:
  explicit Topology(const Config& cfg);

  uint32_t chips() const { return chips_; }
  unsigned dims() const { return unsigned(shape_.size()); }
  const std::vector<uint32_t>& shape() const { return shape_; }
  bool wraparound() const { return wrap_; }
  bool twisted() const { return !twist_.empty(); }

  // Chip id c = x0 + n0 * (x1 + n1 * (x2 + ...)): dimension 0 varies fastest.
  std::vector<uint32_t> coords(uint32_t chip) const;
  uint32_t chip_at(const std::vector<uint32_t>& coords) const;
  std::string name(uint32_t chip) const;  // "chip 5 (1,1,0)"

  // A port is one direction of one dimension: port 2d goes towards +1 in dimension d, port
  // 2d+1 towards -1 (the `link` operand of dma.send). In a dimension of 2 both ports reach
  // the same neighbour over the same link; a dimension of 1 and the ends of a mesh have none.
  static unsigned port(unsigned dim, int dir) { return 2 * dim + (dir < 0 ? 1 : 0); }
  std::optional<uint32_t> neighbour(uint32_t chip, unsigned port) const;

  // One directed link (a channel): from a chip towards +1 or -1 of a dimension. A dimension
  // of 2 has one link per chip, named with dir = +1.
  struct Hop {
    uint32_t from, to;
    unsigned dim;
    int dir;     // +1 or -1
    bool wraps;  // crosses the wraparound link (the dateline of docs/microarch.md)
  };
  // Dimension by dimension, lowest first; in each, the shorter way round (ties: +1).
  std::vector<Hop> route(uint32_t src, uint32_t dst) const;
  uint32_t hops(uint32_t src, uint32_t dst) const;
  uint32_t diameter() const;
  // Largest hop count from `chip` to any chip.
  uint32_t eccentricity(uint32_t chip) const;

  // Every directed link, in a fixed order: chip-major, then dimension, then +1 before -1.
  const std::vector<Hop>& links() const { return links_; }
  // Index into links() of the link leaving `from` along (dim, dir); -1 when there is none.
  int link_index(uint32_t from, unsigned dim, int dir) const;

  // Distinct outgoing links of a chip in dimension d (2 in a torus ring of 3 or more, else 1;
  // 0 for a dimension of 1). A ring collective in d can use this many links at once.
  unsigned links_in_dim(unsigned dim) const;

 private:
  Hop step(uint32_t from, unsigned dim, int dir) const;  // assumes the link exists

  uint32_t chips_;
  std::vector<uint32_t> shape_, twist_;
  bool wrap_;
  std::vector<Hop> links_;
  std::vector<int> link_of_;  // (chip * dims + dim) * 2 + (dir < 0) -> index or -1
};

}  // namespace vtpu::config
