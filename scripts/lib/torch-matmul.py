"""A second opinion on roofline-gpu's cuBLASLt timings: torch.matmul (and
torch._scaled_mm for fp8) on the same shapes, timed the same way (L2 flushed
before each repetition, CUDA events, median). One JSON line per case on stdout.
Runs on the device machine, where PyTorch is installed; says why not elsewhere.
"""
import json
import sys
import time


def main():
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"type": "torch", "skipped": f"no PyTorch: {e}"}), flush=True)
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"type": "torch", "skipped": "PyTorch sees no CUDA device"}), flush=True)
        return 0
    deadline = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 40.0)
    ours = read_ours(sys.argv[2]) if len(sys.argv) > 2 else {}
    ratios = []
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 0) or (128 << 20)
    flush = torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device=dev)
    print(json.dumps({"type": "torch-device", "gpu": props.name, "torch": torch.__version__,
                      "cuda": torch.version.cuda, "l2_bytes": l2}), flush=True)
    # The quick set of roofline-gpu's suite: the first three weight shapes of
    # cuda/bench_plan.h at five token counts.
    weights = [(6144, 4096), (4096, 4096), (28672, 4096)]
    tokens = [1, 16, 128, 1024, 4096]
    for precision in ("bf16", "fp16", "fp8"):
        for n, k in weights:
            for m in tokens:
                if time.monotonic() > deadline:
                    print(json.dumps({"type": "torch", "stopped": "deadline"}), flush=True)
                    summarize(ratios)
                    return 0
                row = {"type": "torch", "m": m, "n": n, "k": k, "precision": precision}
                try:
                    row.update(time_case(torch, dev, flush, m, n, k, precision))
                    mine = ours.get((m, n, k, precision))
                    if mine:
                        row["roofline_gpu_over_torch"] = mine / row["median_s"]
                        ratios.append(row["roofline_gpu_over_torch"])
                except Exception as e:  # a shape torch cannot run is reported, not fatal
                    row["error"] = str(e).splitlines()[0][:200]
                print(json.dumps(row), flush=True)
    summarize(ratios)
    return 0


def read_ours(path):
    """roofline-gpu's medians by (m, n, k, precision), from its JSON lines."""
    ours = {}
    try:
        with open(path) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if row.get("type") in ("gemm", "gemv") and row.get("median_s"):
                    ours[(row["m"], row["n"], row["k"], row["precision"])] = row["median_s"]
    except OSError:
        pass
    return ours


def summarize(ratios):
    if not ratios:
        return
    ratios = sorted(ratios)
    print(json.dumps({"type": "torch-summary", "cases": len(ratios),
                      "median_roofline_gpu_over_torch": ratios[len(ratios) // 2],
                      "min": ratios[0], "max": ratios[-1]}), flush=True)


def time_case(torch, dev, flush, m, n, k, precision):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.bfloat16}[precision]
    a = (torch.randint(-7, 8, (m, k), device=dev) / 8).to(dtype)
    w = (torch.randint(-7, 8, (n, k), device=dev) / 8).to(dtype)
    if precision == "fp8":
        if not hasattr(torch, "_scaled_mm"):
            raise RuntimeError("this PyTorch has no _scaled_mm")
        a8 = a.to(torch.float8_e4m3fn)
        w8 = w.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev, dtype=torch.float32)
        # _scaled_mm wants a row-major first and a column-major second operand.
        op = lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                      use_fast_accum=True)
    else:
        op = lambda: torch.matmul(a, w.t())
    op()
    torch.cuda.synchronize()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.02:
        op()
    torch.cuda.synchronize()
    reps = 20
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for r in range(reps):
        flush.fill_(float(r))
        # Holds the GPU ~50 us so that Python's launch of op() is queued
        # before the start event runs: otherwise small kernels time the host.
        torch.cuda._sleep(100000)
        start[r].record()
        op()
        stop[r].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1e-3 for s, e in zip(start, stop))
    return {"median_s": times[reps // 2], "min_s": times[0], "repetitions": reps, "l2": "flushed"}


if __name__ == "__main__":
    sys.exit(main())
