"""Real Metal clients from the package registries, run in one emulated process with the shipped
library (tests/emu/test_clients.py; docs/clients.md is written from this run).

A client build is a set of Mach-O images from a pinned registry archive (scripts/install-deps
fetches it into ~/.cache/vzcaps/clients and checks its SHA-256). `run(build, env, host)` makes
the process: the library inserted and started (its initializer), then the client's images
mapped at their own bases and bound across each other and the stand-ins (machoemu.LoaderMixin,
frameworks.py), their initializers run, and the client entered the way its own loader enters it.
What the client said (its log lines) and asked (every supportsFamily: it sent, from which image)
is returned.
"""
import os
import pathlib
import re

import frameworks
from machoemu import GuestFault
from unicorn.arm64_const import UC_ARM64_REG_X30
from process import Process, image

CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "vzcaps" / "clients"
NODE = "/Users/me/app/node_modules"
ROOT = pathlib.Path(__file__).resolve().parents[2]
LIB = pathlib.Path(os.environ.get("VZCAPS_EMU_LIB") or ROOT / "dist" / "libvzcaps.dylib")


class Build:
    """One client build: name, package, version, what it carries (ggml's version), the archive's
    entry in the cache (scripts/fetch-clients' PINS), its images (archive path, dependencies first) and how it is entered."""

    def __init__(self, key, client, package, version, carries, archive, images, entry, guest_dir):
        self.key, self.client, self.package, self.version, self.carries = key, client, package, version, carries
        self.archive, self.images, self.entry, self.guest_dir = archive, images, entry, guest_dir

    def extracted(self):
        """Its directory in the cache: the archive's entry name in scripts/fetch-clients' PINS."""
        return CACHE / self.archive

    def available(self):
        return all((self.extracted() / p).is_file() for p in self.images)

    def guest_path(self, p):
        return f"{self.guest_dir}/{p.rsplit('/', 1)[-1]}"


BUILDS = [
    Build("nlc-3.21.1", "node-llama-cpp (llama.cpp)", "@node-llama-cpp/mac-arm64-metal", "3.21.1", "ggml 0.23.0",
          "node-llama-cpp-mac-arm64-metal-3.21.1",
          ["package/bins/mac-arm64-metal/libggml-base.dylib", "package/bins/mac-arm64-metal/libggml-metal.so"],
          "backend_init", f"{NODE}/@node-llama-cpp/mac-arm64-metal/bins/mac-arm64-metal"),
    Build("pywhispercpp-1.5.1", "whisper.cpp (pywhispercpp)", "pywhispercpp", "1.5.1", "whisper.cpp 1.8.5, ggml 0.13.1",
          "pywhispercpp-1.5.1-cp312-macosx_11_0_arm64",
          ["pywhispercpp/.dylibs/libggml-base.0.13.1.dylib", "pywhispercpp/.dylibs/libggml-metal.0.13.1.dylib"],
          "metal_reg", "/Users/me/venv/lib/python3.12/site-packages/pywhispercpp/.dylibs"),
    Build("napi-whisper-0.0.4", "whisper.cpp (@napi-rs/whisper, a Rust Node addon)", "@napi-rs/whisper-darwin-arm64", "0.0.4",
          "whisper.cpp of early 2025 (ggml-metal.m with bfloat), linked in",
          "napi-rs-whisper-darwin-arm64-0.0.4", ["package/whisper.darwin-arm64.node"],
          "metal_init_local", "/Users/me/app/node_modules/@napi-rs/whisper-darwin-arm64"),
    Build("nlc-3.1.1", "node-llama-cpp (llama.cpp)", "@node-llama-cpp/mac-arm64-metal", "3.1.1", "llama.cpp b3889 (one-file ggml-metal.m)",
          "node-llama-cpp-mac-arm64-metal-3.1.1", ["package/bins/mac-arm64-metal/libggml.dylib"],
          "metal_init", f"{NODE}/@node-llama-cpp/mac-arm64-metal/bins/mac-arm64-metal"),
    Build("fugood-whisper-1.1.1", "whisper.cpp (@fugood/whisper.node, a Node addon)", "@fugood/node-whisper-darwin-arm64", "1.1.1",
          "whisper.cpp 1.9.1, ggml 0.15.3, linked in", "fugood-node-whisper-darwin-arm64-1.1.1", ["package/index.node"],
          "metal_reg", f"{NODE}/@fugood/node-whisper-darwin-arm64"),
]


