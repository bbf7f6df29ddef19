/* One process, one device, three client libraries that each ask supportsFamily: (and the
 * limits) from their own code: prints what each got, so tests can check the caller scope.
 * callers [--threads N] [--rounds R]   threads: all ask at once, R rounds each; mismatches
 * against the single-threaded answers are counted. Test rig only. */
#include <objc/Object.h>
#include <objc/runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

id MTLCreateSystemDefaultDevice(void);
typedef void (*ask_fn)(id, long, int *, unsigned long *, unsigned long *);
void ask_ggml(id, long, int *, unsigned long *, unsigned long *);
void ask_torch(id, long, int *, unsigned long *, unsigned long *);
void ask_other(id, long, int *, unsigned long *, unsigned long *);

static const struct {
    const char *image;
    ask_fn ask;
} clients[] = {{"libggml-metal.so", ask_ggml}, {"libtorch_cpu.so", ask_torch}, {"libother-client.so", ask_other}};
#define N_CLIENTS 3

struct answer {
    int family;
    unsigned long tg, ws;
};
static struct answer want[N_CLIENTS];

/* field by field: the struct's padding after `family` is never written, so its bytes differ */
static int same_answer(const struct answer *a, const struct answer *b)
{
    return a->family == b->family && a->tg == b->tg && a->ws == b->ws;
}
static int rounds = 200, mismatches;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        id dev = MTLCreateSystemDefaultDevice();
        for (int c = 0; c < N_CLIENTS; c++) {
            struct answer a;
            clients[c].ask(dev, 1007, &a.family, &a.tg, &a.ws);
            bad += !same_answer(&a, &want[c]);
        }
    }
    pthread_mutex_lock(&count_lock);
    mismatches += bad;
    pthread_mutex_unlock(&count_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: callers [--threads N] [--rounds R]\n");
            return 2;
        }
    }
    id dev = MTLCreateSystemDefaultDevice();
    for (int c = 0; c < N_CLIENTS; c++) {
        clients[c].ask(dev, 1007, &want[c].family, &want[c].tg, &want[c].ws);
        /* asked twice: a cached call site must give the same answer */
        struct answer again;
        clients[c].ask(dev, 1007, &again.family, &again.tg, &again.ws);
        printf("caller %s family1007 %d tg %lu ws %lu repeat %s\n", clients[c].image, want[c].family, want[c].tg, want[c].ws,
               same_answer(&again, &want[c]) ? "same" : "DIFFERENT");
    }
    if (threads > 0) {
        pthread_t t[64];
        if (threads > 64) {
            fprintf(stderr, "callers: --threads %d: at most 64\n", threads);
            return 2;
        }
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        for (int i = 0; i < threads; i++)
            pthread_create(&t[i], NULL, worker, NULL);
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        printf("threads %d mismatches %d\n", threads, mismatches);
    }
    return 0;
}
