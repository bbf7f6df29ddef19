/* vzcaps report: the benchmark table recomputed from raw llama-bench JSON (files or bundles),
 * with what the Metal backend itself reported in each run.
 * Never: writes over one of its inputs, through a link, or over a file vzcaps did not write
 * without --force (outputs go through safewrite, all checked before anything is printed). */
#define _XOPEN_SOURCE 700
#define _DARWIN_C_SOURCE /* O_NOFOLLOW */
#include "../common/safewrite.h"
#include "../data/benchdata.h"
#include "cli.h"
#include "../data/jsonread.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct report_input {
    struct bench_table table;
    struct metal_caps caps[N_ROLES];
    bool have_caps[N_ROLES];
    char brand[128]; /* cpu_brand of a bundle's environment.json, "" when none */
};

/* The host chip's real Apple family: what the host run's Metal backend reported, else the
 * chip a bundle's environment.json names; 0 when unknown. */
static long host_family(const struct report_input *in, const char **from)
{
    long best = 0;
    if (in->have_caps[ROLE_HOST])
        for (size_t i = 0; i < in->caps[ROLE_HOST].n_families; i++)
            if (in->caps[ROLE_HOST].families[i] >= 1001 && in->caps[ROLE_HOST].families[i] <= 1010 &&
                in->caps[ROLE_HOST].families[i] > best)
                best = in->caps[ROLE_HOST].families[i];
    if (best) {
        *from = "the host run";
        return best;
    }
    struct vzcaps_chip chip;
    vzcaps_chip_from_brand(in->brand[0] ? in->brand : NULL, &chip);
    *from = "environment.json's cpu_brand";
    return chip.known ? (long)chip.apple_family : 0;
}

/* The highest Apple family a run reported above the host's, 0 when none. */
static long above_host(const struct metal_caps *c, long host)
{
    long worst = 0;
    for (size_t i = 0; host && i < c->n_families; i++)
        if (c->families[i] >= 1001 && c->families[i] <= 1010 && c->families[i] > host && c->families[i] > worst)
            worst = c->families[i];
    return worst;
}

/* Every file read, by device and inode: an output that is one of them is refused. */
static struct stat inputs[64];
static size_t n_inputs;

static void note_input(const char *path)
{
    struct stat st;
    if (n_inputs < sizeof inputs / sizeof inputs[0] && stat(path, &st) == 0)
        inputs[n_inputs++] = st;
}

static void companion_stderr(struct report_input *in, enum bench_role role, const char *json_path)
{
    size_t n = strlen(json_path);
    bool ext = n > 5 && strcmp(json_path + n - 5, ".json") == 0;
    char *path = xformat("%.*s.stderr", (int)(ext ? n - 5 : n), json_path);
    if (!in->have_caps[role] && access(path, R_OK) == 0 && metal_caps_read(path, &in->caps[role]) == 0)
        in->have_caps[role] = true;
    note_input(path);
    free(path);
}

static int report_add(struct report_input *in, enum bench_role role, const char *path, char *err, size_t errlen)
{
    note_input(path);
    if (bench_table_add_file(&in->table, role, path, err, errlen) != 0)
        return -1;
    companion_stderr(in, role, path);
    return 0;
}

static const char *tri(int v) { return v < 0 ? "?" : v ? "yes" : "no"; }

