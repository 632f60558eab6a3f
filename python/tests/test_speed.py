"""The cost of a call from Python, printed (no assertion: machines differ).

Targets (issue #13): predict with a preset model and device <= 5 us a call,
generate <= 20 us, a sweep >= 1M rows/s. Wall time and CPU time are both
shown: on a machine shared with builds the wall time includes waiting for a
core, and a sweep on all cores runs at its rows per CPU second times the
cores it gets.
"""

import time

import roofline


def per_call(f, n):
    """Best of 5 runs of n calls: (wall us, cpu us) per call."""
    wall = cpu = float("inf")
    for _ in range(5):
        w, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            f()
        wall = min(wall, (time.perf_counter() - w) / n)
        cpu = min(cpu, (time.process_time() - c) / n)
    return wall * 1e6, cpu * 1e6


def test_print_the_cost_of_each_call(capsys):
    cases = [
        ("predict (preset model and device)", lambda: roofline.predict("llama-3.1-8b", "h100"), 20_000),
        ("predict prefill fp8, Hardware object",
         lambda: roofline.predict("llama-3.1-8b", roofline.H100_SXM, phase="prefill", seq_len=2048, weights="fp8"),
         20_000),
        ("predict, then .time_s and ['bound']",
         lambda: (lambda p: (p.time_s, p["bound"]))(roofline.predict("llama-3.1-8b", "h100")), 20_000),
        ("predict(...).to_dict() (the whole document)",
         lambda: roofline.predict("llama-3.1-8b", "h100").to_dict(), 2_000),
        ("generate prompt 512 gen 128", lambda: roofline.generate("llama-3.1-8b", "h100"), 5_000),
        ("gemm", lambda: roofline.gemm("h100", 1, 4096, 4096), 5_000),
    ]
    lines = []
    for name, f, n in cases:
        wall, cpu = per_call(f, n)
        lines.append(f"  {name:<46} {wall:8.2f} us wall {cpu:8.2f} us cpu")
    rows = []
    for threads in (1, 0):
        for as_frame in (False, True):
            kw = dict(batches=list(range(1, 257)), seq_lens=list(range(128, 131073, 128)), threads=threads,
                      as_frame=as_frame)
            w, c = time.perf_counter(), time.process_time()
            out = roofline.sweep(["llama-3.1-8b"], ["h100", "gb10"], **kw)
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            n = len(out["time_s"])
            rows.append(f"  sweep {n} rows, {'all cores' if threads == 0 else '1 thread '}, "
                        f"{'DataFrame ' if as_frame else 'NumPy dict'}: {n / wall / 1e6:5.2f} M rows/s wall, "
                        f"{n / cpu / 1e6:5.2f} M rows per CPU second ({wall:.3f} s wall)")
    with capsys.disabled():
        print("\nroofline Python call costs (best of 5):")
        print("\n".join(lines + rows))
