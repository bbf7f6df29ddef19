/* macOS: a file's com.apple.quarantine attribute (getxattr, the link itself not followed).
 * Built and audited, not run here. Never: changes the attribute. */
#include "launchfacts.h"

#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

int quarantine_value(const char *path, char *buf, size_t cap, size_t *n, char *why, size_t len)
{
    *n = 0;
    ssize_t r = getxattr(path, "com.apple.quarantine", buf, cap, 0, XATTR_NOFOLLOW);
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
