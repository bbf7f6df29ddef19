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


STATE_CLIENT = r'''
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
void *MTLCreateSystemDefaultDevice(void);
/* What a host can see of its own process state: descriptors (and close-on-exec), fd 2's
 * flags, the signal mask and pending set, cwd, umask; at main and after a device. */
static void state(const char *when)
{
    printf("%s fds", when);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d)) {
            int fd = atoi(e->d_name), fl = fcntl(fd, F_GETFD);
            printf(" %d%s", fd, fl >= 0 && (fl & FD_CLOEXEC) ? "c" : "");
        }
    closedir(d);
    sigset_t mask, pend;
    sigprocmask(SIG_SETMASK, NULL, &mask);
    sigpending(&pend);
    printf(" fl2 %d pipe-blocked %d pipe-pending %d xfsz-pending %d", fcntl(2, F_GETFL),
           sigismember(&mask, SIGPIPE), sigismember(&pend, SIGPIPE), sigismember(&pend, SIGXFSZ));
    char cwd[4096];
    mode_t um = umask(022);
    umask(um);
    printf(" cwd %s umask %o\n", getcwd(cwd, sizeof cwd) ? cwd : "?", (unsigned)um);
}
int main(int argc, char **argv)
{
    state("main");
    if (argc > 1 && strcmp(argv[1], "pending") == 0) { /* the host's own SIGPIPE, blocked and pending */
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGPIPE);
        sigprocmask(SIG_BLOCK, &s, NULL);
        raise(SIGPIPE);
    }
    fflush(stdout);
    void *d = MTLCreateSystemDefaultDevice();
    state(d ? "device" : "no-device");
    return 0;
}
'''


