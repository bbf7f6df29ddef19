/* Prints every capability answer of the stand-in default device, one per line, so tests
 * can compare a stock run with a preloaded one. Test rig only.
 * probe [--threads N] [--child] [--no-device] [--list-devices] [--model NAME] [--spawn PROGRAM [ARGS]]
 *       [--each PROGRAM [ARGS] [--and PROGRAM [ARGS]]...]
 *   --no-device: creates no device at all (prints "no device" and exits)
 *   a last argument naming a file: the script this probe runs as the interpreter of (printed
 *            as "script PATH"), as a kernel passes it after a #! line's words
 *   --child: also runs itself once more as a child process
 *   --spawn: at the end, runs PROGRAM as a child with this process's environment (e.g.
 *            /usr/bin/env, to see what children inherit)
 *   --each:  at the end, runs each PROGRAM in turn as a child with this environment, as
 *            Ollama's server starts `llama-server --list-devices` and then a runner
 *   --list-devices, --model NAME: accepted as llama-server's, printed as a "role" line
 *   --reuse: first makes a device, asks it twice, then makes another and asks it (with
 *            FAKEMETAL_CLASS=sized, at the first one's address); prints
 *            "reuse FIRST_WS SECOND_WS same-address 0|1" */
#include <objc/Object.h>
#include <objc/runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

id MTLCreateSystemDefaultDevice(void);

static const long families[] = {1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010,
                                2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002};
#define N_FAMILIES (sizeof families / sizeof families[0])

typedef BOOL (*family_fn)(id, SEL, long);
typedef unsigned long (*ulong_fn)(id, SEL);

struct answers {
    int family[N_FAMILIES];
    unsigned long threadgroup, working_set;
    int has_threadgroup;
};

static void ask(id dev, struct answers *a)
{
    memset(a, 0, sizeof *a);
    SEL sf = sel_registerName("supportsFamily:");
    for (size_t i = 0; i < N_FAMILIES; i++)
        a->family[i] = ((family_fn)(void (*)(void))objc_msg_lookup(dev, sf))(dev, sf, families[i]) ? 1 : 0;
    SEL tg = sel_registerName("maxThreadgroupMemoryLength");
    SEL ws = sel_registerName("recommendedMaxWorkingSetSize");
    a->has_threadgroup = class_getInstanceMethod(object_getClass(dev), tg) != NULL;
    a->threadgroup = a->has_threadgroup ? ((ulong_fn)(void (*)(void))objc_msg_lookup(dev, tg))(dev, tg) : 0;
    a->working_set = ((ulong_fn)(void (*)(void))objc_msg_lookup(dev, ws))(dev, ws);
}

/* field by field, never the struct's bytes (its padding is not the answer) */
static int same_answers(const struct answers *a, const struct answers *b)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (a->family[i] != b->family[i])
            return 0;
    return a->threadgroup == b->threadgroup && a->working_set == b->working_set &&
           a->has_threadgroup == b->has_threadgroup;
}

static struct answers seen[64][200];
static pthread_barrier_t start;

static void *worker(void *arg)
{
    struct answers *mine = arg;
    pthread_barrier_wait(&start); /* all threads race the first install */
    for (int round = 0; round < 200; round++)
        ask(MTLCreateSystemDefaultDevice(), &mine[round]);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 0, child = 0, no_device = 0, reuse = 0;
    char **spawn = NULL, **each = NULL;
    const char *role = NULL, *model = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--child") == 0)
            child = 1;
        else if (strcmp(argv[i], "--reuse") == 0)
            reuse = 1;
        else if (strcmp(argv[i], "--no-device") == 0)
            no_device = 1;
        else if (i == argc - 1 && access(argv[i], F_OK) == 0)
            printf("script %s\n", argv[i]);
        else if (strcmp(argv[i], "--spawn") == 0 && i + 1 < argc) {
            spawn = argv + i + 1;
            break;
        }
        else if (strcmp(argv[i], "--each") == 0 && i + 1 < argc) {
            each = argv + i + 1;
            break;
        }
        else if (strcmp(argv[i], "--list-devices") == 0)
            role = "list-devices";
        else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            role = "runner", model = argv[++i];
        else {
            fprintf(stderr, "usage: probe [--threads N] [--child] [--no-device] [--reuse] [--list-devices] [--model NAME] [--spawn|--each PROGRAM [ARGS]]\n");
            return 2;
        }
    }
    if (no_device) {
        printf("no device\n");
        return 0;
    }
    if (reuse) {
        struct answers first, second;
        id a = MTLCreateSystemDefaultDevice();
        ask(a, &first); /* twice: a raised answer is remembered once the first is on record */
        ask(a, &first);
        void *was = (void *)a;
        id b = MTLCreateSystemDefaultDevice();
        ask(b, &second);
        printf("reuse %lu %lu same-address %d\n", first.working_set, second.working_set, (void *)b == was);
    }
    if (threads > 0) {
        /* every thread creates devices and queries at once; all answers must agree */
        pthread_t t[64];
        if (threads > 64)
            threads = 64;
        memset(seen, 0, sizeof seen);
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        for (int i = 0; i < threads; i++)
            pthread_create(&t[i], NULL, worker, seen[i]);
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        struct answers final;
        memset(&final, 0, sizeof final);
        ask(MTLCreateSystemDefaultDevice(), &final);
        int mismatches = 0;
        for (int i = 0; i < threads; i++)
            for (int r = 0; r < 200; r++)
                mismatches += !same_answers(&seen[i][r], &final);
        printf("threads %d mismatches %d\n", threads, mismatches);
    }
    id dev = MTLCreateSystemDefaultDevice();
    struct answers a;
    ask(dev, &a);
    printf("class %s\n", class_getName(object_getClass(dev)));
    for (size_t i = 0; i < N_FAMILIES; i++)
        printf("family %ld %d\n", families[i], a.family[i]);
    if (a.has_threadgroup)
        printf("maxThreadgroupMemoryLength %lu\n", a.threadgroup);
    else
        printf("maxThreadgroupMemoryLength absent\n");
    printf("recommendedMaxWorkingSetSize %lu\n", a.working_set);
    SEL at_init = sel_registerName("apple7AtInit");
    if (class_getInstanceMethod(object_getClass(dev), at_init))
        printf("apple7AtInit %d\n", ((BOOL (*)(id, SEL))(void (*)(void))objc_msg_lookup(dev, at_init))(dev, at_init) ? 1 : 0);
    const char *pre = getenv("LD_PRELOAD");
    printf("env LD_PRELOAD=%s\n", pre ? pre : "(unset)");
    if (role)
        printf("role %s%s%s\n", role, model ? " " : "", model ? model : "");
    fflush(stdout);
    if (each) {
        /* children one after another, each with this process's environment */
        int worst = 0;
        while (*each) {
            char **next = each;
            while (*next && strcmp(*next, "--and") != 0)
                next++;
            int last = *next == NULL;
            *next = NULL;
            pid_t pid = fork();
            if (pid == 0) {
                execv(each[0], each);
                _exit(127);
            }
            int status;
            waitpid(pid, &status, 0);
            int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
            worst = rc ? rc : worst;
            if (last)
                break;
            each = next + 1;
        }
        return worst;
    }
    if (spawn) {
        pid_t pid = fork();
        if (pid == 0) {
            execv(spawn[0], spawn);
            _exit(127);
        }
        int status;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    if (child) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/proc/self/exe", argv[0], (char *)NULL);
            _exit(127);
        }
        int status;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    return 0;
}