# ---- what each client's own gates predict --------------------------------------------------
# The families the library answers per host (docs: /work/shared/METAL-FACTS.md "Apple1 ..
# Apple10", and the project's rule "Apple family up to the host's; never Metal3/Metal4 by
# default"): stock's answers plus Apple1 .. the host's family.
STOCK = {1001, 1002, 1003, 1004, 1005, 2002, 3001, 3002, 3003}
HOSTS = {"Apple M1": 1007, "Apple M2": 1008, "Apple M3 Max": 1009, "Apple M5": 1010}


def answered(host_family):
    return STOCK | set(range(1001, host_family + 1)) if host_family else set(STOCK)


# ggml_metal_device_init's gates, ggml 0.23.0's ggml/src/ggml-metal/ggml-metal-device.m as
# vendored by llama-cpp-python 0.3.36 (the sdist scripts/check-gates pins and caches; the
# npm build carries the same log formats, checked by test_clients.py). Each value: the line
# ggml prints, the rule over the answered families F, where the rule is.
GATES_DEVICE_M = {
    "simdgroup reduction": (lambda F, name: 1007 in F or 5001 in F, "ggml-metal-device.m:1133-1134 (Apple7 or Metal3)"),
    "simdgroup matrix mul.": (lambda F, name: 1007 in F, "ggml-metal-device.m:1136 (Apple7)"),
    "has bfloat": (lambda F, name: 5001 in F or 1006 in F, "ggml-metal-device.m:1139-1140 (Metal3 or Apple6)"),
    "has tensor": (lambda F, name: 5002 in F and any(k in name for k in ("M5", "M6", "A19", "A20")),
                   "ggml-metal-device.m:1145-1161 (Metal4 and a device name with M5, M6, A19 or A20)"),
}
FAMILY_DEVICE_M = "ggml-metal-device.m:1329-1332 (the highest Apple1+20 .. Apple1 the device supports)"
# The one-file era: ggml_metal_init's gates, ggml/src/ggml-metal.m as vendored by
# llama-cpp-python 0.3.1 (PyPI sdist of 2024-09-29, SHA-256 75ec8374...9004; the npm build is
# llama.cpp b3889 of the following week, and carries the same log formats, checked below).
GATES_METAL_M = {
    "simdgroup reduction support": (lambda F, name: 1007 in F or 5001 in F, "ggml-metal.m:449-450 (Apple7 or Metal3)"),
    "simdgroup matrix mul. support": (lambda F, name: 1007 in F, "ggml-metal.m:452 (Apple7)"),
}
FAMILY_METAL_M = "ggml-metal.m:423-429 (the highest Apple1+20 .. Apple1 the device supports)"
WHAT = {"simdgroup reduction": "Apple7 or Metal3", "simdgroup matrix mul.": "Apple7", "has bfloat": "Metal3 or Apple6",
        "has tensor": "Metal4 and an M5, M6, A19 or A20 name"}


def at_lines(source, *lines):
    """GATES_DEVICE_M's rules at another copy's lines (in WHAT's order)."""
    return {label: (GATES_DEVICE_M[label][0], f"{source}:{where} ({WHAT[label]})") for label, where in zip(WHAT, lines)}


# whisper.cpp's copy of the same file, as pywhispercpp 1.5.1's sdist carries it (the one
# scripts/check-gates pins): the same rules at its own lines
GATES_WHISPER = at_lines("ggml-metal-device.m", "692-693", "695", "698-699", "704-720")
FAMILY_WHISPER = "ggml-metal-device.m:875-877 (the highest Apple1+20 .. Apple1 the device supports)"
# The era between (ggml-metal.m with bfloat, ggml linked into the client): ggml/src/ggml-metal/
# ggml-metal.m as pywhispercpp 1.3.1's sdist carries it (PyPI, 2025-05-21, SHA-256
# c1a4eecf...7364; the npm build's copy sits at ggml/src/ggml-metal.m, the same rules)
GATES_MID = at_lines("ggml-metal.m", "63-64", "66", "68-69")
FAMILY_MID = "ggml-metal.m:628-630 (the highest Apple1+20 .. Apple1 the device supports)"
# whisper.cpp 1.9.1's copy (ggml 0.15.3) in @fugood/node-whisper: whisper.cpp's git 6fc7c33, whose
# tree the npm source package @fugood/whisper.node@1.1.1 matches but for ggml-metal (tests/emu/ops.py)
GATES_FUGOOD = at_lines("ggml-metal-device.m", "696-697", "699", "702-703", "708-725")
FAMILY_FUGOOD = "ggml-metal-device.m:879-881 (the highest Apple1+20 .. Apple1 the device supports)"
GATES = {"nlc-3.21.1": (GATES_DEVICE_M, FAMILY_DEVICE_M), "napi-whisper-0.0.4": (GATES_MID, FAMILY_MID), "nlc-3.1.1": (GATES_METAL_M, FAMILY_METAL_M),
         "pywhispercpp-1.5.1": (GATES_WHISPER, FAMILY_WHISPER), "fugood-whisper-1.1.1": (GATES_FUGOOD, FAMILY_FUGOOD)}
