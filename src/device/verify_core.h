/* The portable half of probe and verify: CPU references, tolerances, verdicts, which paths a
 * profile unlocks, cache keys, probe answers and their comparison, and the renderers.
 * The macOS file (metal_darwin.c) only moves bytes to and from the GPU. */
#ifndef VZCAPS_VERIFY_CORE_H
#define VZCAPS_VERIFY_CORE_H

#include "../core/vzcaps_core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SIMD_WIDTH 32

/* ---- numbers ---- */
uint16_t vz_float_to_half(float f);   /* round to nearest even */
float vz_half_to_float(uint16_t h);
uint16_t vz_float_to_bf16(float f);   /* round to nearest even */
float vz_bf16_to_float(uint16_t b);
/* Deterministic inputs k/denom with k uniform in [-range*denom, range*denom): chosen so that
 * every product and partial sum in a check is exact in the arithmetic it tests. */
void vz_inputs(uint32_t seed, float *out, size_t n, int denom, int range);

/* ---- CPU references ---- */
void ref_simd(const float *x, size_t n, float *sum, float *max, float *down, float *prefix, unsigned char *down_defined);
void ref_matmul(const float *a, const float *b, size_t m, size_t k, size_t n, float *c);
/* Copies rows x cols into a zero-filled prows x pcols matrix. */
void pad_matrix(const float *src, size_t rows, size_t cols, float *dst, size_t prows, size_t pcols);
size_t round_up8(size_t v);
void ref_bfloat(const float *a, const float *b, const float *c, size_t n, float *converted, float *fma_out);
void ref_threadgroup(uint32_t words, uint32_t threads, uint32_t *out);
void ref_nocopy(const uint32_t *in, size_t n, uint32_t *out);

/* ---- checks and verdicts ---- */
enum vcheck_status { VCHECK_PASS, VCHECK_FAIL, VCHECK_SKIP };

struct vcheck {
    char name[40];
    char path[64];          /* what it exercises, e.g. "SIMD-group reduction" */
    enum vcheck_status status;
    bool unlocked;          /* a path the profile unlocks (a failure fails verify) */
    double max_abs, max_rel, tol_abs, tol_rel;
    size_t compared, bad;
    char reason[240];
};

/* Compares element-wise: an element passes when |got - want| <= tol_abs + tol_rel * |want|. */
void vcheck_compare(struct vcheck *c, const float *got, const float *want, size_t n, double tol_abs, double tol_rel);
void vcheck_compare_u32(struct vcheck *c, const uint32_t *got, const uint32_t *want, size_t n);
void vcheck_skip(struct vcheck *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vcheck_fail(struct vcheck *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Which paths the effective profile unlocks, from the stock answers. */
struct vplan {
    bool simd_reduction, simdgroup_mm, bfloat, threadgroup;
    uint64_t threadgroup_bytes;  /* the effective limit to exercise */
};
void verify_plan(const struct vzcaps_profile *p, const int stock_family[], uint64_t stock_threadgroup, struct vplan *plan);

struct vresult {
    struct vcheck checks[24];
    size_t n;
    char device[96];
    bool nocopy_stock_failed;  /* the guest fault, independent of vzcaps */
};
/* The checks, one child process each, so that a GPU fault or a compiler crash in one loses
 * only that one: name (the child's --only argument), the check record's name and path. */
struct vgroup {
    const char *name, *check, *path;
};
extern const struct vgroup verify_groups[]; /* simd, mm, bfloat, threadgroup, nocopy; then {0} */
/* Whether the plan unlocks the group (nocopy always runs). */
bool verify_group_planned(const struct vplan *plan, const struct vgroup *g);
const struct vgroup *verify_group_find(const char *name);
/* A child that produced no results: one failed record for its group, saying how it ended
 * (wait_status as from waitpid: the signal, or the exit status). */
void verify_child_failed(struct vresult *r, const struct vgroup *g, bool unlocked, int wait_status);
/* A record that the group was skipped, with the reason. */
void verify_group_skipped(struct vresult *r, const struct vgroup *g, const char *reason);
/* Appends from's checks to into (and its device name when into has none). */
void verify_append(struct vresult *into, const struct vresult *from);
/* The bfloat kernel needs Metal Shading Language 3.1, i.e. macOS 14: false with the reason
 * for an older os_version ("13.6.1"); true when it is 14 or later, or unknown. */
bool verify_bfloat_supported(const char *os_version, char *why, size_t len);

/* 0 when no unlocked path failed. */
int verify_exit_status(const struct vresult *r);
/* Reads verify_render_json's output back (the child reports to the parent this way). */
int vresult_parse(const char *text, struct vresult *r);
/* A NoCopy failure that also happens stock is the guest's fault, not an unlocked path's. */
void verify_merge_stock_nocopy(struct vresult *unlocked, const struct vresult *stock);
void verify_render_text(const struct vresult *r, FILE *out);
struct json;
void verify_render_json(const struct vresult *r, struct json *j);
/* Cache key of a verdict: host chip, macOS build, library hash and the effective claims. */
void verify_cache_key(const char *chip, const char *os_build, const char *library_sha256, const struct vzcaps_profile *p, char out[65]);

/* ---- probe ---- */
#define PROBE_FAMILIES 19
struct probe_answers {
    bool ok;
    char error[200];
    char device[96], architecture[64];
    int family[PROBE_FAMILIES];           /* 1/0, -1 unknown; order of vzcaps_family_all() */
    long long threadgroup, working_set, max_buffer; /* -1 unknown */
    int unified;
};
struct llama_gates {
    bool simdgroup_reduction, simdgroup_mm, bfloat, tensor;
};
/* METAL-FACTS "What clients do with the answers": llama.cpp's gates from the answers. */
void llama_gates_from(const struct probe_answers *a, struct llama_gates *g);
/* Parses a probe child's JSON line. */
int probe_answers_parse(const char *text, struct probe_answers *a);
void probe_answers_json(const struct probe_answers *a, FILE *out);
/* Changes the profile did not ask for; returns how many, with one line each in out. */
size_t probe_unexpected(const struct probe_answers *stock, const struct probe_answers *unlocked,
                        const struct vzcaps_profile *p, char out[][200], size_t max);
void probe_render_text(const struct probe_answers *s, const struct probe_answers *u, const struct vzcaps_profile *p, FILE *out);
void probe_render_json(const struct probe_answers *s, const struct probe_answers *u, const struct vzcaps_profile *p, struct json *j);
/* "NAME, architecture ARCH" (or "... not reported") from a probe --json document's device
 * object, for a summary line; "not reported (...)" when there is none. */
void probe_device_describe(const char *probe_json, char *out, size_t len);

#endif
