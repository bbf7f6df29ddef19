# vzcaps build. `make` builds for this machine; `make check` runs every test; see README.
# Linux builds the library for the GNU Objective-C runtime (tests and demo); `make dist`
# cross-builds the macOS artifacts with zig.

UNAME_S := $(shell uname -s)
PREFIX ?= /usr/local
DESTDIR ?=
B := build

WARN := -Wall -Wextra -Werror
CSTD := -std=c11
# The injected library keeps every frame under 4 KiB: Apple's clang calls ___chkstk_darwin
# for larger ones (an import the library must not have).
LIB_FRAME := -Wframe-larger-than=4000
CORE_SRC := $(wildcard src/core/*.c)
# the source lists follow the tree (scripts/sources, also used by dist and cross-link)
PLATFORM := $(if $(filter Darwin,$(UNAME_S)),darwin,linux)
LIB_SRC := $(shell sh scripts/sources lib $(PLATFORM))
CLI_ALL := $(shell sh scripts/sources cli $(PLATFORM))
# the two cmocka programs split by concern over several files (tests/unit/unit_tests.h)
TEST_CORE_SRC := $(shell sh scripts/sources test_core $(PLATFORM))
TEST_CLI_SRC := $(shell sh scripts/sources test_cli_units $(PLATFORM))
HEADERS := $(wildcard src/*/*.h)
include mk/darwin.mk
# generated at build time from the command table (src/cli/commands.c) by the command itself
GENERATED := $(B)/vzcaps.1 $(B)/completions/vzcaps.bash $(B)/completions/_vzcaps $(B)/completions/vzcaps.fish

ifeq ($(UNAME_S),Darwin)
  CC := xcrun clang
  LIB := $(B)/libvzcaps.dylib
  all: $(LIB) $(B)/vzcaps $(GENERATED)
  $(LIB): $(LIB_SRC) $(HEADERS)
	@mkdir -p $(B)
	$(CC) $(CSTD) $(WARN) $(LIB_FRAME) -O2 -dynamiclib -fvisibility=hidden -mmacosx-version-min=13.0 \
	  -install_name @rpath/libvzcaps.dylib $(filter %.c,$^) $(DARWIN_LIB_LINK) -o $@
  $(B)/vzcaps: $(CLI_ALL) $(HEADERS) $(B)/kernels.h
	$(CC) $(CSTD) $(WARN) -O2 -I$(B) -mmacosx-version-min=13.0 $(filter %.c,$^) $(DARWIN_CLI_LINK) -o $@
  TEST_CORE_LINK := $(DARWIN_TEST_CORE_LINK)
  TEST_CLI_LINK := $(DARWIN_TEST_CLI_LINK)
else
  CC := gcc
  WARN += -Wno-format-truncation
  LIB := $(B)/libvzcaps.so
  OBJC := -fgnu-runtime
  TEST_CORE_LINK :=
  TEST_CLI_LINK := -lm
  all: $(LIB) $(B)/vzcaps $(GENERATED) rig
  # -nostartfiles: the library's only start-up code is its constructor (.init_array, run by ld.so);
  # the C runtime's shared-object files add nothing it uses, but four symbols ld.so must look up
  # in every process the library is preloaded into (_ITM_*, __gmon_start__, __cxa_finalize)
  $(LIB): $(LIB_SRC) $(HEADERS)
	@mkdir -p $(B)
	$(CC) $(CSTD) $(WARN) $(LIB_FRAME) -O2 -g -flto=auto -fPIC -shared -nostartfiles -fvisibility=hidden $(filter %.c,$^) -o $@ -lobjc -ldl -lpthread
  $(B)/vzcaps: $(CLI_ALL) $(HEADERS) $(B)/kernels.h
	$(CC) $(CSTD) $(WARN) -O2 -g -I$(B) $(filter %.c,$^) -o $@ -lm
endif

