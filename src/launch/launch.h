/* The launch floor's contract: what starts when a command is launched through vzcaps, and what
 * the library will do in it. Facts are gathered first (the program PATH resolves to, shims
 * included; its #! chain; its Mach-O facts; the environment the child gets; the configuration
 * that applies), then one decision makes the plan, then one renderer words it (words.c).
 * run, check, launchd, inspect, doctor, shims and probe take the plan from here.
 * Never: reads a command line (that is src/cli's), or includes anything of the command. */
#ifndef VZCAPS_LAUNCH_H
#define VZCAPS_LAUNCH_H

#include "../common/readfile.h"
#include "../common/outdir.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"
#include "../data/json.h"
#include "../platform/platform.h"
#include "../platform/exec.h"

#include <stdbool.h>
#include <stdio.h>

/* exit codes */
#define EXIT_USAGE 2
#define EXIT_NEEDS_MACOS 3   /* probe/verify/host without what they need */
#define EXIT_REFUSED 125     /* run: configuration refused before the workload started */

/* The defaults of --timeout, per child the command runs (stated in help). */
#define BENCH_TIMEOUT 3600
#define DOCTOR_TIMEOUT 600
#define PROBE_TIMEOUT 300
/* library.c: files next to this command. */
/* The first of ../PATH... next to this command (an install: share/doc/vzcaps/X; a checkout:
 * docs/X beside build/) that is a regular file, into buf; false when none is. */
bool installed_file(const char *const *rels, size_t n, char *buf, size_t len);
/* A stock child's environment: src/common/stockenv.h (vzcaps_stock_child). */
/* Shell-quotes s to out ('...' with embedded quotes escaped). */
void shell_quote(FILE *out, const char *s);

/* Options shared by commands that resolve a configuration. */
struct cfg_opts {
    const char *config, *profile, *exe, *chip, *family;
    bool inherit;
    bool inherit_matching; /* run --inherit-matching: VZCAPS_INHERIT=matching */
    bool family_implied; /* set by cli_configure_run: --family auto was implied */
    bool bare;           /* check/doctor/inspect --bare: the library with this environment alone */
    const char *handed;  /* a #! script's name, handed to the library as VZCAPS_PROGRAM (docs/config.md) */
    bool handed_here;    /* the program is exec'd in this process: the name bound to its pid and parent */
};
/* The configuration as a command shows it: what `vzcaps run` would do (cli_configure_run), or
 * with o->bare what the library would do with this environment alone (cli_configure). */
void cli_configure_view(struct cfg_opts *o, struct vzcaps_config_result *r);
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

/* library.c */
/* The library next to command (its file) or in its ../lib, as an absolute path, links resolved:
 * 0, or -1 with the paths tried. find_library: next to this command's own file. */
int library_near(const char *command, char *buf, size_t len, char *tried, size_t tried_len);
int find_library(char *buf, size_t len, char *tried, size_t tried_len);
/* Runs path with argv and waits: its exit status, 127 when it could not run, 1 on a signal. */
int spawn_wait(const char *path, char *const argv[]);
/* Whether library is a shared library the target can load: a regular file, ELF ET_DYN or a
 * Mach-O dylib, named like ours (the library finds its own preload entry by that name), of
 * the target's architecture (ELF) — Mach-O slices are the job decision's (job.c). 0, or -1
 * with a reason. */
int library_check(const char *library, const char *target, char *why, size_t len);
/* Whether path is a statically linked ELF executable (no PT_INTERP: no dynamic loader, so no
 * preload): 1, 0 for another ELF, -1 when it is not an ELF file (or unreadable). */
int launch_elf_static(const char *path);
/* decide.c: the launch plan, the one decision of what starts when a command is launched through
 * vzcaps, taken and shown the same way by run, run --dry-run, launchd, check, inspect and doctor:
 * the program execvp finds, what the kernel does with it (one #! level; Libc's /bin/sh for what
 * no image activator claims), the program started (NAME itself for #!/usr/bin/env NAME), what
 * dyld does with the injection there (signature, __RESTRICT, FairPlay, setuid/setgid, SIP), the
 * SIP/arm64e decision for inheritance, and the one line a POSIX shell runs as it is. */
