/* CPU references, tolerances, verdicts, plans, cache keys and renderers for probe/verify.
 * Portable and tested on Linux against hand-checked values. Never: touches Metal. */
#define _POSIX_C_SOURCE 200809L /* strsignal */
#include "verify_core.h"

#include <signal.h>
#include <sys/wait.h>

#include "../common/text.h"
#include "../data/json.h"
#include "../data/jsonread.h"
#include "../common/sha256.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ---- */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t vz_float_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);          /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float vz_bf16_to_float(uint16_t b) { return u2f((uint32_t)b << 16); }

uint16_t vz_float_to_half(float f)
{
    uint32_t u = f2u(f), sign = (u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = u & 0x7fffffu;
    if (((u >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | (uint32_t)exp << 10 | mant >> 13, rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
        half++; /* may carry into the exponent: still correct */
    return (uint16_t)half;
}

float vz_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    if (exp == 0)
        return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
    if (exp == 31)
        return u2f(sign | 0x7f800000u | mant << 13);
    return u2f(sign | (exp + 112) << 23 | mant << 13);
}

void vz_inputs(uint32_t seed, float *out, size_t n, int denom, int range)
{
    uint32_t s = seed * 2654435761u + 1;
    uint32_t span = (uint32_t)(2 * range * denom);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5; /* xorshift32 */
        out[i] = (float)((int32_t)(s % span) - range * denom) / (float)denom;
    }
}

/* ---- references ---- */

void ref_simd(const float *x, size_t n, float *sum, float *max, float *down, float *prefix, unsigned char *down_defined)
{
    for (size_t g = 0; g < n; g += SIMD_WIDTH) {
        size_t end = g + SIMD_WIDTH < n ? g + SIMD_WIDTH : n;
        double s = 0, run = 0;
        float m = -INFINITY;
        for (size_t i = g; i < end; i++) {
            s += x[i];
            m = x[i] > m ? x[i] : m;
        }
        for (size_t i = g; i < end; i++) {
            run += x[i];
            sum[i] = (float)s;
            max[i] = m;
            prefix[i] = (float)run;
            down_defined[i] = i + 1 < end; /* the last active lane has no lane below it */
            down[i] = down_defined[i] ? x[i + 1] : 0;
        }
    }
}

void ref_matmul(const float *a, const float *b, size_t m, size_t k, size_t n, float *c)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = 0;
            for (size_t t = 0; t < k; t++)
                acc += (double)a[i * k + t] * b[t * n + j];
            c[i * n + j] = (float)acc;
        }
}

size_t round_up8(size_t v) { return (v + 7) & ~(size_t)7; }

void pad_matrix(const float *src, size_t rows, size_t cols, float *dst, size_t prows, size_t pcols)
{
    memset(dst, 0, prows * pcols * sizeof *dst);
    for (size_t r = 0; r < rows; r++)
        memcpy(dst + r * pcols, src + r * cols, cols * sizeof *dst);
}

void ref_bfloat(const float *a, const float *b, const float *c, size_t n, float *converted, float *fma_out)
{
    for (size_t i = 0; i < n; i++) {
        float ba = vz_bf16_to_float(vz_float_to_bf16(a[i])), bb = vz_bf16_to_float(vz_float_to_bf16(b[i]));
        float bc = vz_bf16_to_float(vz_float_to_bf16(c[i]));
        converted[i] = ba;
        fma_out[i] = vz_bf16_to_float(vz_float_to_bf16(ba * bb + bc));
    }
}

void ref_threadgroup(uint32_t words, uint32_t threads, uint32_t *out)
{
    for (uint32_t t = 0; t < threads; t++) {
        uint32_t acc = 0;
        for (uint32_t w = threads - 1 - t; w < words; w += threads)
            acc ^= (w * 2654435761u + 12345u) + w;
        out[t] = acc;
    }
}

void ref_nocopy(const uint32_t *in, size_t n, uint32_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] * 3u + 1u;
}

/* ---- checks ---- */

