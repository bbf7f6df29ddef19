"""The proof and the library's rotation at once (issue 44 item 4, round seven): stats --require
holds LOG, opened first, under a shared lock while it reads LOG.1 and LOG, so a writer that finds
LOG full while the proof reads leaves the rotation to later (its lock never waits) and appends;
a stock run in the full LOG is read, never moved away unread. On the rig, with the real library
as the writer, started from inside stats's read of LOG.1."""
import json
import os
import subprocess

from conftest import BUILD, LINUX_ONLY, clean_env, need_tool
from test_stats import ran, rec

WRITER_DURING_READ = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* At stats's first read of the LOG.1 it opened to read, the command in WRITER runs once. */
static int old_fd = -1;
int openat(int dirfd, const char *name, int flags, ...)
{
    static int (*real)(int, const char *, int, ...);
    static int n_old;
    va_list ap;
    va_start(ap, flags);
    int mode = va_arg(ap, int);
    va_end(ap);
    if (!real)
        real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    int fd = real(dirfd, name, flags, mode);
    if (fd >= 0 && strcmp(name, "usage.log.1") == 0 && ++n_old == 2)
        old_fd = fd;
    return fd;
}
ssize_t read(int fd, void *buf, size_t n)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    if (fd == old_fd) {
        old_fd = -1;
        if (system(getenv("WRITER")) != 0)
            _exit(99);
    }
    return real(fd, buf, n);
}
'''


@LINUX_ONLY
def test_a_writer_during_the_proofs_read_appends_and_never_rotates(tmp_path):
    need_tool("cc")
    (tmp_path / "w.c").write_text(WRITER_DURING_READ)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "w.so"), str(tmp_path / "w.c"), "-ldl"], check=True,
                   capture_output=True)
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log, old = logs / "usage.log", logs / "usage.log.1"
    old.write_text('{"v":1,"time":1764619000,"pid":5,"event":"zeroed"}\n' + ran("probe", pid=1) + "\n")
    filler = rec("filler", pid=9, path="/" + "p" * 400) + "\n"
    stock = rec("probe", "left_stock", 0, "no chip", pid=2) + "\n"
    log.write_text(filler * (1048576 // len(filler) + 1) + stock)  # full: the next writer would rotate it
    for f in (log, old):
        f.chmod(0o600)
    before = old.read_bytes()
    probe = os.path.realpath(BUILD / "probe")
    writer = (f"env -i LD_PRELOAD={BUILD / 'libvzcaps.so'} VZCAPS_LOG_FILE={log} VZCAPS_APPLE_FAMILY_MAX=auto "
              f"VZCAPS_HOST_CHIP='Apple M2' {probe} >/dev/null 2>&1")
    p = subprocess.run([str(BUILD / "vzcaps"), "stats", "--require", "probe", "--json"], capture_output=True, text=True,
                       timeout=60, env=clean_env(VZCAPS_LOG_FILE=log, LD_PRELOAD=tmp_path / "w.so", WRITER=writer))
    assert old.read_bytes() == before  # not rotated: the writer found LOG held
    assert b'"event":"unlocked"' in log.read_bytes()[-2048:]  # it appended its records to the full LOG instead
    req = json.loads(p.stdout)["required"][0]
    assert p.returncode == 1 and (req["ran"], req["unlocked"], req["verdict"]) == (3, 2, "stock"), (p.stdout, p.stderr)
