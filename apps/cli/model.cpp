// `roofline model list | show MODEL`: model presets and files.
#include "roofline/model.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "roofline/formats.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

void cmd_model_list(const Common& c) {
  const auto& catalog = ModelCatalog::built_in();
  if (c.output() == Output::kJson) {
    print_json(model_list_document());
    return;
  }
  Table t({"id", "type", "params", "active", "layers", "hidden", "heads/kv", "experts", "weights",
           "aliases"});
  for (const auto& p : catalog.presets()) {
    const ModelSpec m = preset_model(p);
    const ParamCounts pc = count_parameters(m);
    t.add_row({p.id, m.model_type, fmt::format("{:.2f} B", pc.total / 1e9),
               fmt::format("{:.2f} B", pc.active_per_token / 1e9), std::to_string(m.layers),
               std::to_string(m.hidden), fmt::format("{}/{}", m.heads, m.kv_heads),
               m.moe ? fmt::format("{} top-{}", m.moe->num_experts, m.moe->top_k) : "-",
               m.native_experts == m.native_weights
                   ? std::string(format_id(m.native_weights))
                   : fmt::format("{} + {} experts", format_id(m.native_weights),
                                 format_id(m.native_experts)),
               join(p.aliases, " ")});
  }
  std::cout << (c.output() == Output::kCsv ? t.csv() : t.text());
}

void cmd_model_show(const Common& c, const std::string& arg) {
  const ModelSpec m = load_model(arg);
  const nlohmann::json j = model_document(m, ModelCatalog::built_in().find(arg));
  if (c.output() == Output::kJson) {
    print_json(j);
    return;
  }
  const ParamCounts pc = count_parameters(m);
  std::cout << fmt::format("{} ({}), model type {}, from {}\n", m.name, m.id, m.model_type,
                           m.origin);
  std::cout << fmt::format("{} layers, hidden {}, {} heads / {} KV heads of {}, vocab {}, {}\n",
                           m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.vocab,
                           m.attention == AttentionKind::kMla ? "multi-head latent attention"
                                                              : "grouped-query attention");
  if (m.sparse_attention) {
    const auto& x = *m.sparse_attention;
    std::cout << fmt::format(
        "sparse attention (DeepSeek): a lightning indexer of {} heads of {} picks the top {} "
        "cached tokens a query\n",
        x.index_heads, x.index_head_dim, x.top_k);
  }
  if (m.linear_attention) {
    const auto& x = *m.linear_attention;
    std::cout << fmt::format(
        "linear attention (Gated DeltaNet) in {} of {} layers: {} key / {} value heads of {} / {}, "
        "convolution {}, {} state and the convolution's window {} per sequence{}\n",
        m.linear_layer_count(), m.layers, x.key_heads, x.value_heads, x.key_head_dim,
        x.value_head_dim, x.conv_kernel, format_id(x.state_format),
        human_bytes(m.linear_state_bytes()),
        m.attention_output_gate ? "; gated softmax attention in the rest" : "");
  }
  if (m.moe) {
    std::cout << fmt::format(
        "MoE: {} routed experts, top-{}, expert intermediate {}, {} shared, {} of {} layers\n",
        m.moe->num_experts, m.moe->top_k, m.moe->expert_intermediate, m.moe->num_shared_experts,
        m.moe_layer_count(), m.layers);
  } else {
    std::cout << fmt::format("MLP: {} intermediate{}\n", m.intermediate,
                             m.gated_mlp ? ", gated" : "");
  }
  std::cout << fmt::format("parameters: {:.3f} B total, {:.3f} B active per token", pc.total / 1e9,
                           pc.active_per_token / 1e9);
  if (j.contains("published_params") && j["published_params"].get<double>() > 0) {
    std::cout << fmt::format(" (published: {:.3g} B)", j["published_params"].get<double>() / 1e9);
  }
  std::cout << "\n\n";
  Table t({"component", "params", "format", "bytes"});
  for (const auto& [name, comp] : j["components"].items()) {
    if (comp["params"].get<double>() <= 0) continue;
    t.add_row({name, human_count(comp["params"].get<double>()), comp["format"].get<std::string>(),
               human_bytes(comp["bytes"].get<double>())});
  }
  std::cout << t.text();
  if (!m.draft_tokens_per_step.empty()) {
    std::string figures;
    for (std::size_t k = 0; k < m.draft_tokens_per_step.size(); ++k)
      figures += fmt::format("{}{:.3g}", k ? " / " : "", m.draft_tokens_per_step[k]);
    std::cout << fmt::format(
        "\nspeculative decoding with its own MTP head, chained: {} tokens a step at 1 to {} draft "
        "tokens, as measured ({}); predictions take these unless --acceptance is given\n",
        figures, m.draft_tokens_per_step.size(), m.draft_acceptance_source);
  }
  for (const auto& r : m.releases) {
    std::cout << fmt::format("\n{} release {}: predictions with --weights {} follow it ({})\n",
                             format_id(r.format), r.checkpoint, format_id(r.format), r.source)
              << "- " << release_note(r) << "\n";
  }
  if (m.checkpoint) {
    std::cout << fmt::format("\ncheckpoint: {} tensors, {} exact ({} mostly)\n",
                             m.checkpoint->tensors, human_bytes(m.checkpoint->total),
                             m.checkpoint->dominant_type);
  }
  for (const auto& n : m.quantization_notes) std::cout << "- " << n << "\n";
  for (const auto& n : m.notes) std::cout << "- " << n << "\n";
}

}  // namespace

void register_model(CLI::App& app, Common& common) {
  auto* model = app.add_subcommand("model", "Model presets and files");
  model->require_subcommand(1);
  auto* model_list = model->add_subcommand("list", "List the model presets");
  add_common(model_list, &common, true);
  model_list->callback([&common] { cmd_model_list(common); });
  auto* model_show = model->add_subcommand("show", "Architecture, parameters and bytes of a model");
  auto model_arg = std::make_shared<std::string>();
  model_show->add_option("model", *model_arg, "Preset id, config.json, model directory or .gguf")
      ->required();
  add_common(model_show, &common, false);
  model_show->callback([&common, model_arg] { cmd_model_show(common, *model_arg); });
}

}  // namespace roofline::cli
