"""Each Python function against the CLI's --json for the same case: the same
document (the library builds both), format names understood the same way."""

import math
import os

import numpy as np
import pytest

import roofline


def flags(**kwargs):
    """Python keywords as the CLI's flags: seq_len=4096 -> --seq-len 4096, ideal=True -> --ideal."""
    out = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not False and value is not None:
            out += [flag, str(value)]
    return out


SCENARIOS = [
    dict(),
    dict(phase="prefill", batch=4, seq_len=2048, weights="fp8", attention="fa2"),
    dict(phase="decode", batch=16, seq_len=32768, weights="nvfp4", kv="fp8"),
    dict(strategy="fp8_balanced", seq_len=8192),
    dict(weights="int4", act="fp16", tp=2, engine="vllm"),
    dict(block_sparsity=0.5, phase="prefill", seq_len=16384, ideal=True),
    dict(batch=8, seq_len=2048, draft_tokens=3, acceptance=0.7, engine="vllm"),
    dict(batch=16, seq_len=1024, tp=4, attention_dp=2, engine="sglang"),
    dict(phase="prefill", seq_len=2048, cached=4096, engine="vllm"),
    # No act: the engine's for the weights (fp8 as W8A8 where the device computes fp8).
    dict(batch=8, weights="fp8", engine="trtllm"),
]
MODELS = [("llama-3.1-8b", "h100"), ("mixtral-8x7b", "h200"), ("qwen3-30b-a3b", "gb10"),
          ("qwen3.5-397b-a17b", "b200")]


@pytest.mark.parametrize("model,hardware", MODELS)
@pytest.mark.parametrize("case", SCENARIOS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "defaults")
def test_predict(cli, model, hardware, case):
    p = roofline.predict(model, hardware, per_op=True, **case)
    assert p.to_dict() == cli("predict", "--model", model, "--hardware", hardware, "--per-op", *flags(**case))
    brief = roofline.predict(model, hardware, **case)
    assert brief.to_dict() == cli("predict", "--model", model, "--hardware", hardware, *flags(**case))


@pytest.mark.parametrize("case", [dict(), dict(prompt=2048, gen=512, batch=8, weights="fp8"),
                                  dict(prompt=100, gen=1), dict(gen=10, strategy="long_context_kv"),
                                  dict(engine="sglang", attention="fa3"),
                                  dict(gen=64, batch=4, draft_tokens=2),
                                  dict(engine="llama.cpp", weights="q4_k_m", act="fp16", prompt=512, gen=8,
                                       engine_build="2024-05"),
                                  dict(prompt=256, gen=32, cached=8192),
                                  dict(prompt=1024, gen=64, weights="fp8", engine="vllm")])
def test_generate(cli, case):
    g = roofline.generate("llama-3.1-8b", "h200", **case)
    assert g.to_dict() == cli("generate", "--model", "llama-3.1-8b", "--hardware", "h200", *flags(**case))


@pytest.mark.parametrize("case", [dict(m=1, n=4096, k=4096), dict(m=512, n=14336, k=4096, weights="fp8", act="fp8"),
                                  dict(m=16, n=4096, k=4096, weights="int4", ideal=True)])
def test_gemm(cli, case):
    assert roofline.gemm("h100", **case) == cli("gemm", "--hardware", "h100", *flags(**case))


@pytest.mark.parametrize("case", [dict(), dict(seq_len=131072, batch=8), dict(weights="nvfp4", tp=2)])
def test_kv(cli, case):
    assert roofline.kv("llama-3.1-8b", "gb10", **case) == cli("kv", "--model", "llama-3.1-8b", "--hardware", "gb10",
                                                             *flags(**case))


@pytest.mark.parametrize("hardware", ["h100", "a100", "b200"])
@pytest.mark.parametrize("case", [dict(), dict(phase="prefill", seq_len=8192, batch=2),
                                  dict(engine="vllm", cuda_graphs="off"),
                                  dict(phase="prefill", seq_len=1024, cached=16384)])
def test_attention(cli, hardware, case):
    assert roofline.attention("llama-3.1-8b", hardware, **case) == cli(
        "attention", "--model", "llama-3.1-8b", "--hardware", hardware, *flags(**case))


def test_capacity_is_predicts(cli):
    doc = cli("predict", "--model", "llama-3.1-70b", "--hardware", "h200", "--weights", "fp8", "--batch", "4")
    assert roofline.capacity("llama-3.1-70b", "h200", weights="fp8", batch=4) == doc["capacity"]
    assert doc["capacity"]["kv_memory"] is None  # the reference: all the memory the weights leave


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_capacity_follows_the_engines_kv_memory_rule(cli, engine):
    args = dict(weights="fp8", kv="fp8", seq_len=1280, engine=engine)
    doc = cli("predict", "--model", "llama-3.1-70b", "--hardware", "h100", *flags(**args))
    got = roofline.capacity("llama-3.1-70b", "h100", **args)
    assert got == doc["capacity"]
    assert got["kv_memory"]["engine"] == engine
    assert got["kv_memory"]["of"] == ("free" if engine == "trtllm" else "total")
    # Either rule leaves the cache less than all the memory the weights leave.
    whole = roofline.capacity("llama-3.1-70b", "h100", weights="fp8", kv="fp8", seq_len=1280)
    assert got["max_batch"] < whole["max_batch"]
    # The prediction's memory says whether its KV cache fits under the rule, as the CLI does.
    past = dict(args, batch=got["max_batch"] + 1)
    memory = cli("predict", "--model", "llama-3.1-70b", "--hardware", "h100", *flags(**past))["memory"]
    assert memory["fits"] is False and memory["kv_room_bytes"] < memory["kv_cache_bytes"]
    assert roofline.predict("llama-3.1-70b", "h100", **past)["memory"] == memory


@pytest.mark.parametrize("case", [dict(), dict(phase="decode", seq_len=131072, batch=8),
                                  dict(max_quality_loss=10, engine="vllm"), dict(phase="prefill", seq_len=2048, tp=2),
                                  dict(memory_limit=20e9, latency_target=0.02),
                                  dict(engine="vllm", cuda_graphs="decode-only")])
