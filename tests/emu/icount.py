"""Instructions executed inside the shipped library (dist/libvzcaps.dylib's arm64 slice, its
address range) and inside a real client's own images during the client's Metal start-up, under
emulation (issue 46): `python3 tests/emu/icount.py` prints the table and one target line per
build (make bench runs it; make check-emu prints it from test_icount.py's run).

Counted with Unicorn's block hook over every address: each block executed adds its size / 4 (arm64
instructions are 4 bytes; a block runs whole, unless a fault stops it, which fails the run) to the
image whose range holds it; test_icount.py checks the sum against a code hook that counts one by
one. The stand-ins of libSystem, objc4, Metal and Foundation are Python and count nothing: on a Mac
the library's calls into them cost more. The library's part is split where it runs: its
initializer (the constructor), the first device's install (vzcaps_hooks_on_device and all it
calls) and the rest of the start-up (the replaced methods: answers, and each new call site's first
call). Never: changes what the run does."""
import collections
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from unicorn import UC_HOOK_BLOCK, UC_HOOK_CODE  # noqa: E402
from unicorn.arm64_const import UC_ARM64_REG_X30  # noqa: E402

TARGET = 30000  # instructions inside the library per client's unlocked start-up
UNLOCKED = {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2"}
PARTS = ("constructor", "first device", "calls")


class Count:
    """Installs itself on a clients.run process (its watch): n[part] for the library's parts,
    n["client"] for the client's images; one_by_one counts with a code hook instead."""

    def __init__(self, one_by_one=False):
        self.one_by_one, self.n = one_by_one, collections.Counter()

    def __call__(self, p):
        m = self.m = p.m
        self.phase, self.returns_to = "constructor", None
        names = {n: a for a, n in m.img.symbols().items()}
        # the first device's install is entered by a factory (vzcaps_hooks_on_device) or by the
        # -initGPUFamilySupport watch (replaced_init_family), whichever meets the device first
        self.device = {m.base + names[n] for n in ("_vzcaps_hooks_on_device", "_replaced_init_family")}
        if self.one_by_one:
            m.uc.hook_add(UC_HOOK_CODE, lambda uc, a, size, _: self._count(uc, a, 4))
        else:
            m.uc.hook_add(UC_HOOK_BLOCK, lambda uc, a, size, _: self._count(uc, a, size))
        start = p.start

        def started():
            r = start()
            self.phase = "calls"  # the client's start-up: its initializers and its entry
            return r
        p.start = started

    def _count(self, uc, addr, size):
        if addr == self.returns_to:
            self.returns_to = None  # back from the first device's install
        m = self.m
        if m.span[0] <= addr < m.span[1]:
            if addr in self.device and self.returns_to is None and self.phase != "constructor":
                self.returns_to = uc.reg_read(UC_ARM64_REG_X30)
            part = self.phase if self.phase == "constructor" or self.returns_to is None else "first device"
            self.n[part] += size // 4
        elif m.loaded_at(addr):
            self.n["client"] += size // 4

    @property
    def library(self):
        return sum(self.n[k] for k in PARTS)


def count(build, env, one_by_one=False):
    """(Count, clients.Run) of one start-up of build with env."""
    c = Count(one_by_one)
    r = clients.run(build, env, watch=c)
    return c, r


def label(b):
    """node-llama-cpp, pywhispercpp, @napi-rs/whisper: the package a user installs"""
    outer, _, inner = b.client.partition(" (")
    return outer if not inner or inner.startswith("llama.cpp") else inner.split(",")[0].rstrip(")")


def table(builds=None):
    """The table's lines and the target lines, for every build whose archive is cached."""
    head = f"{'client build (unlocked: Apple M2)':<34} {'constructor':>11} {'1st device':>10} {'calls':>7} {'library':>8}" \
           f" {'sends':>5} {'stock':>6} {'client':>7}"
    lines, targets = [head], []
    for b in builds or clients.BUILDS:
        name = f"{label(b)} {b.version}"
        if not b.available():
            lines.append(f"{name:<34} (not cached: scripts/install-deps fetches {b.package}@{b.version})")
            continue
        on, r = count(b, UNLOCKED)
        off, _ = count(b, {})
        lines.append(f"{name:<34} {on.n['constructor']:>11} {on.n['first device']:>10} {on.n['calls']:>7} {on.library:>8}"
                     f" {len(r.sends):>5} {off.library:>6} {on.n['client']:>7}")
        targets.append(f"target: inside the library in {name}'s unlocked start-up <= {TARGET} instructions: "
                       f"{on.library} ({'met' if on.library <= TARGET else 'NOT met'})")
    return lines, targets


def main():
    print("== inside the shipped library (dist/libvzcaps.dylib, arm64) during each real client's Metal start-up:")
    print("   instructions under emulation (tests/emu/icount.py; the Darwin stand-ins count nothing); the library's")
    print("   part: constructor, first device's install, calls (answers and each new call site's first call);")
    print("   sends: the client's supportsFamily: messages; stock: the library when nothing configures it;")
    print("   client: the client's own images (initializers and Metal start-up)")
    lines, targets = table()
    print("\n".join(lines))
    return targets


if __name__ == "__main__":
    print("\n".join(main()))
