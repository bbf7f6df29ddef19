/* vzcaps launchd: a LaunchAgent for one workload, scoped to that program's process tree, and
 * the list of the agents it wrote (--list, recognised by the marker comment it writes).
 * Never: uses `launchctl setenv`; resolves the program's links (Homebrew's opt path stays);
 * writes a plist but through safewrite (never half-written, through a link or over a plist it
 * did not write without --force); removes a plist it did not write without --force. */
#define _XOPEN_SOURCE 700
#include "../../common/plist.h"
#include "../../common/safewrite.h"
#include "../cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Text as plist XML: markup characters as entities, and CR as &#13; (an XML reader turns a
 * raw CR into LF), so every byte reads back as written. */
static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\r': fputs("&#13;", out); break;
        default: fputc(*s, out);
        }
    }
}

static void kv_string(FILE *out, const char *indent, const char *key, const char *value)
{
    fprintf(out, "%s<key>", indent);
    xml_text(out, key);
    fprintf(out, "</key>\n%s<string>", indent);
    xml_text(out, value);
    fputs("</string>\n", out);
}

/* A label names LABEL.plist and the job's log files: at most this many bytes. */
#define LABEL_MAX 199

static bool valid_label(const char *l)
{
    return *l && strspn(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(l) && l[0] != '.';
}

/* What every plist vzcaps launchd writes carries (the line after the DOCTYPE line, record.h):
 * --list, --remove and --install recognise their own work by it. */
static const char plist_marker[] = "<!-- written by vzcaps launchd -->";

/* Whether a plist's text is one vzcaps launchd wrote: the marker, or (written before it had one)
 * the library as the preload entry and the logs under Library/Logs/vzcaps. */
static bool plist_is_ours(const char *text)
{
    if (vzcaps_marked_text(text, strlen(text), plist_marker, VZCAPS_MARK_AFTER_DOCTYPE))
        return true;
    char *preload = xformat("<key>%s</key>", preload_var);
    bool legacy = strstr(text, preload) && strstr(text, library_file) && strstr(text, "/Library/Logs/vzcaps/");
    free(preload);
    return legacy;
}

/* path as given, made absolute against the current directory, links left as they are (a
 * Homebrew bin/ or opt/ path stays stable across upgrades; its Cellar target does not). */
static char *absolute_as_given(const char *path)
{
    if (path[0] == '/')
        return xformat("%s", path);
    char *cwd = getcwd(NULL, 0);
    if (!cwd)
        return NULL;
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
        while (*path == '/')
            path++;
    }
    char *abs = xformat("%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", path);
    free(cwd);
    return abs;
}

/* Whether XML 1.0 can carry s: valid UTF-8 of characters in its Char production (no C0
 * control but tab, LF and CR; no U+FFFE or U+FFFF). NULL, or what is wrong. */
static const char *xml_unfit(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = vzcaps_utf8_valid(s + i, n - i);
        const unsigned char *p = (const unsigned char *)s + i;
        if (!k)
            return "invalid UTF-8";
        if (k == 1 && *p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
            return "a control character";
        if (k == 3 && p[0] == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf))
            return "U+FFFE or U+FFFF";
        i += k;
    }
    return NULL;
}

static bool keep_alive;

/* background: for the user/UID domain (no GUI login): launchd loads an agent without
 * LimitLoadToSessionType into the Aqua session type only, and user/UID is the Background one
 * (docs/macos-launch.md); gui/UID gets the plist without the key, as before. */
