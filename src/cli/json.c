/* A small JSON writer for every command's --json output.
 * Owns: escaping and commas. Never: reads input (see jsonread.c). */
#include "cli.h"

#include <math.h>

static void sep(struct json *j, const char *key)
{
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->out);
        j->first[j->depth] = false;
    }
    if (key) {
        fputc('"', j->out);
        for (const unsigned char *p = (const unsigned char *)key; *p; p++)
            fputc(*p, j->out);
        fputs("\":", j->out);
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
    fputc('"', j->out);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(j->out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", j->out);
        else if (*p == '\t')
            fputs("\\t", j->out);
        else if (*p < 0x20)
            fprintf(j->out, "\\u%04x", *p);
        else
            fputc(*p, j->out);
    }
    fputc('"', j->out);
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

const char *machine_kind(const struct machine *m)
{
    return m->guest == 1 ? "guest" : m->guest == 0 ? "host" : "unknown";
}

void machine_json(struct json *j, const struct machine *m)
{
    json_str(j, "os", m->os);
    json_str(j, "os_version", m->os_version);
    json_str(j, "os_build", m->os_build[0] ? m->os_build : NULL);
    json_str(j, "hw_model", m->model[0] ? m->model : NULL);
    json_str(j, "cpu_brand", m->brand[0] ? m->brand : NULL);
    json_int(j, "vcpus", m->ncpu);
    json_int(j, "memory_bytes", (long long)m->memory);
    json_str(j, "machine", machine_kind(m));
}
