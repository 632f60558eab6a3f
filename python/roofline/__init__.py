"""Roofline: predict, explain and measure transformer inference speed on GPUs.

The C++ core does the work (``roofline._roofline``). Each function returns
what the ``roofline`` command prints with ``--json`` for the same arguments:

    >>> import roofline
    >>> p = roofline.predict("llama-3.1-8b", "h100", phase="decode", seq_len=4096)
    >>> p.time_s, p["bound"]            # attributes and items alike
    >>> p.to_dict()                     # the whole `roofline predict --json` document
    >>> roofline.sweep(["llama-3.1-8b"], ["h100", "gb10"], batches=[1, 8, 64])  # columns

The original description's modules are here too, without its ``src.`` prefix:

    >>> from roofline.quantization_integration import IntegratedQuantizationEngine
    >>> from roofline.hardware_registry import BLACKWELL_B10
    >>> from roofline.kernel_shell import GEMMKernel
    >>> from roofline import RooflineCalculator, get_hardware

``python3 -m roofline ARGS`` runs the command line.
"""

import operator as _operator
import os as _os
from collections.abc import Mapping as _Mapping

from . import _roofline as _core
from ._roofline import (
    Generation,
    InvalidArgument,
    NotFound,
    ParseError,
    Prediction,
    RooflineError,
    Unsupported,
    analyze_array,
    attention,
    canonical_format,
    capacity,
    search,
    serving,
    engine,
    engines,
    formats,
    gemm,
    generate,
    hardware,
    hardware_ids,
    hardware_list,
    kv,
    model,
    models,
    predict,
    quantize_array,
    recommend,
    strategies,
    validate,
    validate_decode_steps,
    validate_serving,
)
from .calculator_shell import RooflineCalculator
from .hardware_registry import (
    A100,
    A100_40GB,
    A100_80GB,
    B200,
    B300,
    BLACKWELL_B10,
    GB10,
    GB200,
    H20,
    H100,
    H100_PCIE,
    H100_SXM,
    H200,
    L4,
    L40S,
    MI300X,
    MI325X,
    MI355X,
    RTX_4090,
    RTX_5090,
    RTX_PRO_6000,
    Hardware,
    get_hardware,
)
from .kernel_shell import GEMMKernel, cuda_available
from .quantization_integration import IntegratedQuantizationEngine, Recommendation

__version__ = _core.version()

# Results read like the documents they stand for: dict(p), p.keys(), p["time_s"].
_Mapping.register(Prediction)
_Mapping.register(Generation)

__all__ = [
    # the commands: predict and generate return result objects, the others dicts
    "predict", "generate", "serving", "search", "gemm", "kv", "attention", "capacity", "recommend", "sweep",
    "sweep_gemm", "validate", "validate_serving", "validate_decode_steps", "quantize", "quantize_array", "analyze_array",
    # the registries
    "hardware", "hardware_ids", "hardware_list", "formats", "canonical_format", "models", "model",
    "strategies", "engines", "engine",
    # the original description's classes and constants
    "Hardware", "get_hardware", "RooflineCalculator", "IntegratedQuantizationEngine",
    "Recommendation", "GEMMKernel", "cuda_available", "BLACKWELL_B10", "GB10", "B200", "GB200",
    "B300", "H100", "H100_SXM", "H100_PCIE", "H200", "H20", "A100", "A100_80GB", "A100_40GB",
    "L40S", "L4", "RTX_4090", "RTX_5090", "RTX_PRO_6000", "MI300X", "MI325X", "MI355X",
    # results and errors
    "Prediction", "Generation", "RooflineError", "InvalidArgument", "NotFound", "ParseError",
    "Unsupported",
]


def quantize(checkpoint, budget_sqnr_db=25.0):
    """Per-tensor statistics, outliers, error per format and a plan for a .safetensors
    file: the document of ``roofline quantize --json``."""
    return _core.quantize(_os.fspath(checkpoint), budget_sqnr_db)


def _listed(x):
    """A list of what was given: one value (a str, a dict, a Hardware) or several."""
    if isinstance(x, (str, bytes, dict, Hardware, _os.PathLike)) or not hasattr(x, "__iter__"):
        return [x]
    return list(x)


