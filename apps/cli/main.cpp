// The `roofline` command: parse, call the library, render, map errors.
#include "cli.h"

int main(int argc, char** argv) { return roofline::cli::run(argc, argv); }