# ---- the GNU-runtime stand-in rig (Linux) ----
CLIENTS := $(B)/clients/libggml-metal.so $(B)/clients/libtorch_cpu.so $(B)/clients/libother-client.so
BENCH_SITES := $(B)/bench/libsites0.so $(B)/bench/libsites1.so $(B)/bench/libsites2.so $(B)/bench/libsites3.so
RIG := $(B)/libfakemetal.so $(B)/probe $(B)/probe_static $(B)/bench_calls $(BENCH_SITES) $(B)/pylauncher $(CLIENTS) $(B)/callers $(B)/reload $(B)/dtable_race $(B)/libloadhook.so
rig: $(RIG)
$(B)/libfakemetal.so: tests/rig/fakemetal.m
	@mkdir -p $(B)
	$(CC) -std=gnu11 $(OBJC) $(WARN) -O2 -fPIC -shared $< -o $@ -lobjc
$(B)/probe: tests/rig/probe.m $(B)/libfakemetal.so
	$(CC) -std=gnu11 $(OBJC) $(WARN) -O2 $< -o $@ -L$(B) -lfakemetal -lobjc -lpthread -Wl,-rpath,'$$ORIGIN'
# the same stand-in compiled into the executable: its classes register after every constructor
$(B)/probe_static: tests/rig/probe.m tests/rig/fakemetal.m
	@mkdir -p $(B)
	$(CC) -std=gnu11 $(OBJC) $(WARN) -O2 $^ -o $@ -lobjc -lpthread
# three Metal clients for the caller-scope tests, each asking from its own image
$(B)/clients/libggml-metal.so: ASK := ask_ggml
$(B)/clients/libtorch_cpu.so: ASK := ask_torch
$(B)/clients/libother-client.so: ASK := ask_other
$(B)/clients/%.so: tests/rig/client.m
	@mkdir -p $(B)/clients
	$(CC) -std=gnu11 $(OBJC) $(WARN) -O2 -fPIC -shared -DASK=$(ASK) -Wl,-soname,$(notdir $@) $< -o $@ -lobjc
$(B)/callers: tests/rig/callers.m $(CLIENTS) $(B)/libfakemetal.so
	$(CC) -std=gnu11 $(OBJC) $(WARN) -O2 $< -o $@ $(CLIENTS) -L$(B) -lfakemetal -lobjc -lpthread \
	  -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/clients'
# a client library unloaded and another loaded in its memory (the caller scope follows images)
$(B)/reload: tests/rig/reload.c $(B)/libfakemetal.so
	$(CC) $(CSTD) $(WARN) -O2 $< -o $@ -L$(B) -lfakemetal -lobjc -ldl -Wl,-rpath,'$$ORIGIN'
# another user of the runtime's class-load hook, preloaded beside the library
$(B)/libloadhook.so: tests/rig/loadhook.c
	@mkdir -p $(B)
	$(CC) $(CSTD) $(WARN) -O2 -fPIC -shared $< -o $@ -lobjc
# the GNU runtime's dispatch-table update under concurrent messaging, without vzcaps
$(B)/dtable_race: tests/rig/dtable_race.m
	@mkdir -p $(B)
	$(CC) -std=gnu11 $(OBJC) $(WARN) -O2 $< -o $@ -lobjc -lpthread
$(B)/pylauncher: tests/rig/pylauncher.c
	@mkdir -p $(B)
	$(CC) -std=c11 $(WARN) -O2 $< -o $@
$(B)/bench_calls: bench/bench_calls.c $(B)/libfakemetal.so
	$(CC) $(CSTD) -D_POSIX_C_SOURCE=200809L $(WARN) -O2 $< -o $@ -L$(B) -lfakemetal -lobjc -ldl -Wl,-rpath,'$$ORIGIN'
# four images of 2,048 call sites each (make bench's alternating rows): one source, four files
$(B)/bench/libsites%.so: bench/sites.c
	@mkdir -p $(B)/bench
	$(CC) $(CSTD) $(WARN) -O2 -fno-ipa-icf -fno-optimize-sibling-calls -fPIC -shared -Wl,-soname,$(notdir $@) $< -o $@ -lobjc

