// Grid indexing and the searches over it.
#include "vtpu/sweep/points.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace vtpu::sweep {
namespace {

// (model, batch) pairs, the grid's outermost coordinate.
std::vector<std::pair<size_t, int64_t>> runs(const SweepSpec& s) {
  std::vector<std::pair<size_t, int64_t>> r;
  for (size_t m = 0; m < s.models.size(); ++m)
    for (int64_t b : s.models[m].batches) r.push_back({m, b});
  return r;
}

}  // namespace

uint64_t grid_size(const SweepSpec& s) {
  uint64_t n = runs(s).size() * s.dtypes.size();
  for (const Axis& a : s.axes) n *= a.values.size();
  return n;
}

Point point_at(const SweepSpec& s, uint64_t index) {
  Point p;
  p.index = index;
  p.values.resize(s.axes.size());
  for (size_t i = s.axes.size(); i-- > 0;) {
    p.values[i] = uint32_t(index % s.axes[i].values.size());
    index /= s.axes[i].values.size();
  }
  p.dtype = size_t(index % s.dtypes.size());
  index /= s.dtypes.size();
  auto r = runs(s).at(size_t(index));
  p.model = r.first, p.batch = r.second;
  return p;
}

uint64_t index_of(const SweepSpec& s, const Point& p) {
  auto rs = runs(s);
  uint64_t run = uint64_t(std::find(rs.begin(), rs.end(), std::pair{p.model, p.batch}) - rs.begin());
  uint64_t i = run * s.dtypes.size() + p.dtype;
  for (size_t a = 0; a < s.axes.size(); ++a) i = i * s.axes[a].values.size() + p.values[a];
  return i;
}

std::vector<std::pair<std::string, std::string>> point_sets(const SweepSpec& s, const Point& p) {
  // An axis at the value that leaves the base config as it is sets nothing: the same config,
  // and under one_at_a_time, where axes may share keys, it does not undo the axis that moves.
  std::vector<std::pair<std::string, std::string>> sets;
  for (size_t a = 0; a < s.axes.size(); ++a)
    if (int(p.values[a]) != s.axes[a].base_index)
      for (const auto& kv : s.axes[a].values[p.values[a]].sets) sets.push_back(kv);
  return sets;
}

std::string point_params(const SweepSpec& s, const Point& p) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t a = 0; a < s.axes.size(); ++a) j[s.axes[a].name] = s.axes[a].values[p.values[a]].label;
  return j.dump();
}

std::vector<Point> initial_points(const SweepSpec& s) {
  uint64_t n = grid_size(s);
  std::vector<Point> out;
  switch (s.search.kind) {
    case SearchKind::kGrid:
      for (uint64_t i = 0; i < n; ++i) out.push_back(point_at(s, i));
      break;
    case SearchKind::kRandom:
    case SearchKind::kPareto: {
      // Floyd's algorithm: `samples` distinct indices without listing the grid.
      uint64_t k = std::min(n, s.search.samples);
      std::mt19937_64 rng(s.search.seed);
      std::set<uint64_t> picked;
      for (uint64_t j = n - k; j < n; ++j) {
        uint64_t t = std::uniform_int_distribution<uint64_t>(0, j)(rng);
        picked.insert(picked.count(t) ? j : t);
      }
      for (uint64_t i : picked) out.push_back(point_at(s, i));
      break;
    }
    case SearchKind::kOneAtATime: {
      // Per model, batch and dtype: the base point, then each axis through its other values.
      std::set<uint64_t> seen;
      uint64_t cells = 1;  // axis combinations per model, batch and dtype
      for (const Axis& a : s.axes) cells *= a.values.size();
      for (uint64_t r = 0; r < n; r += cells) {
        Point base = point_at(s, r);
        for (size_t a = 0; a < s.axes.size(); ++a) base.values[a] = uint32_t(s.axes[a].base_index);
        base.index = index_of(s, base);
        if (seen.insert(base.index).second) out.push_back(base);
        for (size_t a = 0; a < s.axes.size(); ++a)
          for (uint32_t v = 0; v < s.axes[a].values.size(); ++v) {
            Point q = base;
            q.values[a] = v;
            q.index = index_of(s, q);
            if (seen.insert(q.index).second) out.push_back(q);
          }
      }
      break;
    }
  }
  return out;
}

std::vector<double> objective_costs(const std::vector<std::string>& objectives, const PointResult& r) {
  std::vector<double> c;
  for (const std::string& o : objectives) {
    const MetricInfo* m = find_metric(o);
    double v = m->get(r);
    c.push_back(m->higher_is_better ? -v : v);
  }
  return c;
}

std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& costs) {
  std::vector<size_t> front;
  for (size_t i = 0; i < costs.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < costs.size() && !dominated; ++j) {
      if (i == j) continue;
      bool no_worse = true, better = false;
      for (size_t k = 0; k < costs[i].size(); ++k) {
        no_worse &= costs[j][k] <= costs[i][k];
        better |= costs[j][k] < costs[i][k];
      }
      // Equal rows: the first one stands for both.
      dominated = no_worse && (better || j < i);
    }
    if (!dominated) front.push_back(i);
  }
  return front;
}

std::vector<Point> refine(const SweepSpec& s, const std::vector<PointResult>& done, int round) {
  std::set<uint64_t> have;
  std::map<std::string, std::vector<const PointResult*>> groups;  // per model, batch, dtype
  for (const PointResult& r : done) {
    have.insert(uint64_t(r.index));
    if (r.status == "ok" && r.feasible) groups[r.model + "|" + std::to_string(point_at(s, uint64_t(r.index)).batch) + "|" + r.dtype].push_back(&r);
  }
  std::vector<Point> out;
  std::set<uint64_t> added;
  for (const auto& [g, rows] : groups) {
    std::vector<std::vector<double>> costs;
    for (const PointResult* r : rows) costs.push_back(objective_costs(s.search.objectives, *r));
    for (size_t f : pareto_front(costs)) {
      Point p = point_at(s, uint64_t(rows[f]->index));
      for (size_t a = 0; a < s.axes.size(); ++a)
        for (int step : {-1, 1}) {
          int64_t v = int64_t(p.values[a]) + step;
          if (v < 0 || v >= int64_t(s.axes[a].values.size())) continue;
          Point q = p;
          q.values[a] = uint32_t(v);
          q.index = index_of(s, q);
          q.round = round;
          if (!have.count(q.index) && added.insert(q.index).second && out.size() < s.search.samples) out.push_back(q);
        }
    }
  }
  return out;
}

}  // namespace vtpu::sweep
