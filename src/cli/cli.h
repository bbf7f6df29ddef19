/* Shared declarations of the vzcaps command: the subcommands and the helpers they share.
 * Owns: the contract between main.c, the subcommand files and their helpers (options.c,
 * commands.c); the launch floor below (src/launch/launch.h) has a contract of its own,
 * included here. A subcommand's file calls nothing defined in another subcommand's file.
 * Never: decides a capability itself (that is the core's job, shared with the library). */
#ifndef VZCAPS_CLI_H
#define VZCAPS_CLI_H

#include "../launch/launch.h"
#include "../data/verdict.h"

#include <stdbool.h>
#include <stdio.h>

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
int cmd_shims(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int child_probe(void);
int child_verify(int argc, char **argv);

/* commands.c: help and usage errors, with the table */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void print_help(const char *cmd, FILE *out);
/* "vzcaps: unknown command \"WORD\" (did you mean ...?)" (from cmd "help": "vzcaps help: ..."); EXIT_USAGE. */
int unknown_command(const char *cmd, const char *word);

/* help.c: where a command's options go (cli_parse). OPT_VALUE: the last one given wins (an ARG
 * of two words fills p[0] and p[1]); OPT_FLAG: sets *p; OPT_LIST: each value into l[(*n)++]
 * (room for argc); OPT_WHICH: a flag that puts its own name into *p (the last one given wins). */
struct opt_bind {
    const char *name;
    const char **value;
    bool *flag;
    const char **list;
    int *n;
};
#define OPT_VALUE(name, p) {name, p, NULL, NULL, NULL}
#define OPT_WHICH(name, p) {name, p, NULL, NULL, NULL}
#define OPT_FLAG(name, p) {name, NULL, p, NULL, NULL}
#define OPT_LIST(name, l, np) {name, NULL, NULL, l, np}
/* The options that choose a view, shared by check, doctor and inspect (check_family_opt checks
 * --family once all are read); --exe is the command's own. */
#define OPT_VIEW(o) OPT_VALUE("--config", &(o).config), OPT_VALUE("--profile", &(o).profile), \
                    OPT_VALUE("--chip", &(o).chip), OPT_VALUE("--family", &(o).family), OPT_FLAG("--bare", &(o).bare)
/* argv[1..] checked against cmd's table (cli_validate_args) and read by it: each option where
 * binds (ended by {0}) puts it; what is not an option (operands, the command and its arguments,
 * what follows --) moves to argv[1..], and *argc becomes one more than their number.
 * 0, or the usage error's exit status. */
int cli_parse(const char *cmd, int *argc, char **argv, const struct opt_bind *binds);

/* options.c */
/* A --timeout value: whole seconds, 0 for none (0, or EXIT_USAGE after a usage error). */
int timeout_opt(const char *cmd, const char *value, unsigned *seconds);
/* A --family value is a command-line error (2, with usage) when the library would reject it. */
int check_family_opt(const char *cmd, const char *value);

/* bundle.c: the first-run bundle (doctor --bundle DIR) and its verdict: "WORKS", "PARTIAL",
 * "DOES NOT WORK", "CANNOT TELL" or "NOT ON MACOS", with a one-sentence reason. */
int doctor_bundle(const char *dir, const char *exe, char **cmd, unsigned timeout);
/* The hidden child __device-class: the default device's class chain as one JSON object. */
int child_device_class(void);
void device_classes_json(FILE *out, const char *const *chain, size_t n, const char *init_owner);
/* Whether a file name in DiagnosticReports is a crash report of the program prog. */
bool crash_report_matches(const char *name, const char *prog);

/* shims.c: entries named after client programs that are links to this command */
/* The one test of an entry vzcaps made in a shim directory: a link that leads to this command. */
bool shim_entry_ours(int dirfd, const char *name);

/* launchd.c: the domain a LaunchAgent goes into and how it gets there, given the launchctl to
 * ask (NULL: not macOS; the commands are printed, nothing runs). */
/* gui/UID when `launchctl print gui/UID` succeeds (a GUI login session), else user/UID (a guest
 * used over SSH): true for gui. */
bool launchd_domain(const char *launchctl, unsigned uid, char *out, size_t len);
/* The domain a LaunchAgent goes into: launchd_domain's, or gui/UID where launchctl is NULL (true). */
bool launchd_choose_domain(const char *launchctl, unsigned uid, char *domain, size_t len);
/* Says the domain, boots out label where it is loaded, then (plist given: --install) bootstraps
 * plist into the domain: 0, or 1 when a launchctl step failed. launchd_apply_in: the same in a
 * domain already chosen (and said). */
int launchd_apply(const char *launchctl, unsigned uid, const char *label, const char *plist);
int launchd_apply_in(const char *launchctl, unsigned uid, const char *domain, const char *label, const char *plist);
/* The whole plist for a job, on the heap (NULL: out of memory); background: for the user/UID
 * domain, with LimitLoadToSessionType = Background (gui/UID: without it). */
char *launchd_plist(const char *label, char **cmd, char **env, const char *home, bool background, size_t *len);

#endif
