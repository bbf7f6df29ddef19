/* The vzcaps command: dispatch, help, and the configuration helpers every subcommand shares.
 * Owns: the command table and its help text. Never: duplicates a core decision. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

__attribute__((used)) static const char *const self_marker = VZCAPS_SELF_MARKER " command " VZCAPS_VERSION;

struct command {
    const char *name;
    int (*fn)(int, char **);
    const char *synopsis;
    const char *help;
};

static const struct command commands[] = {
    {"run", cmd_run, "run [--profile NAME] [--family auto|N|off] [--inherit] [--verify] [--library PATH] [--dry-run] -- CMD [ARGS]",
     "Runs CMD with the library injected (DYLD_INSERT_LIBRARIES on macOS, LD_PRELOAD on Linux,\n"
     "appended to any existing value). The library is looked for next to this command, then in\n"
     "../lib. The configuration is checked first, exactly as the library will read it for CMD;\n"
     "a configuration the library would refuse stops here (exit 125) instead of running stock.\n"
     "A Mach-O CMD is read first: a CPU slice the library lacks (e.g. arm64e) is refused, since\n"
     "dyld would abort it; a hardened CMD that will ignore the library gets a warning.\n"
     "With neither --family, --profile, a VZCAPS_APPLE_FAMILY_MAX variable nor a config section\n"
     "for CMD, --family auto is implied. The command replaces this process (exec), so the exit\n"
     "status and signals are CMD's own.\n"
     "  --profile NAME   use section [NAME] of the config file (VZCAPS_PROFILE)\n"
     "  --family VALUE   auto, off, or an Apple family 1001..1010 (VZCAPS_APPLE_FAMILY_MAX)\n"
     "  --inherit        keep the injection in CMD's child processes (VZCAPS_INHERIT=1)\n"
     "  --verify         run `vzcaps verify` first and refuse to start when an unlocked path fails\n"
     "  --library PATH   inject this library instead of the one installed with the command\n"
     "  --dry-run        print, instead of running it, one line a shell runs as it is:\n"
     "                   env VAR=value... CMD ARGS (every word quoted; control bytes as $'\\xNN')\n"},
    {"check", cmd_check, "check [--config F] [--profile P] [--exe NAME] [--chip BRAND] [--family V] [--bare] [--json]",
     "Validates a configuration and explains what `vzcaps run` would do for executable NAME on\n"
     "chip BRAND (including its implied --family auto when nothing else configures vzcaps), or\n"
     "with --bare what the library alone would do with this environment: each effective claim\n"
     "and where it came from. Exit 0 when the configuration is valid (even if this host cannot\n"
     "apply it), 1 when it is not.\n"
     "  --family V     as vzcaps run --family (auto, off, or 1001..1010)\n"
     "  --bare         the library's view: no implied --family\n"
     "  --config F     config file (VZCAPS_CONFIG); default: the library's search order\n"
     "  --profile P    section to use (VZCAPS_PROFILE)\n"
     "  --exe NAME     executable base name that picks a section by its match patterns\n"
     "  --chip BRAND   host chip brand string, e.g. \"Apple M2 Pro\" (VZCAPS_HOST_CHIP)\n"
     "  --json         one JSON object: enabled, apple_family_max, max_threadgroup_memory,\n"
     "                 recommended_working_set_size, extra_families, host_chip, profile, notes\n"},
    {"launchd", cmd_launchd, "launchd --label LABEL [--profile P] [--family V] [--inherit] [--keep-alive] [--install [--force]|--remove] -- CMD [ARGS]",
     "Writes a LaunchAgent plist for one workload: ProgramArguments, EnvironmentVariables with the\n"
     "library and the settings, RunAtLoad, logs under ~/Library/Logs/vzcaps/. To stdout by\n"
     "default; --install writes ~/Library/LaunchAgents/LABEL.plist (atomically, mode 0644) and\n"
     "bootstraps it on macOS, or prints the launchctl commands elsewhere; --remove reverses\n"
     "--install (exit 1 when the job is not installed).\n"
     "Never uses `launchctl setenv`, which would inject every process of the session.\n"
     "  --inherit      keep the injection in the program's children (VZCAPS_INHERIT=1), e.g. an\n"
     "                 Ollama server whose runners do the GPU work\n"
     "  --keep-alive   launchd starts the program again whenever it exits (KeepAlive)\n"
     "  --force        replace an existing LABEL.plist that differs (otherwise exit 1)\n"
     "The program (found on PATH now if not given with a '/'), the config file and the library\n"
     "are written as absolute paths, checked when the plist is made.\n"
     "Every argument reads back from the plist byte for byte; one that XML cannot carry (invalid\n"
     "UTF-8, control characters other than tab, LF and CR, U+FFFE/U+FFFF) is refused (exit 2).\n"},
    {"host", cmd_host, "host status|enable|disable",
     "On a macOS host (not in a guest), reads, sets or deletes the user preference\n"
     "ForceUnrestrictedDeviceFeatureLevel in com.apple.gpusw.ParavirtualizedGraphics, which some\n"
     "guides set before starting VMs. Running VMs must be restarted to see a change.\n"},
    {"doctor", cmd_doctor, "doctor [--exe NAME] [--chip BRAND] [--family V] [--config F] [--profile P] [--bare] [--json] [--bundle DIR]",
     "One screen on where this machine stands: guest or host, host chip and how it was found, OS\n"
     "version, the library and its slices, the config file, the effective profile for NAME, and\n"
     "known pitfalls that apply. The profile is what `vzcaps run` would apply (--bare: the library\n"
     "alone); --chip, --family, --config and --profile as in check.\n"
     "  --bundle DIR   write the first-run bundle to DIR instead: sw_vers, doctor and check JSON,\n"
     "                 versions and SHA-256 of the command and library, inspect of both, probe and\n"
     "                 verify JSON, a dyld trace of one injected child, the library's unified-log\n"
     "                 lines, summary.md (first line: WORKS, PARTIAL, DOES NOT WORK, CANNOT TELL or\n"
     "                 NOT ON MACOS, and why) and SHA256SUMS. No environment, user or host names;\n"
     "                 the home directory is written as ~. Attach it to an issue.\n"},
    {"inspect", cmd_inspect, "inspect [--profile P] [--family V] [--chip BRAND] [--config F] [--bare] [--json] [--] FILE...",
     "Reads Mach-O executables (thin or universal, or an .app bundle) and reports per slice the\n"
     "architecture, minimum OS, code signature and hardened runtime, whether DYLD_INSERT_LIBRARIES\n"
     "will be honoured, linked Metal-related libraries, the Metal capability selectors it uses,\n"
     "the clients recognised and what the effective profile changes for them. Exit 0 when every\n"
     "file was read, 1 when any was unreadable, malformed or truncated (files over 1 GiB are\n"
     "refused from their size).\n"},
    {"report", cmd_report, "report [--json] [--svg F] [--csv F] [--md F] (BUNDLE_DIR... | --stock FILE --unlocked FILE [--host FILE])",
     "Recomputes the benchmark table from `vzcaps bench` bundles or from llama-bench JSON files\n"
     "(each flag may repeat; rows are merged by test): the median of samples_ts per test, the\n"
     "sample range, unlocked/stock speed-up and unlocked/host percentage. A FILE.stderr next to\n"
     "each FILE.json is read for what the Metal backend reported. A guest bundle and a host\n"
     "bundle given together make one table with all three columns.\n"
     "  --json     {\"rows\": [{\"test\", \"stock\", \"unlocked\", \"host\", \"speedup\", \"percent_of_host\", ...}]}\n"
     "  --svg F    also write the chart (a panel per test, and speed-up and percent of host);\n"
     "             --csv F, --md F the table; F = - writes it to standard output instead\n"
     "Exit 0, or 1 on any input or output error (named, before anything is printed).\n"},
    {"bench", cmd_bench, "bench -m MODEL [--llama-bench PATH] [-p N] [-n N] [-r N] [--out DIR] [--profile P] [--mode guest|host] [--[no-]check-output] [--llama-perplexity PATH] [-- LLAMA_BENCH_ARGS]",
     "Runs llama-bench stock and through `vzcaps run` (guest mode) or once stock (host mode) and\n"
     "writes an evidence bundle to DIR (default vzcaps-bench-<UTC time>): stock/unlocked/host .json\n"
     "and .stderr, environment.json (system, llama.cpp build, SHA-256 of model, llama-bench and\n"
     "library, effective profile), capabilities.json (what the Metal backend reported in each run),\n"
     "check-output.json, results.csv, results.md, chart.svg and SHA256SUMS.\n"
     "Output check (on when llama-perplexity is next to llama-bench or on PATH): perplexity of the\n"
     "same model over a fixed text, CPU (-ngl 0) against the unlocked GPU; more than 2 % apart is a\n"
     "failure (exit 1), so a fast but wrong run never looks like a success.\n"
     "Arguments after -- (e.g. -- -t 8 -fa 1) go to every llama-bench run, stock, unlocked and\n"
     "host, before the measured ones, and are recorded in environment.json and results.md.\n"
     "Defaults: -p 512 -n 128 -r 10, --mode guest, output check on when llama-perplexity is found.\n"},
    {"probe", cmd_probe, "probe [--json] [--profile P] [--replay STOCK.json UNLOCKED.json]",
     "macOS: creates the default Metal device in two child processes, stock and with the library,\n"
     "and shows every answer side by side (changed values marked) with the llama.cpp gates each\n"
     "column implies. A change the profile did not ask for is an error (exit 1). Elsewhere it says\n"
     "it needs a macOS Metal device (exit 3). --replay renders two saved child outputs.\n"},
    {"verify", cmd_verify, "verify [--json] [--profile P] [--replay RESULT.json]",
     "macOS: in a child process with the library, compiles and runs compute kernels for each path\n"
     "the profile unlocks (SIMD-group reductions and shuffles, SIMD-group float and half matrix\n"
     "multiply, bfloat, threadgroup memory at the effective limit) and compares every element with\n"
     "a CPU reference; also checks newBufferWithBytesNoCopy over an mmapped file, stock and unlocked.\n"
     "Exit 1 when an unlocked path fails; the verdict is cached for `vzcaps run --verify`.\n"
     "Elsewhere it says it needs a macOS Metal device (exit 3).\n"},
    {"prepare", cmd_prepare, "prepare [--into DIR] [--yes] [--] PATH...",
     "Makes a private copy of a program that ignores the library because it is signed with the\n"
     "hardened runtime (every notarized app, e.g. the official Ollama app): PATH is a Mach-O file\n"
     "(thin or universal) or an .app bundle; the copy goes to DIR/<name> (default\n"
     "~/Library/Application Support/vzcaps/prepared), and every Mach-O file in it is re-signed ad\n"
     "hoc by vzcaps's own signer, nested code first, without the hardened runtime, library\n"
     "validation or entitlements, then checked with vzcaps's verifier (and codesign on a Mac).\n"
     "The original is never modified; an existing copy is replaced whole, after the new one is\n"
     "complete. Without --yes it prints what it would do and what the copy gives up, writes\n"
     "nothing and exits 1. It ends with the command to run the copy through vzcaps.\n"
     "  --into DIR   where the copy goes\n"
     "  --yes        do it\n"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_overview(FILE *out)
{
    fprintf(out, "vzcaps %s: Metal capability answers for macOS guests, from the host's real chip\n\n"
                 "usage: vzcaps COMMAND [OPTIONS]\n\n", VZCAPS_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  vzcaps %s\n", commands[i].synopsis);
    fprintf(out, "\n  vzcaps help [COMMAND]   vzcaps --version\n\n"
                 "Variables read by the library: VZCAPS_APPLE_FAMILY_MAX, VZCAPS_MAX_THREADGROUP_MEMORY,\n"
                 "VZCAPS_RECOMMENDED_WORKING_SET_SIZE, VZCAPS_EXTRA_FAMILIES, VZCAPS_HOST_CHIP,\n"
                 "VZCAPS_UNSAFE_BEYOND_HARDWARE, VZCAPS_INHERIT, VZCAPS_LOG, VZCAPS_CALLERS, VZCAPS_STOCK_CALLERS,\n"
                 "VZCAPS_CONFIG, VZCAPS_PROFILE.\n"
                 "See man vzcaps.\n");
}

void print_help(const char *cmd, FILE *out)
{
    const struct command *c = find_command(cmd);
    if (!c) {
        print_overview(out);
        return;
    }
    fprintf(out, "usage: vzcaps %s\n\n%s", c->synopsis, c->help);
}

/* A formatted message on the heap (never cut). */
static char *vformat(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (buf)
        vsnprintf(buf, n > 0 ? (size_t)n + 1 : 1, fmt, again);
    va_end(again);
    return buf;
}

