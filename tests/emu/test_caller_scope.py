"""The caller scope and the hook side of the records of effect, on the shipped arm64 slice
(issue 44 items 1, 6 and 7; issue 47 item 6): an image gone and another loaded at its address,
a tail call into supportsFamily:, a super send from a hooked subclass charged as objc4 charges
it, a swizzle made by someone else during the install, and when the library calls the effect
records (each watched at its function's address in the slice)."""
import struct
import sys

import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401
from shipped import M2, env_of, img, proc  # noqa: F401  (img: the slice, a fixture)

if sys.platform.startswith("linux"):
    import machoemu
    from unicorn import UC_HOOK_CODE
    from unicorn.arm64_const import UC_ARM64_REG_X0, UC_ARM64_REG_X1, UC_ARM64_REG_X2, UC_ARM64_REG_X3

GGML = ("libggml-metal.dylib", "/Users/me/app/node_modules/@node-llama-cpp/mac-arm64-metal/bins/libggml-metal.dylib")
TORCH = ("libtorch_cpu.dylib", "/Users/me/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.dylib")


def family(p, dev, f, image, site=0):
    return p.d.objc.send(dev, "supportsFamily:", f, image=image, site=site) & 0xFF


def calls_to(p, name):
    """Each call of the library's function `name` (its local symbol), as its first four registers."""
    addr = machoemu.BASE + next(a for a, n in p.m.img.symbols().items() if n == name)
    seen = []
    regs = (UC_ARM64_REG_X0, UC_ARM64_REG_X1, UC_ARM64_REG_X2, UC_ARM64_REG_X3)
    p.m.uc.hook_add(UC_HOOK_CODE, lambda uc, *_: seen.append([uc.reg_read(r) for r in regs]), begin=addr, end=addr)
    return seen


# ---------------------------------------------------------------- images loaded and gone (item 6)

@pytest.mark.parametrize("scope", [{}, {"VZCAPS_CALLERS": "libggml*"}], ids=["default scope", "callers libggml*"])
@pytest.mark.parametrize("first,then,want", [(GGML, TORCH, (1, 0)), (TORCH, GGML, (0, 1))], ids=["ggml then torch", "torch then ggml"])
def test_a_new_image_at_an_old_address_is_judged_afresh(img, first, then, want, scope):
    """An image asks from an address, is unloaded (dyld's remove notice), and another is loaded
    at the same address and asks from the same address: each gets its own image's answer (the
    decision per address was a ggml YES given to libtorch_cpu, or the reverse); whether every
    image is judged as it loads (the default) or, with an unknown caller out of scope, each call."""
    p = proc(img, env_of(**M2, **scope))
    dev = p.create_device()
    base = p.m.image(*first)
    assert family(p, dev, 1008, first[0]) == want[0]
    p.d.replace_image(first[0], then[0], then[1])
    assert p.m.image(*then) == base
    assert family(p, dev, 1008, then[0]) == want[1]
    assert family(p, dev, 1008, "probe") == (0 if scope else 1)


@pytest.mark.parametrize("name,want", [(TORCH, 0), (GGML, 1)], ids=["libtorch_cpu", "libggml-metal"])
def test_an_image_dlopened_after_the_first_device_is_judged_by_its_name(img, name, want):
    """A Mach-O image mapped after the library watches images (dlopen: dyld's add-image notice
    after the fix-ups, before the initializers, DyldAPIs.cpp:1681-1697), as Python's import of
    torch maps libtorch_cpu beside a running ggml: a call from its own code reads its own
    image's answer in the default scope (libtorch_cpu stock, as make check-torch finds it)."""
    p = proc(img, env_of(**M2))
    dev = p.create_device()
    assert family(p, dev, 1008, "probe") == 1  # the watch is armed: a device answered
    li = p.m.add_image(img, name[1])  # a second copy of the slice, by that name
    send = p.m.address_of_import("_objc_msgSend") + 2**64
    at = li.base + min(li.img.function_starts())  # code of the loaded image: its first function, overwritten
    # stp x29, x30, [sp, #-16]!; ldr x16, =objc_msgSend; blr x16; ldp x29, x30, [sp], #16; ret
    words = [0xA9BF7BFD, 0x580000B0, 0xD63F0200, 0xA8C17BFD, 0xD65F03C0, 0xD503201F, send]
    p.m.write(at, b"".join(struct.pack("<I", w) if w < 2**32 else struct.pack("<Q", w - 2**64) for w in words))
    assert p.m.call(at, dev, p.d.objc.sel("supportsFamily:"), 1008, image="python3") & 0xFF == want
    assert family(p, dev, 1008, "probe") == 1


