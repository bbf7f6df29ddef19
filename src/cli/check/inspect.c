/* vzcaps inspect, and run's check of its target: what a Metal client's binary tells in
 * advance about injection and about what the profile changes for it.
 * Never: runs the binary. */
#include "../cli.h"
#include "../../macho/macho.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool uses(const struct macho_slice *s, const char *sel)
{
    for (size_t i = 0; i < s->n_selectors; i++)
        if (strcmp(s->selectors[i], sel) == 0)
            return true;
    return false;
}

/* Ollama's server, by its file name ("ollama", the app's "Ollama"): it does no Metal work
 * itself; it starts llama.cpp's llama-server twice, `--list-devices` to read GPU memory
 * (again with GGML_METAL_TENSOR_DISABLE=1 after a Metal failure) and then as the runner. */
static bool is_ollama(const char *self)
{
    static const char *const names[] = {"ollama", "Ollama", "Ollama.app", "ollama.app"};
    for (size_t i = 0; self && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(self, names[i]) == 0)
            return true;
    return false;
}

/* What the profile changes for this slice: one verdict per recognised client, each decided
 * once, so no two lines can disagree; warnings marked "!". At most 6 lines. */
static size_t effects(const struct macho_slice *s, const struct vzcaps_profile *p, const char *self, char out[][240])
{
    size_t n = 0;
    bool en = p->state == VZCAPS_ENABLED;
    bool metal3 = false;
    for (size_t i = 0; i < p->n_extra; i++)
        metal3 |= p->extra[i] == 5001;
    if (s->own) {
        snprintf(out[n++], 240, "vzcaps's own binary: not a Metal client");
        return n;
    }
    if (!en) {
        snprintf(out[n++], 240, "profile leaves this process stock");
        return n;
    }
    bool ollama = is_ollama(self);
    if (ollama && p->inherit)
        snprintf(out[n++], 240, "Ollama: inherit is on: its llama-server children (--list-devices discovery, then the runner) get the profile");
    else if (ollama)
        snprintf(out[n++], 240, "! Ollama: its llama-server children (--list-devices discovery, then the runner) do the GPU work and "
                                "start stock: use vzcaps run --inherit, or inherit = yes in a section matching ollama llama-server");
    if (s->ggml) {
        if (p->apple_family_max >= 1007)
            snprintf(out[n++], 240, "ggml/llama.cpp: gains: Apple%lld turns on SIMD-group reduction, matrix multiply and bfloat",
                     (long long)(p->apple_family_max - 1000));
        else
            snprintf(out[n++], 240, "ggml/llama.cpp: gains nothing: Apple%lld is below Apple7, which its fast paths need",
                     (long long)(p->apple_family_max - 1000));
    }
    if (s->mlx)
        snprintf(out[n++], 240, "%sMLX: %s", metal3 ? "! " : "",
                 metal3 ? "extra family metal3 makes it fail with \"Unable to construct residency set\"; drop metal3"
                        : "gains nothing: it ignores Apple families");
    if (s->torch_mps) {
        if (!vzcaps_caller_in_scope(p, "libtorch_cpu.dylib"))
            snprintf(out[n++], 240, "PyTorch MPS: keeps the stock answers (caller scope: stock_callers)");
        else if (p->chip.known && p->apple_family_max > p->chip.apple_family)
            snprintf(out[n++], 240, "! PyTorch MPS: a family above the host's real one switches off correctness workarounds");
        else
            snprintf(out[n++], 240, "PyTorch MPS: gets the profile's answers (stock_callers does not cover it)");
    }
    if (!s->ggml && !s->mlx && !s->torch_mps && !ollama) { /* no client recognised: what its own references say */
        bool fam = uses(s, "supportsFamily:"), tg = uses(s, "maxThreadgroupMemoryLength"), ws = uses(s, "recommendedMaxWorkingSetSize");
        if (fam || (tg && p->max_threadgroup_memory) || (ws && p->recommended_working_set_size))
            snprintf(out[n++], 240, "no client recognised; it asks queries this profile changes");
        else
            snprintf(out[n++], 240, "no client recognised, and it references none of the queries this profile changes (a library it loads may)");
    }
    return n;
}

