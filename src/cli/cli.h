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
#include "../data/verdict.h"
#include "../platform/platform.h"
#include "../platform/exec.h"

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
int cmd_shims(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int child_probe(void);
int child_verify(int argc, char **argv);
struct cfg_opts;
int verify_gate(const struct cfg_opts *o);

/* options.c */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void print_help(const char *cmd, FILE *out);
/* "vzcaps: unknown command \"WORD\" (did you mean ...?)" (from cmd "help": "vzcaps help: ..."); EXIT_USAGE. */
int unknown_command(const char *cmd, const char *word);
/* The first of ../PATH... next to this command (an install: share/doc/vzcaps/X; a checkout:
 * docs/X beside build/) that is a regular file, into buf; false when none is. */
bool installed_file(const char *const *rels, size_t n, char *buf, size_t len);
/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]: 1 and *value set (and *i advanced),
 * 0 when argv[*i] is another option, -1 when the value is missing. */
int opt_take(int argc, char **argv, int *i, const char *name, const char **value);
/* A --timeout value: whole seconds, 0 for none (0, or EXIT_USAGE after a usage error). */
int timeout_opt(const char *cmd, const char *value, unsigned *seconds);
/* The defaults of --timeout, per child the command runs (stated in help). */
#define BENCH_TIMEOUT 3600
#define DOCTOR_TIMEOUT 600
#define PROBE_TIMEOUT 300
/* A stock child's environment: src/common/stockenv.h (vzcaps_stock_child). */
/* A --family value is a command-line error (2, with usage) when the library would reject it. */
int check_family_opt(const char *cmd, const char *value);
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
/* Whether library is a shared library the target can load: a regular file, ELF ET_DYN or a
 * Mach-O dylib, named like ours (the library finds its own preload entry by that name), of
 * the target's architecture (ELF) — Mach-O slices are checked by run_target_check. 0, or -1
 * with a reason. */
int library_check(const char *library, const char *target, char *why, size_t len);
/* launch.c: the launch plan, the one decision of what starts when a command is launched through
 * vzcaps, taken and shown the same way by run, run --dry-run, launchd, check, inspect and doctor:
 * the program exec finds, its #! chain (env only as /usr/bin/env, by path), the program started
 * (NAME itself for #!/usr/bin/env NAME), what dyld does with the injection there (signature,
 * __RESTRICT, FairPlay, setuid/setgid), the SIP/arm64e decision for inheritance, and the one
 * line a POSIX shell runs as it is. */
#define PLAN_NOTES 8
struct launch_plan {
    char *const *cmd;
    int rc;                 /* 0, or 126/127: it cannot start (why) */
    bool found;             /* cmd[0] was found */
    bool by_path;           /* cmd[0] named a vzcaps shim: the line names the real program by its path */
    char why[1400];
    char target[4096];      /* what exec runs for cmd[0] */
    struct script_chain chain;
    const char *image;      /* the program the library is loaded into */
    const char *exe;        /* its base name: the name the library sees */
    const char *exec_path;  /* what run starts: target, or NAME for #!/usr/bin/env NAME */
    char **exec_argv;
    bool macho, setugid, prepare_helps;
    int injection;          /* enum macho_injection of the running slice (macho) */
    char arch[32], injection_why[300];
    bool inherit_decided;   /* launch_plan_inherit ran (the workload keeps the injection in its children) */
    int inherit;            /* VZCAPS_INHERIT_* */
    char inherit_why[600];
    char notes[PLAN_NOTES][2800];
    bool warning[PLAN_NOTES];
    size_t n_notes;
};
/* The plan for cmd: 0, or 126/127 when it cannot start (p->why); with dry, a program that is
 * not found or not a valid script still gets a plan (p->rc says why). */
int launch_plan_make(struct launch_plan *p, char *const *cmd, bool dry);
/* The SIP/arm64e decision for a workload that keeps the injection in its children (a note when
 * allowed with a caveat): VZCAPS_INHERIT_*. */
