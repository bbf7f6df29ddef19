"""One emulated macOS process with the shipped library inserted: dyld's part (load, fixups,
initializers, interposing) and the rig's probe program's part (tests/rig/probe.m), so that its
output can be compared line by line with build/probe's on the rig."""
import os

from darwin import Darwin, Exec
from machoemu import Image, Machine

FAMILIES = [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002]

_images = {}


def image(path, cpu="ARM64"):
    key = (str(path), cpu, os.path.getmtime(path) if isinstance(path, (str, os.PathLike)) else None)
    if key not in _images:
        _images[key] = Image.load(str(path), cpu)
    return _images[key]


class Process:
    def __init__(self, img, env, argv=("probe",), exe=None, host=None, metal=True, lazy=True, lib_path=None,
                 fail_add_method=False, chained=None):
        self.lib_path = lib_path or "/opt/homebrew/lib/libvzcaps.dylib"
        self.m = Machine(img, lazy=lazy, path=self.lib_path)
        self.m.image("probe", exe or "/usr/local/bin/probe")
        self.m.image("Metal", "/System/Library/Frameworks/Metal.framework/Versions/A/Metal")
        self.m.image("libsystem_c", "/usr/lib/system/libsystem_c.dylib")
        self.m.image("dyld", "/usr/lib/dyld")
        self.d = Darwin(self.m, env, argv=argv, exe=exe or "/usr/local/bin/probe", host=host, metal=metal)
        self.d.fail_add_method = fail_add_method
        self.m.load(absent=() if metal else ("_MTLCreateSystemDefaultDevice", "_MTLCopyAllDevices",
                                             "_MTLCopyAllDevicesWithObserver"), chained=chained)
        self.exec_record = None

    def start(self):
        """dyld: the initializers with (argc, argv, envp, apple, &vars)."""
        self.m.run_initializers(self.d.argv, self.m.u64(self.d.environ_var), ["executable_path=" + self.d.exe])
        return self

    # ---- what the probe does, from its own image ----
    def create_device(self, factory="_MTLCreateSystemDefaultDevice"):
        rep = self.m.interposer(factory)
        target = rep or self.m.address_of_import(factory)
        r = self.m.call(target, image="probe")
        if factory != "_MTLCreateSystemDefaultDevice" and r:
            items = self.d.objc.objects[r]["items"]
            return items[0]
        return r

    def ask(self, dev, image="probe"):
        rt = self.d.objc
        out = {"class": rt.class_of(dev).name, "families": {}}
        for f in FAMILIES:
            out["families"][f] = 1 if rt.send(dev, "supportsFamily:", f, image=image) & 0xFF else 0
        has_tg = rt.lookup(rt.class_of(dev), "maxThreadgroupMemoryLength") is not None
        # each query from a call site of its own, as probe.m's are
        out["tg"] = rt.send(dev, "maxThreadgroupMemoryLength", image=image, site=1) if has_tg else None
        out["ws"] = rt.send(dev, "recommendedMaxWorkingSetSize", image=image, site=2)
        if rt.lookup(rt.class_of(dev), "apple7AtInit"):
            out["apple7"] = rt.send(dev, "apple7AtInit", image=image) & 0xFF
        return out

    def probe(self, factory="_MTLCreateSystemDefaultDevice"):
        dev = self.create_device(factory)
        return self.ask(dev)

    @property
    def stderr(self):
        return self.d.stderr.decode("utf-8", "replace")

    def run_child(self, how, program, args, envp=None, argv0=None):
        """The probe's --spawn, by one of the calls that start programs (argv[0] program, or
        argv0); returns the record of what the kernel was asked to run (the last one), None when
        nothing was."""
        m, d = self.m, self.d
        argv_a = m.new_array([program if argv0 is None else argv0] + list(args))
        env_a = m.u64(d.environ_var) if envp is None else m.new_array(envp)
        prog_a = m.new_cstr(program)
        pid_a = m.alloc(8, 8)
        call = lambda sym, *a, sp=(): m.call(m.interposer(sym) or m.address_of_import(sym), *a, image="probe", sp_args=sp)
        try:
            if how in ("posix_spawn", "posix_spawnp"):
                rc = call("_" + how, pid_a, prog_a, 0, 0, argv_a, env_a) & 0xFFFFFFFF
            elif how == "execve":
                rc = call("_execve", prog_a, argv_a, env_a)
            elif how in ("execv", "execvp"):
                rc = call("_" + how, prog_a, argv_a)
            elif how in ("execl", "execlp", "execle"):
                extra = [m.new_cstr(a) for a in args] + [0] + ([env_a] if how == "execle" else [])
                rc = call("_" + how, prog_a, m.new_cstr(program), sp=extra)
            elif how in ("system", "popen"):
                rc = d.system(program + "".join(" " + a for a in args))
            else:
                raise ValueError(how)
        except Exec as e:
            return {"ran": e.record, "rc": 0, "records": d.execs + d.spawns}
        recs = d.execs + d.spawns
        ran = next((r for r in d.spawns if r["errno"] == 0), None)
        return {"ran": ran, "rc": rc, "errno": m.u32(d.errno_addr), "records": recs}


def run(img, env, **kw):
    p = Process(img, env, **kw).start()
    return p
