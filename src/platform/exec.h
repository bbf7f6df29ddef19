/* The contract of exec.c: what the kernel starts for one file (its image, its #! line) and the
 * architectures of a Mach-O library, as facts read from the files. The command includes it;
 * it includes nothing of the command. */
#ifndef VZCAPS_PLATFORM_EXEC_H
#define VZCAPS_PLATFORM_EXEC_H

#include "../core/vzcaps_core.h"

#include <stdbool.h>
#include <stddef.h>

/* An executable: name with a '/' as given, else next to the file near (if given), else on PATH as
 * execvp reads it (unset: /usr/bin:/bin; an empty entry: the current directory). */
bool find_executable(const char *name, const char *near, char *out, size_t len);
/* Whether the Mach-O library has a slice of arch ("arm64e"); false when unreadable. */
bool library_has_arch(const char *library, const char *arch);

/* What xnu's exec_activate_image does with one file (kern_exec.c:2447-2632), read from it: the
 * image activators (core's vzcaps_exec_claims; ELF too where the platform runs it), a #! line as
 * exec_shell_imgact reads it, and its interpreter, looked up and checked as the file was, which
 * must be an image itself: one level (:636-641; a program SIP protects is taken as one unread). */
struct exec_image {
    int err;                  /* 0: it runs; else the errno execve gives (ENOEXEC: no activator claims it) */
    bool exists;              /* stat(2) finds the file (Libc asks after a failed exec) */
    bool script;              /* it starts with #! (sb: the line, when it parsed) */
    bool protected_image;     /* image is a program SIP protects: macOS removes the injection there */
    struct vzcaps_shebang sb;
    char image[4096];         /* what runs (err 0): the file, or the interpreter its #! line names */
    char why[700];            /* err's reason, in words */
};
void exec_image_read(const char *path, struct exec_image *k);

#endif
