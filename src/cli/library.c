/* Finding the library the command injects: next to the command, then in ../lib.
 * Never: searches PATH or the current directory (an attacker could plant a library there). */
#include "cli.h"

#include <string.h>
#include <unistd.h>

int find_library(char *buf, size_t len, char *tried, size_t tried_len)
{
    char self[1024];
    self_path(self, sizeof self);
    tried[0] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    const char *rel[] = {"", "/../lib"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(buf, len, "%s%s/%s", self, rel[i], library_file);
        vzcaps_appendf(tried, tried_len, "%s%s", i ? ", " : "", buf);
        if (access(buf, R_OK) == 0)
            return 0;
    }
    return -1;
}
