"""xnu's numbers and layouts the Darwin stand-ins share: errno values (bsd/sys/errno.h, those that
differ from this machine's mapped), open(2) and fcntl(2) flags (bsd/sys/fcntl.h), and struct stat
as bsd/sys/stat.h lays it out on arm64."""
import struct

# xnu bsd/sys/errno.h (numbers that differ from Linux's are mapped)
EPERM, ENOENT, EINTR, EIO, E2BIG, ENOEXEC, EBADF, ENOMEM, EACCES, EFAULT = 1, 2, 4, 5, 7, 8, 9, 12, 13, 14
ENOTDIR, EISDIR, EINVAL, EAGAIN, ELOOP, ENAMETOOLONG, ENOTSUP = 20, 21, 22, 35, 62, 63, 45
LINUX_TO_DARWIN = {11: EAGAIN, 40: ELOOP, 36: ENAMETOOLONG, 95: ENOTSUP}
# xnu bsd/sys/fcntl.h
O_ACCMODE, O_NONBLOCK, O_NOFOLLOW, O_NOCTTY, O_DIRECTORY, O_CLOEXEC = 3, 0x4, 0x100, 0x20000, 0x100000, 0x1000000
O_APPEND, O_CREAT, O_TRUNC, O_EXCL = 0x8, 0x200, 0x400, 0x800
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC = 0, 1, 2, 3, 67
EMFILE, ENOSPC = 24, 28


def darwin_errno(e):
    return LINUX_TO_DARWIN.get(e, e)


def pack_stat(st):
    """struct stat (64-bit inodes) as xnu bsd/sys/stat.h lays it out on arm64: 144 bytes."""
    def ts(t):
        return struct.pack("<qq", int(t), int((t % 1) * 1e9))
    return (struct.pack("<iHHQIIi4x", st.st_dev & 0x7FFFFFFF, st.st_mode, min(st.st_nlink, 0xFFFF), st.st_ino,
                        st.st_uid, st.st_gid, (getattr(st, "st_rdev", 0) or 0) & 0x7FFFFFFF) +
            ts(st.st_atime) + ts(st.st_mtime) + ts(st.st_ctime) + ts(st.st_ctime) +
            struct.pack("<qqiIIi", st.st_size, getattr(st, "st_blocks", 0) or 0, getattr(st, "st_blksize", 4096) or 4096, 0, 0, 0) + b"\0" * 16)
