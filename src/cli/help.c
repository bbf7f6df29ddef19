/* The command table read: a command line checked against it before the command runs (unknown
 * options with "did you mean", missing values), `vzcaps help [X]`, the man page (`vzcaps __man`),
 * usage errors and what to suggest for an unknown command, all from the table in commands.c (the
 * completion scripts are options.c's).
 * Never: holds an option of its own (the table is commands.c's), or calls options.c. */
#include "commands.h"

#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- a command line against the table ---- */

static const struct opt_spec *find_opt(const struct cmd_spec *c, const char *arg, size_t len)
{
    for (const struct opt_spec *o = c->opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, arg, len) == 0)
            return o;
    return NULL;
}

/* An option the table knows, taken where its binding says (none: only checked); 0, or the usage
 * error's status. vals: its values, one per word of its ARG. */
static int bind(const struct cmd_spec *c, const struct opt_spec *o, const struct opt_bind *b, char *const *vals, int need)
{
    while (b && b->name && strcmp(b->name, o->name) != 0)
        b++;
    if (b && !b->name)
        return usage_error(c->name, "%s is in the table but no parser takes it", o->name);
    if (b && b->list)
        b->list[(*b->n)++] = vals[0];
    else if (b && b->flag)
        *b->flag = true;
    else
        for (int k = 0; b && k < (need ? need : 1); k++)
            b->value[k] = need ? vals[k] : o->name; /* a flag bound to a value: its own name, the last one given */
    return 0;
}

/* The unknown option a (len characters of it), with "did you mean". */
static int unknown_option(const struct cmd_spec *c, const char *a, size_t len)
{
    size_t n = 0, cap = 0;
    const char **names = NULL;
    for (const struct opt_spec *x = c->opts; x->name; x++) {
        names = xgrow(names, &cap, n, sizeof *names);
        names[n++] = x->name;
    }
    char *name = xformat("%.*s", (int)len, a);
    const char *hint = vzcaps_did_you_mean(name, names, n);
    free(names);
    int rc = hint ? usage_error(c->name, "unknown option %s (did you mean %s?)", name, hint)
                  : usage_error(c->name, "unknown option %s", name);
    free(name);
    return rc;
}

/* What follows -- in argv[i+1..]: checked (no empty word where it is ours) and kept. */
static int after_dashdash(const struct cmd_spec *c, int argc, char **argv, int i, char **keep, int *n)
{
    if (c->args_mode == ARGS_NONE && i + 1 < argc) /* options only: nothing may follow */
        return usage_error(c->name, "unexpected argument %s", argv[i + 1]);
    if (c->args_mode == ARGS_REST && strstr(c->args, "-- CMD") && i + 1 == argc)
        return usage_error(c->name, "no command after --");
    /* what follows is not options: files named like them (all ours), or a command (its name
     * ours, its arguments its own), or arguments passed on (not ours) */
    int ours_to = c->args_mode == ARGS_POSITIONAL ? argc : c->args_mode == ARGS_COMMAND && i + 1 < argc ? i + 2 : i + 1;
    for (int k = i + 1; k < argc; k++) {
        if (k < ours_to && !argv[k][0])
            return usage_error(c->name, "an empty argument names nothing");
        if (keep)
            keep[++*n] = argv[k];
    }
    return 0;
}

/* The walk of argv[1..] against c's table; with keep, what is not an option moves to keep[1..*n]. */
static int walk(const struct cmd_spec *c, int argc, char **argv, const struct opt_bind *binds, char **keep, int *n)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return after_dashdash(c, argc, argv, i, keep, n);
        if (!a[0])
            return usage_error(c->name, "an empty argument names nothing");
        if (a[0] != '-' || !a[1]) {
            if (c->args_mode == ARGS_COMMAND) /* the command starts here */
                return after_dashdash(c, argc, argv, i - 1, keep, n);
            if (c->args_mode == ARGS_NONE || c->args_mode == ARGS_REST)
                return usage_error(c->name, "unexpected argument %s", a);
            if (keep)
                keep[++*n] = argv[i];
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
        const struct opt_spec *o = find_opt(c, a, len);
        if (!o)
            return unknown_option(c, a, len);
        int need = 0; /* values: one per word of its ARG ("STOCK.json UNLOCKED.json": two) */
        for (const char *p = o->arg; p && *p; need++)
            p += strcspn(p, " "), p += *p == ' ';
        char *one[1] = {(char *)(eq ? eq + 1 : "")};
        char *const *vals = argv + i + 1;
        if (!need && eq && a[1] == '-')
            return usage_error(c->name, "%s takes no value", o->name);
        if (need && eq && a[1] == '-' && need == 1) {
            if (!eq[1])
                return usage_error(c->name, "%s: empty value", o->name);
            vals = one;
        } else if (need) {
            if (i + need >= argc)
                return usage_error(c->name, "%s needs %s", o->name, o->arg);
            for (int k = 1; k <= need; k++)
                if (!argv[i + k][0])
                    return usage_error(c->name, "%s: empty value", o->name);
            i += need;
        }
        if (bind(c, o, binds, vals, need) != 0)
            return EXIT_USAGE;
    }
    return 0;
}