static void report_print(const struct report_input *in, bool json)
{
    if (json) {
        struct json j;
        json_begin(&j, stdout);
        json_obj(&j, NULL);
        bench_render_json_rows(&in->table, &j);
        json_obj(&j, "capabilities");
        for (int k = 0; k < N_ROLES; k++) {
            if (in->have_caps[k])
                metal_caps_json(&in->caps[k], &j, bench_role_names[k]);
            else
                json_null(&j, bench_role_names[k]);
        }
        json_end_obj(&j);
        const char *from;
        long host = host_family(in, &from);
        if (host)
            json_int(&j, "host_apple_family", host);
        else
            json_null(&j, "host_apple_family");
        json_arr(&j, "above_host_family"); /* runs that reported an Apple family above the host's */
        for (int k = 0; k < N_ROLES; k++)
            if (in->have_caps[k] && above_host(&in->caps[k], host))
                json_str(&j, NULL, bench_role_names[k]);
        json_end_arr(&j);
        json_str(&j, "build_commit", in->table.build_commit[0] ? in->table.build_commit : NULL);
        if (in->table.build_number)
            json_int(&j, "build_number", in->table.build_number);
        else
            json_null(&j, "build_number");
        json_str(&j, "model_type", in->table.model_type[0] ? in->table.model_type : NULL);
        json_end_obj(&j);
        json_finish(&j);
        return;
    }
    if (in->table.model_type[0] || in->table.build_commit[0])
        printf("%s, llama.cpp %s (build %lld)\n\n", esc(in->table.model_type), esc(in->table.build_commit), in->table.build_number);
    bench_render_text(&in->table, stdout);
    bool any = false;
    for (int k = 0; k < N_ROLES; k++)
        any |= in->have_caps[k];
    if (!any)
        return;
    printf("\nwhat the Metal backend reported:\n%-10s %-28s %-14s %-9s %-9s %-7s %-7s\n", "run", "GPU", "families", "simd red.",
           "simd mm", "bfloat", "tensor");
    for (int k = 0; k < N_ROLES; k++) {
        if (!in->have_caps[k])
            continue;
        const struct metal_caps *c = &in->caps[k];
        char fams[64] = "";
        for (size_t i = 0; i < c->n_families; i++)
            vzcaps_appendf(fams, sizeof fams, "%s%ld", i ? "," : "", c->families[i]);
        printf("%-10s %-28s %-14s %-9s %-9s %-7s %-7s\n", bench_role_names[k], c->found ? esc(c->gpu_name) : "(no Metal lines)", fams,
               tri(c->simdgroup_reduction), tri(c->simdgroup_mm), tri(c->bfloat), tri(c->tensor));
    }
    const char *from;
    long host = host_family(in, &from);
    for (int k = 0; k < N_ROLES; k++) {
        long over = in->have_caps[k] ? above_host(&in->caps[k], host) : 0;
        if (over)
            printf("! the %s run reported Apple%ld (%ld), above the host chip's real Apple%ld (%ld, from %s): more than the "
                   "hardware has; vzcaps claims at most the host's family\n",
                   bench_role_names[k], over - 1000, over, host - 1000, host, from);
    }
}

/* What marks an output file as one vzcaps report wrote (replaced without --force): a comment in
 * the SVG (after its XML declaration) and in the Markdown (its first line); CSV has no comment
 * syntax, so an existing CSV file is replaced only with --force. Indexed svg, csv, md. */
static const char *const markers[3] = {"<!-- written by vzcaps report -->", NULL, "<!-- written by vzcaps report -->"};

static char *with_marker(int k, const char *text)
{
    if (!markers[k])
        return xformat("%s", text);
    const char *nl = strncmp(text, "<?xml", 5) == 0 ? strchr(text, '\n') : NULL;
    if (nl)
        return xformat("%.*s%s\n%s", (int)(nl + 1 - text), text, markers[k], nl + 1);
    return xformat("%s\n%s", markers[k], text);
}

/* Why output path cannot be written, or NULL: its directory is missing, it is a directory, a
 * link or a special file, one of the inputs, or a file vzcaps did not write (without --force). */
