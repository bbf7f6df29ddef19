"""action.yml's steps run as GitHub's runner runs a composite action (each `run:` with its
`shell:` as `sh -e FILE`, its `env:` and `working-directory:`, the GITHUB_PATH, GITHUB_ENV and
GITHUB_OUTPUT files read between steps, actions/cache as a store of saved paths), in a simulated
Mac: the stand-ins of macstandins.py (uname, sw_vers, sysctl), a stock Mac's tools, a shasum over
sha256sum where the host has none, and the rig's make (the Linux test build) and probe. Plain
Python and PyYAML (no pytest): tests/test_fleet_*.py (through tests/fleetrecipes.py) and
scripts/try-action use it."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

from macstandins import STOCK, SW_VERS, SYSCTL, UNAME, write

ROOT = pathlib.Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
ACTION_REF = "v-test"

# the Command Line Tools' make, played by the rig's: the Linux test build, with the host's
# tools (and real uname) for its recipes
MAKE = """#!/bin/sh
[ -z "${FLEET_MAKE_LOG:-}" ] || echo "make${*:+ $*}" >>"$FLEET_MAKE_LOG"
PATH="@HOSTPATH@" exec make "$@"
"""
PYTHON3 = """#!/bin/sh
exec "@PY@" "$@"
"""
# macOS's shasum (-a 256, files or standard input), where the host has no perl's
SHASUM = """#!/bin/sh
[ "${1:-}" = -a ] && { [ "$2" = 256 ] || { echo "shasum: only -a 256 here" >&2; exit 1; }; shift 2; }
exec sha256sum "$@"
"""


class ActionError(Exception):
    """action.yml uses what this runner does not know."""


def simulated_mac(sim, build):
    """(environment, sim) of a simulated Mac made in the empty directory sim, whose PATH also holds
    the rig's probe from build (the real program a shim finds after itself)."""
    for d in ("bin", "system", "real", "home"):
        (sim / d).mkdir()
    write(sim / "bin" / "uname", UNAME)
    write(sim / "bin" / "sw_vers", SW_VERS)
    write(sim / "bin" / "sysctl", SYSCTL)
    write(sim / "bin" / "make", MAKE, HOSTPATH=os.environ["PATH"])
    write(sim / "bin" / "python3", PYTHON3, PY=sys.executable)
    if not shutil.which("shasum"):
        write(sim / "bin" / "shasum", SHASUM)
    for name in STOCK + ["dash", "paste", "chown", "sudo"]:
        found = shutil.which(name)
        if found and not (sim / "system" / name).exists() and not (sim / "bin" / name).exists():
            os.symlink(found, sim / "system" / name)
    for name in ("probe", "libfakemetal.so"):  # the real program, in a directory of its own
        os.symlink(build / name, sim / "real" / name)
    env = {k: v for k, v in os.environ.items() if k.startswith(("LANG", "LC_"))}
    env.update(PATH=f"{sim}/bin:{sim}/system:{sim}/real", HOME=str(sim / "home"), TMPDIR=str(sim))
    return env, sim


def expand(text, inputs, steps=None):
    """The expressions action.yml may use: inputs.NAME, github.action_path, github.action_ref,
    and steps.ID.outputs.NAME; any other is an error, so this runner knows all it runs."""
    def one(m):
        e = m.group(1)
        if e == "github.action_path":
            return str(ROOT)
        if e == "github.action_ref":
            return ACTION_REF
        if e.startswith("inputs."):
            if e[7:] not in ACTION["inputs"]:
                raise ActionError(f"action.yml uses undeclared input {e}")
            return inputs[e[7:]]
        parts = e.split(".")
        if steps is not None and len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs":
            return steps.get(parts[1], {}).get(parts[3], "")
        raise ActionError(f"action.yml uses an expression this runner does not know: {e}")
    return EXPR.sub(one, str(text))


def read_commands(path):
    """name=value lines and name<<DELIMITER blocks, as the runner reads GITHUB_ENV/GITHUB_OUTPUT."""
    out, lines = {}, path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        name, _, value = line.partition("=")
        out[name] = value
        i += 1
    return out