#define PLAN_NOTES 8
struct launch_plan {
    char *const *cmd;
    int rc;                 /* 0, or 126/127: it cannot start (why) */
    bool found;             /* cmd[0] was found */
    bool by_path;           /* cmd[0] named a vzcaps shim: the line names the real program by its path */
    char why[1400];
    char target[4096];      /* what exec runs for cmd[0] (a shim: the real program) */
    bool script;            /* target starts with #!, or has no executable format (Libc runs it with /bin/sh) */
    bool via_sh;            /* the kernel runs no image for it (ENOEXEC): /bin/sh runs it, as execvp does */
    bool rewritten;         /* #!/usr/bin/env NAME: run starts NAME (found as env finds it) directly */
    bool protected_image;   /* image is a program SIP protects: the injection is removed there */
    char line[VZCAPS_SHEBANG_MAX + 8]; /* the #! line as the kernel reads it, words joined by one space */
    char env_name[256];     /* NAME as the line writes it */
    char cannot_rewrite[200]; /* why env could not be replaced by starting NAME directly */
    const char *sh_why;     /* via /bin/sh: why the kernel runs no image (NULL otherwise) */
    const char *image;      /* the program the library is loaded into */
    const char *exe;        /* its base name: the name the library sees */
    const char *exec_path;  /* what run starts: target, NAME for #!/usr/bin/env NAME, or /bin/sh */
    char **exec_argv;
    bool macho, setugid, prepare_helps, elf_static;
    int injection;          /* enum macho_injection of the running slice (macho) */
    char arch[32], injection_why[300];
    bool inherit_decided;   /* launch_plan_inherit ran (the workload keeps the injection in its children) */
    int inherit;            /* VZCAPS_INHERIT_* */
    char inherit_why[600];
    char notes[PLAN_NOTES][2800];
    bool warning[PLAN_NOTES];
    size_t n_notes;
};
/* Where a name leads on this machine (resolve.c): the file execvp finds (Libc's search: PATH
 * unset is /usr/bin:/bin, an empty entry the current directory; ENOENT, ENOTDIR, ELOOP and
 * ENAMETOOLONG go on), a vzcaps shim there and the real program it stands for, and what the
 * kernel does with that program. */
struct launch_lead {
    int rc;                 /* 0, or 127/126: execvp would fail (why) */
    char why[4400];
    char shim[4096];        /* the vzcaps shim exec finds for the name ("": none) */
    char command[4096];     /* the other installation's vzcaps command that shim links to ("": this one) */
    char found[4096];       /* the program: what exec finds, or the real one the shim starts */
    struct exec_image k;    /* what the kernel does with found (k.err ENOEXEC: /bin/sh runs it) */
};
void launch_lead_find(const char *name, struct launch_lead *l);
/* Whether path (as exec finds it) is a vzcaps shim: a link to a vzcaps command of any
 * installation, named other than vzcaps... */
bool launch_is_shim(const char *path);
/* The facts the plan is decided from, gathered first (plan.c: the only part that reads files):
 * where cmd[0] leads, the #!/usr/bin/env NAME its line names and where NAME leads, and the image
 * the library would load into (setuid/setgid, its running Mach-O slice, a static ELF). */
