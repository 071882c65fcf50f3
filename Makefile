# whisper-stem - build, test, install.
#
#   make                 build/whisper-stem, the tools (ws-*), the benches and the libraries
#   make test            build and run the Criterion suite (tests/), the exported-symbol
#                        check (tests/check-exports.sh) and install-check
#   make asan            the same suite under AddressSanitizer + UBSan (build-asan/)
#   make tsan            the tests that run threads under ThreadSanitizer (build-tsan/)
#   make interop         GGUF files we write, read by @huggingface/gguf (needs node, npm)
#   make fuzz-replay     each fuzz harness over its committed corpus, gcc + ASan/UBSan
#   make fuzz [FUZZ_TIME=60]  each harness under libFuzzer (clang) for FUZZ_TIME s
#   make fuzz-smoke      fuzz with FUZZ_TIME=10 when clang has libFuzzer, else says so
#   make corpus          the Slurm and GNU parallel recipes over 200 files (tests/corpus/;
#                        the Slurm half starts a one-node cluster, as root)
#   make check           test + asan + tsan + interop + fuzz-replay + fuzz-smoke + corpus +
#                        test-python (what CI runs)
#   make install PREFIX=/usr/local [DESTDIR=] [LIBDIR=...]
#                        binaries, libwhisper-stem.so.VERSION (+ .so.0, .so links) and
#                        libwhisper-stem.a, include/whisper_stem.h and ws_conv.h,
#                        whisper-stem.pc, man pages; `make uninstall` removes exactly those
#   make lib             $(BUILD)/libwhisper-stem.so.VERSION and libwhisper-stem.a alone
#   make install-check   install into a temporary prefix, build tests/client/lib_client.c
#                        with pkg-config alone, run it, uninstall, check nothing is left
#   make bundle          build/bundle/: binary + test runner + their shared libraries,
#                        relocatable (RUNPATH $ORIGIN/lib), for GPU nodes
#
# Knobs: BUILD=dir  CC=...  CFLAGS=...  SAN=1 (sanitizers)  PREFIX=...  DESTDIR=...
#        BINDIR, LIBDIR, INCLUDEDIR, MANDIR (default $(PREFIX)/bin, lib, include, share/man)
# No CUDA toolkit is needed: the GPU path loads libcuda.so.1 at run time.

BUILD   ?= build
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
CC      ?= cc
CFLAGS  ?= -O2 -g
PKG     ?= pkg-config
SHELL   := /bin/bash

