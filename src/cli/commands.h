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
    const char *def;  /* the default, NULL when none worth saying */
};

enum args_mode {
    ARGS_NONE,       /* options only */
    ARGS_POSITIONAL, /* options and operands in any order (files, directories, a verb) */
    ARGS_COMMAND,    /* options, then a command with its own arguments (the first operand starts it) */
    ARGS_REST        /* options, then -- and arguments passed on (bench) */
};

struct cmd_spec {
    const char *name;
    int (*fn)(int, char **);
    const char *args; /* operands in the synopsis */
    enum args_mode args_mode;
    const struct opt_spec *opts;
    const char *about, *exits, *example;
};

struct env_spec {
    const char *name, *help;
};

extern const struct cmd_spec cli_commands[];   /* {0}-terminated */
extern const struct env_spec cli_environment[];

const struct cmd_spec *cli_find_command(const char *name);
/* The candidate at most two edits from word (the closest), or NULL. */
const char *cli_did_you_mean(const char *word, const char *const *candidates, size_t n);
const char *cli_command_suggestion(const char *word);
/* Checks argv[1..] against the command's table before the command runs: unknown options
 * (with "did you mean"), missing values, values given to flags, operands where there are
 * none. 0, or the usage error's exit status after printing it. */
int cli_validate_args(const struct cmd_spec *c, int argc, char **argv);
void cli_print_synopsis(FILE *out, const struct cmd_spec *c);
void cli_print_help(FILE *out, const struct cmd_spec *c);
void cli_print_man(FILE *out);
/* bash, zsh or fish; -1 for another shell. */
int cli_print_completions(FILE *out, const char *shell);

#endif
