// Grid indexing, the searches, and the Pareto front against its definition.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "vtpu/sweep/points.h"

namespace vtpu::sweep {
namespace {

SweepSpec spec(const std::string& search) {
  return parse_sweep("base: tiny-16x16\nmodels: [lenet5, {name: mlp0, batches: [1, 4]}]\ndtypes: [int8, bf16]\naxes:\n"
                     "  - key: clock_mhz\n    values: [500, 1000, 2000]\n"
                     "  - key: memory.bandwidth_gbytes_per_s\n    values: [8, 16, 32, 64]\n" + search,
                     "t.yaml", ".");
}

TEST(SweepPoints, GridIndexRoundTripsAndCoversEveryCombination) {
  SweepSpec s = spec("");
  ASSERT_EQ(grid_size(s), 3u * 2 * 3 * 4);  // (lenet5, mlp0 b1, mlp0 b4) x dtypes x 3 x 4
  std::set<std::tuple<size_t, int64_t, size_t, uint32_t, uint32_t>> seen;
  for (uint64_t i = 0; i < grid_size(s); ++i) {
    Point p = point_at(s, i);
    EXPECT_EQ(index_of(s, p), i);
    seen.insert({p.model, p.batch, p.dtype, p.values[0], p.values[1]});
  }
  EXPECT_EQ(seen.size(), grid_size(s));
  Point last = point_at(s, grid_size(s) - 1);
  EXPECT_EQ(last.model, 1u);
  EXPECT_EQ(last.batch, 4);
  EXPECT_EQ(last.values, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(point_params(s, last), R"({"clock_mhz":"2000","memory.bandwidth_gbytes_per_s":"64"})");
}

TEST(SweepPoints, RandomSampleIsDistinctSeededAndSized) {
  SweepSpec s = spec("search: {kind: random, samples: 20, seed: 7}\n");
  std::vector<Point> a = initial_points(s), b = initial_points(s);
  ASSERT_EQ(a.size(), 20u);
  std::set<uint64_t> idx;
  for (size_t i = 0; i < a.size(); ++i) {
    idx.insert(a[i].index);
    EXPECT_EQ(a[i].index, b[i].index);
  }
  EXPECT_EQ(idx.size(), 20u);
  s.search.seed = 8;
  std::vector<Point> c = initial_points(s);
  bool differs = false;
  for (size_t i = 0; i < c.size(); ++i) differs |= c[i].index != a[i].index;
  EXPECT_TRUE(differs);
  s.search.samples = 1000;  // more than the grid: the whole grid
  EXPECT_EQ(initial_points(s).size(), grid_size(s));
}

TEST(SweepPoints, OneAtATimeVariesEachAxisAloneFromTheBase) {
  SweepSpec s = parse_sweep("base: tiny-16x16\nmodels: [lenet5]\naxes:\n"
                            "  - key: clock_mhz\n    scale: [0.5, 1, 2]\n"
                            "  - key: memory.bandwidth_gbytes_per_s\n    scale: [0.25, 1, 4]\n"
                            "search: {kind: one_at_a_time}\n",
                            "t.yaml", ".");
  std::vector<Point> pts = initial_points(s);
  ASSERT_EQ(pts.size(), 5u);  // base + 2 + 2
  EXPECT_EQ(pts[0].values, (std::vector<uint32_t>{1, 1}));
  for (const Point& p : pts) EXPECT_TRUE(p.values[0] == 1 || p.values[1] == 1);
}

// The front by its definition: not dominated by any other row.
bool dominated(const std::vector<std::vector<double>>& c, size_t i) {
  for (size_t j = 0; j < c.size(); ++j) {
    if (j == i) continue;
    bool le = true, lt = false;
    for (size_t k = 0; k < c[i].size(); ++k) le &= c[j][k] <= c[i][k], lt |= c[j][k] < c[i][k];
    if (le && lt) return true;
  }
  return false;
}

TEST(SweepPoints, ParetoFrontIsExactlyTheNonDominatedRows) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(0, 20);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::vector<double>> c(60);
    for (auto& row : c) row = {double(u(rng)), double(u(rng)), double(u(rng))};
    std::vector<size_t> f = pareto_front(c);
    std::set<std::vector<double>> front_rows;
    for (size_t i : f) {
      EXPECT_FALSE(dominated(c, i));
      EXPECT_TRUE(front_rows.insert(c[i]).second) << "equal rows appear once";
    }
    for (size_t i = 0; i < c.size(); ++i)
      if (!dominated(c, i)) EXPECT_TRUE(front_rows.count(c[i])) << "non-dominated row " << i << " missing";
  }
}

TEST(SweepPoints, RefinementVisitsTheFrontsNeighbours) {
  SweepSpec s = spec("search: {kind: pareto, samples: 50, objectives: [latency_s, energy_per_inference_j]}\n");
  // One finished point per group, so each is its group's front: its neighbours come next.
  Point p = point_at(s, 0);
  p.values = {1, 1};
  PointResult r;
  r.index = int64_t(index_of(s, p));
  r.model = "lenet5", r.dtype = "int8", r.status = "ok", r.latency_s = 1, r.energy_per_inference_j = 1;
  std::vector<Point> next = refine(s, {r}, 1);
  std::set<std::vector<uint32_t>> got;
  for (const Point& q : next) {
    got.insert(q.values);
    EXPECT_EQ(q.round, 1);
  }
  EXPECT_EQ(got, (std::set<std::vector<uint32_t>>{{0, 1}, {2, 1}, {1, 0}, {1, 2}}));
  r.feasible = false;  // infeasible points are not refined around
  EXPECT_TRUE(refine(s, {r}, 1).empty());
}

}  // namespace
}  // namespace vtpu::sweep
