"""predict() and generate() results: the document's fields as attributes and
items, the whole document from to_dict(), errors and argument forms."""

from collections.abc import Mapping

import numpy as np
import pytest

import roofline


def test_a_prediction_reads_like_its_document():
    p = roofline.predict("llama-3.1-8b", "h100", seq_len=8192, batch=4)
    doc = p.to_dict()
    assert isinstance(p, Mapping) and isinstance(p, roofline.Prediction)
    assert sorted(p.keys()) == sorted(doc) and len(p) == len(doc) and dict(p) == doc
    for key, value in doc.items():
        assert p[key] == value, key
        assert getattr(p, key) == value, key
        assert key in p
    assert "ops" not in p and p.get("ops", "absent") == "absent"
    with pytest.raises(KeyError):
        p["no such field"]
    # The DESIGN.md fields.
    assert p.bound == "memory" and p.memory["fits"] is True
    assert {"weights_bytes", "kv_cache_bytes", "activation_bytes", "total_bytes", "fits"} <= set(p.memory)
    assert p.tokens_per_s == pytest.approx(4 / p.time_s)
    assert p.scenario["batch"] == 4 and p.scenario["hardware"] == "h100-sxm"
    assert p.strategy is None and p.distinct_experts_per_layer is None
    assert "h100-sxm" in repr(p) and "time_s=" in repr(p)
    assert p.track_record == []  # the reference engine is measured by no published case
    mi = roofline.predict("llama-3.1-70b", "mi300x", tp=8, weights="fp8", engine="vllm")
    (record,) = mi.track_record
    assert record["scope"] == "device" and record["kind"] == "generation" and record["cases"] >= 3
    assert mi.notes[-1].startswith("track record (roofline validate): vLLM on the AMD Instinct MI300X")


def test_ops_are_an_attribute_and_an_item_with_per_op():
    p = roofline.predict("llama-3.1-8b", "h100")
    q = roofline.predict("llama-3.1-8b", "h100", per_op=True)
    assert p.ops == q["ops"] == q.to_dict()["ops"]
    assert sum(op["time_s"] for op in q.ops) == pytest.approx(q.time_s)
    for op in q.ops:
        assert {"name", "kind", "count", "flops", "bytes", "ai", "bound", "time_s"} <= set(op)


def test_optional_fields_appear_when_the_document_has_them():
    moe = roofline.predict("mixtral-8x7b", "h200", strategy="fp8_balanced", batch=8)
    doc = moe.to_dict()
    assert moe["strategy"] == doc["strategy"] == "fp8_balanced"
    assert moe.distinct_experts_per_layer == doc["distinct_experts_per_layer"] > 2


def test_a_generation_reads_like_its_document():
    g = roofline.generate("llama-3.1-8b", roofline.H100_SXM, prompt=512, gen=64)
    doc = g.to_dict()
    assert isinstance(g, Mapping) and dict(g) == doc
    for key, value in doc.items():
        assert g[key] == value and getattr(g, key) == value, key
    assert g.e2e_s == pytest.approx(g.ttft_s + 63 * g.tpot_s)
    assert g.scenario["prompt"] == 512 and g.scenario["gen"] == 64
    assert "ttft_s=" in repr(g)
    # The reference engine has no track record; a measured engine quotes one a kind.
    assert g.track_record == [] and g.notes == []
    served = roofline.generate("llama-3.1-8b", roofline.H100_SXM, prompt=512, gen=64, engine="vllm")
    assert [t["kind"] for t in served.track_record] == ["prompt", "generation"]
    assert all(n.startswith("track record (roofline validate): vLLM") for n in served.notes)
    assert g.ttft_recomputed_s is None and g.scenario["cached"] == 0
    # A follow-up turn after 8,000 cached tokens, and the same turn without a prefix cache.
    turn = roofline.generate("llama-3.1-8b", roofline.H100_SXM, prompt=512, gen=64, cached=8000)
    assert turn.scenario["cached"] == 8000 and turn.ttft_s > g.ttft_s
    fresh = roofline.predict("llama-3.1-8b", roofline.H100_SXM, phase="prefill", seq_len=8512)
    assert turn.ttft_recomputed_s == fresh.time_s > turn.ttft_s


def test_models_and_devices_in_every_form(tmp_path):
    short = {"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336}
    by_dict = roofline.predict(short, "h100")
    assert by_dict.scenario["model"] == "custom"
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, '
                      '"num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, '
                      '"vocab_size": 128256}')
    assert roofline.predict(config, "h100").time_s == roofline.predict(str(config), "h100").time_s
    # Presets by id or alias, in any case; devices by id, alias or Hardware.
    a = roofline.predict("llama-3.1-8b", "h100").time_s
    assert roofline.predict("LLAMA-3.1-8B", "H100").time_s == a
    assert roofline.predict("llama-3.1-8b", roofline.get_hardware("h100-sxm")).time_s == a
    with pytest.raises(ValueError, match="model must be"):
        roofline.predict(42, "h100")
    with pytest.raises(ValueError, match="hardware must be"):
        roofline.predict("llama-3.1-8b", 42)


def test_scenario_arguments_are_keywords():
    with pytest.raises(TypeError):
        roofline.predict("llama-3.1-8b", "h100", "decode")  # phase= is a keyword


def test_sweep_columns_in_both_forms():
    pandas = pytest.importorskip("pandas")
    frame = roofline.sweep(["llama-3.1-8b", "qwen2.5-7b"], ["h100", "gb10"], batches=[1, 8], seq_lens=[512, 4096],
                           tps=[1, 3])
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 2 * 2 * 2 * 2 * 2
    assert str(frame["model"].dtype) == "category" and frame["time_s"].dtype == "float64"
    assert list(frame["model"].cat.categories) == ["llama-3.1-8b", "qwen2.5-7b"]
    columns = roofline.sweep(["llama-3.1-8b", "qwen2.5-7b"], ["h100", "gb10"], batches=[1, 8], seq_lens=[512, 4096],
                             tps=[1, 3], as_frame=False)
    assert isinstance(columns, dict) and list(columns) == list(frame.columns)
    for name, col in columns.items():
        if col.dtype == object:  # text: None where the frame has NaN
            assert [None if pandas.isna(v) else v for v in frame[name].astype(object)] == list(col), name
        else:
            np.testing.assert_array_equal(frame[name].to_numpy(), col)
    ok = frame["error"].isna()
    assert ok.sum() == len(frame) // 2 and (frame["time_s"][ok] > 0).all() and frame["time_s"][~ok].isna().all()
    # One value or a list, ints of any kind; a fraction is not a batch size.
    one = roofline.sweep("llama-3.1-8b", roofline.H100_SXM, batches=np.array([1, 2]), as_frame=False)
    assert list(one["batch"]) == [1, 2] and list(one["hardware"]) == ["h100-sxm"] * 2
    with pytest.raises(TypeError):
        roofline.sweep("llama-3.1-8b", "h100", batches=[1.5])
    with pytest.raises(ValueError, match="batches"):
        roofline.sweep("llama-3.1-8b", "h100", batches=[0])
    with pytest.raises(ValueError, match="strategies set the formats"):
        roofline.sweep("llama-3.1-8b", "h100", strategies=["fp8_balanced"], weights=["fp8"])
    with pytest.raises(ValueError, match="combinations"):
        roofline.sweep("llama-3.1-8b", "h100", batches=range(1, 1001), seq_lens=range(1, 100_001))


def test_sweep_without_errors_has_an_empty_error_column():
    cols = roofline.sweep("llama-3.1-8b", "h100", as_frame=False)
    assert list(cols["error"]) == [None] and cols["fits"].dtype == bool