/* ---- arm64e and scripts: what macOS does at launch (apart from the client verdicts) ---- */

/* One line for an arm64e slice when the library has none ("" otherwise): what the program is
 * and what happens when the library reaches it. */
static void arm64e_verdict(const struct macho_slice *s, const char *path, bool lib_arm64e, char *out, size_t len)
{
    out[0] = '\0';
    if (strcmp(s->arch, "arm64e") != 0 || lib_arm64e)
        return;
    const char *kind = vzcaps_arm64e_client(path);
    snprintf(out, len, "%s runs as arm64e and the library has no arm64e slice: dyld terminates it if the library reaches it "
                       "(vzcaps run refuses it; --inherit or a DYLD_INSERT_LIBRARIES in the environment would not); "
                       "run an arm64 build instead (for Python: Homebrew's or python.org's python3)",
             kind ? kind : "this program");
}

/* Whether the library inspect is about (found as run finds it) has an arm64e slice. */
static bool library_arm64e(void)
{
    char library[4096], tried[2400];
    return find_library(library, sizeof library, tried, sizeof tried) == 0 && library_has_arch(library, "arm64e");
}

static void plan_member(struct json *j, const struct launch_plan *pl)
{
    if (pl)
        launch_plan_json(j, "launch", pl);
    else
        json_null(j, "launch");
}

/* A #! script, reported with its plan p: 1, or 0 when path is not one. */
static int script_report(const char *path, struct json *j, const struct launch_plan *p)
{
    static struct exec_image k;
    exec_image_read(path, &k);
    if (!k.script)
        return 0; /* not a #! script: read as Mach-O (which names what else it is) */
    char verdict[2400];
    if (p->rc != 0)
        snprintf(verdict, sizeof verdict, "cannot tell: %s", p->why);
    else if (p->protected_image)
        launch_plan_advice(p, verdict, sizeof verdict);
    else if (p->rewritten)
        snprintf(verdict, sizeof verdict, "vzcaps run starts %s (%s) directly; started through its #! line, macOS would "
                 "remove the injection at env, which SIP protects", p->env_name, p->exec_path);
    else
        snprintf(verdict, sizeof verdict, "honoured: %s, which runs it, is outside the locations SIP protects", p->image);
    const char *injection = launch_plan_injection(p), *line = p->rc ? "" : p->line;
    if (j) {
        json_obj(j, NULL);
        json_str(j, "path", path);
        json_obj(j, "script");
        json_str(j, "line", line[0] == '#' ? line : NULL);
        json_str(j, "interpreter", k.sb.n_words ? vzcaps_shebang_word(&k.sb, 0) : "/bin/sh");
        json_str(j, "env_program", p->rewritten ? p->env_name : NULL);
        json_str(j, "started", p->rc == 0 ? (p->rewritten ? p->exec_path : p->image) : NULL);
        json_bool(j, "sip_protected", p->rc == 0 && p->protected_image);
        json_str(j, "injection", injection);
        json_str(j, "reason", verdict);
        json_end_obj(j);
        plan_member(j, p->rc ? NULL : p);
        json_end_obj(j);
    } else {
        printf("%s: script, %s\n", esc(path), esc(line[0] ? line : "(its #! line cannot be read)"));
        printf("    injection   %s: %s\n", injection, esc(verdict));
        if (!p->rc)
            launch_plan_text(stdout, p);
    }
    return 1;
}

/* Why an image's calls get stock answers, or NULL when they get the profile's. */
static const char *scope_stock_reason(const struct vzcaps_profile *p, const char *image, char *buf, size_t len)
{
    const char *rule = vzcaps_caller_rule(p, image);
    if (strcmp(rule, "callers") == 0)
        return NULL;
    bool torch = strncmp(image, "libtorch", 8) == 0;
    snprintf(buf, len, "%s%s", torch ? "PyTorch MPS, " : "", rule);
    return buf;
}

/* Each image of the slice whose calls the scope answers stock: the file itself and every
 * library it links (the images that can call Metal on its behalf). */
