/* The facts a stock run's environment is decided from (stockenv.c), and the environment itself
 * (the decision: vzcaps_stock_env in src/core/stock.c). Used by every run vzcaps calls stock:
 * doctor --bundle's, bench's, probe's and verify's. */
#ifndef VZCAPS_STOCKENV_H
#define VZCAPS_STOCKENV_H

#include <stdbool.h>

/* The record vzcaps shims writes beside each shim (src/cli/start/shims.c: SHIM_MAKER, record_name):
 * its first line, and the suffix of its name .NAME.vzcaps-shim. */
#define VZCAPS_SHIM_RECORD_MAKER "vzcaps shims"
#define VZCAPS_SHIM_RECORD_SUFFIX ".vzcaps-shim"

/* Whether dir (a PATH entry; "" is the current directory) is a vzcaps shim directory: it holds
 * a shim record .NAME.vzcaps-shim that names its entry NAME as it is now (record.c's
 * vzcaps_made_by_record, the test shims.c makes of its own entries). Never follows a link to a
 * record or blocks on a FIFO; an unreadable directory is not one. */
bool vzcaps_is_shim_dir(const char *dir);
/* Whether dir is a vzcaps directory: a shim directory (above), or one holding an entry that
 * starts a vzcaps command under another name, by what the file is (the command at self, by its
 * device and inode, through a link, a chain of links or a hard link; a copy of it, by its size and
 * its marker; a link to a file named vzcaps..., another installation's). self: the running
 * command's path (self_path; "" when unknown: the record and name rules only). */
bool vzcaps_is_vzcaps_dir(const char *dir, const char *self);
/* envp as a stock child gets it (vzcaps_stock_env over the facts for each PATH entry, as
 * vzcaps_is_vzcaps_dir says, and for each element of the preload entry: our library by what the
 * file is, whatever its name: the library next to self or in ../lib by device and inode, or any
 * file carrying the library's marker, read once each, at most 64 MiB): one heap block (free it
 * once), NULL when out of memory. preload_var and libname: the platform's (LD_PRELOAD and
 * libvzcaps.so on the rig, DYLD_INSERT_LIBRARIES and libvzcaps.dylib on macOS). Never blocks on
 * a FIFO; an element or directory it cannot read is left as it is. */
char **vzcaps_stock_environ(char *const *envp, const char *preload_var, const char *libname, const char *self);
/* Makes co's child stock: only the entries of vzcaps_stock_environ(environ, ...) reach it (kept
 * until the next call). Out of memory is a one-line error and exit 1, as for xformat. */
struct vzcaps_child_opts;
void vzcaps_stock_child(struct vzcaps_child_opts *co, const char *preload_var, const char *libname, const char *self);
/* The value of PATH in env (NULL-terminated NAME=value entries), or NULL. */
const char *vzcaps_env_path(char *const *env);

#endif
