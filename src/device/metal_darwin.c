/* Metal driven from C through the Objective-C runtime: objc_msgSend cast to the exact type
 * at every call. Built and audited, not run here. Owns: moving inputs to the GPU and results
 * back. Never: decides a verdict (verify_core.c does, and is tested on Linux). */
#include "metal.h"

#include "../common/text.h"
#include "../core/vzcaps_core.h"
#include "kernels.h"

#include <fcntl.h>
#include <objc/message.h>
#include <objc/runtime.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern id MTLCreateSystemDefaultDevice(void) __attribute__((weak_import));
extern void *objc_autoreleasePoolPush(void);
extern void objc_autoreleasePoolPop(void *pool);

typedef struct {
    unsigned long width, height, depth;
} mtl_size;

typedef id (*fn_id)(id, SEL);
typedef id (*fn_id_cstr)(id, SEL, const char *);
typedef id (*fn_id_id)(id, SEL, id);
typedef id (*fn_id_ulong)(id, SEL, unsigned long);
typedef BOOL (*fn_bool_long)(id, SEL, long);
typedef BOOL (*fn_bool_sel)(id, SEL, SEL);
typedef BOOL (*fn_bool)(id, SEL);
typedef unsigned long (*fn_ulong)(id, SEL);
typedef const char *(*fn_cstr)(id, SEL);
typedef void *(*fn_ptr)(id, SEL);
typedef void (*fn_void)(id, SEL);
typedef void (*fn_void_id)(id, SEL, id);
typedef void (*fn_void_ulong)(id, SEL, unsigned long);
typedef id (*fn_library)(id, SEL, id, id, id *);
typedef id (*fn_pipeline)(id, SEL, id, id *);
typedef id (*fn_buffer_bytes)(id, SEL, const void *, unsigned long, unsigned long);
typedef id (*fn_buffer_length)(id, SEL, unsigned long, unsigned long);
typedef id (*fn_buffer_nocopy)(id, SEL, void *, unsigned long, unsigned long, id);
typedef void (*fn_set_buffer)(id, SEL, id, unsigned long, unsigned long);
typedef void (*fn_set_bytes)(id, SEL, const void *, unsigned long, unsigned long);
typedef void (*fn_set_tg)(id, SEL, unsigned long, unsigned long);
typedef void (*fn_dispatch)(id, SEL, mtl_size, mtl_size);

#define MSG(type) ((type)(void (*)(void))objc_msgSend)
#define LANGUAGE_3_0 0x30000ul
#define LANGUAGE_3_1 0x30001ul
#define STATUS_COMPLETED 4

static SEL S(const char *name) { return sel_registerName(name); }

static const char *cstr(id s)
{
    const char *c = s ? MSG(fn_cstr)(s, S("UTF8String")) : NULL;
    return c ? c : "";
}

static id nsstring(const char *s)
{
    return MSG(fn_id_cstr)((id)objc_getClass("NSString"), S("stringWithUTF8String:"), s);
}

static const char *error_text(id error)
{
    return error ? cstr(MSG(fn_id)(error, S("localizedDescription"))) : "unknown error";
}

static bool responds(id obj, const char *sel)
{
    return obj && MSG(fn_bool_sel)(obj, S("respondsToSelector:"), S(sel));
}

