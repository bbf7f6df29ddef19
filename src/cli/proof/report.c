/* vzcaps report: the benchmark table recomputed from raw llama-bench JSON (files or bundles),
 * with what the Metal backend itself reported in each run.
 * Never: writes over one of its inputs, through a link, or over a file vzcaps did not write
 * without --force (outputs go through safewrite, all checked before anything is printed). */
#define _XOPEN_SOURCE 700
#define _DARWIN_C_SOURCE /* O_NOFOLLOW */
#include "../../common/safewrite.h"
#include "../../data/benchdata.h"
#include "../cli.h"
#include "../../data/jsonread.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

struct report_input {
    struct bench_table table; /* the runs, and what each run's stderr reported */
    char brand[128]; /* cpu_brand of a bundle's environment.json, "" when none */
};

/* The host chip's real Apple family (bench_host_family: the host run's GPU family line, else
 * the chip of a bundle's environment.json or of the runs' cpu_info); 0 when unknown. */
static long host_family(const struct report_input *in, const char **from)
{
    return bench_host_family(&in->table, from);
}

/* The Apple family a run reported above the host's, 0 when none. */
static long above_host(const struct bench_table *t, int role, long host)
{
    long f = t->have_caps[role] ? t->caps[role].apple_family : 0;
    return host && f > host ? f : 0;
}

/* Every file read, by device and inode: an output that is one of them is refused. The list
 * grows with the inputs (no fixed table: an input past a limit is never left unprotected). */
static struct stat *inputs;
static size_t n_inputs, cap_inputs;

static void note_input(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    if (n_inputs == cap_inputs) {
        size_t cap = cap_inputs ? 2 * cap_inputs : 64;
        struct stat *more = realloc(inputs, cap * sizeof *more);
        if (!more) {
            eprintf("vzcaps report: out of memory");
            exit(1);
        }
        inputs = more;
        cap_inputs = cap;
    }
    inputs[n_inputs++] = st;
}

/* FILE.stderr beside FILE.json, when there is one: read (the first of a role gives its
 * capabilities) or the run fails naming it; none at all is no error. */
static int companion_stderr(struct report_input *in, enum bench_role role, const char *json_path, char *err, size_t errlen)
{
    size_t n = strlen(json_path);
    bool ext = n > 5 && strcmp(json_path + n - 5, ".json") == 0;
    char *path = xformat("%.*s.stderr", (int)(ext ? n - 5 : n), json_path);
    bool missing = false;
    struct stat lst;
    int rc = bench_table_read_stderr(&in->table, role, path, &missing, err, errlen);
    if (rc != 0 && missing && lstat(path, &lst) == 0) /* a link to nothing is there, and unusable */
        snprintf(err, errlen, "%s: a symbolic link to a file that does not exist", path);
    else if (rc != 0 && missing)
        rc = 0;
    note_input(path);
    free(path);
    return rc;
}

static int report_add(struct report_input *in, enum bench_role role, const char *path, char *err, size_t errlen)
{
    note_input(path);
    if (bench_table_add_file(&in->table, role, path, err, errlen) != 0)
        return -1;
    return companion_stderr(in, role, path, err, errlen);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The role a file in a directory plays by its name: stock*.json, unlocked*.json, host*.json
 * (a bundle's stock.json, or a data set's stock-guest.json); -1 for any other file. */
static int role_of_name(const char *name)
{
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 5, ".json") != 0)
        return -1;
    for (int k = 0; k < N_ROLES; k++)
        if (strncmp(name, bench_role_names[k], strlen(bench_role_names[k])) == 0)
            return k;
    return -1;
}

#define ROLE_FILES "stock*.json, unlocked*.json or host*.json (plain llama-bench -o json output, or a bundle of vzcaps bench)"

