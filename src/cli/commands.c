/* The command table: every subcommand's options, arguments, defaults, exit statuses, group
 * and one-line summary, in one place. It drives the parsing (cli_validate_args runs before
 * every command: unknown options, missing values and "did you mean"), `vzcaps help [X]`, the
 * man page (`vzcaps __man`, generated at build time) and, through options.c, the bash,
 * zsh and fish completions (`vzcaps __completions SHELL`); help.c reads it (a command line checked
 * against it, help, the man page and usage errors). Nothing here calls another file.
 * Never: documents an option the parsers do not take (a test compares both ways). */
#include "commands.h"

#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define END {0, 0, 0, 0}

const char cli_required[] = "required";

static const struct opt_spec run_opts[] = {
    {"--profile", "PROFILE", "use section [PROFILE] of the config file (VZCAPS_PROFILE)", NULL},
    {"--family", "auto|off|FAMILY", "the Apple family to answer as: auto (the host chip's own), off, or 1001..1010 (VZCAPS_APPLE_FAMILY_MAX)",
     "auto when nothing else configures vzcaps for CMD"},
    {"--inherit", NULL, "keep the injection in CMD's child processes (VZCAPS_INHERIT=1)", NULL},
    {"--inherit-matching", NULL, "keep the injection only in child processes a config section matches and that can load it "
     "(VZCAPS_INHERIT=matching); needs no SIP decision", NULL},
    {"--inherit-anyway", NULL, "macOS: keep it even where SIP is not enabled and arm64e children would be terminated", NULL},
    {"--verify", NULL, "run `vzcaps verify` first and refuse to start when an unlocked path fails", NULL},
    {"--library", "PATH", "inject this library instead of the one installed with the command", NULL},
    {"--dry-run", NULL, "print, instead of running it, one line a shell runs as it is: env VAR=value... CMD ARGS "
                        "(VAR=value... ./CMD ARGS for a CMD with '=', which env would take for a variable)", NULL},
    END};
/* The options that choose the configuration view (OPT_VIEW in cli.h), shared by check, doctor and
 * inspect; --exe is theirs to describe (inspect has none). */
#define CONFIG_OPT {"--config", "FILE", "config file (VZCAPS_CONFIG); default: the library's search order", NULL}, \
                   {"--profile", "PROFILE", "section to use (VZCAPS_PROFILE)", NULL}
#define VIEW_OPTS {"--chip", "BRAND", "host chip brand string, e.g. \"Apple M2 Pro\" (VZCAPS_HOST_CHIP)", "detected"}, \
                  {"--family", "auto|off|FAMILY", "as vzcaps run --family (auto, off, or 1001..1010)", NULL}, \
                  {"--bare", NULL, "what the library alone does with this environment (no implied --family auto)", NULL}
static const struct opt_spec check_opts[] = {
    CONFIG_OPT,
    {"--exe", "PROGRAM", "executable base name that picks a section by its match patterns (repeated with --strict: each one is checked)", NULL},
    VIEW_OPTS,
    {"--json", NULL, "one JSON object instead of the text (with --strict: \"verdict\" unlocked or stock, and \"reason\")", NULL},
    {"--strict", NULL, "a gate for CI: exit 1 when a job starting PROGRAM by name would run it stock (refused, off, out of scope, "
                       "nothing above what the guest answers, PATH finding it past its shim, no library the shim can load, the "
                       "loader ignoring the library there) or not start, or PROGRAM is a typo of a known client; the reason on stderr", NULL},
    END};
static const struct opt_spec doctor_opts[] = {
    CONFIG_OPT,
    {"--exe", "PROGRAM", "the executable whose profile to show", NULL},
    VIEW_OPTS,
    {"--json", NULL, "one JSON object instead of the text", NULL},
    {"--bundle", "DIR", "write the first-run bundle to DIR instead (summary.md with the verdict, SHA256SUMS) and DIR.tar.gz to attach", NULL},
    {"--timeout", "SECONDS", "stop a program it runs (its whole process group) that takes longer; 0: no limit", "600"},
    END};
