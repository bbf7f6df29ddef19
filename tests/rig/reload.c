/* Loads a Metal client library and asks from it, unloads it (dlclose) and loads another, as
 * ld.so does in the memory the first one left, and asks again: the caller scope's images loaded
 * and gone (issue 44). The device is made after the first library is loaded.
 * reload FIRST SECOND   each a client library's path (build/clients/lib*.so); prints, for each,
 *                       "NAME base ADDRESS family1007 N ws WS". Test rig only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <objc/runtime.h>
#include <stdio.h>
#include <string.h>

id MTLCreateSystemDefaultDevice(void);
typedef void (*ask_fn)(id, long, int *, unsigned long *, unsigned long *);

static void *load_and_ask(const char *path, id *dev)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ask_fn ask = NULL;
    static const char *const names[] = {"ask_ggml", "ask_torch", "ask_other"};
    for (size_t i = 0; h && !ask && i < sizeof names / sizeof names[0]; i++)
        ask = (ask_fn)(void (*)(void))dlsym(h, names[i]);
    Dl_info info;
    if (!ask || !dladdr((void *)ask, &info)) {
        fprintf(stderr, "reload: %s: %s\n", path, h ? "no ask_* function" : dlerror());
        return NULL;
    }
    if (!*dev)
        *dev = MTLCreateSystemDefaultDevice();
    int family;
    unsigned long tg, ws;
    ask(*dev, 1007, &family, &tg, &ws);
    printf("%s base %p family1007 %d ws %lu\n", strrchr(path, '/') ? strrchr(path, '/') + 1 : path, info.dli_fbase, family, ws);
    return h;
}

int main(int argc, char **argv)
{
    id dev = nil;
    if (argc != 3) {
        fprintf(stderr, "usage: reload FIRST SECOND\n");
        return 2;
    }
    void *first = load_and_ask(argv[1], &dev);
    if (!first || dlclose(first) != 0)
        return 1;
    return load_and_ask(argv[2], &dev) ? 0 : 1;
}
