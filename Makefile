# cudactor: one command from a bare Debian bookworm machine to green tests.
#
#   make demo        install missing packages, build and run cudactor-demo, the main job
#                    (ARGS="--steps=100 --streams=4 ..." passes options; ARGS=--help lists them)
#   make test        install missing packages, configure, build, run every test
#   make build       the same without running the tests
#   make asan        every test under AddressSanitizer + UndefinedBehaviorSanitizer + leak
#                    detection, child processes included (build-asan/); fails on any report
#   make tsan        every test under ThreadSanitizer (build-tsan/); CAF is not instrumented:
#                    what its mailboxes order is told to TSan by a preloaded library
#                    (tests/sanitizers/tsan_caf_mailbox.cpp), its own code is suppressed
#   make gpu-bundle  build with CUDA (build-gpu/) and pack every test, example, demo and
#                    benchmark with the libraries a bare GPU machine lacks into
#                    build/gpu-bundle; build/gpu-bundle/run runs them all there (docs/gpu-validation.md)
#   make bench       build, then run every benchmark in its --quick mode
#   make format      clang-format every source file
#
# Variables: BUILD_DIR (build), JOBS (number of cores), CMAKE_ARGS (extra -D options, e.g.
# CMAKE_ARGS=-DCUDACTOR_CUDA=OFF). Every build compiles through ccache where it is installed;
# CUDACTOR_CCACHE=off in the environment builds once without it (docs/development.md).

BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
CTEST_ARGS ?=
ARGS ?=

SOURCES = $(shell git ls-files '*.cpp' '*.hpp' '*.cu' 2>/dev/null)

.PHONY: deps configure build demo test bench asan tsan gpu-bundle format clean

deps:
	@scripts/install-deps

# The default build: line tables (-g1) are enough for backtraces, perf and the sanitizers'
# file and line, compile in 60% of the time of -g and, compressed (CMakeLists.txt), keep
# build/ near 1 GB; full -g made it 10 GB. CMAKE_ARGS comes after, so it can ask for -g.
DEFAULT_CMAKE = -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"

# Ninja where installed (scripts/install-deps installs it): it starts a target's compiles as
# soon as their headers exist, not after every library the target links is built, which keeps
# both cores busy. A folder keeps the generator it was first configured with.
GENERATOR = $(if $(wildcard $(BUILD_DIR)/CMakeCache.txt),,$(if $(shell command -v ninja),-G Ninja))

configure: deps
	cmake -S . -B $(BUILD_DIR) $(GENERATOR) -DCUDACTOR_WERROR=ON $(DEFAULT_CMAKE) $(CMAKE_ARGS)

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
	$(BUILD_DIR)/bench/facade_bench --quick
	$(BUILD_DIR)/bench/barrier_bench --quick
	$(BUILD_DIR)/bench/metrics_bench --quick

# Sanitized builds: -O1 with assertions on (no NDEBUG), so the invariants the code asserts
# are checked too; the test programs at -O0 (CUDACTOR_TEST_CXX_FLAGS: under ASan + UBSan a
# test program compiles in 40% of its -O1 time, and the libraries under test keep -O1); -g1
# (line tables: reports say file and line) compiles in 60% of the time of -g; no benchmarks
# (they are not tests); shared libraries, because statically every program carried its own
# instrumented copy of cudactor (230 MB a test, 7.3 GB for build-asan, which filled a CI
# machine's disk). scripts/run-sanitized runs ctest and fails on any report
# file, from a test or a program it started.
SANITIZED_CMAKE = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
                  -DCUDACTOR_TEST_CXX_FLAGS=-O0 -DCUDACTOR_BUILD_BENCH=OFF -DBUILD_SHARED_LIBS=ON

asan:
	$(MAKE) --no-print-directory build BUILD_DIR=build-asan \
	  CMAKE_ARGS='-DCUDACTOR_SANITIZE=address $(SANITIZED_CMAKE) $(CMAKE_ARGS)'
	scripts/run-sanitized build-asan $(JOBS) $(CTEST_ARGS)

tsan:
	$(MAKE) --no-print-directory build BUILD_DIR=build-tsan \
	  CMAKE_ARGS='-DCUDACTOR_SANITIZE=thread $(SANITIZED_CMAKE) $(CMAKE_ARGS)'
	scripts/run-sanitized build-tsan $(JOBS) $(CTEST_ARGS)

# Shared libraries: one copy of cudactor's code instead of one per program keeps the bundle
# small enough to travel (under 64 MiB); Release without debug information, for the same reason.
gpu-bundle:
	$(MAKE) --no-print-directory build BUILD_DIR=build-gpu \
	  CMAKE_ARGS='-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCUDACTOR_CUDA=ON $(CMAKE_ARGS)'
	cmake --build build-gpu -j $(JOBS) --target doc_snippets  # built by a test here, not there
	scripts/gpu-bundle build-gpu build/gpu-bundle

format:
	clang-format -i $(SOURCES)

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan build-gpu
