// The engines' track records (roofline/track_record.h): the scopes a
// prediction's record widens through, its statistics, the strict snapshot
// file, and the records the documents carry.
#include "roofline/track_record.h"

#include <gtest/gtest.h>

#include <string>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/model.h"
#include "roofline/report.h"
#include "roofline/search.h"

namespace roofline {
namespace {

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

TrackRecordCase make_case(std::string id, std::string engine, std::string hardware,
                          std::string metric, double error_pct) {
  const Device& d = registry().get(hardware);
  return {std::move(id),     std::move(engine), std::move(hardware), d.vendor, d.architecture,
          std::move(metric), error_pct};
}

// vLLM: three generation cases on the H200, two on the H100 SXM (both
// Hopper), four on the MI300X, one prompt case on the H200; SGLang: one.
TrackRecordSnapshot sample() {
  TrackRecordSnapshot s;
  s.published_cases = 12;  // two of them not predicted
  s.cases = {make_case("A1", "vllm", "h200", "decode_tokens_per_s", 10),
             make_case("A2", "vllm", "h200", "serving_tpot_s", -20),
             make_case("A3", "vllm", "h200", "e2e_s", 30),
             make_case("A4", "vllm", "h100-sxm", "output_tokens_per_s", 40),
             make_case("A5", "vllm", "h100-sxm", "serving_itl_p50_s", -50),
             make_case("A6", "vllm", "mi300x", "e2e_s", -48),
             make_case("A7", "vllm", "mi300x", "e2e_s", -50),
             make_case("A8", "vllm", "mi300x", "e2e_s", -52),
             make_case("A9", "vllm", "mi300x", "e2e_s", -33),
             make_case("A10", "vllm", "h200", "serving_ttft_p50_s", -25),
             make_case("A11", "sglang", "h200", "serving_tpot_s", 5)};
  return s;
}

TEST(TrackRecord, MetricsSayWhatTheyTimeAndWhichWayIsFaster) {
  EXPECT_EQ(metric_kind("prefill_tokens_per_s"), MetricKind::kPrompt);
  EXPECT_EQ(metric_kind("serving_ttft_p50_s"), MetricKind::kPrompt);
  EXPECT_EQ(metric_kind("e2e_s"), MetricKind::kGeneration);
  EXPECT_EQ(metric_kind("serving_output_tokens_per_s"), MetricKind::kGeneration);
  EXPECT_THROW((void)metric_kind("tokens"), InvalidArgument);
  EXPECT_TRUE(metric_is_time("serving_tpot_s"));
  EXPECT_TRUE(metric_is_time("ttft_s"));
  EXPECT_FALSE(metric_is_time("decode_tokens_per_s"));
  EXPECT_FALSE(metric_is_time("output_tokens_per_s_per_gpu"));
  // A rate 10% high is 10% faster; a duration 20% short is 25% faster (1 / 0.8).
  EXPECT_DOUBLE_EQ(optimism_pct("decode_tokens_per_s", 10), 10);
  EXPECT_DOUBLE_EQ(optimism_pct("e2e_s", -20), 25);
  EXPECT_DOUBLE_EQ(optimism_pct("ttft_s", 25), -20);
  // Every metric the published cases use has a kind (parse_validation reads
  // the same list).
  for (const auto& c : built_in_validation()) EXPECT_NO_THROW((void)metric_kind(c.metric)) << c.id;
}

TEST(TrackRecord, TheDeviceFirstThenItsArchitectureThenItsVendor) {
  const TrackRecordSnapshot s = sample();
  // The H200's own three generation cases: errors +10 (a rate, faster),
  // -20 (a duration, faster) and +30 (a duration, slower). |error| 10, 20,
  // 30: median 20, p90 20 + 0.8 x 10 = 28 (linear interpolation), worst A3.
  // Optimism as speed (positive: faster): +10, 20 / 80 = +25, -30 / 130 =
  // -23.1: median +10, two faster, one slower.
  const auto h200 = track_record_for(s, "vllm", registry().get("h200"), MetricKind::kGeneration);
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200->scope, "device");
  EXPECT_EQ(h200->cases, 3);
  EXPECT_DOUBLE_EQ(h200->median_abs_error_pct, 20);
  EXPECT_DOUBLE_EQ(h200->p90_abs_error_pct, 28);
  EXPECT_DOUBLE_EQ(h200->max_abs_error_pct, 30);
  EXPECT_EQ(h200->worst_case, "A3");
  EXPECT_DOUBLE_EQ(h200->median_optimism_pct, 10);
  EXPECT_EQ(h200->optimistic, 2);
  EXPECT_EQ(h200->pessimistic, 1);
  EXPECT_EQ(h200->device_cases, 3);
  EXPECT_EQ(h200->metrics,
            (std::vector<std::string>{"decode_tokens_per_s", "e2e_s", "serving_tpot_s"}));

