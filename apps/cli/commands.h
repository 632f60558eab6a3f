// The commands of `roofline`, one group per file. Each register_* function
// adds its subcommands to `app` with their flags and a callback that runs the
// command; `common` holds the flags every command shares and must outlive the
// parse. run() (cli.cpp) calls them in the order `roofline --help` lists them.
#pragma once

#include <CLI/CLI.hpp>

#include "common.h"

namespace roofline::cli {

void register_hardware(CLI::App& app, Common& common);    // hardware.cpp: hardware list | show
void register_formats(CLI::App& app, Common& common);     // formats.cpp: formats
void register_gemm(CLI::App& app, Common& common);        // gemm.cpp: gemm, gemv
void register_model(CLI::App& app, Common& common);       // model.cpp: model list | show
void register_scenario(CLI::App& app, Common& common);    // scenario.cpp: predict, generate, kv
void register_attention(CLI::App& app, Common& common);   // scenario.cpp: attention
void register_sweep(CLI::App& app, Common& common);       // sweep.cpp: sweep
void register_strategies(CLI::App& app, Common& common);  // recommend.cpp: strategies
void register_recommend(CLI::App& app, Common& common);   // recommend.cpp: recommend
void register_engines(CLI::App& app, Common& common);     // engines.cpp: engines [show ID]
void register_quantize(CLI::App& app, Common& common);    // quantize.cpp: quantize
void register_bench(CLI::App& app, Common& common);       // bench.cpp: bench, calibrate
void register_serve(CLI::App& app, Common& common);       // serve.cpp: serve
void register_validate(CLI::App& app, Common& common);    // validate.cpp: validate
void register_serving(CLI::App& app, Common& common);     // serving.cpp: serving
void register_search(CLI::App& app, Common& common);      // search.cpp: search

}  // namespace roofline::cli
