/* vzcaps launchd: a LaunchAgent for one workload, scoped to that program's process tree.
 * Never: uses `launchctl setenv`; leaves a half-written plist (temp file + rename). */
#define _XOPEN_SOURCE 700
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
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

static bool valid_label(const char *l)
{
    return *l && strlen(l) < 200 && strspn(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(l) && l[0] != '.';
}

static bool valid_xml_text(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
            return false;
    return true;
}

static void write_plist(FILE *out, const char *label, char **cmd, char **env, const char *home)
{
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
          "<plist version=\"1.0\">\n<dict>\n", out);
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
    char path[1200];
    snprintf(path, sizeof path, "%s/Library/Logs/vzcaps/%s.out.log", home, label);
    kv_string(out, "  ", "StandardOutPath", path);
    snprintf(path, sizeof path, "%s/Library/Logs/vzcaps/%s.err.log", home, label);
    kv_string(out, "  ", "StandardErrorPath", path);
    fputs("</dict>\n</plist>\n", out);
}

static int mkdirs(const char *path)
{
    char buf[1200];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Prints the launchctl command; runs it on macOS only. */
static int launchctl(const char *verb, const char *target)
{
    char domain[64], arg[1400];
    snprintf(domain, sizeof domain, "gui/%u", (unsigned)getuid());
    bool bootout = strcmp(verb, "bootout") == 0;
    if (bootout)
        snprintf(arg, sizeof arg, "%s/%s", domain, target);
    else
        snprintf(arg, sizeof arg, "%s", target);
    char *av[] = {"launchctl", (char *)verb, bootout ? arg : domain, bootout ? NULL : arg, NULL};
    printf("launchctl %s %s%s%s\n", verb, av[2], av[3] ? " " : "", av[3] ? av[3] : "");
    if (!platform_is_macos)
        return 0;
    return spawn_wait("/bin/launchctl", av);
}

int cmd_launchd(int argc, char **argv)
{
    struct cfg_opts o = {0};
    const char *label = NULL;
    bool install = false, remove_ = false;
    int i = 1;
    for (; i < argc; i++) {
        int t;
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if ((t = opt_take(argc, argv, &i, "--label", &label)) || (t = opt_take(argc, argv, &i, "--profile", &o.profile)) ||
            (t = opt_take(argc, argv, &i, "--family", &o.family))) {
            if (t < 0)
                return usage_error("launchd", "%s needs a value", argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--install") == 0)
            install = true;
        else if (strcmp(argv[i], "--remove") == 0)
            remove_ = true;
        else if (argv[i][0] == '-')
            return usage_error("launchd", "unknown option %s", argv[i]);
        else
            break;
    }
    if (!label)
        return usage_error("launchd", "--label is required");
    if (!valid_label(label))
        return usage_error("launchd", "label \"%s\" must be letters, digits, '.', '_' and '-' (e.g. com.example.llama-server)", label);
    if (install && remove_)
        return usage_error("launchd", "--install and --remove exclude each other");
    int bad = check_family_opt("launchd", o.family);
    if (bad)
        return bad;
    const char *home = getenv("HOME");
    if (!home || !*home) {
        eprintf("vzcaps launchd: HOME is not set");
        return 1;
    }
    char agents[1100], plist[1400], tmp[1500], logs[1100];
    snprintf(agents, sizeof agents, "%s/Library/LaunchAgents", home);
    snprintf(plist, sizeof plist, "%s/%s.plist", agents, label);
    snprintf(logs, sizeof logs, "%s/Library/Logs/vzcaps", home);
    if (remove_) {
        if (i < argc)
            return usage_error("launchd", "--remove takes no command");
        launchctl("bootout", label);
        if (unlink(plist) != 0 && errno != ENOENT) {
            eprintf("vzcaps launchd: cannot remove %s: %s", plist, strerror(errno));
            return 1;
        }
        printf("removed %s\n", plist);
        return 0;
    }
    if (i >= argc)
        return usage_error("launchd", "no command given");
    char **cmd = argv + i;
    for (char **a = cmd; *a; a++)
        if (!valid_xml_text(*a))
            return usage_error("launchd", "argument contains a control character");
    if (cmd[0][0] != '/')
        eprintf("vzcaps launchd: note: launchd does not search PATH the way a shell does; give %s as an absolute path", cmd[0]);

    char library[1100], tried[2400];
    if (find_library(library, sizeof library, tried, sizeof tried) != 0) {
        eprintf("vzcaps launchd: %s not found (looked at %s)", library_file, tried);
        return 1;
    }
    o.exe = vzcaps_basename(cmd[0]);
    static struct vzcaps_config_result r;
    cli_configure_run(&o, &r);
    if (r.profile.invalid) {
        eprintf("vzcaps launchd: configuration refused: %s", r.profile.notes[0]);
        return 1;
    }
    /* Only what this workload needs: the settings and the library, nothing of this shell. */
    static char *env[16];
    static char text[16][1400];
    size_t n = 0;
    snprintf(text[n], sizeof text[n], "%s=%s", preload_var, library), env[n] = text[n], n++;
    if (r.config_path[0])
        snprintf(text[n], sizeof text[n], "VZCAPS_CONFIG=%s", r.config_path), env[n] = text[n], n++;
    if (o.profile)
        snprintf(text[n], sizeof text[n], "VZCAPS_PROFILE=%s", o.profile), env[n] = text[n], n++;
    if (o.family)
        snprintf(text[n], sizeof text[n], "VZCAPS_APPLE_FAMILY_MAX=%s", o.family), env[n] = text[n], n++;
    env[n] = NULL;

    if (!install) {
        write_plist(stdout, label, cmd, env, home);
        return 0;
    }
    if (mkdirs(agents) != 0 || mkdirs(logs) != 0) {
        eprintf("vzcaps launchd: cannot create %s or %s: %s", agents, logs, strerror(errno));
        return 1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", plist, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        eprintf("vzcaps launchd: cannot write %s: %s", tmp, strerror(errno));
        return 1;
    }
    write_plist(f, label, cmd, env, home);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, plist) != 0) {
        eprintf("vzcaps launchd: cannot write %s: %s", plist, strerror(errno));
        unlink(tmp);
        return 1;
    }
    printf("wrote %s\n", plist);
    if (!platform_is_macos)
        printf("not macOS: run these on the Mac instead:\n");
    return launchctl("bootstrap", plist) == 0 ? 0 : 1;
}
