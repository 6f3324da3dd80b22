# cudactor: one command from a bare Debian bookworm machine to green tests.
#
#   make demo        install missing packages, build and run cudactor-demo, the main job
#                    (ARGS="--steps=100 --streams=4 ..." passes options; ARGS=--help lists them)
#   make test        install missing packages, configure, build, run every test
#   make build       the same without running the tests
#   make asan        address + undefined-behaviour sanitizers, all tests (build-asan/)
#   make tsan        thread sanitizer, device-layer tests only (build-tsan/; CAF is not
#                    instrumented, so TSan would report races inside it)
#   make bench       build, then run every benchmark in its --quick mode
#   make format      clang-format every source file
#
# Variables: BUILD_DIR (build), JOBS (number of cores), CMAKE_ARGS (extra -D options, e.g.
# CMAKE_ARGS=-DCUDACTOR_CUDA=OFF).

BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
CTEST_ARGS ?=
ARGS ?=

SOURCES = $(shell git ls-files '*.cpp' '*.hpp' '*.cu' 2>/dev/null)

.PHONY: deps configure build demo test bench asan tsan format clean

deps:
	@scripts/install-deps

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCUDACTOR_WERROR=ON $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target cudactor-demo
	$(BUILD_DIR)/demo/cudactor-demo $(ARGS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

bench: build
	$(BUILD_DIR)/bench/poller_bench --quick
	$(BUILD_DIR)/bench/stream_bench --quick
	$(BUILD_DIR)/bench/coordinator_bench --quick
	$(BUILD_DIR)/bench/metrics_bench --quick

asan:
	$(MAKE) --no-print-directory test BUILD_DIR=build-asan CMAKE_ARGS="-DCUDACTOR_SANITIZE=address $(CMAKE_ARGS)"

tsan:
	$(MAKE) --no-print-directory test BUILD_DIR=build-tsan CMAKE_ARGS="-DCUDACTOR_SANITIZE=thread $(CMAKE_ARGS)" \
	  CTEST_ARGS="-E '^(errc_test|registry_test|install_test|message_types_test|stream_actor_test|event_pool_actor_test|runtime_test|remote_work_test|coordinator_test|coordinator_random_test|barrier_actor_test|actor_metrics_test|prometheus_scrape_test|client_test|coordinator_report_test|runtime_config_test|async_service_test|demo_smoke|node_test|cluster_test|tls_test|[a-z_]*_example)' $(CTEST_ARGS)"

format:
	clang-format -i $(SOURCES)

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
