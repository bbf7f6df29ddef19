/* vzcaps doctor --bundle DIR: the first-run bundle, the one thing a person runs on a Mac to
 * show whether vzcaps works there, and the verdict read from it (portable, unit-tested).
 * Never: writes the environment, user or host names, or the home directory's path. */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "../data/jsonread.h"
#include "../common/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- the verdict ---- */

static const struct jv *jv_index(const struct jv *arr, size_t i)
{
    const struct jv *v = arr && arr->type == JV_ARRAY ? arr->child : NULL;
    while (v && i--)
        v = v->next;
    return v;
}

const char *bundle_verdict(bool macos, const char *probe_json, const char *verify_json, char *reason, size_t len)
{
    if (!macos) {
        snprintf(reason, len, "this bundle was made on %s, where there is no Metal device to probe or verify",
                 "a machine that is not a Mac");
        return "NOT ON MACOS";
    }
    char err[200];
    struct jv *probe = probe_json ? jv_parse(probe_json, strlen(probe_json), err, sizeof err) : NULL;
    struct jv *verify = verify_json ? jv_parse(verify_json, strlen(verify_json), err, sizeof err) : NULL;
    const char *verdict;
    const struct jv *changed = jv_get(probe, "changed"), *unexpected = jv_get(probe, "unexpected");
    const struct jv *fams = jv_get(jv_get(probe, "unlocked"), "families");
    if (!probe || !changed || changed->type != JV_ARRAY || !fams) {
        snprintf(reason, len, "the probe did not report the device's answers (see probe.json and probe.json.stderr)");
        verdict = "CANNOT TELL";
        goto out;
    }
    if (unexpected && unexpected->type == JV_ARRAY && unexpected->count) {
        const struct jv *first = jv_index(unexpected, 0);
        snprintf(reason, len, "the library changed answers the profile did not ask for (%s)",
                 first && first->type == JV_STRING ? first->string : "see probe.json");
        verdict = "DOES NOT WORK";
        goto out;
    }
    if (changed->count == 0) {
        snprintf(reason, len, "the unlocked probe reported the same answers as the stock one: the library did not take effect "
                              "(see dyld-trace.txt and unified-log.txt)");
        verdict = "DOES NOT WORK";
        goto out;
    }
    int top = 0; /* the highest Apple family the unlocked device reported */
    for (int f = 1001; f <= 1010; f++) {
        char k[8];
        snprintf(k, sizeof k, "%d", f);
        const struct jv *v = jv_get(fams, k);
        if (v && v->type == JV_BOOL && v->number)
            top = f;
    }
    const struct jv *checks = jv_get(verify, "checks");
    if (!verify || !checks || checks->type != JV_ARRAY) {
        snprintf(reason, len, "the unlocked probe reported Apple%d, but verify did not report results (see verify.json)", top - 1000);
        verdict = "PARTIAL";
        goto out;
    }
    size_t unlocked = 0, failed = 0;
    const char *first_failed = NULL;
    for (const struct jv *c = checks->child; c; c = c->next) {
        const struct jv *u = jv_get(c, "unlocked"), *res = jv_get(c, "result"), *name = jv_get(c, "name");
        if (!u || u->type != JV_BOOL || !u->number)
            continue;
        unlocked++;
        if (res && res->type == JV_STRING && strcmp(res->string, "pass") != 0 && strcmp(res->string, "skip") != 0) {
            failed++;
            if (!first_failed && name && name->type == JV_STRING)
                first_failed = name->string;
        }
    }
    if (failed) {
        snprintf(reason, len, "the unlocked probe reported Apple%d, but %zu unlocked check%s computed wrong results or crashed (first: %s)",
                 top - 1000, failed, failed == 1 ? "" : "s", first_failed ? first_failed : "?");
        verdict = "PARTIAL";
    } else if (!unlocked) {
        snprintf(reason, len, "the unlocked probe reported Apple%d, but verify ran no check of an unlocked path", top - 1000);
        verdict = "PARTIAL";
    } else {
        snprintf(reason, len, "the unlocked probe reported Apple%d, and every unlocked check computed correct results", top - 1000);
        verdict = "WORKS";
    }
out:
    jv_free(probe);
    jv_free(verify);
    return verdict;
}

/* ---- writing the bundle ---- */

static char bundle_dir[4096];

static char *in_bundle(const char *name)
{
    return xformat("%s/%s", bundle_dir, name);
}

static int failures; /* files of the bundle that could not be written whole */

static void write_text(const char *name, const char *text)
{
    char *path = in_bundle(name);
    if (write_text_file(path, text) != 0) {
        eprintf("vzcaps doctor: cannot write %s: %s", path, strerror(errno));
        failures++;
    }
    free(path);
}

/* Runs argv with stdout into NAME and stderr into NAME.stderr (removed when empty); env
 * entries are added to this environment. The wait status, or -1. */