static void scope_lines(const struct macho_slice *s, const char *self, const struct vzcaps_profile *p,
                        void (*emit)(void *ctx, const char *image, const char *why), void *ctx)
{
    char why[128];
    if (p->state != VZCAPS_ENABLED)
        return;
    if (scope_stock_reason(p, self, why, sizeof why))
        emit(ctx, self, why);
    for (size_t i = 0; i < s->n_libs; i++) {
        const char *base = vzcaps_basename(s->libs[i]);
        if (scope_stock_reason(p, base, why, sizeof why))
            emit(ctx, base, why);
    }
}

static void scope_json_one(void *ctx, const char *image, const char *why)
{
    struct json *j = ctx;
    json_obj(j, NULL);
    json_str(j, "image", image);
    json_str(j, "answers", "stock");
    json_str(j, "why", why);
    json_end_obj(j);
}

static void scope_text_one(void *ctx, const char *image, const char *why)
{
    (void)ctx;
    printf("    scope       %s: stock (%s)\n", esc(image), why);
}

static void slice_json(struct json *j, const struct macho_slice *s, const struct vzcaps_profile *p, const char *self,
                       const char *path, bool lib_arm64e)
{
    char a64e[600];
    arm64e_verdict(s, path, lib_arm64e, a64e, sizeof a64e);
    char eff[6][240];
    size_t ne = effects(s, p, self, eff);
    json_obj(j, NULL);
    json_str(j, "arch", s->arch);
    json_int(j, "cputype", s->cputype);
    json_int(j, "cpusubtype", s->cpusubtype & 0x00ffffffu);
    json_str(j, "minos", s->minos[0] ? s->minos : NULL);
    json_str(j, "install_name", s->install_name[0] ? s->install_name : NULL);
    json_arr(j, "libraries");
    for (size_t i = 0; i < s->n_libs; i++)
        json_str(j, NULL, s->libs[i]);
    json_end_arr(j);
    json_arr(j, "selectors");
    for (size_t i = 0; i < s->n_selectors; i++)
        json_str(j, NULL, s->selectors[i]);
    json_end_arr(j);
    json_bool(j, "signed", s->signed_);
    if (s->signed_) {
        json_bool(j, "signature_valid", s->signature_valid == 1);
        json_str(j, "signature_problem", s->signature_problem[0] ? s->signature_problem : NULL);
        json_str(j, "identifier", s->identifier);
        json_int(j, "cs_flags", s->cs_flags);
        json_bool(j, "adhoc", s->adhoc);
    } else {
        json_null(j, "signature_valid");
    }
    json_bool(j, "hardened_runtime", s->hardened_runtime);
    json_bool(j, "library_validation", s->library_validation);
    json_bool(j, "platform_binary", s->platform_binary);
    json_obj(j, "entitlements");
    json_bool(j, "present", s->entitlements_present);
    json_bool(j, "com.apple.security.cs.allow-dyld-environment-variables", s->allow_dyld_env);
    json_bool(j, "com.apple.security.cs.disable-library-validation", s->disable_library_validation);
    json_end_obj(j);
    json_str(j, "injection", macho_injection_name(s->injection));
    json_str(j, "injection_reason", s->injection_reason);
    json_bool(j, "prepare_helps", macho_prepare_helps(s)); /* vzcaps prepare makes a copy that accepts the library */
    json_arr(j, "clients");
    if (s->ggml)
        json_str(j, NULL, "ggml");
    if (s->mlx)
        json_str(j, NULL, "mlx");
    if (s->torch_mps)
        json_str(j, NULL, "pytorch-mps");
    if (is_ollama(self))
        json_str(j, NULL, "ollama");
    json_end_arr(j);
    json_arr(j, "effects");
    for (size_t i = 0; i < ne; i++)
        json_str(j, NULL, eff[i]);
    json_end_arr(j);
    json_arr(j, "stock_images"); /* images whose calls the caller scope answers stock */
    scope_lines(s, self, p, scope_json_one, j);
    json_end_arr(j);
    json_str(j, "arm64e", a64e[0] ? a64e : NULL); /* what happens when the library reaches an arm64e slice */
    json_end_obj(j);
}