  // Two on the H100 SXM are too few: Hopper's five (the H200's too).
  const auto h100 =
      track_record_for(s, "vllm", registry().get("h100-sxm"), MetricKind::kGeneration);
  ASSERT_TRUE(h100);
  EXPECT_EQ(h100->scope, "architecture");
  EXPECT_EQ(h100->cases, 5);
  EXPECT_EQ(h100->devices, (std::vector<std::string>{"h100-sxm", "h200"}));
  EXPECT_EQ(h100->device_cases, 2);
  EXPECT_NE(
      track_record_note(*h100).find("on hopper devices (h100-sxm, h200; 2 on the NVIDIA H100"),
      std::string::npos)
      << track_record_note(*h100);

  // None on the B200 or on Blackwell: NVIDIA's five, never the MI300X's.
  const auto b200 = track_record_for(s, "vllm", registry().get("b200"), MetricKind::kGeneration);
  ASSERT_TRUE(b200);
  EXPECT_EQ(b200->scope, "vendor");
  EXPECT_EQ(b200->cases, 5);
  EXPECT_EQ(b200->hardware, "b200");
  EXPECT_EQ(b200->device_cases, 0);
  EXPECT_EQ(b200->architecture_cases, 0);

  // The MI300X's four end-to-end times, all shorter than measured: as
  // speeds 48 / 52 = +92.3%, 50 / 50 = +100%, 52 / 48 = +108.3% and
  // 33 / 67 = +49.3% (optimism_pct), median (92.3 + 100) / 2 = +96.2%;
  // |error| median 49.
  const auto mi = track_record_for(s, "vllm", registry().get("mi300x"), MetricKind::kGeneration);
  ASSERT_TRUE(mi);
  EXPECT_EQ(mi->scope, "device");
  EXPECT_NEAR(mi->median_optimism_pct, (48.0 / 52 + 50.0 / 50) / 2 * 100, 1e-9);
  EXPECT_DOUBLE_EQ(mi->median_abs_error_pct, 49);
  EXPECT_EQ(mi->optimistic, 4);
  EXPECT_NE(track_record_note(*mi).find(
                "(e2e_s): median |error| 49%, p90 51%, worst 52% (A8); 4 of 4 predicted faster "
                "than measured, by a median +96% in speed"),
            std::string::npos)
      << track_record_note(*mi);