def cache_step(step, inputs, steps, cache):
    """actions/cache as the runner runs it: restores the paths saved under the key, else records
    a miss and the save that its post step makes when the job ends (returned)."""
    if step["uses"] != "actions/cache@v4":
        raise ActionError(f"{step['name']}: uses {step['uses']}, which this runner does not know")
    key = expand(step["with"]["key"], inputs, steps)
    paths = [x for x in expand(step["with"]["path"], inputs, steps).splitlines() if x.strip()]
    if not (key and paths and all(os.path.isabs(x) for x in paths)):
        raise ActionError(f"{step['name']}: key {key!r}, paths {paths!r}")
    if key in cache:
        for path, saved in cache[key].items():
            shutil.copytree(saved, path, symlinks=True, dirs_exist_ok=True)
        return {"cache-hit": "true"}, None
    return {"cache-hit": "false"}, (key, paths)


def run_action(env, tmp, shell, cache=None, path_first=None, on_step=None, **given):
    """Runs every step; returns (outputs, job environment after the action, [(step name, process)]),
    or, when a step fails, (None, the action's outputs as far as its steps set them, the same list).
    cache: a dict actions/cache keeps between jobs (key to saved paths); path_first: a directory
    the job's PATH has before everything the action adds (a step's own PATH, say); on_step(step,
    process or None, what it set): called after each step with what it wrote to GITHUB_ENV,
    GITHUB_PATH and GITHUB_OUTPUT (or the cache's outputs)."""
    inputs = {k: v.get("default", "") for k, v in ACTION["inputs"].items()}
    inputs.update({k.replace("_", "-"): v for k, v in given.items()})
    cache = {} if cache is None else cache
    temp, workspace = tmp / "runner-temp", tmp / "workspace"
    temp.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    files = {k: tmp / k.lower() for k in ("GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT")}
    job_env, added_paths, steps, ran, saves = {}, [], {}, [], []
    first = [str(path_first)] if path_first else []
    for i, step in enumerate(ACTION["runs"]["steps"]):
        if "uses" in step:
            out, save = cache_step(step, inputs, steps, cache)
            steps[step["id"]] = out
            saves += [save] if save else []
            if on_step:
                on_step(step, None, {"outputs": out})
            continue
        if step["shell"] != "sh" or "${{" in step["run"]:
            raise ActionError(f"{step['name']}: a step is sh, and inputs reach its script through env, never spliced into it")
        script = tmp / f"step{i}.sh"
        script.write_text(step["run"])
        files["GITHUB_OUTPUT"].write_text("")
        env_before = read_commands(files["GITHUB_ENV"])
        e = dict(env, **job_env, RUNNER_TEMP=str(temp), GITHUB_WORKSPACE=str(workspace), GITHUB_ACTIONS="true",
                 **{k: str(v) for k, v in files.items()})
        e.update({k: expand(v, inputs, steps) for k, v in step.get("env", {}).items()})
        e["PATH"] = ":".join(first + added_paths + [env["PATH"]])
        cwd = expand(step.get("working-directory", str(workspace)), inputs)
        p = subprocess.run([*shell.split(), "-e", str(script)], cwd=cwd, env=e, capture_output=True, text=True,
                           timeout=900, stdin=subprocess.DEVNULL)
        ran.append((step["name"], p))
        if "id" in step:
            steps[step["id"]] = read_commands(files["GITHUB_OUTPUT"])
        if on_step:
            env_now = read_commands(files["GITHUB_ENV"])
            paths_now = files["GITHUB_PATH"].read_text().splitlines() if files["GITHUB_PATH"].exists() else []
            on_step(step, p, {"env": {k: v for k, v in env_now.items() if env_before.get(k) != v},
                              "path": paths_now[len(added_paths):], "outputs": steps.get(step.get("id"), {})})
        if p.returncode != 0:
            return None, {k: expand(v["value"], inputs, steps) for k, v in ACTION["outputs"].items()}, ran
        job_env.update(read_commands(files["GITHUB_ENV"]))
        lines = files["GITHUB_PATH"].read_text().splitlines() if files["GITHUB_PATH"].exists() else []
        added_paths = list(reversed(lines))  # each line written goes before the ones before it
    # the job's end: actions/cache's post step saves what a miss left to save
    for key, paths in saves:
        store = tmp / "cache-store" / key
        cache[key] = {}
        for n, path in enumerate(paths):
            if os.path.exists(path):
                shutil.copytree(path, store / str(n), symlinks=True)
                cache[key][path] = store / str(n)
    outputs = {k: expand(v["value"], inputs, steps) for k, v in ACTION["outputs"].items()}
    after = dict(env, **job_env)
    after["PATH"] = ":".join(first + added_paths + [env["PATH"]])
    return outputs, after, ran
