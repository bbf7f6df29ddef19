"""The gate against the job, differentially (issue 37 item 2, issue 44 item 8): thousands of
generated job set-ups (programs: a binary, a link to a link to it, #! scripts through env (and
env -S) and direct, a CRLF #! line, a #! line with no interpreter, a script or a vzcaps shim by
its path as the interpreter, an unshimmed script whose env NAME is shimmed, wrappers in a shell
outside and inside the SIP paths that exec or start the program, a static program, a shimmed
name with nothing behind it, a name not found at all; PATH orders: this installation's shims
first or behind, none, another installation's shims, an installation without its library, one
whose library path holds a space, an empty, a relative and a duplicate entry; config sections
with match, callers, stock_callers (the interpreter's too), inherit, [default], refused values;
the environment: TART_METAL_ and LUME_METAL_ variables and every documented VZCAPS_ one), each
started as a job's shell starts it (NAME, found on PATH by the shell, through the real shim) with the stand-in client's
answers read, and compared with `vzcaps check --strict`. Set-ups are variables over one shared
tree, so they cost a process each; they run in two batches at once, each a shell script, one
gate run per group of programs sharing an environment (a repeated --exe); the environments
rotate over the (order, config) pairs, four each, so that every one meets every order and
config. Every disagreement must be one of ALLOWED, each with its reason."""
import itertools
import os
import shutil
import subprocess
import time

from conftest import BUILD, STOCK_FAMILIES, STOCK_TG, STOCK_WS, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the rig: LD_PRELOAD, ELF, build/probe)

VZ = str(BUILD / "vzcaps")
CHIP = "Apple M2 Pro"

# Differences the gate is allowed, by name, with the reason.
ALLOWED = {
    "missing-program": "a name found nowhere on PATH is judged by the configuration alone (the gate cannot see the "
                       "machine the job runs on); the job fails with 127 anyway",
    "sip-interpreter": "rig only: on macOS SIP removes the library at an interpreter under /bin, /usr/bin and the other "
                       "system paths, which the decision knows as 'removed'; Linux keeps LD_PRELOAD there",
    "wrapper-child": "a wrapper hands the library on only to the program it execs (the same process); a program it "
                     "starts as a child starts stock, as every child does, and the gate cannot read a shell script",
    "wrapper-exec-scope": "the caller scope meets the image that calls; behind a wrapper that is the program the "
                          "wrapper execs, which the gate cannot read from a shell script (it judges the interpreter)",
}

PROGRAMS = ["probe", "tool", "direct", "nixwrap", "binwrap", "childwrap", "static", "missing", "ghost", "viaenv", "linklink",
            "split", "crlf", "noline", "shiminterp", "scriptinterp", "envshim", "relinterp"]
ALL = " ".join(PROGRAMS)
UNSHIMMED = ("ghost", "envshim")  # envshim: a script no shim stands for, whose env NAME (probe) is shimmed