static const struct opt_spec launchd_opts[] = {
    {"--label", "LABEL", "the job's label (letters, digits, '.', '_' and '-'), not with --list", REQUIRED},
    {"--profile", "PROFILE", "section of the config file (VZCAPS_PROFILE)", NULL},
    {"--family", "auto|off|FAMILY", "as vzcaps run --family", "auto when nothing else configures vzcaps"},
    {"--inherit", NULL, "keep the injection in the program's children (VZCAPS_INHERIT=1)", NULL},
    {"--keep-alive", NULL, "launchd starts the program again whenever it exits (KeepAlive)", NULL},
    {"--install", NULL, "write ~/Library/LaunchAgents/LABEL.plist and bootstrap it into gui/UID, or user/UID when there is "
                        "no GUI login session (launchctl print gui/UID fails); a loaded LABEL is booted out first",
     "print the plist"},
    {"--force", NULL, "with --install: replace an existing LABEL.plist that differs", NULL},
    {"--remove", NULL, "bootout the job and delete its plist (one vzcaps wrote; --force for another)", NULL},
    {"--list", NULL, "list the agents vzcaps wrote in ~/Library/LaunchAgents: LABEL, plist and program, tab-separated", NULL},
    {"--json", NULL, "with --list: {\"dir\", \"agents\": [{\"label\", \"plist\", \"program\"}]} instead", NULL},
    END};
static const struct opt_spec inspect_opts[] = {
    CONFIG_OPT,
    VIEW_OPTS,
    {"--json", NULL, "{\"files\": [{\"path\", \"slices\": [...]}]} instead of the text", NULL},
    END};
static const struct opt_spec report_opts[] = {
    {"--stock", "FILE", "llama-bench JSON of the stock guest (repeatable)", NULL},
    {"--unlocked", "FILE", "llama-bench JSON of the unlocked guest (repeatable)", NULL},
    {"--host", "FILE", "llama-bench JSON of the host (repeatable)", NULL},
    {"--json", NULL, "{\"rows\": [...], \"capabilities\": {...}} instead of the text", NULL},
    {"--svg", "FILE", "also write the chart; - for standard output", NULL},
    {"--csv", "FILE", "also write the table as CSV; - for standard output", NULL},
    {"--md", "FILE", "also write the table as Markdown; - for standard output", NULL},
    {"--force", NULL, "replace an existing output file vzcaps did not write (Markdown and SVG files vzcaps report "
                      "wrote carry a marker and are replaced without it; CSV files only with it)", NULL},
    END};
static const struct opt_spec bench_opts[] = {
    {"-m", "MODEL", "the GGUF model", REQUIRED},
    {"--llama-bench", "PATH", "the llama-bench to run", "llama-bench on PATH"},
    {"-p", "N", "prompt tokens", "512"}, {"-n", "N", "generated tokens", "128"}, {"-r", "N", "repetitions", "10"},
    {"--out", "DIR", "the bundle directory (new or empty)", "vzcaps-bench-<UTC time>"},
    {"--profile", "PROFILE", "section of the config file for the unlocked run", NULL},
    {"--mode", "guest|host", "guest (stock and unlocked) or host (once, stock, on bare metal)", "guest"},
    {"--check-output", NULL, "require the output check", "on when llama-perplexity is found"},
    {"--no-check-output", NULL, "skip the output check", NULL},
    {"--llama-perplexity", "PATH", "the llama-perplexity for the output check", "next to llama-bench, else on PATH"},
    {"--timeout", "SECONDS", "stop a run (its whole process group) that takes longer; 0: no limit", "3600"},
    {"--json", NULL, "print the bundle's summary.json instead of the table", NULL},
    END};
