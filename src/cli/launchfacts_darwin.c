/* macOS: a file's com.apple.quarantine attribute (getxattr, the link itself not followed).
 * Built and audited, not run here. Never: changes the attribute. */
#include "launchfacts.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* <sys/xattr.h> (not in every SDK the cross build has): getxattr(2) as macOS declares it */
#define VZ_XATTR_NOFOLLOW 0x0001
extern ssize_t getxattr(const char *path, const char *name, void *value, size_t size, uint32_t position, int options);
#ifndef ENOATTR
#define ENOATTR 93 /* <sys/errno.h> on macOS */
#endif

int quarantine_value(const char *path, char *buf, size_t cap, size_t *n, char *why, size_t len)
{
    *n = 0;
    ssize_t r = getxattr(path, "com.apple.quarantine", buf, cap, 0, VZ_XATTR_NOFOLLOW);
    if (r >= 0) {
        *n = (size_t)r;
        return 1;
    }
    if (errno == ENOATTR || errno == ENOTSUP)
        return 0;
    if (errno == ERANGE) { /* longer than any mark macOS writes: still a mark */
        *n = 0;
        return 1;
    }
    snprintf(why, len, "%s", strerror(errno));
    return -1;
}
