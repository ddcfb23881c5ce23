// Chips, links and routes of the torus against the rules of docs/microarch.md ("Chips and
// links"), worked out by hand for small shapes.
#include <gtest/gtest.h>

#include "vtpu/config/config.h"
#include "vtpu/config/topology.h"

namespace vtpu::config {
namespace {

Config system_of(std::vector<uint32_t> shape, bool wrap = true, std::vector<uint32_t> twist = {}) {
  Config c = load_preset("tiny-8x8");
  uint32_t n = 1;
  for (uint32_t d : shape) n *= d;
  const uint32_t links = config::links_needed(shape);
  c.system.chips = n;
  c.ici.shape = std::move(shape);
  c.ici.wraparound = wrap;
  c.ici.twist = std::move(twist);
  c.ici.links = links;
  return c;
}

// The (from, to) pairs of a route.
std::vector<std::pair<uint32_t, uint32_t>> path(const Topology& t, uint32_t a, uint32_t b) {
  std::vector<std::pair<uint32_t, uint32_t>> p;
  for (const auto& h : t.route(a, b)) p.emplace_back(h.from, h.to);
  return p;
}

using P = std::vector<std::pair<uint32_t, uint32_t>>;

TEST(Topology, ChipIdsPutDimensionZeroFastest) {
  Topology t(system_of({4, 3, 2}));
  EXPECT_EQ(t.coords(0), (std::vector<uint32_t>{0, 0, 0}));
  EXPECT_EQ(t.coords(5), (std::vector<uint32_t>{1, 1, 0}));
  EXPECT_EQ(t.coords(23), (std::vector<uint32_t>{3, 2, 1}));
  for (uint32_t c = 0; c < t.chips(); ++c) EXPECT_EQ(t.chip_at(t.coords(c)), c);
  EXPECT_EQ(t.name(5), "chip 5 (1,1,0)");
}

TEST(Topology, RingRoutesGoTheShorterWayWithTiesToPlus) {
  Topology t(system_of({5}));
  EXPECT_EQ(path(t, 0, 2), (P{{0, 1}, {1, 2}}));
  EXPECT_EQ(path(t, 0, 3), (P{{0, 4}, {4, 3}}));  // 2 hops down instead of 3 up
  EXPECT_EQ(t.route(0, 4)[0].wraps, true);
  Topology e(system_of({6}));
  EXPECT_EQ(path(e, 1, 4), (P{{1, 2}, {2, 3}, {3, 4}}));  // 3 either way: +1
  EXPECT_EQ(e.diameter(), 3u);
}

TEST(Topology, ADimensionOfTwoHasOneLinkPerChip) {
  Topology t(system_of({2, 3}));
  // Ports +x and -x of chip 0 reach chip 1 over the same link.
  EXPECT_EQ(t.neighbour(0, Topology::port(0, +1)), std::optional<uint32_t>(1));
  EXPECT_EQ(t.neighbour(0, Topology::port(0, -1)), std::optional<uint32_t>(1));
  EXPECT_EQ(t.link_index(0, 0, +1), t.link_index(0, 0, -1));
  EXPECT_EQ(t.links_in_dim(0), 1u);
  EXPECT_EQ(t.links_in_dim(1), 2u);
  // 6 chips x (1 link in x + 2 in y).
  EXPECT_EQ(t.links().size(), 18u);
}

TEST(Topology, MeshRoutesNeverWrapAndEdgesHaveFewerLinks) {
  Topology t(system_of({4, 4}, false));
  EXPECT_EQ(path(t, 0, 3), (P{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_FALSE(t.neighbour(0, Topology::port(0, -1)).has_value());
  EXPECT_FALSE(t.neighbour(3, Topology::port(0, +1)).has_value());
  // 2 x 3 links per row or column direction, 4 rows and 4 columns, both directions.
  EXPECT_EQ(t.links().size(), 2u * 2 * 4 * 3);
  EXPECT_EQ(t.diameter(), 6u);
  EXPECT_EQ(t.links_in_dim(0), 1u);
}

TEST(Topology, RoutesAreDimensionOrdered) {
  Topology t(system_of({4, 4, 4}));
  // From (0,0,0) to (1,3,2): +x once, -y once, then +z twice (2 = tie, +).
  EXPECT_EQ(path(t, 0, t.chip_at({1, 3, 2})),
            (P{{0, 1}, {1, t.chip_at({1, 3, 0})}, {t.chip_at({1, 3, 0}), t.chip_at({1, 3, 1})},
               {t.chip_at({1, 3, 1}), t.chip_at({1, 3, 2})}}));
  EXPECT_EQ(t.diameter(), 6u);
  EXPECT_EQ(t.links().size(), 64u * 6);
}

TEST(Topology, TwistedWrapShiftsTheLastDimension) {
  // 4 x 8 with twist [4, 0]: wrapping around x moves 4 chips along y.
  Topology t(system_of({4, 8}, true, {4, 0}));
  uint32_t from = t.chip_at({3, 0});
  EXPECT_EQ(t.neighbour(from, Topology::port(0, +1)), std::optional<uint32_t>(t.chip_at({0, 4})));
  EXPECT_EQ(t.neighbour(t.chip_at({0, 4}), Topology::port(0, -1)), std::optional<uint32_t>(from));
  // (3,0) -> (0,4): one +x hop that wraps lands there.
  EXPECT_EQ(path(t, from, t.chip_at({0, 4})), (P{{from, t.chip_at({0, 4})}}));
  // Without the twist the same pair is 1 + 4 hops apart.
  Topology plain(system_of({4, 8}));
  EXPECT_EQ(plain.hops(plain.chip_at({3, 0}), plain.chip_at({0, 4})), 5u);
}

}  // namespace
}  // namespace vtpu::config
