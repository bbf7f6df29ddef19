"""The configurations run on both: the rig (build/probe or build/callers with LD_PRELOAD=
build/libvzcaps.so, the GNU runtime) and the shipped arm64 slice under emulation.

What is compared, per configuration: the device's class, the answer for every family code the
library knows (Apple1-10, Mac1-2, Common1-3, Metal3, Metal4), both limits, apple7AtInit (what
-initGPUFamilySupport built), every `vzcaps:` line on stderr, and the vzcaps variables and
preload entry a child started with execv receives. Normalised, and only these (each is a
platform difference, not an answer):
  1. the preload variable's name: LD_PRELOAD (rig) and DYLD_INSERT_LIBRARIES (macOS) -> <preload>
  2. the library's path: build/libvzcaps.so and the emulated insertion path -> <lib>
  3. where the chip was looked for: "no chip detection on Linux" and "machdep.cpu.brand_string"
     -> <chip source> (the emulated host has no brand string, as the rig has none)
  4. a client image's suffix: .so (rig) and .dylib (macOS) -> .<so>
"""
import os
import re
import subprocess

CHIPS = ["Apple M1", "Apple M1 Ultra (Virtual)", "Apple M2", "Apple M2 Pro (Virtual)", "Apple M3", "Apple M3 Max (Virtual)",
         "Apple M4", "Apple M4 Max (Virtual)", "Apple M5", "Apple M5 (Virtual)", "Apple A18 Pro", "Apple A19 Pro (Virtual)"]


def case(name, env=None, conf=None, mode=0o644, program="probe", child=True):
    return {"name": name, "env": env or {}, "conf": conf, "mode": mode, "program": program, "child": child}


