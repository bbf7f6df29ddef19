# Darwin link lines: what each macOS target links besides libSystem. Used by the native rules
# in the Makefile (on a Mac) and by `make cross-link` (on Linux, with ld64.lld against the
# stubs in stubs/), so a link line that would fail on a Mac fails here first.
# -headerpad_max_install_names: room after the load commands for Homebrew (install_name_tool)
# to rewrite the install name to its opt path; Apple's ld and ld64.lld both take it.
# -dead_strip: the library keeps only what its entry points reach (src/core also holds the
# command's helpers: shebang parsing, SIP and quarantine text, ...), so nothing it cannot run is
# injected into other people's processes; Apple's ld, clang's driver and ld64.lld all take it.
DARWIN_LIB_LINK := -lobjc -weak_framework Metal -headerpad_max_install_names -dead_strip
DARWIN_CLI_LINK := -lobjc -weak_framework Metal -framework Foundation -framework CoreGraphics -headerpad_max_install_names
DARWIN_TEST_CORE_LINK := -lcmocka
DARWIN_TEST_CLI_LINK := $(DARWIN_CLI_LINK) -lcmocka