struct launch_facts {
    char *const *cmd;
    struct launch_lead name;      /* where cmd[0] leads */
    int env;                      /* vzcaps_shebang_env's for its #! line (1: env NAME, started directly) */
    bool rewrite;                 /* run starts what the line names directly: env's NAME, or an interpreter that is a vzcaps shim */
    size_t env_word;              /* the word naming it (0: the interpreter) */
    char env_why[200];
    struct launch_lead env_lead;  /* rewrite: where it leads (NAME as env's execvp finds it; the shim's real program) */
    bool setugid;                 /* the image has setuid/setgid bits */
    bool macho;                   /* the image has a Mach-O slice that runs */
    char arch[32];
    int injection;                /* enum macho_injection of that slice */
    char injection_why[300];
    bool prepare_helps, prepare_cannot; /* vzcaps prepare's copy would accept it / cannot change it */
    bool elf_static;              /* the image is an ELF executable without an interpreter */
    char *libs;                   /* the base names of the libraries the image links, one a line (malloc'd; NULL: unknown) */
    bool uses_queries;            /* its running Mach-O slice names a query the library changes */
    /* a job's (launch_facts_gather): the configurations, the library, what inheritance is decided from */
    const char *names[2];         /* the name the program goes by (a script's own), and its image's */
    struct cfg_opts opts[2];      /* the options run applies for each name (the family it implies) */
    struct vzcaps_config_result cfg[2]; /* the configuration for each */
    int lib;                      /* the library this start injects: 0, 1 not found, 2 not loadable (lib_why) */
    char library[4096], lib_why[4000], lib_archs[128];
    int sip;                      /* VZCAPS_SIP_* (read when a configuration keeps the injection in children) */
    bool lib_arm64e;              /* the library has an arm64e slice (likewise) */
};
/* Each library the ELF image at path links (DT_NEEDED), handed to each(ctx, name) until it
 * returns true: 1 when it did, 0 when none did, -1 when path is not a readable ELF file. */
int launch_image_libs(const char *path, bool (*each)(void *, const char *), void *ctx);
/* The facts of a job (the only step that reads files or the environment): where rq->cmd leads and
 * what starts there, its configurations, the library; one record, overwritten by the next call. */
struct launch_request;
const struct launch_facts *launch_facts_gather(const struct launch_request *rq);
/* What starts: the image the library would load into, given the facts so far (the chain's
 * image, a shimmed env NAME's real program, or the program itself). */
const char *launch_facts_image(const struct launch_facts *f);
/* decide.c: the one decision, facts in, plan out (pure: no file, no environment). With dry, a
 * program that is not found or not a valid script still gets a plan (p->rc says why).
 * Returns p->rc, or 0 for such a dry plan. */
int launch_decide(const struct launch_facts *f, struct launch_plan *p, bool dry);
/* The gate's verdict (check --strict): the run changes at least one answer, runs stock, or
 * cannot start. Stock when the profile changes nothing (vzcaps_stock_reason), when the caller
 * scope leaves every caller stock, when the program (f: its facts; NULL: none named) is not a
 * vzcaps shim as PATH resolves it (or by its path), or when the loader will not inject where the
 * library would load (plan: setuid/setgid, a static executable, dyld's restrictions, SIP). A
 * program not found here is judged by the configuration alone; one found that exec would not
 * start (a FIFO, a directory, not executable) cannot start. why says why, in every case. */
enum launch_gate { LAUNCH_GATE_CHANGES, LAUNCH_GATE_STOCK, LAUNCH_GATE_CANNOT_START };
enum launch_gate launch_gate(const struct vzcaps_profile *profile, const struct launch_facts *f, const struct launch_plan *plan,
                             char *why, size_t len);
/* The gate's verdict in words, on stderr: "WHO: EXE would run stock: WHY" (or "not start", or
 * "change an answer"); words.c. */