int metal_probe(struct probe_answers *a)
{
    memset(a, 0, sizeof *a);
    void *pool = objc_autoreleasePoolPush();
    id dev = MTLCreateSystemDefaultDevice ? MTLCreateSystemDefaultDevice() : nil;
    if (!dev) {
        snprintf(a->error, sizeof a->error, "MTLCreateSystemDefaultDevice returned no device");
        objc_autoreleasePoolPop(pool);
        return -1;
    }
    snprintf(a->device, sizeof a->device, "%s", cstr(MSG(fn_id)(dev, S("name"))));
    if (responds(dev, "architecture"))
        snprintf(a->architecture, sizeof a->architecture, "%s", cstr(MSG(fn_id)(MSG(fn_id)(dev, S("architecture")), S("name"))));
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = 0; i < n && i < PROBE_FAMILIES; i++)
        a->family[i] = MSG(fn_bool_long)(dev, S("supportsFamily:"), (long)all[i]) ? 1 : 0;
    a->threadgroup = (long long)MSG(fn_ulong)(dev, S("maxThreadgroupMemoryLength"));
    a->working_set = (long long)MSG(fn_ulong)(dev, S("recommendedMaxWorkingSetSize"));
    a->max_buffer = (long long)MSG(fn_ulong)(dev, S("maxBufferLength"));
    a->unified = MSG(fn_bool)(dev, S("hasUnifiedMemory")) ? 1 : 0;
    a->ok = true;
    objc_autoreleasePoolPop(pool);
    return 0;
}

/* ---- compute helpers ---- */

struct gpu {
    id dev, queue;
};

static const char *kernel_source(const char *name)
{
    for (size_t i = 0; embedded_kernels[i].name; i++)
        if (strcmp(embedded_kernels[i].name, name) == 0)
            return embedded_kernels[i].source;
    return NULL;
}

/* A pipeline for function fn of kernels/<file>.metal, or nil with the reason in why. */
static id pipeline(struct gpu *g, const char *file, const char *fn, unsigned long language, char *why, size_t len)
{
    const char *src = kernel_source(file);
    if (!src) {
        snprintf(why, len, "kernel source %s.metal is not embedded", file);
        return nil;
    }
    id opts = MSG(fn_id)(MSG(fn_id)((id)objc_getClass("MTLCompileOptions"), S("alloc")), S("init"));
    MSG(fn_void_ulong)(opts, S("setLanguageVersion:"), language);
    id err = nil;
    id lib = MSG(fn_library)(g->dev, S("newLibraryWithSource:options:error:"), nsstring(src), opts, &err);
    if (!lib) {
        snprintf(why, len, "compiling %s.metal failed: %s", file, error_text(err));
        return nil;
    }
    id func = MSG(fn_id_id)(lib, S("newFunctionWithName:"), nsstring(fn));
    if (!func) {
        snprintf(why, len, "no function %s in %s.metal", fn, file);
        return nil;
    }
    id pso = MSG(fn_pipeline)(g->dev, S("newComputePipelineStateWithFunction:error:"), func, &err);
    if (!pso)
        snprintf(why, len, "pipeline for %s failed: %s", fn, error_text(err));
    return pso;
}

static id buffer_with(struct gpu *g, const void *bytes, size_t len)
{
    return MSG(fn_buffer_bytes)(g->dev, S("newBufferWithBytes:length:options:"), bytes, (unsigned long)len, 0ul);
}

static id buffer_of(struct gpu *g, size_t len)
{
    return MSG(fn_buffer_length)(g->dev, S("newBufferWithLength:options:"), (unsigned long)len, 0ul);
}

static void *contents(id buf) { return MSG(fn_ptr)(buf, S("contents")); }

/* Encodes one dispatch; threads or groups (exactly one non-NULL) and waits. 0 or -1 with why. */
static int run(struct gpu *g, id pso, id *buffers, size_t nbuf, const void *bytes, size_t bytes_len, size_t bytes_index,
               unsigned long tg_memory, const mtl_size *threads, const mtl_size *groups, mtl_size per_group, char *why, size_t len)
{
    id cb = MSG(fn_id)(g->queue, S("commandBuffer"));
    id enc = MSG(fn_id)(cb, S("computeCommandEncoder"));
    MSG(fn_void_id)(enc, S("setComputePipelineState:"), pso);
    for (size_t i = 0; i < nbuf; i++)
        MSG(fn_set_buffer)(enc, S("setBuffer:offset:atIndex:"), buffers[i], 0ul, (unsigned long)i);
    if (bytes)
        MSG(fn_set_bytes)(enc, S("setBytes:length:atIndex:"), bytes, (unsigned long)bytes_len, (unsigned long)bytes_index);
    if (tg_memory)
        MSG(fn_set_tg)(enc, S("setThreadgroupMemoryLength:atIndex:"), tg_memory, 0ul);
    if (threads)
        MSG(fn_dispatch)(enc, S("dispatchThreads:threadsPerThreadgroup:"), *threads, per_group);
    else
        MSG(fn_dispatch)(enc, S("dispatchThreadgroups:threadsPerThreadgroup:"), *groups, per_group);
    MSG(fn_void)(enc, S("endEncoding"));
    MSG(fn_void)(cb, S("commit"));
    MSG(fn_void)(cb, S("waitUntilCompleted"));
    unsigned long status = MSG(fn_ulong)(cb, S("status"));
    if (status != STATUS_COMPLETED) {
        snprintf(why, len, "command buffer status %lu: %s", status, error_text(MSG(fn_id)(cb, S("error"))));
        return -1;
    }
    return 0;
}