static int run_into(const char *name, char *const argv[], char *const env[])
{
    char *out = in_bundle(name), *err = xformat("%s.stderr", out);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(127);
        dup2(o, 1), dup2(e, 2);
        close(o), close(e);
        for (char *const *x = env; x && *x; x++)
            putenv(*x);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = -1;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = -1;
    struct stat sb;
    if (stat(err, &sb) == 0 && sb.st_size == 0)
        unlink(err);
    free(out);
    free(err);
    return st;
}

static char *read_back(const char *name)
{
    char *path = in_bundle(name), err[4200];
    size_t len;
    char *text = read_text_file(path, &len, err, sizeof err);
    free(path);
    return text;
}

/* Replaces every occurrence of needle (when at least 2 bytes) in *text with repl: 0, or -1
 * (out of memory: *text unchanged). */
static int replace_all(char **text, const char *needle, const char *repl)
{
    size_t nl = needle ? strlen(needle) : 0;
    if (nl < 2 || !strstr(*text, needle))
        return 0;
    size_t count = 0;
    for (const char *p = *text; (p = strstr(p, needle)); p += nl)
        count++;
    char *out = malloc(strlen(*text) + count * strlen(repl) + 1), *w = out;
    if (!out)
        return -1;
    const char *p = *text, *hit;
    while ((hit = strstr(p, needle))) {
        memcpy(w, p, (size_t)(hit - p)), w += hit - p;
        memcpy(w, repl, strlen(repl)), w += strlen(repl);
        p = hit + nl;
    }
    strcpy(w, p);
    free(*text);
    *text = out;
    return 0;
}

/* No personal data: the home directory (and any /Users/NAME of this user) becomes ~. Nothing
 * the bundle runs prints the host name or the environment; the user name appears only in
 * paths, which this covers. */
static void scrub(const char *name)
{
    char *text = read_back(name);
    const char *home = getenv("HOME");
    struct passwd *pw = getpwuid(getuid());
    char *users = pw && pw->pw_name ? xformat("/Users/%s", pw->pw_name) : NULL;
    int rc = text ? 0 : -1;
    if (rc == 0 && home && strcmp(home, "/") != 0)
        rc = replace_all(&text, home, "~");
    if (rc == 0 && pw && pw->pw_dir && strcmp(pw->pw_dir, "/") != 0)
        rc = replace_all(&text, pw->pw_dir, "~");
    if (rc == 0 && users)
        rc = replace_all(&text, users, "~");
    if (rc == 0) {
        write_text(name, text);
    } else { /* a file that could not be scrubbed does not stay in the bundle */
        char *path = in_bundle(name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode)) { /* else: not one it wrote (said above) */
            unlink(path);
            eprintf("vzcaps doctor: %s could not be checked for personal data: removed", path);
            failures++;
        }
        free(path);
    }
    free(users);
    free(text);
}

static const char *const mac_only = "not available on Linux: this part of the bundle needs macOS\n";

