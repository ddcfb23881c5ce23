#pragma once
// The progress line `vtpu run` keeps on stderr while it compiles and simulates: the phase,
// how far it is of its total, the time so far and an estimate of the time left. Shown only
// when both stdout and stderr are terminals and -q was not given; otherwise silent.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace vtpu::cli {

class Progress {
 public:
  explicit Progress(bool enabled);  // see shown_on_this_terminal()
  ~Progress();                      // clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A new phase ("compile", "simulate", "check"); `total` > 0 gives update()'s scale.
  void phase(const std::string& name, uint64_t total);
  // `done` of the phase's total, and a note ("1.2M cycles") shown beside it.
  void update(uint64_t done, const std::string& note);
  // For a phase without a total: the share done (0 to 1) and a note ("codegen").
  void update_share(double share, const std::string& note);
  void finish();  // clears the line; later calls do nothing

  // Whether a progress line belongs here: not quiet, stdout and stderr both terminals.
  static bool shown_on_this_terminal(bool quiet);

 private:
  void draw();  // with mu_ held
  void tick();  // the thread redrawing the elapsed time of phases without updates

  using Clock = std::chrono::steady_clock;
  bool enabled_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string name_, note_;
  uint64_t total_ = 0, done_ = 0;
  double share_ = -1;  // update_share's, or < 0
  Clock::time_point start_;
  size_t width_ = 0;  // of the line last drawn
  std::thread ticker_;
};

}  // namespace vtpu::cli
