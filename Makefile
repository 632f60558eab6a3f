# Roofline: `make run` shows the default analysis, `make test` runs every suite.
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
BIN := $(BUILD_DIR)/bin/roofline

.PHONY: all deps configure build run test bench clean format

all: build

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	@echo "== Devices =="
	@$(BIN) hardware list
	@echo
	@echo "== Llama-3-8B-sized decode GEMV (4096 x 4096, batch 1) on GB10, fp16 vs nvfp4 weights =="
	@$(BIN) gemv --hardware gb10 --n 4096 --k 4096
	@echo
	@$(BIN) gemv --hardware gb10 --n 4096 --k 4096 --weights nvfp4 --act nvfp4

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: build
	@$(BUILD_DIR)/bin/roofline_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only=true

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	@rm -rf $(BUILD_DIR)
