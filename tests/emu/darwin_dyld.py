"""The process's stand-ins besides its files: the virtual clock, select, libpthread's locks and
thread-specific data, dyld's API (environ, _NSGetExecutablePath, dladdr, the image list and its
add and remove notices), realpath, sysctlbyname, and the exec family's entry points over the
kernel's exec (xnu_exec.py), with the x86_64 slice's names for the same functions: a mixin of
darwin.Darwin, installed after the file stand-ins."""
import os
import struct

from xnu_defs import EBADF, ELOOP, ENAMETOOLONG, ENOENT, darwin_errno


class DyldStandins:
    def install_runtime(self):
        m, S = self.m, self.standin
        path_of = self.path_of
        # ---- time, signals, select (xnu libsyscall; Libc gen/clock_gettime.c) ----
        def clock_gettime(m, clk, ts, *_):
            """A virtual clock, 1 µs further at each call: the library's 200 ms budget for its
            stderr line never runs out because the host machine is busy (tests stay deterministic)."""
            self.clock_ns += 1000
            m.write(ts, struct.pack("<qq", self.clock_ns // 10**9, self.clock_ns % 10**9))
            return 0
        S("_clock_gettime", clock_gettime)
        S("___darwin_check_fd_set_overflow", lambda m, *_: 1)  # Libc: sys/_types/_fd_def.h inline check

        def select(m, n, r, w, e, tv, *_):
            """select(2): fd 2 is writable (a terminal or a pipe with room) unless the case says not."""
            if self.host.get("stderr_full"):
                return 0
            return 1 if self.fd_open(self.fd_set_first(m, n, w)) else (self.set_errno(EBADF), 2**64 - 1)[1]
        S("_select", select)

        S("_pthread_mutex_lock", lambda m, *_: 0)
        S("_pthread_mutex_unlock", lambda m, *_: 0)
        S("_sched_yield", lambda m, *_: 0)  # one thread here: the watch's wait never spins

        # ---- thread-specific data (libpthread: src/pthread_tsd.c) ----
        def key_create(m, key_a, dtor, *_):
            k = self.next_key
            self.next_key += 1
            self.dtors[k] = dtor
            m.put64(key_a, k)
            return 0
        S("_pthread_key_create", key_create)
        S("_pthread_getspecific", lambda m, k, *_: self.tsd.get(k, 0))
        S("_pthread_setspecific", lambda m, k, v, *_: (self.tsd.__setitem__(k, v), 0)[1])

        # ---- the process (dyld: dyldAPIs; Libc: gen/getprogname.c, crt_externs.c) ----
        S("__NSGetEnviron", lambda m, *_: self.environ_var)

        def exe_path(m, buf, size_a, *_):
            """_NSGetExecutablePath (dyld-1378 DyldAPIs.cpp:786-800): on macOS the "unreal" path,
            "not real-path. It may be a symlink": the kernel's executable_path as exec was given it
            (xnu kern_exec.c:536-574, exec_save_path), made absolute against the current directory
            with a leading "./" dropped (DyldProcessConfig.cpp:673-698), links never resolved; -1
            and the size needed when buf is too small."""
            exe = self.exe if self.exe.startswith("/") else os.getcwd() + "/" + self.exe.removeprefix("./")
            b = exe.encode()
            if m.u32(size_a) < len(b) + 1:
                m.put32(size_a, len(b) + 1)
                return 2**32 - 1
            m.write(buf, b + b"\0")
            return 0
        S("__NSGetExecutablePath", exe_path)

        def realpath(m, p, out, *_):
            """realpath(3) (Libc stdlib/FreeBSD/realpath.c, $DARWIN_EXTSN, __DARWIN_UNIX03): ENOENT
            for "" (:103-108) and for any missing component, the last too (:247-253); every link
            followed (:301-345), ELOOP past a loop, ENOTDIR through a file; ENAMETOOLONG at
            PATH_MAX (1024) bytes or more (:228-231)."""
            path = path_of(p)
            try:
                r = os.path.realpath(path, strict=True).encode() if path else None
            except OSError as e:
                self.set_errno(darwin_errno(e.errno or ELOOP))
                return 0
            if r is None:
                self.set_errno(ENOENT)
                return 0
            if len(r) >= 1024:
                self.set_errno(ENAMETOOLONG)
                return 0
            out = out or m.alloc(1024)
            m.write(out, r + b"\0")
            return out
        S("_realpath$DARWIN_EXTSN", realpath)

        def dladdr(m, addr, info, *_):
            """dladdr (dyld: dyldAPIs.cpp): the image holding addr; 0 outside every image."""
            path, base = m.image_at(addr)
            if not path:
                return 0
            m.put64(info, self.intern(path))
            m.put64(info + 8, base)
            m.put64(info + 16, 0)
            m.put64(info + 24, 0)
            return 1
        S("_dladdr", dladdr)

        # ---- dyld's list of images and its notices (dyld: DyldAPIs.cpp, DyldRuntimeState.cpp) ----
        def image_list(m):
            """The images dyld lists, in load order: the library, those mapped since
            (Machine.add_image) and the stand-in images that call (Machine.image); "dyld" (where
            its notices come from) is none of them."""
            return [(m.path, m.span[0])] + [(li.path, li.span[0]) for li in getattr(m, "loaded", [])] + \
                [(p, a) for name, (a, p) in m.images.items() if name != "dyld"]
        S("__dyld_image_count", lambda m, *_: len(image_list(m)))
        S("__dyld_get_image_name", lambda m, i, *_: self.intern(image_list(m)[i][0]) if i < len(image_list(m)) else 0)
        self.add_image_fns, self.remove_image_fns = [], []

        def notify(fns, base):
            for fn in list(fns):
                m.call(fn, base, 0, image="dyld")

        def register_add(m, fn, *_):
            """_dyld_register_func_for_add_image (DyldAPIs.cpp:802-832): fn(mh, slide) at once for
            each image loaded, then for each new one (Machine.image_added_hooks)."""
            for _, base in image_list(m):
                m.call(fn, base, 0, image="dyld")
            self.add_image_fns.append(fn)
        S("__dyld_register_func_for_add_image", register_add)
        S("__dyld_register_func_for_remove_image", lambda m, fn, *_: self.remove_image_fns.append(fn))
        m.image_added_hooks = [lambda base: notify(self.add_image_fns, base) if base != m.images.get("dyld", (0,))[0] else None]

        def replace_image(old, new, path):
            """dlclose of image `old` and dlopen of `new` (path) mapped at the same address: dyld's
            remove notices before the unmap (DyldRuntimeState.cpp:1630, :1901-1925, :2117), then
            its add notices."""
            base, _ = m.images[old]
            notify(self.remove_image_fns, base)
            del m.images[old]
            m.images[new] = (base, path)
            notify(self.add_image_fns, base)
        self.replace_image = replace_image

        def sysctlbyname(m, name, old, oldlen_a, new, newlen, *_):
            """sysctlbyname (Libc gen/sysctlbyname.c; the values xnu publishes): the brand string,
            hw.memsize and sysctl.proc_translated, from the case's host, and any name in its "sysctl"
            (an int is 4 bytes, as xnu's CTLTYPE_INT: kern.hv_vmm_present, hw.ncpu); ENOENT for what it lacks."""
            key = m.cstr(name).decode()
            self.sysctl_asked.append(key)
            val = {"machdep.cpu.brand_string": self.host.get("brand"), "hw.memsize": self.host.get("memsize"),
                   "sysctl.proc_translated": self.host.get("translated"), **self.host.get("sysctl", {})}.get(key)
            if val is None:
                self.set_errno(ENOENT)
                return 2**32 - 1
            data = val.encode() + b"\0" if isinstance(val, str) else struct.pack("<Q" if key == "hw.memsize" else "<i", val)
            cap = m.u64(oldlen_a)
            if old:
                if cap < len(data):
                    self.set_errno(12)
                    return 2**32 - 1
                m.write(old, data)
            m.put64(oldlen_a, len(data))
            return 0
        S("_sysctlbyname", sysctlbyname)

        # ---- programs (xnu kern_exec.c; Libc gen/FreeBSD/exec.c; Libc sys/posix_spawn.c) ----
        S("_execve", lambda m, p, argv, envp, *_: self.kernel_execve(path_of(p), argv, envp))
        S("_posix_spawn", lambda m, pid, p, fa, attr, argv, envp, *_: self.kernel_spawn(pid, path_of(p), argv, envp))
        S("_posix_spawnp", lambda m, pid, f, fa, attr, argv, envp, *_: self.libc_posix_spawnp(pid, path_of(f), fa, attr, argv, envp))
        S("_execv", lambda m, p, argv, *_: self.libc_execve(p, argv, m.u64(self.environ_var)))
        S("_execvp", lambda m, f, argv, *_: self.libc_execvp(path_of(f), argv, m.u64(self.environ_var)))
        S("_execl", lambda m, p, a0, *_: self.libc_execl(p, a0, m.uc.reg_read(SP), "path"))
        S("_execle", lambda m, p, a0, *_: self.libc_execl(p, a0, m.uc.reg_read(SP), "env"))
        S("_execlp", lambda m, p, a0, *_: self.libc_execl(p, a0, m.uc.reg_read(SP), "search"))
        # the x86_64 slice's names for the same functions (Libc's symbol variants, <sys/cdefs.h>:
        # $INODE64 for the 64-bit-inode struct stat, $1050 for select's 10.5 semantics; ___bzero)
        for alias, base in (("_fstat$INODE64", "_fstat"), ("_stat$INODE64", "_stat"), ("_lstat$INODE64", "_lstat"), ("_fstatat$INODE64", "_fstatat"), ("_select$1050", "_select"),
                            ("___bzero", "_bzero")):
            S(alias, m.standins[base])


from unicorn.arm64_const import UC_ARM64_REG_SP as SP  # noqa: E402