static const char *output_refusal(const char *path, int k, bool force)
{
    char *dir = xformat("%s", path), *slash = strrchr(dir, '/');
    struct stat st;
    if (slash)
        *slash = '\0';
    bool dir_ok = !slash || (stat(slash == dir ? "/" : dir, &st) == 0 && S_ISDIR(st.st_mode));
    bool dir_exists = !slash || stat(slash == dir ? "/" : dir, &st) == 0;
    free(dir);
    if (!dir_ok)
        return dir_exists ? "its directory is not a directory" : "its directory does not exist";
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? NULL : strerror(errno);
    if (S_ISDIR(st.st_mode))
        return "it is a directory (give a file name)";
    if (S_ISLNK(st.st_mode))
        return "it is a symbolic link (refusing to write through it)";
    if (!S_ISREG(st.st_mode))
        return "it exists and is not a regular file";
    for (size_t i = 0; i < n_inputs; i++)
        if (inputs[i].st_dev == st.st_dev && inputs[i].st_ino == st.st_ino)
            return "it is one of the inputs (refusing to overwrite it)";
    if (force)
        return NULL;
    bool marked = false;
    int fd = markers[k] ? open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
    if (fd >= 0) {
        char head[4097];
        ssize_t n = read(fd, head, sizeof head - 1);
        close(fd);
        head[n > 0 ? n : 0] = '\0';
        marked = n > 0 && memchr(head, '\0', (size_t)n) == NULL && strstr(head, markers[k]) != NULL;
    }
    return marked ? NULL : "it exists and vzcaps report did not write it (--force replaces it)";
}

struct rfile {
    enum bench_role role;
    const char *path;
};

