#include "cli.h"

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "roofline/error.h"
#include "roofline/report.h"

namespace roofline::cli {

int run(int argc, char** argv) {
  CLI::App app{"roofline: predict, explain and measure transformer inference speed on GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(version()));
  Common common;

  // The order here is the order `roofline --help` lists the commands in.
  register_hardware(app, common);
  register_formats(app, common);
  register_gemm(app, common);
  register_model(app, common);
  register_scenario(app, common);
  register_sweep(app, common);
  register_strategies(app, common);
  register_engines(app, common);
  register_recommend(app, common);
  register_quantize(app, common);
  register_bench(app, common);
  register_serve(app, common);
  register_validate(app, common);
  register_serving(app, common);
  register_search(app, common);
  register_attention(app, common);

  try {
    if (argc >= 2 && argv[1][0] != '-') {
      std::string names;
      bool known = false;
      for (const auto* sub : app.get_subcommands({})) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        known = known || sub->get_name() == argv[1];
      }
      if (!known)
        throw InvalidArgument("unknown command '" + clip_utf8(std::string(argv[1]), 40) +
                              "' (commands: " + names + ")");
    }
    app.parse(argc, argv);  // runs the command's callback
    return kExitOk;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << " (see 'roofline --help')\n";
    return kExitBadInput;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const nlohmann::json::exception& e) {
    // A value of the wrong type deep in an input file: bad input, not a bug report.
    std::string what = e.what();
    const auto close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
    std::cerr << "error: malformed input: " << what << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace roofline::cli
