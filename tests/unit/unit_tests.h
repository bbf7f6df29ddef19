/* What a cmocka test program split over several files shares (build/test_core, build/test_cli_units):
 * a file's table of tests (UNIT_TESTS) and one run of every file's table as one group, so cmocka
 * counts and names them as one program. It holds no test and changes none. */
#ifndef UNIT_TESTS_H
#define UNIT_TESTS_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

/* one file's tests */
struct unit_tests {
    const struct CMUnitTest *tests;
    size_t n;
};

/* UNIT_TESTS(core_config_tests, cmocka_unit_test(test_a), cmocka_unit_test(test_b)); */
#define UNIT_TESTS(name, ...)                                                                                  \
    static const struct CMUnitTest name##_table[] = {__VA_ARGS__};                                            \
    const struct unit_tests name = {name##_table, sizeof name##_table / sizeof name##_table[0]}

/* Every part's tests, in order, run as the one group name (cmocka's "PASSED N test(s)" counts all). */
static inline int run_unit_tests(const char *name, const struct unit_tests *const *parts, size_t n_parts)
{
    size_t n = 0;
    for (size_t i = 0; i < n_parts; i++)
        n += parts[i]->n;
    struct CMUnitTest *all = calloc(n, sizeof *all);
    if (!all)
        return 1;
    for (size_t i = 0, at = 0; i < n_parts; at += parts[i]->n, i++)
        memcpy(all + at, parts[i]->tests, parts[i]->n * sizeof *all);
    int failed = _cmocka_run_group_tests(name, all, n, NULL, NULL);
    free(all);
    return failed;
}
#endif
