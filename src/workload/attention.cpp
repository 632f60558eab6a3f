#include "roofline/attention.h"

#include <algorithm>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "roofline/error.h"

namespace roofline {
namespace {

using detail::StrictObject;

Figure read_kernel_figure(StrictObject& parent, std::string_view key,
                          const std::map<std::string, std::string>& sources) {
  StrictObject obj = parent.object(key);
  Figure f;
  const auto& v = obj.required("value");
  const std::string conf = obj.string("confidence");
  if (conf == "measured")
    f.confidence = Confidence::kMeasured;
  else if (conf == "derived")
    f.confidence = Confidence::kDerived;
  else if (conf == "vendor")
    f.confidence = Confidence::kVendor;
  else if (conf == "unknown")
    f.confidence = Confidence::kUnknown;
  else
    obj.fail("confidence", "must be vendor, derived, measured or unknown");
  if (v.is_null()) {
    f.value = std::nan("");
  } else {
    f.value = obj.non_negative("value");
    if (f.value <= 0 || f.value > 1) obj.fail("value", "an efficiency must be in (0, 1]");
  }
  f.source = obj.string("source");
  if (!sources.count(f.source))
    obj.fail("source", "'" + f.source + "' is not a key of \"sources\"");
  f.note = obj.optional_string("note", "");
  obj.finish();
  return f;
}

std::vector<AttentionKernelInfo> load_kernels() {
  const std::string origin = "built-in kernels/attention.json";
  std::string_view text;
  for (const auto& f : detail::embedded_files()) {
    if (f.name == "kernels/attention.json") text = f.text;
  }
  const auto doc_json = detail::parse_json_text(text, origin, 1 << 20);
  StrictObject doc(doc_json, origin, "");
  std::map<std::string, std::string> sources = detail::read_sources(doc);
  std::vector<AttentionKernelInfo> kernels;
  const auto& list = doc.required("kernels");
  static const char* kOrder[] = {"naive", "fa1", "fa2", "fa3", "fa4", "flash-decoding"};
  if (!list.is_array() || list.size() != kAttentionKernelCount) {
    doc.fail("kernels", "expected the six kernels naive, fa1, fa2, fa3, fa4, flash-decoding");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject k(list[i], origin, "kernels[" + std::to_string(i) + "]");
    AttentionKernelInfo info;
    info.kernel = static_cast<AttentionKernel>(i);
    info.id = k.string("id");
    if (info.id != kOrder[i]) k.fail("id", std::string("expected '") + kOrder[i] + "' here");
    info.name = k.string("name");
    for (const auto& a : k.required("architectures")) {
      info.architectures.push_back(a.get<std::string>());
      info.architecture_keys.push_back(architecture_key(info.architectures.back()));
    }
    const std::string loop = k.string("loop");
    info.loop = loop == "unfused"    ? AttentionLoop::kUnfused
                : loop == "kv_outer" ? AttentionLoop::kKvOuter
                                     : AttentionLoop::kQOuter;
    if (loop != "unfused" && loop != "kv_outer" && loop != "q_outer")
      k.fail("loop", "unknown loop order");
    info.split_kv = k.required("split_kv").get<bool>();
    info.fp8 = k.required("fp8").get<bool>();
    info.efficiency = read_kernel_figure(k, "efficiency", sources);
    if (k.has("architecture_efficiency")) {
      StrictObject overrides = k.object("architecture_efficiency");
      for (auto it = overrides.json().begin(); it != overrides.json().end(); ++it) {
        info.architecture_efficiency.emplace_back(it.key(),
                                                  read_kernel_figure(overrides, it.key(), sources));
      }
      overrides.finish();
    }
    const std::string source = k.string("source");
    if (!sources.count(source)) k.fail("source", "unknown source key");
    info.citation = sources[source];
    k.finish();
    kernels.push_back(std::move(info));
  }
  doc.finish();
  return kernels;
}

}  // namespace

bool AttentionKernelInfo::runs_on(const Device& device) const {
  const std::uint64_t key = device.architecture_key != 0 ? device.architecture_key
                                                         : architecture_key(device.architecture);
  return std::find(architecture_keys.begin(), architecture_keys.end(), key) !=
         architecture_keys.end();
}

const Figure& AttentionKernelInfo::efficiency_on(const Device& device) const {
  if (architecture_efficiency.empty()) return efficiency;
  for (const auto& [arch, fig] : architecture_efficiency) {
    if (arch == device.architecture) return fig;
  }
  return efficiency;
}

const std::vector<AttentionKernelInfo>& attention_kernels() {
  static const std::vector<AttentionKernelInfo> kernels = load_kernels();
  return kernels;
}

const AttentionKernelInfo& attention_kernel_info(AttentionKernel k) {
  return attention_kernels()[static_cast<std::size_t>(k)];
}

std::string_view attention_kernel_id(AttentionKernel k) { return attention_kernel_info(k).id; }

AttentionKernel parse_attention_kernel(std::string_view id) {
  std::string ids;
  for (const auto& k : attention_kernels()) {
    if (k.id == id) return k.kernel;
    ids += (ids.empty() ? "" : ", ") + k.id;
  }
  throw NotFound("unknown attention kernel '" + clip_utf8(id, 40) + "' (known: " + ids + ")");
}

AttentionKernel default_attention_kernel(const Device& device, bool decode) {
  const AttentionKernel order[] = {AttentionKernel::kFa4, AttentionKernel::kFa3,
                                   AttentionKernel::kFa2, AttentionKernel::kNaive};
  if (decode && attention_kernel_info(AttentionKernel::kFlashDecoding).runs_on(device)) {
    return AttentionKernel::kFlashDecoding;
  }
  for (AttentionKernel k : order) {
    if (attention_kernel_info(k).runs_on(device)) return k;
  }
  return AttentionKernel::kNaive;
}

void check_kernel_supported(AttentionKernel k, const Device& device) {
  const auto& info = attention_kernel_info(k);
  if (info.runs_on(device)) return;
  std::string archs;
  for (const auto& a : info.architectures) archs += (archs.empty() ? "" : ", ") + a;
  throw Unsupported(info.id + " does not run on " + device.id + " (" + device.architecture +
                    "); it needs: " + archs);
}

}  // namespace roofline