static struct vcheck *add(struct vresult *r, const char *name, const char *path, bool unlocked)
{
    struct vcheck *c = &r->checks[r->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->path, sizeof c->path, "%s", path);
    c->unlocked = unlocked;
    return c;
}

/* ---- the checks ---- */

static void check_simd(struct gpu *g, struct vresult *r)
{
    char why[300] = "";
    id pso = pipeline(g, "simd_reduce", "vz_simd_reduce", LANGUAGE_3_0, why, sizeof why);
    static const size_t sizes[] = {32, 96, 1000};
    for (size_t s = 0; s < 3; s++) {
        size_t n = sizes[s];
        char name[40];
        snprintf(name, sizeof name, "simd_reduce_%zu", n);
        struct vcheck *c = add(r, name, "SIMD-group reduction/shuffle", true);
        if (!pso) {
            vcheck_fail(c, "%s", why);
            continue;
        }
        if (MSG(fn_ulong)(pso, S("threadExecutionWidth")) != SIMD_WIDTH) {
            vcheck_skip(c, "threadExecutionWidth is %lu, not %d", MSG(fn_ulong)(pso, S("threadExecutionWidth")), SIMD_WIDTH);
            continue;
        }
        float *x = malloc(n * sizeof *x), *want = malloc(4 * n * sizeof *want);
        unsigned char *defined = malloc(n);
        vz_inputs((uint32_t)(7 + s), x, n, 16, 2);
        ref_simd(x, n, want, want + n, want + 2 * n, want + 3 * n, defined);
        id bufs[5] = {buffer_with(g, x, n * 4), buffer_of(g, n * 4), buffer_of(g, n * 4), buffer_of(g, n * 4), buffer_of(g, n * 4)};
        mtl_size threads = {n, 1, 1}, per = {256, 1, 1};
        if (run(g, pso, bufs, 5, NULL, 0, 0, 0, &threads, NULL, per, why, sizeof why) != 0) {
            vcheck_fail(c, "%s", why);
        } else {
            /* sums and prefix sums of multiples of 1/16 in [-2, 2) are exact in float */
            vcheck_compare(c, contents(bufs[1]), want, n, 0, 0);
            vcheck_compare(c, contents(bufs[2]), want + n, n, 0, 0);
            float *down = contents(bufs[3]);
            for (size_t i = 0; i < n; i++)
                if (defined[i])
                    vcheck_compare(c, down + i, want + 2 * n + i, 1, 0, 0);
            vcheck_compare(c, contents(bufs[4]), want + 3 * n, n, 0, 0);
        }
        free(x), free(want), free(defined);
    }
}

