#pragma once
// Internal: turns action counts into picojoules with the config's energy table
// (docs/energy.md), for the whole run and for every tag.
#include "vtpu/config/config.h"
#include "vtpu/sim/stats.h"

namespace vtpu::sim::detail {

void compute_energy(const config::Config& cfg, Stats& stats);

}  // namespace vtpu::sim::detail
