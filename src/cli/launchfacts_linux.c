/* Linux: files carry no quarantine mark (the attribute is macOS's). */
#include "launchfacts.h"

int quarantine_value(const char *path, char *buf, size_t cap, size_t *n, char *why, size_t len)
{
    (void)path, (void)buf, (void)cap, (void)why, (void)len;
    *n = 0;
    return 0;
}
