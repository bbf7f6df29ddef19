"""The emulated Darwin's exec: xnu's exec_activate_image and exec_shell_imgact for one file, and
Libc's execvp, execl* and posix_spawnp over it, as a mixin of darwin.Darwin (the stand-ins of
execve, posix_spawn and the rest are registered there).

Read from xnu-11417.101.15 bsd/kern/kern_exec.c and Libc-1725.0.11 gen/FreeBSD/exec.c and
sys/posix_spawn.c; each rule below names its lines. The files are this machine's: its /bin,
/usr/bin and the other places SIP protects hold Linux programs where a Mac has Apple's Mach-O
ones, so a file there is taken for an image, unread (a stand-in's assumption, said here)."""
import os
import stat as S

# xnu bsd/sys/errno.h (this machine's OSError numbers that differ are mapped)
ENOENT, E2BIG, ENOEXEC, ENOMEM, EACCES, ENOTDIR, ETXTBSY, ELOOP, ENAMETOOLONG = 2, 7, 8, 12, 13, 20, 26, 62, 63
FROM_LINUX = {40: ELOOP, 36: ENAMETOOLONG}

IMG_SHSIZE = 512  # bsd/sys/imgact.h:69: the #! line is read within the first 512 bytes
PROTECTED = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/libexec/", "/System/")
MAXPATHLEN = 1024  # sys/param.h: Libc's buffer for a PATH candidate


def shell_line(page):
    """exec_shell_imgact (kern_exec.c:626-700) and exec_extract_strings (:6122-6160) on the first
    page of a file (zero-filled past its end, :2541-2543): the words of its #! line, or None
    (ENOEXEC) for a line with no interpreter or no '\\n' or '#' (IS_EOL, :333) within 512 bytes."""
    v = page[:IMG_SHSIZE].ljust(IMG_SHSIZE, b"\0")
    i = 2
    while i < IMG_SHSIZE and v[i] in b" \t":
        i += 1
    start = i
    while i < IMG_SHSIZE and v[i] not in b"#\n":
        i += 1
    if i == start or i == IMG_SHSIZE:
        return None
    line = v[start:i].rstrip(b" \t")
    words = line.partition(b"\0")[0].replace(b"\t", b" ").split(b" ")  # copystr and the tokenizer stop at a NUL
    return [w for w in words[:-1] if w] + [words[-1]]  # only spaces and tabs split (a '\r' is part of a word)