static void check_mm(struct gpu *g, struct vresult *r)
{
    static const size_t shapes[][3] = {{8, 8, 8}, {16, 24, 16}, {13, 7, 11}, {24, 16, 9}}; /* M, K, N */
    char why[300] = "";
    id pf = pipeline(g, "simdgroup_mm", "vz_mm_f32", LANGUAGE_3_0, why, sizeof why);
    char why_h[300] = "";
    id ph = pipeline(g, "simdgroup_mm", "vz_mm_f16", LANGUAGE_3_0, why_h, sizeof why_h);
    for (int half = 0; half <= 1; half++)
        for (size_t s = 0; s < 4; s++) {
            size_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2], pm = round_up8(m), pk = round_up8(k), pn = round_up8(n);
            char name[40];
            snprintf(name, sizeof name, "simdgroup_mm_%s_%zux%zux%zu", half ? "f16" : "f32", m, k, n);
            struct vcheck *c = add(r, name, half ? "SIMD-group matrix multiply (half)" : "SIMD-group matrix multiply (float)", true);
            id pso = half ? ph : pf;
            if (!pso) {
                vcheck_fail(c, "%s", half ? why_h : why);
                continue;
            }
            float *a = malloc(m * k * 4), *b = malloc(k * n * 4), *want = malloc(m * n * 4);
            float *pa = malloc(pm * pk * 4), *pb = malloc(pk * pn * 4), *got = malloc(m * n * 4);
            /* float: multiples of 1/16 in [-2, 2); half: multiples of 1/4 in [-1, 1): exact either way */
            vz_inputs((uint32_t)(100 + s), a, m * k, half ? 4 : 16, half ? 1 : 2);
            vz_inputs((uint32_t)(200 + s), b, k * n, half ? 4 : 16, half ? 1 : 2);
            ref_matmul(a, b, m, k, n, want);
            pad_matrix(a, m, k, pa, pm, pk);
            pad_matrix(b, k, n, pb, pk, pn);
            size_t es = half ? 2 : 4;
            void *ia = malloc(pm * pk * es), *ib = malloc(pk * pn * es);
            for (size_t i = 0; i < pm * pk; i++)
                half ? (void)(((uint16_t *)ia)[i] = vz_float_to_half(pa[i])) : (void)(((float *)ia)[i] = pa[i]);
            for (size_t i = 0; i < pk * pn; i++)
                half ? (void)(((uint16_t *)ib)[i] = vz_float_to_half(pb[i])) : (void)(((float *)ib)[i] = pb[i]);
            uint32_t dims[4] = {(uint32_t)pm, (uint32_t)pk, (uint32_t)pn, 0};
            id bufs[3] = {buffer_with(g, ia, pm * pk * es), buffer_with(g, ib, pk * pn * es), buffer_of(g, pm * pn * es)};
            mtl_size groups = {pn / 8, pm / 8, 1}, per = {32, 1, 1};
            if (run(g, pso, bufs, 3, dims, sizeof dims, 3, 0, NULL, &groups, per, why, sizeof why) != 0) {
                vcheck_fail(c, "%s", why);
            } else {
                void *out = contents(bufs[2]);
                for (size_t i = 0; i < m; i++)
                    for (size_t j = 0; j < n; j++)
                        got[i * n + j] = half ? vz_half_to_float(((uint16_t *)out)[i * pn + j]) : ((float *)out)[i * pn + j];
                vcheck_compare(c, got, want, m * n, half ? 1e-3 : 1e-5, 0);
            }
            free(a), free(b), free(want), free(pa), free(pb), free(got), free(ia), free(ib);
        }
}

