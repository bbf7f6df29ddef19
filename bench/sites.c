/* Benchmark helper: one small image of call sites (built four times, build/bench/libsitesN.so),
 * for make bench's rows of calls alternating among many call sites in distinct images. Each
 * site is a function of its own that looks the method up and calls it, as a client does.
 * Built with -fno-ipa-icf (identical functions stay apart) and -fno-optimize-sibling-calls
 * (each call returns to its own site). Test rig only. */
#include <objc/message.h>
#include <objc/runtime.h>

typedef BOOL (*family_fn)(id, SEL, long);
typedef unsigned long (*ulong_fn)(id, SEL);
typedef unsigned long (*site_fn)(id, SEL, long);

#define SITE(n)                                                                                                    \
    static unsigned long family_##n(id dev, SEL sel, long f)                                                     \
    {                                                                                                              \
        return ((family_fn)(void (*)(void))objc_msg_lookup(dev, sel))(dev, sel, f);                                \
    }                                                                                                              \
    static unsigned long limit_##n(id dev, SEL sel, long f)                                                      \
    {                                                                                                              \
        (void)f;                                                                                                   \
        return ((ulong_fn)(void (*)(void))objc_msg_lookup(dev, sel))(dev, sel);                                    \
    }
#define FAMILY(n) family_##n,
#define LIMIT(n) limit_##n,
/* 2048 sites: X over the names 0000..3777 (octal digits, pasted) */
#define R8(X, p) X(p##0) X(p##1) X(p##2) X(p##3) X(p##4) X(p##5) X(p##6) X(p##7)
#define R64(X, p) R8(X, p##0) R8(X, p##1) R8(X, p##2) R8(X, p##3) R8(X, p##4) R8(X, p##5) R8(X, p##6) R8(X, p##7)
#define R512(X, p) R64(X, p##0) R64(X, p##1) R64(X, p##2) R64(X, p##3) R64(X, p##4) R64(X, p##5) R64(X, p##6) R64(X, p##7)
#define R2048(X) R512(X, 0) R512(X, 1) R512(X, 2) R512(X, 3)

R2048(SITE)
const unsigned sites_count = 2048;
const site_fn sites_family[] = {R2048(FAMILY)};
const site_fn sites_limit[] = {R2048(LIMIT)};
