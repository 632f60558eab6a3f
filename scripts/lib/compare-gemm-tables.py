"""Compares a roofline-gpu run (JSON lines) with the GEMM latencies measured inside serving
engines (../shared/reference/measured-kernels/<device>/<engine>/gemm_perf.parquet, NVIDIA
AIConfigurator, Apache-2.0), on the shapes both have: the median ratio engine / roofline-gpu per
format and token range. Development aid for docs/VALIDATION.md; stdlib only.

  python3 scripts/lib/compare-gemm-tables.py RUN.jsonl ENGINE=GEMM_PERF.csv ...
  (make the CSV with ../shared/tools/parquet-to-csv gemm_perf.parquet > gemm_perf.csv)
"""
import collections
import csv
import json
import statistics
import sys

DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8"}


def ranges(m):
    return "m 1-64" if m <= 64 else ("m 65-512" if m <= 512 else "m >= 513")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ours = {}
    with open(argv[1]) as f:
        for line in f:
            row = json.loads(line)
            if row.get("type") == "gemm" and row.get("kernel") == "cublaslt" and "median_s" in row:
                ours[(row["m"], row["n"], row["k"], row["precision"])] = row["median_s"]
    print("engine | kernel | format | tokens | shapes | engine / roofline-gpu, median (range)")
    print("---|---|---|---|---|---")
    for spec in argv[2:]:
        engine, path = spec.split("=", 1)
        ratios = collections.defaultdict(list)
        kernels = collections.defaultdict(set)
        with open(path) as f:
            for row in csv.DictReader(f):
                fmt = DTYPES.get(row["gemm_dtype"])
                key = (int(row["m"]), int(row["n"]), int(row["k"]), fmt)
                if fmt and key in ours:
                    group = (fmt, ranges(key[0]))
                    ratios[group].append(float(row["latency"]) * 1e-3 / ours[key])
                    kernels[group].add(row["kernel_source"])
        for (fmt, tokens), v in sorted(ratios.items()):
            print(f"{engine} | {', '.join(sorted(kernels[(fmt, tokens)]))} | {fmt} | {tokens} | {len(v)} | "
                  f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