CASES = [case(f"auto {c}", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": c}, child=(i == 0))
         for i, c in enumerate(CHIPS)] + [
    case("unconfigured"),
    case("explicit 1009 on M3", {"VZCAPS_APPLE_FAMILY_MAX": "1009", "VZCAPS_HOST_CHIP": "Apple M3"}),
    case("explicit without chip", {"VZCAPS_APPLE_FAMILY_MAX": "1008"}),
    case("clamped 1009 on M1 Ultra", {"VZCAPS_APPLE_FAMILY_MAX": "1009", "VZCAPS_HOST_CHIP": "Apple M1 Ultra (Virtual)"}),
    case("unsafe 1010 on M1", {"VZCAPS_APPLE_FAMILY_MAX": "1010", "VZCAPS_HOST_CHIP": "Apple M1",
                               "VZCAPS_UNSAFE_BEYOND_HARDWARE": "1", "VZCAPS_MAX_THREADGROUP_MEMORY": "65536"}),
    case("limits set", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2",
                        "VZCAPS_MAX_THREADGROUP_MEMORY": "16384", "VZCAPS_RECOMMENDED_WORKING_SET_SIZE": "8589934592"}),
    case("extra families", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M3",
                            "VZCAPS_EXTRA_FAMILIES": "metal3,metal4,mac2"}),
    case("extra family the chip lacks", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M1",
                                         "VZCAPS_EXTRA_FAMILIES": "metal4"}),
    case("extra family misspelled", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2",
                                     "VZCAPS_EXTRA_FAMILIES": "metl3"}),
    case("malformed value", {"VZCAPS_APPLE_FAMILY_MAX": "abc", "VZCAPS_HOST_CHIP": "Apple M2"}),
    case("bad number", {"VZCAPS_APPLE_FAMILY_MAX": "99999", "VZCAPS_HOST_CHIP": "Apple M2"}),
    case("bad limit", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_MAX_THREADGROUP_MEMORY": "-1"}),
    case("unknown variable", {"VZCAPS_APPLE_FAMILY_MX": "auto", "VZCAPS_HOST_CHIP": "Apple M2"}),
    case("bad inherit value", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_INHERIT": "2"}),
    case("bad log value", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_LOG": "loud"}),
    case("unknown chip", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M7 (Virtual)"}),
    case("misspelled chip", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Aple M2 Pro"}),
    case("not an Apple chip", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Intel Xeon"}),
    case("undetected chip", {"VZCAPS_APPLE_FAMILY_MAX": "auto"}),
    case("did-you-mean value", {"VZCAPS_APPLE_FAMILY_MAX": "aut", "VZCAPS_HOST_CHIP": "Apple M2"}),
    case("config section", conf="[probe]\nmatch = probe\napple_family_max = auto\nhost_chip = Apple M3\n"),
    case("config key outside a section", conf="apple_family_max = auto\n[probe]\nmatch = probe\n"),
    case("config malformed line", conf="[probe]\nmatch = probe\napple_family_max auto\n"),
    case("config unknown key", conf="[probe]\nmatch = probe\napple_family_maxx = auto\n"),
    case("config no section matches", conf="[other]\nmatch = llama-server\napple_family_max = auto\nhost_chip = Apple M3\n"),
    case("config world-writable", conf="[probe]\nmatch = probe\napple_family_max = auto\nhost_chip = Apple M3\n", mode=0o666),
    case("config missing", {"VZCAPS_CONFIG": "/nonexistent/vzcaps.conf"}),
    case("inherit yes", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_INHERIT": "1"}),
    case("inherit no", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_INHERIT": "0"}),
    case("inherit matching", conf="[probe]\nmatch = probe\napple_family_max = auto\nhost_chip = Apple M2\ninherit = matching\n"
                                  "[env]\nmatch = env\napple_family_max = auto\n"),
    case("inherit matching, child not matched", conf="[probe]\nmatch = probe\napple_family_max = auto\nhost_chip = Apple M2\n"
                                                     "inherit = matching\n"),
    case("quiet", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_LOG": "quiet"}),
    case("verbose", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_LOG": "verbose"}),
    case("verbose refusal", {"VZCAPS_APPLE_FAMILY_MAX": "abc", "VZCAPS_LOG": "verbose"}),
    case("TART_ variables", {"TART_METAL_APPLE_FAMILY_MAX": "1009", "TART_METAL_MAX_THREADGROUP_MEMORY": "65536",
                             "LUME_METAL_APPLE_FAMILY_MAX": "1006"}),
    case("LUME_ variables", {"LUME_METAL_APPLE_FAMILY_MAX": "1006"}),
    case("TART_ under VZCAPS_", {"TART_METAL_APPLE_FAMILY_MAX": "1009", "VZCAPS_APPLE_FAMILY_MAX": "1006",
                                 "VZCAPS_HOST_CHIP": "Apple M3"}),
    case("own supportsFamily:", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "FAKEMETAL_CLASS": "own"}),
    case("no maxThreadgroupMemoryLength", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2",
                                           "FAKEMETAL_CLASS": "lacking"}),
    case("not an _MTLDevice", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "FAKEMETAL_CLASS": "plain"}),
    case("wrapper device", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2", "FAKEMETAL_CLASS": "wrapper"}),
    case("callers default scope", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M1"}, program="callers",
         child=False),
    case("stock_callers none", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M1", "VZCAPS_STOCK_CALLERS": "none"},
         program="callers", child=False),
    case("callers one library", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M1", "VZCAPS_CALLERS": "libggml*"},
         program="callers", child=False),
    case("callers and stock_callers", {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M1", "VZCAPS_CALLERS": "*",
                                       "VZCAPS_STOCK_CALLERS": "libother-* libggml-metal.*"}, program="callers", child=False),
    case("callers in a config", {"VZCAPS_HOST_CHIP": "Apple M1"},
         conf="[rag]\nmatch = callers\napple_family_max = auto\ncallers = libggml-metal.* libother-*\nstock_callers = none\n",
         program="callers", child=False),
]

CLIENTS = ["libggml-metal", "libtorch_cpu", "libother-client"]
KEEP = ("LD_PRELOAD=", "DYLD_INSERT_LIBRARIES=", "VZCAPS_", "TART_METAL_", "LUME_METAL_")


def base_env(extra, tmp):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "LANG": "C"}
    env.update(extra)
    return env


def setup(c, tmp):
    """The case's environment (without the preload variable) and its config file, if any."""
    env = base_env(c["env"], tmp)
    if c["conf"] is not None:
        path = os.path.join(tmp, "vzcaps.conf")
        with open(path, "w") as f:
            f.write(c["conf"])
        os.chmod(path, c["mode"])
        env["VZCAPS_CONFIG"] = path
    return env


def normalise(text, lib):
    text = text.replace(str(lib), "<lib>")
    text = text.replace("LD_PRELOAD", "<preload>").replace("DYLD_INSERT_LIBRARIES", "<preload>")
    text = text.replace("libvzcaps.so", "libvzcaps.<so>").replace("libvzcaps.dylib", "libvzcaps.<so>")
    text = text.replace("no chip detection on Linux", "<chip source>").replace("machdep.cpu.brand_string", "<chip source>")
    return re.sub(r"\b(lib[a-z_-]+)\.(so|dylib)\b", r"\1.<so>", text)


def vz_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("vzcaps:")]


def child_view(env_lines, lib):
    return sorted(normalise(l, lib) for l in env_lines if l.startswith(KEEP))


def parse_probe_out(stdout):
    out = {"families": {}}
    for line in stdout.splitlines():
        k, _, rest = line.partition(" ")
        if k == "class":
            out["class"] = rest
        elif k == "family":
            f, v = rest.split()
            out["families"][int(f)] = int(v)
        elif k == "maxThreadgroupMemoryLength":
            out["tg"] = None if rest == "absent" else int(rest)
        elif k == "recommendedMaxWorkingSetSize":
            out["ws"] = int(rest)
        elif k == "apple7AtInit":
            out["apple7"] = int(rest)
    return out


def on_rig(c, tmp, build):
    env = setup(c, tmp)
    lib = build / "libvzcaps.so"
    env["LD_PRELOAD"] = str(lib)
    if c["program"] == "callers":
        p = subprocess.run([str(build / "callers")], env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        got = {}
        for line in p.stdout.splitlines():
            w = line.split()
            if w[0] == "caller":
                got[normalise(w[1], lib)] = {"family1007": int(w[3]), "tg": int(w[5]), "ws": int(w[7])}
        return {"callers": got, "stderr": [normalise(l, lib) for l in vz_lines(p.stderr)]}
    args = ["--spawn", "/usr/bin/env"] if c["child"] else []
    p = subprocess.run([str(build / "probe"), *args], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = parse_probe_out(p.stdout)
    out["stderr"] = [normalise(l, lib) for l in vz_lines(p.stderr)]
    if c["child"]:
        lines = [l for l in p.stdout.splitlines() if "=" in l.split(" ")[0] and not l.startswith("env LD_PRELOAD")]
        out["child"] = child_view(lines, lib)
    return out


def on_emu(c, tmp, img, lib, memsize):
    from process import Process
    env = setup(c, tmp)
    env["DYLD_INSERT_LIBRARIES"] = lib
    p = Process(img, env, argv=(c["program"],), exe="/usr/local/bin/" + c["program"], lib_path=lib,
                host={"brand": None, "memsize": memsize, "translated": None}).start()
    if c["program"] == "callers":
        for name in CLIENTS:
            p.m.image(name, f"/opt/clients/{name}.dylib")
        dev = p.create_device()
        got = {}
        for name in CLIENTS:
            rt = p.d.objc
            ask = lambda: (rt.send(dev, "supportsFamily:", 1007, image=name) & 0xFF,
                           rt.send(dev, "maxThreadgroupMemoryLength", image=name),
                           rt.send(dev, "recommendedMaxWorkingSetSize", image=name))
            a, b = ask(), ask()
            assert a == b, f"{name}: a repeated call answered differently"
            got[normalise(name + ".dylib", lib)] = {"family1007": a[0], "tg": a[1], "ws": a[2]}
        return {"callers": got, "stderr": [normalise(l, lib) for l in vz_lines(p.stderr)]}
    out = p.probe()
    out["stderr"] = [normalise(l, lib) for l in vz_lines(p.stderr)]
    if c["child"]:
        r = p.run_child("execv", "/usr/bin/env", [])
        out["child"] = child_view(r["ran"]["env"], lib)
    return out