def is_image(page):
    """exec_mach_imgact (:1369-1410: MH_MAGIC or MH_MAGIC_64 in the host's order, MH_EXECUTE) or
    exec_fat_imgact (:792-815: FAT_MAGIC, big-endian in the file); no activator runs ELF."""
    magic, ftype = page[:4], page[12:16]
    return (magic in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe") and ftype == b"\x02\0\0\0") or magic == b"\xca\xfe\xba\xbe"


class KernelExec:
    def looked_up(self, path):
        """namei and exec_check_permissions (:2495-2520): the errno, or the first page (b"" for a
        program SIP protects: Apple's, unread)."""
        try:
            st = os.stat(path)
        except OSError as e:
            return FROM_LINUX.get(e.errno, e.errno), None
        if not S.S_ISREG(st.st_mode) or not os.access(path, os.X_OK):
            return EACCES, None
        if path.startswith(PROTECTED) or os.path.realpath(path).startswith(PROTECTED):
            return 0, b""
        with open(path, "rb") as f:
            return 0, f.read(4096)

    def activate(self, path, argv):
        """exec_activate_image (:2447-2632): (0, image, argv as the image gets it) or (errno, None,
        None). One #! level: the interpreter must be an image itself (IMGPF_INTERPRET, :636-641),
        and gets the line's words, the path as given and argv[1:] (argv[0] is consumed)."""
        err, page = self.looked_up(path)
        if err or page == b"" or is_image(page):
            return (err, None, None) if err else (0, path, argv)
        if page[:2] != b"#!":
            return ENOEXEC, None, None
        words = shell_line(page)
        if words is None:
            return ENOEXEC, None, None
        interp = words[0].decode("utf-8", "surrogateescape")
        err, ipage = self.looked_up(interp)
        if err:
            return err, None, None
        if ipage != b"" and not is_image(ipage):
            return ENOEXEC, None, None
        return 0, interp, [w.decode("utf-8", "surrogateescape") for w in words] + [path] + argv[1:]

    def record(self, kind, path, argv_a, envp_a):
        return {"kind": kind, "path": path, "argv": self.m.str_array(argv_a), "env": self.m.str_array(envp_a)}

    def kernel(self, kind, path, argv_a, envp_a):
        rec = self.record(kind, path, argv_a, envp_a)
        rec["errno"], rec["image"], rec["image_argv"] = self.activate(path, rec["argv"])
        (self.execs if kind == "execve" else self.spawns).append(rec)
        return rec

    def kernel_execve(self, path, argv_a, envp_a):
        rec = self.kernel("execve", path, argv_a, envp_a)
        if rec["errno"] == 0:
            from darwin import Exec
            raise Exec(rec)
        self.set_errno(rec["errno"])
        return -1

    def kernel_spawn(self, pid_a, path, argv_a, envp_a):
        """posix_spawn (kern_exec.c: posix_spawn): the error as its return value."""
        rec = self.kernel("posix_spawn", path, argv_a, envp_a)
        if rec["errno"] == 0 and pid_a:
            self.next_pid += 1
            self.m.put32(pid_a, self.next_pid)
        return rec["errno"]

    # ---- calls that dyld reroutes to the library's replacements ----
    def via(self, sym, fallback, *args):
        rep = self.m.interposer(sym)
        if rep:
            return self.m.call(rep, *args, image="libsystem_c")
        return fallback(self.m, *args)

    def path_candidates(self, file):
        """execvPe's and posix_spawnp's PATH (exec.c:185-226, :313-323; posix_spawn.c:92-138): unset,
        _PATH_DEFPATH "/usr/bin:/bin" (paths.h:65); an empty entry is "."; None for an entry too
        long for the MAXPATHLEN buffer."""
        if "/" in file:
            return [file]
        p = self.getenv("PATH")
        p = p if p is not None else "/usr/bin:/bin"
        return [None if len(d or ".") + len(file) + 2 > MAXPATHLEN else (d or ".") + "/" + file for d in p.split(":")]

    def sh_argv(self, cand, argv_a):
        """The ENOEXEC fallback's argv (exec.c:236-263, posix_spawn.c:151-177): the caller's argv[0]
        ("sh" when argv is empty), the file, argv[1:]."""
        args = self.m.str_array(argv_a)
        return self.m.new_array(([args[0]] if args else ["sh"]) + [cand] + args[1:])

    def searched(self, file, run, spawn):
        """The search both run (exec.c:228-301; posix_spawn.c:140-199): run(candidate) answers the
        errno; ENOEXEC runs /bin/sh; E2BIG, ENOMEM, ETXTBSY stop; ELOOP, ENAMETOOLONG, ENOENT,
        ENOTDIR go on; anything else asks stat(2): not there goes on, EACCES is remembered, the
        rest stops. A candidate too long is passed over by execvp, ENAMETOOLONG for posix_spawnp."""
        if not file:
            return ENOENT
        eacces = False
        for cand in self.path_candidates(file):
            if cand is None:
                if spawn:
                    return ENAMETOOLONG
                continue
            err = run(cand)
            if err == ENOEXEC:
                return run("/bin/sh", cand)
            if err in (E2BIG, ENOMEM, ETXTBSY):
                return err
            if err in (ELOOP, ENAMETOOLONG, ENOENT, ENOTDIR):
                continue
            if not os.path.exists(cand):
                continue
            if err == EACCES:
                eacces = True
                continue
            return err
        return EACCES if eacces else ENOENT if "/" not in file else err

    def libc_execve(self, path_a, argv_a, envp_a):
        """execv: execve(path, argv, environ) (exec.c), through the interposer."""
        return self.via("_execve", lambda m, *a: self.kernel_execve(self.m.cstr(a[0]).decode(), a[1], a[2]),
                        path_a, argv_a, envp_a)

    def libc_execvp(self, file, argv_a, envp_a):
        def run(cand, script=None):
            self.libc_execve(self.m.new_cstr(cand), self.sh_argv(script, argv_a) if script else argv_a, envp_a)
            return self.m.u32(self.errno_addr)
        self.set_errno(self.searched(file, run, False))
        return 2**64 - 1

    def libc_execl(self, path_a, arg0, sp, kind):
        """execl, execle, execlp: the variadic arguments (on the stack) into an argv, then execv,
        execve or execvp (exec.c)."""
        args, i = [arg0], 0
        while arg0:
            v = self.m.u64(sp + 8 * i)
            i += 1
            if not v:
                break
            args.append(v)
        argv_a = self.m.alloc(8 * (len(args) + 1), 8)
        for k, v in enumerate(args if arg0 else []):
            self.m.put64(argv_a + 8 * k, v)
        self.m.put64(argv_a + 8 * (len(args) if arg0 else 0), 0)
        envp = self.m.u64(sp + 8 * i) if kind == "env" else self.m.u64(self.environ_var)
        if kind == "search":
            return self.libc_execvp(self.m.cstr(path_a).decode(), argv_a, envp)
        return self.libc_execve(path_a, argv_a, envp)

    def libc_posix_spawnp(self, pid_a, file, fa, attr, argv_a, envp_a):
        """posix_spawnp (posix_spawn.c:69-202): posix_spawn per candidate (rerouted by dyld to the
        library's replacement), the error as the return value."""
        def run(cand, script=None):
            return self.via("_posix_spawn", lambda m, *a: self.kernel_spawn(a[0], self.m.cstr(a[1]).decode(), a[4], a[5]),
                            pid_a, self.m.new_cstr(cand), fa, attr, self.sh_argv(script, argv_a) if script else argv_a,
                            envp_a) & 0xFFFFFFFF
        return self.searched(file, run, True)

    def system(self, command):
        """system(3) (Libc stdlib/FreeBSD/system.c) and popen(3) (gen/FreeBSD/popen.c): each runs
        posix_spawn of /bin/sh -c command, through the interposer."""
        pid = self.m.alloc(8, 8)
        argv = self.m.new_array(["sh", "-c", command])
        return self.via("_posix_spawn", lambda m, *a: self.kernel_spawn(a[0], "/bin/sh", a[4], a[5]),
                        pid, self.m.new_cstr("/bin/sh"), 0, 0, argv, self.m.u64(self.environ_var))
