/* Options and help shared by the subcommands: the overview, usage errors, option values, and
 * the configuration view that check, doctor and inspect share.
 * Owns: how a command line's values are taken. Never: decides what an option means for
 * the library (that is the core's configuration step). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "commands.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void print_overview(FILE *out)
{
    fprintf(out, "vzcaps %s: Metal capability answers for macOS guests, from the host's real chip\n\n"
                 "usage: vzcaps COMMAND [OPTIONS]\n\n", VZCAPS_VERSION);
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        fputs("  ", out);
        cli_print_synopsis(out, c);
    }
    fprintf(out, "\n  vzcaps help [COMMAND]   vzcaps --version\n\n"
                 "Variables read by the library:");
    for (const struct env_spec *e = cli_environment; e->name; e++)
        fprintf(out, "%s %s", e == cli_environment ? "" : ",", e->name);
    fprintf(out, ".\nSee man vzcaps.\n");
}

void print_help(const char *cmd, FILE *out)
{
    const struct cmd_spec *c = cli_find_command(cmd);
    if (!c)
        print_overview(out);
    else
        cli_print_help(out, c);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vxformat(fmt, ap);
    va_end(ap);
    eprintf("vzcaps %s: %s", cmd, msg ? msg : "out of memory");
    free(msg);
    const struct cmd_spec *c = cli_find_command(cmd);
    fputs("usage: ", stderr);
    if (c)
        cli_print_synopsis(stderr, c);
    else
        fputs("vzcaps COMMAND [OPTIONS]\n", stderr);
    return EXIT_USAGE;
}

int opt_take(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

int check_family_opt(const char *cmd, const char *value)
{
    struct vzcaps_settings s;
    char why[VZCAPS_NOTE_LEN];
    memset(&s, 0, sizeof s);
    if (value && vzcaps_settings_set(&s, VZCAPS_KEY_APPLE_FAMILY_MAX, value, "--family", why, sizeof why) != 0)
        return usage_error(cmd, "--family: %s", why);
    return 0;
}

int cfg_opt_take(const char *cmd, int argc, char **argv, int *i, struct cfg_opts *o, bool with_exe)
{
    int t;
    if ((t = opt_take(argc, argv, i, "--config", &o->config)) || (t = opt_take(argc, argv, i, "--profile", &o->profile)) ||
        (with_exe && (t = opt_take(argc, argv, i, "--exe", &o->exe))) || (t = opt_take(argc, argv, i, "--chip", &o->chip)) ||
        (t = opt_take(argc, argv, i, "--family", &o->family))) {
        if (t < 0)
            return usage_error(cmd, "%s needs a value", argv[*i]);
        return 1;
    }
    if (strcmp(argv[*i], "--bare") == 0) {
        o->bare = true;
        return 1;
    }
    return 0;
}

int mkdir_p(const char *path)
{
    char *buf = xformat("%s", path);
    int rc = 0;
    for (char *p = buf + 1; *p && !rc; p++)
        if (*p == '/') {
            *p = '\0';
            rc = mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
            *p = '/';
        }
    if (!rc)
        rc = mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
    int saved = errno;
    free(buf);
    errno = saved;
    return rc;
}

int view_args(const char *cmd, int argc, char **argv, struct cfg_opts *o, bool *json, const char *extra,
              const char **extra_value)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) { /* nothing follows -- (cli_validate_args) */
        int t = cfg_opt_take(cmd, argc, argv, &i, o, true);
        if (t == EXIT_USAGE)
            return t;
        if (!t && extra && (t = opt_take(argc, argv, &i, extra, extra_value)) < 0)
            return usage_error(cmd, "%s needs a value", argv[i]);
        if (t)
            continue;
        if (strcmp(argv[i], "--json") != 0)
            return usage_error(cmd, "unknown argument %s", argv[i]);
        *json = true;
    }
    return check_family_opt(cmd, o->family);
}

const char *cfg_view_text(const struct cfg_opts *o)
{
    if (o->bare)
        return "what the library does with this environment alone (--bare)";
    if (o->family_implied)
        return "what vzcaps run would do: --family auto implied, since nothing else configures vzcaps here";
    return "what vzcaps run would do (the same as the library with these settings)";
}