# Optional fragments (mk/NAME.mk) add targets of their own, e.g. the Python module's.
# They come before `all`, so the default goal is named.
.DEFAULT_GOAL := all
-include $(wildcard mk/*.mk)

PKGS      := sndfile fftw3f soxr libcjson zlib
TEST_PKGS := criterion

# The version is the public header's (WHISPER_STEM_VERSION_*); the soname carries the major.
VERSION := $(shell sed -n 's/^\#define WHISPER_STEM_VERSION_[A-Z]* \([0-9][0-9]*\).*/\1/p' \
             include/whisper_stem.h | paste -sd.)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
SONAME  := libwhisper-stem.so.$(SOMAJOR)
SHLIB   := $(BUILD)/libwhisper-stem.so.$(VERSION)
ARLIB   := $(BUILD)/libwhisper-stem.a

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
ifneq ($(filter test asan tsan check bundle,$(MAKECMDGOALS)),)
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
# ThreadSanitizer (make tsan): GCC instruments the resolver it makes for a target_clones
# function (__tsan_func_entry), and the loader runs that resolver while relocating, before
# the runtime is set up: the program crashed at load. Under TSan the kernels are built
# without clones (one generic version: the same loops and sums, the same bytes).
ifeq ($(SAN),thread)
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer '-Dtarget_clones(...)='
endif
# Everything is position-independent (the same objects make the archive and the shared
# library); the library's own objects hide every symbol that include/*.h does not mark
# WS_API (tests/check-exports.sh holds the shared library to that).
ALL_CFLAGS  = $(CFLAGS) $(WARN) $(DEFS) $(NVTX_FLAGS) $(SANFLAGS) -fPIC -Iinclude -Isrc $(shell $(PKG) --cflags $(PKGS))
LDLIBS      = $(shell $(PKG) --libs $(PKGS)) -lpthread -ldl -lm
TEST_CFLAGS = $(ALL_CFLAGS) $(shell $(PKG) --cflags criterion) -Itests
TEST_LIBS   = $(shell $(PKG) --libs criterion)

SRC      := $(wildcard src/*.c src/*/*.c src/*/*/*.c)
LIB_SRC  := $(filter-out src/cli/main.c,$(SRC))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
# The shared library: the API and the layers under it (not the command's cli/ nor the
# converter's convert/, which no public header declares).
SO_OBJ   := $(filter-out $(BUILD)/src/cli/% $(BUILD)/src/convert/%,$(LIB_OBJ))
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

.PHONY: all lib test test-isa asan check interop install uninstall install-check bundle clean
# Keep the objects of tools and benches (make would delete them as intermediates).
.SECONDARY:
all: $(BUILD)/whisper-stem $(TOOLS) $(BENCHES) lib
lib: $(SHLIB) $(BUILD)/libwhisper-stem.so.$(SOMAJOR) $(BUILD)/libwhisper-stem.so $(ARLIB)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# The numeric kernels are written as plain loops for the vectoriser; results
# stay IEEE (no -ffast-math): -fno-trapping-math only lets GCC if-convert
# branch-free selects, since nothing here reads floating-point exception flags.
# -ffp-contract=off keeps every a*b + c in C rounded twice, as -std=c11 does in GCC
# (other compilers fuse by default): fused multiply-adds are written out where wanted.
$(BUILD)/src/conv/%.o $(BUILD)/src/mel/%.o: ALL_CFLAGS += -O3 -fno-trapping-math -ffp-contract=off
$(BUILD)/src/%.o: ALL_CFLAGS += -fvisibility=hidden

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(ARLIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Under the sanitizers the runtime comes from the program, so undefined symbols are allowed.
$(SHLIB): $(SO_OBJ)
	$(CC) $(CFLAGS) $(SANFLAGS) -shared -Wl,-soname,$(SONAME) $(if $(SANFLAGS),,-Wl,--no-undefined) \
	  $^ -o $@ $(LDLIBS)
$(BUILD)/libwhisper-stem.so.$(SOMAJOR) $(BUILD)/libwhisper-stem.so: $(SHLIB)
	ln -sf $(notdir $<) $@

# pkg-config's file, written at install time with the paths of that install; static
# linking (--static) adds Requires.private and Libs.private.
PC_LINES = 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
  'Name: whisper-stem' \
  'Description: Whisper audio frontend: audio to 16 kHz, log-Mel and the encoder conv stem (CPU or CUDA)' \
  'Version: $(VERSION)' 'Requires.private: $(PKGS)' \
  'Libs: -L$${libdir} -lwhisper-stem' 'Libs.private: -lpthread -ldl -lm' \
  'Cflags: -I$${includedir}'

$(BUILD)/whisper-stem: $(BUILD)/src/cli/main.o $(ARLIB)
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/ws-%: $(BUILD)/scripts/%.o $(ARLIB)
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bench-%: $(BUILD)/bench/%.o $(ARLIB)
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

# Under ThreadSanitizer the runner also gets tests/tsan/arena.c (Criterion's arena address).
TSAN_OBJ := $(if $(filter thread,$(SAN)),$(BUILD)/tests/tsan/arena.o)
$(BUILD)/test_runner: $(TEST_OBJ) $(TSAN_OBJ) $(ARLIB)
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(TEST_LIBS) $(LDLIBS)

# The suite finds the binaries and data through these variables.
TEST_ENV = WS_BIN=$(abspath $(BUILD)/whisper-stem) WS_MKMODEL=$(abspath $(BUILD)/ws-mkmodel) \
           WS_CONVERT=$(abspath $(BUILD)/ws-convert) \
           WS_TESTDATA=$(abspath tests/data) WS_SAMPLES=$(abspath samples) WS_PTXAS=$(PTXAS)

# tests/client/client.c: a caller of the conv engine built from include/ alone (no -Isrc).
$(BUILD)/ws-conv-client: tests/client/client.c include/ws_conv.h $(ARLIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) $(DEFS) $(SANFLAGS) -Iinclude $< -o $@ $(ARLIB) $(LDLIBS)

test: all $(BUILD)/test_runner $(BUILD)/ws-conv-client
	scripts/check-layers.sh
	tests/check-exports.sh $(BUILD)
	$(TEST_ENV) $(BUILD)/test_runner $(TEST_ARGS)
	@if $(BUILD)/ws-conv-client; then echo "✓ conv engine client (include/ws_conv.h alone) gave the hand-computed values"; \
	  else echo "✗ conv engine client (tests/client/client.c) failed"; exit 1; fi
	@$(MAKE) --no-print-directory install-check
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

# ThreadSanitizer over the tests that run threads: log-Mels of one plan and of one API
# context from several threads, the batch API's workers, the conv engine and the stem on
# several threads, the command's workers over many inputs (it runs build-tsan's
# whisper-stem), tar shards written on several threads and the device runtime opened and
# closed on several threads (against the stand-in driver). Every process (the runner,
# its sandboxed children, the commands they run) writes its reports to
# build-tsan/tsan-logs/tsan.PID, the run's output goes to build-tsan/tsan.log; any report
# fails the target. tests/tsan.supp silences third-party code only (NVTX's lazy set-up). TSan needs vm.mmap_rnd_bits <= 28
# ("FATAL: ThreadSanitizer: unexpected memory mapping" otherwise): on a kernel with more,
# the runner runs without address randomisation (setarch -R, util-linux).
TSAN_TESTS := api/batch_* api/one_context_from_several_threads_* mel/thread_count_* \
  mel/one_plan_from_several_threads_* engine/runs_on_one_plan_from_several_threads_* \
  engine/the_same_run_twice_* stem/same_bits_for_any_thread_count \
  minfilt/a_row_has_the_same_bits_whatever_rows_a_call_covers \
  conv/matches_oracle_stride1_and_stride2_any_threads cli/many_inputs_give_the_same_bytes_* \
  cli/the_same_bytes_for_any_thread_count tar/shards_written_on_several_threads_* \
  audio/failed_opens_on_many_threads_* audio/fifo_with_a_late_writer_* \
  audio_av/mp3_segments_on_several_threads_* audio_av/opus_segments_on_several_threads_* \
  runtime/many_ws_gpu_on_many_threads_* cli/gpu_run_on_a_stand_in_driver_* cli/detached_* \
  tar_in/shard_members_are_the_loose_files_* tar_in/gzip_shards_of_tar_in_*
tsan_space := $() $()
.PHONY: tsan tsan-run
tsan:
	@set -o pipefail; rm -rf build-tsan/tsan-logs; mkdir -p build-tsan/tsan-logs; \
	$(MAKE) --no-print-directory BUILD=build-tsan SAN=thread CFLAGS="-O1 -g" tsan-run 2>&1 | tee build-tsan/tsan.log; \
	rc=$$?; if grep -l "WARNING: ThreadSanitizer" build-tsan/tsan.log build-tsan/tsan-logs/* 2>/dev/null; then \
	  echo "✗ ThreadSanitizer reports in the files above"; exit 1; fi; \
	if [ $$rc -ne 0 ]; then echo "✗ make tsan failed (build-tsan/tsan.log)"; exit 1; fi; \
	echo "✓ no ThreadSanitizer reports"

tsan-run: $(BUILD)/test_runner $(BUILD)/whisper-stem $(BUILD)/ws-mkmodel $(BUILD)/ws-convert
	@norand=; if [ "$$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ]; then \
	  norand="setarch $$(uname -m) -R"; echo "vm.mmap_rnd_bits > 28: running under $$norand"; fi; \
	$(TEST_ENV) TSAN_OPTIONS="log_path=$(abspath $(BUILD))/tsan-logs/tsan:second_deadlock_stack=1:suppressions=$(abspath tests/tsan.supp)" \
	  $$norand $(BUILD)/test_runner --filter '@($(subst $(tsan_space),|,$(strip $(TSAN_TESTS))))'

# GGUF interop: files we write, read by an independent reader (@huggingface/gguf, npm).
interop: $(BUILD)/ws-mkmodel $(BUILD)/ws-convert $(BUILD)/whisper-stem
	tests/interop/run.sh $(BUILD)
	tests/interop/pt.sh $(BUILD)

# What CI runs: the suite, the suite again under the sanitizers, the interop check,
# the fuzz corpora replayed, and a short fuzz run when libFuzzer is there.
# The CPU conv on its other paths (WS_CPU_ISA; a path the CPU lacks falls to the best it
# has): the sgemm, conv, stem and engine tests again.
test-isa: $(BUILD)/test_runner
	for isa in avx2 scalar; do \
	  echo "WS_CPU_ISA=$$isa"; \
	  WS_CPU_ISA=$$isa $(TEST_ENV) $(BUILD)/test_runner --filter='@(sgemm|conv|stem|engine|engine_states|minfilt)/*' || exit 1; \
	done

check: test test-isa asan tsan interop fuzz-replay fuzz-smoke corpus test-python test-wheel

# Corpus runs (tests/corpus/): 200 WAV files and 6 bad inputs through
# scripts/parallel-shards.sh (3 shards under GNU parallel) and scripts/slurm-array.sh
# (a 4-task array and its merge job on a one-node Slurm the test starts and stops;
# needs root), each output compared with a single-file run of its input; and a new
# user's workflow (a list with broken files, interrupted, retried with failed.txt,
# rerun) through both, in file mode and with --tar-size (workflow.sh, slurm.sh).
.PHONY: corpus
corpus: $(BUILD)/whisper-stem $(BUILD)/ws-mkmodel
	tests/corpus/parallel.sh $(BUILD)
	tests/corpus/workflow.sh $(BUILD)
	tests/corpus/slurm.sh $(BUILD)

# --- fuzzing (tests/fuzz/README.md) ------------------------------------------
# Each tests/fuzz/fuzz_NAME.c is a libFuzzer harness with a seed corpus in
# tests/fuzz/corpus/NAME/. `fuzz` builds the harnesses and the library with clang
# (-fsanitize=fuzzer,address,undefined) in $(BUILD)/fuzz and runs each for
# FUZZ_TIME seconds over a copy of its corpus (the committed one never grows);
# a crash, a sanitizer report, a leak or a run over 10 s (-timeout=10: hangs are
# findings) fails it, the input left in $(BUILD)/fuzz/run-NAME/. `fuzz-replay`
# runs every corpus file once through each harness linked with tests/fuzz/replay.c
# instead of libFuzzer, built by $(CC) under ASan/UBSan in $(BUILD)/replay.
FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_BUILD := $(BUILD)/fuzz
FUZZERS    := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS = -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(WARN) $(DEFS) -Iinclude -Isrc \
              $(shell $(PKG) --cflags $(PKGS))
FUZZ_ENV   := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
              UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
              LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp):print_suppressions=0
.PHONY: fuzz fuzz-replay fuzz-replay-run fuzz-smoke fuzz-seeds

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

# An archive, so that each harness links only the objects it reaches.
$(FUZZ_BUILD)/libwhisper-stem.a: $(LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz-%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_BUILD)/libwhisper-stem.a
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -o $@ $(LDLIBS)

fuzz: $(FUZZERS:%=$(FUZZ_BUILD)/fuzz-%)
	@set -e; for h in $(FUZZERS); do \
	  run=$(FUZZ_BUILD)/run-$$h; rm -rf $$run; mkdir -p $$run/corpus $$run/findings; \
	  cp tests/fuzz/corpus/$$h/* $$run/corpus/; \
	  echo "fuzz-$$h: $(FUZZ_TIME) s over a copy of tests/fuzz/corpus/$$h ($$(ls $$run/corpus | wc -l) files)"; \
	  if ! $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz-$$h -max_total_time=$(FUZZ_TIME) -timeout=10 \
	      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$$run/findings/ \
	      $$run/corpus > $$run/log 2>&1; then \
	    tail -40 $$run/log; echo "✗ fuzz-$$h: a finding in $$run/findings/ (log: $$run/log)"; exit 1; fi; \
	  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" $$run/log | tr '\n' ' '; echo; \
	done; echo "✓ fuzz: no findings in $(FUZZ_TIME) s per harness"

# No libFuzzer needed: the objects are $(CC)'s, under the sanitizers, in $(BUILD)/replay.
fuzz-replay:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/replay SAN=1 CFLAGS="-O1 -g" fuzz-replay-run

fuzz-replay-run: $(FUZZERS:%=$(BUILD)/replay-%)
	@set -e; for h in $(FUZZERS); do \
	  if ! $(FUZZ_ENV) timeout 600 $(BUILD)/replay-$$h tests/fuzz/corpus/$$h 2>$(BUILD)/replay-$$h.log; then \
	    tail -30 $(BUILD)/replay-$$h.log; echo "✗ replay-$$h: a finding (log: $(BUILD)/replay-$$h.log)"; exit 1; fi; \
	  echo "✓ replay-$$h: $$(grep -c '^replay: .* bytes)$$' $(BUILD)/replay-$$h.log) corpus files, no findings"; \
	done

$(BUILD)/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/replay-%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/replay.o $(ARLIB)
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

# CI's short run: only where clang can link a libFuzzer program.
fuzz-smoke:
	@t=$$(mktemp -d); \
	if printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' > $$t/p.c && \
	    $(FUZZ_CC) -fsanitize=fuzzer,address,undefined $$t/p.c -o $$t/p >/dev/null 2>&1; then \
	  rm -rf $$t; $(MAKE) --no-print-directory fuzz FUZZ_TIME=10; \
	else rm -rf $$t; echo "✗ $(FUZZ_CC) cannot link -fsanitize=fuzzer: the 10 s fuzz runs were skipped" \
	  "(scripts/install-deps.sh --test installs clang and libclang-rt-dev)"; fi

# Rewrites the generated seeds (tests/fuzz/seeds.c); the handcrafted ones stay.
fuzz-seeds: $(BUILD)/ws-fuzz-seeds
	$(BUILD)/ws-fuzz-seeds tests/fuzz/corpus

$(BUILD)/ws-fuzz-seeds: $(BUILD)/tests/fuzz/seeds.o $(ARLIB)
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(LDLIBS)

# What install puts where, and uninstall removes (files and links only: the directories
# may hold others' files).
# The corpus scripts and the .pt converter go to BINDIR under these names (scripts/NAME: the
# script installed as whisper-stem-SUFFIX); each finds the whisper-stem beside it.
SCRIPTS   = parallel-shards.sh:parallel slurm-array.sh:slurm pt-to-gguf.py:pt-to-gguf
INSTALLED = $(BINDIR)/whisper-stem $(BINDIR)/whisper-stem-convert $(TOOLS:$(BUILD)/%=$(BINDIR)/%) \
            $(foreach x,$(SCRIPTS),$(BINDIR)/whisper-stem-$(lastword $(subst :, ,$(x)))) \
            $(LIBDIR)/libwhisper-stem.so.$(VERSION) $(LIBDIR)/libwhisper-stem.so.$(SOMAJOR) \
            $(LIBDIR)/libwhisper-stem.so $(LIBDIR)/libwhisper-stem.a \
            $(LIBDIR)/pkgconfig/whisper-stem.pc $(INCLUDEDIR)/whisper_stem.h $(INCLUDEDIR)/ws_conv.h \
            $(MANDIR)/man1/whisper-stem.1 $(MANDIR)/man1/whisper-stem-convert.1

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	  $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BUILD)/whisper-stem $(DESTDIR)$(BINDIR)/whisper-stem
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	install -m 755 $(BUILD)/ws-convert $(DESTDIR)$(BINDIR)/whisper-stem-convert
	$(foreach x,$(SCRIPTS),install -m 755 scripts/$(firstword $(subst :, ,$(x))) \
	  $(DESTDIR)$(BINDIR)/whisper-stem-$(lastword $(subst :, ,$(x)));)
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libwhisper-stem.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libwhisper-stem.so.$(SOMAJOR)
	ln -sf libwhisper-stem.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libwhisper-stem.so
	install -m 644 $(ARLIB) $(DESTDIR)$(LIBDIR)/
	printf '%s\n' $(PC_LINES) > $(DESTDIR)$(LIBDIR)/pkgconfig/whisper-stem.pc
	install -m 644 include/whisper_stem.h include/ws_conv.h $(DESTDIR)$(INCLUDEDIR)/
	for m in whisper-stem whisper-stem-convert; do \
	  sed '1s/"whisper-stem [0-9.]*"/"whisper-stem $(VERSION)"/' man/$$m.1 > $(DESTDIR)$(MANDIR)/man1/$$m.1; done

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

# Installs into a temporary prefix, builds tests/client/lib_client.c with pkg-config's
# flags alone, runs it on the installed library against the installed command's files
# (the same bytes, CPU fp32), runs the installed scripts (tests/corpus/installed.sh:
# each finds the installed whisper-stem, and the Slurm one itself), uninstalls and
# checks that no file or link is left.
install-check: all
	@set -e; t=$$(mktemp -d); p=$$t/prefix; \
	dirs="PREFIX=$$p BINDIR=$$p/bin LIBDIR=$$p/lib INCLUDEDIR=$$p/include MANDIR=$$p/share/man DESTDIR="; \
	$(MAKE) --no-print-directory $$dirs install >/dev/null; \
	flags=$$(PKG_CONFIG_PATH=$$p/lib/pkgconfig $(PKG) --cflags --libs whisper-stem); \
	echo "lib_client: cc ... $$flags"; \
	$(CC) -std=c11 -Wall -Wextra -Werror $(SANFLAGS) tests/client/lib_client.c $$flags -o $$t/lib_client; \
	$$p/bin/ws-mkmodel --size tiny -o $$t/tiny.gguf; \
	$$p/bin/whisper-stem -q --device cpu -m $$t/tiny.gguf samples/jfk.wav -o $$t/emb.npy; \
	$$p/bin/whisper-stem -q --mel samples/jfk.wav -o $$t/mel.npy; \
	LD_LIBRARY_PATH=$$p/lib $$t/lib_client $$t/tiny.gguf samples/jfk.wav $$t/emb.npy $$t/mel.npy; \
	tests/corpus/installed.sh $$p/bin $$t/tiny.gguf samples/jfk.wav $$t/emb.npy; \
	$(MAKE) --no-print-directory $$dirs uninstall >/dev/null; \
	left=$$(find $$p ! -type d); \
	if [ -n "$$left" ]; then echo "✗ make uninstall left: $$left"; exit 1; fi; \
	rm -rf $$t; echo "✓ installed, a client built with pkg-config alone ran, uninstalled leaving nothing"

bundle: all $(BUILD)/test_runner
	scripts/bundle.sh $(BUILD) $(BUILD)/bundle

clean:
	rm -rf build build-asan build-asan.log build-tsan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