$(B)/vzcaps.1: $(B)/vzcaps
	$(B)/vzcaps __man >$@.tmp && mv $@.tmp $@
$(B)/completions/vzcaps.bash: $(B)/vzcaps
	@mkdir -p $(B)/completions
	$(B)/vzcaps __completions bash >$@
$(B)/completions/_vzcaps: $(B)/vzcaps
	@mkdir -p $(B)/completions
	$(B)/vzcaps __completions zsh >$@
$(B)/completions/vzcaps.fish: $(B)/vzcaps
	@mkdir -p $(B)/completions
	$(B)/vzcaps __completions fish >$@

# Metal kernel sources embedded in the command (issue: probe/verify).
$(B)/kernels.h: $(wildcard kernels/*.metal) scripts/embed-kernels
	@mkdir -p $(B)
	sh scripts/embed-kernels $@ $(sort $(wildcard kernels/*.metal))

# ---- tests ----
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -g -O1
CMOCKA := $(shell pkg-config --cflags --libs cmocka 2>/dev/null || echo -lcmocka)
$(B)/test_core: $(TEST_CORE_SRC) $(CORE_SRC) $(HEADERS) $(wildcard tests/unit/*.h)
	$(CC) $(CSTD) $(WARN) $(SAN) $(filter %.c,$^) -o $@ $(CMOCKA) $(TEST_CORE_LINK)
$(B)/test_cli_units: $(TEST_CLI_SRC) $(CLI_ALL) $(HEADERS) $(wildcard tests/unit/*.h) $(B)/kernels.h
	$(CC) $(CSTD) $(WARN) $(SAN) -I$(B) -DVZCAPS_NO_MAIN $(filter %.c,$^) -o $@ $(CMOCKA) $(TEST_CLI_LINK)
# the launch floor's decision, from facts alone (linked with the command's sources, without main)
$(B)/test_launch: tests/unit/test_launch.c $(CLI_ALL) $(HEADERS) $(B)/kernels.h
	$(CC) $(CSTD) $(WARN) $(SAN) -I$(B) -DVZCAPS_NO_MAIN $(filter %.c,$^) -o $@ $(CMOCKA) $(TEST_CLI_LINK)
$(B)/test_child: tests/unit/test_child.c $(wildcard src/common/*.c) src/data/scrub.c $(CORE_SRC) $(HEADERS)
	$(CC) $(CSTD) $(WARN) $(SAN) $(filter %.c,$^) -o $@ $(CMOCKA)
$(B)/test_safewrite: tests/unit/test_safewrite.c src/common/safewrite.c src/common/record.c src/common/sha256.c src/common/readfile.c src/common/input.c $(CORE_SRC) src/common/safewrite.h src/common/record.h src/common/input.h
	$(CC) $(CSTD) $(WARN) $(SAN) $(filter %.c,$^) -o $@ $(CMOCKA)
$(B)/test_input: tests/unit/test_input.c src/common/input.c src/common/plist.c src/common/input.h src/common/plist.h
	$(CC) $(CSTD) $(WARN) $(SAN) $(filter %.c,$^) -o $@ $(CMOCKA) -lm
$(B)/san/libvzcaps.so: $(LIB_SRC) $(HEADERS)
	@mkdir -p $(B)/san
	$(CC) $(CSTD) $(WARN) $(SAN) -fPIC -shared -fvisibility=hidden $(filter %.c,$^) -o $@ -lobjc -ldl -lpthread

# the command under ASan and UBSan, for the end-to-end tests that do not inject the library
$(B)/san/vzcaps: $(CLI_ALL) $(HEADERS) $(B)/kernels.h
	@mkdir -p $(B)/san
	$(CC) $(CSTD) $(WARN) $(SAN) -I$(B) $(filter %.c,$^) -o $@ -lm

FUZZERS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 8
# the command's sources are compiled once for all the targets (instrumented as libFuzzer
# instruments, without its main), each target file then linked with them
FUZZ_CFLAGS := $(CSTD) -Wall -Wextra -Werror -g -O1 -I$(B) -DVZCAPS_NO_MAIN -fno-sanitize-recover=all
FUZZ_OBJ := $(patsubst %.c,$(B)/fuzz/obj/%.o,$(CLI_ALL))
$(B)/fuzz/obj/%.o: %.c $(HEADERS) $(B)/kernels.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@
$(FUZZERS): $(FUZZ_OBJ) # named here, so make keeps the objects
$(B)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(B)/fuzz
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(FUZZ_OBJ) -o $@ -lm

# What building and testing needs (scripts/install-deps: everything; docs/developers.md lists
# it); make demo installs only what the demo needs, make check-emu what it needs. Each says up
# front what it will install.
deps:
	@sh scripts/install-deps check
install-deps: deps
deps-demo:
	@sh scripts/install-deps demo
deps-emu:
	@sh scripts/install-deps emu

# On Linux: everything. On macOS (native, Xcode): unit tests and the portable end-to-end
# tests; the GNU-runtime rig, libFuzzer and the cross toolchain are Linux-only.
ifeq ($(UNAME_S),Darwin)
CHECK_BUILD := all $(B)/test_core $(B)/test_cli_units $(B)/test_launch $(B)/test_safewrite $(B)/test_child $(B)/test_input
CHECK_FUZZ := @echo "check: fuzzing skipped (Apple clang has no libFuzzer)"
else
CHECK_BUILD := all $(B)/test_core $(B)/test_cli_units $(B)/test_launch $(B)/test_safewrite $(B)/test_child $(B)/test_input $(B)/san/libvzcaps.so $(B)/san/vzcaps $(FUZZERS)
CHECK_FUZZ := sh scripts/fuzz-seeds && sh scripts/fuzz-run $(FUZZ_SECONDS) $(FUZZERS)
endif

# the test build runs one job per core
CHECK_JOBS := -j$(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
check: deps
	$(MAKE) $(CHECK_JOBS) $(CHECK_BUILD)
	@if sh scripts/have-cross; then $(MAKE) dist; \
	  else echo "check: cross toolchain absent: dist, audit and reproducibility skipped"; fi
	@if [ "$(UNAME_S)" != Darwin ] && sh scripts/have-cross; then $(MAKE) cross-link; fi
	$(B)/test_core
	$(B)/test_cli_units
	$(B)/test_launch
	$(B)/test_safewrite
	$(B)/test_child
	$(B)/test_input
	VZTEST_MAKE_CHECK=1 python3 -m pytest -q -rs tests --ignore=tests/emu
	@if [ "$(UNAME_S)" != Darwin ] && sh scripts/have-cross; then $(MAKE) check-emu; \
	  else echo "check: check-emu skipped (it needs the Linux rig and the cross-built dist/)"; fi
	$(CHECK_FUZZ)
	@if sh scripts/have-cross; then $(MAKE) audit; fi
	@if [ "$(UNAME_S)" != Darwin ] && sh scripts/have-cross; then sh scripts/repro-check; fi

# The README's set-up commands (make demo, make check) on a fresh Debian 12 minbase root built
# with debootstrap (cached under build/fresh), on a clone of the committed HEAD; no test may
# skip there. Linux, as root; minutes.
check-fresh:
	sh scripts/check-fresh

# Opt-in (about 15 s a round, 50 rounds; Linux): tests/runtime/test_callers.py and build/test_child
# looped under CPU load (LOOPS=N for another count); a failure names its round.
check-loops: all $(B)/test_child $(B)/san/libvzcaps.so $(B)/san/vzcaps
	sh scripts/check-loops

# Opt-in (minutes): vzcaps bench against a real llama-bench built from PyPI's llama-cpp-python sdist.
check-llama: deps
	$(MAKE) all
	sh scripts/check-llama
	python3 scripts/check-gates

# Every capability query of the pinned llama.cpp and whisper.cpp sources (PyPI sdists, fetched
# once into ~/.cache/vzcaps/sdists) against the project's table; about a second once cached.
# make check runs it through tests/test_check_gates.py.
check-gates: all
	python3 scripts/check-gates

# Opt-in (about two minutes cold, seconds warm; Linux): llama.cpp's own ggml-metal-device.m, unmodified
# from the same sdist, on the stand-in Metal, stock and with vzcaps; its start-up lines against the prediction.
check-client: deps
	$(MAKE) all
	sh scripts/check-client

# the build says one line, not every compiler command, so that the demo's table is what shows
demo: deps-demo
	@echo "demo: building (make all)"
	@$(MAKE) -s --no-print-directory all
	@sh scripts/demo

bench: deps
	$(MAKE) all
	sh scripts/bench

# The shipped arm64 slice of dist/libvzcaps.dylib run under emulation against the rig (tests/emu;
# docs/developers.md, "The emulated Darwin"); about 45 s of CPU once dist/ and the rig are built.
# make check runs it once, after dist, and leaves tests/emu out of its main pytest run.
check-emu: deps-emu
	$(MAKE) all dist/libvzcaps.dylib
	sh scripts/check-emu
dist/libvzcaps.dylib: $(wildcard src/*/*.c src/*/*/*.c src/*/*.h) mk/darwin.mk scripts/dist scripts/cross-link scripts/sources
	$(MAKE) dist

# PyTorch's MPS start-up beside ggml under emulation with the shipped library, the default scope
# (PyTorch reads Apple7 = NO) and stock_callers = none (YES): tests/emu/torch_mps.py on the
# torch 2.15.0 wheel from PyPI, pinned and fetched once (139 MB; 404 MB kept). Not part of
# make check (about 45 s and 5 GB of memory); .ci/run runs it after make check (Linux).
check-torch: deps
	$(MAKE) dist/libvzcaps.dylib
	python3 scripts/fetch-clients torch-2.15.0-cp312-macosx_14_0_arm64
	python3 tests/emu/torch_mps.py

# ---- macOS artifacts (cross-built on Linux with zig; native on a Mac) ----
dist: deps-cross
	sh scripts/dist

# Every Darwin target of this Makefile (library, command, both test programs), compiled and
# linked for arm64 and x86_64 with the link lines of mk/darwin.mk (Linux only).
cross-link: deps-cross
	sh scripts/cross-link

deps-cross:
	@sh scripts/have-cross || { sh scripts/install-deps emu && sh scripts/have-cross; } || \
	  { echo "make: the cross toolchain is missing: run sh scripts/install-deps (Debian, as root)" >&2; exit 1; }

# packaging/provision-image.sh tried on Linux, into build/try-provision (docs/fleet.md)
try-provision: all
	sh scripts/try-provision

# action.yml's steps run on Linux in the tests' simulated Mac, saying what each did, into
# build/try-action (docs/fleet.md); TRY_INPUTS="NAME=VALUE ..." sets the action's inputs
try-action:
	@sh scripts/install-deps action
	@$(MAKE) -s --no-print-directory all
	python3 scripts/try-action $(TRY_INPUTS)

# the release archive for a guest: make dist, then one tarball with install.sh/uninstall.sh
release: dist $(GENERATED)
	sh scripts/release

audit: $(B)/vzcaps
	python3 scripts/audit dist $(B)/vzcaps

install: all
	sh scripts/install install "$(DESTDIR)" "$(PREFIX)" "$(B)"
uninstall:
	sh scripts/install uninstall "$(DESTDIR)" "$(PREFIX)" "$(B)"

clean:
	rm -rf $(B) dist fuzz-out

.PHONY: all rig deps install-deps deps-demo deps-emu deps-cross check check-emu check-torch check-fresh check-loops check-llama check-gates check-client demo bench dist cross-link release try-provision try-action audit install uninstall clean
