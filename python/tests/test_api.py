"""The Pythonic API: the CLI's JSON fields, errors, numpy quantizers, checkpoints."""

import json
import struct

import numpy as np
import pytest

import roofline


def test_constants_and_aliases():
    assert roofline.BLACKWELL_B10.id == "gb10"
    assert roofline.get_hardware("h100").id == "h100-sxm"
    assert roofline.H100_SXM.peaks["fp16"] == pytest.approx(989.4e12)
    assert roofline.BLACKWELL_B10.bandwidth_Bps == pytest.approx(273e9)
    assert "nvfp4" in roofline.B200.tensor_formats
    assert "gb10" in roofline.hardware_ids()


def test_predict_has_the_cli_fields():
    p = roofline.predict("llama-3.1-8b", "h100", phase="decode", batch=1, seq_len=512, per_op=True)
    for key in ("time_s", "tokens_per_s", "bound", "flops", "bytes", "memory", "ops"):
        assert key in p
    assert p["bound"] == "memory"
    assert len(p["ops"]) == 20
    assert sum(op["time_s"] for op in p["ops"]) == pytest.approx(p["time_s"])


def test_linear_attention_ops_and_state():
    # Qwen3.5: 45 Gated DeltaNet layers of 60; the delta rule's ops carry the
    # recurrent state (decode), the model's JSON describes it.
    p = roofline.predict("qwen3.5-397b-a17b", "b200", batch=8, seq_len=1000, tp=4, per_op=True)
    rules = [op for op in p["ops"] if op["name"] == "delta_rule"]
    assert len(rules) == 1 and rules[0]["count"] == 45 and rules[0]["linear_layer"]
    m = roofline.model("qwen3.5-397b-a17b")
    assert m["architecture"]["linear_attention"]["layers"] == 45
    assert m["architecture"]["linear_attention"]["state_format"] == "fp32"


def test_generate_and_recommend():
    g = roofline.generate("llama-3.1-8b", roofline.H100_SXM, prompt=512, gen=64)
    assert g["e2e_s"] == pytest.approx(g["ttft_s"] + 63 * g["tpot_s"])
    r = roofline.recommend("llama-3.1-8b", "h100", phase="decode", seq_len=131072, batch=8)
    assert r["strategy"] == "long_context_kv"
    assert {"predicted_speedup", "memory_saving", "quality_loss_pct", "alternatives"} <= set(r)


def test_sweep_columns():
    cols = roofline.sweep(["llama-3.1-8b", "qwen2.5-7b"], ["h100", "gb10"], batches=[1, 8], seq_lens=[512, 4096],
                          as_frame=False)
    assert len(cols["time_s"]) == 2 * 2 * 2 * 2
    assert (cols["time_s"] > 0).all()
    plans = roofline.sweep(["llama-3.1-8b"], ["h100"], strategies=["fp8_balanced", "int4_weight_only"], as_frame=False)
    assert list(plans["strategy"]) == ["fp8_balanced", "int4_weight_only"]


def test_errors_are_python_exceptions_with_the_library_message():
    with pytest.raises(roofline.NotFound, match="unknown device 'h9000'"):
        roofline.get_hardware("h9000")
    with pytest.raises(ValueError, match="batch"):
        roofline.predict("llama-3.1-8b", "h100", batch=0)
    with pytest.raises(roofline.Unsupported, match="fa3 does not run"):
        roofline.predict("llama-3.1-8b", "a100", attention="fa3")
    with pytest.raises(ValueError):
        roofline.model({"H": 4096, "L": 32, "nh": 32, "nkv": 5, "dh": 128, "dff": 14336})


def test_every_library_error_is_a_roofline_error_and_its_builtin_kind():
    # One except clause catches them all; the built-in kinds still work.
    for call, builtin in [(lambda: roofline.get_hardware("h9000"), LookupError),
                          (lambda: roofline.predict("llama-3.1-8b", "h100", batch=0), ValueError),
                          (lambda: roofline.predict("llama-3.1-8b", "a100", attention="fa3"), RuntimeError)]:
        with pytest.raises(roofline.RooflineError) as caught:
            call()
        assert isinstance(caught.value, builtin)
    assert issubclass(roofline.InvalidArgument, roofline.RooflineError)
    assert issubclass(roofline.NotFound, LookupError)
    assert issubclass(roofline.ParseError, ValueError)