char *xformat(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    if (!s) {
        fprintf(stderr, "vzcaps: out of memory\n");
        exit(1);
    }
    return s;
}

const char *esc(const char *s)
{
    static char *ring[16];
    static unsigned next;
    if (!s)
        return "(null)";
    size_t n = strlen(s), need = vzcaps_escape(s, n, NULL, 0);
    char **slot = &ring[next++ % 16];
    char *b = realloc(*slot, need + 1);
    if (!b)
        return "(out of memory)";
    vzcaps_escape(s, n, b, need + 1);
    return *slot = b;
}

static void vline(FILE *out, const char *fmt, va_list ap)
{
    char *msg = vformat(fmt, ap);
    if (msg) {
        fprintf(out, "%s\n", esc(msg));
        free(msg);
    }
}

void eprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(stderr, fmt, ap);
    va_end(ap);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(fmt, ap);
    va_end(ap);
    eprintf("vzcaps %s: %s", cmd, msg ? msg : "out of memory");
    free(msg);
    const struct command *c = find_command(cmd);
    eprintf("usage: vzcaps %s", c ? c->synopsis : "COMMAND [OPTIONS]");
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

void shell_quote(FILE *out, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == strlen(s)) {
        fputs(s, out);
        return;
    }
    /* bytes a terminal would interpret never appear raw: such a value is written as $'...'
     * with \xNN escapes (bash, zsh and ksh read it byte for byte; macOS's /bin/sh is bash) */
    size_t n = strlen(s);
    bool plain = true;
    for (size_t i = 0; i < n && plain;) {
        size_t k = vzcaps_utf8_valid(s + i, n - i);
        unsigned char c = (unsigned char)s[i];
        plain = k && c >= 0x20 && c != 0x7f && !(c == 0xc2 && (unsigned char)s[i + 1] < 0xa0);
        i += k ? k : 1;
    }
    if (plain) {
        fputc('\'', out);
        for (; *s; s++) {
            if (*s == '\'')
                fputs("'\\''", out);
            else
                fputc(*s, out);
        }
        fputc('\'', out);
        return;
    }
    fputs("$'", out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '\'')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('\'', out);
}

