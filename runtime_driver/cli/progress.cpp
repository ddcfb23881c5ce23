// The progress line of `vtpu run` (progress.h).
#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace vtpu::cli {
namespace {

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  return fmt::format("{}:{:02d} min", int(s) / 60, int(s) % 60);
}

}  // namespace

bool Progress::shown_on_this_terminal(bool quiet) { return !quiet && ::isatty(1) && ::isatty(2); }

Progress::Progress(bool enabled) : enabled_(enabled) {
  if (enabled_) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() { finish(); }

void Progress::phase(const std::string& name, uint64_t total) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> l(mu_);
  name_ = name, total_ = total, done_ = 0, share_ = -1, note_.clear();
  start_ = Clock::now();
  draw();
}

void Progress::update(uint64_t done, const std::string& note) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> l(mu_);
  done_ = done, note_ = note;
  draw();
}

void Progress::update_share(double share, const std::string& note) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> l(mu_);
  share_ = std::clamp(share, 0.0, 1.0), note_ = note;
  draw();
}

void Progress::draw() {
  if (name_.empty()) return;
  double t = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string line = fmt::format("  {}: ", name_ == "compile" ? "compiling" : name_ == "simulate" ? "simulating" : name_);
  if (total_) {
    double share = std::min(1.0, double(done_) / double(total_));
    line += fmt::format("bundle {} of {} ({:.0f}%)", done_, total_, 100 * share);
    if (!note_.empty()) line += ", " + note_;
    line += ", " + duration(t);
    line += share > 0 ? ", ETA " + duration(t * (1 - share) / share) : ", ETA -";
  } else if (share_ >= 0) {
    line += fmt::format("{} {:.0f}%, {}", note_, 100 * share_, duration(t));
    line += share_ > 0 ? ", ETA " + duration(t * (1 - share_) / share_) : ", ETA -";
  } else {
    line += duration(t);
  }
  std::string pad(width_ > line.size() ? width_ - line.size() : 0, ' ');
  width_ = line.size();
  std::fputs(("\r" + line + pad).c_str(), stderr);
  std::fflush(stderr);
}

void Progress::tick() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::seconds(1));
    if (!stop_) draw();
  }
}

void Progress::finish() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    if (width_) std::fputs(("\r" + std::string(width_, ' ') + "\r").c_str(), stderr), std::fflush(stderr);
    width_ = 0, name_.clear();
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  enabled_ = false;
}

}  // namespace vtpu::cli
