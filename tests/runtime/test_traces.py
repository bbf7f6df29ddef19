"""The library leaves no trace in its host but its answers (issue 32 rows 1-3, items 1 and 7), on
the GNU-runtime rig: errno is as the host had it at main (zero, C11 7.5p3) and around every call
the library reaches (the factory, the exec and spawn interposers), whatever standard error is;
the one line goes only to the standard error the process started with, never into a file the
program opened since, even one that took the freed inode of a deleted stderr file."""
import os
import subprocess

import pytest

from conftest import BUILD, clean_env

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

LIB = str(BUILD / "libvzcaps.so")
M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
CONFIGS = {
    "unconfigured": {},
    "configured": M2,
    "refused": dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9"),
    "invalid": dict(VZCAPS_APPLE_FAMILY_MAX="1008", VZCAPS_BOGUS="1"),
    "verbose": dict(M2, VZCAPS_LOG="verbose"),
}

ERRNO_CLIENT = r'''
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
extern char **environ;
void *MTLCreateSystemDefaultDevice(void);
/* argv[1]: what to do after main's errno is read: "none", "device", "close-device" (fd 2
 * closed first), "spawn", "exec-fail" */
int main(int argc, char **argv)
{
    int at_main = errno;
    int after = -1;
    (void)argc;
    if (strcmp(argv[1], "close-device") == 0)
        close(2);
    errno = 1234;
    if (strstr(argv[1], "device")) {
        void *d = MTLCreateSystemDefaultDevice();
        after = errno;
        if (!d)
            return 4;
    } else if (strcmp(argv[1], "spawn") == 0) {
        pid_t pid;
        char *args[] = {"true", NULL};
        int rc = posix_spawnp(&pid, "true", NULL, NULL, args, environ);
        after = errno;
        if (rc != 0 || waitpid(pid, NULL, 0) != pid)
            return 5;
    } else if (strcmp(argv[1], "exec-fail") == 0) {
        char *args[] = {"no-such-program-vzcaps", NULL};
        execvp("no-such-program-vzcaps", args);
        after = errno; /* the exec's own errno, not ours */
    }
    printf("main %d after %d\n", at_main, after);
    return 0;
}
'''


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    (d / "errno.c").write_text(ERRNO_CLIENT)
    exe = d / "errno"
    subprocess.run(["gcc", str(d / "errno.c"), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", f"-Wl,-rpath,{BUILD}"],
                   check=True)
    return str(exe)


def run(exe, what, conf, stderr=subprocess.PIPE, close_stderr=False, **extra):
    env = clean_env(LD_PRELOAD=LIB, **conf, **extra)
    p = subprocess.run([exe, what], env=env, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=30,
                       preexec_fn=(lambda: os.close(2)) if close_stderr else None)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return p.stdout


@pytest.mark.parametrize("conf", CONFIGS)
def test_errno_at_main_is_zero(client, conf, tmp_path):
    # it was ENOENT (2) in every process with the library loaded: the constructor's failed open
    # of a config file that is not there. A HOME with no config in it, and one with a config.
    assert run(client, "none", CONFIGS[conf]) == "main 0 after -1\n"
    home = tmp_path / "home"
    (home / ".config" / "vzcaps").mkdir(parents=True)
    assert run(client, "none", CONFIGS[conf], HOME=str(home)) == "main 0 after -1\n"
    (home / ".config" / "vzcaps" / "config").write_text("[llama-server]\napple_family_max = auto\n")
    assert run(client, "none", CONFIGS[conf], HOME=str(home)) == "main 0 after -1\n"


@pytest.mark.parametrize("conf", CONFIGS)
@pytest.mark.parametrize("how", ["pipe", "full", "closed-at-start", "closed-after-start", "null"])
def test_a_hooked_device_leaves_errno_as_it_was(client, conf, how):
    # the line's write into /dev/full left ENOSPC, a closed fd 2 left EBADF
    stderr = {"pipe": subprocess.PIPE, "full": open("/dev/full", "w"), "null": subprocess.DEVNULL}.get(how)
    what = "close-device" if how == "closed-after-start" else "device"
    out = run(client, what, CONFIGS[conf], stderr=stderr or subprocess.DEVNULL, close_stderr=how == "closed-at-start")
    assert out == "main 0 after 1234\n"


@pytest.mark.parametrize("conf", ["configured", "unconfigured", "refused"])
@pytest.mark.parametrize("what", ["spawn", "exec-fail"])
def test_spawn_and_exec_leave_errno_as_libc_does(client, conf, what):
    # glibc's own PATH search sets errno (ENOENT from the elements before /usr/bin): whatever
    # it is stock, it is the same with the interposers in between
    stock = subprocess.run([client, what], env=clean_env(), capture_output=True, text=True, timeout=30).stdout
    assert stock.startswith("main 0 after ")
    assert run(client, what, dict(CONFIGS[conf], VZCAPS_INHERIT="matching")) == stock
    assert run(client, what, CONFIGS[conf]) == stock


REUSE_CLIENT = r'''
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
void *MTLCreateSystemDefaultDevice(void);
/* stderr is argv[1]: deleted, closed, and the next file opened (argv[2]) takes fd 2 and, on
 * ext4, the inode the deleted file had */
int main(int argc, char **argv)
{
    struct stat before, after;
    (void)argc;
    if (fstat(2, &before) != 0 || unlink(argv[1]) != 0)
        return 2;
    close(2);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd != 2 || fstat(fd, &after) != 0 || write(fd, "user data\n", 10) != 10)
        return 3;
    void *d = MTLCreateSystemDefaultDevice();
    if (write(fd, "more data\n", 10) != 10)
        return 3;
    close(fd);
    printf("device %s same-inode %s\n", d ? "yes" : "no",
           before.st_ino == after.st_ino && before.st_dev == after.st_dev ? "yes" : "no");
    return 0;
}
'''


def test_the_line_never_goes_into_a_file_that_took_a_deleted_stderrs_inode(tmp_path):
    # 5 of 5 runs put the line into the data file: the library told the files apart by device
    # and inode alone, and ext4 gives the deleted stderr file's inode to the next file at once.
    # The library now holds the start-up stderr file open, so its inode cannot be reused.
    (tmp_path / "reuse.c").write_text(REUSE_CLIENT)
    exe = tmp_path / "reuse"
    subprocess.run(["gcc", str(tmp_path / "reuse.c"), "-o", str(exe), f"-L{BUILD}", "-lfakemetal",
                    f"-Wl,-rpath,{BUILD}"], check=True)
    log, data = tmp_path / "log", tmp_path / "data"
    cmd = [str(exe), str(log), str(data)]

    def stderr_to_log():  # in the child, as a shell's 2>FILE: nobody else holds the file open
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    for _ in range(5):
        data.unlink(missing_ok=True)  # a new file, so it can take the freed inode
        p = subprocess.run(cmd, env=clean_env(LD_PRELOAD=LIB, **M2), stdout=subprocess.PIPE, text=True, timeout=30,
                           preexec_fn=stderr_to_log)
        assert p.returncode == 0
        assert p.stdout.startswith("device yes")
        assert data.read_text() == "user data\nmore data\n"
    data.unlink()
    # stock, the same program does get the deleted file's inode here (else this test proves nothing)
    p = subprocess.run(cmd, env=clean_env(), stdout=subprocess.PIPE, text=True, timeout=30, preexec_fn=stderr_to_log)
    assert p.stdout == "device yes same-inode yes\n"


def test_the_line_still_reaches_a_stderr_file(tmp_path):
    # pinned, and still written: a regular file as stderr gets the line, once
    log = tmp_path / "log"
    with open(log, "w") as err:
        subprocess.run([str(BUILD / "probe")], env=clean_env(LD_PRELOAD=LIB, **M2), stderr=err,
                       stdout=subprocess.DEVNULL, timeout=30, check=True)
    assert log.read_text().startswith("vzcaps: hooked AppleParavirtDevice for probe")
    assert log.read_text().count("\n") == 1


def test_a_stderr_file_over_the_size_limit_does_not_kill_the_host(tmp_path):
    # RLIMIT_FSIZE below the stderr file's size: the line's write raised SIGXFSZ, whose default
    # action killed the process (exit 153 = 128 + SIGXFSZ, with a core), where the same program
    # stock runs to its end. The signal is blocked for the write and taken back, as SIGPIPE is.
    import resource
    err = tmp_path / "err"
    err.write_bytes(b"x" * 5000)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    for env in (clean_env(), clean_env(LD_PRELOAD=LIB, **M2)):
        with open(err, "a") as f:
            p = subprocess.run([str(BUILD / "probe")], env=env, stdout=subprocess.PIPE, stderr=f, timeout=30,
                               preexec_fn=limit)
        assert p.returncode == 0, p.returncode
        assert err.stat().st_size == 5000