  // One prompt case anywhere, one SGLang case, the reference engine: none.
  EXPECT_FALSE(track_record_for(s, "vllm", registry().get("h200"), MetricKind::kPrompt));
  EXPECT_FALSE(track_record_for(s, "sglang", registry().get("h200"), MetricKind::kGeneration));
  EXPECT_FALSE(track_record_for(s, "roofline", registry().get("h200"), MetricKind::kGeneration));
  // Another AMD device: the MI300X's four, never NVIDIA's.
  const auto mi355 = track_record_for(s, "vllm", registry().get("mi355x"), MetricKind::kGeneration);
  ASSERT_TRUE(mi355);
  EXPECT_EQ(mi355->scope, "vendor");
  EXPECT_EQ(mi355->devices, (std::vector<std::string>{"mi300x"}));
}

TEST(TrackRecord, TheSnapshotFileRoundTripsAndIsStrict) {
  const TrackRecordSnapshot s = sample();
  const TrackRecordSnapshot back = parse_track_record(track_record_file_text(s), "sample");
  EXPECT_EQ(back.published_cases, 12);
  ASSERT_EQ(back.cases.size(), s.cases.size());
  EXPECT_EQ(back.cases[5].vendor, "amd");
  EXPECT_EQ(back.cases[5].architecture, "cdna3");
  EXPECT_DOUBLE_EQ(back.cases[1].error_pct, -20);

  const std::string ok_case =
      R"({"id":"C1","engine":"vllm","hardware":"h200","vendor":"nvidia","architecture":"hopper","metric":"e2e_s","error_pct":-3.5})";
  const auto doc = [](const std::string& cases, const std::string& published = "2") {
    return R"({"about":"x","published_cases":)" + published + R"(,"cases":[)" + cases + "]}";
  };
  EXPECT_NO_THROW((void)parse_track_record(doc(ok_case), "t"));
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string c = ok_case;
    c.replace(c.find(from), from.size(), to);
    return doc(c);
  };
  EXPECT_THROW((void)parse_track_record(replaced("\"id\"", "\"ident\""), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(replaced(",\"error_pct\":-3.5", ""), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(replaced("e2e_s", "e3e_s"), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(replaced("-3.5", "-100"), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(replaced("-3.5", "\"3\""), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(replaced("-3.5", "1e999"), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(doc(ok_case + "," + ok_case), "t"), ParseError);  // twice
  EXPECT_THROW((void)parse_track_record(doc(ok_case, "0"), "t"),
               ParseError);  // more than published
  EXPECT_THROW((void)parse_track_record(doc(ok_case, "2.5"), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(doc(ok_case, "1e9"), "t"), ParseError);
  EXPECT_THROW((void)parse_track_record(R"({"about":"x","published_cases":1,"cases":{}})", "t"),
               ParseError);
  EXPECT_THROW(
      (void)parse_track_record(R"({"about":"x","published_cases":1,"cases":[],"n":1})", "t"),
      ParseError);
  EXPECT_THROW((void)parse_track_record("[", "t"), ParseError);
}

// The shipped snapshot is the current model's: every published case the
// validation predicts, with its error to the two decimals the file keeps. A
// change that moves a prediction fails here until the file is rewritten
// (`roofline validate --track-record > data/validation/track-record.json`).
TEST(TrackRecord, TheShippedSnapshotIsTheCurrentValidation) {
  const ValidationReport r = validate_cases(built_in_validation(), registry(), {}, "case");
  const TrackRecordSnapshot fresh = track_record_snapshot(r, registry());
  const TrackRecordSnapshot& shipped = built_in_track_record();
  constexpr double kFileRounding = 0.005 + 1e-9;  // half the last of two decimals
  ASSERT_EQ(shipped.published_cases, fresh.published_cases);
  ASSERT_EQ(shipped.cases.size(), fresh.cases.size());
  for (std::size_t i = 0; i < fresh.cases.size(); ++i) {
    const auto& a = shipped.cases[i];
    const auto& b = fresh.cases[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.engine, b.engine) << b.id;
    EXPECT_EQ(a.hardware, b.hardware) << b.id;
    EXPECT_EQ(a.vendor, b.vendor) << b.id;
    EXPECT_EQ(a.architecture, b.architecture) << b.id;
    EXPECT_EQ(a.metric, b.metric) << b.id;
    EXPECT_NEAR(a.error_pct, b.error_pct, kFileRounding)
        << b.id << ": rewrite the snapshot with roofline validate --track-record";
  }
}

TEST(TrackRecord, DocumentsCarryTheRecordsAndTheirNotes) {
  const Device& d = registry().get("mi300x");
  const ModelSpec m = load_model("llama-3.1-70b");
  Scenario s;
  s.phase = Phase::kDecode;
  s.batch = 1;
  s.seq_len = 2048;
  s.tp = 8;
  s.precision.weights = Format::kFp8;
  const EngineProfile& vllm = EngineRegistry::built_in().get("vllm");
  const ModelOptions o = with_engine({}, d, &vllm);
  const Prediction p = predict(m, d, s, o);
  const auto j = predict_document(m, d, s, p, false, {}, "", registry());
  ASSERT_EQ(j["track_record"].size(), 1u);
  EXPECT_EQ(j["track_record"][0]["kind"], "generation");
  EXPECT_EQ(j["track_record"][0]["scope"], "device");
  EXPECT_EQ(j["track_record"][0]["engine"], "vllm");
  // The published MI300X cases (C674-C705) all came out faster than measured.
  EXPECT_GT(j["track_record"][0]["median_optimism_pct"].get<double>(), 30);
  EXPECT_EQ(j["notes"].back().get<std::string>().rfind("track record (roofline validate): vLLM "
                                                       "on the AMD Instinct MI300X",
                                                       0),
            0u)
      << j["notes"].back();

  // Ollama was never measured near the MI300X: said, not silent.
  const EngineProfile& ollama = EngineRegistry::built_in().get("ollama");
  const auto none = track_record_notes(&ollama, d, {MetricKind::kGeneration});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].rfind("track record (roofline validate): none; fewer than 3 published "
                          "generation measurements of Ollama",
                          0),
            0u)
      << none[0];

  // The reference engine and ideal mode quote none.
  const Prediction reference = predict(m, d, s);
  EXPECT_TRUE(
      predict_document(m, d, s, reference, false, {}, "", registry())["track_record"].empty());
  ModelOptions ideal = o;
  ideal.mode = Mode::kIdeal;
  const Prediction pure = predict(m, d, s, ideal);
  EXPECT_TRUE(predict_document(m, d, s, pure, false, {}, "", registry())["track_record"].empty());

  // A prompt quotes the prompt's record; a generation both.
  Scenario prompt = s;
  prompt.phase = Phase::kPrefill;
  const auto records = track_records(
      predict(m, registry().get("h200"), prompt, with_engine({}, registry().get("h200"), &vllm)),
      registry().get("h200"), prompt);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, MetricKind::kPrompt);
  EXPECT_EQ(
      track_records(&vllm, registry().get("h200"), {MetricKind::kPrompt, MetricKind::kGeneration})
          .size(),
      2u);
}

// A search quotes the records of the engines it ranked, the best's first,
// each once: SGLang best, vLLM a runner-up, TensorRT-LLM and vLLM again on
// the front. On the H200 each has prompt and generation cases.
TEST(TrackRecord, ASearchQuotesItsRankedEnginesBestFirst) {
  SearchResult r;
  Deployment sglang, vllm, trtllm;
  sglang.engine = "sglang";
  vllm.engine = "vllm";
  trtllm.engine = "trtllm";
  r.best = sglang;
  r.runners_up.push_back({vllm, "fewer tokens/s per GPU"});
  r.front = {trtllm, vllm, sglang};
  const auto records = search_track_records(r, registry().get("h200"));
  ASSERT_EQ(records.size(), 6u);
  const std::vector<std::string> order{"sglang", "sglang", "vllm", "vllm", "trtllm", "trtllm"};
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].engine, order[i]) << i;
    EXPECT_EQ(records[i].kind, i % 2 == 0 ? MetricKind::kPrompt : MetricKind::kGeneration) << i;
  }
  EXPECT_TRUE(search_track_records(SearchResult{}, registry().get("h200")).empty());
}

}  // namespace
}  // namespace roofline
