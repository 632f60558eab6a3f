// Checkpoint headers: tiny safetensors and GGUF files built here, then
// truncated, corrupted and hostile variants.
#include "roofline/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "roofline/error.h"
#include "roofline/predict.h"

namespace roofline {
namespace {

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
std::string le32(std::uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

// A safetensors file: header JSON, then zero-filled data of the right size.
std::string safetensors(const nlohmann::json& header, std::uint64_t data_bytes) {
  const std::string h = header.dump();
  return le64(h.size()) + h + std::string(data_bytes, '\0');
}

// Tensors of a 2-layer Llama-style model with hidden 64, 4 heads / 2 KV heads
// (head_dim 16), intermediate 128, vocab 256, in BF16.
struct TinyModel {
  nlohmann::json config = nlohmann::json::parse(R"({"model_type": "llama", "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "intermediate_size": 128, "vocab_size": 256, "torch_dtype": "bfloat16"})");
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;

  void tensor(const std::string& name, std::vector<std::uint64_t> shape) {
    std::uint64_t n = 1;
    for (auto d : shape) n *= d;
    header[name] = {
        {"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {offset, offset + 2 * n}}};
    offset += 2 * n;
  }
  TinyModel() {
    tensor("model.embed_tokens.weight", {256, 64});
    for (int l = 0; l < 2; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      tensor(p + "self_attn.q_proj.weight", {64, 64});
      tensor(p + "self_attn.k_proj.weight", {32, 64});
      tensor(p + "self_attn.v_proj.weight", {32, 64});
      tensor(p + "self_attn.o_proj.weight", {64, 64});
      tensor(p + "mlp.gate_proj.weight", {128, 64});
      tensor(p + "mlp.up_proj.weight", {128, 64});
      tensor(p + "mlp.down_proj.weight", {64, 128});
      tensor(p + "input_layernorm.weight", {64});
      tensor(p + "post_attention_layernorm.weight", {64});
    }
    tensor("model.norm.weight", {64});
    tensor("lm_head.weight", {256, 64});
  }
  std::string file() const { return safetensors(header, offset); }
};

class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("rl-ckpt-" + std::to_string(::getpid()) + "-" + std::to_string(n_++))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path_ / name, std::ios::binary) << bytes;
    return (path_ / name).string();
  }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
  static inline int n_ = 0;
};

TEST(Safetensors, HeaderGivesExactBytesByComponent) {
  TinyModel t;
  const auto tensors = parse_safetensors(t.file(), "tiny.safetensors");
  ASSERT_EQ(tensors.size(), 2u + 2 * 9 + 1);
  const CheckpointBytes c = classify_tensors(tensors, "tiny");
  // embedding 256 x 64 x 2 B = 32,768; lm_head the same;
  // attention per layer (64*64*2 + 32*64*2) x 2 B = 24,576; MLP 3 x 128 x 64 x 2 = 49,152;
  // norms (2 x 64 per layer + 64) x 2 B = 640.
  EXPECT_DOUBLE_EQ(c.embedding, 32'768);
  EXPECT_DOUBLE_EQ(c.lm_head, 32'768);
  EXPECT_DOUBLE_EQ(c.attention, 2 * 24'576);
  EXPECT_DOUBLE_EQ(c.dense_mlp, 2 * 49'152);
  EXPECT_DOUBLE_EQ(c.norms, 640);
  EXPECT_DOUBLE_EQ(c.other, 0);
  EXPECT_DOUBLE_EQ(c.total, static_cast<double>(t.offset));
  EXPECT_EQ(c.dominant_type, "BF16");
}

// Linear-attention (Gated DeltaNet) and sparse-attention indexer tensors are
// attention, as count_parameters counts them; their norms are norms.
TEST(Safetensors, HybridAndIndexerTensorsAreAttention) {
  const auto tensor = [](const char* name, double bytes) {
    TensorInfo t;
    t.name = name;
    t.dtype = "BF16";
    t.bytes = bytes;
    return t;
  };
  const CheckpointBytes c =
      classify_tensors({tensor("model.layers.0.linear_attn.in_proj_qkvz.weight", 100),
                        tensor("model.layers.0.linear_attn.conv1d.weight", 10),
                        tensor("model.layers.0.linear_attn.A_log", 1),
                        tensor("model.layers.0.linear_attn.out_proj.weight", 50),
                        tensor("model.layers.0.linear_attn.norm.weight", 2),
                        tensor("model.layers.1.self_attn.indexer.wq_b.weight", 20),
                        tensor("model.layers.1.self_attn.indexer.k_norm.weight", 3)},
                       "hybrid");
  EXPECT_DOUBLE_EQ(c.attention, 100 + 10 + 1 + 50 + 20);
  EXPECT_DOUBLE_EQ(c.norms, 2 + 3);
  EXPECT_DOUBLE_EQ(c.other, 0);
}

TEST(Safetensors, ModelDirectoryUsesExactBytes) {
  TempDir dir;
  TinyModel t;
  dir.write("config.json", t.config.dump());
  dir.write("model.safetensors", t.file());
  const ModelSpec m = load_model(dir.str());
  ASSERT_TRUE(m.checkpoint.has_value());
  EXPECT_DOUBLE_EQ(m.checkpoint->total, static_cast<double>(t.offset));
  // Parameters from the config agree with the tensors: bytes / 2.
  EXPECT_DOUBLE_EQ(count_parameters(m).total * 2, static_cast<double>(t.offset));
  const Registry reg = Registry::built_in();
  Scenario s;
  EXPECT_DOUBLE_EQ(estimate_memory(m, reg.get("h100"), s).weights_bytes,
                   static_cast<double>(t.offset));
}

TEST(Safetensors, ShardedIndexReadsEveryShard) {
  TempDir dir;
  TinyModel a, b;
  nlohmann::json ha = nlohmann::json::object(), hb = nlohmann::json::object();
  nlohmann::json map = nlohmann::json::object();
  std::uint64_t oa = 0, ob = 0;
  int i = 0;
  for (const auto& [name, info] : a.header.items()) {
    const std::uint64_t n =
        info["data_offsets"][1].get<std::uint64_t>() - info["data_offsets"][0].get<std::uint64_t>();
    auto& h = (i % 2) ? hb : ha;
    auto& o = (i % 2) ? ob : oa;
    h[name] = {{"dtype", "BF16"}, {"shape", info["shape"]}, {"data_offsets", {o, o + n}}};
    o += n;
    map[name] = (i++ % 2) ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  dir.write("model-00001-of-00002.safetensors", safetensors(ha, oa));
  dir.write("model-00002-of-00002.safetensors", safetensors(hb, ob));
  dir.write("model.safetensors.index.json",
            nlohmann::json{{"metadata", {{"total_size", oa + ob}}}, {"weight_map", map}}.dump());
  dir.write("config.json", a.config.dump());
  const ModelSpec m = load_model(dir.str());
  ASSERT_TRUE(m.checkpoint.has_value());
  EXPECT_DOUBLE_EQ(m.checkpoint->total, static_cast<double>(oa + ob));
  EXPECT_EQ(m.checkpoint->tensors, 21);
}

TEST(Safetensors, HostileHeadersAreRejected) {
  TinyModel t;
  const std::string good = t.file();
  // A header length of 2^62.
  std::string huge = good;
  huge.replace(0, 8, le64(1ULL << 62));
  EXPECT_THROW((void)parse_safetensors(huge, "x"), ParseError);
  // A header length past the end of the file.
  std::string past = good;
  past.replace(0, 8, le64(good.size()));
  EXPECT_THROW((void)parse_safetensors(past, "x"), ParseError);
  // Truncated: fewer than 8 bytes; data cut short so offsets fall outside.
  EXPECT_THROW((void)parse_safetensors("abc", "x"), ParseError);
  EXPECT_THROW((void)parse_safetensors(good.substr(0, good.size() - 10), "x"), ParseError);
  // Offsets that disagree with the dtype and shape.
  TinyModel bad;
  bad.header["lm_head.weight"]["data_offsets"][1] =
      bad.header["lm_head.weight"]["data_offsets"][0].get<std::uint64_t>() + 3;
  EXPECT_THROW((void)parse_safetensors(bad.file(), "x"), ParseError);
  // Unknown dtype, negative shapes, deep nesting.
  TinyModel dtype;
  dtype.header["lm_head.weight"]["dtype"] = "Q9";
  EXPECT_THROW((void)parse_safetensors(dtype.file(), "x"), ParseError);
  TinyModel neg;
  neg.header["lm_head.weight"]["shape"] = {-1, 64};
  EXPECT_THROW((void)parse_safetensors(neg.file(), "x"), ParseError);
  const std::string nested(100'000, '[');
  EXPECT_THROW((void)parse_safetensors(le64(nested.size()) + nested, "x"), ParseError);
}

TEST(Safetensors, ShardNamesMayNotEscapeTheDirectory) {
  TempDir dir;
  const std::string index =
      dir.write("model.safetensors.index.json", R"({"weight_map": {"a": "../../etc/passwd"}})");
  EXPECT_THROW((void)read_safetensors_index(index), ParseError);
}

// ---------------------------------------------------------------- GGUF

struct Gguf {
  std::string kv;
  std::uint64_t n_kv = 0;
  std::string infos;
  std::uint64_t n_tensors = 0;
  std::uint64_t data = 0;

  static std::string str(const std::string& s) { return le64(s.size()) + s; }
  void u32(const std::string& key, std::uint32_t v) {
    kv += str(key) + le32(4) + le32(v);
    ++n_kv;
  }
  void text(const std::string& key, const std::string& v) {
    kv += str(key) + le32(8) + str(v);
    ++n_kv;
  }
  // An array of numbers: ggml type 4 (u32) or 7 (bool, one byte each).
  void array(const std::string& key, std::uint32_t type, const std::vector<std::uint32_t>& v) {
    kv += str(key) + le32(9) + le32(type) + le64(v.size());
    for (auto x : v) kv += type == 7 ? std::string(1, static_cast<char>(x != 0)) : le32(x);
    ++n_kv;
  }
  // ggml type ids: 0 F32, 1 F16, 8 q8_0, 12 q4_K, 14 q6_K.
  void tensor(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t type,
              std::uint64_t bytes) {
    infos += str(name) + le32(static_cast<std::uint32_t>(dims.size()));
    for (auto d : dims) infos += le64(d);
    infos += le32(type) + le64(data);
    data += (bytes + 31) / 32 * 32;
    ++n_tensors;
  }
  std::string file() const {
    std::string head = "GGUF" + le32(3) + le64(n_tensors) + le64(n_kv) + kv + infos;
    head.resize((head.size() + 31) / 32 * 32, '\0');
    return head + std::string(data, '\0');
  }
};

// The tiny model in llama.cpp types: q4_K for 2-D weights (144 B per 256),
// q6_K for the output (210 B per 256), F32 norms.
Gguf tiny_gguf() {
  Gguf g;
  g.text("general.architecture", "llama");
  g.text("general.name", "tiny");
  g.u32("llama.embedding_length", 256);
  g.u32("llama.block_count", 2);
  g.u32("llama.feed_forward_length", 512);
  g.u32("llama.attention.head_count", 4);
  g.u32("llama.attention.head_count_kv", 2);
  g.u32("llama.context_length", 4096);
  g.u32("llama.vocab_size", 1024);
  g.tensor("token_embd.weight", {256, 1024}, 12, 256 * 1024 / 256 * 144);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    g.tensor(p + "attn_q.weight", {256, 256}, 12, 256 * 144);
    g.tensor(p + "attn_k.weight", {256, 128}, 12, 128 * 144);
    g.tensor(p + "attn_v.weight", {256, 128}, 14, 128 * 210);
    g.tensor(p + "attn_output.weight", {256, 256}, 12, 256 * 144);
    g.tensor(p + "ffn_gate.weight", {256, 512}, 12, 512 * 144);
    g.tensor(p + "ffn_up.weight", {256, 512}, 12, 512 * 144);
    g.tensor(p + "ffn_down.weight", {512, 256}, 14, 512 * 210);
    g.tensor(p + "attn_norm.weight", {256}, 0, 1024);
    g.tensor(p + "ffn_norm.weight", {256}, 0, 1024);
  }
  g.tensor("output_norm.weight", {256}, 0, 1024);
  g.tensor("output.weight", {256, 1024}, 14, 1024 * 210);
  return g;
}

TEST(Gguf, MetadataBecomesAModelAndTypesExactBytes) {
  const ModelSpec m = parse_gguf(tiny_gguf().file(), "tiny.gguf");
  EXPECT_EQ(m.hidden, 256);
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.heads, 4);
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.head_dim, 64);
  EXPECT_EQ(m.vocab, 1024);
  EXPECT_FALSE(m.tie_embeddings);
  ASSERT_TRUE(m.checkpoint.has_value());
  // attention per layer: q 256*144 + k 128*144 + v 128*210 + o 256*144 = 119,040
  EXPECT_DOUBLE_EQ(m.checkpoint->attention, 2 * 119'040.0);
  // MLP per layer: gate, up 512*144 each + down 512*210 = 254,976
  EXPECT_DOUBLE_EQ(m.checkpoint->dense_mlp, 2 * 254'976.0);
  EXPECT_DOUBLE_EQ(m.checkpoint->lm_head, 1024 * 210.0);
  EXPECT_DOUBLE_EQ(m.checkpoint->embedding, 1024 * 144.0);
  EXPECT_EQ(m.checkpoint->dominant_type, "q4_K");
  EXPECT_EQ(m.native_weights, Format::kQ4_K_M);
}

TEST(Gguf, FileOnDiskLoads) {
  TempDir dir;
  const std::string path = dir.write("tiny.gguf", tiny_gguf().file());
  const ModelSpec m = load_model(path);
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.layers, 2);
}

TEST(Gguf, HostileFilesAreRejected) {
  const std::string good = tiny_gguf().file();
  EXPECT_THROW((void)parse_gguf("", "x"), ParseError);
  EXPECT_THROW((void)parse_gguf("GGML" + good.substr(4), "x"), ParseError);
  // Every truncation is an error, never a crash.
  for (std::size_t cut = 0; cut < good.size(); cut += 97) {
    EXPECT_ANY_THROW((void)parse_gguf(good.substr(0, cut), "x")) << cut;
  }
  // A tensor count of 2^62 and a string length of 2^62.
  std::string many = good;
  many.replace(8, 8, le64(1ULL << 62));
  EXPECT_THROW((void)parse_gguf(many, "x"), ParseError);
  std::string longstr = good;
  longstr.replace(24, 8, le64(1ULL << 62));
  EXPECT_THROW((void)parse_gguf(longstr, "x"), ParseError);
  // An unknown ggml type and an unknown architecture.
  Gguf g = tiny_gguf();
  g.tensor("blk.0.extra.weight", {256}, 99, 0);
  EXPECT_THROW((void)parse_gguf(g.file(), "x"), ParseError);
  Gguf arch;
  arch.text("general.architecture", "mamba");
  EXPECT_THROW((void)parse_gguf(arch.file(), "x"), Unsupported);
}

// A Qwen3.5 MoE file as llama.cpp writes it (arch qwen35moe): the delta rule's
// sizes under llama.cpp's SSM keys, a per-layer KV-head array (0 in the linear
// layers), and one multi-token-prediction block counted in block_count.
Gguf tiny_qwen35moe() {
  Gguf g;
  g.text("general.architecture", "qwen35moe");
  g.u32("qwen35moe.embedding_length", 256);
  g.u32("qwen35moe.block_count", 5);  // 4 layers and the MTP block
  g.u32("qwen35moe.nextn_predict_layers", 1);
  g.u32("qwen35moe.attention.head_count", 4);
  g.array("qwen35moe.attention.head_count_kv", 4, {0, 0, 0, 2, 2});
  g.u32("qwen35moe.attention.key_length", 64);
  g.u32("qwen35moe.attention.value_length", 64);
  g.u32("qwen35moe.rope.dimension_count", 16);
  g.u32("qwen35moe.context_length", 4096);
  g.u32("qwen35moe.vocab_size", 1024);
  g.u32("qwen35moe.expert_count", 8);
  g.u32("qwen35moe.expert_used_count", 2);
  g.u32("qwen35moe.expert_feed_forward_length", 64);
  g.u32("qwen35moe.expert_shared_feed_forward_length", 64);
  g.u32("qwen35moe.ssm.conv_kernel", 4);
  g.u32("qwen35moe.ssm.group_count", 2);     // key heads
  g.u32("qwen35moe.ssm.time_step_rank", 4);  // value heads
  g.u32("qwen35moe.ssm.state_size", 32);     // a key head's width
  g.u32("qwen35moe.ssm.inner_size", 4 * 32);
  g.u32("qwen35moe.full_attention_interval", 4);
  g.tensor("token_embd.weight", {256, 1024}, 8, 256 * 1024 / 32 * 34);
  g.tensor("blk.0.ssm_out.weight", {128, 256}, 8, 128 * 256 / 32 * 34);
  g.tensor("output.weight", {256, 1024}, 8, 256 * 1024 / 32 * 34);
  return g;
}

TEST(Gguf, GatedDeltaNetHybridsAreRead) {
  const ModelSpec m = parse_gguf(tiny_qwen35moe().file(), "q.gguf");
  EXPECT_EQ(m.layers, 4);  // block_count less the MTP block
  EXPECT_EQ(m.heads, 4);
  EXPECT_EQ(m.kv_heads, 2);  // the softmax layers' count of the per-layer array
  EXPECT_EQ(m.head_dim, 64);
  ASSERT_TRUE(m.linear_attention.has_value());
  EXPECT_EQ(m.linear_attention->key_heads, 2);
  EXPECT_EQ(m.linear_attention->value_heads, 4);
  EXPECT_EQ(m.linear_attention->key_head_dim, 32);
  EXPECT_EQ(m.linear_attention->value_head_dim, 32);  // inner_size / time_step_rank
  EXPECT_EQ(m.linear_attention->conv_kernel, 4);
  // Every 4th layer is full attention: layers 0-2 linear, 3 softmax.
  EXPECT_EQ(m.linear_layers, (std::vector<std::uint8_t>{1, 1, 1, 0}));
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 8);
  EXPECT_EQ(m.moe->top_k, 2);
  EXPECT_EQ(m.moe->shared_intermediate, 64);

  // A per-layer list of linear layers wins over the interval.
  Gguf listed = tiny_qwen35moe();
  listed.array("qwen35moe.attention.recurrent_layers", 7, {1, 0, 1, 0, 0});
  EXPECT_EQ(parse_gguf(listed.file(), "q.gguf").linear_layers,
            (std::vector<std::uint8_t>{1, 0, 1, 0}));

  // Sizes that cannot be: value heads that do not divide the inner width,
  // a missing SSM key, an MTP count not below the block count.
  Gguf odd = tiny_qwen35moe();
  odd.u32("qwen35moe.ssm.inner_size", 130);  // a later key replaces the first
  EXPECT_THROW((void)parse_gguf(odd.file(), "q.gguf"), ParseError);
  Gguf lacking;
  lacking.text("general.architecture", "qwen3next");
  lacking.u32("qwen3next.embedding_length", 256);
  lacking.u32("qwen3next.block_count", 4);
  lacking.u32("qwen3next.attention.head_count", 4);
  lacking.u32("qwen3next.vocab_size", 1024);
  lacking.u32("qwen3next.feed_forward_length", 512);
  EXPECT_THROW((void)parse_gguf(lacking.file(), "q.gguf"), ParseError);
  Gguf all_draft = tiny_qwen35moe();
  all_draft.u32("qwen35moe.nextn_predict_layers", 5);
  EXPECT_THROW((void)parse_gguf(all_draft.file(), "q.gguf"), ParseError);
}

// Issue #10, item 4: tensors may not share bytes (safetensors forbids it; 40
// tensors over the same bytes made an upload's analysis 7 times longer).
TEST(Safetensors, OverlappingTensorsAreRefused) {
  nlohmann::json h;
  h["a"] = {{"dtype", "F16"}, {"shape", {4, 4}}, {"data_offsets", {0, 32}}};
  h["b"] = {{"dtype", "F16"}, {"shape", {4, 4}}, {"data_offsets", {16, 48}}};
  try {
    (void)parse_safetensors(safetensors(h, 48), "x.safetensors");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  h["b"]["data_offsets"] = {32, 64};  // adjacent is fine, and so are empty tensors
  h["c"] = {{"dtype", "F16"}, {"shape", {0}}, {"data_offsets", {32, 32}}};
  const auto tensors = parse_safetensors(safetensors(h, 64), "x.safetensors");
  ASSERT_EQ(tensors.size(), 3u);
}

}  // namespace
}  // namespace roofline
