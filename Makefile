# Thin wrapper over CMake. `make` builds, `make check` runs every test,
# `make asan` runs them under AddressSanitizer + UBSan, `make demo` runs the
# main job, `make bench` the benchmarks against stock git, `make install
# PREFIX=...` installs the library, headers, packwire.pc and the CLI.
BUILD ?= build
PREFIX ?= /usr/local
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_FLAGS ?= --output-on-failure

FUZZ_SECONDS ?= 30

.PHONY: all build check unit interop asan demo bench format clean fuzz fuzz-smoke install

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# DESTDIR=... stages the install (packwire.pc still names PREFIX).
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

check: build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -j $(JOBS)

unit: build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L unit -j $(JOBS)

interop: build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L interop -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPW_SANITIZE=ON

asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest $(CTEST_FLAGS) -j $(JOBS)

fuzz:
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DPW_LIBFUZZER=ON -DPW_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-fuzz -j $(JOBS)

# Every fuzz target for FUZZ_SECONDS from a scratch copy of its corpus; fails
# on any crash, leak, timeout or out-of-memory (2 GB).
fuzz-smoke: fuzz
	bash fuzz/smoke.sh build-fuzz $(FUZZ_SECONDS)

demo: build
	bash scripts/demo.sh $(BUILD)/packwire

bench: build
	bash bench/run-all $(BUILD)/packwire

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