void vcheck_compare(struct vcheck *c, const float *got, const float *want, size_t n, double tol_abs, double tol_rel)
{
    c->tol_abs = tol_abs;
    c->tol_rel = tol_rel;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i], err = fabs(g - w), rel = w != 0 ? err / fabs(w) : 0; /* no relative error at 0 */
        c->compared++;
        if (isnan(g) || isnan(err)) {
            err = rel = INFINITY;
        }
        if (err > c->max_abs)
            c->max_abs = err;
        if (rel > c->max_rel)
            c->max_rel = rel;
        if (!(err <= tol_abs + tol_rel * fabs(w)))
            c->bad++;
    }
    if (c->status != VCHECK_FAIL && c->status != VCHECK_SKIP)
        c->status = c->bad ? VCHECK_FAIL : VCHECK_PASS;
}

void vcheck_compare_u32(struct vcheck *c, const uint32_t *got, const uint32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        c->compared++;
        if (got[i] != want[i]) {
            c->bad++;
            c->max_abs = INFINITY;
        }
    }
    if (c->status != VCHECK_FAIL && c->status != VCHECK_SKIP)
        c->status = c->bad ? VCHECK_FAIL : VCHECK_PASS;
}

static void vcheck_set(struct vcheck *c, enum vcheck_status status, const char *fmt, va_list ap)
{
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    c->status = status;
}

void vcheck_skip(struct vcheck *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcheck_set(c, VCHECK_SKIP, fmt, ap);
    va_end(ap);
}

void vcheck_fail(struct vcheck *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcheck_set(c, VCHECK_FAIL, fmt, ap);
    va_end(ap);
}

static int family_index(int64_t f)
{
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = 0; i < n; i++)
        if (all[i] == f)
            return (int)i;
    return -1;
}

static bool answered(const struct vzcaps_profile *p, const int stock_family[], int64_t f)
{
    int i = family_index(f);
    return vzcaps_answer(p, VZCAPS_Q_SUPPORTS_FAMILY, f, i >= 0 && stock_family[i] == 1) != 0;
}

void verify_plan(const struct vzcaps_profile *p, const int stock_family[], uint64_t stock_threadgroup, struct vplan *plan)
{
    memset(plan, 0, sizeof *plan);
    bool s7 = stock_family[family_index(1007)] == 1, s6 = stock_family[family_index(1006)] == 1;
    bool s3 = stock_family[family_index(5001)] == 1;
    bool u7 = answered(p, stock_family, 1007), u6 = answered(p, stock_family, 1006), u3 = answered(p, stock_family, 5001);
    plan->simd_reduction = (u7 || u3) && !(s7 || s3);
    plan->simdgroup_mm = u7 && !s7;
    plan->bfloat = (u3 || u6) && !(s3 || s6);
    uint64_t tg = vzcaps_answer(p, VZCAPS_Q_MAX_THREADGROUP_MEMORY, 0, stock_threadgroup);
    plan->threadgroup = tg > stock_threadgroup;
    plan->threadgroup_bytes = tg;
}

int verify_exit_status(const struct vresult *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->checks[i].unlocked && r->checks[i].status == VCHECK_FAIL)
            return 1;
    return 0;
}

static const char *status_name(enum vcheck_status s)
{
    return s == VCHECK_PASS ? "pass" : s == VCHECK_FAIL ? "fail" : "skipped";
}

void verify_render_text(const struct vresult *r, FILE *out)
{
    fprintf(out, "device: %s\n%-26s %-8s %-34s %s\n", r->device[0] ? esc(r->device) : "?", "check", "result", "path", "detail");
    for (size_t i = 0; i < r->n; i++) {
        const struct vcheck *c = &r->checks[i];
        char detail[400];
        if (c->status == VCHECK_SKIP)
            snprintf(detail, sizeof detail, "%s", c->reason);
        else
            snprintf(detail, sizeof detail, "%zu/%zu elements within |err| <= %g + %g*|ref|; max abs err %g, max rel err %g%s%s",
                     c->compared - c->bad, c->compared, c->tol_abs, c->tol_rel, c->max_abs, c->max_rel, c->reason[0] ? "; " : "",
                     c->reason);
        fprintf(out, "%-26s %-8s %-34s %s\n", esc(c->name), status_name(c->status), esc(c->path), esc(detail));
    }
    if (r->nocopy_stock_failed)
        fprintf(out, "note: newBufferWithBytesNoCopy over an mmapped file also fails stock: a fault of this guest, independent of vzcaps\n");
    fprintf(out, "verdict: %s\n", verify_exit_status(r) ? "FAIL: an unlocked path computes wrong results" : "no unlocked path failed");
}

