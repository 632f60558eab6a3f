#include "roofline/deadline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "roofline/error.h"

namespace roofline {
namespace {

struct ThreadDeadline {
  bool active = false;
  std::chrono::steady_clock::time_point at;
  double seconds = 0;  // the limit, for the message
};

thread_local ThreadDeadline current;

}  // namespace

DeadlineScope::DeadlineScope(double seconds) {
  had_previous_ = current.active;
  previous_ = current.at;
  previous_seconds_ = current.seconds;
  const double s = std::isfinite(seconds) ? std::clamp(seconds, 0.0, 1e9) : 0.0;
  const auto at = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(s));
  if (!current.active || at < current.at) {
    current.at = at;
    current.seconds = s;
  }
  current.active = true;
}

DeadlineScope::~DeadlineScope() {
  current.active = had_previous_;
  current.at = previous_;
  current.seconds = previous_seconds_;
}

void check_deadline(std::string_view what) {
  if (!current.active || std::chrono::steady_clock::now() <= current.at) return;
  throw TimeLimit(
      fmt::format("the request ran past its {:g} s time limit (during {})", current.seconds, what));
}

}  // namespace roofline