/* Every llama-bench file of a directory, by role, in name order. 0, or 1 after one line. */
static int report_add_dir(struct report_input *in, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        eprintf("vzcaps report: %s: cannot read the directory: %s", dir, strerror(errno));
        return 1;
    }
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    struct dirent *e;
    while (names && (e = readdir(d))) {
        if (role_of_name(e->d_name) < 0)
            continue;
        if (n == cap) {
            char **more = realloc(names, (cap *= 2) * sizeof *names);
            if (!more)
                break;
            names = more;
        }
        names[n++] = xformat("%s", e->d_name);
    }
    closedir(d);
    if (!names) {
        eprintf("vzcaps report: %s: out of memory", dir);
        return 1;
    }
    qsort(names, n, sizeof *names, cmp_names);
    int rc = 0, per_role[N_ROLES] = {0};
    char err[1400];
    for (size_t i = 0; i < n && !rc; i++) {
        int role = role_of_name(names[i]);
        char *path = xformat("%s/%s", dir, names[i]);
        if (report_add(in, (enum bench_role)role, path, err, sizeof err) != 0) {
            eprintf("vzcaps report: %s", err);
            rc = 1;
        }
        per_role[role]++;
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc)
        return rc;
    if (!n) {
        eprintf("vzcaps report: %s: no llama-bench files: expected %s", dir, ROLE_FILES);
        return 1;
    }
    /* a guest's runs come in pairs; one without the other is incomplete, not a smaller report */
    if (!per_role[ROLE_STOCK] != !per_role[ROLE_UNLOCKED]) {
        eprintf("vzcaps report: %s: incomplete: %s*.json is missing (the stock and unlocked runs of a guest come in pairs)", dir,
                per_role[ROLE_STOCK] ? "unlocked" : "stock");
        return 1;
    }
    return 0;
}

static const char *tri(int v) { return v < 0 ? "?" : v ? "yes" : "no"; }

/* How the unlocked run's family compares with the host's: "same", "above", "below", or NULL
 * when either is unknown. llama.cpp keys its tuning rows by this family, so a difference
 * means the unlocked run used rows tuned for another GPU generation than the one it ran on. */
static const char *unlocked_vs_host(const struct report_input *in, long *unl, long *host, const char **from)
{
    const struct bench_table *t = &in->table;
    *host = host_family(in, from);
    *unl = t->have_caps[ROLE_UNLOCKED] ? t->caps[ROLE_UNLOCKED].apple_family : 0;
    if (!*host || !*unl)
        return NULL;
    return *unl == *host ? "same" : *unl > *host ? "above" : "below";
}

/* report --json: the rows, each run's capabilities, and the family against the host's. */
static void report_print_json(const struct report_input *in, long host, const char *vs)
{
    const struct bench_table *t = &in->table;
    struct json j;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    bench_render_json_rows(t, &j);
    json_obj(&j, "capabilities");
    for (int k = 0; k < N_ROLES; k++) {
        if (t->have_caps[k])
            metal_caps_json(&t->caps[k], &j, bench_role_names[k]);
        else
            json_null(&j, bench_role_names[k]);
    }
    json_end_obj(&j);
    json_int_or_null(&j, "host_apple_family", host != 0, host);
    json_arr(&j, "above_host_family"); /* runs that reported an Apple family above the host's */
    for (int k = 0; k < N_ROLES; k++)
        if (above_host(t, k, host))
            json_str(&j, NULL, bench_role_names[k]);
    json_end_arr(&j);
    json_str(&j, "unlocked_family_vs_host", vs);
    json_str(&j, "build_commit", t->build_commit[0] ? t->build_commit : NULL);
    json_int_or_null(&j, "build_number", t->build_number != 0, t->build_number);
    json_str(&j, "model_type", t->model_type[0] ? t->model_type : NULL);
    json_str(&j, "chip", t->chip[0] ? t->chip : NULL);
    json_str(&j, "date", t->date[0] ? t->date : NULL);
    json_end_obj(&j);
    json_finish(&j);
}

/* The text report's table of what each run's Metal backend reported. */
static void report_print_caps(const struct bench_table *t)
{
    printf("\nwhat the Metal backend reported:\n%-10s %-26s %-14s %-9s %-9s %-7s %-7s %s\n", "run", "GPU", "families", "simd red.",
           "simd mm", "bfloat", "tensor", "shim (its log line)");
    for (int k = 0; k < N_ROLES; k++) {
        if (!t->have_caps[k])
            continue;
        const struct metal_caps *c = &t->caps[k];
        char fams[METAL_MAX_FAMILIES * 22] = ""; /* every family: never cut */
        for (size_t i = 0; i < c->n_families; i++)
            vzcaps_appendf(fams, sizeof fams, "%s%ld", i ? "," : "", c->families[i]);
        printf("%-10s %-26s %-14s %-9s %-9s %-7s %-7s %s\n", bench_role_names[k], c->found ? esc(c->gpu_name) : "(no Metal lines)",
               fams, tri(c->simdgroup_reduction), tri(c->simdgroup_mm), tri(c->bfloat), tri(c->tensor), c->shim[0] ? c->shim : "none");
    }
}

