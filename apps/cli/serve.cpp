// `roofline serve`: the HTTP API and the web app (apps/server).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "../server/server.h"
#include "commands.h"
#include "common.h"
#include "gpu.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

struct ServeArgs {
  server::Options options;
  std::string port = "8000";
};

// The built web app when --web-dir is not given: in the source tree the binary
// was built in (build/bin -> web/dist), or in its install prefix
// (bin -> share/roofline/web). Empty when neither has an index.html.
std::string default_web_dir() {
  std::error_code ec;
  const auto bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return {};
  for (const auto& dir :
       {bin / ".." / ".." / "web" / "dist", bin / ".." / "share" / "roofline" / "web"}) {
    if (std::filesystem::is_regular_file(dir / "index.html", ec))
      return std::filesystem::weakly_canonical(dir, ec).string();
  }
  return {};
}

void cmd_serve(const Common& c, ServeArgs a) {
  a.options.port = static_cast<int>(parse_count("--port", a.port, 0, 65535));
  a.options.gpu_tool = gpu_tool_path();
  if (a.options.web_dir.empty()) a.options.web_dir = default_web_dir();
  server::Server srv(a.options, load_registry(c));
  const int port = srv.bind();
  std::cerr << fmt::format(
      "roofline {} serving http://{}:{}/ (API under /api, docs at /docs){}{}\n", version(),
      a.options.host, port, a.options.public_only ? ", public endpoints only" : "",
      a.options.web_dir.empty() ? "; no web app found (build it: make web, or --web-dir)"
                                : "; the web app from " + a.options.web_dir);
  srv.listen();
}

}  // namespace

void register_serve(CLI::App& app, Common& common) {
  auto serve_args = std::make_shared<ServeArgs>();
  auto* serve_cmd = app.add_subcommand("serve", "Serve the API (and the web app when built)");
  serve_cmd->add_option("--host", serve_args->options.host, "Address to bind")
      ->capture_default_str();
  serve_cmd->add_option("--port", serve_args->port, "Port (0: any free port)")
      ->capture_default_str();
  serve_cmd->add_flag("--public-only", serve_args->options.public_only,
                      "Only the prediction endpoints");
  serve_cmd->add_option("--web-dir", serve_args->options.web_dir, "The built web app (web/dist)");
  serve_cmd->add_option("--threads", serve_args->options.threads, "Worker threads")
      ->capture_default_str();
  serve_cmd
      ->add_option("--hardware-file", common.hardware_files,
                   "Extra device JSON file (adds or overrides by id); repeatable")
      ->type_name("FILE");  // serve prints no results: no --json
  serve_cmd->callback([&common, serve_args] { cmd_serve(common, *serve_args); });
}

}  // namespace roofline::cli