# what a failing newLibraryWithSource: does to the start-up: ggml-metal-device.m:1311-1314 logs
# "failed to create library" and goes on (the families are still printed); ggml-metal.m:409-412
# returns NULL before its family lines (418-455), and ggml_backend_metal_init says "failed to
# allocate context" (3444): nothing is printed
# the era between: ggml-metal.m:605-608 returns NULL before its family lines (628), 4567 says so
COMPILE_FAILURE_ABORTS = {"napi-whisper-0.0.4": True, "nlc-3.21.1": False, "nlc-3.1.1": True, "pywhispercpp-1.5.1": False,
                          "fugood-whisper-1.1.1": False}  # whisper: 857-859; fugood's: 861-864
# where the library's options get GGML_METAL_HAS_BF16 from has_bfloat (the era between defines
# GGML_METAL_USE_BF16 only when built with it: not a gate)
BF16_MACRO = {"nlc-3.21.1": "ggml-metal-device.m:456", "pywhispercpp-1.5.1": "ggml-metal-device.m:216-217",
              "fugood-whisper-1.1.1": "ggml-metal-device.m:216-217"}
# the families each build's gates read (every case must see the client ask each of them)
GATE_FAMILIES = {"napi-whisper-0.0.4": {1006, 1007, 5001}, "nlc-3.21.1": {1006, 1007, 5001, 5002}, "nlc-3.1.1": {1007, 5001},
                 "pywhispercpp-1.5.1": {1006, 1007, 5001, 5002}, "fugood-whisper-1.1.1": {1006, 1007, 5001, 5002}}


def predict(build, families, name="Apple Paravirtual device", compile_fails=False):
    """{label: "true"/"false", "family": N} that the build's gates give for the families (all
    None when a failing compile ends the start-up before the lines)."""
    gates, _ = GATES[build.key]
    if compile_fails and COMPILE_FAILURE_ABORTS[build.key]:
        return {**{label: None for label in gates}, "family": None}
    out = {label: "true" if rule(families, name) else "false" for label, (rule, _) in gates.items()}
    out["family"] = max(f for f in families if 1001 <= f <= 1021)
    return out


class Run:
    def __init__(self, p, logs, sends, selectors, handle=None, loaded=()):
        self.p, self.logs, self.sends, self.selectors = p, logs, sends, selectors
        self.handle, self.loaded, self.caller = handle, loaded, "node"  # what the entry returned, the build's images

    @property
    def text(self):
        return "".join(self.logs)

    def value(self, label):
        """The value a ggml line `...: <label> = <value>` printed, or None."""
        m = re.search(r"%s\s*= (\S+)" % re.escape(label), self.text)
        return m.group(1) if m else None

    def family(self):
        """The Apple family ggml printed (`GPU family: MTLGPUFamilyAppleN  (100N)`), or None."""
        m = re.search(r"GPU family: MTLGPUFamilyApple\d+\s+\((\d+)\)", self.text)
        return int(m.group(1)) if m else None

    def observed(self, build):
        out = {label: self.value(label) for label in GATES[build.key][0]}
        out["family"] = self.family()
        return out

    def families_asked(self):
        return sorted({f for f, _ in self.sends})

    def callers(self):
        return sorted({c for _, c in self.sends})


def trace_sends(p):
    """Wraps objc_msgSend's stand-in: every supportsFamily: a client image sends, with the family
    and the image its return address lies in (what the library's caller scope sees)."""
    sends, selectors, d, m = [], set(), p.d, p.m
    inner = m.standins["_objc_msgSend"]
    sel = d.objc.sel("supportsFamily:")
    device = d.objc.classes["_MTLDevice"]

    def is_device(obj):
        c = d.objc.class_of(obj) if obj else None
        while c and c is not device:
            c = c.sup
        return c is device

    def traced(mm, obj, s, *a):
        li = mm.loaded_at(mm.uc.reg_read(UC_ARM64_REG_X30))
        if li and is_device(obj):
            selectors.add(d.objc.sel_names.get(s, "?"))
            if s == sel:
                sends.append((a[0] if a[0] < 2**63 else a[0] - 2**64, li.name))
        return inner(mm, obj, s, *a)
    m.standin("_objc_msgSend", traced)
    return sends, selectors


