# Sourced by the scripts that test a running server: starts `roofline serve` on a
# free port and sets SERVER_URL and SERVER_PID; the caller's EXIT trap stops it.
# usage: start_server BIN [serve options...]
start_server() {
  local bin=$1
  shift
  SERVER_LOG=$(mktemp)
  "$bin" serve --host 127.0.0.1 --port 0 "$@" 2>"$SERVER_LOG" &
  SERVER_PID=$!
  local i
  for i in $(seq 1 100); do
    SERVER_URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$SERVER_LOG" | head -n1 || true)
    [ -n "$SERVER_URL" ] && return 0
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "the server did not start:" >&2
      cat "$SERVER_LOG" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "the server did not say where it listens within 10 s" >&2
  return 1
}

stop_server() {
  if [ -n "${SERVER_PID:-}" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  [ -n "${SERVER_LOG:-}" ] && rm -f "$SERVER_LOG"
}
