#pragma once
// `vtpu sweep`: design-space sweeps (docs/sweeps.md). main.cpp only registers it.
#include <CLI/CLI.hpp>

#include <functional>

namespace vtpu::cli {

struct SweepCommand {
  CLI::App* command = nullptr;  // parsed when *command is true
  std::function<int()> run;     // runs the parsed subcommand; throws UserError on bad input
};

SweepCommand add_sweep_command(CLI::App& app);

}  // namespace vtpu::cli
