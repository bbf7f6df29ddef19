/* The facts a stock run's environment is decided from (stockenv.c), and the environment itself
 * (the decision: vzcaps_stock_env in src/core/stock.c). Used by every run vzcaps calls stock:
 * doctor --bundle's, bench's, probe's and verify's. */
#ifndef VZCAPS_STOCKENV_H
#define VZCAPS_STOCKENV_H

#include <stdbool.h>

/* The record vzcaps shims writes beside each shim (src/cli/shims.c: SHIM_MAKER, record_name):
 * its first line, and the suffix of its name .NAME.vzcaps-shim. */
#define VZCAPS_SHIM_RECORD_MAKER "vzcaps shims"
#define VZCAPS_SHIM_RECORD_SUFFIX ".vzcaps-shim"

/* Whether dir (a PATH entry; "" is the current directory) is a vzcaps shim directory: it holds
 * a shim record .NAME.vzcaps-shim that names its entry NAME as it is now (record.c's
 * vzcaps_made_by_record, the test shims.c makes of its own entries). Never follows a link to a
 * record or blocks on a FIFO; an unreadable directory is not one. */
bool vzcaps_is_shim_dir(const char *dir);
/* envp as a stock child gets it (vzcaps_stock_env over the facts above for each PATH entry):
 * one heap block (free it once), NULL when out of memory. preload_var and libname: the
 * platform's (LD_PRELOAD and libvzcaps.so on the rig, DYLD_INSERT_LIBRARIES and
 * libvzcaps.dylib on macOS). */
char **vzcaps_stock_environ(char *const *envp, const char *preload_var, const char *libname);
/* Makes co's child stock: only the entries of vzcaps_stock_environ(environ, ...) reach it (kept
 * until the next call). Out of memory is a one-line error and exit 1, as for xformat. */
struct vzcaps_child_opts;
void vzcaps_stock_child(struct vzcaps_child_opts *co, const char *preload_var, const char *libname);
/* The value of PATH in env (NULL-terminated NAME=value entries), or NULL. */
const char *vzcaps_env_path(char *const *env);

#endif
