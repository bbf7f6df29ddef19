/* vzcaps host: the ForceUnrestrictedDeviceFeatureLevel preference on a macOS host
 * (METAL-FACTS: "Host side"). Never: runs in a guest or on Linux, where it has no effect. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char domain[] = "com.apple.gpusw.ParavirtualizedGraphics";
static const char key[] = "ForceUnrestrictedDeviceFeatureLevel";

static int defaults(char *const av[])
{
    return spawn_wait("/usr/bin/defaults", av);
}

int cmd_host(int argc, char **argv)
{
    if (argc != 2)
        return usage_error("host", "expected one of status, enable, disable");
    const char *verb = argv[1];
    if (strcmp(verb, "status") && strcmp(verb, "enable") && strcmp(verb, "disable"))
        return usage_error("host", "unknown action \"%s\" (status, enable or disable)", verb);
    struct machine m;
    machine_facts(&m);
    if (!platform_is_macos) {
        eprintf("vzcaps host: this is %s; the %s preference exists only on a macOS host that runs the VMs", m.os, key);
        return EXIT_NEEDS_MACOS;
    }
    if (m.guest == 1) {
        eprintf("vzcaps host: this is a guest (kern.hv_vmm_present=1); run it on the host that runs the VMs, where the preference takes effect");
        return EXIT_NEEDS_MACOS;
    }
    int rc;
    if (strcmp(verb, "status") == 0) {
        char *av[] = {"defaults", "read", (char *)domain, (char *)key, NULL};
        printf("%s %s: ", domain, key);
        fflush(stdout);
        rc = defaults(av);
        if (rc != 0)
            printf("not set\n");
        return 0;
    }
    if (strcmp(verb, "enable") == 0) {
        char *av[] = {"defaults", "write", (char *)domain, (char *)key, "-bool", "true", NULL};
        rc = defaults(av);
    } else {
        char *av[] = {"defaults", "delete", (char *)domain, (char *)key, NULL};
        rc = defaults(av);
        if (rc != 0)
            rc = 0; /* already absent */
    }
    if (rc != 0) {
        eprintf("vzcaps host: defaults failed (exit %d)", rc);
        return 1;
    }
    printf("%s %s %s. Restart running VMs for it to take effect.\n", domain, key, strcmp(verb, "enable") == 0 ? "set to true" : "deleted");
    printf("Note: Apple does not document this preference; one public measurement found it changes no answer a guest reports.\n");
    return 0;
}
