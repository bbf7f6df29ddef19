/* Benchmark helper: the per-call cost of each capability query as a client pays it
 * (method lookup + call), on the stand-in device; and an immediate exit for start-up timing.
 * bench_calls time [N]       best-of-7 nanoseconds per call for each selector
 * bench_calls count SEL N    N calls of one selector inside measured_loop (for callgrind)
 * bench_calls first SEL      one call of SEL inside first_call, a call site not seen before
 *                            (for callgrind: what resolving a new caller costs once)
 * bench_calls sites SEL K N [stock]  N calls of SEL inside sites_loop, alternating among K call
 *                            sites spread over the images build/bench/libsites0-3.so in turn
 *                            (each site called twice before, unmeasured: the steady state);
 *                            stock: with build/clients/libtorch_cpu.so loaded (a stock caller's
 *                            image, under the default scope), which never asks
 * bench_calls exit           returns at once (process start-up)
 * bench_calls startup N      median microseconds to spawn and reap `bench_calls exit` */
#include <dlfcn.h>
#include <objc/runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <objc/message.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

id MTLCreateSystemDefaultDevice(void);

typedef BOOL (*family_fn)(id, SEL, long);
typedef unsigned long (*ulong_fn)(id, SEL);

static volatile unsigned long sink;

__attribute__((noinline)) void measured_loop(id dev, SEL sel, long n, int family);
__attribute__((noinline)) void measured_loop(id dev, SEL sel, long n, int family)
{
    for (long i = 0; i < n; i++) {
        IMP imp = objc_msg_lookup(dev, sel);
        if (family)
            sink += ((family_fn)(void (*)(void))imp)(dev, sel, 1001 + (i & 7));
        else
            sink += ((ulong_fn)(void (*)(void))imp)(dev, sel);
    }
}

__attribute__((noinline)) void first_call(id dev, SEL sel, int family);
__attribute__((noinline)) void first_call(id dev, SEL sel, int family)
{
    IMP imp = objc_msg_lookup(dev, sel);
    if (family)
        sink += ((family_fn)(void (*)(void))imp)(dev, sel, 1007);
    else
        sink += ((ulong_fn)(void (*)(void))imp)(dev, sel);
}

typedef unsigned long (*site_fn)(id, SEL, long);

static inline __attribute__((always_inline)) void sites_run(id dev, SEL sel, const site_fn *const *sites, long k, long n)
{
    const site_fn *const *at = sites, *const *end = sites + k;
    for (long i = 0; i < n; i++) {
        sink += (**at)(dev, sel, 1001 + (i & 7));
        if (++at == end)
            at = sites;
    }
}
/* the same loop twice: callgrind collects sites_loop only */
__attribute__((noinline)) void sites_warm(id dev, SEL sel, const site_fn *const *sites, long k, long n);
__attribute__((noinline)) void sites_warm(id dev, SEL sel, const site_fn *const *sites, long k, long n)
{
    sites_run(dev, sel, sites, k, n);
}
__attribute__((noinline)) void sites_loop(id dev, SEL sel, const site_fn *const *sites, long k, long n);
__attribute__((noinline)) void sites_loop(id dev, SEL sel, const site_fn *const *sites, long k, long n)
{
    sites_run(dev, sel, sites, k, n);
}

/* K sites: site j is the (j / images)-th of image j % images, images = min(K, 4), so that
 * calls in turn come from distinct images. */
static int sites(const char *name, long k, long n, int stock_image)
{
    enum { IMAGES = 4 };
    const site_fn *table[IMAGES];
    unsigned count = 0;
    char path[4096];
    ssize_t len = readlink("/proc/self/exe", path, sizeof path - 32);
    if (len <= 0)
        return 1;
    path[len] = '\0';
    char *slash = strrchr(path, '/');
    int family = strcmp(name, "supportsFamily:") == 0;
    snprintf(slash + 1, 32, "clients/libtorch_cpu.so");
    if (stock_image && !dlopen(path, RTLD_NOW)) {
        fprintf(stderr, "bench_calls: %s: %s\n", path, dlerror());
        return 1;
    }
    for (int i = 0; i < IMAGES; i++) {
        snprintf(slash + 1, 32, "bench/libsites%d.so", i);
        void *h = dlopen(path, RTLD_NOW);
        const unsigned *c = h ? dlsym(h, "sites_count") : NULL;
        table[i] = h ? dlsym(h, family ? "sites_family" : "sites_limit") : NULL;
        if (!c || !table[i]) {
            fprintf(stderr, "bench_calls: %s: %s\n", path, dlerror());
            return 1;
        }
        count = *c;
    }
    id dev = MTLCreateSystemDefaultDevice(); /* after the images: a dlopen later makes the rig's process mixed */
    long images = k < IMAGES ? k : IMAGES;
    if (k < 1 || k > images * (long)count) {
        fprintf(stderr, "bench_calls: sites: K from 1 to %ld\n", IMAGES * (long)count);
        return 2;
    }
    const site_fn **list = malloc((size_t)k * sizeof *list);
    for (long j = 0; j < k; j++)
        list[j] = &table[j % images][j / images];
    SEL sel = sel_registerName(name);
    sites_warm(dev, sel, list, k, 2 * k); /* every site seen: not measured */
    sites_loop(dev, sel, list, k, n);
    free(list);
    return 0;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

extern char **environ;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int startup(const char *self, long n)
{
    double *t = malloc((size_t)n * sizeof *t);
    char *args[] = {(char *)self, "exit", NULL};
    for (long i = 0; i < n; i++) {
        pid_t pid;
        double t0 = now_ns();
        if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0)
            return 1;
        int st;
        waitpid(pid, &st, 0);
        t[i] = (now_ns() - t0) / 1000.0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("%.1f\n", t[n / 2]);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "exit") == 0)
        return 0;
    if (argc >= 3 && strcmp(argv[1], "startup") == 0)
        return startup("/proc/self/exe", atol(argv[2]));
    if (argc >= 5 && strcmp(argv[1], "sites") == 0)
        return sites(argv[2], atol(argv[3]), atol(argv[4]), argc >= 6 && strcmp(argv[5], "stock") == 0);
    const char *sels[] = {"supportsFamily:", "maxThreadgroupMemoryLength", "recommendedMaxWorkingSetSize"};
    id dev = MTLCreateSystemDefaultDevice();
    if (argc >= 4 && strcmp(argv[1], "count") == 0) {
        SEL sel = sel_registerName(argv[2]);
        measured_loop(dev, sel, atol(argv[3]), strcmp(argv[2], "supportsFamily:") == 0);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "first") == 0) {
        SEL sel = sel_registerName(argv[2]);
        int family = strcmp(argv[2], "supportsFamily:") == 0;
        IMP warm = objc_msg_lookup(dev, sel); /* the runtime's own method cache is filled here, not measured */
        (void)warm;
        first_call(dev, sel, family);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "time") == 0) {
        long n = argc >= 3 ? atol(argv[2]) : 2000000;
        for (int s = 0; s < 3; s++) {
            SEL sel = sel_registerName(sels[s]);
            double best = 1e300;
            for (int rep = 0; rep < 7; rep++) {
                double t0 = now_ns();
                measured_loop(dev, sel, n, s == 0);
                double dt = (now_ns() - t0) / (double)n;
                if (dt < best)
                    best = dt;
            }
            printf("%s %.2f\n", sels[s], best);
        }
        return 0;
    }
    fprintf(stderr, "usage: bench_calls time [N] | count SEL N | first SEL | sites SEL K N | exit\n");
    return 2;
}
