/* A bundle's resource seal, _CodeSignature/CodeResources, as codesign writes it for ad-hoc
 * signing with SHA-256 CodeDirectories (portable; see coderesources.c). */
#ifndef VZCAPS_CODERESOURCES_H
#define VZCAPS_CODERESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the standard rules say about one path. */
#define CR_MATCHED 1u
#define CR_OMIT 2u
#define CR_OPTIONAL 4u
#define CR_NESTED 8u

/* The flags of the rule that applies to key (a path relative to the bundle's resource base,
 * e.g. "Resources/en.lproj/x.strings") in codesign's default rules for a bundle with
 * (with_resources) or without a Resources directory: version 2 (rules2, files2) or 1 (rules,
 * files). The highest weight wins. 0 when no rule matches: the path is not sealed. */
unsigned cr_match(int version, bool with_resources, const char *key);

/* Which of the two rule sets codesign takes, from the bundle's layout as CFBundle reads it
 * (Security's BundleDiskRep::resourcesRelativePath compares CFBundleCopyResourcesDirectoryURL
 * with the support-files directory): a bundle with a Contents directory has its resources in
 * Contents/Resources whether or not that directory exists (rules with Resources/ and nested
 * code); any other bundle has them in Resources when a directory or link of that name is
 * there, else at its top (the flat rules). */
bool cr_layout_with_resources(bool contents_layout, bool resources_entry);

struct cr_entry;
struct cr_seal {
    struct cr_entry *e;
    size_t n, cap;
    bool with_resources;
};

void cr_init(struct cr_seal *s, bool with_resources);
void cr_free(struct cr_seal *s);
/* A regular file with the digests of its bytes; code (a signed Mach-O file, with its cdhash)
 * in a nested location is recorded by cdhash and designated requirement, everything else by
 * hash2 (and by SHA-1 in the legacy section where its rules take it). */
void cr_add_file(struct cr_seal *s, const char *key, const uint8_t sha1[20], const uint8_t sha256[32],
                 const uint8_t *cdhash);
/* A symbolic link, by its target (never nested code). */
void cr_add_link(struct cr_seal *s, const char *key, const char *target);
/* A nested bundle (a directory with an extension in a nested location), by the cdhash of its
 * main executable. */
void cr_add_bundle(struct cr_seal *s, const char *key, const uint8_t cdhash[20]);
/* The XML property list (keys sorted, so the same input always gives the same bytes), on the
 * heap; NULL when out of memory. */
char *cr_xml(const struct cr_seal *s, size_t *len);
/* Whether a name can go into the seal: valid UTF-8 without control characters (an XML
 * property list cannot carry them). */
bool cr_name_ok(const char *name);

#endif
