/* Text the command prints or reads (text.c). Shared by every part of the command below the
 * subcommands; not part of the injected library. */
#ifndef VZCAPS_TEXT_H
#define VZCAPS_TEXT_H

#include "readfile.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Every human-readable line escapes what a terminal would interpret (vzcaps_escape: control
 * characters, DEL, C1, invalid UTF-8 as \\xNN; a backslash as \\\\). eprintf formats one whole
 * line (no '\n' in fmt), escapes it and writes it to stderr with its newline (a "\\x00" in the
 * line is kept as it is: the one form a message's maker writes pre-escaped, for a NUL a C
 * string cannot carry; everything else in a message is raw, escaped once here); esc returns an
 * escaped copy of s for a value printed inside other output (valid until 16 more calls). */
void eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *esc(const char *s);
/* s[0..n) as a message carries it: raw, each NUL as "\\x00" (the form eprintf keeps); on the
 * heap, NULL when out of memory. */
char *nul_shown(const char *s, size_t n);
/* A formatted string on the heap, never cut (the caller frees it; NULL when out of memory
 * for vxformat; xformat exits with a message instead). */
char *xformat(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A table that grows instead of dropping entries: p with room for at least n + 1 elements of
 * size bytes (*cap counts them); out of memory is a one-line error and exit 1, as for xformat. */
void *xgrow(void *p, size_t *cap, size_t n, size_t size);
char *vxformat(const char *fmt, va_list ap);
/* A whole text file (vzcaps_input_read with the limit TEXT_FILE_MAX), NUL-terminated, in a
 * malloc'd buffer the caller frees; NULL with "PATH: reason" in err (not a regular file,
 * unreadable, larger than TEXT_FILE_MAX, truncated while read). */
#define TEXT_FILE_MAX (64 << 20)
__attribute__((warn_unused_result)) char *read_text_file(const char *path, size_t *len, char *err, size_t errlen);
/* s as a Markdown code span nothing in it can end or break (control characters as \xNN, no
 * line break, a fence longer than any run of backticks inside); heap. */
char *md_code_span(const char *s);

#endif