int cli_validate_args(const struct cmd_spec *c, int argc, char **argv)
{
    int n = 0;
    return walk(c, argc, argv, NULL, NULL, &n);
}

int cli_parse(const char *cmd, int *argc, char **argv, const struct opt_bind *binds)
{
    int n = 0;
    int rc = walk(cli_find_command(cmd), *argc, argv, binds, argv, &n);
    argv[n + 1] = NULL;
    *argc = n + 1;
    return rc;
}

/* ---- what to suggest for an unknown command ---- */

/* found (heap, or NULL), ", or " and a, b, c: a new heap string; found is freed. */
static char *or_append(char *found, const char *a, const char *b, const char *c)
{
    char *s = xformat("%s%s%s%s%s", found ? found : "", found ? ", or " : "", a, b, c);
    free(found);
    return s;
}

/* The commands that take word as an alias, or as an operand ("host status"); NULL: none. */
static char *commands_for_job(const char *word)
{
    char *found = NULL;
    for (int pass = 0; pass < 2; pass++) /* aliases first, then operands */
        for (const struct cmd_spec *c = cli_commands; c->name; c++) {
            bool hit = false;
            const char *list = pass == 0 ? (c->aliases ? c->aliases : "")
                             : c->args_mode == ARGS_POSITIONAL && strchr(c->args, '|') ? c->args : "";
            for (const char *p = list; *p && !hit;) {
                size_t n = strcspn(p, pass == 0 ? " " : "|");
                hit = n == strlen(word) && strncmp(p, word, n) == 0;
                p += n + (p[n] != '\0');
            }
            if (hit)
                found = or_append(found, c->name, pass ? " " : "", pass ? word : "");
        }
    return found;
}

/* Words people type for a job that an option of a command does ("list"), with the command lines
 * that do it; a line whose command the table lacks is left out. */
static const struct {
    const char *word, *command, *line;
} jobs[] = {
    {"list", "launchd", "launchd --list"},
    {"list", "shims", "shims --dir DIR --list"},
};

static char *job_lines(const char *word)
{
    char *found = NULL;
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
        if (strcmp(jobs[i].word, word) == 0 && cli_find_command(jobs[i].command))
            found = or_append(found, jobs[i].line, "", "");
    return found;
}

/* The alias or operand word of 5+ letters nearest a typo ("stauts"), or NULL; kept (static). */
static const char *alias_suggestion(const char *word)
{
    static char *kept;
    size_t nw = 0, cap = 0;
    char **words = NULL;
    for (const struct cmd_spec *c = cli_commands; c->name; c++)
        for (int pass = 0; pass < 2; pass++) {
            const char *list = pass == 0 ? (c->aliases ? c->aliases : "")
                             : c->args_mode == ARGS_POSITIONAL && strchr(c->args, '|') ? c->args : "";
            for (const char *p = list; *p;) {
                size_t len = strcspn(p, pass == 0 ? " " : "|");
                if (len >= 5) {
                    words = xgrow(words, &cap, nw, sizeof *words);
                    words[nw++] = xformat("%.*s", (int)len, p);
                }
                p += len + (p[len] != '\0');
            }
        }
    const char *near = vzcaps_did_you_mean(word, (const char *const *)words, nw);
    free(kept);
    kept = near ? xformat("%s", near) : NULL;
    while (nw)
        free(words[--nw]);
    free(words);
    return kept;
}