/* ---- configuration shared with the library ---- */

/* The environment a child gets: this process's, with the options as VZCAPS_* variables and
 * at most one preload entry. Grown on the heap: no limit on the number or length of entries
 * (every other variable passes through unchanged). */
struct envbuf {
    char **v;
    size_t n, cap;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        eprintf("vzcaps: out of memory");
        exit(EXIT_REFUSED);
    }
    return q;
}

static void env_push(struct envbuf *b, char *entry)
{
    if (b->n + 2 > b->cap)
        b->v = xrealloc(b->v, (b->cap = b->cap * 2 + 64) * sizeof *b->v);
    b->v[b->n++] = entry;
    b->v[b->n] = NULL;
}

static bool env_is(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

/* Removes every entry named name, then appends name=value. */
static void env_set(struct envbuf *b, const char *name, const char *value)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++)
        if (!env_is(b->v[r], name))
            b->v[w++] = b->v[r];
    b->n = w;
    char *entry = xrealloc(NULL, strlen(name) + strlen(value) + 2);
    sprintf(entry, "%s=%s", name, value);
    env_push(b, entry);
}

static size_t preload_dropped; /* duplicate preload entries collapsed by env_build */

static void env_build(struct envbuf *b, const struct cfg_opts *o)
{
    free(b->v);
    memset(b, 0, sizeof *b);
    const char *first_preload = NULL;
    preload_dropped = 0;
    for (char **e = environ; e && *e; e++) {
        if (env_is(*e, preload_var)) {
            if (first_preload) {
                preload_dropped++;
                continue;
            }
            first_preload = *e;
        }
        env_push(b, *e);
    }
    if (!b->v)
        env_push(b, NULL), b->n = 0;
    if (o->config)
        env_set(b, "VZCAPS_CONFIG", o->config);
    if (o->profile)
        env_set(b, "VZCAPS_PROFILE", o->profile);
    if (o->chip)
        env_set(b, "VZCAPS_HOST_CHIP", o->chip);
    if (o->family)
        env_set(b, "VZCAPS_APPLE_FAMILY_MAX", o->family);
    if (o->inherit)
        env_set(b, "VZCAPS_INHERIT", "1");
}

