// Checkpoint headers: safetensors files and shard indexes, and GGUF files.
// Only headers are read, never tensor data; every length and offset is checked
// against the file size and fixed limits before anything is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "roofline/model.h"

namespace roofline {

struct TensorInfo {
  std::string name;
  std::string dtype;  // "BF16", "F8_E4M3", or the ggml type name ("q4_K")
  std::vector<std::int64_t> shape;
  double bytes = 0;  // exact storage bytes
  // safetensors: where the tensor starts in the data section (after the header).
  std::uint64_t data_begin = 0;
};

// Limits that keep hostile headers from allocating without bound.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ULL << 20;
inline constexpr std::uint64_t kMaxGgufTensors = 1'000'000;
inline constexpr std::uint64_t kMaxGgufMetadata = 1'000'000;
inline constexpr std::uint64_t kMaxGgufStringBytes = 16ULL << 20;
inline constexpr std::uint64_t kMaxGgufHeaderBytes = 256ULL << 20;

// Reads a .safetensors header. Throws ParseError naming the file and the
// problem (truncated, header length past the end, offsets outside the data,
// sizes that disagree with dtype and shape, tensors whose bytes overlap: the
// format forbids it, and an analysis would read the same bytes many times).
[[nodiscard]] std::vector<TensorInfo> read_safetensors_header(const std::string& path);

// Reads a model.safetensors.index.json and the headers of its shards (which
// must sit beside it).
[[nodiscard]] std::vector<TensorInfo> read_safetensors_index(const std::string& path);

// Sums tensor bytes by component from Hugging Face or GGUF tensor names.
[[nodiscard]] CheckpointBytes classify_tensors(const std::vector<TensorInfo>& tensors,
                                               const std::string& path);

// A model directory: config.json plus safetensors (single file or index).
// Uses the exact tensor bytes when the weights are there.
[[nodiscard]] ModelSpec load_model_directory(const std::string& dir);

// A GGUF file: metadata -> ModelSpec, tensor types -> exact bytes.
[[nodiscard]] ModelSpec load_gguf(const std::string& path);

// GGUF parsing from memory (for tests and fuzzing); `origin` names it in errors.
[[nodiscard]] ModelSpec parse_gguf(std::string_view bytes, const std::string& origin);
// The first bytes of a GGUF file of `file_size` bytes (tensor extents are
// checked against file_size).
[[nodiscard]] ModelSpec parse_gguf_prefix(std::string_view prefix, std::uint64_t file_size,
                                          const std::string& origin);
// safetensors header parsing from memory; `file_size` bounds the offsets.
[[nodiscard]] std::vector<TensorInfo> parse_safetensors(std::string_view bytes,
                                                        const std::string& origin);

}  // namespace roofline
