"""Roofline: predict, explain and measure transformer inference speed on GPUs.

The C++ core does the work (``roofline._roofline``); this package offers the
original description's API on top of it, plus Pythonic functions that return
the same JSON documents as the ``roofline`` command.

    >>> from roofline import RooflineCalculator, get_hardware
    >>> calc = RooflineCalculator(get_hardware("b10"))
    >>> calc.predict_gemv(N=4096, K=4096, precision="FP16")["bottleneck"]
    'memory'
"""

from types import SimpleNamespace

from . import _roofline as _core
from ._roofline import InvalidArgument, NotFound, ParseError, RooflineError, Unsupported

__version__ = _core.version()

__all__ = [
    "Hardware", "get_hardware", "hardware_ids", "RooflineCalculator", "IntegratedQuantizationEngine",
    "Recommendation", "GEMMKernel", "predict", "generate", "recommend", "sweep", "quantize",
    "quantize_array", "analyze_array", "formats", "models", "model",
    "RooflineError", "InvalidArgument", "NotFound", "ParseError", "Unsupported",
]


class Hardware:
    """A device of the registry: every figure with its source (``.data``)."""

    def __init__(self, data):
        self.data = data
        self.id = data["id"]
        self.name = data["name"]
        self.bandwidth_Bps = data["bandwidth_Bps"]
        self.memory_bytes = data["memory"]["capacity_bytes"]["value"]
        self.peaks = {k: v["value"] for k, v in data["peaks"].items()}
        self.tensor_formats = data["tensor_formats"]

    def __repr__(self):
        return f"Hardware({self.id!r}, {self.bandwidth_Bps / 1e9:.0f} GB/s)"


def get_hardware(alias):
    """The device with this id or alias ("b10", "h100", "4090", ...)."""
    return Hardware(_core.hardware(alias))


def hardware_ids():
    return _core.hardware_ids()


def _device_id(hardware):
    return hardware.id if isinstance(hardware, Hardware) else str(hardware)


# Device constants of the original description.
BLACKWELL_B10 = get_hardware("gb10")
GB10 = BLACKWELL_B10
B200 = get_hardware("b200")
GB200 = get_hardware("gb200")
B300 = get_hardware("b300")
H100_SXM = get_hardware("h100-sxm")
H100_PCIE = get_hardware("h100-pcie")
H200 = get_hardware("h200")
H20 = get_hardware("h20")
A100_80GB = get_hardware("a100-80gb")
A100_40GB = get_hardware("a100-40gb")
L40S = get_hardware("l40s")
L4 = get_hardware("l4")
RTX_4090 = get_hardware("rtx-4090")
RTX_5090 = get_hardware("rtx-5090")
RTX_PRO_6000 = get_hardware("rtx-pro-6000")
MI300X = get_hardware("mi300x")
MI325X = get_hardware("mi325x")
MI355X = get_hardware("mi355x")


class RooflineCalculator:
    """GEMM and GEMV rooflines on one device (realistic mode unless ``ideal``)."""

    def __init__(self, hardware, ideal=False):
        self.hardware = hardware if isinstance(hardware, Hardware) else get_hardware(hardware)
        self.ideal = ideal

    def _formats(self, precision, weights, act):
        # Canonical ids first, so that "fp8-e4m3", "FP8 E4M3" and "fp8" mean the same W8A8 GEMM.
        fmt = _core.canonical_format(precision)
        w = _core.canonical_format(weights or fmt)
        a = _core.canonical_format(act or fmt)
        if act is None and a not in self.hardware.peaks:
            a = "fp16"  # a weight-only format: the math runs in fp16
        return w, a

    def predict_gemm(self, M, N, K, precision="FP16", weights=None, act=None):
        """C[M,N] = A[M,K] B[K,N]: the gemm fields plus predicted_time_us, bottleneck."""
        w, a = self._formats(precision, weights, act)
        r = _core.gemm(self.hardware.id, M, N, K, w, a, self.ideal)
        r["predicted_time_us"] = r["time_s"] * 1e6
        r["bottleneck"] = r["bound"]
        return r

    def predict_gemv(self, N, K, precision="FP16", weights=None, act=None):
        """A GEMV (M = 1): a decode step's linear layer at batch 1."""
        return self.predict_gemm(1, N, K, precision, weights, act)


class Recommendation:
    """The recommendation: ``config.strategy_name``, ``predicted_speedup``, ``attention``, ..."""

    def __init__(self, data):
        self.data = data
        self.strategy = data["strategy"]
        self.attention = data["attention"]
        self.flash_attention = data["attention"]
        self.predicted_speedup = data["predicted_speedup"]
        self.time_s = data["time_s"]
        self.baseline_time_s = data["baseline_time_s"]
        self.memory_saving = data["memory_saving"]
        self.quality_loss_pct = data["quality_loss_pct"]
        self.rationale = data["rationale"]
        self.alternatives = data["alternatives"]
        self.config = SimpleNamespace(strategy_name=self.strategy, attention=self.attention)

    def to_dict(self):
        return self.data

    def __repr__(self):
        return f"Recommendation({self.strategy!r}, {self.predicted_speedup:.2f}x, attention={self.attention!r})"


