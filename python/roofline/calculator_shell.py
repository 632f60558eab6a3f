"""GEMM and GEMV rooflines on one device: ``RooflineCalculator``.

``python3 -m roofline.calculator_shell [DEVICE]`` prints the GEMVs of a
Llama-3-8B decode step at batch 1 in each precision of the original table.
"""

import sys

from . import _roofline as _core
from .hardware_registry import Hardware, get_hardware


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
        """C[M,N] = A[M,K] B[K,N]: the fields of ``roofline gemm --json`` plus
        predicted_time_us and bottleneck ("memory" or "compute")."""
        w, a = self._formats(precision, weights, act)
        r = _core.gemm(self.hardware.id, M, N, K, weights=w, act=a, ideal=self.ideal)
        r["predicted_time_us"] = r["time_s"] * 1e6
        r["bottleneck"] = r["bound"]
        return r

    def predict_gemv(self, N, K, precision="FP16", weights=None, act=None):
        """A GEMV (M = 1): a decode step's linear layer at batch 1."""
        return self.predict_gemm(1, N, K, precision, weights, act)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    calc = RooflineCalculator(argv[0] if argv else "gb10")
    hw = calc.hardware
    print(f"{hw.name} ({hw.id}): {hw.bandwidth_Bps / 1e9:.0f} GB/s, realistic mode")
    print("Llama-3-8B decode GEMVs at batch 1 (N x K), time in µs per precision\n")
    shapes = [("q/k/v/o", 4096, 4096), ("gate/up", 14336, 4096), ("down", 4096, 14336)]
    precisions = ["FP16", "FP8 E4M3", "INT4", "NVFP4"]
    print(f"{'GEMV':<10}{'N x K':>14}" + "".join(f"{p:>12}" for p in precisions))
    for name, n, k in shapes:
        cells = []
        for p in precisions:
            try:
                cells.append(f"{calc.predict_gemv(N=n, K=k, precision=p)['predicted_time_us']:.1f}")
            except _core.RooflineError:
                cells.append("-")
        print(f"{name:<10}{f'{n} x {k}':>14}" + "".join(f"{c:>12}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
