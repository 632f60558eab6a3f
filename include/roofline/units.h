// Unit aliases. Every API value is SI; the alias (or the name suffix) says which unit.
#pragma once

#include <cstdint>

namespace roofline {

using Seconds = double;         // s
using Bytes = double;           // bytes (fractional for sub-byte formats)
using Flops = double;           // floating-point (or integer) operations, 2 per multiply-add
using FlopsPerSecond = double;  // FLOP/s
using BytesPerSecond = double;  // bytes/s
using FlopsPerByte = double;    // arithmetic intensity

}  // namespace roofline
