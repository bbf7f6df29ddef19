/* Shared declarations of the vzcaps command: the subcommands and the helpers they share.
 * Owns: the contract between main.c, the subcommand files and their helpers (options.c,
 * launch.c); the layers below have contracts of their own, included here.
 * Never: decides a capability itself (that is the core's job, shared with the library). */
#ifndef VZCAPS_CLI_H
#define VZCAPS_CLI_H

#include "../common/readfile.h"
#include "../common/outdir.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"
#include "../data/json.h"
#include "../platform/platform.h"

#include <stdbool.h>
#include <stdio.h>

/* exit codes */
#define EXIT_USAGE 2
#define EXIT_NEEDS_MACOS 3   /* probe/verify/host without what they need */
#define EXIT_REFUSED 125     /* run: configuration refused before the workload started */

int cmd_run(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_launchd(int argc, char **argv);
int cmd_host(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_prepare(int argc, char **argv);
int child_probe(void);
int child_verify(int argc, char **argv);
struct cfg_opts;
int verify_gate(const struct cfg_opts *o);

/* options.c */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void print_help(const char *cmd, FILE *out);
/* "vzcaps: unknown command \"WORD\" (did you mean ...?)" (from cmd "help": "vzcaps help: ..."); EXIT_USAGE. */
int unknown_command(const char *cmd, const char *word);
/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]: 1 and *value set (and *i advanced),
 * 0 when argv[*i] is another option, -1 when the value is missing. */
int opt_take(int argc, char **argv, int *i, const char *name, const char **value);
/* A --family value is a command-line error (2, with usage) when the library would reject it. */
int check_family_opt(const char *cmd, const char *value);
/* What a child printed, NUL-terminated. */
struct cli_buf {
    char *data;
    size_t len, cap;
};
void cli_buf_free(struct cli_buf *b);
/* Runs argv with stdin from /dev/null, env entries added to this environment, and its standard
 * output and error captured whole: the wait status, or -1 when it could not be started or the
 * output did not fit in memory. Files are written from the buffers afterwards (safewrite),
 * never by the child. Flags: CLI_CAPTURE_SEARCH looks argv[0] up on PATH; CLI_CAPTURE_STOCK
 * removes every vzcaps variable and the preload variable from the child's environment. */
#define CLI_CAPTURE_SEARCH 1
#define CLI_CAPTURE_STOCK 2
int cli_capture(char *const argv[], char *const env[], int flags, struct cli_buf *out, struct cli_buf *err);
/* Creates path and its missing parents (0755), as mkdir -p: 0, or -1 with errno set (prepare's;
 * every other command uses safewrite's vzcaps_mkdir_parents). */
int mkdir_p(const char *path);
/* Shell-quotes s to out ('...' with embedded quotes escaped). */
void shell_quote(FILE *out, const char *s);

/* Options shared by commands that resolve a configuration. */
struct cfg_opts {
    const char *config, *profile, *exe, *chip, *family;
    bool inherit;
    bool inherit_matching; /* run --inherit-matching: VZCAPS_INHERIT=matching */
    bool family_implied; /* set by cli_configure_run: --family auto was implied */
    bool bare;           /* check/doctor/inspect --bare: the library with this environment alone */
};
/* The configuration as a command shows it: what `vzcaps run` would do (cli_configure_run), or
 * with o->bare what the library would do with this environment alone (cli_configure). */
void cli_configure_view(struct cfg_opts *o, struct vzcaps_config_result *r);
/* Parses the options that choose a view shared by check, doctor and inspect: --config,
 * --profile, --exe (with_exe), --chip, --family, --bare. 1 taken (i advanced), 0 not one of
 * them, EXIT_USAGE after printing a usage error. Callers check --family with
 * check_family_opt once all options are read. */
int cfg_opt_take(const char *cmd, int argc, char **argv, int *i, struct cfg_opts *o, bool with_exe);
/* The arguments of check and doctor: cfg_opt_take's, --json and, when extra names one, a
 * valued option into *extra_value. 0, or a usage error's exit status. */
int view_args(const char *cmd, int argc, char **argv, struct cfg_opts *o, bool *json, const char *extra,
              const char **extra_value);
/* "view" line and JSON members for the view. */
const char *cfg_view_text(const struct cfg_opts *o);
/* Runs the same configuration step as the library, for exe, with opts as if they were
 * VZCAPS_* variables. envp_out receives the environment a child would get (static). */
void cli_configure(const struct cfg_opts *o, struct vzcaps_config_result *r);
/* cli_configure as `vzcaps run` applies it: when nothing configures the library for o->exe
 * (no --family, --profile, variable or config section), o->family becomes "auto". */
void cli_configure_run(struct cfg_opts *o, struct vzcaps_config_result *r);
/* Builds the child environment for run: this environment with the settings, every other
 * variable unchanged, and one preload entry that names the library exactly once (after the
 * other libraries of the first preload entry). No size limit. Returns a NULL-terminated
 * array valid until the next call of this or cli_configure. */
char **cli_child_env(const struct cfg_opts *o, const char *library);
/* How many further preload entries the last environment build dropped (the first wins, as
 * getenv(3) sees it). */
size_t cli_preload_duplicates(void);
/* argv for `SELF run [--profile P] [--family F] -- CMD...` into out (cap entries). */
void cli_run_argv(char **out, size_t cap, const char *self, const struct cfg_opts *o, char *const *cmd);

/* launch.c */
/* Finds the library next to the command or in ../lib, as an absolute path; returns 0 or -1
 * (with the paths tried). */
int find_library(char *buf, size_t len, char *tried, size_t tried_len);
/* Runs path with argv and waits: its exit status, 127 when it could not run, 1 on a signal. */
int spawn_wait(const char *path, char *const argv[]);
/* What exec would run for name (a '/' in it: as given; else the first regular executable
 * file on PATH): 0 with the path in out, or 127 (not found) / 126 (not a regular file, not
 * executable, too long) with the reason in why. */
int resolve_target(const char *name, char *out, size_t len, char *why, size_t whylen);
/* Whether library is a shared library the target can load: a regular file, ELF ET_DYN or a
 * Mach-O dylib, named like ours (the library finds its own preload entry by that name), of
 * the target's architecture (ELF) — Mach-O slices are checked by run_target_check. 0, or -1
 * with a reason. */
int library_check(const char *library, const char *target, char *why, size_t len);
/* An executable: name with a '/' as given, else next to the file near (if given), else on PATH. */
bool find_executable(const char *name, const char *near, char *out, size_t len);
/* Whether the Mach-O library has a slice of arch ("arm64e"); false when unreadable. */
bool library_has_arch(const char *library, const char *arch);

/* launch.c: #! scripts for run and inspect: what program a script really starts, and how run
 * starts it so that the injection survives. */
/* How many scripts deep an interpreter chain is followed (Linux allows a few levels). */
#define SCRIPT_DEPTH 4

struct script_chain {
    bool script;            /* a #! script, or a file with no executable format (started with /bin/sh) */
    bool binary_script;     /* the latter */
    bool rewritten;         /* #!.../env NAME: run starts start (NAME found on PATH) directly */
    bool nested;            /* an interpreter was itself a script */
    bool protected_image;   /* image is a program SIP protects: the injection is removed there */
    int depth;
    char line[VZCAPS_SHEBANG_MAX + 8]; /* the #! line as read, words joined by one space */
    char env_name[256];     /* NAME as the line writes it */
    char start[4096];       /* rewritten: the program run starts */
    char image[4096];       /* the first program started that SIP protects, else the program
                               that runs the script in the end (not a script) */
    char cannot_rewrite[200]; /* why env could not be replaced by starting NAME directly */
    struct vzcaps_shebang sb; /* the target's #! line */
    size_t first_arg;       /* rewritten: the first word after NAME */
};

/* Reads a file's #! line: as vzcaps_shebang_parse, or -2 (unreadable, not a regular file) with why. */
int script_read(const char *path, struct vzcaps_shebang *sb, char *why, size_t len);
/* Whether the file starts with an ELF or Mach-O magic (an executable format). */
bool script_is_binary(const char *path);
/* What target starts: 0 (c filled; c->script false for a program), or an exit status for
 * run (127 an interpreter or NAME not found, 126 otherwise) with why. */
int script_chain(const char *target, struct script_chain *c, char *why, size_t len);
/* For a rewritten chain: start, the words after NAME, target, cmd[1..] (malloc'd array of
 * pointers into c, target and cmd; NULL when out of memory). */
char **script_argv(const struct script_chain *c, const char *target, char *const *cmd);
/* One sentence for a chain whose image SIP protects ("" otherwise): where the injection is
 * removed, and the two ways around it. */
void script_protected_advice(const struct script_chain *c, char *out, size_t len);

/* The chip run passes to its target as VZCAPS_HOST_CHIP: the one this command read natively,
 * when the target runs as x86_64 (under Rosetta on Apple silicon), the chip is known and
 * none was given; else NULL. */
const char *run_chip_to_pass(const char *target_arch, const struct vzcaps_chip *native, bool chip_given);

/* bundle.c: the first-run bundle (doctor --bundle DIR) and its verdict: "WORKS", "PARTIAL",
 * "DOES NOT WORK", "CANNOT TELL" or "NOT ON MACOS", with a one-sentence reason. */
int doctor_bundle(const char *dir, const char *exe, char **cmd);
const char *bundle_verdict(bool macos, const char *probe_json, const char *verify_json, char *reason, size_t len);
/* The hidden child __device-class: the default device's class chain as one JSON object. */
int child_device_class(void);
void device_classes_json(FILE *out, const char *const *chain, size_t n, const char *init_owner);
/* Whether a file name in DiagnosticReports is a crash report of the program prog. */
bool crash_report_matches(const char *name, const char *prog);

/* check.c */
void print_profile_text(const struct vzcaps_config_result *r, const struct cfg_opts *o);

#endif
