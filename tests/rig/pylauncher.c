/* Stand-in for the launcher of a python.org or Homebrew framework build of Python
 * (CPython's Mac/Tools/pythonw.c): X/bin/python3.N re-executes
 * X/Resources/Python.app/Contents/MacOS/Python with the same arguments (argv[0] kept) and
 * the same environment. Test rig only. */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
    (void)argc;
    char self[PATH_MAX], target[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 127;
    self[n] = '\0';
    char *bin = dirname(self);        /* X/bin */
    char *root = dirname(bin);        /* X */
    snprintf(target, sizeof target, "%s/Resources/Python.app/Contents/MacOS/Python", root);
    execve(target, argv, environ);
    perror(target);
    return 127;
}