/* The text report's warnings: a run above the host chip's family, the unlocked one above or below it. */
static void report_print_family_warnings(const struct bench_table *t, long unl, long host, const char *vs, const char *from)
{
    for (int k = 0; k < N_ROLES; k++) {
        if (k == ROLE_UNLOCKED)
            continue; /* said below, with the tuning */
        long over = above_host(t, k, host);
        if (over)
            printf("! the %s run reported Apple%ld (%ld), above the host chip's real Apple%ld (%ld, from %s): more than the "
                   "hardware has; vzcaps claims at most the host's family\n",
                   bench_role_names[k], over - 1000, over, host - 1000, host, from);
    }
    if (vs && strcmp(vs, "above") == 0)
        printf("! the unlocked run reported Apple%ld (%ld), above the host chip's real Apple%ld (%ld, from %s): more than the "
               "hardware has, and llama.cpp chose tuning rows for another GPU generation; vzcaps claims at most the host's family\n",
               unl - 1000, unl, host - 1000, host, from);
    else if (vs && strcmp(vs, "below") == 0)
        printf("! the unlocked run reported Apple%ld (%ld), below the host chip's Apple%ld (%ld, from %s): llama.cpp chose "
               "tuning rows for an older GPU generation than the one that ran the work\n",
               unl - 1000, unl, host - 1000, host, from);
}

static void report_print(const struct report_input *in, bool json)
{
    const struct bench_table *t = &in->table;
    const char *from;
    long unl, host;
    const char *vs = unlocked_vs_host(in, &unl, &host, &from);
    if (json) {
        report_print_json(in, host, vs);
        return;
    }
    if (t->model_type[0] || t->build_commit[0] || t->chip[0] || t->date[0]) {
        printf("%s", t->model_type[0] ? esc(t->model_type) : "model not named");
        if (t->build_commit[0])
            printf(", llama.cpp %s (build %lld)", esc(t->build_commit), t->build_number);
        if (t->chip[0])
            printf(", %s", t->chip);
        if (t->date[0])
            printf(", %s", t->date);
        printf("\n\n");
    }
    bench_render_text(t, stdout);
    bool any = false;
    for (int k = 0; k < N_ROLES; k++)
        any |= t->have_caps[k];
    if (!any)
        return;
    report_print_caps(t);
    report_print_family_warnings(t, unl, host, vs, from);
}

/* What marks an output file as one vzcaps report wrote (replaced without --force): a comment in
 * the SVG (after its XML declaration) and in the Markdown (its first line); CSV has no comment
 * syntax, so an existing CSV file is replaced only with --force. Indexed svg, csv, md. */
static const char *const markers[3] = {"<!-- written by vzcaps report -->", NULL, "<!-- written by vzcaps report -->"};
/* where each stands (record.h, docs/safety.md rule 4): nowhere else in the file counts */
static const enum vzcaps_mark_at marker_at[3] = {VZCAPS_MARK_AFTER_XML_DECL, VZCAPS_MARK_LINE1, VZCAPS_MARK_LINE1};

static char *with_marker(int k, const char *text)
{
    if (!markers[k])
        return xformat("%s", text);
    const char *nl = strncmp(text, "<?xml", 5) == 0 ? strchr(text, '\n') : NULL;
    if (nl)
        return xformat("%.*s%s\n%s", (int)(nl + 1 - text), text, markers[k], nl + 1);
    return xformat("%s\n%s", markers[k], text);
}

/* CSV has no comment syntax: the record .NAME.vzcaps-report beside it (record.h: "vzcaps report",
 * then the file's device, inode, time and SHA-256) says that vzcaps report wrote it as it is now. */
#define CSV_MAKER "vzcaps report"
#define CSV_NAME_MAX (255 - 15) /* the record's name is a file name too: "." NAME ".vzcaps-report" */

/* The directory of path opened (as the user named it; "." for a bare name), its last component
 * and the record's name in *base and *rec (on the heap). -1 when the directory cannot be opened. */
static int csv_parts(const char *path, char **base, char **rec)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? xformat("%.*s", (int)(slash - path), path) : xformat(".");
    int fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    *base = xformat("%s", slash ? slash + 1 : path);
    *rec = xformat(".%s.vzcaps-report", *base);
    return fd;
}

static bool csv_recorded(const char *path)
{
    char *base, *rec;
    int fd = csv_parts(path, &base, &rec);
    bool ours = fd >= 0 && vzcaps_made_by_record(fd, base, rec, CSV_MAKER);
    if (fd >= 0)
        close(fd);
    free(base);
    free(rec);
    return ours;
}

