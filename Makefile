# cudactor: one command from a bare Debian bookworm machine to green tests.
#
#   make demo        install missing packages, build and run cudactor-demo, the main job
#                    (ARGS="--steps=100 --streams=4 ..." passes options; ARGS=--help lists them)
#   make test        install missing packages, configure, build, run every test
#   make build       the same without running the tests
#   make asan        every test under AddressSanitizer + UndefinedBehaviorSanitizer + leak
#                    detection, child processes included (build-asan/); fails on any report
#   make tsan        every test under ThreadSanitizer (build-tsan/); CAF is not instrumented,
#                    so reports through it are suppressed (tests/sanitizers/tsan.supp);
#                    not clean yet (README)
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

# Sanitized builds: -O1 with assertions on (no NDEBUG), so the invariants the code asserts
# are checked too; -g1 (line tables: reports say file and line) compiles in 60% of the time
# of -g; no benchmarks (they are not tests). scripts/run-sanitized runs ctest and
# fails on any report file, from a test or a program it started.
SANITIZED_CMAKE = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
                  -DCUDACTOR_BUILD_BENCH=OFF

asan:
	$(MAKE) --no-print-directory build BUILD_DIR=build-asan \
	  CMAKE_ARGS='-DCUDACTOR_SANITIZE=address $(SANITIZED_CMAKE) $(CMAKE_ARGS)'
	scripts/run-sanitized build-asan $(JOBS) $(CTEST_ARGS)

tsan:
	$(MAKE) --no-print-directory build BUILD_DIR=build-tsan \
	  CMAKE_ARGS='-DCUDACTOR_SANITIZE=thread $(SANITIZED_CMAKE) $(CMAKE_ARGS)'
	scripts/run-sanitized build-tsan $(JOBS) $(CTEST_ARGS)

format:
	clang-format -i $(SOURCES)

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
