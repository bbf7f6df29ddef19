/* vzcaps run: one workload with the library injected and the configuration checked first.
 * Never: starts a workload whose configuration the library would refuse; keeps running
 * after the exec (exit status and signals are the workload's own). */
#define _XOPEN_SOURCE 700
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int run_target_check(const char *cmd, const char *library); /* inspect.c */

int cmd_run(int argc, char **argv)
{
    struct cfg_opts o = {0};
    bool dry = false, verify = false;
    const char *library_opt = NULL;
    int i = 1;
    for (; i < argc; i++) {
        int t;
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if ((t = opt_take(argc, argv, &i, "--profile", &o.profile)) ||
            (t = opt_take(argc, argv, &i, "--family", &o.family)) ||
            (t = opt_take(argc, argv, &i, "--library", &library_opt))) {
            if (t < 0)
                return usage_error("run", "%s needs a value", argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--inherit") == 0)
            o.inherit = true;
        else if (strcmp(argv[i], "--dry-run") == 0)
            dry = true;
        else if (strcmp(argv[i], "--verify") == 0)
            verify = true;
        else if (argv[i][0] == '-')
            return usage_error("run", "unknown option %s", argv[i]);
        else
            break;
    }
    if (i >= argc)
        return usage_error("run", "no command given");
    int bad = check_family_opt("run", o.family);
    if (bad)
        return bad;
    char **cmd = argv + i;
    o.exe = vzcaps_basename(cmd[0]);

    char library[1100], tried[2400];
    if (library_opt) {
        snprintf(library, sizeof library, "%s", library_opt);
        snprintf(tried, sizeof tried, "%s (--library)", library_opt);
    }
    if (library_opt ? access(library, R_OK) != 0 : find_library(library, sizeof library, tried, sizeof tried) != 0) {
        fprintf(stderr, "vzcaps run: %s not found (looked at %s); reinstall vzcaps or keep the library next to the command\n",
                library_file, tried);
        return EXIT_REFUSED;
    }
    static struct vzcaps_config_result r;
    cli_configure_run(&o, &r);
    if (r.profile.state == VZCAPS_STOCK_REFUSED) {
        fprintf(stderr, "vzcaps run: not starting %s: %s\n", o.exe, r.profile.notes[0]);
        if (!r.profile.invalid)
            fprintf(stderr, "vzcaps run: pass --family off to run it stock on purpose\n");
        return EXIT_REFUSED;
    }
    int rc = run_target_check(cmd[0], library);
    if (rc != 0)
        return rc;
    if (verify && r.profile.state == VZCAPS_ENABLED && (rc = verify_gate(&o)) != 0)
        return rc;

    char **env = cli_child_env(&o, library);
    if (dry) {
        for (char **e = env; *e; e++) {
            const char *eq = strchr(*e, '=');
            size_t nl = (size_t)(eq - *e);
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)nl, *e);
            const char *now = getenv(name);
            if (now && strcmp(now, eq + 1) == 0)
                continue; /* unchanged */
            printf("%s=", name);
            shell_quote(stdout, eq + 1);
            putchar('\n');
        }
        printf("exec");
        for (char **a = cmd; *a; a++) {
            putchar(' ');
            shell_quote(stdout, *a);
        }
        putchar('\n');
        return 0;
    }
    fflush(NULL);
    environ = env;
    execvp(cmd[0], cmd);
    int err = errno;
    fprintf(stderr, "vzcaps run: cannot run %s: %s\n", cmd[0], strerror(err));
    return err == ENOENT ? 127 : 126;
}
