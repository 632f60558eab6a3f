"""The original description's Python snippets, changed only in their import
lines: `src.` dropped, and benchmarks.kernel_shell is roofline.kernel_shell."""

import pytest


def test_basic_roofline_prediction(capsys):
    from roofline import RooflineCalculator, get_hardware

    calc = RooflineCalculator(get_hardware("b10"))
    result = calc.predict_gemv(N=4096, K=4096, precision="FP16")

    print(f"Time: {result['predicted_time_us']:.1f} µs")
    print(f"Bottleneck: {result['bottleneck']}")  # memory/compute
    print(f"AI: {result['ai']:.2f} FLOP/byte")

    out = capsys.readouterr().out
    assert "Bottleneck: memory" in out
    # 33,570,816 B at 273 GB/s x 0.852 achievable = 144.3 us, + 4 us launch.
    assert result["predicted_time_us"] == pytest.approx(148.3, abs=0.5)
    assert result["ai"] == pytest.approx(0.9995, abs=1e-4)


def test_quantization_recommendation(capsys):
    from roofline.quantization_integration import IntegratedQuantizationEngine
    from roofline.hardware_registry import BLACKWELL_B10

    engine = IntegratedQuantizationEngine(BLACKWELL_B10)

    # Llama-3 8B decode @ 4K context
    rec = engine.recommend(
        model_config={"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336},
        phase="decode",
        seq_len=4096
    )
    print(f"Strategy: {rec.config.strategy_name}, Speedup: {rec.predicted_speedup:.2f}x")

    out = capsys.readouterr().out
    assert out.startswith("Strategy: fp8_balanced, Speedup: 1.")
    assert rec.attention == "flash-decoding"
    assert rec.rationale


def test_quick_start_one_liner(capsys):
    from roofline.quantization_integration import IntegratedQuantizationEngine; \
        from roofline.hardware_registry import BLACKWELL_B10; \
        engine = IntegratedQuantizationEngine(BLACKWELL_B10); \
        rec = engine.recommend({'H': 4096, 'L': 32, 'nh': 32, 'nkv': 8, 'dh': 128, 'dff': 14336}, phase='decode', seq_len=4096); \
        print(f'Strategy: {rec.config.strategy_name}, Speedup: {rec.predicted_speedup:.2f}x')
    assert "Strategy: " in capsys.readouterr().out


def test_gpu_benchmark_needs_cuda():
    from roofline.kernel_shell import GEMMKernel

    kernel = GEMMKernel(M=1, N=4096, K=4096, precision="NVFP4")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        kernel.benchmark()


def test_calculator_shell_runs_as_a_script(capsys):
    from roofline import calculator_shell

    assert calculator_shell.main(["gb10"]) == 0
    out = capsys.readouterr().out
    assert "GB10" in out and "gate/up" in out and "NVFP4" in out