static void check_bfloat(struct gpu *g, struct vresult *r)
{
    struct vcheck *c = add(r, "bfloat", "bfloat storage, conversion, arithmetic", true);
    char why[300] = "";
    id pso = pipeline(g, "bfloat", "vz_bfloat", LANGUAGE_3_1, why, sizeof why);
    if (!pso) {
        vcheck_fail(c, "%s (bfloat needs Metal Shading Language 3.1, macOS 14)", why);
        return;
    }
    enum { N = 1024 };
    static float a[N], b[N], cc[N], conv[N], fma_want[N];
    vz_inputs(31, a, N, 16, 2);
    vz_inputs(32, b, N, 16, 2);
    vz_inputs(33, cc, N, 16, 2);
    ref_bfloat(a, b, cc, N, conv, fma_want);
    id bufs[6] = {buffer_with(g, a, sizeof a), buffer_with(g, b, sizeof b), buffer_with(g, cc, sizeof cc),
                  buffer_of(g, N * 2), buffer_of(g, N * 4), buffer_of(g, N * 4)};
    mtl_size threads = {N, 1, 1}, per = {256, 1, 1};
    if (run(g, pso, bufs, 6, NULL, 0, 0, 0, &threads, NULL, per, why, sizeof why) != 0) {
        vcheck_fail(c, "%s", why);
        return;
    }
    uint16_t *stored = contents(bufs[3]);
    static float stored_f[N];
    for (size_t i = 0; i < N; i++)
        stored_f[i] = vz_bf16_to_float(stored[i]);
    vcheck_compare(c, stored_f, conv, N, 0, 0);            /* inputs are exact in bfloat */
    vcheck_compare(c, contents(bufs[4]), conv, N, 0, 0);
    /* one rounding more or less in a*b+c: within one bfloat step of the result */
    vcheck_compare(c, contents(bufs[5]), fma_want, N, 1.0 / 64, 1.0 / 128);
}

static void check_threadgroup(struct gpu *g, struct vresult *r, uint64_t bytes)
{
    char name[40];
    snprintf(name, sizeof name, "threadgroup_memory_%llu", (unsigned long long)bytes);
    struct vcheck *c = add(r, name, "threadgroup memory at the effective limit", true);
    char why[300] = "";
    id pso = pipeline(g, "threadgroup_memory", "vz_threadgroup", LANGUAGE_3_0, why, sizeof why);
    if (!pso) {
        vcheck_fail(c, "%s", why);
        return;
    }
    unsigned long max_threads = MSG(fn_ulong)(pso, S("maxTotalThreadsPerThreadgroup"));
    uint64_t alloc = bytes & ~15ull; /* threadgroup allocations come in 16-byte units */
    uint32_t threads = max_threads < 256 ? (uint32_t)max_threads : 256, words = (uint32_t)(alloc / 4);
    uint32_t *want = malloc(threads * 4);
    ref_threadgroup(words, threads, want);
    id out = buffer_of(g, threads * 4);
    mtl_size groups = {1, 1, 1}, per = {threads, 1, 1};
    if (run(g, pso, &out, 1, &words, 4, 1, (unsigned long)alloc, NULL, &groups, per, why, sizeof why) != 0)
        vcheck_fail(c, "%s", why);
    else
        vcheck_compare_u32(c, contents(out), want, threads);
    free(want);
}

static void release(id obj)
{
    if (obj)
        MSG(fn_void)(obj, S("release"));
}

/* One no-copy pass: wraps map in a buffer, runs the kernel, compares with want; every buffer
 * it made is released before it returns (and so before the caller unmaps). 0, or -1 with why. */
static int nocopy_pass(struct gpu *g, id pso, void *map, size_t len, const uint32_t *want, struct vcheck *c, char *why,
                       size_t why_len)
{
    size_t n = len / 4;
    id in = MSG(fn_buffer_nocopy)(g->dev, S("newBufferWithBytesNoCopy:length:options:deallocator:"), map, (unsigned long)len, 0ul, nil);
    id out = buffer_of(g, len);
    int rc = -1;
    if (!in || !out) {
        snprintf(why, why_len, "%s returned nil", in ? "newBufferWithLength" : "newBufferWithBytesNoCopy");
    } else {
        id bufs[2] = {in, out};
        mtl_size threads = {n, 1, 1}, per = {256, 1, 1};
        if (run(g, pso, bufs, 2, NULL, 0, 0, 0, &threads, NULL, per, why, why_len) == 0) {
            vcheck_compare_u32(c, contents(out), want, n);
            rc = 0;
        }
    }
    release(in);
    release(out);
    return rc;
}

