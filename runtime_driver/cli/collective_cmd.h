#pragma once
// `vtpu collective KIND --bytes SIZE -c CONFIG`: a collective simulated on a multi-chip
// config, its time and bus bandwidth beside the alpha-beta model (docs/collectives.md).
#include <CLI/CLI.hpp>

#include <functional>

namespace vtpu::cli {

// Adds the subcommand to `app`; `run` is set to what to do when it was given (returns the
// exit code; throws like the other commands).
CLI::App* add_collective_command(CLI::App& app, std::function<int()>& run);

}  // namespace vtpu::cli