static struct envbuf child_env;

void cli_configure(const struct cfg_opts *o, struct vzcaps_config_result *r)
{
    static char file_buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    env_build(&child_env, o);
    struct machine m;
    machine_facts(&m);
    /* settings that came from options are reported as the options, not as the variables the
     * options travel in */
    static const char *labels[16];
    size_t nl = 0;
    if (o->chip)
        labels[nl++] = "VZCAPS_HOST_CHIP", labels[nl++] = "--chip";
    if (o->family)
        labels[nl++] = "VZCAPS_APPLE_FAMILY_MAX", labels[nl++] = o->family_implied ? "vzcaps run's implied --family" : "--family";
    if (o->inherit)
        labels[nl++] = "VZCAPS_INHERIT", labels[nl++] = "--inherit";
    labels[nl] = labels[nl + 1] = NULL;
    struct vzcaps_inputs in = {0};
    in.envp = (const char *const *)child_env.v;
    in.exe = o->exe;
    in.preload_var = preload_var;
    in.labels = labels;
    in.read_file = vzcaps_read_file;
    in.host.brand = m.brand[0] ? m.brand : NULL;
    in.host.brand_origin = m.brand_origin;
    in.host.physical_memory = m.memory;
    vzcaps_configure(&in, file_buf, sizeof file_buf, r);
}