def tree(root):
    """The shared tree: real programs, three installations and their shims, the config files."""
    real, nix = root / "real", root / "nix" / "bin"
    real.mkdir()
    nix.mkdir(parents=True)
    shutil.copy("/bin/bash", nix / "bash")
    for n in ("probe", "probe2"):
        (real / n).symlink_to(BUILD / "probe")
    (real / "linklink").symlink_to(real / "probe")  # a link to a link to the program
    scripts = {
        "tool": "#!/usr/bin/env probe2\n",
        "direct": f"#!{real}/probe2\n",
        "nixwrap": f"#!{nix}/bash\nexec {real}/probe2 \"$@\"\n",
        "binwrap": f"#!/bin/bash\nexec {real}/probe2 \"$@\"\n",
        "childwrap": f"#!{nix}/bash\n{real}/probe2 \"$@\"\n",
        "viaenv": "#!/usr/bin/env probe\n",
        "split": "#!/usr/bin/env -S probe2 --threads 1\n",
        "crlf": "#!/usr/bin/env probe2\r\n",  # env is given "probe2\r", which is nowhere
        "noline": "#!\nexit 0\n",  # no interpreter: ENOEXEC, run by /bin/sh
        "shiminterp": f"#!{root / 'shims'}/probe2\n",  # this installation's shim by its path
        "scriptinterp": f"#!{real}/direct\n",  # a script as interpreter: one #! level on macOS, /bin/sh runs it
        "envshim": "#!/usr/bin/env probe\n",
        "relinterp": "#!real/probe2\n",  # relative to the job's directory: not there
    }
    for n, text in scripts.items():
        (real / n).write_text(text)
        (real / n).chmod(0o755)
    src = root / "s.c"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-static", "-o", str(real / "static"), str(src)], check=True)
    shimmed = [n for n in PROGRAMS if n not in UNSHIMMED] + ["probe2"]
    dirs = {"ours": (VZ, root / "shims")}
    for key, where, lib in (("other", root / "other", True), ("nolib", root / "nolib", False),
                            ("space", root / "with space", True)):
        (where / "bin").mkdir(parents=True)
        shutil.copy(BUILD / "vzcaps", where / "bin" / "vzcaps")
        if lib:
            shutil.copy(BUILD / "libvzcaps.so", where / "bin" / "libvzcaps.so")
        dirs[key] = (str(where / "bin" / "vzcaps"), root / f"{key}-shims")
    for vz, d in dirs.values():
        p = subprocess.run([vz, "shims", "--dir", str(d), *shimmed], env=clean_env(), capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
    return real, {k: d for k, (_, d) in dirs.items()}, {k: vz for k, (vz, _) in dirs.items()}


CONFIGS = {
    "none": None,
    "1007": f"[s]\nmatch = {ALL}\napple_family_max = 1007\n",
    "off": f"[s]\nmatch = {ALL}\napple_family_max = off\n",
    "1005": f"[s]\nmatch = {ALL}\napple_family_max = 1005\n",
    "libggml": f"[s]\nmatch = {ALL}\napple_family_max = auto\ncallers = libggml*\n",
    "own-stock": f"[s]\nmatch = {ALL}\napple_family_max = auto\nstock_callers = {ALL} probe2\n",
    "interpreter": "[s]\nmatch = probe2\napple_family_max = 1007\n",
    "interp-callers": f"[s]\nmatch = {ALL} probe probe2\napple_family_max = auto\ncallers = probe2\n",
    "interp-stock": f"[s]\nmatch = {ALL} probe probe2\napple_family_max = auto\nstock_callers = probe2\n",
    "inherit": f"[s]\nmatch = {ALL}\napple_family_max = auto\ninherit = yes\n",
    "default": "[default]\napple_family_max = 1004\n",
    "all-stock": f"[s]\nmatch = {ALL}\napple_family_max = auto\ncallers = {ALL}\nstock_callers = *\n",
    "tg-only": f"[s]\nmatch = {ALL}\napple_family_max = 1005\nmax_threadgroup_memory = 65536\n",
    "refused": f"[s]\nmatch = {ALL}\napple_family_max = 1099\n",
}
ENVS = {
    "chip": {"VZCAPS_HOST_CHIP": CHIP},
    "no-chip": {},
    "family-1003": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_APPLE_FAMILY_MAX": "1003"},
    "family-off": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_APPLE_FAMILY_MAX": "off"},
    "callers-none": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_CALLERS": "none"},
    "callers-interp": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_CALLERS": "probe2"},
    "stock-interp": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_STOCK_CALLERS": "probe2"},
    "tart": {"TART_METAL_HOST_CHIP": CHIP, "TART_METAL_APPLE_FAMILY_MAX": "1007"},
    "lume": {"LUME_METAL_HOST_CHIP": CHIP, "LUME_METAL_APPLE_FAMILY_MAX": "auto"},
    "profile": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_PROFILE": "s"},
    "inherit": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_INHERIT": "1"},
    "log": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_LOG": "quiet", "VZCAPS_LOG_FILE": "{root}/stats.log"},
    "unsafe": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_APPLE_FAMILY_MAX": "1010", "VZCAPS_UNSAFE_BEYOND_HARDWARE": "1"},
    "extra": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_EXTRA_FAMILIES": "1009"},
    "floors": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_MAX_THREADGROUP_MEMORY": "65536",
               "VZCAPS_RECOMMENDED_WORKING_SET_SIZE": "17179869184"},
    "program": {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_PROGRAM": "0000000001:probe2"},  # claimed by another process
}
ORDERS = ["ours-first", "real-first", "no-shims", "other-first", "nolib-first", "space-first", "empty-entry", "relative",
          "duplicate"]
ENVS_PER_GROUP = 4


def gate_command(commands, order):
    """The vzcaps a fleet gates with: the installation whose shims lead PATH (another installation's
    own copy is left to ours, which must know its shims: row 3)."""
    return commands["nolib"] if order == "nolib-first" else commands["space"] if order == "space-first" else VZ


def group_env(real, shims, order, config_file, extra):
    """The job's environment; its directory is ROOT/work (relative entries are from there)."""
    first = {"ours-first": [shims["ours"], real], "real-first": [real, shims["ours"]], "no-shims": [real],
             "other-first": [shims["other"], real], "nolib-first": [shims["nolib"], real],
             "space-first": [shims["space"], real], "empty-entry": ["", shims["ours"], real],
             "relative": ["../shims", "../real"], "duplicate": [real, shims["ours"], real, shims["ours"]]}[order]
    env = {"PATH": ":".join(str(p) for p in [*first, "/usr/bin", "/bin"]),
           **{k: v.replace("{root}", str(real.parent)) for k, v in extra.items()}}
    if config_file:
        env["VZCAPS_CONFIG"] = str(config_file)
    return env


def sh_quote(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


def batch_script(groups, commands):
    """One shell script for a list of (group id, env): every program's job, then one gate run."""
    lines = []
    exes = " ".join(f"--exe {n}" for n in PROGRAMS)
    for gid, env in groups:
        vz = sh_quote(gate_command(commands, gid.split("/")[0]))
        assign = " ".join(f"{k}={sh_quote(v)}" for k, v in env.items())
        for n in PROGRAMS:
            lines.append(f"echo '@J {gid} {n}'; {assign} {n} </dev/null 2>/dev/null; echo \"@R $?\"")
        lines.append(f"echo '@G {gid}'; {assign} {vz} check --strict {exes} 2>&1 >/dev/null; echo \"@R $?\"")
    return "\n".join(lines) + "\n"


def parse_batch(text):
    """{(gid, name): unlocked} for the jobs, {gid: {name: 'stock'|'not start'}} for the gates."""
    jobs, gates, cur, buf = {}, {}, None, []
    for line in text.splitlines() + ["@J end end"]:
        if line.startswith(("@J ", "@G ", "@R ")):
            if cur and cur[0] == "J":
                runs = [r for r in parse_probe("\n".join(buf)) if "families" in r]
                jobs[cur[1:]] = bool(runs) and (runs[0]["families"], runs[0].get("tg"), runs[0].get("ws")) != \
                    (STOCK_FAMILIES, STOCK_TG, STOCK_WS)
            elif cur and cur[0] == "G":
                said = {}
                for b in buf:
                    head, _, rest = b.partition(" would ")
                    if head.startswith("vzcaps check: --strict: "):
                        said[head[len("vzcaps check: --strict: "):]] = rest.split(":")[0]
                gates[cur[1]] = said
            if line.startswith("@R "):
                cur, buf = None, []
            else:
                kind, gid, name = line.split(" ", 2) if line.startswith("@J") else (*line.split(" ", 1), None)
                cur, buf = (kind[1], gid, name), []
        elif cur:
            buf.append(line)
    return jobs, gates


def allowed(name, order, config, env):
    if name == "ghost" or (name == "missing" and order == "no-shims"):
        return "missing-program"
    if name == "nixwrap" and (config in ("own-stock", "interp-callers", "interp-stock") or env in ("callers-interp", "stock-interp")):
        return "wrapper-exec-scope"  # a scope that names probe2, the program the wrapper execs
    if name == "binwrap":
        return "sip-interpreter"
    if name == "childwrap":
        return "wrapper-child"
    return None


def test_the_gate_agrees_with_the_job(tmp_path, capsys):
    start = time.monotonic()
    real, shims, commands = tree(tmp_path)
    files = {}
    for key, text in CONFIGS.items():
        if text:
            files[key] = tmp_path / f"{key}.conf"
            files[key].write_text(text)
    groups, envs = [], list(ENVS)
    for (o, order), (c, ckey) in itertools.product(enumerate(ORDERS), enumerate(CONFIGS)):
        for k in range(ENVS_PER_GROUP):  # every environment meets every order and every config
            ekey = envs[(ENVS_PER_GROUP * o + 5 * c + k) % len(envs)]
            groups.append((f"{order}/{ckey}/{ekey}", group_env(real, shims, order, files.get(ckey), ENVS[ekey])))
    base = clean_env()
    base = {k: v for k, v in base.items() if k in ("HOME", "LANG", "LC_ALL", "TMPDIR")}
    work = tmp_path / "work"
    work.mkdir()
    procs = []
    for i in range(2):  # two cores: two batches at once
        script = tmp_path / f"batch{i}.sh"
        script.write_text(batch_script(groups[i::2], commands))
        procs.append(subprocess.Popen(["sh", str(script)], cwd=work, env=base, stdout=subprocess.PIPE, text=True))
    jobs, gates = {}, {}
    for p in procs:
        out, _ = p.communicate(timeout=600)
        j, g = parse_batch(out)
        jobs.update(j)
        gates.update(g)
    assert len(gates) == len(groups)
    counts = {k: 0 for k in ALLOWED}
    unlisted, agree = [], 0
    for (gid, name), unlocked in sorted(jobs.items()):
        gate_unlocked = name not in gates[gid]
        if gate_unlocked == unlocked:
            agree += 1
            continue
        why = allowed(name, *gid.split("/"))
        if why:
            counts[why] += 1
        else:
            unlisted.append(f"{gid} {name}: job {'unlocked' if unlocked else 'stock'}, gate "
                            f"{'unlocked' if gate_unlocked else gates[gid][name]}")
    total = len(jobs)
    line = (f"gate differential: {total} set-ups, {agree} agree, "
            + ", ".join(f"{k} {v}" for k, v in counts.items()) + f", {len(unlisted)} unlisted, "
            f"{time.monotonic() - start:.1f} s")
    with capsys.disabled():
        print("\n" + line)
    assert total >= 9000, line
    assert unlisted == [], line + "\n" + "\n".join(unlisted[:40])