static const struct opt_spec probe_opts[] = {
    {"--json", NULL, "one JSON object instead of the table", NULL},
    {"--profile", "PROFILE", "section of the config file for the unlocked child", NULL},
    {"--replay", "STOCK.json UNLOCKED.json", "render two saved child outputs instead of probing", NULL},
    {"--timeout", "SECONDS", "stop a child (its whole process group) that takes longer; 0: no limit", "300"},
    END};
static const struct opt_spec verify_opts[] = {
    {"--json", NULL, "one JSON object instead of the table", NULL},
    {"--profile", "PROFILE", "section of the config file for the unlocked children", NULL},
    {"--replay", "RESULT.json", "render a saved result instead of verifying", NULL},
    {"--timeout", "SECONDS", "stop a child (its whole process group) that takes longer; 0: no limit", "300"},
    END};
static const struct opt_spec prepare_opts[] = {
    {"--into", "DIR", "where the copy goes", "~/Library/Application Support/vzcaps/prepared"},
    {"--yes", NULL, "do it (without it: print what it would do and what is given up; write nothing)", NULL},
    END};
static const struct opt_spec shims_opts[] = {
    {"--dir", "DIR", "the shim directory (created when missing; never a link); put it first on PATH", REQUIRED},
    {"--list", NULL, "list the entries vzcaps made in DIR and the real program each runs, tab-separated (no NAME)", NULL},
    {"--remove", NULL, "remove the entries NAME... (only ones vzcaps made)", NULL},
    {"--force", NULL, "also take over (or with --remove, remove) shims another copy of vzcaps made; never anything else", NULL},
    END};
static const struct opt_spec stats_opts[] = {
    {"--json", NULL, "one JSON object instead of the table: hooked, left_stock, skipped, programs, left_stock_reasons, log_files", NULL},
    {"--since", "TIME", "only records from TIME on: unix seconds, ISO 8601 UTC (2026-12-01T20:00:00Z, 2026-12-01) or a time ago (90s, 30m, 2h, 7d)", "every record"},
    {"--log-file", "PATH", "read this log (and PATH.1)", "VZCAPS_LOG_FILE, else the config file's log_file"},
    {"--config", "FILE", "the config file whose log_file names the log (VZCAPS_CONFIG); default: the library's search order", NULL},
    {"--require", NULL, "exit 1 unless every NAME ran and got raised answers in every run (a NAME with / by its real path; NAME=COUNT: exactly COUNT runs)", NULL},
    {"--zero", NULL, "start a fresh count (as ccache -z): a zero mark at the log's end, then the log moved to PATH.1", NULL},
    END};
static const struct opt_spec no_opts[] = {END};