static int report_main(int argc, char **argv, const char **dirs, struct rfile *files)
{
    static struct report_input in;
    memset(&in, 0, sizeof in);
    bool json = false, force = false;
    n_inputs = 0;
    const char *svg = NULL, *csv = NULL, *md = NULL;
    char err[1400];
    int nd = 0, nfiles = 0;
    bool dashdash = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int t = 0;
        if (!dashdash && strcmp(argv[i], "--") == 0) {
            dashdash = true; /* ends the options: what follows are bundle directories */
            continue;
        }
        if (dashdash) {
            dirs[nd++] = argv[i];
            continue;
        }
        for (int k = 0; k < N_ROLES && !t; k++) {
            char opt[16];
            snprintf(opt, sizeof opt, "--%s", bench_role_names[k]);
            if ((t = opt_take(argc, argv, &i, opt, &v)) > 0)
                files[nfiles].role = (enum bench_role)k, files[nfiles++].path = v;
        }
        if (t < 0)
            return usage_error("report", "%s needs a file", argv[i]);
        if (t)
            continue;
        if ((t = opt_take(argc, argv, &i, "--svg", &svg)) || (t = opt_take(argc, argv, &i, "--csv", &csv)) ||
            (t = opt_take(argc, argv, &i, "--md", &md))) {
            if (t < 0)
                return usage_error("report", "%s needs a file", argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--force") == 0)
            force = true;
        else if (argv[i][0] == '-')
            return usage_error("report", "unknown option %s", argv[i]);
        else
            dirs[nd++] = argv[i];
    }
    if (!nd && !nfiles)
        return usage_error("report", "give bundle directories or --stock/--unlocked/--host files");
    for (int i = 0; i < nfiles; i++)
        if (report_add(&in, files[i].role, files[i].path, err, sizeof err) != 0) {
            eprintf("vzcaps report: %s", err);
            return 1;
        }
    for (int d = 0; d < nd; d++) {
        int found = 0;
        char *envp = xformat("%s/environment.json", dirs[d]), err2[1400];
        size_t elen;
        char *etext = access(envp, F_OK) == 0 ? read_text_file(envp, &elen, err2, sizeof err2) : NULL;
        note_input(envp);
        free(envp);
        struct jv *edoc = etext ? jv_parse(etext, elen, err2, sizeof err2) : NULL;
        const struct jv *brand = jv_get(edoc, "cpu_brand");
        if (brand && brand->type == JV_STRING && !in.brand[0])
            vzcaps_clip(brand->string, 100, in.brand, sizeof in.brand); /* no chip has a longer name */
        jv_free(edoc);
        free(etext);
        for (int k = 0; k < N_ROLES; k++) {
            char *path = xformat("%s/%s.json", dirs[d], bench_role_names[k]);
            int rc = access(path, R_OK) != 0 ? 0 : (found++, report_add(&in, (enum bench_role)k, path, err, sizeof err));
            free(path);
            if (rc != 0) {
                eprintf("vzcaps report: %s", err);
                return 1;
            }
        }
        if (!found) {
            eprintf("vzcaps report: %s: not a bundle (no stock.json, unlocked.json or host.json)", dirs[d]);
            return 1;
        }
        /* a guest bundle has both runs; one without the other is incomplete, not a smaller report */
        char *s_path = xformat("%s/stock.json", dirs[d]), *u_path = xformat("%s/unlocked.json", dirs[d]);
        bool has_s = access(s_path, F_OK) == 0, has_u = access(u_path, F_OK) == 0;
        free(s_path);
        free(u_path);
        if (has_s != has_u) {
            eprintf("vzcaps report: %s: incomplete bundle: %s is missing", dirs[d], has_s ? "unlocked.json" : "stock.json");
            return 1;
        }
    }
    if (bench_table_check(&in.table, err, sizeof err) != 0) {
        eprintf("vzcaps report: %s", err);
        return 1;
    }
    const char *outs[3] = {svg, csv, md};
    /* every output is checked before anything is written or printed; "-" is stdout (instead
     * of the table) */
    bool to_stdout = false;
    for (int k = 0; k < 3; k++) {
        if (!outs[k])
            continue;
        if (strcmp(outs[k], "-") == 0) {
            if (to_stdout)
                return usage_error("report", "only one of --svg, --csv and --md can be - (standard output)");
            to_stdout = true;
            continue;
        }
        for (int m = 0; m < k; m++)
            if (outs[m] && strcmp(outs[m], outs[k]) == 0)
                return usage_error("report", "%s is given as two outputs", outs[k]);
        const char *why = output_refusal(outs[k], k, force);
        if (why) {
            eprintf("vzcaps report: cannot write %s: %s", outs[k], why);
            return 1;
        }
    }
    void (*render[3])(const struct bench_table *, FILE *) = {bench_render_svg, bench_render_csv, bench_render_md};
    for (int k = 0; k < 3; k++) { /* the files first: a failed write leaves nothing printed */
        if (!outs[k] || strcmp(outs[k], "-") == 0)
            continue;
        char *buf = NULL, *err = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);
        if (!f) {
            eprintf("vzcaps report: %s: out of memory", outs[k]);
            return 1;
        }
        render[k](&in.table, f);
        if (fclose(f) != 0) {
            free(buf);
            eprintf("vzcaps report: %s: out of memory", outs[k]);
            return 1;
        }
        char *marked = with_marker(k, buf);
        struct vzcaps_wopts opts = {.mode = 0644, .replace = force ? VZCAPS_FORCE : VZCAPS_IF_MARKED, .marker = markers[k]};
        int rc = vzcaps_write_file(outs[k], marked, strlen(marked), &opts, &err);
        free(marked);
        free(buf);
        if (rc != 0) {
            eprintf("vzcaps report: cannot write %s", err ? err : outs[k]);
            free(err);
            return 1;
        }
    }
    if (!to_stdout)
        report_print(&in, json);
    for (int k = 0; k < 3; k++)
        if (outs[k] && strcmp(outs[k], "-") == 0)
            render[k](&in.table, stdout);
    return 0;
}

int cmd_report(int argc, char **argv)
{
    /* at most argc of each: no argument is ever dropped */
    const char **dirs = calloc((size_t)argc, sizeof *dirs);
    struct rfile *files = calloc((size_t)argc, sizeof *files);
    int rc = dirs && files ? report_main(argc, argv, dirs, files) : 1;
    free(dirs);
    free(files);
    return rc;
}