@pytest.fixture(scope="module")
def state_client(tmp_path_factory):
    d = tmp_path_factory.mktemp("state")
    (d / "state.c").write_text(STATE_CLIENT)
    exe = d / "state"
    subprocess.run(["gcc", str(d / "state.c"), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", f"-Wl,-rpath,{BUILD}"],
                   check=True)
    return str(exe)


def state_of(exe, env, *args, stderr=subprocess.PIPE, cwd=None):
    p = subprocess.run([exe, *args], env=env, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=30, cwd=cwd)
    assert p.returncode == 0, p.returncode
    return p.stdout.splitlines()


@pytest.mark.parametrize("conf", CONFIGS)
def test_the_host_state_is_as_stock_with_stderr_a_pipe(state_client, conf, tmp_path):
    # descriptors, fd 2's flags, the signal mask and pending signals, cwd and umask: what the
    # program sees at main and after its first device is what it sees stock
    home = tmp_path / "home"
    (home / ".config" / "vzcaps").mkdir(parents=True)
    (home / ".config" / "vzcaps" / "vzcaps.conf").write_text("[other]\nmatch = other\napple_family_max = auto\n")
    stock = state_of(state_client, clean_env(HOME=str(home)), cwd=str(tmp_path))
    got = state_of(state_client, clean_env(LD_PRELOAD=LIB, HOME=str(home), **CONFIGS[conf]), cwd=str(tmp_path))
    assert got == stock
    for how in ("pending",):  # the host's own blocked, pending SIGPIPE stays pending for it
        assert state_of(state_client, clean_env(LD_PRELOAD=LIB, **CONFIGS[conf]), how) == \
            state_of(state_client, clean_env(), how)


def test_a_closed_reader_raises_no_sigpipe_and_takes_none_of_the_hosts(state_client):
    # stderr a pipe whose reader is gone: the line's write fails with EPIPE; the SIGPIPE it
    # raises is taken back, and a SIGPIPE the host had pending itself is left pending
    r, w = os.pipe()
    os.close(r)
    try:
        for how in ((), ("pending",)):
            stock = state_of(state_client, clean_env(), *how, stderr=w)
            got = state_of(state_client, clean_env(LD_PRELOAD=LIB, **M2), *how, stderr=w)
            assert got == stock
            assert got[-1].split(" pipe-pending ")[1].startswith("1" if how else "0")
    finally:
        os.close(w)


def test_a_stderr_file_costs_one_close_on_exec_descriptor(state_client, tmp_path):
    # the one trace the held stderr file leaves (docs/safety.md rule 4): one descriptor, at 100
    # or above, close-on-exec (no child sees it); fd 2's flags unchanged
    err = tmp_path / "err"
    with open(err, "w") as f:
        stock = state_of(state_client, clean_env(), stderr=f)
    with open(err, "w") as f:
        got = state_of(state_client, clean_env(LD_PRELOAD=LIB, **M2), stderr=f)
    assert len(got) == 2 and got[1].startswith("device")
    for s, g in zip(stock, got):
        sf, gf = s.split(" fl2 ")[0].split()[2:], g.split(" fl2 ")[0].split()[2:]
        extra = [x for x in gf if x not in sf]
        assert len(extra) == 1 and extra[0].endswith("c") and int(extra[0][:-1]) >= 100
        assert s.split(" fl2 ")[1] == g.split(" fl2 ")[1]
    with open(err, "w") as f:  # unconfigured, quiet: nothing to write, nothing held
        assert state_of(state_client, clean_env(LD_PRELOAD=LIB), stderr=f) == stock
    with open(err, "w") as f:
        assert state_of(state_client, clean_env(LD_PRELOAD=LIB, VZCAPS_LOG="quiet", **M2), stderr=f) == stock


THREADS_CLIENT = r'''
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
static long vmsize_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char l[256];
    long v = -1;
    while (fgets(l, sizeof l, f))
        if (sscanf(l, "VmSize: %ld", &v) == 1)
            break;
    fclose(f);
    return v;
}
static void *run(void *arg)
{
    (void)arg;
    pid_t p;
    char *argv[] = {"true", NULL}, *envp[] = {"A=1", "VZCAPS_APPLE_FAMILY_MAX=1", NULL}; /* ours: to strip */
    if (posix_spawnp(&p, "true", NULL, NULL, argv, envp) == 0)
        waitpid(p, NULL, 0);
    return NULL;
}
int main(void)
{
    pthread_t t;
    run(NULL);
    pthread_create(&t, NULL, run, NULL); /* the first thread's stack is cached from here on */
    pthread_join(t, NULL);
    long before = vmsize_kb();
    for (int i = 0; i < 200; i++) {
        pthread_create(&t, NULL, run, NULL);
        pthread_join(t, NULL);
    }
    printf("%ld\n", vmsize_kb() - before);
    return 0;
}
'''


def test_a_child_per_thread_leaves_no_mapping_per_thread(tmp_path):
    # inherit = matching builds a child's environment in a per-thread mapping; it was never
    # unmapped, so a host that starts each child from a new thread grew by 64 KiB per thread
    # (200 threads: 12.8 MiB). It is unmapped when its thread exits.
    (tmp_path / "t.c").write_text(THREADS_CLIENT)
    exe = tmp_path / "t"
    subprocess.run(["gcc", str(tmp_path / "t.c"), "-o", str(exe), "-lpthread"], check=True)
    conf = tmp_path / "vzcaps.conf"
    conf.write_text("[t]\nmatch = t\napple_family_max = auto\ninherit = matching\n")
    conf.chmod(0o644)
    grow = {}
    for name, env in (("stock", clean_env()),
                      ("loaded", clean_env(LD_PRELOAD=LIB, VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2"))):
        p = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        grow[name] = int(p.stdout)
    assert grow["loaded"] - grow["stock"] < 1024, grow  # kB


CLOSEFROM_CLIENT = r'''
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
void *MTLCreateSystemDefaultDevice(void);
/* a daemon's tidy-up: every descriptor above 2 closed, then its own files, one of them at
 * the number the library's duplicate had */
int main(int argc, char **argv)
{
    (void)argc;
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int n = 100; n < 110; n++)
        dup2(fd, n);
    void *d = MTLCreateSystemDefaultDevice();
    printf("device %s\n", d ? "yes" : "no");
    return 0;
}
'''


def test_the_duplicate_closed_by_the_host_is_never_taken_for_stderr(tmp_path):
    # the program closed the library's duplicate and put a data file at its number: the line
    # is not written (in doubt), neither into the data file nor anywhere else
    (tmp_path / "c.c").write_text(CLOSEFROM_CLIENT)
    exe = tmp_path / "c"
    subprocess.run(["gcc", str(tmp_path / "c.c"), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", f"-Wl,-rpath,{BUILD}"],
                   check=True)
    err, data = tmp_path / "err", tmp_path / "data"
    with open(err, "w") as f:
        p = subprocess.run([str(exe), str(data)], env=clean_env(LD_PRELOAD=LIB, **M2), stdout=subprocess.PIPE,
                           stderr=f, text=True, timeout=30)
    assert p.stdout == "device yes\n"
    assert data.read_text() == "" and err.read_text() == ""


@pytest.mark.parametrize("limit", [4, 20, 101])
def test_a_low_descriptor_limit(tmp_path, limit):
    # under 101 descriptors the duplicate takes the lowest free one (with none free it would
    # not be written; the loader itself needs one, so that is not a case to start); the program
    # runs as stock
    import resource
    err = tmp_path / "err"
    with open(err, "w") as f:
        p = subprocess.run([str(BUILD / "probe")], env=clean_env(LD_PRELOAD=LIB, **M2), stdout=subprocess.PIPE,
                           stderr=f, timeout=30,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
    assert p.returncode == 0 and p.stdout.startswith(b"class AppleParavirtDevice")
    assert err.read_text().startswith("vzcaps: hooked")