/* After the CSV at path is written: its record beside it, replacing only a record of ours. */
static int csv_record_write(const char *path)
{
    char *base, *rec, *err = NULL;
    int fd = csv_parts(path, &base, &rec), rc = -1;
    char *text = fd >= 0 ? vzcaps_record_text(fd, base, CSV_MAKER, NULL) : NULL;
    const char *slash = strrchr(path, '/'); /* the record's directory, as the user named it */
    char *dir = slash ? xformat("%.*s", slash == path ? 1 : (int)(slash - path), path) : xformat(".");
    struct vzcaps_wopts opts = {.mode = 0644, .replace = VZCAPS_IF_MARKED, .marker = CSV_MAKER,
                                .marker_at = VZCAPS_MARK_LINE1};
    if (text)
        rc = vzcaps_write_fileat(fd, dir, rec, text, strlen(text), &opts, &err);
    if (rc != 0)
        eprintf("vzcaps report: %s: written, but its record %s was not (%s): a later run will not replace it without --force",
                path, rec, err ? err : strerror(errno));
    free(err), free(text), free(base), free(rec), free(dir);
    if (fd >= 0)
        close(fd);
    return rc == 0 ? 0 : 1;
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
    if (!markers[k] && strlen(strrchr(path, '/') ? strrchr(path, '/') + 1 : path) > CSV_NAME_MAX)
        return "its name is longer than 240 bytes, so its record .NAME.vzcaps-report (a file name: 255 bytes at most) "
               "cannot be made beside it";
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
    bool marked = markers[k] ? vzcaps_marked_file(AT_FDCWD, path, markers[k], marker_at[k]) : csv_recorded(path);
    return marked ? NULL : "it exists and vzcaps report did not write it (--force replaces it)";
}

/* A bundle's environment.json, when there is one: its cpu_brand names the chip. One that is
 * there and cannot be used fails the run with its name and the reason. */
static int read_environment(struct report_input *in, const char *dir)
{
    char *envp = xformat("%s/environment.json", dir), err[1400];
    struct stat lst;
    if (lstat(envp, &lst) != 0 && (errno == ENOENT || errno == ENOTDIR)) { /* none (or no directory: said below) */
        free(envp);
        return 0;
    }
    size_t elen;
    char *etext = read_text_file(envp, &elen, err, sizeof err);
    note_input(envp);
    struct jv *edoc = etext ? jv_parse(etext, elen, err + 700, sizeof err - 700) : NULL;
    if (!etext)
        eprintf("vzcaps report: %s", err);
    else if (!edoc)
        eprintf("vzcaps report: %s: not valid JSON: %s", envp, err + 700);
    const struct jv *brand = jv_get(edoc, "cpu_brand");
    if (brand && brand->type == JV_STRING && !in->brand[0])
        vzcaps_clip(brand->string, 100, in->brand, sizeof in->brand); /* no chip has a longer name */
    int rc = edoc ? 0 : 1;
    jv_free(edoc);
    free(etext);
    free(envp);
    return rc;
}

/* report's options: the bundle directories and files to read (by role, as given), the outputs. */
struct report_opts {
    const char **dirs, **files[N_ROLES];
    int nd, nf[N_ROLES];
    bool json, force;
    const char *outs[3]; /* --svg, --csv, --md */
};

/* Every run the options name, read into in and checked: 0, or 1 after the message. */
static int report_read(const struct report_opts *o, struct report_input *in)
{
    char err[1400];
    for (int k = 0; k < N_ROLES; k++)
        for (int i = 0; i < o->nf[k]; i++)
            if (report_add(in, (enum bench_role)k, o->files[k][i], err, sizeof err) != 0) {
                eprintf("vzcaps report: %s", err);
                return 1;
            }
    for (int d = 0; d < o->nd; d++) {
        if (read_environment(in, o->dirs[d]) != 0)
            return 1;
        if (report_add_dir(in, o->dirs[d]) != 0)
            return 1;
    }
    if (bench_table_check(&in->table, err, sizeof err) != 0) {
        eprintf("vzcaps report: %s", err);
        return 1;
    }
    struct vzcaps_chip chip; /* a bundle's own record of the machine names the chip first */
    vzcaps_chip_from_brand(in->brand[0] ? in->brand : NULL, &chip);
    if (chip.known) {
        snprintf(in->table.chip, sizeof in->table.chip, "%s", chip.name);
        snprintf(in->table.chip_from, sizeof in->table.chip_from, "environment.json's cpu_brand");
    }
    if (in->table.n == 0) { /* never a table of dashes with exit 0 */
        eprintf("vzcaps report: no llama-bench runs were read");
        return 1;
    }
    return 0;
}

/* Every output is checked before anything is written or printed; "-" is stdout (instead of
 * the table): 0 with *to_stdout, or the exit status after the message. */
