"""scripts/distill-kernel-tables counts a measured MoE row's experts and pairs the way predictions
count a layer's: its figures here are the C++ tests' hand-derived ones (predict_test.cpp
ExpertParallel.TheBusiestGroupSetsTheStep), so the distilled efficiencies and the predictions
that read them stay on one roofline."""

import importlib.machinery
import importlib.util
import math
import os
import statistics

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "distill-kernel-tables")


@pytest.fixture(scope="module")
def distill():
    loader = importlib.machinery.SourceFileLoader("distill_kernel_tables", SCRIPT)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_expected_max_normal_follows_harters_table(distill):
    # Harter (1961): E[max of 8 standard normals] = 1.4236; 3 sits linear in log2 between 2 and 4.
    assert distill.expected_max_normal(1) == 0
    assert distill.expected_max_normal(8) == pytest.approx(1.4236, abs=1e-12)
    f = math.log2(3) - 1
    assert distill.expected_max_normal(3) == pytest.approx(0.5642 + f * (1.0294 - 0.5642), abs=1e-12)


def test_busiest_group_matches_the_predictors_count(distill):
    # DeepSeek-V3 (256 experts, top 8), 16 tokens over 8 groups: 128 pairs, 16 a group, the busiest
    # 1.4236 binomial spreads above; 256 (1 - (1 - 8/256)^16) experts touched, the busiest group's
    # share of its 32 likewise: 16.69.
    experts, pairs = distill.busiest_group_routing(16, 256, 8, 8)
    assert pairs == pytest.approx(16 + 1.4236 * math.sqrt(128 / 8 * 7 / 8), abs=1e-9)
    assert experts == pytest.approx(16.69, abs=0.01)
    # Without expert parallelism: every pair, and uniform routing's distinct experts.
    experts, pairs = distill.busiest_group_routing(16, 256, 8, 1)
    assert pairs == 128
    assert experts == pytest.approx(256 * (1 - (1 - 8 / 256) ** 16), abs=1e-9)
    # Qwen3-235B-A22B (128 experts, top 8), 4 tokens over 4 groups: 8 + 1.0294 sqrt(6) pairs and
    # 9.72 of the group's 32 experts, what `roofline predict` reports for TP 4 / EP 4.
    experts, pairs = distill.busiest_group_routing(4, 128, 8, 4)
    assert pairs == pytest.approx(8 + 1.0294 * math.sqrt(6), abs=1e-9)
    assert experts == pytest.approx(9.72, abs=0.01)


def test_balanced_routing_gives_rank_zero_its_even_share(distill):
    # The collector's balanced logits send token t to experts t E / (k T) + i E / k at a few tokens:
    # Qwen3-235B at 4 tokens, EP 4, rank 0 holding experts 0-31: two picks a token (0 and 16 for
    # token 0, ..., 12 and 28 for token 3), 8 experts and 8 pairs, a quarter of the 32.
    assert distill.balanced_routing(4, 128, 8, 32) == (8, 8)
    # DeepSeek-V3 at 4 tokens, EP 8, rank 0 holding 0-31: one pick a token (experts 0, 8, 16, 24).
    assert distill.balanced_routing(4, 256, 8, 32) == (4, 4)
    # The whole layer: every pick on a distinct expert.
    assert distill.balanced_routing(4, 128, 8) == (32, 32)


def layer_row(distribution, ep, latency_ms, tokens=4, kernel="moe_torch_flow_cutlass"):
    return {"num_tokens": str(tokens), "hidden_size": "4096", "inter_size": "1536", "topk": "8",
            "num_experts": "128", "moe_tp_size": "1", "moe_ep_size": str(ep),
            "distribution": distribution, "kernel_source": kernel, "latency": str(latency_ms)}


def test_a_power_law_expert_parallel_row_is_the_busiest_groups_layer(distill):
    # Qwen3-235B's fp8 layer at 4 tokens, EP 4, timed at 0.1 ms on a device of 1e15 FLOP/s and
    # 3e12 B/s: its efficiency is against the busiest group's roofline, 9.72 experts of 3 fp8
    # matrices 4096 x 1536 and the 4 tokens' fp8 input and 16-bit output; memory-bound.
    peak, bandwidth = 1e15, 3e12
    eff, weights, skewed = distill.moe_row_efficiency(layer_row("power_law_1.01", 4, 0.1), 8, 8, peak,
                                                       bandwidth)
    experts, pairs = distill.busiest_group_routing(4, 128, 8, 4)
    assert skewed
    assert weights == pytest.approx(experts * 3 * 4096 * 1536)
    ideal = max(2 * pairs * 3 * 4096 * 1536 / peak, (weights + 4 * 4096 * 3) / bandwidth)
    assert eff == pytest.approx(ideal / 1e-4)
    # The balanced row of the same layout is rank 0's even share: 8 experts.
    _, weights, skewed = distill.moe_row_efficiency(layer_row("balanced", 4, 0.1), 8, 8, peak, bandwidth)
    assert not skewed
    assert weights == 8 * 3 * 4096 * 1536


def test_shapes_take_power_law_rows_with_expert_parallelism_and_balanced_rows_without(distill):
    peak, bandwidth = 1e15, 3e12
    rows = [layer_row("balanced", 1, 0.3), layer_row("power_law_1.01", 1, 0.2),
            layer_row("balanced", 4, 0.05), layer_row("power_law_1.01", 4, 0.1),
            layer_row("power_law_1.01", 8, 0.1)]
    shapes = {tuple(s[:6]): s for s in distill.moe_shapes(rows, 8, 8, peak, bandwidth)}
    assert set(shapes) == {(4096, 1536, 128, 8, 1, 1), (4096, 1536, 128, 8, 1, 4), (4096, 1536, 128, 8, 1, 8)}
    ep4 = distill.moe_row_efficiency(rows[3], 8, 8, peak, bandwidth)[0]
    assert shapes[(4096, 1536, 128, 8, 1, 4)][6:] == [2, [float(f"{ep4:.3g}")]]
    tp = distill.moe_row_efficiency(rows[0], 8, 8, peak, bandwidth)[0]
    assert shapes[(4096, 1536, 128, 8, 1, 1)][7] == [float(f"{tp:.3g}")]
    # A layout timed on the min-latency path, whose gate re-routes the logits, is left out; a
    # busiest rank faster than the busiest group's roofline is held at it.
    rows[4]["kernel_source"] = distill.MIN_LATENCY_KERNEL
    fast = layer_row("power_law_1.01", 4, 1e-6)
    shapes = {tuple(s[:6]): s for s in distill.moe_shapes(rows[:4] + [rows[4], fast], 8, 8, peak,
                                                           bandwidth)}
    assert (4096, 1536, 128, 8, 1, 8) not in shapes
    assert shapes[(4096, 1536, 128, 8, 1, 4)][7] == [float(f"{statistics.median([ep4, 1.0]):.3g}")]
