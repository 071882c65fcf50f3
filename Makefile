# whisper-stem - build, test, install.
#
#   make                 build/whisper-stem and build/ws-mkmodel
#   make test            build and run the Criterion suite (tests/)
#   make asan            the same suite under AddressSanitizer + UBSan (build-asan/)
#   make interop         GGUF files we write, read by @huggingface/gguf (needs node, npm)
#   make check           test + asan + interop (what CI runs)
#   make install PREFIX=/usr/local
#   make bundle          build/bundle/: binary + test runner + their shared libraries,
#                        relocatable (RUNPATH $ORIGIN/lib), for GPU nodes
#
# Knobs: BUILD=dir  CC=...  CFLAGS=...  SAN=1 (sanitizers)  PREFIX=...
# No CUDA toolkit is needed: the GPU path loads libcuda.so.1 at run time.

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
CFLAGS  ?= -O2 -g
PKG     ?= pkg-config
SHELL   := /bin/bash

PKGS      := sndfile fftw3f soxr libcjson
TEST_PKGS := criterion

# --- what was found --------------------------------------------------------
define check_pkg
ifeq ($$(shell $(PKG) --exists $(1) && echo yes),yes)
$$(info ✓ $(1) $$(shell $(PKG) --modversion $(1)))
else
$$(info ✗ $(1) not found: run scripts/install-deps.sh)
MISSING += $(1)
endif
endef
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(foreach p,$(PKGS),$(eval $(call check_pkg,$(p))))
ifneq ($(filter test asan check bundle,$(MAKECMDGOALS)),)
$(foreach p,$(TEST_PKGS),$(eval $(call check_pkg,$(p))))
endif
ifneq ($(MISSING),)
$(error missing packages: $(MISSING))
endif
endif

# ptxas (CUDA toolkit) is optional: tests use it to assemble emitted PTX.
PTXAS ?= $(shell command -v ptxas 2>/dev/null || ls /usr/local/cuda/bin/ptxas 2>/dev/null)
ifneq ($(PTXAS),)
$(info ✓ ptxas $(PTXAS) (PTX assembly tests enabled))
else
$(info ✗ ptxas not found (PTX assembly tests will be skipped))
endif

# NVTX ranges (header-only nvtx3 from the CUDA toolkit) are compiled in when found.
NVTX_INC ?= $(firstword $(wildcard /usr/local/cuda/include /usr/include))
ifneq ($(wildcard $(NVTX_INC)/nvtx3/nvToolsExt.h),)
$(info ✓ nvtx3 in $(NVTX_INC) (profiler ranges compiled in))
NVTX_FLAGS := -DWS_HAVE_NVTX -isystem $(NVTX_INC)
else
$(info ✗ nvtx3 not found (profiler ranges compiled out))
endif

WARN     := -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
DEFS     := -D_GNU_SOURCE
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
ALL_CFLAGS  = $(CFLAGS) $(WARN) $(DEFS) $(NVTX_FLAGS) $(SANFLAGS) -Isrc $(shell $(PKG) --cflags $(PKGS))
LDLIBS      = $(shell $(PKG) --libs $(PKGS)) -lpthread -ldl -lm
TEST_CFLAGS = $(ALL_CFLAGS) $(shell $(PKG) --cflags criterion) -Itests
TEST_LIBS   = $(shell $(PKG) --libs criterion)

SRC      := $(wildcard src/*.c src/mel/*.c src/conv/*.c src/cuda/*.c)
LIB_SRC  := $(filter-out src/main.c,$(SRC))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
# Every scripts/NAME.c is a tool, $(BUILD)/ws-NAME; every bench/NAME.c a
# benchmark, $(BUILD)/bench-NAME. Both link the library.
TOOLS    := $(patsubst scripts/%.c,$(BUILD)/ws-%,$(wildcard scripts/*.c))
BENCHES  := $(patsubst bench/%.c,$(BUILD)/bench-%,$(wildcard bench/*.c))

# bench/resample.c also measures libsamplerate when it is installed (it is not
# a dependency of the program).
ifeq ($(shell $(PKG) --exists samplerate && echo yes),yes)
$(BUILD)/bench/resample.o: ALL_CFLAGS += -DWS_HAVE_SAMPLERATE $(shell $(PKG) --cflags samplerate)
$(BUILD)/bench-resample: LDLIBS += $(shell $(PKG) --libs samplerate)
endif

.PHONY: all test asan check interop install bundle clean
# Keep the objects of tools and benches (make would delete them as intermediates).
.SECONDARY:
all: $(BUILD)/whisper-stem $(TOOLS) $(BENCHES)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# The numeric kernels are written as plain loops for the vectoriser; results
# stay IEEE (no -ffast-math): -fno-trapping-math only lets GCC if-convert
# branch-free selects, since nothing here reads floating-point exception flags.
$(BUILD)/src/conv/%.o $(BUILD)/src/mel/%.o: ALL_CFLAGS += -O3 -fno-trapping-math

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libwhisperstem.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/whisper-stem: $(BUILD)/src/main.o $(BUILD)/libwhisperstem.a
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/ws-%: $(BUILD)/scripts/%.o $(BUILD)/libwhisperstem.a
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bench-%: $(BUILD)/bench/%.o $(BUILD)/libwhisperstem.a
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/test_runner: $(TEST_OBJ) $(BUILD)/libwhisperstem.a
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(TEST_LIBS) $(LDLIBS)

# The suite finds the binaries and data through these variables.
TEST_ENV = WS_BIN=$(abspath $(BUILD)/whisper-stem) WS_MKMODEL=$(abspath $(BUILD)/ws-mkmodel) \
           WS_CONVERT=$(abspath $(BUILD)/ws-convert) \
           WS_TESTDATA=$(abspath tests/data) WS_SAMPLES=$(abspath samples) WS_PTXAS=$(PTXAS)

test: all $(BUILD)/test_runner
	$(TEST_ENV) $(BUILD)/test_runner $(TEST_ARGS)
	@$(BUILD)/whisper-stem --check >/dev/null 2>&1 && echo "✓ GPU found: the gpu_* tests ran" || \
	  echo "✗ no usable CUDA driver or GPU here: the gpu_* tests were skipped (scripts/gpu-node.sh runs them on a GPU machine)"

# Criterion counts a test that leaks as passing, so the log is searched too.
asan:
	@set -o pipefail; \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp):print_suppressions=0 \
	  $(MAKE) --no-print-directory BUILD=build-asan SAN=1 CFLAGS="-O1 -g" test 2>&1 | tee build-asan.log; \
	if grep -E "LeakSanitizer|AddressSanitizer|runtime error:" build-asan.log; then \
	  echo "✗ sanitizer reports above (build-asan.log)"; exit 1; fi; echo "✓ no sanitizer reports"


# GGUF interop: files we write, read by an independent reader (@huggingface/gguf, npm).
interop: $(BUILD)/ws-mkmodel $(BUILD)/ws-convert $(BUILD)/whisper-stem
	tests/interop/run.sh $(BUILD)
	tests/interop/pt.sh $(BUILD)

# What CI runs: the suite, the suite again under the sanitizers, the interop check.
check: test asan interop

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/whisper-stem $(DESTDIR)$(PREFIX)/bin/whisper-stem
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(BUILD)/ws-convert $(DESTDIR)$(PREFIX)/bin/whisper-stem-convert

bundle: all $(BUILD)/test_runner
	scripts/bundle.sh $(BUILD) $(BUILD)/bundle

clean:
	rm -rf build build-asan build-asan.log

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
