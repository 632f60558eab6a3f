// The HTTP server: the API under /api (and the pure-prediction subset under
// /api/public), the OpenAPI document, and the web app's static files.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "roofline/hardware.h"

namespace roofline::server {

struct Options {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8000;                 // 0: any free port
  bool public_only = false;        // no measurement or upload endpoints
  std::string web_dir;             // the built web app (web/dist); empty: none
  std::string gpu_tool;  // roofline-gpu, for /api/analyze's "measure"; empty: no GPU backend
  std::size_t max_body_bytes = 1 << 20;     // JSON requests: 413 beyond
  std::size_t max_upload_bytes = 64 << 20;  // /api/quantize bodies
  std::size_t max_sweep_rows = 100'000;
  // Bounded worker pool. A keep-alive connection holds its worker while open,
  // so the pool is sized for connections, not cores (idle workers cost nothing).
  int threads = 32;
  int timeout_s = 10;  // longest wait for one read or write on a socket
  // Longest time to receive a whole request (line, headers and body), however
  // its bytes trickle in; the connection is closed beyond.
  double request_read_timeout_s = 20.0;
  // Connections one client address may hold at once (0: three quarters of
  // `threads`). A new one past the cap closes that client's oldest idle or
  // still-reading connection, or is answered 503 when all are running requests.
  int max_connections_per_client = 0;
  double request_time_limit_s = 5.0;      // computation per JSON request; 503 time_limit beyond
  double upload_time_limit_s = 30.0;      // computation per /api/quantize upload; 503 beyond
  double search_time_limit_s = 30.0;      // computation per deployment search; 503 beyond
  std::size_t max_upload_tensors = 4096;  // tensors per upload; 400 beyond
  std::size_t max_listed_outliers = 64;   // outlier channels listed per tensor (all counted)
  int stream_seconds = 300;               // longest /api/nvml/stream
};

class Server {
 public:
  Server(Options options, Registry registry);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds; returns the port (useful with port 0). Throws InvalidArgument when it cannot.
  int bind();
  // Serves until stop(); call bind() first.
  void listen();
  void stop();

  // Connections from `address` that workers have taken up: the ones the
  // per-client cap counts (a connection is counted once a worker serves it,
  // not when it is accepted).
  [[nodiscard]] std::size_t connections_of(const std::string& address) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roofline::server