int doctor_bundle(const char *dir, const char *exe)
{
    if (strlen(dir) >= sizeof bundle_dir - 64) {
        eprintf("vzcaps doctor: --bundle %s: path too long", dir);
        return 1;
    }
    snprintf(bundle_dir, sizeof bundle_dir, "%s", dir);
    failures = 0;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        eprintf("vzcaps doctor: cannot create %s: %s", dir, strerror(errno));
        return 1;
    }
    char self[4096], library[4096], tried[2400];
    self_path(self, sizeof self);
    bool have_lib = find_library(library, sizeof library, tried, sizeof tried) == 0;
    char *e = (char *)(exe ? exe : "probe");
    const char *files[16];
    size_t nf = 0;

    if (platform_is_macos) {
        char *sw[] = {"/usr/bin/sw_vers", NULL};
        run_into("sw_vers.txt", sw, NULL);
    } else {
        write_text("sw_vers.txt", mac_only);
    }
    files[nf++] = "sw_vers.txt";
    char *doctor[] = {self, "doctor", "--json", "--exe", e, NULL};
    run_into("doctor.json", doctor, NULL), files[nf++] = "doctor.json";
    char *check[] = {self, "check", "--json", "--exe", e, NULL};
    run_into("check.json", check, NULL), files[nf++] = "check.json";

    char cmd_hash[65] = "", lib_hash[65] = "";
    sha256_file_hex(self, cmd_hash);
    if (have_lib)
        sha256_file_hex(library, lib_hash);
    char *version = xformat("vzcaps %s\ncommand %s sha256 %s\nlibrary %s sha256 %s\n", VZCAPS_VERSION, self, cmd_hash,
                            have_lib ? library : "NOT FOUND", have_lib ? lib_hash : "-");
    write_text("version.txt", version), files[nf++] = "version.txt";
    free(version);
    char *inspect_cmd[] = {self, "inspect", "--json", "--", self, NULL};
    run_into("inspect-command.json", inspect_cmd, NULL), files[nf++] = "inspect-command.json";
    if (have_lib) {
        char *inspect_lib[] = {self, "inspect", "--json", "--", library, NULL};
        run_into("inspect-library.json", inspect_lib, NULL);
    } else {
        write_text("inspect-library.json", "null\n");
    }
    files[nf++] = "inspect-library.json";

    if (platform_is_macos) {
        char *probe[] = {self, "probe", "--json", NULL}, *verify[] = {self, "verify", "--json", NULL};
        run_into("probe.json", probe, NULL);
        run_into("verify.json", verify, NULL);
        /* one injected child, with dyld saying what it interposed and loaded */
        char *trace[] = {self, "run", "--", self, "__probe-child", NULL};
        char *trace_env[] = {"DYLD_PRINT_INTERPOSING=1", "DYLD_PRINT_LIBRARIES=1", NULL};
        run_into("dyld-trace.txt", trace, trace_env);
        char *log[] = {"/usr/bin/log", "show", "--last", "15m", "--style", "compact", "--predicate",
                       "eventMessage BEGINSWITH \"vzcaps:\"", NULL};
        run_into("unified-log.txt", log, NULL);
    } else {
        write_text("probe.json", "null\n");
        write_text("verify.json", "null\n");
        write_text("dyld-trace.txt", mac_only);
        write_text("unified-log.txt", mac_only);
    }
    files[nf++] = "probe.json", files[nf++] = "verify.json", files[nf++] = "dyld-trace.txt", files[nf++] = "unified-log.txt";

    char *probe_text = read_back("probe.json"), *verify_text = read_back("verify.json"), reason[600];
    const char *verdict = bundle_verdict(platform_is_macos, probe_text, verify_text, reason, sizeof reason);
    free(probe_text);
    free(verify_text);
    char *summary = xformat(
        "%s: %s.\n\n"
        "vzcaps %s first-run bundle. Attach the whole directory to an issue; it holds no environment, user or host\n"
        "names, and the home directory is written as ~.\n\n"
        "| file | what it holds |\n| --- | --- |\n"
        "| sw_vers.txt | macOS product version and build |\n"
        "| doctor.json | machine facts (guest or host, chip, memory), library, configuration, pitfalls |\n"
        "| check.json | the effective profile for the probe's process and why |\n"
        "| version.txt | vzcaps version, SHA-256 of the command and the library |\n"
        "| inspect-command.json, inspect-library.json | the two binaries as vzcaps inspect reads them |\n"
        "| probe.json | every Metal answer, stock and through the library; `changed` and `unexpected` |\n"
        "| verify.json | each unlocked path computed on the device and compared with the CPU |\n"
        "| dyld-trace.txt | one injected child with DYLD_PRINT_INTERPOSING=1 and DYLD_PRINT_LIBRARIES=1 |\n"
        "| unified-log.txt | the library's `vzcaps:` lines from the unified log, last 15 minutes |\n"
        "| *.stderr | what a step printed on standard error, when it printed anything |\n"
        "| SHA256SUMS | SHA-256 of every other file |\n\n"
        "Verdicts: WORKS (answers changed as asked and every unlocked check computed correct results), PARTIAL\n"
        "(answers changed, but a check failed or did not run), DOES NOT WORK (nothing changed, or something\n"
        "changed that was not asked for), CANNOT TELL (the device could not be read), NOT ON MACOS.\n",
        verdict, reason, VZCAPS_VERSION);
    write_text("summary.md", summary), files[nf++] = "summary.md";
    free(summary);

    /* scrub every file written (the .stderr ones too), then checksum what is there */
    for (size_t i = 0; i < nf; i++) {
        scrub(files[i]);
        char *err_name = xformat("%s.stderr", files[i]), *err_path = in_bundle(err_name);
        if (access(err_path, F_OK) == 0)
            scrub(err_name);
        free(err_name);
        free(err_path);
    }
    char *sums = xformat("%s", "");
    for (size_t i = 0; i < nf; i++) {
        for (int k = 0; k < 2; k++) {
            char *name = k ? xformat("%s.stderr", files[i]) : xformat("%s", files[i]), *path = in_bundle(name), hex[65];
            if (access(path, F_OK) == 0 && sha256_file_hex(path, hex) == 0) {
                char *more = xformat("%s%s  %s\n", sums, hex, name);
                free(sums);
                sums = more;
            }
            free(name);
            free(path);
        }
    }
    write_text("SHA256SUMS", sums);
    free(sums);
    if (failures) {
        eprintf("vzcaps doctor: the bundle in %s is incomplete: %d of its files could not be written (above)", dir, failures);
        return 1;
    }
    printf("%s: %s.\nwrote %s (summary.md, SHA256SUMS and %zu more files)\n", verdict, reason, esc(dir), nf - 1);
    return 0;
}
