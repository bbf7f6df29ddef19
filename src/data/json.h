/* A small JSON writer for every command's --json output (json.c).
 * Owns: escaping and commas. Never: reads input (see jsonread.h). */
#ifndef VZCAPS_JSON_H
#define VZCAPS_JSON_H

#include <stdbool.h>
#include <stdio.h>

struct json {
    FILE *out;
    int depth;
    bool first[32];
};
void json_begin(struct json *j, FILE *out);
void json_obj(struct json *j, const char *key);   /* key NULL inside arrays / at top */
void json_arr(struct json *j, const char *key);
void json_end_obj(struct json *j);
void json_end_arr(struct json *j);
void json_str(struct json *j, const char *key, const char *v); /* v NULL: null */
void json_num(struct json *j, const char *key, double v); /* not finite (NaN): null */
void json_int(struct json *j, const char *key, long long v);
void json_int_or_null(struct json *j, const char *key, bool have, long long v); /* v when have, else null */
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);
void json_finish(struct json *j);

#endif