def run(build, env, host=None, fail_compile=False, lib=None, watch=None):
    """One process: lib (an Image; the shipped library when None) inserted, the build loaded
    and entered; fail_compile makes every newLibraryWithSource: fail; watch(process), when given,
    before anything runs (icount.py counts the instructions)."""
    p = Process(lib or image(str(LIB)), env, argv=("node", "app.js"), exe="/usr/local/bin/node",
                host=host or {"brand": None, "memsize": 16 << 30, "translated": None})
    if watch:
        watch(p)
    fw = frameworks.install(p.d)
    fw.fail_compile = fail_compile
    sends, selectors = trace_sends(p)
    p.start()
    envp = p.m.u64(p.d.environ_var)
    loaded = [p.m.add_image(image(str(build.extracted() / rel)), build.guest_path(rel)) for rel in build.images]
    for li in loaded:
        start(p.m, li, envp)
    logs = []
    handle = ENTRIES[build.entry](p, loaded, logs)
    return Run(p, logs, sends, selectors, handle, loaded)


def start(m, li, envp):
    """The image's initializers; a fault in one names the image's imports nothing provides: a
    missing function names itself when called, but a missing data import (a vtable, a VTT, a
    stream object) is bound to a function cell, and reading it faults at a meaningless address."""
    try:
        m.start_image(li, envp=envp)
    except GuestFault as e:
        data = sorted({s for s in li.missing if s.startswith(("__ZTV", "__ZTT", "__ZTI")) or not s.endswith(("Ev", "v0"))})
        raise GuestFault(f"{li.path}: an initializer faulted ({e}); its imports no stand-in provides "
                         f"(a data import among them reads as code): {', '.join(data)}") from e


def enter_backend_init(p, loaded, logs):
    """ggml's loader (ggml-backend-reg.cpp: ggml_backend_load_best): the process sets its log
    callback in ggml-base (ggml_log_set), then dlopens the backend and calls its
    ggml_backend_init, which makes the Metal device."""
    m = p.m
    base, metal = loaded[0], loaded[-1]
    cb = m.slot("ggml log callback", lambda mm, level, text, user, *_: logs.append(mm.cstr(text).decode("utf-8", "replace")))
    m.call(base.exports["_ggml_log_set"], cb, 0, image="node")
    reg = m.call(metal.exports["_ggml_backend_init"], image="node")
    return reg


def enter_metal_init(p, loaded, logs):
    """The one-file era (llama.cpp b3889): llama.cpp sets ggml's log callback (ggml_log_set) and
    makes the Metal backend with ggml_backend_metal_init, which runs ggml_metal_init."""
    m, ggml = p.m, loaded[-1]
    cb = m.slot("ggml log callback", lambda mm, level, text, user, *_: logs.append(mm.cstr(text).decode("utf-8", "replace")))
    m.call(ggml.exports["_ggml_log_set"], cb, 0, image="node")
    return m.call(ggml.exports["_ggml_backend_metal_init"], image="node")


def enter_metal_reg(p, loaded, logs):
    """ggml linked as libraries (whisper.cpp in pywhispercpp): whisper_init's backend set-up
    sets ggml's log callback and registers the Metal backend (ggml_backend_metal_reg, as
    ggml-backend-reg.cpp's static registry does), which makes the Metal device."""
    m = p.m
    log_set = next(li.exports["_ggml_log_set"] for li in loaded if "_ggml_log_set" in li.exports)
    cb = m.slot("ggml log callback", lambda mm, level, text, user, *_: logs.append(mm.cstr(text).decode("utf-8", "replace")))
    m.call(log_set, cb, 0, image="python3")
    return m.call(loaded[-1].exports["_ggml_backend_metal_reg"], image="python3")


def enter_metal_init_local(p, loaded, logs):
    """ggml linked into a Rust addon that exports only its module entry: whisper.cpp's start-up
    (whisper_init_with_params -> whisper_backend_init_gpu) sets ggml's log callback and makes the
    Metal backend with ggml_backend_metal_init; both are found in the image's symbol table."""
    m, addon = p.m, loaded[-1]
    cb = m.slot("ggml log callback", lambda mm, level, text, user, *_: logs.append(mm.cstr(text).decode("utf-8", "replace")))
    m.call(addon.symbol("_ggml_log_set"), cb, 0, image="node")
    return m.call(addon.symbol("_ggml_backend_metal_init"), image="node")


ENTRIES = {"metal_init_local": enter_metal_init_local, "backend_init": enter_backend_init, "metal_init": enter_metal_init, "metal_reg": enter_metal_reg}
