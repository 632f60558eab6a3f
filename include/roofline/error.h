// Typed errors thrown by the library. The library never prints or exits:
// front ends map these to exit codes (CLI) or HTTP statuses (server).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace roofline {

// Base of every error the library throws on bad input or missing data.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // Short machine-readable category, e.g. "invalid_argument".
  [[nodiscard]] virtual const char* code() const noexcept = 0;
};

// A value is malformed or out of range (negative size, NaN, unknown option).
class InvalidArgument : public Error {
 public:
  using Error::Error;
  [[nodiscard]] const char* code() const noexcept override { return "invalid_argument"; }
};

// An id (device, format, model) is not known.
class NotFound : public Error {
 public:
  using Error::Error;
  [[nodiscard]] const char* code() const noexcept override { return "not_found"; }
};

// The request is well-formed but the device or data cannot do it.
class Unsupported : public Error {
 public:
  using Error::Error;
  [[nodiscard]] const char* code() const noexcept override { return "unsupported"; }
};

// A file or document could not be read or does not follow its schema.
class ParseError : public Error {
 public:
  using Error::Error;
  [[nodiscard]] const char* code() const noexcept override { return "parse_error"; }
};

// A request ran past the time it is allowed (the server's per-request limit).
class TimeLimit : public Error {
 public:
  using Error::Error;
  [[nodiscard]] const char* code() const noexcept override { return "time_limit"; }
};

// At most `max_bytes` of `text`, cut on a UTF-8 character boundary. Messages quote
// user input through this: a cut inside a multi-byte character would make the
// message invalid UTF-8, which JSON encoders refuse.
[[nodiscard]] inline std::string clip_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return std::string(text.substr(0, n));
}

}  // namespace roofline
