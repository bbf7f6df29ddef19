/* The contract of exec.c: what exec starts for a command name (PATH, #! chains) and the
 * architectures of a Mach-O library, as facts read from the files. The command includes it;
 * it includes nothing of the command. */
#ifndef VZCAPS_PLATFORM_EXEC_H
#define VZCAPS_PLATFORM_EXEC_H

#include "../core/vzcaps_core.h"

#include <stdbool.h>
#include <stddef.h>

/* What exec would run for name (a '/' in it: as given; else the first regular executable
 * file on PATH): 0 with the path in out, or 127 (not found) / 126 (not a regular file, not
 * executable, too long) with the reason in why. */
int resolve_target(const char *name, char *out, size_t len, char *why, size_t whylen);
/* An executable: name with a '/' as given, else next to the file near (if given), else on PATH. */
bool find_executable(const char *name, const char *near, char *out, size_t len);
/* Whether the Mach-O library has a slice of arch ("arm64e"); false when unreadable. */
bool library_has_arch(const char *library, const char *arch);

/* #! scripts: what program a script really starts, and how run starts it so that the
 * injection survives. */
/* How many scripts deep an interpreter chain is followed (Linux allows a few levels). */
#define SCRIPT_DEPTH 4

struct script_chain {
    bool script;            /* a #! script, or a file with no executable format (started with /bin/sh) */
    bool binary_script;     /* the latter */
    bool rewritten;         /* #!.../env NAME: run starts start (NAME found on PATH) directly */
    bool nested;            /* an interpreter was itself a script */
    bool protected_image;   /* image is a program SIP protects: the injection is removed there */
    int depth;
    char line[VZCAPS_SHEBANG_MAX + 8]; /* the #! line as read, words joined by one space */
    char env_name[256];     /* NAME as the line writes it */
    char start[4096];       /* rewritten: the program run starts */
    char image[4096];       /* the first program started that SIP protects, else the program
                               that runs the script in the end (not a script) */
    char cannot_rewrite[200]; /* why env could not be replaced by starting NAME directly */
    struct vzcaps_shebang sb; /* the target's #! line */
    size_t first_arg;       /* rewritten: the first word after NAME */
};

/* Reads a file's #! line: as vzcaps_shebang_parse, or -2 (unreadable, not a regular file) with why. */
int script_read(const char *path, struct vzcaps_shebang *sb, char *why, size_t len);
/* Whether the file starts with an ELF or Mach-O magic (an executable format). */
bool script_is_binary(const char *path);
/* What target starts: 0 (c filled; c->script false for a program), or an exit status for
 * run (127 an interpreter or NAME not found, 126 otherwise) with why. */
int script_chain(const char *target, struct script_chain *c, char *why, size_t len);
/* For a rewritten chain: start, the words after NAME, target, cmd[1..] (malloc'd array of
 * pointers into c, target and cmd; NULL when out of memory). */
char **script_argv(const struct script_chain *c, const char *target, char *const *cmd);
/* One sentence for a chain whose image SIP protects ("" otherwise): where the injection is
 * removed, and the two ways around it. */
void script_protected_advice(const struct script_chain *c, char *out, size_t len);

#endif