def test_quantize_array_round_trip():
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.02, size=(64, 256)).astype(np.float32)
    back, err = roofline.quantize_array(w, "fp8")
    assert back.shape == w.shape and back.dtype == np.float32
    assert err["sqnr_db"] > 28  # e4m3 keeps ~31 dB on Gaussian data
    back4, err4 = roofline.quantize_array(w, "nvfp4")
    assert err4["sqnr_db"] < err["sqnr_db"]
    # e4m3 rounds to 3 mantissa bits: at most half an ulp, 2^-4 relative, on
    # normals; below them the step is the scale (amax / 448) times 2^-9.
    scale = np.abs(w).max() / 448
    assert np.all(np.abs(back - w) <= np.abs(w) * 2**-4 + scale * 2**-10 * 1.001)
    with pytest.raises(ValueError):
        roofline.quantize_array(np.array([1.0, np.nan], dtype=np.float32), "fp8")


def test_analyze_array_finds_planted_outliers():
    rng = np.random.default_rng(1)
    w = rng.normal(0, 0.02, size=(128, 256)).astype(np.float32)
    w[:, [5, 77]] *= 60
    r = roofline.analyze_array(w)
    assert r["outlier_channels"] == [5, 77]


def test_quantize_checkpoint(tmp_path):
    w = np.random.default_rng(2).normal(0, 0.02, size=(16, 32)).astype(np.float32)
    header = json.dumps({"w": {"dtype": "F32", "shape": [16, 32], "data_offsets": [0, w.nbytes]}}).encode()
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + w.tobytes())
    doc = roofline.quantize(path)
    assert doc["checkpoint"] == str(path) and doc["budget_sqnr_db"] == 25
    assert len(doc["tensors"]) == 1
    assert doc["tensors"][0]["shape"] == [16, 32]
    assert doc["tensors"][0]["errors"]
    assert doc["tensors"][0]["plan"]["format"] in {f["id"] for f in roofline.formats()}


def test_model_from_config_dict():
    m = roofline.model({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                        "vocab_size": 128256})
    assert m["params"] == 8_030_261_248


def test_engines_are_listed_and_change_the_prediction():
    ids = [e["id"] for e in roofline.engines()]
    assert ids[0] == "roofline" and "vllm" in ids and "llama.cpp" in ids
    reference = roofline.predict("llama-3.1-8b", "h200", per_op=True)
    vllm = roofline.predict("llama-3.1-8b", "h200", engine="vllm", per_op=True)
    assert reference["engine"]["id"] == "roofline"
    assert vllm["engine"] == {"id": "vllm", "gemm_table": "h200-vllm", "gemm_table_source": "measured-table",
                              "attention_table": "h200-vllm",
                              "attention_table_source": "measured-attention-table",
                              "step_overhead_s": 0.0, "latent_cache_cast_s": 0.0,
                              "cuda_graphs": True, "past_captured_graphs": False,
                              "host_dispatch_s": 0.0, "host_wait_s": 0.0}
    # Every matmul of the vLLM prediction takes its efficiency from the measured table.
    sources = {op["efficiency_source"] for op in vllm["ops"] if op["kind"] == "matmul"}
    assert sources == {"measured-table"}
    assert vllm["time_s"] != reference["time_s"]
    with pytest.raises(LookupError):
        roofline.predict("llama-3.1-8b", "h200", engine="nope")


def test_format_names_mean_the_same_everywhere():
    for name in ("FP8 E4M3", "fp8_e4m3", "fp8-e4m3", "E4M3", "fp8", "float8_e4m3fn"):
        assert roofline.canonical_format(name) == "fp8", name
    assert roofline.canonical_format("NVFP4") == "nvfp4"
    assert roofline.canonical_format("Q4-K-M") == "q4_k_m"
    # "fp8-e4m3" used to run weight-only (its name was not a peak's key) while "fp8" ran W8A8.
    calc = roofline.RooflineCalculator("h100")
    a = calc.predict_gemm(16, 4096, 4096, precision="fp8-e4m3")
    b = calc.predict_gemm(16, 4096, 4096, precision="FP8 E4M3")
    c = calc.predict_gemm(16, 4096, 4096, precision="fp8")
    assert a["time_s"] == b["time_s"] == c["time_s"]
    assert a["weight_only"] is False
    with pytest.raises(LookupError):
        roofline.canonical_format("fp7")