const char *cli_command_suggestion(const char *word)
{
    static char *found; /* the last answer, kept until the next call */
    free(found), found = NULL;
    if (word[0] == '-') { /* an option before any command: only vzcaps --version and --help are */
        static const char *const top[] = {"--version", "--help"};
        return vzcaps_did_you_mean(word, top, 2);
    }
    if ((found = job_lines(word)) || (found = commands_for_job(word)))
        return found;
    const char *names[CLI_MAX_COMMANDS]; /* every command (the table's size is asserted against it) */
    size_t n = 0;
    for (const struct cmd_spec *c = cli_commands; c->name; c++)
        names[n++] = c->name;
    const char *name = vzcaps_did_you_mean(word, names, n);
    if (name)
        return name;
    const char *near = strlen(word) >= 4 ? alias_suggestion(word) : NULL;
    return near ? (found = commands_for_job(near)) : NULL;
}

/* ---- help, man page, completions ---- */

#define WIDTH 100

void cli_wrap(FILE *out, const char *text, size_t start, size_t indent, size_t width)
{
    size_t col = start;
    bool first = true;
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\n')
            p++;
        size_t n = strcspn(p, " \n");
        if (!n)
            break;
        if (!first && col + 1 + n > width) {
            fprintf(out, "\n%*s", (int)indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, n, out);
        col += n;
        first = false;
        p += n;
    }
}

static const char *const group_titles[GROUP_COUNT] = {
    [GROUP_USE] = "use it", [GROUP_CHECK] = "check it", [GROUP_PROVE] = "prove it",
    [GROUP_MEASURE] = "measure it", [GROUP_SETUP] = "set up",
};

static void write_roff(FILE *out, const char *s, size_t n);

/* One synopsis element ("[--profile PROFILE]", "--label LABEL"), on the heap. */
static char *synopsis_item(const struct opt_spec *o)
{
    return xformat("%s%s%s%s%s", o->def == REQUIRED ? "" : "[", o->name, o->arg ? " " : "", o->arg ? o->arg : "",
                   o->def == REQUIRED ? "" : "]");
}

void cli_print_synopsis(FILE *out, const struct cmd_spec *c, size_t prefix_len)
{
    fprintf(out, "vzcaps %s", c->name);
    size_t indent = prefix_len + strlen("vzcaps ") + strlen(c->name) + 1, col = indent - 1;
    for (const struct opt_spec *o = c->opts;; o++) {
        char *item;
        if (o->name)
            item = synopsis_item(o);
        else if (c->args[0])
            item = xformat("%s", c->args);
        else
            break;
        size_t n = strlen(item);
        if (col + 1 + n > WIDTH && col > indent) {
            fprintf(out, "\n%*s", (int)indent, "");
            col = indent;
        } else {
            fputc(' ', out);
            col++;
        }
        fputs(item, out);
        free(item);
        col += n;
        if (!o->name)
            break;
    }
    fputc('\n', out);
}

void cli_print_overview(FILE *out)
{
    fprintf(out, "vzcaps %s: Metal capability answers for macOS guests, from the host's real chip\n\n"
                 "usage: vzcaps COMMAND [OPTIONS] [ARGS]\n", VZCAPS_VERSION);
    size_t w = 0;
    for (const struct cmd_spec *c = cli_commands; c->name; c++)
        w = strlen(c->name) > w ? strlen(c->name) : w;
    for (int g = GROUP_USE; g < GROUP_COUNT; g++) {
        fprintf(out, "\n%s\n", group_titles[g]);
        for (const struct cmd_spec *c = cli_commands; c->name; c++)
            if (c->group == (enum cmd_group)g) {
                fprintf(out, "   %-*s  ", (int)w, c->name);
                cli_wrap(out, c->summary, 5 + w, 5 + w, WIDTH);
                fputc('\n', out);
            }
    }
    fputs("\n`vzcaps help COMMAND` (or `vzcaps COMMAND --help`) shows a command's options, exit status and an\n"
          "example; `vzcaps --version` the version; `man vzcaps` everything on one page.\n\n", out);
    size_t col = fprintf(out, "The library reads:");
    for (const struct env_spec *e = cli_environment; e->name; e++) {
        size_t n = strlen(e->name) + 1;
        if (col + 1 + n > WIDTH)
            col = fprintf(out, "\n ");
        col += fprintf(out, " %s%s", e->name, e[1].name ? "," : ".");
    }
    fputs("\n", out);
}

