#pragma once
// The points of a sweep: the grid (model and batch x dtype x each axis's values, the last axis
// varying fastest), and the searches that pick from it (docs/sweeps.md, "Search").
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vtpu/sweep/results.h"
#include "vtpu/sweep/spec.h"

namespace vtpu::sweep {

struct Point {
  uint64_t index = 0;          // position in the grid
  size_t model = 0;            // SweepSpec::models
  int64_t batch = 0;           // as the sweep gives it (0: the model's own)
  size_t dtype = 0;            // SweepSpec::dtypes
  std::vector<uint32_t> values;  // per axis, an index into Axis::values
  int round = 0;
};

uint64_t grid_size(const SweepSpec& s);
Point point_at(const SweepSpec& s, uint64_t index);
uint64_t index_of(const SweepSpec& s, const Point& p);

// The config keys a point sets (each axis's value, in axis order; an axis at its base value
// sets nothing).
std::vector<std::pair<std::string, std::string>> point_sets(const SweepSpec& s, const Point& p);
// JSON object axis name -> value label.
std::string point_params(const SweepSpec& s, const Point& p);

// The first round: the whole grid, a seeded random sample, or the base point and each axis
// varied alone (one_at_a_time).
std::vector<Point> initial_points(const SweepSpec& s);
// Pareto refinement: the grid neighbours (one step along one axis) of the current front's
// points, per model, batch and dtype, not yet in `done`; at most search.samples of them.
std::vector<Point> refine(const SweepSpec& s, const std::vector<PointResult>& done, int round);

// Indices of the non-dominated rows of `costs` (every column minimized).
std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& costs);
// The objective vector of a result, each oriented for minimizing.
std::vector<double> objective_costs(const std::vector<std::string>& objectives, const PointResult& r);

}  // namespace vtpu::sweep
