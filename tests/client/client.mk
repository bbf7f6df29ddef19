# Builds llama.cpp's Metal device code, unmodified, against the stand-in Metal on the GNU
# Objective-C runtime (make check-client; scripts/check-client drives it). Owns the build of
# build/client only; never edits a file from the source distribution.
#   make -f tests/client/client.mk GGML=<extracted ggml dir> OUT=build/client
GGML ?= $(error GGML: the ggml directory extracted from the pinned sdist)
OUT ?= build/client
HERE := tests/client
M := $(GGML)/src/ggml-metal
O := $(OUT)/obj

# Every flag below that is not an ordinary build flag, with its reason:
#  -fobjc-runtime=gnustep-1.5  (ggml's .m only) clang's gcc ABI treats `obj[key]` as pointer
#       arithmetic (a language rule of fragile runtimes), so ggml's dictionary subscripts do not
#       compile; GNUstep 1.5's ABI is gcc's module format, adapted at load by gnu_abi.c.
#  -Wl,--wrap=__objc_exec_class  routes libggml-metal.so's module registrations through
#       gnu_abi.c, which relabels the module version (9 -> 8) for gcc's libobjc.
#  -fblocks, -lBlocksRuntime first  ggml uses blocks; Debian's GNUstep base carries a fallback
#       _Block_copy that leaves a clang stack block uncopied, so libBlocksRuntime is loaded
#       before it and its definitions bind (as libSystem's do on macOS).
#  -fconstant-string-class=NSConstantString -DGNUSTEP -DGNUSTEP_BASE_LIBRARY=1 -DGNU_RUNTIME=1
#       what `gnustep-config --objc-flags` gives, for clang.
#  -I $(OUT)/gccobjc  gcc's objc/ headers alone (gcc's whole include directory brings a
#       stdatomic.h clang rejects); include/objc/blocks_runtime.h points GNUstep at <Block.h>.
#  -include apple-prefix.h  what Apple's Foundation brings that GNUstep's does not: unistd.h,
#       Apple's nil (a void * null), Mach's vm_allocate/vm_deallocate.
#  -DTARGET_OS_OSX=1 -DTARGET_CPU_X86_64=0 -D__MAC_OS_X_VERSION_MAX_ALLOWED=150000
#       the target macros of an arm64 macOS 15 SDK build: residency sets on, Mach host memory,
#       and the recommendedMaxWorkingSetSize line, as llama.cpp is built for Apple silicon.
#  -DvisionOS=watchOS  clang 14 predates the visionOS platform name in @available; on Linux
#       every named platform is foreign, so `*` decides either way.
#  -DGGML_METAL_EMBED_LIBRARY + embed.s  the default of ggml's CMake on Apple: the kernel
#       sources are embedded (unmodified, one symbol pair per kind) and handed to the device's
#       newLibraryWithSource:, which the stand-in accepts without compiling.
CLANG_OBJC_RT := -fblocks -fconstant-string-class=NSConstantString -DGNUSTEP -DGNUSTEP_BASE_LIBRARY=1 \
  -DGNU_RUNTIME=1 -I $(HERE)/include -I $(OUT)/gccobjc -I /usr/include/GNUstep
APPLE_TARGET := -DTARGET_OS_OSX=1 -DTARGET_CPU_X86_64=0 -D__MAC_OS_X_VERSION_MAX_ALLOWED=150000 -DvisionOS=watchOS
GGML_DEFS := -D_GNU_SOURCE -DGGML_SCHED_MAX_COPIES=4 -DGGML_METAL_EMBED_LIBRARY -I $(OUT)/gen \
  -I $(GGML)/include -I $(GGML)/src -I $(M)
# third-party code: its own warnings are not ours to fix
THIRD := -O1 -fPIC -w
OURS := -O1 -fPIC -Wall -Wextra -Werror

BASE_C := ggml.c ggml-alloc.c ggml-quants.c
BASE_CXX := ggml.cpp ggml-backend.cpp ggml-backend-meta.cpp ggml-opt.cpp ggml-threading.cpp gguf.cpp
METAL_CXX := ggml-metal-device.cpp ggml-metal-common.cpp ggml-metal-fusion.cpp ggml-metal-tuning.cpp
BASE_OBJS := $(BASE_C:%=$(O)/%.o) $(BASE_CXX:%=$(O)/%.o)
METAL_OBJS := $(O)/ggml-metal-device.m.o $(METAL_CXX:%=$(O)/%.o) $(O)/gnu_abi.o $(O)/embed.o
KINDS := $(shell sed -n '/^set(METALLIB_KERNEL_SOURCES/,/^)/p' $(M)/CMakeLists.txt | sed -n 's|.*kernels/\([a-z0-9_]*\)\.metal.*|\1|p')

