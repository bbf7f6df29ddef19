"""The file stand-ins: open(2) and the *at calls, read, write, close, stat, flock, fcntl, rename,
unlink, access and getxattr over this machine's real files, through Darwin's flags, errno values
and struct stat layout (xnu bsd/vfs/vfs_syscalls.c, bsd/kern/kern_descrip.c, sys_generic.c), with
the ids and the clock a file's record reads: a mixin of darwin.Darwin (its descriptor table is
Darwin's), installed after the Libc ones."""
import fcntl as host_fcntl
import os

from machoemu import GuestFault
from xnu_defs import (EACCES, EBADF, EINVAL, EMFILE, ENOENT, ENOSPC, F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_GETFL, F_SETFD,
                      O_ACCMODE, O_APPEND, O_CLOEXEC, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_TRUNC,
                      darwin_errno, pack_stat)


class FileStandins:
    def path_of(self, a):
        """A path argument, as this machine's file functions take it (bytes that are not UTF-8
        kept as surrogate escapes)."""
        return self.m.cstr(a).decode("utf-8", "surrogateescape")

    def install_files(self):
        m, S = self.m, self.standin
        # ---- files: this machine's, through Darwin's flags and layouts ----
        path_of = self.path_of

        def sys_fail(e):
            self.set_errno(darwin_errno(e.errno))
            return 2**64 - 1

        fd_paths = {}  # the path each descriptor was opened at (for the *at calls' records)

        def open_(m, p, flags, *_, at=None):
            """open(2) (xnu bsd/vfs/vfs_syscalls.c: open1; the lowest free descriptor, as
            bsd/kern/kern_descrip.c fdalloc gives). The mode, the one variadic argument, is on the
            stack (Apple's arm64 convention). Darwin's flag bits are translated to this machine's.
            at: openat's directory (host descriptor, its path), relative names resolved from it."""
            acc = flags & O_ACCMODE
            lf = {0: os.O_RDONLY, 1: os.O_WRONLY, 2: os.O_RDWR}.get(acc, os.O_RDONLY)
            for dbit, lbit in ((O_NONBLOCK, os.O_NONBLOCK), (O_NOFOLLOW, os.O_NOFOLLOW), (O_DIRECTORY, os.O_DIRECTORY),
                               (O_APPEND, os.O_APPEND), (O_CREAT, os.O_CREAT), (O_TRUNC, os.O_TRUNC), (O_EXCL, os.O_EXCL)):
                if flags & dbit:
                    lf |= lbit
            mode = m.stack_arg(0) & 0o7777 if flags & O_CREAT else 0
            path = path_of(p)
            full = os.path.normpath(os.path.join(at[1], path)) if at else path
            if acc:
                self.opened_for_writing.append(full)
            try:
                fd = os.open(path, lf | os.O_CLOEXEC | os.O_NOCTTY, mode, dir_fd=at[0] if at else None)
            except OSError as e:
                return sys_fail(e)
            g = self.fd_alloc(0)
            if g < 0:
                os.close(fd)
                self.set_errno(EMFILE)
                return 2**64 - 1
            self.fds[g] = fd
            fd_paths[g] = full
            if flags & O_CLOEXEC:
                self.cloexec.add(g)
            return g
        S("_open", open_)

        def at_dir(d, p):
            """An *at call's directory for path p (xnu bsd/vfs/vfs_syscalls.c:4127-4168, nameiat):
            AT_FDCWD (-2, bsd/sys/fcntl.h) and an absolute path ignore d (it is not even looked
            up); else an open descriptor, as (host descriptor, path); None: EBADF (ENOTDIR for a
            descriptor that is no directory comes from this machine's own *at call)."""
            d &= 0xFFFFFFFF
            if d == 0xFFFFFFFE or m.cstr(p).startswith(b"/"):
                return (None, os.getcwd())
            return (self.fds[d], fd_paths.get(d, "?")) if d in self.fds else None

        def with_dir(d, p, call):
            at = at_dir(d, p)
            if at is None:
                self.set_errno(EBADF)
                return 2**64 - 1
            try:
                return call(at)
            except OSError as e:
                return sys_fail(e)

        def openat(m, d, p, flags, *_):
            """openat(2) (xnu bsd/vfs/vfs_syscalls.c:5247, openat_internal :5191): open relative to d."""
            at = at_dir(d, p)
            return open_(m, p, flags, at=at) if at else (self.set_errno(EBADF), 2**64 - 1)[1]
        S("_openat", openat)

        def fstatat(m, d, p, st_a, flag, *_):
            """fstatat(2) (xnu bsd/vfs/vfs_syscalls.c:7418, fstatat_internal :7103): the link itself
            with AT_SYMLINK_NOFOLLOW (0x20, bsd/sys/fcntl.h:208)."""
            st = with_dir(d, p, lambda at: os.stat(path_of(p), dir_fd=at[0], follow_symlinks=not flag & 0x20))
            return st if isinstance(st, int) else (m.write(st_a, pack_stat(st)), 0)[1]
        S("_fstatat", fstatat)

        def readlinkat(m, d, p, buf, n, *_):
            """readlinkat(2) (xnu bsd/vfs/vfs_syscalls.c:7579, readlinkat_internal :7482-7535): the
            target's bytes, no NUL, cut to n, their count returned."""
            t = with_dir(d, p, lambda at: os.fsencode(os.readlink(path_of(p), dir_fd=at[0]))[:n])
            return t if isinstance(t, int) else (m.write(buf, t), len(t))[1]
        S("_readlinkat", readlinkat)

        def renameat(m, fd_a, a, fd_b, b, *_):
            """renameat(2) (xnu bsd/vfs/vfs_syscalls.c:9949, renameat_internal :9164): atomic,
            replacing the target."""
            at_a, at_b = at_dir(fd_a, a), at_dir(fd_b, b)
            if at_a is None or at_b is None:
                self.set_errno(EBADF)
                return 2**64 - 1
            try:
                os.rename(path_of(a), path_of(b), src_dir_fd=at_a[0], dst_dir_fd=at_b[0])
            except OSError as e:
                return sys_fail(e)
            self.renames.append((os.path.join(at_a[1], path_of(a)), os.path.join(at_b[1], path_of(b))))
            return 0
        S("_renameat", renameat)

        def read(m, fd, buf, n, *_):
            if fd not in self.fds:
                self.set_errno(EBADF)
                return 2**64 - 1
            data = os.read(self.fds[fd], n)
            m.write(buf, data)
            return len(data)
        S("_read", read)

        def close(m, fd, *_):
            """close(2) (xnu bsd/kern/kern_descrip.c: close_nocancel): the descriptor is freed; the
            file itself stays while another descriptor refers to it."""
            return 0 if self.fd_close(fd) else (self.set_errno(EBADF), 2**64 - 1)[1]
        S("_close", close)

        def fstat(m, fd, st_a, *_):
            """fstat(2) (xnu bsd/kern/kern_descrip.c: fstat1): the open file's own identity; a
            character device (the terminal, /dev/full) as the stand-in's fixed device numbers."""
            st = self.fd_stat(fd)
            if st is None:
                self.set_errno(EBADF)
                return 2**64 - 1
            m.write(st_a, pack_stat(st))
            return 0
        S("_fstat", fstat)

        def stat_(m, p, st_a, *_):
            try:
                st = os.stat(path_of(p))
            except OSError as e:
                return sys_fail(e)
            m.write(st_a, pack_stat(st))
            return 0
        S("_stat", stat_)

        def getxattr(m, p, name, *_):
            """getxattr(2): no file here carries an extended attribute (ENOATTR, xnu's 93), as on a
            file nothing marked; a missing file is ENOENT."""
            if not os.path.lexists(path_of(p)):
                self.set_errno(ENOENT)
            else:
                self.set_errno(93)
            return 2**64 - 1
        S("_getxattr", getxattr)

        def lstat(m, p, st_a, *_):
            """lstat(2) (xnu bsd/vfs/vfs_syscalls.c: lstat64): the link itself, not its target."""
            try:
                st = os.lstat(path_of(p))
            except OSError as e:
                return sys_fail(e)
            m.write(st_a, pack_stat(st))
            return 0
        S("_lstat", lstat)

        def rename(m, a, b, *_):
            """rename(2) (xnu bsd/vfs/vfs_syscalls.c: renameat_internal): atomic, replacing the
            target; this machine's file system does it."""
            try:
                os.rename(path_of(a), path_of(b))
            except OSError as e:
                return sys_fail(e)
            self.renames.append((path_of(a), path_of(b)))
            return 0
        S("_rename", rename)

        def unlink(m, p, *_):
            """unlink(2) (xnu bsd/vfs/vfs_syscalls.c: unlink1): this machine's file system does it."""
            try:
                os.unlink(path_of(p))
            except OSError as e:
                return sys_fail(e)
            return 0
        S("_unlink", unlink)

        def flock_(m, fd, op, *_):
            """flock(2) (xnu bsd/kern/kern_descrip.c: sys_flock): a lock on the open file, here
            this machine's own flock on the real file, so a lock another open of it holds
            conflicts; LOCK_SH 1, LOCK_EX 2, LOCK_NB 4, LOCK_UN 8 as in bsd/sys/fcntl.h."""
            if fd not in self.fds:
                self.set_errno(EBADF)
                return 2**64 - 1
            how = {1: host_fcntl.LOCK_SH, 2: host_fcntl.LOCK_EX, 8: host_fcntl.LOCK_UN}.get(op & ~4)
            if how is None:
                self.set_errno(EINVAL)
                return 2**64 - 1
            try:
                host_fcntl.flock(self.fds[fd], how | (host_fcntl.LOCK_NB if op & 4 else 0))
            except OSError as e:
                return sys_fail(e)
            self.flocks.append((fd, op))
            return 0
        S("_flock", flock_)

        def fcntl(m, fd, cmd, *_):
            """fcntl (xnu libsyscall/wrappers/cancelable/fcntl-base.c: the third argument is
            variadic, read from the stack on arm64; bsd/kern/kern_descrip.c: sys_fcntl_nocancel).
            F_DUPFD/F_DUPFD_CLOEXEC: the lowest free descriptor >= arg, EINVAL when arg is at or
            over the descriptor limit, EMFILE when none is free; F_GETFD/F_SETFD: FD_CLOEXEC."""
            arg = m.stack_arg(0)
            if not self.fd_open(fd):
                self.set_errno(EBADF)
                return 2**64 - 1
            if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
                if arg >= self.fd_limit():
                    self.set_errno(EINVAL)
                    return 2**64 - 1
                g = self.fd_alloc(arg)
                if g < 0:
                    self.set_errno(EMFILE)
                    return 2**64 - 1
                self.fd_dup(fd, g)
                if cmd == F_DUPFD_CLOEXEC:
                    self.cloexec.add(g)
                return g
            if cmd == F_GETFD:
                return 1 if fd in self.cloexec else 0
            if cmd == F_SETFD:
                (self.cloexec.add if arg & 1 else self.cloexec.discard)(fd)
                return 0
            if cmd == F_GETFL:
                return 1 if fd in (1, 2) else 0
            raise GuestFault(f"fcntl command {cmd} has no stand-in")
        S("_fcntl", fcntl)

        def access(m, p, mode, *_):
            try:
                ok = os.access(path_of(p), mode)
                if not os.path.lexists(path_of(p)):
                    self.set_errno(ENOENT)
                    return 2**64 - 1
            except OSError as e:
                return sys_fail(e)
            if not ok:
                self.set_errno(EACCES)
                return 2**64 - 1
            return 0
        S("_access", access)
        S("_getuid", lambda m, *_: os.getuid())
        S("_geteuid", lambda m, *_: os.geteuid())  # xnu bsd/kern/kern_prot.c: geteuid
        S("_getpid", lambda m, *_: self.pid)  # xnu bsd/kern/kern_prot.c: getpid
        S("_getppid", lambda m, *_: self.host.get("ppid", 1))  # xnu bsd/kern/kern_prot.c: getppid (p_ppid)


        def time_(m, t, *_):
            """time(3) (Libc gen/FreeBSD/time.c: gettimeofday's seconds): the virtual clock."""
            secs = self.wall_s + self.clock_ns // 10**9
            if t:
                m.put64(t, secs)
            return secs
        S("_time", time_)

        def write(m, fd, buf, n, *_):
            """write(2) (xnu bsd/kern/sys_generic.c: write_nocancel): EBADF on a closed descriptor,
            ENOSPC on /dev/full, the terminal's bytes recorded, a file's written to this machine's."""
            kind = self.special.get(fd)
            data = m.read(buf, n)
            if kind == "tty":
                self.stderr += data
                return n
            if kind == "full":
                self.set_errno(ENOSPC)
                return 2**64 - 1
            if fd not in self.fds:
                self.set_errno(EBADF)
                return 2**64 - 1
            if any(os.path.exists(f) and os.path.samestat(os.fstat(self.fds[fd]), os.stat(f))
                   for f in self.host.get("full_disk", ())):  # a file on a full disk (the case names it)
                self.set_errno(ENOSPC)
                return 2**64 - 1
            try:
                return os.write(self.fds[fd], data)
            except OSError as e:
                return sys_fail(e)
        S("_write", write)