static void write_plist(FILE *out, const char *label, char **cmd, char **env, const char *home, bool background)
{
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
                 "%s\n<plist version=\"1.0\">\n<dict>\n", plist_marker);
    kv_string(out, "  ", "Label", label);
    fputs("  <key>ProgramArguments</key>\n  <array>\n", out);
    for (char **a = cmd; *a; a++) {
        fputs("    <string>", out);
        xml_text(out, *a);
        fputs("</string>\n", out);
    }
    fputs("  </array>\n  <key>EnvironmentVariables</key>\n  <dict>\n", out);
    for (char **e = env; *e; e++) {
        char name[256];
        const char *eq = strchr(*e, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        kv_string(out, "    ", name, eq + 1);
    }
    fputs("  </dict>\n  <key>RunAtLoad</key>\n  <true/>\n", out);
    if (keep_alive) /* launchd starts it again whenever it exits */
        fputs("  <key>KeepAlive</key>\n  <true/>\n", out);
    if (background)
        kv_string(out, "  ", "LimitLoadToSessionType", "Background");
    char *path = xformat("%s/Library/Logs/vzcaps/%s.out.log", home, label);
    kv_string(out, "  ", "StandardOutPath", path);
    free(path);
    path = xformat("%s/Library/Logs/vzcaps/%s.err.log", home, label);
    kv_string(out, "  ", "StandardErrorPath", path);
    free(path);
    fputs("</dict>\n</plist>\n", out);
}

char *launchd_plist(const char *label, char **cmd, char **env, const char *home, bool background, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    write_plist(f, label, cmd, env, home, background);
    if (fclose(f) != 0)
        return NULL;
    *len = n;
    return buf;
}

/* ---- launchctl: which domain, and a label loaded before ---- */

