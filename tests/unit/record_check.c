/* A command-line face of src/common/record.c for tests/dist/test_record.py, which runs one table
 * of cases through it and through the scripts' shell functions (packaging/uninstall.sh) and
 * asserts they agree. Never part of a product. usage:
 *   record_check record PATH RECORD MAKER    exit 0: RECORD says vzcaps made PATH
 *   record_check marked FILE MARKER WHERE    exit 0: FILE carries MARKER at WHERE
 *   record_check write PATH MAKER            the record's text for PATH on stdout
 *   record_check dev32 N                     the record's device field for a 32-bit dev_t N */
#define _POSIX_C_SOURCE 200809L
#include "../../src/common/record.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "record") == 0)
        return vzcaps_made_by_record(AT_FDCWD, argv[2], argv[3], argv[4]) ? 0 : 1;
    if (argc == 5 && strcmp(argv[1], "marked") == 0) {
        static const char *const where[] = {"line1", "after-xml", "after-doctype"};
        for (int i = 0; i < 3; i++)
            if (strcmp(argv[4], where[i]) == 0)
                return vzcaps_marked_file(AT_FDCWD, argv[2], argv[3], (enum vzcaps_mark_at)i) ? 0 : 1;
        return 2;
    }
    if (argc == 4 && strcmp(argv[1], "write") == 0) {
        char *text = vzcaps_record_text(AT_FDCWD, argv[2], argv[3], NULL);
        if (!text)
            return 1;
        fputs(text, stdout);
        free(text);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "dev32") == 0) {
        int32_t dev = (int32_t)strtol(argv[2], NULL, 10); /* as macOS's dev_t holds it */
        printf("%llu\n", vzcaps_made_dev((unsigned long long)dev, sizeof dev));
        return 0;
    }
    fprintf(stderr, "usage: record_check record PATH RECORD MAKER | marked FILE MARKER WHERE | write PATH MAKER"
                    " | dev32 N\n");
    return 2;
}
