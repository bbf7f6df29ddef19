/* The copy vzcaps prepare makes: the source read once into nodes (links inside a bundle kept
 * as links), what is code and what is a resource, the bundles in it and the order they are
 * sealed in, and writing the copy into a temporary tree (see bundlecopy.c).
 * Never: decides where the copy goes or whether it may replace something (prepare.c does). */
#ifndef VZCAPS_BUNDLECOPY_H
#define VZCAPS_BUNDLECOPY_H

#include "macho.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_NODES 200000
#define MAX_DEPTH 64

/* ---- the source, read once into a list of nodes ---- */

enum ntype { N_DIR, N_FILE, N_LINK };

struct node {
    char *rel;            /* relative to the source root; "" for a single file */
    enum ntype type;
    mode_t mode;
    char *target;         /* N_LINK: the link's text, copied as is */
    enum macho_kind kind; /* N_FILE */
    int unit;             /* the bundle whose seal holds it, -1 none */
    bool main_exe;        /* its unit's main executable (signed last, bound to the seal) */
    bool replaced;        /* inside a _CodeSignature directory: replaced, not copied */
    int nested_unit;      /* N_DIR: a nested bundle, by the unit its parent records; -1 */
    uint8_t sha1[20], sha256[32], cdhash[20];
};

/* A bundle sealed by its own CodeResources. */
struct unit {
    char *dir;    /* the bundle directory ("" the input itself) */
    char *base;   /* its resource base: Contents, Versions/X or the directory itself */
    char *info;   /* Info.plist */
    char *exe;    /* the main executable */
    bool exe_named; /* Info.plist's CFBundleExecutable named it (else the bundle's name did) */
    bool with_resources;
    int parent;
    uint8_t cdhash[20];
};

struct input {
    const char *arg;   /* as given */
    char *root;        /* the source, links resolved */
    char *name;        /* the copy's name: the argument's last component */
    char *dest;        /* --into/name */
    bool bundle;
    struct node *n;
    size_t nn, ncap;
    struct unit *u;
    size_t nu, ucap;
    size_t n_code;     /* Mach-O files re-signed */
    bool ok;           /* read, classified and signed in memory without an error */
};

struct run {
    struct input *in;
    bool write;        /* false: the plan (everything is signed in memory, nothing written) */
    int intofd;
    const char *into;
    char *tmpname;     /* .NAME.vzcaps-new.PID in into */
    char *tmppath;
    mode_t umask_;
};

/* Set by a signal handler: every loop that reads or writes stops with "interrupted". */
extern volatile sig_atomic_t bc_stop_signal;

/* Reads, classifies and signs (in memory) the input in->arg whose copy would be into/NAME:
 * 0, or 1 with one line on stderr. */
int bc_analyse(struct input *in, const char *into);
/* Everything, in order: nested bundles before the bundles that hold them, loose files, links
 * last; with r->write, into the temporary r->tmppath (r->tmpname in r->intofd for a file). */
int bc_build(struct run *r, char *err, size_t errlen);
int bc_find_node(const struct input *in, const char *rel);
const char *bc_below(const char *rel, const char *prefix);
bool bc_is_code(enum macho_kind k);
void bc_input_free(struct input *in);

#endif