def test_recommend(cli, case):
    assert roofline.recommend("llama-3.1-8b", "gb10", **case) == cli(
        "recommend", "--model", "llama-3.1-8b", "--hardware", "gb10", *flags(**case))


def test_recommend_with_a_checkpoint(cli, checkpoint):
    doc = roofline.recommend("llama-3.1-8b", "h100", checkpoint=str(checkpoint), budget_sqnr_db=30)
    assert doc == cli("recommend", "--model", "llama-3.1-8b", "--hardware", "h100", "--checkpoint", checkpoint,
                      "--budget-sqnr-db", 30)


@pytest.mark.parametrize("case", [dict(), dict(engine="case"), dict(ideal=True)])
def test_validate(cli, case):
    assert roofline.validate(**case) == cli("validate", *flags(**case))


@pytest.fixture()
def serving_runs(tmp_path):
    """The development set's header and a few of its rows: aggregated vLLM, SGLang and
    TensorRT-LLM runs and a disaggregated one without worker counts (refused)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "data", "validation", "serving-dev.csv")) as f:
        lines = f.read().splitlines()
    picked = [lines[0]]
    for backend in ("vllm", "sglang", "trtllm"):
        picked += [l for l in lines[1:] if f",{backend}," in l and ",agg," in l][:3]
    picked += [l for l in lines[1:] if ",disagg," in l][:1]
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(picked) + "\n")
    return path


@pytest.mark.parametrize("case", [dict(), dict(engine="vllm", recipe="engine", rounds=3)])
def test_validate_serving(cli, serving_runs, case):
    doc = roofline.validate_serving(file=str(serving_runs), **case)
    assert doc == cli("validate", "--serving", serving_runs, *flags(**case))
    assert doc["predicted"] + doc["refused"] == 10
    assert doc["refused"] >= 1  # the disaggregated row gives no worker counts


@pytest.mark.parametrize("case", [dict(), dict(prefill_share=True)])
def test_validate_decode_steps(cli, serving_runs, case):
    doc = roofline.validate_decode_steps(file=str(serving_runs), **case)
    assert doc == cli("validate", "--decode-steps", "--serving-file", serving_runs, *flags(**case))
    assert doc["skipped_disaggregated"] == 1


def test_validate_serving_bad_input(tmp_path):
    with pytest.raises(ValueError):
        roofline.validate_serving(rounds=0)
    with pytest.raises(ValueError):
        roofline.validate_serving(recipe="dynamo")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,nonsense\n1,2\n")
    with pytest.raises(ValueError):
        roofline.validate_serving(file=str(bad))


def test_quantize(cli, checkpoint):
    doc = roofline.quantize(checkpoint)
    assert doc == cli("quantize", "--checkpoint", checkpoint)
    assert {t["name"] for t in doc["tensors"]} == {"layer.weight", "layer.bias"}
    weight = next(t for t in doc["tensors"] if t["name"] == "layer.weight")
    assert weight["outlier_channels"] == [3]
    assert roofline.quantize(str(checkpoint), budget_sqnr_db=35) == cli(
        "quantize", "--checkpoint", checkpoint, "--budget-sqnr-db", 35)


def test_registries(cli):
    assert roofline.hardware_list() == cli("hardware", "list")["devices"]
    assert roofline.hardware("h100") == cli("hardware", "show", "h100")["device"]
    assert roofline.hardware_ids() == [d["id"] for d in cli("hardware", "list")["devices"]]
    assert roofline.formats() == cli("formats")["formats"]
    assert roofline.models() == cli("model", "list")["models"]
    assert roofline.strategies() == cli("strategies")["strategies"]
    assert roofline.engines() == cli("engines")
    assert roofline.engine("vllm") == cli("engines", "show", "vllm")


@pytest.mark.parametrize("model", ["llama-3.1-8b", "deepseek-v3", "Mixtral-8x7B"])
def test_model_show(cli, model):
    assert roofline.model(model) == cli("model", "show", model)


def test_model_show_of_a_config_file(cli, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, '
                      '"num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192, '
                      '"vocab_size": 128256, "torch_dtype": "bfloat16"}')
    assert roofline.model(config) == cli("model", "show", config)
    assert roofline.model(str(tmp_path)) == cli("model", "show", tmp_path)
    p = roofline.predict(config, "l4")
    assert p.to_dict() == cli("predict", "--model", config, "--hardware", "l4")


def test_sweep_columns_match_the_cli_rows(cli):
    lists = dict(models=["llama-3.1-8b", "mixtral-8x7b"], hardware=["h100", "gb10"], phases=["prefill", "decode"],
                 batches=[1, 8], seq_lens=[512, 8192], weights=["native", "fp8"], tps=[1, 3])
    cols = roofline.sweep(**lists, as_frame=False)
    rows = cli("sweep", "--model", "llama-3.1-8b,mixtral-8x7b", "--hardware", "h100,gb10", "--phase", "prefill,decode",
               "--batch", "1,8", "--seq-len", "512,8192", "--weights", "native,fp8", "--tp", "1,3")
    assert len(rows) == len(cols["time_s"]) == 2 * 2 * 2 * 2 * 2 * 2 * 2
    assert list(cols) == list(rows[0]) + ["error"]  # the CSV's columns, in its order
    errors = 0
    for i, row in enumerate(rows):
        for key in ("model", "hardware", "phase", "batch", "seq_len", "weights", "act", "kv", "attention", "tp",
                    "strategy"):
            assert cols[key][i] == row[key], (i, key)
        if "error" in row:
            errors += 1
            assert cols["error"][i] == row["error"]
            assert math.isnan(cols["time_s"][i]) and cols["bound"][i] is None and not cols["fits"][i]
            continue
        assert cols["error"][i] is None
        assert cols["bound"][i] == row["bound"] and cols["fits"][i] == row["fits"]
        for key in ("time_s", "tokens_per_s", "flops", "bytes", "weight_bytes", "kv_cache_bytes",
                    "memory_total_bytes"):
            assert cols[key][i] == pytest.approx(row[key], rel=5e-6), (i, key)  # the CLI prints 6 digits
    assert errors == len(rows) // 2  # tp 3 divides neither model's heads


def test_sweep_strategies_and_kernels_match_the_cli(cli):
    cols = roofline.sweep("qwen2.5-7b", "b200", strategies=["fp8_balanced", "nvfp4_blackwell", "int4_weight_only"],
                          attentions=["auto", "fa2", "fa3"], as_frame=False)
    rows = cli("sweep", "--model", "qwen2.5-7b", "--hardware", "b200", "--strategy",
               "fp8_balanced,nvfp4_blackwell,int4_weight_only", "--attention", "auto,fa2,fa3")
    assert [r["strategy"] for r in rows] == list(cols["strategy"])
    assert [r["attention"] for r in rows] == list(cols["attention"])
    assert [r["weights"] for r in rows] == list(cols["weights"])
    assert [r.get("error") for r in rows] == list(cols["error"])
    assert [r.get("time_s", 0) for r in rows] == pytest.approx(np.nan_to_num(cols["time_s"]), rel=5e-6)


FP8_NAMES = ["fp8", "FP8 E4M3", "fp8_e4m3", "fp8-e4m3", "E4M3", "float8_e4m3fn"]


def test_format_names_mean_the_same_everywhere(cli):
    # One id, whichever way it is written, in every function that takes a format.
    for name in FP8_NAMES:
        assert roofline.canonical_format(name) == "fp8"
        assert roofline.predict("llama-3.1-8b", "h100", weights=name, kv=name).to_dict() == \
            roofline.predict("llama-3.1-8b", "h100", weights="fp8", kv="fp8").to_dict()
        assert roofline.generate("llama-3.1-8b", "h100", weights=name, gen=8).to_dict() == \
            roofline.generate("llama-3.1-8b", "h100", weights="fp8", gen=8).to_dict()
        assert roofline.gemm("h100", 16, 4096, 4096, weights=name, act=name) == \
            roofline.gemm("h100", 16, 4096, 4096, weights="fp8", act="fp8")
        assert roofline.kv("llama-3.1-8b", "h100", weights=name) == roofline.kv("llama-3.1-8b", "h100", weights="fp8")
        swept = roofline.sweep("llama-3.1-8b", "h100", weights=[name], acts=["bf16"], kvs=[name], as_frame=False)
        assert swept["weights"][0] == swept["kv"][0] == "fp8"
        back, _ = roofline.quantize_array(np.linspace(-1, 1, 64, dtype=np.float32), name)
        assert np.array_equal(back, roofline.quantize_array(np.linspace(-1, 1, 64, dtype=np.float32), "fp8")[0])
        calc = roofline.RooflineCalculator("h100")
        assert calc.predict_gemm(16, 4096, 4096, precision=name)["time_s"] == \
            calc.predict_gemm(16, 4096, 4096, precision="fp8")["time_s"]
    for name in ("NVFP4", "nvfp4", "NvFp4"):
        assert roofline.canonical_format(name) == "nvfp4"
        assert roofline.predict("llama-3.1-8b", "b200", weights=name).time_s == \
            roofline.predict("llama-3.1-8b", "b200", weights="nvfp4").time_s
    # ... and the CLI reads them as Python does.
    assert cli("predict", "--model", "llama-3.1-8b", "--hardware", "h100", "--weights", "FP8 E4M3", "--kv", "E4M3") == \
        roofline.predict("llama-3.1-8b", "h100", weights="fp8_e4m3", kv="fp8").to_dict()
    assert cli("gemm", "--hardware", "b200", "--m", 64, "--n", 4096, "--k", 4096, "--weights", "NVFP4", "--act",
               "nvfp4") == roofline.gemm("b200", 64, 4096, 4096, weights="nvfp4", act="NVFP4")
    with pytest.raises(LookupError, match="fp7"):
        roofline.predict("llama-3.1-8b", "h100", weights="fp7")


def test_errors_match_the_cli(cli_path):
    import subprocess
    for args, call in [
        (["predict", "--model", "llama-3.1-8b", "--hardware", "h9000"], lambda: roofline.predict("llama-3.1-8b", "h9000")),
        (["predict", "--model", "llama-3.1-8b", "--hardware", "a100", "--attention", "fa3"],
         lambda: roofline.predict("llama-3.1-8b", "a100", attention="fa3")),
        (["kv", "--model", "nope", "--hardware", "h100"], lambda: roofline.kv("nope", "h100")),
    ]:
        done = subprocess.run([cli_path, *args], capture_output=True, text=True)
        assert done.returncode == 2
        with pytest.raises(roofline.RooflineError) as caught:
            call()
        assert done.stderr.strip() == f"error: {caught.value}"


def test_python_m_roofline_runs_the_cli(cli, cli_path):
    import subprocess
    import sys
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(cli_path) + os.pathsep + env.get("PATH", "")
    done = subprocess.run([sys.executable, "-m", "roofline", "predict", "--model", "llama-3.1-8b", "--hardware",
                           "h100", "--json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    import json
    assert json.loads(done.stdout) == cli("predict", "--model", "llama-3.1-8b", "--hardware", "h100")
    bad = subprocess.run([sys.executable, "-m", "roofline", "predict", "--hardware", "h9000"], capture_output=True,
                         text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown device")


def test_python_m_roofline_says_when_the_cli_is_missing(monkeypatch, capsys):
    import roofline.__main__ as entry
    monkeypatch.setattr(entry, "find_program", lambda name: None)
    assert entry.main(["--version"]) == 127
    err = capsys.readouterr().err
    assert err.startswith("error: the roofline command was not found") and "make python-install" in err


def test_sweep_gemm(cli):
    rows = roofline.sweep_gemm(m=[1, 16, 256], n=4096, k=[4096, 14336], weights=["bf16", "FP8 E4M3"],
                               acts="bf16", hardware=["h100", roofline.GB10, "a100"])
    assert rows == cli("sweep", "gemm", "--m", "1,16,256", "--n", 4096, "--k", "4096,14336", "--weights",
                       "bf16,fp8", "--act", "bf16", "--hardware", "h100,gb10,a100")


@pytest.mark.parametrize("case", [
    dict(model="llama-3.1-70b", hardware="h200", engine="vllm", tp=2, weights="fp8", act="fp8",
         isl=1024, osl=256, concurrency=64),
    dict(model="llama-3.1-8b", hardware="h100", isl=4096, osl=128, concurrency=4000),
    dict(model="gpt-oss-120b", hardware="b200", engine="trtllm", isl=2048, osl=512, concurrency=16),
    dict(model="llama-3.1-70b", hardware="h200", engine="sglang", weights="fp8", act="fp8",
         isl=1024, osl=128, concurrency=32, mode="disagg", prefill_workers=2, prefill_tp=2,
         decode_workers=1, decode_tp=4, rounds=3),
    dict(model="deepseek-v3", hardware="h200", engine="sglang", tp=8, attention_dp=8, isl=1024,
         osl=64, concurrency=16, token_budget=4096, max_running=64),
    dict(model="gpt-oss-120b", hardware="h200", engine="vllm", tp=8, isl=1024, osl=64,
         concurrency=4, rounds=2, graph_capture_size=2048),
    dict(model="deepseek-v3", hardware="h200", engine="trtllm", tp=8, attention_dp=8, ep=8,
         isl=1024, osl=64, concurrency=16, rounds=2),
    dict(model="llama-3.1-8b", hardware="h100", engine="vllm", dp=4, isl=1024, osl=64,
         concurrency=30, rounds=2),
    dict(model="deepseek-v3", hardware="h200", engine="sglang", weights="fp8", act="fp8", isl=1024,
         osl=64, concurrency=16, mode="disagg", prefill_tp=8, prefill_attention_dp=8,
         prefill_ep=8, decode_tp=8, attention_dp=8, ep=8, rounds=2),
    dict(model="llama-3.1-70b", hardware="h100", engine="trtllm", weights="fp8", act="fp8", tp=2,
         pp=2, isl=1024, osl=128, concurrency=32, rounds=2),
    dict(model="deepseek-v3", hardware="b200", engine="trtllm", weights="nvfp4", act="nvfp4", tp=8,
         isl=1024, osl=256, concurrency=8, rounds=2, draft_tokens=3, acceptance=0.8),
    dict(model="llama-3.1-8b", hardware="h100", engine="sglang", isl=4096, osl=128, concurrency=16,
         rounds=2, shared_prefix=3000),
    dict(model="llama-3.1-8b", hardware="h100", engine="vllm", isl=1024, osl=256, concurrency=16,
         rounds=3, range_ratio=0.8),
    dict(model="llama-3.1-8b", hardware="h100", engine="sglang", isl=2048, osl=128, concurrency=8,
         rounds=2, isl_min=1024, osl_min=64),
    dict(model="llama-3.1-70b", hardware="h200", engine="trtllm", weights="fp8", act="fp8", tp=2,
         isl=1024, osl=128, concurrency=16, rounds=2, recipe="aiconfigurator"),
    dict(model="deepseek-v3", hardware="h200", engine="sglang", weights="fp8", act="fp8", isl=1024,
         osl=64, concurrency=16, mode="disagg", prefill_tp=8, decode_tp=8, rounds=2,
         recipe="aiconfigurator", prefill_batch=2, decode_batch=8),
    dict(model="llama-3.1-8b", hardware="h100", engine="trtllm", weights="fp8", act="fp8", kv="fp8",
         isl=128, osl=2048, concurrency=300, rounds=1, recipe="trtllm-bench", kv_memory_share=0.95),
    dict(model="llama-3.1-8b", hardware="h100", engine="vllm", isl=1024, osl=64, concurrency=8,
         rounds=2, engine_version="0.12.0"),
    dict(model="llama-3.1-8b", hardware="h100", engine="vllm", isl=1024, osl=64, concurrency=8,
         rounds=2, engine_version="0.12.0", overlap_scheduling="on"),
    dict(model="llama-3.1-8b", hardware="h100", engine="trtllm", isl=12000, osl=32, concurrency=2,
         rounds=2, chunked_prefill="on"),
    dict(model="llama-3.1-8b", hardware="h100", engine="sglang", isl=1024, osl=64, concurrency=8,
         rounds=4, prompt_pool=6),
    dict(model="llama-3.1-8b", hardware="h100", engine="trtllm", isl=1024, osl=64, concurrency=8,
         rounds=2, batch_wait_iters=20, batch_wait_ratio=0.9),
    dict(model="llama-3.1-8b", hardware="h100", engine="sglang", isl=1024, osl=64, concurrency=16,
         rounds=2, range_ratio=0.8, scheduler_recv_interval=30),
    dict(model="llama-3.1-70b", hardware="h100", engine="trtllm", weights="fp8", act="fp8", tp=2,
         isl=1024, osl=256, concurrency=32, rounds=2, kv_memory_share=0.5),
    dict(model="gpt-oss-120b", hardware="h100", engine="vllm", isl=8192, osl=64, concurrency=4,
         rounds=2, engine_version="0.11.0"),
])
def test_serving(cli, case):
    model, hardware = case.pop("model"), case.pop("hardware")
    assert roofline.serving(model, hardware, **case) == cli(
        "serving", "--model", model, "--hardware", hardware, *flags(**case))


def test_serving_engine_version_dates_async_scheduling():
    # vLLM forms each batch a step ahead from 0.14.0 (async scheduling on by default): a
    # newcomer waits a step more, so TTFT is longer than with the 0.12 scheduler.
    case = dict(engine="vllm", isl=1024, osl=64, concurrency=8, rounds=3)
    now = roofline.serving("llama-3.1-8b", "h100", **case)
    old = roofline.serving("llama-3.1-8b", "h100", engine_version="0.12.0", **case)
    assert now["formed_a_step_ahead"] and not old["formed_a_step_ahead"]
    assert old["engine_version"] == "0.12.0"
    assert now["ttft_s"] > old["ttft_s"]
    with pytest.raises(roofline.InvalidArgument, match="engine version"):
        roofline.serving("llama-3.1-8b", "h100", engine="vllm", engine_version="0.14; rm")


def test_serving_engine_version_runs_gpt_oss_experts_on_marlin_before_0_12():
    # vLLM ran MXFP4 experts on Marlin on Hopper until its builds carried OpenAI's
    # triton_kernels (0.12.0): Marlin's prompt-sized layers are slower, so the lone prompts
    # of 4 clients reach their first token later under 0.11.0 than under the current release.
    case = dict(engine="vllm", isl=8192, osl=64, concurrency=4, rounds=2)
    now = roofline.serving("gpt-oss-120b", "h100", **case)
    old = roofline.serving("gpt-oss-120b", "h100", engine_version="0.11.0", **case)
    assert old["ttft_s"] > 1.5 * now["ttft_s"]
    assert any("ran mxfp4 experts on marlin" in n for n in old["notes"])
    assert not any("on marlin" in n for n in now["notes"])


def test_serving_prompt_pool_finds_repeats_in_the_prefix_cache():
    # 8 clients x 4 rounds over 6 prompts: most draws repeat a prompt already prefilled, which
    # the prefix cache serves; every prompt unique (the default), none is found.
    case = dict(engine="vllm", isl=1024, osl=64, concurrency=8, rounds=4)
    unique = roofline.serving("llama-3.1-8b", "h100", **case)
    pooled = roofline.serving("llama-3.1-8b", "h100", prompt_pool=6, **case)
    assert unique["prefix_hit_rate"] == 0 and unique["prompt_pool"] == 0
    assert 0.5 < pooled["prefix_hit_rate"] <= 1
    assert pooled["ttft_s"] < unique["ttft_s"]
    with pytest.raises(roofline.InvalidArgument, match="prompt pool"):
        roofline.serving("llama-3.1-8b", "h100", prompt_pool=-1, **case)
    with pytest.raises(roofline.InvalidArgument, match="prompt pool"):
        roofline.validate_serving(prompt_pool=-1)


def test_serving_batch_waiting_holds_prompts_for_fuller_steps():
    # TensorRT-LLM's batch waiting: 8 clients of 1,024-token prompts never fill 0.9 of a
    # 16,384-token step, so a prompt beside decode tokens waits its 20 steps; vLLM has no
    # such setting.
    case = dict(engine="trtllm", isl=1024, osl=64, concurrency=8, rounds=2, token_budget=16384)
    plain = roofline.serving("llama-3.1-8b", "h100", **case)
    held = roofline.serving("llama-3.1-8b", "h100", batch_wait_iters=20, batch_wait_ratio=0.9,
                            **case)
    assert plain["batch_wait"] is None
    assert held["batch_wait"]["iters"] == 20 and held["batch_wait"]["waited_steps"] > 0
    assert held["ttft_s"] > plain["ttft_s"]
    with pytest.raises(roofline.InvalidArgument, match="TensorRT-LLM's scheduler setting"):
        roofline.serving("llama-3.1-8b", "h100", engine="vllm", batch_wait_iters=20)
    with pytest.raises(roofline.InvalidArgument, match="batch wait"):
        roofline.serving("llama-3.1-8b", "h100", engine="trtllm", batch_wait_iters=20,
                         batch_wait_ratio=1.5)


def test_serving_attention_dp_balance_holds_prompts(cli):
    # TensorRT-LLM's attention-DP balance on DeepSeek-V3 over 8 B200 (attention DP 8): prompts
    # arriving one at a time wait for every rank to have one, or for the count of 60 steps;
    # the Python result is the CLI's JSON, and SGLang has no such setting.
    case = dict(engine="trtllm", tp=8, attention_dp=8, ep=8, weights="fp8", act="fp8", isl=1024,
                osl=128, concurrency=32, rounds=2)
    plain = roofline.serving("deepseek-v3", "b200", **case)
    held = roofline.serving("deepseek-v3", "b200", adp_balance=True, adp_timeout_iters=60,
                            adp_batching_wait_iters=0, **case)
    assert plain["adp_balance"] is None
    assert held["adp_balance"]["timeout_iters"] == 60 and held["adp_balance"]["held_steps"] > 0
    assert held["ttft_s"] > plain["ttft_s"]
    doc = cli("serving", "--model", "deepseek-v3", "--hardware", "b200", "--engine", "trtllm",
              "--tp", "8", "--attention-dp", "8", "--ep", "8", "--weights", "fp8", "--act", "fp8",
              "--isl", "1024", "--osl", "128", "--concurrency", "32", "--rounds", "2",
              "--adp-balance", "--adp-timeout-iters", "60", "--adp-batching-wait-iters", "0")
    assert held["ttft_s"] == pytest.approx(doc["ttft_s"], rel=1e-12)
    assert held["adp_balance"] == doc["adp_balance"]
    with pytest.raises(roofline.InvalidArgument, match="TensorRT-LLM's scheduler setting"):
        roofline.serving("deepseek-v3", "b200", adp_balance=True,
                         **{**case, "engine": "sglang"})
    with pytest.raises(roofline.InvalidArgument, match="attention-DP balance"):
        roofline.serving("deepseek-v3", "b200", adp_balance=True, adp_timeout_iters=-1, **case)


def test_serving_receive_interval_delays_the_intake():
    # SGLang's --scheduler-recv-interval: 16 clients of random lengths wait longer for the
    # engine to take their requests in than with every step; vLLM has no such setting.
    case = dict(engine="sglang", isl=1024, osl=128, concurrency=16, rounds=3, range_ratio=0.5)
    plain = roofline.serving("llama-3.1-8b", "h100", **case)
    slow = roofline.serving("llama-3.1-8b", "h100", scheduler_recv_interval=30, **case)
    assert plain["scheduler_recv_interval"] == 0 and slow["scheduler_recv_interval"] == 30
    assert slow["recv_wait_s"] > plain["recv_wait_s"]
    with pytest.raises(roofline.InvalidArgument, match="SGLang's scheduler setting"):
        roofline.serving("llama-3.1-8b", "h100", engine="vllm", scheduler_recv_interval=30)


def test_serving_kv_memory_share_sizes_the_cache():
    # Llama-3.1-70B fp8 at TP 2 on H100s: about 35 GB of weights a GPU. vLLM's share is of the
    # whole memory, so 0.5 of 85.5 GB leaves about 7 GB of cache a GPU against about 43 GB at its
    # default 0.92 (0.92 x 85.5 - 35.8 - activations); TensorRT-LLM's is of what the weights leave,
    # so 0.5 halves its default 0.9's cache.
    case = dict(weights="fp8", act="fp8", kv="fp8", tp=2, isl=1024, osl=256, concurrency=8,
                rounds=1)
    vllm = roofline.serving("llama-3.1-70b", "h100", engine="vllm", **case)
    vllm_half = roofline.serving("llama-3.1-70b", "h100", engine="vllm", kv_memory_share=0.5,
                                 **case)
    assert not vllm["kv_memory"]["set"] and vllm_half["kv_memory"]["set"]
    assert vllm_half["kv_memory"]["share"] == 0.5 and vllm_half["kv_memory"]["of"] == "total"
    assert vllm_half["kv_cache_bytes_per_gpu"] < 0.25 * vllm["kv_cache_bytes_per_gpu"]
    trt = roofline.serving("llama-3.1-70b", "h100", engine="trtllm", **case)
    trt_half = roofline.serving("llama-3.1-70b", "h100", engine="trtllm", kv_memory_share=0.45,
                                **case)
    assert trt_half["kv_memory"]["of"] == "free"
    assert trt_half["kv_cache_bytes_per_gpu"] == pytest.approx(
        trt["kv_cache_bytes_per_gpu"] * 0.45 / trt["kv_memory"]["share"], rel=1e-9)
    with pytest.raises(roofline.InvalidArgument, match="kv memory share"):
        roofline.serving("llama-3.1-70b", "h100", engine="vllm", kv_memory_share=1.5, **case)
    with pytest.raises(roofline.Unsupported, match="does not fit"):
        roofline.serving("llama-3.1-70b", "h100", engine="vllm", kv_memory_share=0.3, **case)


def test_serving_says_what_the_profiling_pass_subtracts(cli):
    # vLLM's pass samples 1,024 rows (its limit on an H100) of Llama-3.1-8B's 128,256 logits: on
    # 0.14.0's sort path 42.2 bytes a logit, on the current release's FlashInfer kernels 14, each
    # beside the 8,192-token pass's bf16 hidden states (8,192 x 4,096 x 2 bytes). As the CLI says.
    case = dict(engine="vllm", isl=1024, osl=128, concurrency=8, rounds=1)
    hidden = 8192 * 4096 * 2
    for version, per_logit in (("0.14.0", 42.2), ("", 14.0)):
        got = roofline.serving("llama-3.1-8b", "h100", engine_version=version, **case)
        sampler = got["kv_memory"]["profile_sampler"]
        assert sampler == {"rows": 1024, "bytes_per_logit": per_logit}
        assert got["kv_memory"]["activation_bytes_per_gpu"] == pytest.approx(
            1024 * 128256 * per_logit + hidden, abs=1.0)
        args = ["serving", "--model", "llama-3.1-8b", "--hardware", "h100", "--engine", "vllm",
                "--isl", "1024", "--osl", "128", "--concurrency", "8", "--requests", "8"]
        if version:
            args += ["--engine-version", version]
        assert cli(*args)["kv_memory"] == got["kv_memory"]
    few = roofline.serving("llama-3.1-8b", "h100", max_running=64, **case)
    assert few["kv_memory"]["profile_sampler"] is None


def test_serving_bad_input_is_the_clis_error():
    with pytest.raises(roofline.InvalidArgument, match="isl"):
        roofline.serving("llama-3.1-8b", "h100", isl=0)
    with pytest.raises(roofline.Unsupported, match="does not fit"):
        roofline.serving("llama-3.1-70b", "h100")
    with pytest.raises(roofline.InvalidArgument, match="prefill ep = 3 must divide"):
        roofline.serving("deepseek-v3", "h200", mode="disagg", prefill_tp=8, decode_tp=8, prefill_ep=3)
    with pytest.raises(roofline.InvalidArgument, match="recipe must be engine, aiconfigurator or trtllm-bench"):
        roofline.serving("llama-3.1-8b", "h100", engine="vllm", recipe="dynamo")
    with pytest.raises(roofline.Unsupported, match="aiconfigurator recipe"):
        roofline.serving("llama-3.1-8b", "h100", recipe="aiconfigurator")
    with pytest.raises(roofline.Unsupported, match="give --engine trtllm"):
        roofline.serving("llama-3.1-8b", "h100", engine="vllm", recipe="trtllm-bench")


def test_search(cli):
    doc = roofline.search("llama-3.1-8b", "h100", gpus=2, tpot_max=0.02, engines=["vllm", "trtllm"],
                          concurrencies=[1, 16, 128])
    assert doc == cli("search", "--model", "llama-3.1-8b", "--hardware", "h100", "--gpus", "2",
                      "--tpot-max", "0.02", "--engines", "vllm,trtllm", "--concurrency", "1,16,128")
    assert doc["best"]["meets_targets"]
    with pytest.raises(roofline.NotFound, match="nope"):
        roofline.search("llama-3.1-8b", "h100", engines=["nope"])
    # AIConfigurator's benchmark limits in every configuration: the same doc as the CLI's.
    aic = roofline.search("llama-3.1-8b", "h100", gpus=1, engines=["vllm"], concurrencies=[4],
                          recipe="aiconfigurator")
    assert aic == cli("search", "--model", "llama-3.1-8b", "--hardware", "h100", "--gpus", "1",
                      "--engines", "vllm", "--concurrency", "4", "--recipe", "aiconfigurator")
    assert aic["recipe"] == "aiconfigurator"
    # Speculative decoding in every configuration: the same document as the CLI's, faster TPOTs.
    spec = roofline.search("llama-3.1-8b", "h100", gpus=1, engines=["vllm"], weights=["fp8"],
                           concurrencies=[1, 8], draft_tokens=3, acceptance=0.7)
    assert spec == cli("search", "--model", "llama-3.1-8b", "--hardware", "h100", "--gpus", "1",
                       "--engines", "vllm", "--weights", "fp8", "--concurrency", "1,8",
                       "--draft-tokens", "3", "--acceptance", "0.7")
    assert spec["draft_tokens"] == 3 and spec["acceptance"] == 0.7
    # Random lengths in every configuration (InferenceMAX's range ratio).
    ranged = roofline.search("llama-3.1-8b", "h100", gpus=1, engines=["vllm"], weights=["fp8"],
                             concurrencies=[8], range_ratio=0.8)
    assert ranged == cli("search", "--model", "llama-3.1-8b", "--hardware", "h100", "--gpus", "1",
                         "--engines", "vllm", "--weights", "fp8", "--concurrency", "8",
                         "--range-ratio", "0.8")
    assert ranged["isl_min"] == 819 and ranged["osl_min"] == 204
    # Prefix reuse in every configuration: a shared system prompt and a prompt pool.
    reused = roofline.search("llama-3.1-8b", "h100", gpus=1, engines=["vllm"], weights=["fp8"],
                             concurrencies=[8], shared_prefix=128, prompt_pool=4)
    assert reused == cli("search", "--model", "llama-3.1-8b", "--hardware", "h100", "--gpus", "1",
                         "--engines", "vllm", "--weights", "fp8", "--concurrency", "8",
                         "--shared-prefix", "128", "--prompt-pool", "4")
    assert reused["shared_prefix"] == 128 and reused["prompt_pool"] == 4
    # A release for one of the searched engines: the same document as the CLI's.
    dated = roofline.search("llama-3.1-8b", "h100", gpus=1, engines=["vllm", "sglang"],
                            weights=["fp8"], concurrencies=[4], engine_versions={"vllm": "0.12.0"})
    assert dated == cli("search", "--model", "llama-3.1-8b", "--hardware", "h100", "--gpus", "1",
                        "--engines", "vllm,sglang", "--weights", "fp8", "--concurrency", "4",
                        "--engine-version", "vllm=0.12.0")
    assert dated["engine_versions"] == {"vllm": "0.12.0"}
    with pytest.raises(roofline.InvalidArgument, match="does not run"):
        roofline.search("llama-3.1-8b", "h100", engines=["vllm"], engine_versions={"trtllm": "1.0"})
    assert reused["best"]["prefix_hit_rate"] > 0
    with pytest.raises(roofline.InvalidArgument, match="shared prefix"):
        roofline.search("llama-3.1-8b", "h100", shared_prefix=1024)
    with pytest.raises(roofline.InvalidArgument, match="acceptance needs draft tokens"):
        roofline.search("llama-3.1-8b", "h100", acceptance=0.7)


def test_cuda_graphs_turn_the_engines_graphs_down(cli):
    # A prompt within vLLM's captured graphs (512 tokens): its default replays graph pieces.
    case = dict(engine="vllm", weights="fp8", act="fp8", phase="prefill", seq_len=256)
    eager = roofline.predict("llama-3.1-8b", "h100", cuda_graphs="decode-only", **case)
    assert eager.to_dict() == cli("predict", "--model", "llama-3.1-8b", "--hardware", "h100",
                                  *flags(cuda_graphs="decode-only", **case))
    assert eager.time_s > roofline.predict("llama-3.1-8b", "h100", **case).time_s
    swept = roofline.sweep("llama-3.1-8b", "h100", phases="prefill", seq_lens=256, weights="fp8",
                           acts="fp8", engine="vllm", cuda_graphs="decode-only", as_frame=False)
    assert swept["time_s"][0] == pytest.approx(eager.time_s, rel=1e-12)
    load = dict(engine="vllm", weights="fp8", act="fp8", isl=512, osl=64, concurrency=4)
    off = roofline.serving("llama-3.1-8b", "h100", cuda_graphs="off", **load)
    assert off == cli("serving", "--model", "llama-3.1-8b", "--hardware", "h100",
                      *flags(cuda_graphs="off", **load))
    assert off["tpot_s"] > roofline.serving("llama-3.1-8b", "h100", **load)["tpot_s"]
    with pytest.raises(ValueError, match="cuda_graphs"):
        roofline.predict("llama-3.1-8b", "h100", cuda_graphs="none", **case)


def test_moe_kernel_prices_the_familys_measured_layers(cli):
    case = dict(engine="vllm", weights="fp8", act="fp8", tp=2, ep=2, batch=32, seq_len=1500)
    triton = roofline.predict("minimax-m2", "b200", moe_kernel="triton", **case)
    assert triton.to_dict() == cli("predict", "--model", "minimax-m2", "--hardware", "b200",
                                   *flags(moe_kernel="triton", **case))
    assert triton.time_s > roofline.predict("minimax-m2", "b200", **case).time_s
    grid = dict(batches=32, seq_lens=1500, weights="fp8", acts="fp8", tps=2, engine="vllm",
                as_frame=False)
    swept = roofline.sweep("minimax-m2", "b200", moe_kernel="triton", **grid)
    assert swept["time_s"][0] > roofline.sweep("minimax-m2", "b200", **grid)["time_s"][0]
    load = dict(engine="vllm", weights="fp8", act="fp8", tp=2, ep=2, isl=512, osl=64,
                concurrency=4)
    served = roofline.serving("minimax-m2", "b200", moe_kernel="triton", **load)
    assert served == cli("serving", "--model", "minimax-m2", "--hardware", "b200",
                         *flags(moe_kernel="triton", **load))
    with pytest.raises(ValueError, match="moe_kernel"):
        roofline.predict("minimax-m2", "b200", moe_kernel="cuda", **case)
    with pytest.raises(ValueError, match="measured: "):
        roofline.predict("minimax-m2", "h200", moe_kernel="flashinfer-trtllm", **case)


def test_engine_build_selects_the_builds_path(cli):
    case = dict(engine="llama.cpp", weights="q4_k_m", act="fp16", phase="prefill", seq_len=512)
    old = roofline.predict("llama-3.1-8b", "a100", engine_build="2024-05", **case)
    assert old.to_dict() == cli("predict", "--model", "llama-3.1-8b", "--hardware", "a100",
                                *flags(engine_build="2024-05", **case))
    assert old.time_s > roofline.predict("llama-3.1-8b", "a100", **case).time_s
    with pytest.raises(ValueError, match="engine_build"):
        roofline.predict("llama-3.1-8b", "a100", engine_build="2024-13", **case)
    # The other functions with an engine take it too, as the CLI's commands do.
    # (what fits does not depend on the build)
    assert roofline.capacity("llama-3.1-8b", "a100", engine_build="2024-05", **case) == \
        roofline.capacity("llama-3.1-8b", "a100", **case)
    s = dict(engine="llama.cpp", weights="q4_k_m", act="fp16", isl=512, osl=8, concurrency=1)
    assert roofline.serving("llama-3.1-8b", "a100", engine_build="2024-05", **s)["ttft_s"] > \
        roofline.serving("llama-3.1-8b", "a100", **s)["ttft_s"]
    # The sweep's rows follow it too: its one row is the dated prediction (full precision).
    np = pytest.importorskip("numpy")
    row = roofline.sweep("llama-3.1-8b", "a100", phases="prefill", seq_lens=512, weights="q4_k_m",
                         acts="fp16", engine="llama.cpp", engine_build="2024-05", as_frame=False)
    assert np.isclose(row["time_s"][0], old.time_s, rtol=1e-12)
    with pytest.raises(ValueError, match="engine_build"):
        roofline.sweep("llama-3.1-8b", "a100", engine="llama.cpp", engine_build="2024-02-30")


def test_sparse_attention_runs_on_the_engines_flashmla_kernels(cli):
    # DeepSeek-V3.2 at TP 8 on vLLM: 16 heads a rank, run as 64 on FlashMLA's decode kernel over
    # all 2,048 top-k slots, prompts absorbed (576/512 a head): 2 x 4096 x 64 x 2048 x 576 FLOPs.
    case = dict(engine="vllm", weights="fp8", act="fp8", kv="fp8", tp=8, phase="prefill",
                seq_len=4096, per_op=True)
    sparse = roofline.predict("deepseek-v3.2", "h200", **case)
    assert sparse.to_dict() == cli("predict", "--model", "deepseek-v3.2", "--hardware", "h200",
                                   *flags(**case))
    qk = next(op for op in sparse.to_dict()["ops"] if op["name"].startswith("qk_matmul"))
    assert qk["efficiency_source"] == "engine"
    assert qk["count"] == 3  # the three dense layers; the MoE layers' op follows
    assert qk["flops"] == pytest.approx(3 * 2 * 4096 * 64 * 2048 * 576, rel=1e-12)
    assert qk["efficiency"] == pytest.approx(0.414)
    reference = roofline.predict("deepseek-v3.2", "h200",
                                 **{k: v for k, v in case.items() if k != "engine"})
    assert sparse.time_s > reference.time_s
    profile = cli("engines", "show", "vllm")["sparse_mla"]
    assert [(p["architecture"], p["kv"]) for p in profile["paths"]] == [
        ("hopper", "fp8"), ("hopper", "bf16"), ("blackwell", "fp8"), ("blackwell", "bf16")]
    assert profile["paths"][0]["decode"]["head_tile"]["value"] == 64


def test_engine_version_follows_the_release(cli):
    # vLLM 0.11.0's Triton attention on an A100 masks gpt-oss's sliding windows
    # in its split-KV kernel (data/engines/vllm.json window_masking).
    case = dict(engine="vllm", seq_len=32768)
    old = roofline.predict("gpt-oss-20b", "a100", engine_version="0.11.0", **case)
    assert old.to_dict() == cli("predict", "--model", "gpt-oss-20b", "--hardware", "a100",
                                *flags(engine_version="0.11.0", **case))
    assert old.time_s > roofline.predict("gpt-oss-20b", "a100", **case).time_s
    assert roofline.predict("gpt-oss-20b", "a100", engine_version="0.14.0", **case).time_s == \
        roofline.predict("gpt-oss-20b", "a100", **case).time_s
    assert roofline.recommend("gpt-oss-20b", "a100", engine="vllm", seq_len=32768,
                              engine_version="0.11.0") != \
        roofline.recommend("gpt-oss-20b", "a100", engine="vllm", seq_len=32768)
    with pytest.raises(ValueError, match="engine_version"):
        roofline.predict("gpt-oss-20b", "a100", engine_version="0.11.0 beta!", **case)
    # The sweep's rows follow it too: its one row is the release's prediction (full precision).
    np = pytest.importorskip("numpy")
    row = roofline.sweep("gpt-oss-20b", "a100", seq_lens=32768, engine="vllm", engine_version="0.11.0",
                         as_frame=False)
    assert np.isclose(row["time_s"][0], old.time_s, rtol=1e-12)
    with pytest.raises(ValueError, match="engine_version"):
        roofline.sweep("gpt-oss-20b", "a100", engine="vllm", engine_version="0.11 beta!")