all: $(OUT)/client

$(OUT)/gccobjc/objc:
	@mkdir -p $(OUT)/gccobjc
	ln -sfn "$$(gcc -print-file-name=include)/objc" $@

# as ggml's CMake configures it (the version words are not read by the device code)
$(OUT)/gen/ggml-version.h: $(GGML)/src/ggml-version.h.in
	@mkdir -p $(OUT)/gen
	sed -e 's/@GGML_VERSION@/sdist/' -e 's/@GGML_BUILD_COMMIT@/sdist/' $< >$@

$(OUT)/gen/embed.s: $(M)/CMakeLists.txt $(KINDS:%=$(M)/kernels/%.metal)
	@mkdir -p $(OUT)/gen
	@test -n "$(KINDS)" || { echo "client.mk: no kernel list in $(M)/CMakeLists.txt" >&2; exit 1; }
	for k in $(KINDS); do printf '.section .rodata\n.globl ggml_metallib_%s_start\nggml_metallib_%s_start:\n.incbin "%s"\n.globl ggml_metallib_%s_end\nggml_metallib_%s_end:\n' \
	  $$k $$k "$(M)/kernels/$$k.metal" $$k $$k; done >$@.tmp
	printf '.section .note.GNU-stack,"",@progbits\n' >>$@.tmp
	mv $@.tmp $@

$(O)/embed.o: $(OUT)/gen/embed.s
	@mkdir -p $(O)
	clang -c $< -o $@

$(O)/%.c.o: $(GGML)/src/%.c $(OUT)/gen/ggml-version.h
	@mkdir -p $(O)
	clang -std=gnu11 $(THIRD) $(GGML_DEFS) -c $< -o $@
$(O)/%.cpp.o: $(GGML)/src/%.cpp
	@mkdir -p $(O)
	clang++ -std=c++17 $(THIRD) $(GGML_DEFS) -c $< -o $@
$(O)/%.cpp.o: $(M)/%.cpp
	@mkdir -p $(O)
	clang++ -std=c++17 $(THIRD) $(GGML_DEFS) -c $< -o $@
$(O)/ggml-metal-device.m.o: $(M)/ggml-metal-device.m $(OUT)/gccobjc/objc $(wildcard $(HERE)/include/*/*.h $(HERE)/include/*.h)
	@mkdir -p $(O)
	clang -fobjc-runtime=gnustep-1.5 $(CLANG_OBJC_RT) $(APPLE_TARGET) -include apple-prefix.h $(THIRD) $(GGML_DEFS) -c $< -o $@
$(O)/gnu_abi.o: $(HERE)/gnu_abi.c $(OUT)/gccobjc/objc
	@mkdir -p $(O)
	clang -std=c11 $(OURS) -I $(OUT)/gccobjc -c $< -o $@

# Apple's side: the stand-in Metal.framework and libdispatch
$(OUT)/libMetal.so: $(HERE)/metal.m $(OUT)/gccobjc/objc $(wildcard $(HERE)/include/*/*.h $(HERE)/include/*.h)
	clang -fobjc-runtime=gcc $(CLANG_OBJC_RT) -include apple-prefix.h $(OURS) -shared $< -o $@ \
	  -lBlocksRuntime -lgnustep-base -lobjc
$(OUT)/libdispatch.so: $(HERE)/dispatch.c $(HERE)/include/dispatch/dispatch.h
	clang -std=gnu11 -fblocks $(OURS) -I $(HERE)/include -shared $< -o $@ -lBlocksRuntime -lpthread

# ggml's base and Metal libraries, named as ggml's CMake names them
$(OUT)/libggml-base.so: $(BASE_OBJS)
	clang++ -shared -Wl,-soname,libggml-base.so -Wl,--no-undefined $^ -o $@ -lm -lpthread
$(OUT)/libggml-metal.so: $(METAL_OBJS) $(OUT)/libggml-base.so $(OUT)/libMetal.so $(OUT)/libdispatch.so
	clang++ -shared -Wl,-soname,libggml-metal.so -Wl,--wrap=__objc_exec_class -Wl,--no-undefined \
	  -Wl,-rpath,'$$ORIGIN' $(METAL_OBJS) -o $@ -L$(OUT) -Wl,--no-as-needed -lBlocksRuntime -Wl,--as-needed \
	  -lggml-base -lMetal -ldispatch -lgnustep-base -lobjc

$(OUT)/client: $(HERE)/driver.c $(OUT)/libggml-metal.so
	clang -std=c11 $(OURS) -I $(GGML)/include -I $(GGML)/src -I $(M) $< -o $@ -L$(OUT) -lggml-metal -lggml-base \
	  -Wl,-rpath,'$$ORIGIN'

.PHONY: all
