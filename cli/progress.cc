#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace lockstep::cli {

ProgressBar::ProgressBar(std::string label, long total)
    : label_(std::move(label)),
      total_(total > 0 ? total : 1),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void ProgressBar::update(long done, const std::string& status) {
  const auto now = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double frac = double(done) / double(total_);
  const double eta = done > 0 ? secs * (1.0 / frac - 1.0) : 0.0;
  if (tty_) {
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) {
      return;
    }
    last_draw_ = now;
    constexpr int kWidth = 30;
    const int fill = int(frac * kWidth);
    std::string bar(size_t(fill), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %3d%% %ld/%ld %.0fs<%.0fs %s\033[K",
                 label_.c_str(), bar.c_str(), int(frac * 100), done, total_,
                 secs, eta, status.c_str());
  } else {
    const int tenth = int(frac * 10);
    if (tenth == last_tenth_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s %3d%% %ld/%ld %.0fs %s\n", label_.c_str(),
                 tenth * 10, done, total_, secs, status.c_str());
  }
  std::fflush(stderr);
}

void ProgressBar::finish(const std::string& status) {
  update(total_, status);
  if (tty_) std::fputc('\n', stderr);
}

}  // namespace lockstep::cli
