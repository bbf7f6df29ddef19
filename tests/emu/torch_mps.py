"""PyTorch's MPS start-up beside ggml in one emulated process, both ways (make check-torch, run by
.ci/run after make check; not part of make check: libtorch_cpu.dylib is 422 MB and LIEF needs
15-25 s and 4.8 GB to read it).

usage: python3 tests/emu/torch_mps.py [TORCH_LIB_DIR]
  TORCH_LIB_DIR  holds libc10.dylib and libtorch_cpu.dylib; default: the torch wheel's torch/lib
                 that scripts/fetch-clients extracts (the pin ENTRY, fetched on demand)

For each case the shipped library is inserted and started on an M2 host with the family unlocked
(VZCAPS_APPLE_FAMILY_MAX=auto); node-llama-cpp 3.21.1's ggml (tests/emu/clients.py) starts its
Metal device; then libc10 and libtorch_cpu are mapped and bound beside it and PyTorch's own
at::mps::MPSDevice::getInstance() runs (its device creation through MTLCopyAllDevices and its
Apple7 query; libtorch_cpu's 333 initializers, operator registrations, are not run). The cases:
  default scope         nothing set: callers = *, stock_callers = libtorch_cpu.dylib
                        libtorch_cpu.so (the library's defaults): ggml reads Apple8, PyTorch's
                        supportsFamily:Apple7 reads NO (its Metal Performance Primitives stay off)
  stock_callers = none  PyTorch reads YES and getInstance() returns
The answer PyTorch read is taken at the return address in libtorch_cpu (a one-shot hook). On the
NO path PyTorch goes on to build a warning with libc++ strings that have no stand-in, and stops
there; what it read is what is checked. Exit status 0 when both cases hold, 1 otherwise (each
difference on one line); the closing line:
  check-torch: PyTorch's MPS start-up beside ggml: default scope Apple7 = NO (ggml Apple8); stock_callers = none Apple7 = YES
"""
import gc
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import clients  # noqa: E402
import frameworks  # noqa: E402
from machoemu import GuestFault, Image  # noqa: E402
from process import Process, image  # noqa: E402
from unicorn import UC_HOOK_CODE  # noqa: E402
from unicorn.arm64_const import UC_ARM64_REG_X0, UC_ARM64_REG_X30  # noqa: E402

ENTRY = "torch-2.15.0-cp312-macosx_14_0_arm64"  # scripts/fetch-clients' TORCH pin
SITE = "/Users/me/venv/lib/python3.12/site-packages/torch/lib"
GETINSTANCE = "__ZN2at3mps9MPSDevice11getInstanceEv"
UNLOCK = {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2"}
# name, variables beside UNLOCK, what PyTorch's supportsFamily:Apple7 must read, whether getInstance() must return
CASES = [("default scope", {}, 0, False), ("stock_callers = none", {"VZCAPS_STOCK_CALLERS": "none"}, 1, True)]


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


def run_case(c10, cpu, env):
    """One process: the library, ggml's start-up, then PyTorch's getInstance(). Returns what
    ggml printed and asked, what PyTorch asked and read, whether getInstance() returned, and
    the library's stderr."""
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
    ggml = clients.Run(p, logs, sends, set())
    ggml_callers, ggml_observed = ggml.callers(), ggml.observed(b)  # before PyTorch asks
    p.m.add_image(c10, f"{SITE}/libc10.dylib")
    lt = p.m.add_image(cpu, f"{SITE}/libtorch_cpu.dylib")
    got = answers_of(p, lt)
    try:
        p.m.call(lt.exports[GETINSTANCE], image="python3")
        returned, why = True, ""
    except (GuestFault, Exception) as e:  # the NO path stops where a stand-in is missing
        returned, why = False, f"{type(e).__name__}: {str(e)[:160]}"
    return {"ggml": ggml_observed, "ggml_callers": ggml_callers, "torch": [(f, a) for f, a, _ in got],
            "returned": returned, "why": why, "stderr": p.stderr.strip()}


def differences(name, want_answer, must_return, r):
    b = clients.BUILDS[0]
    out = []
    want_ggml = clients.predict(b, clients.answered(clients.HOSTS["Apple M2"]))
    if r["ggml"] != want_ggml:
        out.append(f"{name}: ggml printed {r['ggml']}, its gates predict {want_ggml}")
    if r["ggml_callers"] != ["libggml-metal.so"]:
        out.append(f"{name}: the families ggml asked came from {r['ggml_callers']}, not libggml-metal.so")
    apple7 = [a for f, a in r["torch"] if f == 1007]
    if not apple7 or any(a != want_answer for a in apple7):
        out.append(f"{name}: PyTorch's supportsFamily:Apple7 read {apple7 or 'nothing (not asked)'}, expected {want_answer}")
    if must_return and not r["returned"]:
        out.append(f"{name}: MPSDevice::getInstance() did not return: {r['why']}")
    return out


def main(argv):
    if len(argv) > 1 or (argv and not os.path.isdir(argv[0])):
        sys.exit("usage: python3 tests/emu/torch_mps.py [TORCH_LIB_DIR]")
    lib = argv[0] if argv else str(clients.CACHE / ENTRY / "torch" / "lib")
    paths = [os.path.join(lib, n) for n in ("libc10.dylib", "libtorch_cpu.dylib")]
    for path in paths:
        if not os.path.isfile(path):
            sys.exit(f"check-torch: {path}: missing; run python3 scripts/fetch-clients {ENTRY}")
    t0 = time.time()

    def lap(msg):
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(f"{time.time() - t0:6.1f} s  {rss:5d} MB  {msg}", flush=True)
    c10, cpu = Image.load(paths[0]), Image.load(paths[1])
    lap(f"libtorch_cpu.dylib ({os.path.getsize(paths[1])} bytes) parsed")
    failed, seen = [], {}
    for name, extra, want, must_return in CASES:
        r = run_case(c10, cpu, {**UNLOCK, **extra})
        gc.collect()  # the previous process's guest memory goes before the next is mapped
        seen[name] = r
        lap(f"{name}: ggml read Apple{(r['ggml']['family'] or 0) - 1000}; PyTorch asked and read {r['torch']}; "
            f"getInstance() {'returned' if r['returned'] else 'stopped: ' + r['why']}")
        failed += differences(name, want, must_return, r)
    for line in failed:
        print("check-torch: " + line)
    if failed:
        return 1
    d = seen["default scope"]
    print(f"check-torch: PyTorch's MPS start-up beside ggml: default scope Apple7 = NO (ggml Apple{d['ggml']['family'] - 1000}); "
          "stock_callers = none Apple7 = YES")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