void verify_render_json(const struct vresult *r, struct json *j)
{
    json_obj(j, NULL);
    json_str(j, "device", r->device[0] ? r->device : NULL);
    json_bool(j, "ok", verify_exit_status(r) == 0);
    json_bool(j, "nocopy_guest_fault", r->nocopy_stock_failed);
    json_arr(j, "checks");
    for (size_t i = 0; i < r->n; i++) {
        const struct vcheck *c = &r->checks[i];
        json_obj(j, NULL);
        json_str(j, "name", c->name);
        json_str(j, "path", c->path);
        json_str(j, "result", status_name(c->status));
        json_bool(j, "unlocked", c->unlocked);
        if (c->status == VCHECK_SKIP) {
            json_null(j, "max_abs_error");
            json_null(j, "max_rel_error");
        } else {
            json_num(j, "max_abs_error", c->max_abs);
            json_num(j, "max_rel_error", c->max_rel);
        }
        json_num(j, "tolerance_abs", c->tol_abs);
        json_num(j, "tolerance_rel", c->tol_rel);
        json_int(j, "compared", (long long)c->compared);
        json_int(j, "mismatched", (long long)c->bad);
        json_str(j, "reason", c->reason[0] ? c->reason : NULL);
        json_end_obj(j);
    }
    json_end_arr(j);
    json_end_obj(j);
}

void verify_cache_key(const char *chip, const char *os_build, const char *library_sha256, const struct vzcaps_profile *p, char out[65])
{
    char text[1024];
    snprintf(text, sizeof text, "vzcaps-verify-1|%s|%s|%s|%lld|%llu|%llu|", chip ? chip : "", os_build ? os_build : "",
             library_sha256 ? library_sha256 : "", (long long)p->apple_family_max, (unsigned long long)p->max_threadgroup_memory,
             (unsigned long long)p->recommended_working_set_size);
    int64_t extra[VZCAPS_MAX_EXTRA];
    memcpy(extra, p->extra, p->n_extra * sizeof extra[0]);
    for (size_t i = 0; i < p->n_extra; i++) /* order-independent */
        for (size_t k = i + 1; k < p->n_extra; k++)
            if (extra[k] < extra[i]) {
                int64_t t = extra[i];
                extra[i] = extra[k], extra[k] = t;
            }
    for (size_t i = 0; i < p->n_extra; i++)
        vzcaps_appendf(text, sizeof text, "%lld,", (long long)extra[i]);
    sha256_hex(text, strlen(text), out);
}

/* ---- probe ---- */

void llama_gates_from(const struct probe_answers *a, struct llama_gates *g)
{
    int i7 = family_index(1007), i6 = family_index(1006), m3 = family_index(5001), m4 = family_index(5002);
    g->simdgroup_reduction = a->family[i7] == 1 || a->family[m3] == 1;
    g->simdgroup_mm = a->family[i7] == 1;
    g->bfloat = a->family[m3] == 1 || a->family[i6] == 1;
    /* Metal4 and a device name of an M5/M6/A19/A20 part */
    g->tensor = a->family[m4] == 1 && (strstr(a->device, "M5") || strstr(a->device, "M6") || strstr(a->device, "A19") || strstr(a->device, "A20"));
}

static long long int_field(const struct jv *o, const char *k)
{
    const struct jv *v = jv_get(o, k);
    return v && v->type == JV_NUMBER ? (long long)v->number : -1;
}

