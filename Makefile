# SPDX-License-Identifier: MIT
# The two commands: `make bench` and `make test`. CMake does the building;
# this file only chooses build folders and the order of the steps.
JOBS      ?= $(shell nproc)
BUILD     ?= build
CMAKE_GEN  = -G "Unix Makefiles"
BENCH     ?= default

.PHONY: all deps release bench test test-asan test-tsan test-fuzz fuzz install clean

all: release

deps:
	@bash scripts/deps.sh

release: deps
	@cmake -S . -B $(BUILD)/release $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD)/release -j $(JOBS)

bench: release
	@bash scripts/bench.sh $(BUILD)/release $(BENCH)

# ASan+UBSan over every test, then the fuzz targets for a bounded time, then
# ThreadSanitizer over the concurrency tests. ctest's summary closes each step
# and any failure stops make.
test: test-asan test-fuzz test-tsan

test-asan: deps
	@cmake -S . -B $(BUILD)/asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DPC_SANITIZE=asan >/dev/null
	@cmake --build $(BUILD)/asan -j $(JOBS)
	@cd $(BUILD)/asan && ctest --output-on-failure -j $(JOBS) --label-exclude fuzz

test-fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B $(BUILD)/fuzz $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DPC_SANITIZE=fuzz >/dev/null
	@cmake --build $(BUILD)/fuzz -j $(JOBS)
	@cd $(BUILD)/fuzz && ctest --output-on-failure -j $(JOBS) -L fuzz

test-tsan: deps
	@cmake -S . -B $(BUILD)/tsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DPC_SANITIZE=tsan >/dev/null
	@cmake --build $(BUILD)/tsan -j $(JOBS)
	@cd $(BUILD)/tsan && ctest --output-on-failure -j $(JOBS) -L concurrency

# Open-ended fuzzing: every fuzz target until interrupted.
fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B $(BUILD)/fuzz $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DPC_SANITIZE=fuzz >/dev/null
	@cmake --build $(BUILD)/fuzz -j $(JOBS)
	@bash scripts/fuzz.sh $(BUILD)/fuzz

install: release
	@cmake --install $(BUILD)/release

clean:
	rm -rf $(BUILD)
