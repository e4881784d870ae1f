// A terminal progress bar on stderr: redrawn in place on a terminal, a line
// per tenth of the work when stderr is a file or pipe (logs stay readable).
#ifndef LOCKSTEP_CLI_PROGRESS_H_
#define LOCKSTEP_CLI_PROGRESS_H_

#include <chrono>
#include <string>

namespace lockstep::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, long total);
  // Reports `done` of `total` units, with a short status after the bar.
  void update(long done, const std::string& status = "");
  // Ends the line.
  void finish(const std::string& status = "");

 private:
  std::string label_;
  long total_;
  bool tty_;
  int last_tenth_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_PROGRESS_H_