const struct cmd_spec cli_commands[] = {
    {"run", cmd_run, "-- CMD [ARGS]", ARGS_COMMAND, run_opts,
     "Runs CMD with the library injected (DYLD_INSERT_LIBRARIES on macOS, LD_PRELOAD on Linux, after any\n"
     "other libraries already there, exactly once). The library is looked for next to this command, then\n"
     "in ../lib. The configuration is checked first, exactly as the library will read it for CMD; a\n"
     "configuration the library would refuse stops here instead of running stock. A Mach-O CMD is read\n"
     "first: a CPU slice the library lacks (e.g. arm64e) is refused, since dyld would abort it; a\n"
     "CMD that will ignore the library (its signature, a __RESTRICT section, FairPlay encryption,\n"
     "setuid/setgid bits) gets a warning, naming vzcaps prepare where a copy helps. A #! script is\n"
     "read too: for #!/usr/bin/env NAME (env by that path only), NAME found on PATH is started directly (macOS removes the\n"
     "injection at env, which SIP protects); an interpreter SIP protects gets a warning. With\n"
     "--inherit on macOS, a library without an arm64e slice is refused unless SIP is enabled. The\n"
     "command replaces this process (exec), so the exit status and signals are CMD's own.",
     "CMD's own; 125 when vzcaps refused to start it; 126 when it is not a regular executable file;\n"
     "127 when it is not found; 2 for a malformed command line.",
     "vzcaps run -- llama-bench -m model.gguf",
     GROUP_USE, "run a program with the host chip's Metal answers", "exec start launch use"},
    {"check", cmd_check, "", ARGS_NONE, check_opts,
     "Validates a configuration and explains what `vzcaps run` would do for executable PROGRAM on chip\n"
     "BRAND (its implied --family auto included), or with --bare what the library alone would do with\n"
     "this environment: each effective claim and where it came from.",
     "0 when the configuration is valid (even if this host cannot apply it), 1 when it is not or, with\n"
     "--strict, when PROGRAM would run stock or not start; 2 for a malformed command line (--exe given\n"
     "more than once without --strict, or with --json).",
     "vzcaps check --exe llama-server --chip \"Apple M2 Pro\" --json",
     GROUP_CHECK, "validate a configuration and explain what run would do for a program", "validate config lint explain show"},
    {"launchd", cmd_launchd, "-- CMD [ARGS]", ARGS_COMMAND, launchd_opts,
     "Writes a LaunchAgent plist for one workload: ProgramArguments, EnvironmentVariables with the\n"
     "library and the settings, RunAtLoad, logs under ~/Library/Logs/vzcaps/. The program and the\n"
     "config file are written as given, made absolute against the current directory, links not\n"
     "resolved (a Homebrew bin/ path stays valid across upgrades); every argument reads back byte for\n"
     "byte. The plist carries a comment by which --list, --remove and a later --install recognise it.\n"
     "Never uses `launchctl setenv`, which would inject every process of the session. Two more forms\n"
     "take no CMD: vzcaps launchd --label LABEL --remove, and vzcaps launchd --list (no --label).",
     "0; 1 when it cannot write, finds a different plist without --force, or --remove finds no job or\n"
     "one vzcaps did not write; 2 for arguments a plist cannot carry or a malformed command line.",
     "vzcaps launchd --label com.me.llama --keep-alive --install -- llama-server -m model.gguf",
     GROUP_USE, "write, install, list or remove LaunchAgents that run a program through vzcaps", "agent service daemon launchctl"},
    {"shims", cmd_shims, "NAME...", ARGS_POSITIONAL, shims_opts,
     "Makes DIR a directory of entries named after client programs (llama-server, ollama, python3...),\n"
     "each a link to this command, as ccache's masquerade directory does. Started as NAME, vzcaps\n"
     "finds the next NAME on PATH after DIR (never DIR itself, however spelled or linked, and never\n"
     "another shim: no loop) and runs it exactly as vzcaps run -- NAME ARGS would, with the profile\n"
     "the configuration gives NAME. With DIR first on PATH, a script, a Makefile or a Python subprocess\n"
     "that starts NAME gets the injection through any shell, SIP on or off, and nothing else in the\n"
     "process tree loads the library. An existing file at DIR/NAME that vzcaps did not make is never\n"
     "replaced; --remove removes only entries vzcaps made. A shim whose real program is missing exits\n"
     "127 with one line. A shim never breaks a job: where vzcaps run would refuse (exit 125: the\n"
     "configuration is refused or unusable, no library), the shim starts the real program stock, with\n"
     "the library's one line saying why (vzcaps: left stock for NAME: WHY), and exits with the\n"
     "program's own status; vzcaps check --strict --exe NAME is how CI finds out.",
     "0; 1 when an entry could not be made or removed (a file vzcaps did not make, or another copy's shim\n"
     "without --force, is in the way; DIR is a link or not a directory; nothing is left half-made); 2 for a\n"
     "malformed command line or NAME (a '/', a leading '.' or '-', the record suffix .vzcaps-shim, over\n"
     "224 bytes, a typo of a known client not on PATH).",
     "vzcaps shims --dir ~/.vzcaps/shims llama-server llama-cli python3",
     GROUP_SETUP, "make a directory of program names that start the real program through vzcaps run",
     "shim masquerade wrapper path"},
    {"host", cmd_host, "status|enable|disable", ARGS_POSITIONAL, no_opts,
     "On a macOS host (not in a guest), reads, sets or deletes the user preference\n"
     "ForceUnrestrictedDeviceFeatureLevel in com.apple.gpusw.ParavirtualizedGraphics, which some guides\n"
     "set before starting VMs. Running VMs must be restarted to see a change.",
     "0; 3 where it cannot work (Linux, or a guest); 2 for a malformed command line.", "vzcaps host status",
     GROUP_SETUP, "on a Mac host, read or set the GPU preference some VM guides use", "vm"},
    {"doctor", cmd_doctor, "[-- CMD [ARGS]]", ARGS_REST, doctor_opts,
     "One screen on where this machine stands: guest or host, host chip and how it was found, OS\n"
     "version, SIP, the library and its slices, the config file, the effective profile, the library's\n"
     "own lines from one run of a Metal program through `vzcaps run` (CMD, or on macOS this command's\n"
     "device probe): what it was configured to do and which device class it hooked, and known\n"
     "pitfalls that apply (quarantined files, arm64e clients). --bundle DIR writes the first-run\n"
     "bundle instead, into a new or empty DIR (never through a link), and DIR.tar.gz, the one file to\n"
     "attach to an issue; its summary.md lists every step and its result. With -- CMD ARGS the bundle also runs CMD twice,\n"
     "stock and through `vzcaps run`, and puts their exit statuses, outputs and ggml_metal_device_init:\n"
     "lines side by side. Steps that need macOS are recorded as \"not available on this system\"\n"
     "elsewhere (skipped, not failed).",
     "0; 1 when a file of the bundle could not be written or one of its steps failed (named in\n"
     "summary.md and on standard error); 2 for a malformed command line.",
     "vzcaps doctor --bundle vzcaps-first-run -- llama-cli -m model.gguf -p hi -n 8",
     GROUP_CHECK, "show where this machine stands and which known pitfalls apply", "status info diagnose diag env"},
    {"inspect", cmd_inspect, "FILE...", ARGS_POSITIONAL, inspect_opts,
     "Reads Mach-O files (thin or universal, or an .app bundle's main executable) and reports per slice\n"
     "the architecture, minimum OS, code signature and hardened runtime, whether DYLD_INSERT_LIBRARIES\n"
     "will be honoured, linked Metal-related libraries, the capability selectors it uses, one verdict\n"
     "per recognised client, the images whose calls the caller scope answers stock, and for an\n"
     "executable the launch plan vzcaps run would take (what starts, what dyld ignores there).",
     "0 when every file was read; 1 when any was unreadable, malformed, truncated or over 1 GiB, or\n"
     "the configuration is invalid; 2 for a malformed command line.",
     "vzcaps inspect /opt/homebrew/bin/llama-server",
     GROUP_CHECK, "tell whether a program will load the library, and what it asks Metal", "otool analyze analyse scan"},
    {"report", cmd_report, "(BUNDLE_DIR... | --stock FILE --unlocked FILE [--host FILE])", ARGS_POSITIONAL, report_opts,
     "Recomputes the benchmark table from llama-bench JSON files (rows merged by test): the median of\n"
     "samples_ts per test, the range, unlocked/stock speed-up and unlocked/host percentage, and what\n"
     "the Metal backend reported in each run (from FILE.stderr: the GPU family line, the shim). A\n"
     "directory (a `vzcaps bench` bundle, or any) is read by file name: stock*.json, unlocked*.json,\n"
     "host*.json.",
     "0; 1 on any input or output error (named, before anything is printed); 2 for a malformed command\n"
     "line.",
     "vzcaps report --svg chart.svg evidence/",
     GROUP_MEASURE, "recompute the speed-up table and chart from benchmark results", "chart table results"},
    {"bench", cmd_bench, "[-- LLAMA_BENCH_ARGS]", ARGS_REST, bench_opts,
     "Runs llama-bench stock and through `vzcaps run` (guest mode) or once stock (host mode) and writes\n"
     "an evidence bundle: the raw JSON and stderr of each run, environment.json, capabilities.json,\n"
     "check-output.json, results.csv, results.md, chart.svg, summary.json and SHA256SUMS. The output\n"
     "check compares perplexity on the CPU with the unlocked GPU; more than 2 % apart is a failure.\n"
     "Arguments after -- go to every llama-bench run and are recorded. Each run's output streams into\n"
     "its files, at most 16 MiB per stream (noted in summary.json); a run that fails or a stop signal\n"
     "leaves the bundle marked INCOMPLETE, and the same command replaces it.",
     "0; 1 when a run fails or the output check fails; 2 for a malformed command line.",
     "vzcaps bench -m model.gguf --out evidence -- -t 8 -fa 1",
     GROUP_MEASURE, "benchmark llama-bench stock and unlocked into an evidence bundle", "benchmark perf speed"},
    {"probe", cmd_probe, "", ARGS_NONE, probe_opts,
     "macOS: creates the default Metal device in two child processes, stock and with the library, and\n"
     "shows every answer side by side with the llama.cpp gates each column implies.",
     "0; 1 when the library changed an answer the profile did not ask for; 3 without a macOS Metal\n"
     "device; 2 for a malformed command line.",
     "vzcaps probe --json",
     GROUP_PROVE, "show Metal's answers stock and with the library, side by side", "caps capabilities query"},
    {"verify", cmd_verify, "", ARGS_NONE, verify_opts,
     "macOS: in child processes with the library, one per check, compiles and runs compute kernels for\n"
     "each path the profile unlocks and compares every element with a CPU reference; also checks\n"
     "newBufferWithBytesNoCopy over an mmapped file, stock and unlocked. The verdict is cached for\n"
     "`vzcaps run --verify`.",
     "0; 1 when an unlocked path computes wrong results; 3 without a macOS Metal device; 2 for a\n"
     "malformed command line.",
     "vzcaps verify",
     GROUP_PROVE, "run compute kernels on every unlocked path and check the results", "test selftest self-test validate-gpu"},
    {"stats", cmd_stats, "[NAME...]", ARGS_POSITIONAL, stats_opts,
     "Shows which processes the library hooked, by program and GPU family, and which it left stock,\n"
     "with the reason, from the log it appends one line per process to when the config file's top\n"
     "level has log_file = PATH or VZCAPS_LOG_FILE=PATH is set (the variable wins; off by default):\n"
     "PATH.1 (the log before it was last rotated, at 1 MiB) and then PATH. Run it after a job, as\n"
     "ccache -s. A line that is not a record (malformed, longer than 1024 bytes, an unknown version)\n"
     "is counted as skipped and named on standard error; a log file over 16 MiB, a link, a FIFO or a\n"
     "directory at the path is refused. Each file is read as a stream, one line at a time. --require\n"
     "NAME... is the proof after a job: one line per NAME that never ran, ran stock or got no answer above\n"
     "the device's own (the library records the first such answer; --json: per NAME and per run); a torn\n"
     "record that may be its run, or records since the zero mark lost to rotation, fail it too. It cannot\n"
     "see a program started past its shim (by its path, no library: no record): NAME=COUNT fails unless\n"
     "exactly COUNT runs were recorded.",
     "0; 1 when no log is configured or a log file could not be read (named), or --require fails, or\n"
     "--zero refused a file or could not write its mark; 2 for a malformed command line or --since value.",
     "vzcaps stats --since 2h --json",
     GROUP_PROVE, "show which processes were hooked and which were left stock, and why", "log usage hits summary"},
    {"prepare", cmd_prepare, "PATH...", ARGS_POSITIONAL, prepare_opts,
     "Makes a private copy of a program that ignores the library because it is signed with the hardened\n"
     "runtime: PATH is a Mach-O file or an .app bundle; every Mach-O file in the copy is re-signed ad\n"
     "hoc by vzcaps's own signer, nested code first, without the hardened runtime, library validation or\n"
     "entitlements, every bundle in it sealed again (a new _CodeSignature/CodeResources), then verified.\n"
     "A link given as PATH is read through; the copy is a real file. The original is never modified; only\n"
     "a copy vzcaps made is replaced (whole); a destination holding the source or shared by two inputs\n"
     "is refused before anything is written.",
     "0; 1 when it would need --yes, or on any error (nothing half-written left behind); 2 for a\n"
     "malformed command line.",
     "vzcaps prepare --yes /Applications/Ollama.app",
     GROUP_USE, "make a private copy of a hardened app that will load the library", "resign codesign unharden copy"},
    {"help", cmd_help, "[COMMAND]", ARGS_POSITIONAL, no_opts,
     "Without COMMAND: every command, one line each, grouped by what it is for. With COMMAND: its\n"
     "synopsis, what it does, its options, exit status and an example (the same as vzcaps COMMAND\n"
     "--help). man vzcaps has all of it in one page.",
     "0; 2 for an unknown command or a malformed command line.",
     "vzcaps help run",
     GROUP_NONE, "show the commands, or one command's options, exit status and an example", "usage manual man"},
    {0},
};