static void slice_text(const struct macho_slice *s, const struct vzcaps_profile *p, const char *self, const char *path,
                       bool lib_arm64e)
{
    char a64e[600];
    arm64e_verdict(s, path, lib_arm64e, a64e, sizeof a64e);
    char eff[6][240];
    size_t ne = effects(s, p, self, eff);
    printf("  slice %s  (minimum macOS %s)\n", s->arch, s->minos[0] ? s->minos : "not stated");
    if (!s->signed_)
        printf("    signature   none\n");
    else
        printf("    signature   %s%s, %s%s%s\n", s->adhoc ? "ad hoc" : "signed", s->identifier[0] ? "" : "",
               s->signature_valid == 1 ? "hashes verify" : s->signature_valid == 0 ? "INVALID: " : "not verified: ",
               s->signature_valid == 1 ? "" : esc(s->signature_problem), s->hardened_runtime ? ", hardened runtime" : "");
    if (s->entitlements_present)
        printf("    entitle.    allow-dyld-environment-variables %s, disable-library-validation %s\n",
               s->allow_dyld_env ? "yes" : "no", s->disable_library_validation ? "yes" : "no");
    printf("    injection   %s: %s\n", macho_injection_name(s->injection), esc(s->injection_reason));
    if (a64e[0])
        printf("    arm64e      %s\n", esc(a64e));
    if (macho_prepare_helps(s))
        printf("    remedy      vzcaps prepare makes a private, ad-hoc-signed copy without the hardened runtime, which accepts the library\n");
    printf("    links      ");
    size_t shown = 0;
    for (size_t i = 0; i < s->n_libs; i++) {
        const char *l = s->libs[i];
        if (strstr(l, "Metal") || strstr(l, "ggml") || strstr(l, "mlx") || strstr(l, "torch"))
            printf(" %s%s", esc(vzcaps_basename(l)), s->lib_weak[i] ? " (weak)" : ""), shown++;
    }
    printf("%s\n", shown ? "" : " (nothing Metal-related)");
    printf("    selectors  ");
    for (size_t i = 0; i < s->n_selectors; i++)
        printf(" %s", s->selectors[i]);
    printf("%s\n", s->n_selectors ? "" : " (no Metal capability selectors found)");
    printf("    clients     %s%s%s%s\n", s->ggml ? "ggml " : "", s->mlx ? "mlx " : "", s->torch_mps ? "pytorch-mps " : "",
           s->ggml || s->mlx || s->torch_mps ? "" : "(none recognised)");
    for (size_t i = 0; i < ne; i++)
        printf("    %s %s\n", eff[i][0] == '!' ? "warning " : "effect  ", eff[i][0] == '!' ? eff[i] + 2 : eff[i]);
    scope_lines(s, self, p, scope_text_one, NULL);
}

/* What inspect was asked: the view's options, --json, and the files (the operands). */
struct inspect_run {
    struct cfg_opts o;
    bool json, lib_arm64e;
    int nf;
    const char **files;
};

/* The command line: 0, or a usage error's exit status. */
static int inspect_args(int argc, char **argv, struct inspect_run *in)
{
    const struct opt_bind binds[] = {OPT_VIEW(in->o), OPT_FLAG("--json", &in->json), {0}};
    int bad = cli_parse("inspect", &argc, argv, binds);
    in->files = (const char **)argv + 1, in->nf = argc - 1;
    if (!bad && in->nf == 0)
        return usage_error("inspect", "no file given");
    return bad ? bad : check_family_opt("inspect", in->o.family);
}

static void file_json(struct json *j, const char *file, const struct macho_file *mf, const struct vzcaps_config_result *r,
                      const struct inspect_run *in, const struct cfg_opts *fo, const struct launch_plan *pl)
{
    json_obj(j, NULL);
    json_str(j, "path", file);
    if (strcmp(mf->path, file) != 0) /* a bundle: the file read, and the Info.plist that named it */
        json_str(j, "executable", mf->path);
    json_str(j, "info_plist", mf->info_plist[0] ? mf->info_plist : NULL);
    json_bool(j, "universal", mf->fat);
    json_str(j, "profile", r->section[0] ? r->section : NULL);
    json_str(j, "view", fo->bare ? "library" : "run");
    json_bool(j, "enabled", r->profile.state == VZCAPS_ENABLED);
    json_int_or_null(j, "apple_family_max", r->profile.state == VZCAPS_ENABLED, r->profile.apple_family_max);
    json_arr(j, "slices");
    for (size_t i = 0; i < mf->n_slices; i++)
        slice_json(j, &mf->slices[i], &r->profile, fo->exe, file, in->lib_arm64e);
    json_end_arr(j);
    plan_member(j, pl);
    json_end_obj(j);
}

