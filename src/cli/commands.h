/* The command table (commands.c): options, arguments, defaults and exit statuses of every
 * subcommand, which drive parsing, help, the man page and the shell completions. */
#ifndef VZCAPS_COMMANDS_H
#define VZCAPS_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct opt_spec {
    const char *name; /* "--profile" or "-m" */
    const char *arg;  /* NULL: a flag; else its value(s), one word each: "NAME", "STOCK.json UNLOCKED.json" */
    const char *help;
    const char *def;  /* the default, NULL when none worth saying, REQUIRED when it must be given */
};
/* An option's def for one that must be given: shown without brackets, and "(required)". */
extern const char cli_required[];
#define REQUIRED cli_required
/* An option's value, by its metavariable (ARG), says what completes it:
 *   a|b|FAMILY  those words (FAMILY: every Apple family the core accepts)
 *   PROFILE     the sections of the config file that would be read (vzcaps __profiles)
 *   BRAND       the chip brand strings the core recognises
 *   PROGRAM, NAME  command names
 *   FILE, PATH, MODEL, *.json, BUNDLE_DIR   file names;  DIR  directory names
 *   COMMAND     vzcaps's commands;  N, LABEL, SECONDS, TIME  nothing to offer */

enum args_mode {
    ARGS_NONE,       /* options only */
    ARGS_POSITIONAL, /* options and operands in any order (files, directories, a verb) */
    ARGS_COMMAND,    /* options, then a command with its own arguments (the first operand starts it) */
    ARGS_REST        /* options, then -- and arguments passed on (bench) */
};

/* How `vzcaps help` groups the commands (as git groups its own). */
enum cmd_group { GROUP_NONE, GROUP_USE, GROUP_CHECK, GROUP_PROVE, GROUP_MEASURE, GROUP_SETUP, GROUP_COUNT };

struct cmd_spec {
    const char *name;
    int (*fn)(int, char **);
    const char *args; /* operands in the synopsis */
    enum args_mode args_mode;
    const struct opt_spec *opts;
    const char *about, *exits, *example;
    enum cmd_group group;
    const char *summary; /* what it is for, one line: `vzcaps help` */
    const char *aliases; /* words people type for it ("status"): an unknown command suggests it */
};

struct env_spec {
    const char *name, *help;
};

extern const struct cmd_spec cli_commands[];   /* {0}-terminated */
/* At most this many entries in cli_commands, its end included (commands.c asserts it at build time). */
#define CLI_MAX_COMMANDS 32
extern const struct env_spec cli_environment[];

const struct cmd_spec *cli_find_command(const char *name);
/* What to suggest for an unknown command: the closest name, or the commands that do the job
 * (an alias, or an operand such as "host status"); NULL when nothing fits. Static storage. */
const char *cli_command_suggestion(const char *word);
/* Checks argv[1..] against the command's table before the command runs: unknown options
 * (with "did you mean"), missing values, values given to flags, operands where there are
 * none. 0, or the usage error's exit status after printing it. */
int cli_validate_args(const struct cmd_spec *c, int argc, char **argv);
/* "vzcaps NAME [OPTIONS] ARGS", wrapped at 100 columns under its first option, after a
 * prefix of prefix_len columns already written ("usage: " is 7). */
void cli_print_synopsis(FILE *out, const struct cmd_spec *c, size_t prefix_len);
void cli_print_overview(FILE *out);
void cli_print_help(FILE *out, const struct cmd_spec *c);
void cli_print_man(FILE *out);
/* bash, zsh or fish; -1 for another shell. */
int cli_print_completions(FILE *out, const char *shell);
/* The sections of the config file the library would read (or of config when given), one a
 * line, for the shell completions. 0, or 1 when there is no readable valid file. */
int cli_print_profiles(FILE *out, const char *const *envp, const char *config);
/* How completions treat a metavariable (see struct opt_spec); VALUE_UNKNOWN for one they do
 * not know (a test keeps the table free of those). */
enum value_kind { VALUE_UNKNOWN, VALUE_NONE, VALUE_WORDS, VALUE_PROFILE, VALUE_CHIP, VALUE_PROGRAM, VALUE_FILE, VALUE_DIR,
                  VALUE_COMMAND };
enum value_kind cli_value_kind(const char *metavar);
/* Help text reflowed to width columns: the first line continues at column start, later ones
 * begin with indent spaces. Newlines in text are spaces; words are never cut. */
void cli_wrap(FILE *out, const char *text, size_t start, size_t indent, size_t width);

#endif
