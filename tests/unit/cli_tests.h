/* What the files of build/test_cli_units share: the headers of the command's layers they test
 * and each file's table of tests (test_cli_units.c runs them). No helper: each file keeps its own. */
#ifndef CLI_TESTS_H
#define CLI_TESTS_H
#include <math.h>
#include <signal.h>
#include <stdio.h>

#include "unit_tests.h"
#include "../../src/cli/cli.h"
#include "../../src/cli/commands.h"
#include "../../src/data/jsonread.h"
#include "../../src/data/usagelog.h"
#include "../../src/common/sha256.h"
#include "../../src/device/verify_core.h"
#include "../../src/macho/sha1.h"
#include "../../src/macho/coderesources.h"
#include "../../src/macho/inheritsafe.h"
#include "../../src/macho/macho.h"
#include "../../src/common/plist.h"

extern const struct unit_tests cli_verify_tests, cli_readers_tests, cli_commands_tests, cli_usagelog_tests;
#endif