class IntegratedQuantizationEngine:
    """Recommends a precision strategy and attention kernel for a model on a device."""

    def __init__(self, hardware, max_quality_loss=3.0):
        self.hardware = hardware if isinstance(hardware, Hardware) else get_hardware(hardware)
        self.max_quality_loss = max_quality_loss

    def recommend(self, model_config, phase="decode", seq_len=4096, batch=1, max_quality_loss=None, **kwargs):
        """``model_config``: a preset id, a path, the short form dict or a config.json dict."""
        data = _core.recommend(model_config, self.hardware.id, phase=phase, seq_len=seq_len, batch=batch,
                               max_quality_loss=self.max_quality_loss if max_quality_loss is None else max_quality_loss,
                               **kwargs)
        return Recommendation(data)


def _gpu_tool():
    """The roofline-gpu program (built where nvcc is found): on PATH, beside the build's
    bin/ (build/python/roofline -> build/bin) or the install prefix's bin/."""
    import os
    import shutil
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (shutil.which("roofline-gpu"),
                      os.path.join(here, "..", "..", "bin", "roofline-gpu"),
                      os.path.join(here, "..", "..", "..", "..", "bin", "roofline-gpu")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return None


def _run_gpu_tool(*args):
    import json
    import subprocess
    tool = _gpu_tool()
    if tool is None:
        raise RuntimeError("no CUDA device: this build of roofline has no CUDA benchmark backend "
                           "(roofline-gpu is built where nvcc is found and runs where a GPU is present)")
    done = subprocess.run([tool, *map(str, args)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "roofline-gpu failed"
        raise RuntimeError(message.removeprefix("error: "))
    return json.loads(done.stdout)


def cuda_available():
    """True when the CUDA backend is built and a GPU answers."""
    try:
        _run_gpu_tool("probe")
        return True
    except RuntimeError:
        return False


class GEMMKernel:
    """A GEMM on the local GPU: ``benchmark()`` measures it where the CUDA backend is built."""

    def __init__(self, M, N, K, precision="FP16"):
        self.M, self.N, self.K, self.precision = M, N, K, precision

    def benchmark(self):
        """Measures the GEMM on the GPU: measured_time_us, measured_bandwidth_gb_s, measured_tflops."""
        _run_gpu_tool("probe")  # raises "no CUDA device: ..." with the reason
        fmt = _core.canonical_format(self.precision)
        if fmt not in ("fp16", "bf16", "fp8", "nvfp4"):
            raise ValueError(f"GPU benchmarks run fp16, bf16, fp8 and (on Blackwell) nvfp4, not {self.precision}")
        result = _run_gpu_tool("one", self.M, self.N, self.K, fmt)
        result.update(M=self.M, N=self.N, K=self.K, precision=self.precision)
        return result


def predict(model, hardware, **kwargs):
    """One forward pass; the JSON of ``roofline predict`` as a dict."""
    return _core.predict(model, _device_id(hardware), **kwargs)


def generate(model, hardware, **kwargs):
    """TTFT, TPOT and end-to-end time; the JSON of ``roofline generate``."""
    return _core.generate(model, _device_id(hardware), **kwargs)


def recommend(model, hardware, **kwargs):
    """The JSON of ``roofline recommend`` as a dict."""
    return _core.recommend(model, _device_id(hardware), **kwargs)


def canonical_format(name):
    """The format id a name means: "FP8 E4M3", "fp8_e4m3", "E4M3" and "fp8" are all "fp8"."""
    return _core.canonical_format(name)


def engines():
    """The serving engines (``roofline engines --json``): a list of dicts with ``id`` and every figure
    with its source. Pass ``engine=ID`` to predict, generate, recommend and sweep."""
    return _core.engines()


def sweep(models, hardware, **kwargs):
    """Every combination, one dict per row (the rows of ``roofline sweep --format json``)."""
    return _core.sweep(list(models), [_device_id(h) for h in hardware], **kwargs)


def sweep_gemm(m, n, k, weights=("fp16",), acts=("fp16",), hardware=("gb10",), ideal=False):
    """Every combination of GEMM shapes, formats and devices, one dict per row (the rows of
    ``roofline sweep gemm --format json``): ``time_s``, ``flops``, ``bytes``, ``ai``, ``bound``,
    ``attained_flops_per_s``, ... or ``error`` where the device cannot compute the formats.
    Each of m, n, k, weights, acts and hardware is a value or a list of them.

        >>> rows = sweep_gemm(m=[1, 16, 256], n=4096, k=[4096, 14336], weights=["bf16", "fp8"],
        ...                   acts="bf16", hardware=["h100", "gb10"])
    """
    def as_list(x):
        if isinstance(x, (str, bytes, Hardware)) or not hasattr(x, "__iter__"):
            return [x]
        return list(x)

    return _core.sweep_gemm(as_list(m), as_list(n), as_list(k), as_list(weights), as_list(acts),
                            [_device_id(h) for h in as_list(hardware)], ideal)


__all__.append("sweep_gemm")


def quantize(checkpoint, budget_sqnr_db=25.0):
    """Per-tensor statistics, outliers, error per format and plan for a .safetensors file."""
    return _core.quantize_checkpoint(str(checkpoint), budget_sqnr_db)


def quantize_array(array, format):
    """Quantize and dequantize a numpy array; returns (array, error metrics)."""
    return _core.quantize_array(array, format)


def analyze_array(array, budget_sqnr_db=25.0):
    """Statistics, outlier channels and the cheapest format meeting the budget."""
    return _core.analyze_array(array, budget_sqnr_db)


def formats():
    return _core.formats()


def models():
    return _core.models()


def model(spec):
    return _core.model(spec)
