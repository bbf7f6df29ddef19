/* What the files of build/test_core share, defined in test_core.c: the configuration result the
 * tests read and the helpers that fill it, the fake file reader, and each file's table of tests.
 * Nothing here reads the disk or the real environment. */
#ifndef CORE_TESTS_H
#define CORE_TESTS_H
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "unit_tests.h"
#include "../../src/core/vzcaps_core.h"

/* the last configuration, as configure_env or configure_file left it */
extern struct vzcaps_config_result R;
/* configures llama-bench from envp alone, on a host of that brand and memory */
void configure_env(const char *const *envp, const char *brand, uint64_t mem);
bool any_note_contains(const struct vzcaps_profile *p, const char *needle);

/* up to three files the fake reader serves (a NULL text: there, but not trusted) */
struct fake_files {
    const char *path[3];
    const char *text[3];
};
extern struct fake_files FILES;
int fake_read(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing, char *err, size_t errlen);
/* configures exe from envp and the fake files, on an Apple M2 guest */
void configure_file(const char *exe, const char *const *envp);

extern const struct unit_tests core_answers_tests, core_config_tests, core_hardening_tests, core_launch_tests,
    core_statslog_tests;
#endif
