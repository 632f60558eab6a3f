// What every kernel table (GEMM, MoE, all-reduce) opens with, read once for
// all three parsers: its schema, the device and engine measured, their
// sources and confidence, and its log2 grid axes.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "strict_json.h"

namespace roofline::detail {

struct KernelTableHeader {
  std::string id;  // "<device>-<engine>"
  std::string device, engine, engine_version, confidence, citation;
  std::map<std::string, std::string> sources;  // every entry of "sources"
};

// Reads schema (must be `schema`), device, engine (both non-empty),
// engine_version, sources, confidence (measured or derived), source (a key of
// sources: its citation) and method. Fails naming the key otherwise.
[[nodiscard]] KernelTableHeader read_kernel_table_header(StrictObject& o, std::string_view schema);

// Copies the header's identity (id, device, engine, version, confidence,
// citation) into a GEMM, MoE or all-reduce table.
template <typename Table>
void set_identity(const KernelTableHeader& h, Table* t) {
  t->id = h.id;
  t->device = h.device;
  t->engine = h.engine;
  t->engine_version = h.engine_version;
  t->confidence = h.confidence;
  t->citation = h.citation;
}

// The citation of `o`'s "source", a key of the header's sources; fails
// naming the key otherwise.
[[nodiscard]] std::string cited_source(StrictObject& o, const KernelTableHeader& h);

// `key`: 2 to 64 consecutive whole numbers from 0 to `largest`; its first
// value and length.
void read_log2_axis(StrictObject& o, std::string_view key, int largest, int* first, int* points);

}  // namespace roofline::detail
