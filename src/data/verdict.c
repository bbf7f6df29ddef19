/* The first-run bundle's verdict (doctor --bundle): read from the probe's and verify's JSON
 * outputs, portable and unit-tested. Owns: the five verdicts and their one-sentence reasons.
 * Never: reads a file or the environment (the caller hands in the two outputs). */
#include "verdict.h"
#include "jsonread.h"

#include <stdio.h>
#include <string.h>

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
