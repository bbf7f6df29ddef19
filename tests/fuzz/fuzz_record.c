/* libFuzzer target: the record of what vzcaps made (src/common/record.c) on arbitrary bytes: a
 * text output's head against each marker place, and a record's fields against a real file.
 * First byte picks the place; the rest is the head, or the fields. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/common/record.h"

static char path[] = "/tmp/vzcaps-fuzz-record.XXXXXX";

static void remove_file(void)
{
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *fields;
    static const char marker[] = "<!-- m -->";
    if (!fields) {
        int fd = mkstemp(path);
        if (fd < 0 || write(fd, "a copy\n", 7) != 7)
            __builtin_trap();
        close(fd);
        atexit(remove_file);
        struct vzcaps_made m;
        if (vzcaps_made_stat(AT_FDCWD, path, true, &m) != 0 || !(fields = vzcaps_made_format(&m)) ||
            !vzcaps_made_this(AT_FDCWD, path, fields))
            __builtin_trap(); /* the record of a file names it */
    }
    if (size < 1 || size > 8192)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    enum vzcaps_mark_at at = (enum vzcaps_mark_at)(data[0] % 4);
    size_t n = size - 1 < 4096 ? size - 1 : 4096;
    bool marked = vzcaps_marked_text(text, n, marker, at);
    /* on the first line, the marker is the whole line */
    if (marked && at == VZCAPS_MARK_LINE1 && (n < sizeof marker || memcmp(text, marker, sizeof marker - 1) != 0 ||
                                              text[sizeof marker - 1] != '\n'))
        __builtin_trap();
    /* a record's fields: only the file's own fields (with or without the hash) name it */
    bool ours = vzcaps_made_this(AT_FDCWD, path, text);
    size_t fl = strlen(fields), tl = strcspn(text, "\n");
    size_t base = strrchr(fields, ' ') - fields;
    if (ours && !((tl == fl && memcmp(text, fields, fl) == 0) || (tl == base && memcmp(text, fields, base) == 0) ||
                  (tl == base + 2 && memcmp(text, fields, base) == 0 && memcmp(text + base, " -", 2) == 0)))
        __builtin_trap();
    free(text);
    return 0;
}