static void file_text(const char *file, const struct macho_file *mf, const struct vzcaps_config_result *r,
                      const struct inspect_run *in, const struct cfg_opts *fo, const struct launch_plan *pl)
{
    printf("%s: %s Mach-O, %zu slice%s\n", esc(file), mf->fat ? "universal" : "thin", mf->n_slices, mf->n_slices == 1 ? "" : "s");
    if (strcmp(mf->path, file) != 0) /* a bundle: which file, and what named it */
        printf("  main executable: %s (%s%s)\n", esc(mf->path), mf->info_plist[0] ? "CFBundleExecutable of " : "",
               mf->info_plist[0] ? esc(mf->info_plist) : "named after the bundle: no Info.plist with a CFBundleExecutable");
    for (size_t i = 0; i < mf->n_slices; i++)
        slice_text(&mf->slices[i], &r->profile, fo->exe, file, in->lib_arm64e);
    if (pl)
        launch_plan_text(stdout, pl);
}

/* One file: its script report or its Mach-O slices, with the launch plan of the file as a
 * command (an executable only: what run would start). 0, or 1 when it could not be read. */
static int inspect_file(const struct inspect_run *in, const char *file, struct json *j)
{
    static struct macho_file mf;
    static struct vzcaps_config_result r;
    static struct launch_plan plan;
    char err[4600];
    char *as_cmd = xformat("%s%s", strchr(file, '/') ? "" : "./", file); /* whole, never cut */
    char *cmd[] = {as_cmd, NULL};
    launch_plan_make(&plan, cmd, true); /* a plan even where it cannot start: plan.rc says why */
    const struct launch_plan *pl = plan.rc ? NULL : &plan;
    int sk = script_report(file, in->json ? j : NULL, &plan);
    launch_plan_free(&plan);
    free(as_cmd);
    if (sk != 0)
        return 0;
    if (macho_load(file, &mf, err, sizeof err) != 0) {
        eprintf("vzcaps inspect: %s", err);
        if (in->json) {
            json_obj(j, NULL);
            json_str(j, "path", file);
            json_str(j, "error", err);
            json_end_obj(j);
        }
        return 1;
    }
    struct cfg_opts fo = in->o; /* per file: run's implied --family depends on the file's name */
    fo.exe = vzcaps_basename(file);
    cli_configure_view(&fo, &r);
    if (in->json)
        file_json(j, file, &mf, &r, in, &fo, pl);
    else
        file_text(file, &mf, &r, in, &fo, pl);
    return 0;
}

int cmd_inspect(int argc, char **argv)
{
    static struct inspect_run in;
    memset(&in, 0, sizeof in);
    int bad = inspect_args(argc, argv, &in);
    if (bad)
        return bad;
    const char **files = in.files;
    /* the options are validated as check validates them: a configuration that cannot be
     * read (an unknown --profile, a bad file) stops here, for any file */
    static struct vzcaps_config_result first;
    struct cfg_opts probe_o = in.o;
    probe_o.exe = vzcaps_basename(files[0]);
    cli_configure_view(&probe_o, &first);
    if (first.profile.invalid) {
        eprintf("vzcaps inspect: configuration invalid: %s", first.profile.notes[0]);
        return 1;
    }
    int rc = 0;
    struct json j;
    if (in.json) {
        json_begin(&j, stdout);
        json_obj(&j, NULL);
        json_arr(&j, "files");
    }
    in.lib_arm64e = library_arm64e();
    for (int f = 0; f < in.nf; f++)
        rc |= inspect_file(&in, files[f], &j);
    if (in.json) {
        json_end_arr(&j);
        json_end_obj(&j);
        json_finish(&j);
    }
    return rc;
}
