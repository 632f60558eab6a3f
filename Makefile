# Roofline: `make run` shows the default analysis, `make test` runs every suite.
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
BIN := $(BUILD_DIR)/bin/roofline

.PHONY: all deps configure build web run test bench serve clean format python-install

# The web app: npm packages pinned by web/package-lock.json, built to web/dist.
WEB_SOURCES := web/index.html web/vite.config.ts web/tsconfig.json web/scripts/copy-docs.mjs \
               $(wildcard web/src/*.ts web/src/*.css)

all: build

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) >/dev/null

build: configure web
	@cmake --build $(BUILD_DIR) -j $(JOBS)

web: web/dist/index.html

web/node_modules/.package-lock.json: web/package-lock.json | deps
	@cd web && npm ci --no-audit --no-fund --loglevel=error

web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SOURCES)
	@cd web && npm run --silent build >/dev/null

run: build
	@echo "== Recommendation: Llama-3-8B decode at 4K context on GB10 (DGX Spark) =="
	@$(BIN) recommend --model llama-3-8b --hardware gb10 --phase decode --seq-len 4096
	@echo
	@echo "== The same decode step, operator by operator (bf16) =="
	@$(BIN) predict --model llama-3-8b --hardware gb10 --phase decode --seq-len 4096 --per-op
	@echo
	@echo "The web app: make serve (or $(BIN) serve), then open http://127.0.0.1:8000/"

# The Python package into the active virtual environment, else the user's
# site-packages (scripts/python-install says where; no network needed).
python-install: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target roofline_python roofline
	@scripts/python-install --build $(BUILD_DIR)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

serve: build
	@$(BIN) serve --host 127.0.0.1 --port $${PORT:-8000} --web-dir web/dist

bench: build
	@$(BUILD_DIR)/bin/roofline_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only=true

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	@rm -rf $(BUILD_DIR) web/dist