int probe_answers_parse(const char *text, struct probe_answers *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < PROBE_FAMILIES; i++)
        a->family[i] = -1;
    char err[200];
    struct jv *doc = jv_parse(text, strlen(text), err, sizeof err);
    if (!doc || doc->type != JV_OBJECT) {
        snprintf(a->error, sizeof a->error, "probe output is not a JSON object: %s", doc ? "wrong type" : err);
        jv_free(doc);
        return -1;
    }
    const struct jv *e = jv_get(doc, "error"), *d = jv_get(doc, "device"), *ar = jv_get(doc, "architecture"), *f = jv_get(doc, "families");
    if (e && e->type == JV_STRING) {
        snprintf(a->error, sizeof a->error, "%s", e->string);
        jv_free(doc);
        return -1;
    }
    if (!d || d->type != JV_STRING || !f || f->type != JV_OBJECT) { /* "{}" answered every query with "?" */
        snprintf(a->error, sizeof a->error, "not a saved probe result (no \"device\" string and \"families\" object)");
        jv_free(doc);
        return -1;
    }
    snprintf(a->device, sizeof a->device, "%s", d->string);
    snprintf(a->architecture, sizeof a->architecture, "%s", ar && ar->type == JV_STRING ? ar->string : "");
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = 0; i < n && i < PROBE_FAMILIES; i++) {
        char key[16];
        snprintf(key, sizeof key, "%lld", (long long)all[i]);
        const struct jv *v = jv_get(f, key);
        a->family[i] = v && v->type == JV_BOOL ? (int)v->number : -1;
    }
    a->threadgroup = int_field(doc, "max_threadgroup_memory");
    a->working_set = int_field(doc, "recommended_working_set_size");
    a->max_buffer = int_field(doc, "max_buffer_length");
    const struct jv *u = jv_get(doc, "has_unified_memory");
    a->unified = u && u->type == JV_BOOL ? (int)u->number : -1;
    a->ok = true;
    jv_free(doc);
    return 0;
}

void probe_answers_json(const struct probe_answers *a, FILE *out)
{
    struct json j;
    json_begin(&j, out);
    json_obj(&j, NULL);
    if (!a->ok) {
        json_str(&j, "error", a->error);
    } else {
        json_str(&j, "device", a->device);
        json_str(&j, "architecture", a->architecture[0] ? a->architecture : NULL);
        json_obj(&j, "families");
        size_t n;
        const int64_t *all = vzcaps_family_all(&n);
        for (size_t i = 0; i < n; i++) {
            char key[16];
            snprintf(key, sizeof key, "%lld", (long long)all[i]);
            if (a->family[i] < 0)
                json_null(&j, key);
            else
                json_bool(&j, key, a->family[i] == 1);
        }
        json_end_obj(&j);
        json_int(&j, "max_threadgroup_memory", a->threadgroup);
        json_int(&j, "recommended_working_set_size", a->working_set);
        json_int(&j, "max_buffer_length", a->max_buffer);
        json_bool(&j, "has_unified_memory", a->unified == 1);
    }
    json_end_obj(&j);
    json_finish(&j);
}

size_t probe_unexpected(const struct probe_answers *s, const struct probe_answers *u, const struct vzcaps_profile *p,
                        char out[][200], size_t max)
{
    size_t k = 0, n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = 0; i < n && i < PROBE_FAMILIES; i++) {
        if (s->family[i] < 0 || u->family[i] < 0)
            continue;
        int want = (int)vzcaps_answer(p, VZCAPS_Q_SUPPORTS_FAMILY, all[i], (uint64_t)s->family[i]);
        if (u->family[i] != want && k < max)
            snprintf(out[k++], 200, "supportsFamily(%s %lld): %s, but the profile implies %s", vzcaps_family_name(all[i]),
                     (long long)all[i], u->family[i] ? "yes" : "no", want ? "yes" : "no");
    }
    long long tg = (long long)vzcaps_answer(p, VZCAPS_Q_MAX_THREADGROUP_MEMORY, 0, (uint64_t)s->threadgroup);
    long long ws = (long long)vzcaps_answer(p, VZCAPS_Q_RECOMMENDED_WORKING_SET, 0, (uint64_t)s->working_set);
    if (u->threadgroup != tg && k < max)
        snprintf(out[k++], 200, "maxThreadgroupMemoryLength: %lld, but the profile implies %lld", u->threadgroup, tg);
    if (u->working_set != ws && k < max)
        snprintf(out[k++], 200, "recommendedMaxWorkingSetSize: %lld, but the profile implies %lld", u->working_set, ws);
    if (u->max_buffer != s->max_buffer && k < max)
        snprintf(out[k++], 200, "maxBufferLength changed (%lld -> %lld): vzcaps never changes it", s->max_buffer, u->max_buffer);
    if (u->unified != s->unified && k < max)
        snprintf(out[k++], 200, "hasUnifiedMemory changed: vzcaps never changes it");
    if ((strcmp(u->device, s->device) || strcmp(u->architecture, s->architecture)) && k < max)
        snprintf(out[k++], 200, "device name or architecture changed: vzcaps never changes them");
    return k;
}

