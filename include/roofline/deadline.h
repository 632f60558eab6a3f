// A time limit for work on untrusted input, per thread. The server opens a
// DeadlineScope around each request; the library's loops over input-sized work
// (model parsing, prediction, recommendation, sweeps, quantization) call
// check_deadline(), which throws TimeLimit once the limit has passed. Without
// an open scope check_deadline() does nothing, so the CLI and the Python
// bindings run unlimited.
#pragma once

#include <chrono>
#include <string_view>

namespace roofline {

class DeadlineScope {
 public:
  // Work on this thread past `seconds` from now throws TimeLimit at its next
  // check. Scopes nest; an inner scope never extends an outer one's deadline.
  // REQUIRES: seconds >= 0 (NaN or negative: the deadline has already passed).
  explicit DeadlineScope(double seconds);
  ~DeadlineScope();
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  bool had_previous_ = false;
  std::chrono::steady_clock::time_point previous_;
  double previous_seconds_ = 0;
};

// Throws TimeLimit "the request ran past its N s time limit (during `what`)"
// when this thread's deadline has passed. One clock read.
void check_deadline(std::string_view what);

}  // namespace roofline
