/* build/test_cli_units: the unit tests of the command's portable decisions, one program over
 * tests/unit/cli_*.c, a concern a file, each with its table; this file runs every table. Linked
 * with the command's sources without its main (-DVZCAPS_NO_MAIN). */
#include "cli_tests.h"

int main(void)
{
    const struct unit_tests *const parts[] = {&cli_verify_tests, &cli_readers_tests, &cli_commands_tests,
                                              &cli_usagelog_tests};
    return run_unit_tests("command", parts, sizeof parts / sizeof parts[0]);
}