static const char *yes_no_text(int v) { return v < 0 ? "?" : v ? "yes" : "no"; }

void probe_render_text(const struct probe_answers *s, const struct probe_answers *u, const struct vzcaps_profile *p, FILE *out)
{
    char unexpected[32][200];
    size_t nu = probe_unexpected(s, u, p, unexpected, 32);
    fprintf(out, "device: %s (architecture %s)\n", esc(s->device), s->architecture[0] ? esc(s->architecture) : "not reported");
    fprintf(out, "%-36s %-14s %-14s\n", "query", "stock", "vzcaps");
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = 0; i < n && i < PROBE_FAMILIES; i++) {
        char q[64];
        snprintf(q, sizeof q, "supportsFamily(%s %lld)", vzcaps_family_name(all[i]), (long long)all[i]);
        fprintf(out, "%-36s %-14s %-14s%s\n", q, yes_no_text(s->family[i]), yes_no_text(u->family[i]), s->family[i] != u->family[i] ? "<- changed" : "");
    }
    const char *names[] = {"maxThreadgroupMemoryLength", "recommendedMaxWorkingSetSize", "maxBufferLength"};
    long long sv[] = {s->threadgroup, s->working_set, s->max_buffer}, uv[] = {u->threadgroup, u->working_set, u->max_buffer};
    for (int i = 0; i < 3; i++)
        fprintf(out, "%-36s %-14lld %-14lld%s\n", names[i], sv[i], uv[i], sv[i] != uv[i] ? "<- changed" : "");
    fprintf(out, "%-36s %-14s %-14s\n", "hasUnifiedMemory", yes_no_text(s->unified), yes_no_text(u->unified));
    struct llama_gates gs, gu;
    llama_gates_from(s, &gs);
    llama_gates_from(u, &gu);
    fprintf(out, "llama.cpp would use:\n");
    const char *gn[] = {"simdgroup reduction", "simdgroup matrix mul.", "bfloat", "tensor"};
    bool a[] = {gs.simdgroup_reduction, gs.simdgroup_mm, gs.bfloat, gs.tensor}, b[] = {gu.simdgroup_reduction, gu.simdgroup_mm, gu.bfloat, gu.tensor};
    for (int i = 0; i < 4; i++)
        fprintf(out, "  %-34s %-14s %-14s\n", gn[i], a[i] ? "yes" : "no", b[i] ? "yes" : "no");
    for (size_t i = 0; i < nu; i++)
        fprintf(out, "ERROR: unexpected change: %s\n", esc(unexpected[i]));
}

static void gates_json(struct json *j, const char *key, const struct probe_answers *a)
{
    struct llama_gates g;
    llama_gates_from(a, &g);
    json_obj(j, key);
    json_bool(j, "simdgroup_reduction", g.simdgroup_reduction);
    json_bool(j, "simdgroup_matrix_mul", g.simdgroup_mm);
    json_bool(j, "bfloat", g.bfloat);
    json_bool(j, "tensor", g.tensor);
    json_end_obj(j);
}

static void answers_obj(struct json *j, const char *key, const struct probe_answers *a)
{
    json_obj(j, key);
    json_str(j, "device", a->device);
    json_str(j, "architecture", a->architecture[0] ? a->architecture : NULL);
    json_obj(j, "families");
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = 0; i < n && i < PROBE_FAMILIES; i++) {
        char k[16];
        snprintf(k, sizeof k, "%lld", (long long)all[i]);
        if (a->family[i] < 0)
            json_null(j, k);
        else
            json_bool(j, k, a->family[i] == 1);
    }
    json_end_obj(j);
    json_int(j, "max_threadgroup_memory", a->threadgroup);
    json_int(j, "recommended_working_set_size", a->working_set);
    json_int(j, "max_buffer_length", a->max_buffer);
    if (a->unified < 0)
        json_null(j, "has_unified_memory");
    else
        json_bool(j, "has_unified_memory", a->unified == 1);
    json_end_obj(j);
}