void cli_print_help(FILE *out, const struct cmd_spec *c)
{
    fprintf(out, "usage: ");
    cli_print_synopsis(out, c, strlen("usage: "));
    fprintf(out, "\n%s: ", c->name);
    cli_wrap(out, c->summary, strlen(c->name) + 2, 0, WIDTH);
    fputs("\n\n", out);
    cli_wrap(out, c->about, 0, 0, WIDTH);
    fputc('\n', out);
    if (c->opts[0].name) {
        fprintf(out, "\noptions:\n");
        for (const struct opt_spec *o = c->opts; o->name; o++) {
            char *head = xformat("%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
            bool has_def = o->def && o->def != REQUIRED;
            char *text = xformat("%s%s%s%s%s", o->help, o->def == REQUIRED ? " (required)" : "", has_def ? " (default: " : "",
                                 has_def ? o->def : "", has_def ? ")" : "");
            if (strlen(head) > 23) /* a long head gets a line of its own */
                fprintf(out, "  %s\n%*s", head, 27, "");
            else
                fprintf(out, "  %-24s ", head);
            cli_wrap(out, text, 27, 27, WIDTH);
            fputc('\n', out);
            free(text);
            free(head);
        }
        fprintf(out, "  %-24s %s\n", "--", "ends the options");
    }
    fputs("\nexit status: ", out);
    cli_wrap(out, c->exits, 13, 2, WIDTH);
    fputs("\n\nexample: ", out);
    fputs(c->example, out);
    fputc('\n', out);
}

static void roff_text(FILE *out, const char *s)
{
    write_roff(out, s, strlen(s));
}

static void write_roff(FILE *out, const char *s, size_t n)
{
    bool bol = true;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (bol && (ch == '.' || ch == '\''))
            fputs("\\&", out);
        if (ch == '\\')
            fputs("\\e", out);
        else if (ch == '-')
            fputs("\\-", out);
        else
            fputc(ch, out);
        bol = ch == '\n';
    }
}

/* The man page's OPTIONS entry of one command: what it does, then each option. */
static void man_options(FILE *out, const struct cmd_spec *c)
{
    fprintf(out, ".SS vzcaps %s\n", c->name);
    roff_text(out, c->about);
    fputc('\n', out);
    for (const struct opt_spec *o = c->opts; o->name; o++) {
        fputs(".TP\n.B ", out);
        roff_text(out, o->name);
        if (o->arg) {
            fputs(" ", out);
            roff_text(out, o->arg);
        }
        fputc('\n', out);
        roff_text(out, o->help);
        if (o->def == REQUIRED)
            fputs(" (required)", out);
        if (o->def && o->def != REQUIRED) {
            fputs(" (default: ", out);
            roff_text(out, o->def);
            fputs(")", out);
        }
        fputc('\n', out);
    }
}