static void check_nocopy(struct gpu *g, struct vresult *r)
{
    struct vcheck *c = add(r, "nocopy_mmap", "newBufferWithBytesNoCopy over mmap", false);
    char why[300] = "", path[] = "/tmp/vzcaps-nocopy-XXXXXX";
    id pso = pipeline(g, "nocopy", "vz_nocopy", LANGUAGE_3_0, why, sizeof why);
    int fd = mkstemp(path);
    size_t len = (size_t)getpagesize() * 4, n = len / 4;
    if (!pso || fd < 0) {
        vcheck_fail(c, "%s", pso ? "cannot create the temporary file" : why);
        if (fd >= 0)
            close(fd), unlink(path);
        return;
    }
    unlink(path);
    uint32_t *pattern = malloc(len), *want = malloc(len);
    void *map = MAP_FAILED;
    /* round 0: the file written, then mapped; round 1: rewritten through the file while mapped */
    for (int round = 0; round < 2 && pattern && want; round++) {
        for (size_t i = 0; i < n; i++)
            pattern[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)(round ? 0xa5a5a5a5u : 0);
        if (pwrite(fd, pattern, len, 0) != (ssize_t)len) {
            vcheck_fail(c, "cannot write the temporary file");
            break;
        }
        if (round == 0 && (map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
            vcheck_fail(c, "mmap failed");
            break;
        }
        ref_nocopy(pattern, n, want);
        if (nocopy_pass(g, pso, map, len, want, c, why, sizeof why) != 0) {
            vcheck_fail(c, "%s", why);
            break;
        }
        if (c->bad && !c->reason[0]) {
            snprintf(c->reason, sizeof c->reason, "stale data after %s", round ? "rewriting the mapped file" : "writing, then mapping");
            break;
        }
    }
    if (map != MAP_FAILED)
        munmap(map, len); /* after every buffer over it was released */
    close(fd);
    free(pattern), free(want);
}

int metal_verify(const struct vplan *plan, const char *group, struct vresult *r)
{
    memset(r, 0, sizeof *r);
    void *pool = objc_autoreleasePoolPush();
    struct gpu g = {MTLCreateSystemDefaultDevice ? MTLCreateSystemDefaultDevice() : nil, nil};
    if (!g.dev) {
        objc_autoreleasePoolPop(pool);
        return -1;
    }
    snprintf(r->device, sizeof r->device, "%s", cstr(MSG(fn_id)(g.dev, S("name"))));
    g.queue = MSG(fn_id)(g.dev, S("newCommandQueue"));
    if (strcmp(group, "simd") == 0)
        check_simd(&g, r);
    else if (strcmp(group, "mm") == 0)
        check_mm(&g, r);
    else if (strcmp(group, "bfloat") == 0)
        check_bfloat(&g, r);
    else if (strcmp(group, "threadgroup") == 0)
        check_threadgroup(&g, r, plan->threadgroup_bytes);
    else
        check_nocopy(&g, r);
    objc_autoreleasePoolPop(pool);
    return 0;
}

int metal_device_classes(const char **chain, size_t max, size_t *n, const char **init_owner, char *why, size_t why_len)
{
    *n = 0;
    *init_owner = NULL;
    void *pool = objc_autoreleasePoolPush();
    id dev = MTLCreateSystemDefaultDevice ? MTLCreateSystemDefaultDevice() : nil;
    if (!dev) {
        objc_autoreleasePoolPop(pool);
        snprintf(why, why_len, "MTLCreateSystemDefaultDevice returned nil");
        return -1;
    }
    SEL init = S("initGPUFamilySupport");
    for (Class c = object_getClass(dev); c && *n < max; c = class_getSuperclass(c)) {
        chain[(*n)++] = class_getName(c);
        /* the implementation the device runs comes from the first class whose method is not
         * its superclass's */
        Method m = class_getInstanceMethod(c, init), up = class_getSuperclass(c) ? class_getInstanceMethod(class_getSuperclass(c), init) : NULL;
        if (!*init_owner && m && m != up)
            *init_owner = class_getName(c);
    }
    objc_autoreleasePoolPop(pool);
    return 0;
}