void launch_gate_say(const char *who, const char *exe, enum launch_gate g, const char *why);
/* Adds a note (or a warning) to the plan; past PLAN_NOTES the last one says so. */
void launch_plan_note(struct launch_plan *p, bool warning, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The plan for cmd: gather, then decide. 0, or 126/127 when it cannot start (p->why). */
int launch_plan_make(struct launch_plan *p, char *const *cmd, bool dry);
/* The SIP/arm64e decision for a workload that keeps the injection in its children (a note when
 * allowed with a caveat), from SIP's state and the library's arm64e slice: VZCAPS_INHERIT_*. */
int launch_plan_inherit(struct launch_plan *p, int sip, bool lib_arm64e, bool anyway);
/* The plan's notes and warnings on stderr, each "WHO: note: ..." or "WHO: warning: ...". */
void launch_plan_notes(const struct launch_plan *p, const char *who);
/* The line a POSIX shell runs as it is: env, the variables env changes from base, the program
 * and its arguments, each quoted; a program word env would take for an assignment (one with
 * '=') is started by the shell's own assignments and as a path instead. */
void launch_plan_line(FILE *out, const struct launch_plan *p, char *const *env, char *const *base);
void launch_plan_free(struct launch_plan *p);
/* One sentence for a plan whose image SIP protects ("" otherwise): where the injection is
 * removed, and the two ways around it. */
void launch_plan_advice(const struct launch_plan *p, char *out, size_t len);
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

/* resolve.c: which entry on PATH is a vzcaps shim, and which real program it starts (start.c: shim_main) */
/* Whether argv[0] names a shim (its base name is not vzcaps...): main then runs shim_main. */
bool shim_is_started_as(const char *argv0);
/* Started as NAME: the real NAME (shim_real) through `vzcaps run`; 127 with one line when none. */
int shim_main(int argc, char **argv);
/* The next NAME on PATH after the shim directory dir (any spelling of it; NULL: the first PATH
 * entry whose NAME is this command), never this command however reached: 0 with out, or 127
 * with why. */
int shim_real(const char *name, const char *dir, char *out, size_t len, char *why, size_t whylen);
/* The known client name is a typo of ("lama-server": llama-server) when name is none of them and
 * no name is on PATH after dir (NULL: anywhere on PATH), or NULL. */
const char *launch_client_typo(const char *name, const char *dir);
/* One sentence when name, as exec finds it on PATH, is a vzcaps shim of this command: where,
 * and the real one it runs (or that there is none); "" otherwise. */
void shim_describe(const char *name, char *out, size_t len);
/* The running command's device and inode: 0, or -1 when its path is unknown. */
struct stat;
int shim_self_id(struct stat *st);

/* words.c: the configuration as check and doctor show it */
void print_profile_text(const struct vzcaps_config_result *r, const struct cfg_opts *o);
/* With gate (check --strict), "verdict" ("unlocked" or "stock") and "reason" from the decision. */
struct launch_job;
void print_profile_json(const struct vzcaps_config_result *r, const struct cfg_opts *o, const struct launch_job *gate);
/* "view" line and JSON members for the view. */
const char *cfg_view_text(const struct cfg_opts *o);
/* The launch plan for --exe PROGRAM as exec finds it on PATH (through a shim: the real program
 * it runs): true with p filled, false when PROGRAM is not found here (nothing to show). */
bool exe_launch_plan(const char *exe, struct launch_plan *p);
/* With a profile that keeps the injection in children: the plan's SIP/arm64e decision for the
 * library installed with this command (none found: as if it had no arm64e slice). */
void plan_inheritance(struct launch_plan *p, const struct vzcaps_profile *profile);

/* verify.c: the children of probe and verify (this command's hidden subcommands) */
/* What probe and verify were asked (family: from run --verify --family). */
struct child_opts {
    bool json;
    const char *profile, *family, *replay[2];
};
/* Each child's --timeout in seconds (0: none). */
extern unsigned launch_child_timeout;
/* "vzcaps CMD: needs a macOS Metal device ...": EXIT_NEEDS_MACOS. */
int launch_needs_macos(const char *cmd);
/* Runs argv and returns its standard output (valid until the next call), or NULL when it
 * printed nothing or too much. stock: without the library. */
char *launch_capture(char **argv, bool stock);
/* The configuration the library will apply in the child (which is this very command). */
void launch_child_profile(const struct child_opts *o, struct vzcaps_config_result *r, struct cfg_opts *co);
/* This command with child_args, through `vzcaps run` with co: its standard output as launch_capture. */
char *launch_unlocked_child(const struct cfg_opts *co, char **child_args);
struct vresult;
/* The verdict `vzcaps verify` cached for o (its key: host chip, macOS build, library hash and the
 * effective claims), into res and key: the cache file's path (on the heap), or NULL when there is
 * none (no cache home, no file, not a verdict). */
char *launch_verify_cached(const struct child_opts *o, struct vresult *res, struct vzcaps_config_result *r, char key[65]);
/* A verify run: 0 with res (and key, the verdict's cache key), or an exit status. */
int launch_verify_run(const struct child_opts *o, struct vresult *res, struct vzcaps_config_result *r, char key[65]);
/* Caches the verdict under key (a failure is said, and only costs a repeat). */
void launch_verify_cache(const char *key, const struct vresult *res);
void launch_verify_print(const struct vresult *res, bool json, FILE *out);
/* verify's nocopy_mmap check in r (NULL: none, or r is NULL). */
struct vcheck;
const struct vcheck *verify_nocopy_check(const struct vresult *r);
/* The guest hazard of macOS 14 guests (newBufferWithBytesNoCopy over a file-backed
 * mmap returns stale data): true with the pitfall in out when m (macos: it is a Mac) is a macOS
 * 14 guest and verdict (a verify result, NULL when there is none; source says where it was read)
 * does not show nocopy_mmap passing. Says how to check and the workarounds; changes nothing. */
bool nocopy_guest_hazard(const struct machine *m, bool macos, const struct vresult *verdict, const char *source, char *out,
                         size_t len);
/* The same for the bundle's summary, from the bundle's own verify.json (its text, or NULL). */
bool bundle_guest_hazard(const struct machine *m, bool macos, const char *verify_json, char *out, size_t len);
/* run --verify's gate: the cached verdict for this chip, build, library and profile, else a
 * verify run: 0, or an exit status. */
int verify_gate(const struct cfg_opts *o);

/* job.c: the one decision for a job, from argv, this environment and PATH to which image starts,
 * with or without the library, under which configuration, changing which answers. vzcaps run,
 * a shim's start and check --strict all take it; start.c acts on it, words.c words it. */
struct launch_request {
    struct cfg_opts o;
    bool dry, verify, inherit_anyway;
    bool shim;               /* started as a shim: where run refuses, the program starts stock */
    bool as_job;             /* check --strict: cmd[0] started by name as a job's shell starts it */
    const char *library_opt; /* --library */
    char **cmd;
};
/* Where the decision stopped: the program cannot start; it starts without the library (the
 * library cannot be loaded, or run refuses: the configuration, inheritance, the target's slice);
 * or it starts with the library (whether that changes an answer: the verdict). */
enum launch_step { LAUNCH_CANNOT_START, LAUNCH_NO_LIBRARY, LAUNCH_REFUSED_CONFIG, LAUNCH_REFUSED_INHERIT,
                   LAUNCH_REFUSED_TARGET, LAUNCH_WITH_LIBRARY };
struct launch_job {
    const struct launch_facts *facts; /* launch_facts_gather's record */
    struct launch_plan plan;
    struct vzcaps_config_result r;
    const struct cfg_opts *opts; /* what r was made with (the chosen name's); NULL when nothing was configured */
    enum launch_step step;
    int rc;                  /* LAUNCH_CANNOT_START: 126/127; LAUNCH_NO_LIBRARY: 1 not found, 2 not loadable */
    char library[4096];
    char arch[32];           /* the target's slice (LAUNCH_REFUSED_TARGET and after) */
    char why[9000];          /* why it stopped where it did */
    enum launch_gate verdict;
    char verdict_why[9000];  /* the verdict in words */
};
/* The decision for rq (rq->o.exe becomes the name the configuration is for). Reads the files
 * and the environment; starts nothing. Returns j->verdict. */
enum launch_gate launch_job_decide(struct launch_request *rq, struct launch_job *j);
/* The decision for a job that starts name by name (check --strict): what PATH finds, a shim of
 * any installation (with that installation's library), then launch_job_decide as the shim takes
 * it; no name, or none here: the configuration alone. */
enum launch_gate launch_job_gate(const struct cfg_opts *o, const char *name, struct launch_job *j);
void launch_job_free(struct launch_job *j);

/* start.c: one workload started with the library (vzcaps run, and a shim started as NAME) */
/* Plans, checks and starts rq->cmd (execve: returns only when it cannot start, or for a dry run):
 * an exit status. */
int launch_run(struct launch_request *rq);

#endif