void cli_print_man(FILE *out)
{
    fprintf(out, ".\\\" generated by `vzcaps __man` from the command table in src/cli/commands.c: do not edit\n"
                 ".TH VZCAPS 1 \"2026\" \"vzcaps %s\" \"User Commands\"\n.SH NAME\n"
                 "vzcaps \\- Metal capability answers for macOS guests, from the host's real chip\n.SH SYNOPSIS\n.nh\n",
            VZCAPS_VERSION);
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        fprintf(out, ".B vzcaps %s\n", c->name);
        for (const struct opt_spec *o = c->opts; o->name; o++) {
            char *item = synopsis_item(o);
            roff_text(out, item);
            fputc(' ', out);
            free(item);
        }
        roff_text(out, c->args);
        fputs("\n.br\n", out);
    }
    fputs(".B vzcaps \\-\\-version\n.hy\n", out);
    fputs(".SH DESCRIPTION\n", out);
    roff_text(out, "A macOS guest on Apple silicon sees a paravirtual GPU that answers Metal capability queries as an\n"
                   "Apple family 5 part. vzcaps injects a small library (libvzcaps.dylib) into one process with\n"
                   "DYLD_INSERT_LIBRARIES; it answers supportsFamily: (and, when asked, the threadgroup-memory and\n"
                   "working-set limits) the way the host's real chip would, and never claims more than that chip has\n"
                   "unless VZCAPS_UNSAFE_BEYOND_HARDWARE=1 is set. Anything in doubt leaves the process exactly\n"
                   "stock, with one log line saying why.\n");
    fputs(".SH COMMANDS\n", out);
    for (int g = GROUP_USE; g < GROUP_COUNT; g++) {
        fprintf(out, ".SS %s\n", group_titles[g]);
        for (const struct cmd_spec *c = cli_commands; c->name; c++)
            if (c->group == (enum cmd_group)g) {
                fprintf(out, ".TP 10\n.B %s\n", c->name);
                roff_text(out, c->summary);
                fputc('\n', out);
            }
    }
    fputs(".SH OPTIONS\n", out);
    for (const struct cmd_spec *c = cli_commands; c->name; c++)
        man_options(out, c);
    fputs(".SH EXIT STATUS\n", out);
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        fprintf(out, ".TP\n.B vzcaps %s\n", c->name);
        roff_text(out, c->exits);
        fputc('\n', out);
    }
    fputs(".SH ENVIRONMENT\n", out);
    for (const struct env_spec *e = cli_environment; e->name; e++) {
        fprintf(out, ".TP\n.B %s\n", e->name);
        roff_text(out, e->help);
        fputc('\n', out);
    }
    fputs(".SH FILES\n", out);
    roff_text(out, "The config file: " VZCAPS_CONFIG_ORDER_TEXT ". The library, vzcaps run and vzcaps check search in this\n"
                   "order, and vzcaps check names the file it used. It holds sections [name] with match = globs\n"
                   "and the keys of the variables above (apple_family_max, ...). A file that others can write\n"
                   "is not trusted. ~/Library/Caches/vzcaps: cached verify verdicts.\n"
                   "~/Library/Application Support/vzcaps/prepared: copies made by vzcaps prepare.\n");
    fputs(".SH EXAMPLES\n", out);
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        fputs(".TP\n", out);
        roff_text(out, c->example);
        fputc('\n', out);
    }
    fputs(".SH SEE ALSO\nThe documentation installed with vzcaps, one page per topic: share/doc/vzcaps/ under its prefix\n"
          "(/usr/local/share/doc/vzcaps/; with Homebrew, $(brew \\-\\-prefix)/share/doc/vzcaps/).\n"
          "troubleshooting.md there lists every line vzcaps prints that needs an action, its cause and the fix.\n", out);
}

/* ---- help and usage errors: the table in words ---- */

void print_help(const char *cmd, FILE *out)
{
    const struct cmd_spec *c = cli_find_command(cmd);
    if (!c)
        cli_print_overview(out);
    else
        cli_print_help(out, c);
}

int unknown_command(const char *cmd, const char *word)
{
    const char *hint = cli_command_suggestion(word);
    const char *prefix = cmd ? "vzcaps help" : "vzcaps";
    if (strcmp(word, "uninstall") == 0) {
        /* removing vzcaps is the uninstall script's job: it knows what install.sh put where */
        static const char *const script[] = {"share/vzcaps/uninstall.sh"};
        char path[1200];
        if (installed_file(script, 1, path, sizeof path))
            eprintf("%s: unknown command \"%s\": to remove vzcaps, run %s (add --all for its LaunchAgents, logs and "
                    "caches; see the install page)", prefix, word, path);
        else
            eprintf("%s: unknown command \"%s\": to remove vzcaps, run the uninstall.sh of the release archive it came "
                    "from (installed as PREFIX/share/vzcaps/uninstall.sh), make uninstall in a checkout, or brew "
                    "uninstall vzcaps", prefix, word);
        return EXIT_USAGE;
    }
    const char *what = word[0] == '-' ? "option" : "command";
    if (hint)
        eprintf("%s: unknown %s \"%s\" (did you mean %s?)", prefix, what, word, hint);
    else
        eprintf("%s: unknown %s \"%s\"", prefix, what, word);
    fprintf(stderr, "run vzcaps help for the list of commands\n");
    return EXIT_USAGE;
}

int cmd_help(int argc, char **argv)
{
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            continue;
        if (name)
            return usage_error("help", "one command at a time (got %s and %s)", name, argv[i]);
        name = argv[i];
    }
    if (name && !cli_find_command(name))
        return unknown_command("help", name);
    print_help(name ? name : "", stdout);
    return 0;
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
        cli_print_synopsis(stderr, c, strlen("usage: "));
    else
        fputs("vzcaps COMMAND [OPTIONS]\n", stderr);
    return EXIT_USAGE;
}
