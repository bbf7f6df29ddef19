/* A small JSON writer for every command's --json output.
 * Owns: escaping and commas. Never: reads input (see jsonread.c). */
#include "json.h"

#include "../core/vzcaps_core.h"

#include <math.h>
#include <string.h>

/* A JSON string that is valid UTF-8 whatever the bytes: quotes, backslashes and control
 * characters escaped as JSON requires; a byte that is not valid UTF-8 is written as the text
 * \xNN (JSON "\\xNN"), the same escape form as the human-readable output. */
static void string_out(FILE *out, const char *v)
{
    fputc('"', out);
    size_t n = strlen(v);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)v[i];
        size_t k = vzcaps_utf8_valid(v + i, n - i);
        if (!k)
            fprintf(out, "\\\\x%02x", c), k = 1;
        else if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fwrite(v + i, 1, k, out);
        i += k;
    }
    fputc('"', out);
}

static void sep(struct json *j, const char *key)
{
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->out);
        j->first[j->depth] = false;
    }
    if (key) {
        string_out(j->out, key);
        fputc(':', j->out);
    }
}

void json_begin(struct json *j, FILE *out)
{
    j->out = out;
    j->depth = 0;
    j->first[0] = true;
}

static void open_(struct json *j, const char *key, char c)
{
    sep(j, key);
    fputc(c, j->out);
    if (j->depth < 31)
        j->depth++;
    j->first[j->depth] = true;
}

void json_obj(struct json *j, const char *key) { open_(j, key, '{'); }
void json_arr(struct json *j, const char *key) { open_(j, key, '['); }
void json_end_obj(struct json *j) { j->depth--; fputc('}', j->out); }
void json_end_arr(struct json *j) { j->depth--; fputc(']', j->out); }

void json_str(struct json *j, const char *key, const char *v)
{
    if (!j)
        return;
    sep(j, key);
    if (!v) {
        fputs("null", j->out);
        return;
    }
    string_out(j->out, v);
}

void json_num(struct json *j, const char *key, double v)
{
    sep(j, key);
    if (!isfinite(v))
        fputs("null", j->out);
    else
        fprintf(j->out, "%.10g", v);
}

void json_int(struct json *j, const char *key, long long v)
{
    sep(j, key);
    fprintf(j->out, "%lld", v);
}

void json_int_or_null(struct json *j, const char *key, bool have, long long v)
{
    if (have)
        json_int(j, key, v);
    else
        json_null(j, key);
}

void json_bool(struct json *j, const char *key, bool v)
{
    sep(j, key);
    fputs(v ? "true" : "false", j->out);
}

void json_null(struct json *j, const char *key)
{
    sep(j, key);
    fputs("null", j->out);
}

void json_finish(struct json *j) { fputc('\n', j->out); }

