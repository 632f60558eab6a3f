// `roofline engines [show ID]`: the serving engines the predictions can take.
#pragma once

#include <string>

namespace roofline::cli {

// Lists the engines (empty id) or shows one with every figure and its source.
void engines_command(const std::string& id, bool json);

}  // namespace roofline::cli
