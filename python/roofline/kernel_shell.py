"""GEMMs measured on the local GPU: ``GEMMKernel`` (the original description's
``benchmarks.kernel_shell``, here ``roofline.kernel_shell``).

Measurements run in ``roofline-gpu``, the CUDA backend, built where nvcc is
found; without it (or without a GPU) ``benchmark()`` raises RuntimeError
saying so.
"""

import json
import subprocess

from . import _roofline as _core
from ._tools import find_program

_NO_CUDA = ("no CUDA device: this build of roofline has no CUDA benchmark backend "
            "(roofline-gpu is built where nvcc is found and runs where a GPU is present)")


def _run_gpu_tool(*args):
    tool = find_program("roofline-gpu")
    if tool is None:
        raise RuntimeError(_NO_CUDA)
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
    """A GEMM C[M,N] = A[M,K] B[K,N] on the local GPU."""

    def __init__(self, M, N, K, precision="FP16"):
        self.M, self.N, self.K, self.precision = M, N, K, precision

    def benchmark(self):
        """Measures the GEMM: measured_time_us, measured_bandwidth_gb_s, measured_tflops, ..."""
        _run_gpu_tool("probe")  # raises "no CUDA device: ..." with the reason
        fmt = _core.canonical_format(self.precision)
        if fmt not in ("fp16", "bf16", "fp8", "nvfp4"):
            raise ValueError(f"GPU benchmarks run fp16, bf16, fp8 and (on Blackwell) nvfp4, not {self.precision}")
        result = _run_gpu_tool("one", self.M, self.N, self.K, fmt)
        result.update(M=self.M, N=self.N, K=self.K, precision=self.precision)
        return result