static int report_check_outputs(const struct report_opts *o, bool *to_stdout)
{
    const char *const *outs = o->outs;
    *to_stdout = false;
    for (int k = 0; k < 3; k++) {
        if (!outs[k])
            continue;
        if (strcmp(outs[k], "-") == 0) {
            if (*to_stdout)
                return usage_error("report", "only one of --svg, --csv and --md can be - (standard output)");
            *to_stdout = true;
            continue;
        }
        for (int m = 0; m < k; m++)
            if (outs[m] && strcmp(outs[m], "-") != 0 && vzcaps_same_output(outs[m], outs[k])) {
                if (strcmp(outs[m], outs[k]) == 0)
                    return usage_error("report", "%s is given as two outputs", outs[k]);
                return usage_error("report", "%s and %s are one file, given as two outputs", outs[m], outs[k]);
            }
        const char *why = output_refusal(outs[k], k, o->force);
        if (why) {
            eprintf("vzcaps report: cannot write %s: %s", outs[k], why);
            return 1;
        }
    }
    return 0;
}

static void (*const report_render[3])(const struct bench_table *, FILE *) = {bench_render_svg, bench_render_csv, bench_render_md};

/* Output k rendered, marked and written through safewrite: 0, or 1 after the message. */
static int report_write_output(const struct report_opts *o, const struct report_input *in, int k)
{
    const char *path = o->outs[k];
    char *buf = NULL, *err = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) {
        eprintf("vzcaps report: %s: out of memory", path);
        return 1;
    }
    report_render[k](&in->table, f);
    if (fclose(f) != 0) {
        free(buf);
        eprintf("vzcaps report: %s: out of memory", path);
        return 1;
    }
    char *marked = with_marker(k, buf);
    bool csv = !markers[k];
    struct vzcaps_wopts opts = {.mode = 0644, .replace = o->force || (csv && csv_recorded(path)) ? VZCAPS_FORCE : VZCAPS_IF_MARKED,
                                .marker = markers[k], .marker_at = marker_at[k], .force_option = true};
    int rc = vzcaps_write_file(path, marked, strlen(marked), &opts, &err);
    free(marked);
    free(buf);
    if (rc != 0) {
        eprintf("vzcaps report: cannot write %s", err ? err : path);
        free(err);
        return 1;
    }
    return csv ? csv_record_write(path) : 0;
}

static int report_main(int argc, char **argv, const char **files)
{
    static struct report_input in;
    memset(&in, 0, sizeof in);
    n_inputs = 0;
    struct report_opts o = {.files = {files, files + argc, files + 2 * argc}};
    const struct opt_bind binds[] = {
        OPT_LIST("--stock", o.files[ROLE_STOCK], &o.nf[ROLE_STOCK]), OPT_LIST("--unlocked", o.files[ROLE_UNLOCKED], &o.nf[ROLE_UNLOCKED]),
        OPT_LIST("--host", o.files[ROLE_HOST], &o.nf[ROLE_HOST]), OPT_VALUE("--svg", &o.outs[0]), OPT_VALUE("--csv", &o.outs[1]),
        OPT_VALUE("--md", &o.outs[2]), OPT_FLAG("--json", &o.json), OPT_FLAG("--force", &o.force), {0}};
    bool to_stdout;
    int rc = cli_parse("report", &argc, argv, binds);
    o.dirs = (const char **)argv + 1, o.nd = argc - 1;
    if (!rc && !o.nd && !o.nf[ROLE_STOCK] && !o.nf[ROLE_UNLOCKED] && !o.nf[ROLE_HOST])
        return usage_error("report", "give directories (bundles, or stock*.json, unlocked*.json, host*.json files) or "
                                     "--stock/--unlocked/--host files");
    if (rc || (rc = report_read(&o, &in)) || (rc = report_check_outputs(&o, &to_stdout)))
        return rc;
    for (int k = 0; k < 3; k++) /* the files first: a failed write leaves nothing printed */
        if (o.outs[k] && strcmp(o.outs[k], "-") != 0 && report_write_output(&o, &in, k) != 0)
            return 1;
    if (!to_stdout)
        report_print(&in, o.json);
    for (int k = 0; k < 3; k++)
        if (o.outs[k] && strcmp(o.outs[k], "-") == 0)
            report_render[k](&in.table, stdout);
    return 0;
}

int cmd_report(int argc, char **argv)
{
    /* at most argc of each role's: no argument is ever dropped */
    const char **files = calloc((size_t)argc * N_ROLES, sizeof *files);
    int rc = files ? report_main(argc, argv, files) : 1;
    free(files);
    return rc;
}
