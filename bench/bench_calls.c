/* Benchmark helper: the per-call cost of each capability query as a client pays it
 * (method lookup + call), on the stand-in device; and an immediate exit for start-up timing.
 * bench_calls time [N]       best-of-7 nanoseconds per call for each selector
 * bench_calls count SEL N    N calls of one selector inside measured_loop (for callgrind)
 * bench_calls first SEL      one call of SEL inside first_call, a call site not seen before
 *                            (for callgrind: what resolving a new caller costs once)
 * bench_calls exit           returns at once (process start-up)
 * bench_calls startup N      median microseconds to spawn and reap `bench_calls exit` */
#include <objc/runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <objc/message.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    fprintf(stderr, "usage: bench_calls time [N] | count SEL N | exit\n");
    return 2;
}