# ---------------------------------------------------------------- tail calls (item 7)

def guest_code(p, image, offset, words):
    """Writes arm64 code (32-bit words, then 64-bit literals) into image's page at offset."""
    at = p.m.image(*image) + offset
    p.m.write(at, b"".join(struct.pack("<I", w) if w < 2**32 else struct.pack("<Q", w - 2**64) for w in words))
    return at


def test_a_tail_call_is_answered_for_the_callers_image(img):
    """A wrapper in libggml-metal that ends in a tail jump to objc_msgSend (as a 2024 ggml's
    ggml_backend_metal_supports_family ends in `b _objc_msgSend$supportsFamily:`) is answered
    for whoever called the wrapper: libtorch_cpu's call stock, the program's raised. A wrapper
    that calls it (bl) is answered for libggml-metal itself."""
    p = proc(img, env_of(**M2))
    dev = p.create_device()
    p.m.image(*TORCH)
    send = p.m.address_of_import("_objc_msgSend") + 2**64
    tail = guest_code(p, GGML, 0xE00, [0x58000050, 0xD61F0200, send])  # ldr x16, =objc_msgSend; br x16
    # stp x29, x30, [sp, #-16]!; ldr x16, =objc_msgSend; blr x16; ldp x29, x30, [sp], #16; ret
    call = guest_code(p, GGML, 0xF00, [0xA9BF7BFD, 0x580000B0, 0xD63F0200, 0xA8C17BFD, 0xD65F03C0, 0xD503201F, send])
    sel = p.d.objc.sel("supportsFamily:")
    assert p.m.call(tail, dev, sel, 1008, image=TORCH[0]) & 0xFF == 0
    assert p.m.call(tail, dev, sel, 1008, image="probe") & 0xFF == 1
    assert p.m.call(call, dev, sel, 1008, image=TORCH[0]) & 0xFF == 1
    assert p.m.call(tail, dev, sel, 1003, image=TORCH[0]) & 0xFF == 1  # the device's own yes, stock


# ---------------------------------------------------------------- objc4 (issue 47 item 6)

def test_a_super_send_is_answered_as_the_parents_original(img):
    """DevA and its subclass DevB both hooked, DevB's own methods asking super. objc4 charges a
    super send to the method that sends it (objc_msgSendSuper2 jumps to the IMP with the return
    address in DevB's code: objc-msg-arm64.s:683-699, CacheHit's TailCallCachedImp), here in
    Metal, in scope. libtorch_cpu asking DevB gets DevB's own stock answers, the program the
    profile's: the super send is answered by DevA's original, DevB's replacement answers its
    caller. (Before, the super send was answered for Metal: libtorch_cpu got YES and the floor.)"""
    p = proc(img, env_of(**M2, VZCAPS_MAX_THREADGROUP_MEMORY="32768"))
    rt = p.d.objc
    rt.add_class("DevA", "AppleParavirtDevice")
    rt.add_class("DevB", "DevA")
    A = rt.classes["DevA"]
    rt.add_py_method(A, "supportsFamily:", lambda m, o, s, f, *_: 1 if 1001 <= f <= 1005 else 0, "c24@0:8q16")
    rt.add_py_method(A, "maxThreadgroupMemoryLength", lambda *_: 20000, "Q16@0:8")

    def ask_super(m, o, s, *a):
        return m.call(rt.lookup(A, rt.sel_names[s]).imp, o, s, *a[:1 if rt.sel_names[s].endswith(":") else 0],
                      image="Metal", site=5)
    rt.add_py_method(rt.classes["DevB"], "supportsFamily:", ask_super, "c24@0:8q16")
    rt.add_py_method(rt.classes["DevB"], "maxThreadgroupMemoryLength", ask_super, "Q16@0:8")
    rt.send(rt.new("DevA"), "init", image="Metal")
    dev = rt.send(rt.new("DevB"), "init", image="Metal")
    p.m.image(*TORCH)
    assert family(p, dev, 1008, TORCH[0]) == 0
    assert rt.send(dev, "maxThreadgroupMemoryLength", image=TORCH[0], site=1) == 20000
    assert family(p, dev, 1008, "probe") == 1
    assert rt.send(dev, "maxThreadgroupMemoryLength", image="probe", site=1) == 32768
    assert family(p, dev, 1003, TORCH[0]) == 1 and family(p, dev, 1009, "probe") == 0