/* Runs launchctl with argv, its output discarded: the exit status, or -1 when it cannot run. */
static int launchctl_quiet(const char *launchctl, char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
            if (fd > 2)
                close(fd);
        }
        execv(launchctl, argv);
        _exit(127);
    }
    int st;
    while (pid > 0 && waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether launchctl knows target (a domain or a service): `launchctl print TARGET` exits 0. */
static bool launchctl_has(const char *launchctl, const char *target)
{
    char *av[] = {"launchctl", "print", (char *)target, NULL};
    return launchctl_quiet(launchctl, av) == 0;
}

/* Prints a launchctl command, then runs it when launchctl is given: its exit status (0 when
 * only printed). */
static int launchctl_run(const char *launchctl, const char *verb, const char *a, const char *b)
{
    printf("launchctl %s %s%s%s\n", verb, esc(a), b ? " " : "", b ? esc(b) : "");
    if (!launchctl)
        return 0;
    char *av[] = {"launchctl", (char *)verb, (char *)a, (char *)b, NULL};
    fflush(NULL);
    return spawn_wait(launchctl, av);
}

bool launchd_domain(const char *launchctl, unsigned uid, char *out, size_t len)
{
    snprintf(out, len, "gui/%u", uid);
    if (launchctl_has(launchctl, out))
        return true;
    snprintf(out, len, "user/%u", uid);
    return false;
}

bool launchd_choose_domain(const char *launchctl, unsigned uid, char *domain, size_t len)
{
    if (!launchctl) { /* not macOS: what to run there, for the usual GUI session */
        snprintf(domain, len, "gui/%u", uid);
        return true;
    }
    return launchd_domain(launchctl, uid, domain, len);
}

int launchd_apply(const char *launchctl, unsigned uid, const char *label, const char *plist)
{
    char domain[64];
    launchd_choose_domain(launchctl, uid, domain, sizeof domain);
    return launchd_apply_in(launchctl, uid, domain, label, plist);
}

int launchd_apply_in(const char *launchctl, unsigned uid, const char *domain, const char *label, const char *plist)
{
    if (!launchctl) {
        if (plist)
            printf("(in a session with no GUI login, as over SSH, the domain is user/%u instead, and the plist needs "
                   "LimitLoadToSessionType Background there: vzcaps launchd --install on the Mac writes it)\n", uid);
    } else {
        printf("launchd domain %s (%s)\n", domain, strncmp(domain, "gui/", 4) == 0 ? "a GUI login session"
                                                     : "no GUI login session: launchctl print gui/UID failed, as over SSH");
    }
    /* a label of ours already loaded, in either domain, is booted out first: bootstrap refuses it */
    const char *domains[2] = {domain, strncmp(domain, "gui/", 4) == 0 ? "user" : "gui"};
    char other[64], target[400];
    snprintf(other, sizeof other, "%s/%u", domains[1], uid);
    domains[1] = other;
    int rc = 0;
    bool loaded = false;
    for (int d = 0; d < 2; d++) {
        snprintf(target, sizeof target, "%s/%s", domains[d], label);
        if (launchctl ? launchctl_has(launchctl, target) : d == 0 && !plist) {
            loaded = true;
            if (launchctl_run(launchctl, "bootout", target, NULL) != 0)
                rc = 1;
        }
    }
    if (!plist) {
        if (launchctl && !loaded)
            printf("%s was not loaded\n", esc(label));
        return rc;
    }
    if (rc) {
        eprintf("vzcaps launchd: launchctl bootout of the loaded %s failed; not bootstrapping it again", label);
        return 1;
    }
    return launchctl_run(launchctl, "bootstrap", domain, plist) == 0 ? 0 : 1;
}

/* The string value of key in a plist's text, read as a property list (src/common/plist.c:
 * entities decoded, comments skipped); for an array, its first item. Heap, or NULL. */
static char *plist_string_after(const char *text, const char *key)
{
    char why[300];
    struct plist *doc = plist_parse(text, strlen(text), why, sizeof why);
    const struct plist *v = plist_get(doc, key);
    if (v && v->type == PLIST_ARRAY && v->n)
        v = v->items[0];
    char *out = v && v->type == PLIST_STRING ? xformat("%s", v->str) : NULL;
    plist_free(doc);
    return out;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* vzcaps launchd --list: one line per agent vzcaps wrote in dir, LABEL<TAB>PLIST<TAB>PROGRAM,
 * or with json {"agents": [{"label", "plist", "program"}...]}. */
static int list_agents(const char *dir, bool json)
{
    DIR *d = opendir(dir);
    if (!d && errno != ENOENT) {
        eprintf("vzcaps launchd: %s: %s", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 6 || strcmp(e->d_name + l - 6, ".plist") != 0 || e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **more = realloc(names, (cap = cap * 2 + 16) * sizeof *names);
            if (!more) { /* never a list that silently lacks entries */
                eprintf("vzcaps launchd: %s: out of memory", dir);
                closedir(d);
                return 1;
            }
            names = more;
        }
        names[n++] = xformat("%s", e->d_name);
    }
    if (d)
        closedir(d);
    else
        eprintf("vzcaps launchd: no LaunchAgent written by vzcaps (no %s)", dir);
    struct json j;
    if (json) { /* valid JSON whenever the command succeeds, nothing when it fails */
        json_begin(&j, stdout);
        json_obj(&j, NULL);
        json_str(&j, "dir", dir);
        json_arr(&j, "agents");
    }
    if (n)
        qsort(names, n, sizeof *names, by_name);
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        char *path = xformat("%s/%s", dir, names[i]), err[1400];
        struct stat st;
        size_t len;
        /* a regular file only, read without blocking: a FIFO or a link is nobody's agent of ours */
        char *text = lstat(path, &st) == 0 && S_ISREG(st.st_mode) ? read_text_file(path, &len, err, sizeof err) : NULL;
        if (text && plist_is_ours(text)) {
            char *label = plist_string_after(text, "Label"), *program = plist_string_after(text, "ProgramArguments");
            if (json) {
                json_obj(&j, NULL);
                json_str(&j, "label", label);
                json_str(&j, "plist", path);
                json_str(&j, "program", program);
                json_end_obj(&j);
            } else {
                printf("%s\t%s\t%s\n", esc(label ? label : "?"), esc(path), esc(program ? program : "?"));
            }
            free(label);
            free(program);
            found++;
        }
        free(text);
        free(path);
        free(names[i]);
    }
    free(names);
    if (json) {
        json_end_arr(&j);
        json_end_obj(&j);
        json_finish(&j);
    }
    if (!found && d)
        eprintf("vzcaps launchd: no LaunchAgent written by vzcaps in %s", dir);
    return 0;
}

/* Strings this command allocates live until it returns (cmd_launchd frees them). */
static char **owned;
static size_t n_owned, cap_owned;

static char *keep(char *s)
{
    owned = xgrow(owned, &cap_owned, n_owned, sizeof *owned);
    owned[n_owned++] = s;
    return s;
}

/* What the job starts, as the launch plan decides it, with absolute paths: 0 with *cmdp the
 * ProgramArguments, or the exit status after the message. */
static int job_program(char ***cmdp, struct launch_plan *plan)
{
    char **cmd = *cmdp;
    const char *why;
    /* launchd searches no PATH and has no working directory of ours: the program, the config
     * file and the library go into the plist as absolute paths, resolved and checked now */
    static struct launch_lead lead;
    launch_lead_find(cmd[0], &lead);
    if (!lead.rc && lead.shim[0]) /* as the launch plan does */
        eprintf("vzcaps launchd: note: %s%s is a vzcaps shim (%s); the job starts the real one, %s", cmd[0],
                strchr(cmd[0], '/') ? "" : " on PATH", lead.shim, lead.found);
    char *abs = lead.rc == 0 ? absolute_as_given(lead.found) : NULL;
    if (!abs) {
        eprintf("vzcaps launchd: %s: %s", cmd[0], lead.rc ? lead.why : strerror(errno));
        return 1;
    }
    cmd[0] = keep(abs);
    /* the launch plan, as run takes it: for #!/usr/bin/env NAME the job starts NAME itself
     * (macOS removes the injection at env), and what dyld would ignore is said now */
    if (launch_plan_make(plan, cmd, false) != 0) {
        eprintf("vzcaps launchd: %s: %s", cmd[0], plan->why);
        return 1;
    }
    launch_plan_notes(plan, "vzcaps launchd");
    if (plan->exec_argv != cmd) {
        char *start = absolute_as_given(plan->exec_path);
        if (!start) {
            eprintf("vzcaps launchd: %s: %s", plan->exec_path, strerror(errno));
            launch_plan_free(plan);
            return 1;
        }
        *cmdp = cmd = (char **)keep((char *)plan->exec_argv); /* freed with the strings this command keeps */
        cmd[0] = keep(start);
        for (char **a = cmd; *a; a++)
            if ((why = xml_unfit(*a)))
                return usage_error("launchd", "%s has %s, which a plist cannot carry", esc(*a), why);
    }
    return 0;
}

/* --remove: boots out and removes a plist vzcaps launchd wrote (or any with --force). */
static int launchd_remove(const char *label, const char *plist, bool force)
{
    struct stat st;
    if (lstat(plist, &st) != 0) {
        eprintf("vzcaps launchd: %s is not installed (no %s)", label, plist);
        return 1;
    }
    size_t plen;
    char perr[1400];
    char *text = S_ISREG(st.st_mode) ? read_text_file(plist, &plen, perr, sizeof perr) : NULL;
    bool ours = text && plist_is_ours(text);
    free(text);
    if (!S_ISREG(st.st_mode) || (!ours && !force)) {
        eprintf("vzcaps launchd: %s was not written by vzcaps launchd%s; not removed", plist,
                S_ISREG(st.st_mode) ? " (--force removes it)" : " (not a regular file)");
        return 1;
    }
    launchd_apply(platform_is_macos ? "/bin/launchctl" : NULL, (unsigned)getuid(), label, NULL);
    if (unlink(plist) != 0) {
        eprintf("vzcaps launchd: cannot remove %s: %s", plist, strerror(errno));
        return 1;
    }
    printf("removed %s\n", esc(plist));
    return 0;
}

/* Only what this workload needs: the settings and the library, nothing of this shell. env
 * holds 10 entries; 0, or the usage error's status. */
static int launchd_env(char **env, const struct cfg_opts *o, const struct vzcaps_config_result *r, const char *library)
{
    const char *why;
    size_t n = 0;
    env[n++] = keep(xformat("%s=%s", preload_var, library));
    if (r->config_path[0]) {
        char *conf = absolute_as_given(r->config_path);
        if (!conf) {
            eprintf("vzcaps launchd: config file %s: %s", r->config_path, strerror(errno));
            return 1;
        }
        env[n++] = keep(xformat("VZCAPS_CONFIG=%s", conf));
        free(conf);
    }
    if (o->inherit)
        env[n++] = keep(xformat("VZCAPS_INHERIT=1"));
    if (o->profile)
        env[n++] = keep(xformat("VZCAPS_PROFILE=%s", o->profile));
    if (o->family)
        env[n++] = keep(xformat("VZCAPS_APPLE_FAMILY_MAX=%s", o->family));
    if (o->handed) /* unclaimed: the pid launchd gives the job is not known here */
        env[n++] = keep(xformat("VZCAPS_PROGRAM=%0*d:%s", VZCAPS_PROGRAM_CLAIM, 0, o->handed));
    env[n] = NULL;
    for (char **e = env; *e; e++)
        if ((why = xml_unfit(*e)))
            return usage_error("launchd", "%s has %s, which a plist cannot carry", esc(*e), why);
    return 0;
}

/* --install: the plist for the domain it goes into, written through safewrite, then launchctl. */
static int launchd_install(const char *label, char **cmd, char **env, const char *home, const char *agents, const char *logs,
                           const char *plist, bool force)
{
    /* the domain first: the plist for user/UID (no GUI login) carries the Background session type */
    const char *launchctl = platform_is_macos ? "/bin/launchctl" : NULL;
    char domain[64];
    bool gui = launchd_choose_domain(launchctl, (unsigned)getuid(), domain, sizeof domain);
    size_t len = 0;
    char *bytes = keep(launchd_plist(label, cmd, env, home, !gui, &len));
    if (!bytes) {
        eprintf("vzcaps launchd: out of memory");
        return 1;
    }
    /* an existing plist that differs is somebody's work: replaced only when asked */
    size_t old_len;
    char err[1400];
    struct stat st;
    bool exists = lstat(plist, &st) == 0;
    char *old = exists && S_ISREG(st.st_mode) ? read_text_file(plist, &old_len, err, sizeof err) : NULL;
    bool same = old && old_len == len && memcmp(old, bytes, len) == 0;
    free(old);
    if (exists && !force && !same) {
        eprintf("vzcaps launchd: %s exists and differs from this job; pass --force to replace it", plist);
        return 1;
    }
    char *why_err = NULL;
    if (vzcaps_mkdir_parents(agents, &why_err) != 0 || vzcaps_mkdir_parents(logs, &why_err) != 0) {
        eprintf("vzcaps launchd: cannot create %s", why_err ? why_err : agents);
        free(why_err);
        return 1;
    }
    /* the umask applies (launchd refuses a plist others can write; 0644 & ~umask never is) */
    struct vzcaps_wopts wo = {.mode = 0644, .replace = force ? VZCAPS_FORCE : VZCAPS_IF_MARKED, .marker = plist_marker,
                              .marker_at = VZCAPS_MARK_AFTER_DOCTYPE, .sync = true, .force_option = true};
    if (vzcaps_write_file(plist, bytes, len, &wo, &why_err) != 0) {
        eprintf("vzcaps launchd: cannot write %s", why_err ? why_err : plist);
        free(why_err);
        return 1;
    }
    printf("wrote %s\n", esc(plist));
    if (!platform_is_macos)
        printf("not macOS: run these on the Mac instead:\n");
    return launchd_apply_in(launchctl, (unsigned)getuid(), domain, label, plist);
}

/* --list: the agents vzcaps wrote in ~/Library/LaunchAgents. */
static int launchd_list(bool json)
{
    const char *home = getenv("HOME");
    if (!home || !*home) {
        eprintf("vzcaps launchd: HOME is not set");
        return 1;
    }
    char *agents = keep(xformat("%s/Library/LaunchAgents", home));
    return list_agents(agents, json);
}

/* 0, or the usage error's status: a label (that names LABEL.plist and log files), one verb. */
static int launchd_check_label(const char *label, bool install, bool remove_)
{
    if (!label)
        return usage_error("launchd", "--label is required");
    if (strlen(label) > LABEL_MAX)
        return usage_error("launchd", "label is %zu bytes long: at most %d (it names LABEL.plist and the job's log files)",
                           strlen(label), LABEL_MAX);
    if (!valid_label(label))
        return usage_error("launchd", "label \"%s\" must be letters, digits, '.', '_' and '-' (e.g. com.example.llama-server)", label);
    if (install && remove_)
        return usage_error("launchd", "--install and --remove exclude each other");
    return 0;
}

/* HOME, which the plist's log paths are under: absolute, and text a plist can carry. */
static int launchd_home(const char **homep)
{
    const char *home = *homep = getenv("HOME"), *why;
    if (!home || !*home) {
        eprintf("vzcaps launchd: HOME is not set");
        return 1;
    }
    if (home[0] != '/') { /* the plist's log paths: launchd takes a relative path from / */
        eprintf("vzcaps launchd: HOME %s is not an absolute path", home);
        return 1;
    }
    if ((why = xml_unfit(home)))
        return usage_error("launchd", "HOME %s has %s, which a plist cannot carry", esc(home), why);
    return 0;
}

static int launchd_main(int argc, char **argv)
{
    struct cfg_opts o = {0};
    const char *label = NULL;
    bool install = false, remove_ = false, force = false, list = false, json = false;
    const struct opt_bind binds[] = {
        OPT_VALUE("--label", &label), OPT_VALUE("--profile", &o.profile), OPT_VALUE("--family", &o.family),
        OPT_FLAG("--inherit", &o.inherit), OPT_FLAG("--keep-alive", &keep_alive), OPT_FLAG("--install", &install),
        OPT_FLAG("--remove", &remove_), OPT_FLAG("--force", &force), OPT_FLAG("--list", &list), OPT_FLAG("--json", &json), {0}};
    int bad = cli_parse("launchd", &argc, argv, binds);
    if (bad)
        return bad;
    if (json && !list)
        return usage_error("launchd", "--json goes with --list");
    if (list) {
        if (label || install || remove_ || argc > 1)
            return usage_error("launchd", "--list takes no label, command, --install or --remove");
        return launchd_list(json);
    }
    if ((bad = launchd_check_label(label, install, remove_)))
        return bad;
    bad = check_family_opt("launchd", o.family);
    if (bad)
        return bad;
    const char *home, *why;
    if ((bad = launchd_home(&home)))
        return bad;
    char *agents = keep(xformat("%s/Library/LaunchAgents", home)), *plist = keep(xformat("%s/%s.plist", agents, label));
    char *logs = keep(xformat("%s/Library/Logs/vzcaps", home));
    if (remove_) {
        if (argc > 1)
            return usage_error("launchd", "--remove takes no command");
        return launchd_remove(label, plist, force);
    }
    if (argc < 2)
        return usage_error("launchd", "no command given");
    char **cmd = argv + 1;
    for (char **a = cmd; *a; a++)
        if ((why = xml_unfit(*a)))
            return usage_error("launchd", "argument %d (%s) has %s, which a plist cannot carry", (int)(a - cmd) + 1, esc(*a), why);
    static struct launch_plan plan;
    int prc = job_program(&cmd, &plan);
    if (prc)
        return prc;
    char library[4096], tried[2400];
    if (find_library(library, sizeof library, tried, sizeof tried) != 0) {
        eprintf("vzcaps launchd: %s not found (looked at %s)", library_file, tried);
        return 1;
    }
    o.exe = plan.exe; /* the name the library sees: a script's handed to it, as run hands it */
    o.handed = plan.script ? plan.exe : NULL;
    static struct vzcaps_config_result r;
    cli_configure_run(&o, &r);
    if (r.profile.invalid) {
        eprintf("vzcaps launchd: configuration refused: %s", r.profile.notes[0]);
        return 1;
    }
    plan_inheritance(&plan, &r.profile); /* run's SIP/arm64e decision */
    if (plan.inherit_decided) {
        int d = plan.inherit;
        if (d == VZCAPS_INHERIT_REFUSED) {
            eprintf("vzcaps launchd: not writing a job that keeps the injection in %s's children: %s; drop --inherit "
                    "(and inherit = yes)", o.exe, plan.inherit_why);
            return 1;
        }
        if (d == VZCAPS_INHERIT_NOTE)
            eprintf("vzcaps launchd: note: the injection is kept in %s's children: %s", o.exe, plan.inherit_why);
    }
    char *env[10];
    if ((bad = launchd_env(env, &o, &r, library)))
        return bad;
    if (!install) {
        write_plist(stdout, label, cmd, env, home, false);
        return 0;
    }

    return launchd_install(label, cmd, env, home, agents, logs, plist, force);
}

int cmd_launchd(int argc, char **argv)
{
    int rc = launchd_main(argc, argv);
    while (n_owned)
        free(owned[--n_owned]);
    return rc;
}