_Static_assert(sizeof cli_commands / sizeof cli_commands[0] <= CLI_MAX_COMMANDS, "raise CLI_MAX_COMMANDS");

const struct cmd_spec *cli_find_command(const char *name)
{
    for (const struct cmd_spec *c = cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

const struct env_spec cli_environment[] = {
    {"VZCAPS_APPLE_FAMILY_MAX", "auto, off, 0, or 1001..1010 (apple1..apple10). Enables the library; auto is the host chip's real family."},
    {"VZCAPS_MAX_THREADGROUP_MEMORY", "bytes; a floor, never above the chip's documented 32768."},
    {"VZCAPS_RECOMMENDED_WORKING_SET_SIZE", "bytes; a floor, never above physical memory."},
    {"VZCAPS_EXTRA_FAMILIES", "comma list of non-Apple families (metal3, metal4, mac2, ...) also reported as supported."},
    {"VZCAPS_HOST_CHIP", "brand string such as \"Apple M2 Pro\"; overrides machdep.cpu.brand_string."},
    {"VZCAPS_UNSAFE_BEYOND_HARDWARE", "1: do not clamp to the host chip (physical memory still bounds the working set)."},
    {"VZCAPS_INHERIT", "1: child processes keep the library (default: they start stock)."},
    {"VZCAPS_LOG", "quiet: no line on standard error (the unified log still gets it); verbose: also the start-up line (normal: one line, when the first device is hooked)."},
    {"VZCAPS_CALLERS", "blank-separated globs of image base names whose calls get the profile's answers (default *)."},
    {"VZCAPS_STOCK_CALLERS", "globs of images whose calls always get the stock answers, checked first (default libtorch_cpu.dylib libtorch_cpu.so; none empties it)."},
    {"VZCAPS_CONFIG", "the config file to use instead of the search order under FILES (XDG_CONFIG_HOME or ~/.config, then /opt/homebrew/etc, then /usr/local/etc)."},
    {"VZCAPS_PROFILE", "the config section to use."},
    {"VZCAPS_LOG_FILE", "absolute path or ~/PATH: the stats log, one JSON line per process hooked or left stock (wins over the config file's log_file; empty: off)."},
    {"TART_METAL_*, LUME_METAL_*", "APPLE_FAMILY_MAX, MAX_THREADGROUP_MEMORY and RECOMMENDED_WORKING_SET_SIZE under the existing shims' names, unless VZCAPS_ variables configure claims."},
    {0, 0},
};