def _whole_numbers(x):
    return [_operator.index(v) for v in _listed(x)]  # 4096 and numpy ints, not 4096.5


def sweep(models, hardware, *, phases=None, batches=None, seq_lens=None, weights=None, acts=None,
          kvs=None, attentions=None, tps=None, strategies=None, ideal=False, engine="roofline",
          engine_build=None, cuda_graphs="engine", moe_kernel=None, engine_version=None, threads=0,
          as_frame=None):
    """Every combination of the lists, one row each, as columns (``roofline sweep``).

    Each argument takes one value or a list: models (preset ids, paths or dicts),
    hardware (ids or Hardware), phases ("decode"), batches (1), seq_lens (4096),
    weights ("native": the checkpoint's), acts ("engine": the engine's for the weights, else bf16), kvs (the activation
    format), attentions ("auto": the device's best), tps (1), strategies
    (named plans; they replace weights, acts and kvs). The last list varies
    fastest, as in the CLI. engine_build dates the engine's build for every
    row ("YYYY-MM-DD" or "YYYY-MM"; None: the current one); cuda_graphs
    ("engine", "decode-only" or "off") which steps replay CUDA graphs;
    moe_kernel (None, "triton", "flashinfer-trtllm", "flashinfer-cutlass" or
    "marlin") the MoE kernel family whose measured layers price the MoE;
    engine_version the engine's release for every row (e.g. "0.11.0"; None:
    the current one), on each row's device and tensor-parallel size.

    Returns a pandas DataFrame when pandas is installed (as_frame=None) or
    asked for (True), else a dict of NumPy arrays (as_frame=False), with the
    columns of the CLI's CSV: text columns are categorical (pandas) or object
    arrays, numbers float64 (not rounded to 6 digits as in the text), batch,
    seq_len and tp int64, fits bool. A combination that cannot be predicted
    (a format the device lacks) is a row with NaN numbers, bound None, fits
    False and its message in error. Runs on all cores (threads=0).
    """
    given = dict(phases=phases, weights=weights, acts=acts, kvs=kvs, attentions=attentions,
                 strategies=strategies)
    options = {k: _listed(v) for k, v in given.items() if v is not None}
    for name, value in dict(batches=batches, seq_lens=seq_lens, tps=tps).items():
        if value is not None:
            options[name] = _whole_numbers(value)
    raw = _core.sweep_columns(_listed(models), _listed(hardware), ideal=ideal, engine=engine,
                              engine_build=engine_build, cuda_graphs=cuda_graphs,
                              moe_kernel=moe_kernel, engine_version=engine_version,
                              threads=threads, **options)
    columns, categories = raw["columns"], raw["categories"]
    pandas = None
    if as_frame is None:
        try:
            import pandas
        except ImportError:
            pass
    elif as_frame:
        import pandas
    if pandas is not None:
        data = {name: pandas.Categorical.from_codes(col, categories=categories[name])
                if name in categories else col for name, col in columns.items()}
        return pandas.DataFrame(data, copy=False)
    import numpy
    out = {}
    for name, col in columns.items():
        if name in categories:
            table = numpy.empty(len(categories[name]) + 1, dtype=object)
            table[:-1] = categories[name]
            table[-1] = None  # code -1
            col = table[col]
        out[name] = col
    return out


def sweep_gemm(m, n, k, weights=("fp16",), acts=("fp16",), hardware=("gb10",), ideal=False):
    """Every combination of GEMM shapes, formats and devices, one dict per row (the rows of
    ``roofline sweep gemm --format json``): ``time_s``, ``flops``, ``bytes``, ``ai``, ``bound``,
    ``attained_flops_per_s``, ... or ``error`` where the device cannot compute the formats.
    Each of m, n, k, weights, acts and hardware is a value or a list of them.

        >>> rows = sweep_gemm(m=[1, 16, 256], n=4096, k=[4096, 14336], weights=["bf16", "fp8"],
        ...                   acts="bf16", hardware=["h100", "gb10"])
    """
    return _core.sweep_gemm(_listed(m), _listed(n), _listed(k), _listed(weights), _listed(acts),
                            _listed(hardware), ideal)
