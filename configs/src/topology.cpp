// Coordinates, links and dimension-ordered routes of the chip torus (docs/microarch.md,
// "Chips and links").
#include "vtpu/config/topology.h"

#include <fmt/format.h>

#include <algorithm>

#include "vtpu/support/error.h"

namespace vtpu::config {

uint32_t links_needed(const std::vector<uint32_t>& shape) {
  uint32_t links = 0;
  for (uint32_t d : shape) links += d >= 3 ? 2 : d == 2 ? 1 : 0;
  return links;
}

Topology::Topology(const Config& cfg)
    : chips_(cfg.system.chips), shape_(cfg.ici.shape), twist_(cfg.ici.twist), wrap_(cfg.ici.wraparound) {
  uint64_t product = 1;
  for (uint32_t n : shape_) product *= n;
  if (product != chips_ || shape_.empty())
    throw InternalError(fmt::format("topology: ici.shape does not cover system.chips = {}", chips_));
  link_of_.assign(size_t(chips_) * dims() * 2, -1);
  for (uint32_t c = 0; c < chips_; ++c) {
    std::vector<uint32_t> x = coords(c);
    for (unsigned d = 0; d < dims(); ++d) {
      uint32_t n = shape_[d];
      if (n < 2) continue;
      bool plus = wrap_ || x[d] + 1 < n;
      bool minus = n == 2 ? !wrap_ && x[d] == 1 : wrap_ || x[d] > 0;
      for (int dir : {+1, -1}) {
        if (!(dir > 0 ? plus : minus)) continue;
        link_of_[(size_t(c) * dims() + d) * 2 + (dir < 0)] = int(links_.size());
        links_.push_back(step(c, d, dir));
      }
    }
  }
}

std::vector<uint32_t> Topology::coords(uint32_t chip) const {
  std::vector<uint32_t> x(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) x[d] = chip % shape_[d], chip /= shape_[d];
  return x;
}

uint32_t Topology::chip_at(const std::vector<uint32_t>& x) const {
  uint32_t c = 0;
  for (size_t d = shape_.size(); d-- > 0;) c = c * shape_[d] + x[d];
  return c;
}

std::string Topology::name(uint32_t chip) const {
  return fmt::format("chip {} ({})", chip, fmt::join(coords(chip), ","));
}

Topology::Hop Topology::step(uint32_t from, unsigned dim, int dir) const {
  std::vector<uint32_t> x = coords(from);
  uint32_t n = shape_[dim];
  bool wraps = dir > 0 ? x[dim] + 1 == n : x[dim] == 0;
  x[dim] = dir > 0 ? (x[dim] + 1) % n : (x[dim] + n - 1) % n;
  if (wraps && !twist_.empty() && twist_[dim]) {
    uint32_t last = shape_.back(), t = twist_[dim] % last;
    uint32_t& z = x.back();
    z = dir > 0 ? (z + t) % last : (z + last - t) % last;
  }
  return {from, chip_at(x), dim, dir, wraps};
}

int Topology::link_index(uint32_t from, unsigned dim, int dir) const {
  if (from >= chips_ || dim >= dims()) return -1;
  if (shape_[dim] == 2 && wrap_) dir = +1;  // one link joins the pair
  return link_of_[(size_t(from) * dims() + dim) * 2 + (dir < 0)];
}

std::optional<uint32_t> Topology::neighbour(uint32_t chip, unsigned port) const {
  unsigned dim = port / 2;
  int i = link_index(chip, dim, port % 2 ? -1 : +1);
  if (i < 0) return std::nullopt;
  return links_[size_t(i)].to;
}

std::vector<Topology::Hop> Topology::route(uint32_t src, uint32_t dst) const {
  std::vector<Hop> hops;
  std::vector<uint32_t> target = coords(dst);
  uint32_t at = src;
  for (unsigned d = 0; d < dims(); ++d) {
    uint32_t n = shape_[d];
    while (true) {
      uint32_t a = coords(at)[d], b = target[d];
      if (a == b) break;
      int dir;
      if (wrap_) {
        uint32_t fwd = (b + n - a) % n;
        dir = fwd <= n - fwd ? +1 : -1;
      } else {
        dir = b > a ? +1 : -1;
      }
      int li = link_index(at, d, dir);
      if (li < 0) throw InternalError(fmt::format("topology: no link from {} in dimension {}", name(at), d));
      hops.push_back(links_[size_t(li)]);
      at = hops.back().to;
      if (hops.size() > size_t(chips_) * dims()) throw InternalError("topology: route does not converge");
    }
  }
  return hops;
}

uint32_t Topology::hops(uint32_t src, uint32_t dst) const { return uint32_t(route(src, dst).size()); }

uint32_t Topology::eccentricity(uint32_t chip) const {
  uint32_t e = 0;
  for (uint32_t c = 0; c < chips_; ++c) e = std::max(e, hops(chip, c));
  return e;
}

uint32_t Topology::diameter() const {
  // Without a twist every chip sees the same distances (a torus is symmetric, a mesh is
  // widest from its corner, chip 0); with one, ask every chip.
  if (twist_.empty()) return eccentricity(0);
  uint32_t e = 0;
  for (uint32_t c = 0; c < chips_; ++c) e = std::max(e, eccentricity(c));
  return e;
}

unsigned Topology::links_in_dim(unsigned dim) const {
  uint32_t n = shape_[dim];
  if (n < 2) return 0;
  return wrap_ && n >= 3 ? 2 : 1;
}

}  // namespace vtpu::config