void probe_render_json(const struct probe_answers *s, const struct probe_answers *u, const struct vzcaps_profile *p, struct json *j)
{
    char unexpected[32][200];
    size_t nu = probe_unexpected(s, u, p, unexpected, 32);
    /* MTLDevice's name and architecture.name as the stock device gives them (vzcaps never
     * changes either: a difference is in "unexpected"); null when it has no architecture */
    json_obj(j, "device");
    json_str(j, "name", s->device);
    json_obj(j, "architecture");
    json_str(j, "name", s->architecture[0] ? s->architecture : NULL);
    json_end_obj(j);
    json_end_obj(j);
    answers_obj(j, "stock", s);
    answers_obj(j, "unlocked", u);
    json_arr(j, "changed");
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = 0; i < n && i < PROBE_FAMILIES; i++)
        if (s->family[i] != u->family[i])
            json_int(j, NULL, all[i]);
    json_end_arr(j);
    json_arr(j, "unexpected");
    for (size_t i = 0; i < nu; i++)
        json_str(j, NULL, unexpected[i]);
    json_end_arr(j);
    json_obj(j, "llama_gates");
    gates_json(j, "stock", s);
    gates_json(j, "unlocked", u);
    json_end_obj(j);
}

void probe_device_describe(const char *probe_json, char *out, size_t len)
{
    char err[200];
    struct jv *doc = probe_json ? jv_parse(probe_json, strlen(probe_json), err, sizeof err) : NULL;
    const struct jv *dev = jv_get(doc, "device"), *name = jv_get(dev, "name"), *arch = jv_get(jv_get(dev, "architecture"), "name");
    if (!name || name->type != JV_STRING)
        snprintf(out, len, "not reported (no probe result with a device name)");
    else
        snprintf(out, len, "%s, architecture %s", esc(name->string), arch && arch->type == JV_STRING ? esc(arch->string) : "not reported");
    jv_free(doc);
}

int vresult_parse(const char *text, struct vresult *r)
{
    memset(r, 0, sizeof *r);
    char err[200];
    struct jv *doc = jv_parse(text, strlen(text), err, sizeof err);
    const struct jv *checks = jv_get(doc, "checks"), *dev = jv_get(doc, "device"), *nc = jv_get(doc, "nocopy_guest_fault");
    if (!doc || !checks || checks->type != JV_ARRAY) {
        jv_free(doc);
        return -1;
    }
    snprintf(r->device, sizeof r->device, "%s", dev && dev->type == JV_STRING ? dev->string : "");
    r->nocopy_stock_failed = nc && nc->type == JV_BOOL && nc->number;
    for (const struct jv *c = checks->child; c && r->n < sizeof r->checks / sizeof r->checks[0]; c = c->next) {
        struct vcheck *v = &r->checks[r->n++];
        const struct jv *name = jv_get(c, "name"), *path = jv_get(c, "path"), *res = jv_get(c, "result"), *why = jv_get(c, "reason");
        const struct jv *unl = jv_get(c, "unlocked");
        snprintf(v->name, sizeof v->name, "%s", name && name->type == JV_STRING ? name->string : "?");
        snprintf(v->path, sizeof v->path, "%s", path && path->type == JV_STRING ? path->string : "");
        snprintf(v->reason, sizeof v->reason, "%s", why && why->type == JV_STRING ? why->string : "");
        const char *rs = res && res->type == JV_STRING ? res->string : "";
        v->status = strcmp(rs, "pass") == 0 ? VCHECK_PASS : strcmp(rs, "skipped") == 0 ? VCHECK_SKIP : VCHECK_FAIL;
        v->unlocked = unl && unl->type == JV_BOOL && unl->number;
        const char *nums[] = {"max_abs_error", "max_rel_error", "tolerance_abs", "tolerance_rel", "compared", "mismatched"};
        double vals[6] = {0};
        for (int k = 0; k < 6; k++) {
            const struct jv *x = jv_get(c, nums[k]);
            vals[k] = x && x->type == JV_NUMBER ? x->number : 0;
        }
        v->max_abs = vals[0], v->max_rel = vals[1], v->tol_abs = vals[2], v->tol_rel = vals[3];
        v->compared = (size_t)vals[4], v->bad = (size_t)vals[5];
    }
    jv_free(doc);
    return 0;
}

