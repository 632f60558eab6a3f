#pragma once

namespace roofline::cli {

// Exit codes: 0 success, 2 bad input (usage, unknown id, invalid file), 1 internal error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

// Runs the CLI; prints results to stdout and one "error: ..." line to stderr on failure.
int run(int argc, char** argv);

}  // namespace roofline::cli
