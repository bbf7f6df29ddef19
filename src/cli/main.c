/* The vzcaps command's entry point: guards the standard descriptors, dispatches to the command
 * the table names, and checks standard output at exit.
 * Owns: dispatch only. Never: implements a command or a helper (see options.c, launch.c). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "commands.h"
#include "../common/child.h"
#include "../common/safewrite.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

__attribute__((used)) static const char *const self_marker = VZCAPS_SELF_MARKER " command " VZCAPS_VERSION;

#ifndef VZCAPS_NO_MAIN
static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        print_help("", stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("vzcaps %s\n", VZCAPS_VERSION);
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        cmd = argv[1] = "help"; /* the help command in the table */
    if (strcmp(cmd, "__man") == 0) /* hidden: the man page, generated from the command table */
        return cli_print_man(stdout), 0;
    if (strcmp(cmd, "__completions") == 0)
        return argc > 2 && cli_print_completions(stdout, argv[2]) == 0 ? 0 : usage_error("help", "__completions bash|zsh|fish");
    if (strcmp(cmd, "__profiles") == 0) /* hidden: the config file's sections, for the completions */
        return cli_print_profiles(stdout, (const char *const *)environ,
                                  argc > 3 && strcmp(argv[2], "--config") == 0 ? argv[3] : NULL);
    if (strcmp(cmd, "__probe-child") == 0) /* hidden: the children of probe and verify */
        return child_probe();
    if (strcmp(cmd, "__device-class") == 0) /* hidden: the device's class chain, for doctor --bundle */
        return child_device_class();
    if (strcmp(cmd, "__verify-child") == 0)
        return child_verify(argc - 1, argv + 1);
    if (strcmp(cmd, "__validate") == 0) { /* hidden: check a command line against the table only (the docs' test) */
        const struct cmd_spec *v = argc > 2 ? cli_find_command(argv[2]) : NULL;
        if (!v)
            return unknown_command(NULL, argc > 2 ? argv[2] : "");
        return cli_validate_args(v, argc - 2, argv + 2);
    }
    const struct cmd_spec *c = cli_find_command(cmd);
    if (!c)
        return unknown_command(NULL, cmd);
    for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_help(cmd, stdout);
            return 0;
        }
    int bad = cli_validate_args(c, argc - 1, argv + 1); /* the table decides what is an option */
    if (bad)
        return bad;
    return c->fn(argc - 1, argv + 1);
}

/* Started with an empty argv[0] (or none): the path exec was given says what started, a shim
 * (its own name, so the program it stands for starts, with argv[1...] as its arguments) or
 * vzcaps itself. */
static int started_unnamed(int argc, char **argv)
{
    static char path[4096];
    start_path(path, sizeof path);
    if (!shim_is_started_as(path))
        return dispatch(argc, argv);
    char **av = calloc((size_t)(argc > 1 ? argc : 1) + 1, sizeof *av);
    if (!av)
        return eprintf("vzcaps: %s: out of memory", path), 126;
    av[0] = path;
    for (int k = 1; k < argc; k++)
        av[k] = argv[k];
    int rc = shim_main(argc > 1 ? argc : 1, av);
    free(av);
    return rc;
}

int main(int argc, char **argv)
{
    vzcaps_guard_std_fds();
    vzcaps_stop_install(); /* a stop signal removes every temporary and stops a child's group */
    /* started as NAME through a shim directory's link: the real NAME, through vzcaps run */
    int rc = argc > 0 && *argv[0] ? (shim_is_started_as(argv[0]) ? shim_main(argc, argv) : dispatch(argc, argv))
                                  : started_unnamed(argc, argv);
    /* standard output is a file too: a failed write of it fails the command */
    if (vzcaps_close_stdout() != 0 && rc == 0)
        rc = 1;
    return rc;
}
#endif
