/* llama-bench results, the Metal backend's start-up report, and their renderings; shared by
 * vzcaps report and vzcaps bench. Portable: tested on the real fixtures. */
#ifndef VZCAPS_BENCHDATA_H
#define VZCAPS_BENCHDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define BENCH_MAX_ROWS 64
/* Accepted tokens per second of one sample: far beyond any device, and narrow enough that
 * medians, ratios and chart scales computed from them stay finite. */
#define BENCH_MIN_TS 1e-6
#define BENCH_MAX_TS 1e12

enum bench_role { ROLE_STOCK, ROLE_UNLOCKED, ROLE_HOST, N_ROLES };
extern const char *const bench_role_names[N_ROLES];

struct bench_stat {
    bool present;
    double median, min, max;
    size_t n;
};

struct bench_row {
    char test[48];
    struct bench_stat role[N_ROLES];
};

/* A log with more "GPU family:" lines than this is refused (llama.cpp prints three or four). */
#define METAL_MAX_FAMILIES 16

/* What the Metal backend printed at start-up (ggml_metal_device_init lines), and which shim
 * said in the same stderr that it changed the answers. */
struct metal_caps {
    bool found;
    char gpu_name[96];
    long families[METAL_MAX_FAMILIES];
    size_t n_families;
    size_t n_family_lines; /* every "GPU family:" line seen: more than METAL_MAX_FAMILIES fails the read */
    /* llama.cpp's "GPU family: MTLGPUFamilyAppleN (100N)" line: the family that selects its
     * tuning rows; 0 and "" when the run printed none */
    long apple_family;
    char gpu_family[48];
    int simdgroup_reduction, simdgroup_mm, bfloat, tensor, unified_memory, residency_sets; /* -1 unknown */
    double working_set_mb;
    /* "vzcaps" when vzcaps's own "vzcaps: hooked" or "configured for" (or older "enabled for") line is there, else the tag of another
     * shim's "[Tag] Enabled for" line; "" when no shim said it changed anything */
    char shim[48];
};

struct bench_table {
    struct bench_row rows[BENCH_MAX_ROWS];
    size_t n;
    bool role_given[N_ROLES];
    char build_commit[48]; /* clipped visibly ("...(N bytes)") when longer */
    long long build_number;
    char model_type[96];
    char chip[48];       /* the host chip, canonical; "" when none known */
    char chip_from[48];  /* where chip came from ("" for the runs' cpu_info) */
    char date[11];       /* the earliest run's test_time, YYYY-MM-DD; "" when none */
    struct metal_caps caps[N_ROLES];
    bool have_caps[N_ROLES]; /* the role's stderr was read */
};

/* Adds every run of a llama-bench JSON file to role. 0, or -1 with "FILE: reason" in err. */
int bench_table_add_file(struct bench_table *t, enum bench_role role, const char *path, char *err, size_t errlen);
/* Checks that every role given has the same tests. 0, or -1 naming the mismatch. */
int bench_table_check(const struct bench_table *t, char *err, size_t errlen);
double bench_speedup(const struct bench_row *r);         /* unlocked / stock, NAN when absent */
double bench_percent_of_host(const struct bench_row *r); /* unlocked / host * 100, NAN when absent */
double bench_median(double *v, size_t n);                /* sorts v */

void metal_caps_parse(const char *text, struct metal_caps *c);
/* The same as a stream: metal_caps_init, then each line (without its '\n') as it comes. */
void metal_caps_init(struct metal_caps *c);
void metal_caps_line(const char *line, size_t n, struct metal_caps *c);
/* A run's stderr (the one read module, at most TEXT_FILE_MAX), parsed into *c, which is
 * initialised (nothing found) when it cannot be read: 0, or -1 with "PATH: reason" in err
 * (*missing when it does not exist). */
__attribute__((warn_unused_result)) int metal_caps_read_file(const char *path, struct metal_caps *c, bool *missing, char *err,
                                                             size_t errlen);
/* Reads a run's stderr into the table's capabilities of role (the first one read wins; every
 * one is read, so one that cannot be used is never passed over). 0, or -1 with "PATH: reason"
 * (*missing when it does not exist; the table is unchanged). */
__attribute__((warn_unused_result)) int bench_table_read_stderr(struct bench_table *t, enum bench_role role, const char *path,
                                                                bool *missing, char *err, size_t errlen);
/* The legend of a role's series: "unlocked guest (vzcaps)" only when vzcaps's line is in
 * that run's stderr; another shim's name when its line is; no shim named when none is. */
void bench_series_label(const struct bench_table *t, enum bench_role role, char *buf, size_t len);
/* The host chip's real Apple family: the host run's GPU family line, else the table's chip;
 * 0 when unknown. *from says which. */
long bench_host_family(const struct bench_table *t, const char **from);

/* What was measured, as the chart shows it: model, chip, llama.cpp build, date (each only when
 * known, " · " between), into buf; "" when none is known. */
void bench_about(const struct bench_table *t, char *buf, size_t len);
/* The same for --md: "\nMeasured: ....\n", escaped; nothing when none is known. */
void bench_render_about_md(const struct bench_table *t, FILE *out);
void bench_render_text(const struct bench_table *t, FILE *out);
void bench_render_csv(const struct bench_table *t, FILE *out);
void bench_render_md(const struct bench_table *t, FILE *out);
void bench_render_svg(const struct bench_table *t, FILE *out);
struct json;
void bench_render_json_rows(const struct bench_table *t, struct json *j);
void metal_caps_json(const struct metal_caps *c, struct json *j, const char *key);

#endif
