-- wrk script for scripts/load-test: POSTs one prediction and prints the
-- figures as one JSON line at the end.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model": "llama-3.1-8b", "hardware": "h100", "phase": "decode", "batch": 8, "seq_len": 4096}'

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'LOADTEST {"requests": %d, "duration_s": %.3f, "requests_per_s": %.1f, ' ..
    '"latency_s": {"p50": %.6f, "p90": %.6f, "p99": %.6f, "max": %.6f}, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1e6, latency:percentile(90) / 1e6, latency:percentile(99) / 1e6,
    latency.max / 1e6, e.connect, e.read, e.write, e.status, e.timeout))
end