void cli_configure_run(struct cfg_opts *o, struct vzcaps_config_result *r)
{
    cli_configure(o, r);
    if (!o->family && !o->profile && r->profile.state == VZCAPS_STOCK_UNCONFIGURED) {
        o->family = "auto";
        o->family_implied = true;
        cli_configure(o, r);
    }
}

void cli_configure_view(struct cfg_opts *o, struct vzcaps_config_result *r)
{
    if (o->bare)
        cli_configure(o, r);
    else
        cli_configure_run(o, r);
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

const char *cfg_view_text(const struct cfg_opts *o)
{
    if (o->bare)
        return "what the library does with this environment alone (--bare)";
    if (o->family_implied)
        return "what vzcaps run would do: --family auto implied, since nothing else configures vzcaps here";
    return "what vzcaps run would do (the same as the library with these settings)";
}

void cli_run_argv(char **out, size_t cap, const char *self, const struct cfg_opts *o, char *const *cmd)
{
    size_t n = 0;
    out[n++] = (char *)self;
    out[n++] = "run";
    if (o->profile)
        out[n++] = "--profile", out[n++] = (char *)o->profile;
    if (o->family)
        out[n++] = "--family", out[n++] = (char *)o->family;
    out[n++] = "--";
    for (char *const *a = cmd; *a && n + 1 < cap; a++)
        out[n++] = *a;
    out[n] = NULL;
}

char **cli_child_env(const struct cfg_opts *o, const char *library)
{
    env_build(&child_env, o);
    const char *cur = NULL;
    for (size_t i = 0; i < child_env.n; i++)
        if (env_is(child_env.v[i], preload_var))
            cur = child_env.v[i] + strlen(preload_var) + 1;
    /* other libraries stay, in their order; any copy of ours goes, then ours is appended:
     * the child loads it exactly once */
    size_t cl = cur ? strlen(cur) : 0;
    char *others = xrealloc(NULL, cl + 1), *joined = xrealloc(NULL, cl + strlen(library) + 2);
    others[0] = '\0';
    int k = cur ? vzcaps_strip_library(cur, platform_is_macos ? ":" : ": ", library_file, others, cl + 1) : 0;
    if (k < 0)
        k = 0, others[0] = '\0';
    sprintf(joined, "%s%s%s", others, k > 0 ? ":" : "", library);
    free(others);
    env_set(&child_env, preload_var, joined);
    free(joined);
    return child_env.v;
}

size_t cli_preload_duplicates(void)
{
    return preload_dropped;
}

#ifndef VZCAPS_NO_MAIN
int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("vzcaps %s\n", VZCAPS_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2 && !find_command(argv[2]))
            return usage_error("help", "unknown command \"%s\"", argv[2]);
        print_help(argc > 2 ? argv[2] : "", stdout);
        return 0;
    }
    if (strcmp(cmd, "__probe-child") == 0) /* hidden: the children of probe and verify */
        return child_probe();
    if (strcmp(cmd, "__verify-child") == 0)
        return child_verify(argc - 1, argv + 1);
    const struct command *c = find_command(cmd);
    if (!c) {
        eprintf("vzcaps: unknown command \"%s\"", cmd);
        print_overview(stderr);
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_help(cmd, stdout);
            return 0;
        }
    return c->fn(argc - 1, argv + 1);
}
#endif
