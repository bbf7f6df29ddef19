"""PyTorch's MPS start-up beside ggml in one emulated process, by hand (not part of make check:
libtorch_cpu.dylib is 422 MB; LIEF needs about 35-60 s and 4.8 GB to read it).

usage: python3 tests/emu/torch_mps.py TORCH_WHEEL [VZCAPS_VARIABLE=VALUE ...]
  TORCH_WHEEL  a torch macOS arm64 wheel from PyPI (torch-2.15.0-cp312-cp312-macosx_14_0_arm64.whl
               was the one tried); its torch/lib/libc10.dylib and libtorch_cpu.dylib are read
               from it into a temporary directory
  default variables: VZCAPS_APPLE_FAMILY_MAX=auto VZCAPS_HOST_CHIP="Apple M2" VZCAPS_CALLERS="libggml*"

The library is inserted and started; node-llama-cpp 3.21.1's ggml (tests/emu/clients.py) starts
its Metal device; then libc10 and libtorch_cpu are mapped and bound beside it and PyTorch's own
at::mps::MPSDevice::getInstance() runs. libtorch_cpu's 333 initializers (operator registrations)
are not run; on the path where Apple7 is answered NO the start-up stops where PyTorch builds a
C++ string stream (libc++'s streams have no stand-in); with YES, getInstance() returns. What runs
is its device creation through MTLCopyAllDevices and its family query. Prints what ggml printed, every supportsFamily: PyTorch's bytes sent and the answer they
read back (a one-shot hook at the return address in libtorch_cpu), and the times and memory.
"""
import os
import resource
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import clients  # noqa: E402
import frameworks  # noqa: E402
from machoemu import GuestFault, Image  # noqa: E402
from process import Process, image  # noqa: E402
from unicorn import UC_HOOK_CODE  # noqa: E402
from unicorn.arm64_const import UC_ARM64_REG_X0, UC_ARM64_REG_X30  # noqa: E402

SITE = "/Users/me/venv/lib/python3.12/site-packages/torch/lib"
GETINSTANCE = "__ZN2at3mps9MPSDevice11getInstanceEv"


def extract(wheel, tmp):
    with zipfile.ZipFile(wheel) as z:
        return [z.extract(f"torch/lib/{n}", tmp) for n in ("libc10.dylib", "libtorch_cpu.dylib")]


def answers_of(p, lt):
    """Records (family, answer, return offset) of each supportsFamily: sent from libtorch_cpu."""
    out, inner, sel = [], p.m.standins["_objc_msgSend"], p.d.objc.sel("supportsFamily:")

    def traced(m, obj, s, *a):
        ret = m.uc.reg_read(UC_ARM64_REG_X30)
        if s == sel and m.loaded_at(ret) is lt:
            fam, hook = a[0], []

            def got(uc, addr, size, _):
                out.append((fam, uc.reg_read(UC_ARM64_REG_X0) & 0xFF, addr - lt.base))
                uc.hook_del(hook[0])
            hook.append(m.uc.hook_add(UC_HOOK_CODE, got, begin=ret, end=ret))
        return inner(m, obj, s, *a)
    p.m.standin("_objc_msgSend", traced)
    return out


def main(argv):
    if not argv or not os.path.isfile(argv[0]):
        sys.exit("usage: python3 tests/emu/torch_mps.py TORCH_WHEEL [VARIABLE=VALUE ...]")
    t0 = time.time()

    def lap(msg):
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(f"{time.time() - t0:6.1f} s  {rss:5d} MB  {msg}", flush=True)
    env = {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_CALLERS": "libggml*"}
    env.update(a.split("=", 1) for a in argv[1:])
    b = clients.BUILDS[0]
    p = Process(image(str(clients.LIB)), env, argv=("python3",), exe="/usr/local/bin/python3")
    frameworks.install(p.d)
    sends, _ = clients.trace_sends(p)
    p.start()
    loaded = [p.m.add_image(image(str(b.extracted() / rel)), b.guest_path(rel)) for rel in b.images]
    for li in loaded:
        p.m.start_image(li, envp=p.m.u64(p.d.environ_var))
    logs = []
    clients.ENTRIES[b.entry](p, loaded, logs)
    lap("ggml: " + "; ".join(ln.split(": ", 1)[1] for ln in "".join(logs).splitlines()
                             if "GPU family: MTLGPUFamilyApple" in ln or "simdgroup reduction" in ln))
    with tempfile.TemporaryDirectory() as tmp:
        c10_path, cpu_path = extract(argv[0], tmp)
        print(f"libtorch_cpu.dylib: {os.path.getsize(cpu_path)} bytes")
        c10, cpu = Image.load(c10_path), Image.load(cpu_path)
    init = cpu.section("__TEXT", "__init_offsets")
    lap(f"parsed: {len(list(cpu.bin.imported_symbols))} imports, {init.size // 4 if init else 0} initializers (not run)")
    p.m.add_image(c10, f"{SITE}/libc10.dylib")
    lt = p.m.add_image(cpu, f"{SITE}/libtorch_cpu.dylib")
    lap(f"mapped and bound; {len(set(lt.missing))} of its imports have no stand-in (each fails only if called)")
    got = answers_of(p, lt)
    try:
        p.m.call(lt.exports[GETINSTANCE], image="python3")
        lap("MPSDevice::getInstance() returned")
    except (GuestFault, Exception) as e:
        lap(f"MPSDevice::getInstance() stopped: {type(e).__name__}: {str(e)[:160]}")
    print("ggml asked from:", sorted({c for _, c in sends if c.startswith("libggml")}))
    print("PyTorch asked and read:", [(f, a) for f, a, _ in got])
    print("stderr:", p.stderr.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