void verify_merge_stock_nocopy(struct vresult *unlocked, const struct vresult *stock)
{
    const struct vcheck *s = NULL;
    for (size_t i = 0; i < stock->n; i++)
        if (strcmp(stock->checks[i].name, "nocopy_mmap") == 0)
            s = &stock->checks[i];
    for (size_t i = 0; i < unlocked->n; i++) {
        struct vcheck *u = &unlocked->checks[i];
        if (strcmp(u->name, "nocopy_mmap") != 0 || u->status != VCHECK_FAIL)
            continue;
        if (s && s->status == VCHECK_FAIL) {
            unlocked->nocopy_stock_failed = true; /* a guest fault: fails without vzcaps too */
            u->unlocked = false;
        } else {
            u->unlocked = true; /* fails only with the library: count it */
        }
    }
}

/* ---- one child per check ---- */

const struct vgroup verify_groups[] = {
    {"simd", "simd_reduce", "SIMD-group reduction/shuffle"},
    {"mm", "simdgroup_mm", "SIMD-group matrix multiply"},
    {"bfloat", "bfloat", "bfloat storage, conversion, arithmetic"},
    {"threadgroup", "threadgroup_memory", "threadgroup memory at the effective limit"},
    {"nocopy", "nocopy_mmap", "newBufferWithBytesNoCopy over mmap"},
    {0, 0, 0},
};

const struct vgroup *verify_group_find(const char *name)
{
    for (const struct vgroup *g = verify_groups; g->name; g++)
        if (strcmp(g->name, name) == 0)
            return g;
    return NULL;
}

bool verify_group_planned(const struct vplan *plan, const struct vgroup *g)
{
    if (strcmp(g->name, "simd") == 0)
        return plan->simd_reduction;
    if (strcmp(g->name, "mm") == 0)
        return plan->simdgroup_mm;
    if (strcmp(g->name, "bfloat") == 0)
        return plan->bfloat;
    if (strcmp(g->name, "threadgroup") == 0)
        return plan->threadgroup;
    return true;
}

static struct vcheck *record(struct vresult *r, const struct vgroup *g, bool unlocked)
{
    if (r->n >= sizeof r->checks / sizeof r->checks[0])
        return NULL;
    struct vcheck *c = &r->checks[r->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", g->check);
    snprintf(c->path, sizeof c->path, "%s", g->path);
    c->unlocked = unlocked;
    return c;
}

void verify_child_failed(struct vresult *r, const struct vgroup *g, bool unlocked, int wait_status)
{
    struct vcheck *c = record(r, g, unlocked);
    if (!c)
        return;
    if (WIFSIGNALED(wait_status))
        vcheck_fail(c, "its child process was killed by signal %d (%s) before reporting", WTERMSIG(wait_status),
                    strsignal(WTERMSIG(wait_status)));
    else if (WIFEXITED(wait_status))
        vcheck_fail(c, "its child process exited with status %d without results", WEXITSTATUS(wait_status));
    else
        vcheck_fail(c, "its child process could not be run");
}

void verify_group_skipped(struct vresult *r, const struct vgroup *g, const char *reason)
{
    struct vcheck *c = record(r, g, false);
    if (c)
        vcheck_skip(c, "%s", reason);
}

void verify_append(struct vresult *into, const struct vresult *from)
{
    if (!into->device[0])
        snprintf(into->device, sizeof into->device, "%s", from->device);
    for (size_t i = 0; i < from->n && into->n < sizeof into->checks / sizeof into->checks[0]; i++)
        into->checks[into->n++] = from->checks[i];
}

bool verify_bfloat_supported(const char *os_version, char *why, size_t len)
{
    uint64_t major;
    char head[16];
    size_t n = strcspn(os_version ? os_version : "", ".");
    if (!os_version || n == 0 || n >= sizeof head)
        return true;
    memcpy(head, os_version, n);
    head[n] = '\0';
    if (vzcaps_parse_u64(head, &major) != 0 || major >= 14)
        return true;
    snprintf(why, len, "the bfloat kernel needs Metal Shading Language 3.1 (macOS 14); this is macOS %s", os_version);
    return false;
}