def test_a_swizzle_between_the_read_and_the_replace_is_kept(img):
    """Another thread swizzles -supportsFamily: after the library read the implementation and
    before it replaced it: the replacement calls the implementation class_replaceMethod
    returned (objc-runtime-new.mm:4727-4766, 8308-8330: "The previous implementation is
    returned"), not the one read before (which lost the swizzle)."""
    p = proc(img, env_of(**M2))
    rt = p.d.objc
    rt.add_class("DevS", "AppleParavirtDevice")
    rt.add_py_method(rt.classes["DevS"], "supportsFamily:", lambda *_: 0, "c24@0:8q16")
    rt.add_class("Swizzler", "NSObject")
    asked = []
    rt.add_py_method(rt.classes["Swizzler"], "supportsFamily:", lambda m, o, s, f, *_: asked.append(f) or 1, "c24@0:8q16")
    theirs = rt.lookup(rt.classes["Swizzler"], "supportsFamily:").imp
    real = p.m.standins["_class_replaceMethod"]

    def swizzled_first(m, c, sel, imp, *a):
        rec = rt.classes["DevS"].methods.get(rt.sel_names[sel])
        if rec and rec.sel == "supportsFamily:" and rt.by_addr.get(c) is rt.classes["DevS"] and not asked:
            rec.imp = theirs  # the other thread's swizzle, between the read and the replace
        return real(m, c, sel, imp, *a)
    p.m.standins["_class_replaceMethod"] = swizzled_first
    p.m.slot("_class_replaceMethod", swizzled_first)
    dev = rt.send(rt.new("DevS"), "init", image="Metal")
    assert family(p, dev, 1009, "probe") == 1  # not claimed: the original, which is theirs now
    assert 1009 in asked


# ---------------------------------------------------------------- the records of effect (issue 44 item 1)

LIMITS = dict(VZCAPS_MAX_THREADGROUP_MEMORY="32768", VZCAPS_RECOMMENDED_WORKING_SET_SIZE="8589934592")


def test_the_first_raised_answer_of_each_kind_is_recorded_once(img):
    """Each kind's first answer that differs from the device's own is recorded once, naming the
    image that asked, before that answer returns; the device's own answers and later raised ones
    record nothing."""
    p = proc(img, env_of(**M2, **LIMITS))
    rt = p.d.objc
    rt.add_class("DevL", "AppleParavirtDevice")  # threadgroup memory below the floor
    rt.add_py_method(rt.classes["DevL"], "maxThreadgroupMemoryLength", lambda *_: 16384, "Q16@0:8")
    effects = calls_to(p, "_vzcaps_statslog_effect")
    dev = rt.send(rt.new("DevL"), "init", image="Metal")  # -initGPUFamilySupport asks Apple7 from Metal: raised, its own
    assert effects == []
    assert family(p, dev, 1003, "probe") == 1 and family(p, dev, 1008, "probe") == 1
    assert p.d.objc.send(dev, "maxThreadgroupMemoryLength", image="probe", site=1) == 32768
    assert p.d.objc.send(dev, "recommendedMaxWorkingSetSize", image="probe", site=2) == 8589934592
    for _ in range(3):
        p.ask(dev)
    got = [(k, p.m.cstr(i).decode(), s, g) for k, i, s, g in effects]
    assert got == [(0, "probe", 0, 1008), (1, "probe", 16384, 32768), (2, "probe", 5010800640, 8589934592)]


