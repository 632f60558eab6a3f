"""roofline.sweep_gemm: GEMM-shape sweeps (issue #13 item 5)."""

import numpy as np
import pytest

import roofline


def test_one_row_per_combination_in_order():
    rows = roofline.sweep_gemm(m=[1, 16, 256], n=4096, k=[4096, 14336], weights=["bf16", "fp8"],
                               acts="bf16", hardware=["h100", "gb10"])
    assert len(rows) == 2 * 3 * 1 * 2 * 2 * 1
    assert [r["hardware"] for r in rows[:12]] == ["h100-sxm"] * 12
    assert [(r["m"], r["k"], r["weights"]) for r in rows[:4]] == [
        (1, 4096, "bf16"), (1, 4096, "fp8"), (1, 14336, "bf16"), (1, 14336, "fp8")]
    assert all(r["time_s"] > 0 and r["attained_flops_per_s"] > 0 for r in rows)
    assert rows[0]["bound"] == "memory"


def test_golden_gemm_and_single_gemm_agreement():
    # 4096^3 bf16 on the H100 SXM, ideal: 2 * 4096^3 = 137,438,953,472 FLOPs at 989.4 TFLOP/s
    # = 138.911 us; 3 * 4096^2 * 2 = 100,663,296 bytes; AI 4096/3; compute bound.
    (row,) = roofline.sweep_gemm(4096, 4096, 4096, "bf16", "bf16", roofline.H100_SXM, ideal=True)
    assert row["mode"] == "ideal"
    assert row["bound"] == "compute"
    assert row["flops"] == pytest.approx(2 * 4096**3, rel=5e-6)
    assert row["bytes"] == pytest.approx(3 * 4096**2 * 2, rel=5e-6)
    assert row["ai"] == pytest.approx(4096 / 3, rel=5e-6)
    assert row["time_s"] == pytest.approx(2 * 4096**3 / 989.4e12, rel=5e-6)
    # numpy integers are dimensions too.
    (same,) = roofline.sweep_gemm(np.int64(4096), [4096], (4096,), "bf16", "bf16", "h100",
                                  ideal=True)
    assert same == row


def test_error_rows_and_bad_input():
    (row,) = roofline.sweep_gemm(1, 4096, 4096, acts="fp8", hardware="a100")
    assert "cannot compute in fp8" in row["error"]
    with pytest.raises(roofline.InvalidArgument, match="m: 0 is not a GEMM dimension"):
        roofline.sweep_gemm(0, 4096, 4096)
    with pytest.raises(ValueError, match="k: -1"):
        roofline.sweep_gemm(1, 4096, -1)
    with pytest.raises(roofline.InvalidArgument, match="at least one value"):
        roofline.sweep_gemm([], 4096, 4096)
    with pytest.raises(roofline.InvalidArgument, match="storage-only"):
        roofline.sweep_gemm(1, 4096, 4096, acts="q4_0")
    with pytest.raises(roofline.NotFound, match="unknown format 'fp7'"):
        roofline.sweep_gemm(1, 4096, 4096, weights="fp7")
    with pytest.raises(roofline.NotFound, match="unknown device 'h9000'"):
        roofline.sweep_gemm(1, 4096, 4096, hardware="h9000")
    with pytest.raises(roofline.InvalidArgument, match="more than 1000000 combinations"):
        roofline.sweep_gemm(range(1, 1001), range(1, 1001), [1, 2])
    with pytest.raises(TypeError):
        roofline.sweep_gemm(1.5, 4096, 4096)  # a fraction is not a dimension
