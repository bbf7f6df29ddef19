/* vzcaps doctor: one screen on where this machine stands and which pitfalls apply.
 * Never: changes anything. */
#include "cli.h"
#include "../macho/macho.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PITFALLS 8

int cmd_doctor(int argc, char **argv)
{
    bool json = false;
    struct cfg_opts o = {0};
    const char *bundle = NULL;
    int bad = view_args("doctor", argc, argv, &o, &json, "--bundle", &bundle);
    if (bad)
        return bad;
    char **cmd = NULL; /* doctor --bundle DIR -- CMD ARGS */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            cmd = argv + i + 1;
            break;
        }
    if (cmd && !bundle)
        return usage_error("doctor", "-- CMD ARGS needs --bundle DIR");
    if (cmd && !*cmd)
        return usage_error("doctor", "no command after --");
    if (bundle)
        return doctor_bundle(bundle, o.exe, cmd);
    struct machine m;
    machine_facts(&m);
    char library[1100], tried[2400], archs[128] = "", arch_err[256] = "";
    bool have_lib = find_library(library, sizeof library, tried, sizeof tried) == 0;
    if (have_lib && macho_arch_list(library, archs, sizeof archs, arch_err, sizeof arch_err) != 0)
        snprintf(archs, sizeof archs, "%s", platform_is_macos ? "unreadable" : "ELF (Linux test build)");
    static struct vzcaps_config_result r;
    cli_configure_view(&o, &r);

    char pitfalls[MAX_PITFALLS][300];
    size_t np = 0;
#define PITFALL(...) do { if (np < MAX_PITFALLS) snprintf(pitfalls[np++], sizeof pitfalls[0], __VA_ARGS__); } while (0)
    if (!platform_is_macos)
        PITFALL("not macOS: only the portable parts run here (configuration, reports, inspect); probe, verify and host need a Mac");
    if (platform_is_macos && m.guest == 0)
        PITFALL("this is a host, not a guest: its Metal answers are already the chip's own, vzcaps changes nothing useful here");
    if (!r.profile.chip.known)
        PITFALL("host chip unknown: apple_family_max=auto leaves processes stock; set VZCAPS_HOST_CHIP (e.g. \"Apple M2 Pro\") or pass --chip to check");
    if (!have_lib)
        PITFALL("library not found (looked at %s)", tried);
    if (have_lib && platform_is_macos && !strstr(archs, "arm64e"))
        PITFALL("the library has no arm64e slice: arm64e processes (system binaries, Apple's python3) cannot load it; vzcaps run refuses them");
    if (r.profile.invalid)
        PITFALL("configuration invalid: %s", r.profile.notes[0]);
    for (size_t i = 0; i < r.profile.n_extra; i++)
        if (r.profile.extra[i] == 5001)
            PITFALL("extra family metal3 is claimed: MLX then fails with \"Unable to construct residency set\"; drop it for MLX workloads");
    const char *pre = getenv(preload_var);
    if (pre && strstr(pre, library_file))
        PITFALL("%s in this shell already names the library: every program started here is injected; prefer vzcaps run", preload_var);

    const char *guest = machine_kind(&m);
    if (json) {
        struct json j;
        json_begin(&j, stdout);
        json_obj(&j, NULL);
        json_str(&j, "version", VZCAPS_VERSION);
        machine_json(&j, &m);
        json_str(&j, "host_chip", strcmp(r.profile.chip_origin, "none") ? r.profile.chip.name : NULL);
        json_bool(&j, "host_chip_known", r.profile.chip.known);
        json_str(&j, "host_chip_source", r.profile.chip_origin);
        json_str(&j, "library", have_lib ? library : NULL);
        json_str(&j, "library_archs", have_lib ? archs : NULL);
        json_str(&j, "config_file", r.config_path[0] ? r.config_path : NULL);
        json_bool(&j, "config_valid", !r.profile.invalid);
        json_str(&j, "profile", r.section[0] ? r.section : NULL);
        json_bool(&j, "enabled", r.profile.state == VZCAPS_ENABLED);
        json_str(&j, "view", o.bare ? "library" : "run");
        json_bool(&j, "family_implied", o.family_implied);
        if (r.profile.state == VZCAPS_ENABLED)
            json_int(&j, "apple_family_max", r.profile.apple_family_max);
        else
            json_null(&j, "apple_family_max");
        json_arr(&j, "notes");
        for (size_t i = 0; i < r.profile.n_notes; i++)
            json_str(&j, NULL, r.profile.notes[i]);
        json_end_arr(&j);
        json_arr(&j, "pitfalls");
        for (size_t i = 0; i < np; i++)
            json_str(&j, NULL, pitfalls[i]);
        json_end_arr(&j);
        json_end_obj(&j);
        json_finish(&j);
        return 0;
    }
    printf("vzcaps %s doctor\n", VZCAPS_VERSION);
    printf("system         %s %s%s%s\n", m.os, m.os_version, m.os_build[0] ? " build " : "", m.os_build);
    printf("machine        %s%s%s\n", guest, m.model[0] ? ", " : "", m.model);
    printf("cpu            %s (%u cpus, %.1f GiB)\n", m.brand[0] ? esc(m.brand) : "(no brand string)", m.ncpu, (double)m.memory / 1073741824.0);
    printf("library        %s%s%s%s\n", have_lib ? esc(library) : "NOT FOUND", have_lib ? " (" : "", have_lib ? archs : "", have_lib ? ")" : "");
    print_profile_text(&r, &o);
    printf("pitfalls       %s\n", np ? "" : "none found");
    for (size_t i = 0; i < np; i++)
        printf("  ! %s\n", esc(pitfalls[i]));
    return 0;
}