@pytest.mark.parametrize("scope", [{}, {"VZCAPS_STOCK_CALLERS": "probe libtorch_cpu*"}], ids=["default", "program stock"])
def test_an_answer_the_devices_own_code_asks_is_no_effect(img, scope):
    """Metal's -initGPUFamilySupport asks Apple7 as a device is created (raised: it builds its state
    from the profile's answer) and a device's own method asks another: neither is an effect on the
    job, so nothing is recorded, and each site pays dladdr once (the last one remembered); the first
    caller of another image that gets a raised answer is recorded. With every other image kept
    stock, none ever is (the proof then fails: no caller in scope)."""
    p = proc(img, env_of(**M2, **scope))
    rt = p.d.objc
    effects = calls_to(p, "_vzcaps_statslog_effect")
    lookups, real = [], p.m.standins["_dladdr"]
    p.m.slot("_dladdr", lambda m, *a: lookups.append(a[0]) or real(m, *a))
    dev = p.create_device()
    assert rt.send(dev, "apple7AtInit", image="probe") == 1 and effects == []
    first = len(lookups)
    assert rt.send(rt.new("AppleParavirtDevice"), "init", image="Metal") and effects == []
    assert len(lookups) == first  # the same site of Metal's: remembered, no dladdr
    assert family(p, dev, 1008, "Metal", site=7) == 1 and effects == []
    p.m.image(*TORCH)
    assert family(p, dev, 1008, TORCH[0]) == 0 and family(p, dev, 1008, "probe") == (0 if scope else 1)
    assert [(k, p.m.cstr(i).decode(), g) for k, i, _, g in effects] == ([] if scope else [(0, "probe", 1008)])


def test_no_record_when_no_answer_differs(img):
    """A profile that claims nothing above the device's own family and sets no floor above its
    limits: nothing raised, no effect record, and the hooked record says why (no_raise)."""
    p = proc(img, env_of(VZCAPS_APPLE_FAMILY_MAX="1005", VZCAPS_HOST_CHIP="Apple M2"))
    effects, events = calls_to(p, "_vzcaps_statslog_effect"), calls_to(p, "_vzcaps_statslog_event")
    dev = p.create_device()
    p.ask(dev)
    assert effects == []
    (hooked, cls, reason, no_raise), = events
    assert (hooked & 0xFF, p.m.cstr(cls).decode(), reason) == (1, "AppleParavirtDevice", 0)
    assert p.m.cstr(no_raise).decode() == ("nothing above the device's own family: it answers Apple5 and the profile "
                                           "claims up to Apple5; no floor above its limits")


def test_a_hooked_record_that_can_raise_says_so(img):
    p = proc(img, env_of(**M2))
    events = calls_to(p, "_vzcaps_statslog_event")
    p.create_device()
    (hooked, _, _, no_raise), = events
    assert (hooked & 0xFF, no_raise) == (1, 0)


def test_an_image_kept_stock_is_recorded_when_it_first_asks(img):
    p = proc(img, env_of(**M2))
    stock = calls_to(p, "_vzcaps_statslog_stock_caller")
    dev = p.create_device()
    p.m.image(*TORCH)
    p.ask(dev, image=TORCH[0])
    p.ask(dev, image=TORCH[0])
    assert [p.m.cstr(i).decode() for i, *_ in stock] == ["libtorch_cpu.dylib"]