int launch_plan_inherit(struct launch_plan *p, const char *library, bool anyway);
/* The plan's notes and warnings on stderr, each "WHO: note: ..." or "WHO: warning: ...". */
void launch_plan_notes(const struct launch_plan *p, const char *who);
/* The line a POSIX shell runs as it is: env, the variables env changes from base, the program
 * and its arguments, each quoted; a program word env would take for an assignment (one with
 * '=') is started by the shell's own assignments and as a path instead. */
void launch_plan_line(FILE *out, const struct launch_plan *p, char *const *env, char *const *base);
void launch_plan_free(struct launch_plan *p);
/* What happens to the injection where the library would load: "honoured", "ignored",
 * "unknown" (macho_injection_name) or "removed" (a program SIP protects). */
const char *launch_plan_injection(const struct launch_plan *p);
/* The plan as check, doctor and inspect show it: a "launch" block, or a "launch" member. */
void launch_plan_text(FILE *out, const struct launch_plan *p);
void launch_plan_json(struct json *j, const char *key, const struct launch_plan *p);
/* inspect.c: the slice that runs on Apple silicon (arm64e, arm64, then x86_64), and whether
 * vzcaps prepare's copy would honour the injection where the original ignores it. */
struct macho_file;
struct macho_slice;
const struct macho_slice *macho_running_slice(const struct macho_file *mf);
bool macho_prepare_helps(const struct macho_slice *s);

/* The chip run passes to its target as VZCAPS_HOST_CHIP: the one this command read natively,
 * when the target runs as x86_64 (under Rosetta on Apple silicon), the chip is known and
 * none was given; else NULL. */
const char *run_chip_to_pass(const char *target_arch, const struct vzcaps_chip *native, bool chip_given);

/* bundle.c: the first-run bundle (doctor --bundle DIR) and its verdict: "WORKS", "PARTIAL",
 * "DOES NOT WORK", "CANNOT TELL" or "NOT ON MACOS", with a one-sentence reason. */
int doctor_bundle(const char *dir, const char *exe, char **cmd, unsigned timeout);
/* The hidden child __device-class: the default device's class chain as one JSON object. */
int child_device_class(void);
void device_classes_json(FILE *out, const char *const *chain, size_t n, const char *init_owner);
/* Whether a file name in DiagnosticReports is a crash report of the program prog. */
bool crash_report_matches(const char *name, const char *prog);

/* shims.c: entries named after client programs that are links to this command */
/* Whether argv[0] names a shim (its base name is not vzcaps...): main then runs shim_main. */
bool shim_is_started_as(const char *argv0);
/* Started as NAME: the real NAME (shim_real) through `vzcaps run`; 127 with one line when none. */
int shim_main(int argc, char **argv);
/* The next NAME on PATH after the shim directory dir (any spelling of it; NULL: the first PATH
 * entry whose NAME is this command), never this command however reached: 0 with out, or 127
 * with why. */
int shim_real(const char *name, const char *dir, char *out, size_t len, char *why, size_t whylen);
/* The one test of an entry vzcaps made in a shim directory: a link that leads to this command. */
bool shim_entry_ours(int dirfd, const char *name);
/* Whether name, as exec finds it on PATH, is a vzcaps shim: true with the real program it runs
 * in out ("" when there is none). */
bool shim_real_for(const char *name, char *out, size_t len);
/* One sentence when name, as exec finds it on PATH, is a vzcaps shim: where, and the real one
 * it runs (or that there is none); "" otherwise. */
void shim_describe(const char *name, char *out, size_t len);

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

/* check.c */
void print_profile_text(const struct vzcaps_config_result *r, const struct cfg_opts *o);
/* The launch plan for --exe PROGRAM as exec finds it on PATH (through a shim: the real program
 * it runs): true with p filled, false when PROGRAM is not found here (nothing to show). */
bool exe_launch_plan(const char *exe, struct launch_plan *p);
/* With a profile that keeps the injection in children: the plan's SIP/arm64e decision for the
 * library installed with this command (none found: as if it had no arm64e slice). */
void plan_inheritance(struct launch_plan *p, const struct vzcaps_profile *profile);

#endif
