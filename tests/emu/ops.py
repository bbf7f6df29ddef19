"""Which ops a real client build's Metal backend accepts, asked of the build itself
(tests/emu/test_clients.py; docs/clients.md's op table): in the process clients.run made, after
the build's own start-up, tensors are built with its own ggml (ggml_init, ggml_new_tensor_*d and
each op's constructor, as a small Llama layer's graph builds them) and its own supports_op is
asked for each. What each build's source says the answer is (RULES, with file and line) is
computed from the SIMD-group flags its gates predict, so a wrong family answer shows as a wrong
op answer. A build that keeps neither the call nor the constructors says so (NOT_ASKED) and its
row is its rules applied to the flags it printed.
"""
import struct

from unicorn.arm64_const import UC_ARM64_REG_S0, UC_ARM64_REG_S1, UC_ARM64_REG_S2

F32, F16, Q4_0, Q8_0, Q4_K, I32 = 0, 1, 2, 8, 12, 26  # enum ggml_type (ggml.h; the same in every era)
SORT_DESC = 1  # enum ggml_sort_order
# a small Llama layer: width, feed-forward width, head size, heads, tokens, context, vocabulary,
# experts and experts used per token (for MUL_MAT_ID's routing)
EMBD, FF, HEAD, HEADS, TOKENS, CTX, VOCAB, EXPERTS, USED = 512, 1536, 64, 8, 32, 256, 1024, 4, 2
EPS = 1e-5


class Ggml:
    """The build's own ggml, called in the emulated process from the client's side."""

    def __init__(self, m, loaded, caller):
        self.m, self.loaded, self.caller = m, loaded, caller
        buf = m.alloc(4 << 20, 64)
        params = m.alloc(24, 8)  # struct ggml_init_params {mem_size, mem_buffer, no_alloc}: by reference (AAPCS64 B.4)
        m.put64(params, 4 << 20)
        m.put64(params + 8, buf)
        m.put64(params + 16, 1)
        self.ctx = self.call("ggml_init", params)

    def has(self, name):
        return any(self.address(li, "_" + name) for li in self.loaded)

    @staticmethod
    def address(li, sym):
        try:
            return li.symbol(sym)
        except KeyError:
            return None

    def call(self, name, *args, floats=()):
        fn = next(a for a in (self.address(li, "_" + name) for li in self.loaded) if a)
        for reg, v in zip((UC_ARM64_REG_S0, UC_ARM64_REG_S1, UC_ARM64_REG_S2), floats):
            self.m.uc.reg_write(reg, struct.unpack("<I", struct.pack("<f", v))[0])
        return self.m.call(fn, *args, image=self.caller)

    def t(self, typ, *ne):
        return self.call(f"ggml_new_tensor_{len(ne)}d", self.ctx, typ, *ne)

    def op(self, name, *args, floats=()):
        return self.call(name, self.ctx, *args, floats=floats)


def x(g, typ=F32, width=EMBD):
    return g.t(typ, width, TOKENS)


# each case: (name, the constructor it needs, how it builds the op's tensor)
CASES = [
    ("GET_ROWS", "ggml_get_rows", lambda g: g.op("ggml_get_rows", g.t(Q4_0, EMBD, VOCAB), g.t(I32, TOKENS))),
    ("RMS_NORM", "ggml_rms_norm", lambda g: g.op("ggml_rms_norm", x(g), floats=[EPS])),
    ("NORM", "ggml_norm", lambda g: g.op("ggml_norm", x(g), floats=[EPS])),
    ("MUL", "ggml_mul", lambda g: g.op("ggml_mul", x(g), g.t(F32, EMBD))),
    ("ADD", "ggml_add", lambda g: g.op("ggml_add", x(g), x(g))),
] + [(f"MUL_MAT {n}", "ggml_mul_mat", lambda g, t=t: g.op("ggml_mul_mat", g.t(t, EMBD, FF), x(g)))
     for n, t in (("F16", F16), ("Q4_0", Q4_0), ("Q8_0", Q8_0), ("Q4_K", Q4_K))] + [
    ("MUL_MAT_ID", "ggml_mul_mat_id",
     lambda g: g.op("ggml_mul_mat_id", g.t(Q4_0, EMBD, FF, EXPERTS), g.t(F32, EMBD, 1, TOKENS), g.t(I32, USED, TOKENS))),
    ("ROPE", "ggml_rope", lambda g: g.op("ggml_rope", g.t(F32, HEAD, HEADS, TOKENS), g.t(I32, TOKENS), HEAD, 0)),
    ("SOFT_MAX", "ggml_soft_max", lambda g: g.op("ggml_soft_max", g.t(F32, CTX, TOKENS, HEADS))),
    ("FLASH_ATTN_EXT", "ggml_flash_attn_ext",
     lambda g: g.op("ggml_flash_attn_ext", g.t(F32, HEAD, TOKENS, HEADS), g.t(F16, HEAD, CTX, HEADS), g.t(F16, HEAD, CTX, HEADS), 0,
                    floats=[HEAD ** -0.5, 0.0, 0.0])),
    ("CPY", "ggml_cpy", lambda g: g.op("ggml_cpy", x(g), x(g, F16))),
    ("GLU", "ggml_swiglu", lambda g: g.op("ggml_swiglu", x(g, F32, 2 * FF))),
    ("SILU", "ggml_silu", lambda g: g.op("ggml_silu", x(g, F32, FF))),
    ("SUM_ROWS", "ggml_sum_rows", lambda g: g.op("ggml_sum_rows", x(g))),
    ("ARGSORT", "ggml_argsort", lambda g: g.op("ggml_argsort", g.t(F32, EXPERTS, TOKENS), SORT_DESC)),
]


# ---- what each build's supports_op answers for these tensors, from its source ----------------
# Each rule: op -> (kind, where). Kinds: "red", SIMD-group reduction; "mm", SIMD-group matrix
# multiply; "yes", always. The other conditions of each case (contiguous rows, F32 or F16
# sources, K and V of one type, a head size of 64, ne[3] == 1, rope mode 0) hold for CASES'
# tensors; a note after the lines says which one the case meets where it matters.
KINDS = {"GET_ROWS": "yes", "RMS_NORM": "red", "NORM": "red", "MUL": "yes", "ADD": "yes", "MUL_MAT": "red",
         "MUL_MAT_ID": "red", "ROPE": "yes", "SOFT_MAX": "red", "SUM_ROWS": "red", "FLASH_ATTN_EXT": "mm", "CPY": "yes",
         "GLU": "yes", "ARGSORT": "yes"}
# before ggml had a GLU op (SILU is the gate's activation) NORM needed no reduction
KINDS_METAL_M = {**{k: v for k, v in KINDS.items() if k != "GLU"}, "NORM": "yes", "SILU": "yes"}


def at(source, kinds, **lines):
    """The rules of one copy of the source: each op's kind and its lines there."""
    assert set(lines) == set(kinds), set(lines) ^ set(kinds)
    return {op: (kinds[op], f"{source}:{where}") for op, where in lines.items()}


D, M = "ggml-metal-device.m", "ggml-metal.m"
# ggml 0.23.0 as vendored by llama-cpp-python 0.3.36, ggml/src/ggml-metal/
RULES_0_23 = at(D, KINDS, GET_ROWS="1922-1924 (not NVFP4 or TQ1_0)", RMS_NORM="1693-1694", NORM="1692-1694",
                MUL="1650-1653 (F32 sources)", ADD="1648-1653 (F32 sources)",
                MUL_MAT="1846-1855, 1513-1526 (ggml_metal_supports_mul_mat_op: reduction, then an F32 src1 is accepted)",
                MUL_MAT_ID="1856-1859, 1513-1526", ROPE="1695-1697", SOFT_MAX="1681-1684", SUM_ROWS="1678-1684",
                FLASH_ATTN_EXT="1727-1771 (head size 64, K and V F16, then SIMD-group matrix multiply)",
                CPY="1861-1881 (F32 to F16)", GLU="1602-1611 (SWIGLU, F32)", ARGSORT="1721-1724")
# ggml 0.13.1 as pywhispercpp 1.5.1's sdist carries it (whisper.cpp/ggml/src/ggml-metal/)
RULES_0_13 = at(D, KINDS, GET_ROWS="1303-1304", RMS_NORM="1160-1161", NORM="1159-1161", MUL="1123-1127", ADD="1121-1127",
                MUL_MAT="1242-1244 (reduction, not NVFP4)", MUL_MAT_ID="1242-1244", ROPE="1162-1163", SOFT_MAX="1148-1151",
                SUM_ROWS="1145-1151", FLASH_ATTN_EXT="1194-1232", CPY="1246-1264", GLU="1102-1110", ARGSORT="1189-1193")
# ggml 0.15.3 of whisper.cpp 1.9.1 (git 6fc7c33, 2026-07-01: 364 of the 365 files of the npm
# source package @fugood/whisper.node@1.1.1's whisper.cpp tree are that commit's; the package
# leaves out ggml's Metal backend, so its source is read there)
RULES_0_15 = at(D, KINDS, GET_ROWS="1328-1329", RMS_NORM="1184-1185", NORM="1183-1185", MUL="1147-1151", ADD="1145-1151",
                MUL_MAT="1267-1269", MUL_MAT_ID="1267-1269", ROPE="1186-1188", SOFT_MAX="1172-1175", SUM_ROWS="1169-1175",
                FLASH_ATTN_EXT="1219-1257", CPY="1271-1289", GLU="1106-1114", ARGSORT="1214-1218")
# the one-file era: ggml/src/ggml-metal.m as llama-cpp-python 0.3.1 vendors it (llama.cpp of b3889's week)
RULES_B3889 = at(M, KINDS_METAL_M, GET_ROWS="868-870 (ne[3] == 1)", RMS_NORM="800-802", NORM="803-805", MUL="787-792",
                 ADD="784-792", MUL_MAT="832-835 (reduction; an F32 src1)", MUL_MAT_ID="832-835", ROPE="804-805",
                 SOFT_MAX="799-802", SUM_ROWS="798-802", FLASH_ATTN_EXT="818-828 (K and V F16, head size not 256)",
                 CPY="836-851", SILU="766-774 (contiguous)", ARGSORT="815-817")
# the era between: ggml/src/ggml-metal/ggml-metal.m as pywhispercpp 1.3.1's sdist carries it
RULES_MID = at(M, KINDS_METAL_M, GET_ROWS="1216-1218", RMS_NORM="1124-1125 (and ne[0] % 4 == 0)", NORM="1127-1128",
               MUL="1108-1114", ADD="1105-1114", MUL_MAT="1161-1164", MUL_MAT_ID="1161-1164", ROPE="1129-1138 (mode 0)",
               SOFT_MAX="1121-1123", SUM_ROWS="1120-1123", FLASH_ATTN_EXT="1153-1157", CPY="1165-1181", SILU="1086-1095",
               ARGSORT="1150-1152")
RULES = {"nlc-3.21.1": RULES_0_23, "pywhispercpp-1.5.1": RULES_0_13, "fugood-whisper-1.1.1": RULES_0_15,
         "nlc-3.1.1": RULES_B3889, "napi-whisper-0.0.4": RULES_MID}
# how each build is asked: ggml_backend_dev_supports_op on its registry's device 0 (the call
# ggml's scheduler makes, ggml-backend.cpp), or, before Metal had a device, the backend's
# ggml_backend_supports_op (ggml-backend.c:301-303 in llama-cpp-python 0.3.1's copy)
ASK = {"nlc-3.21.1": "device", "pywhispercpp-1.5.1": "device", "fugood-whisper-1.1.1": "device", "nlc-3.1.1": "backend"}
NOT_ASKED = {"napi-whisper-0.0.4": "the addon exports only its module entry, and link-time optimisation left neither "
                                   "ggml_backend_dev_supports_op nor the constructors of RMS_NORM, MUL_MAT_ID, ROPE, SOFT_MAX, "
                                   "SILU, SUM_ROWS and ARGSORT in it: its row is its rules applied to the flags it printed"}


def names(key):
    """The build's op cases: each MUL_MAT type is one; GLU where the build has it, else SILU."""
    rules = RULES[key]
    return [n for n, _, _ in CASES if n.split(" ")[0] in rules]


def predict(key, red, mm):
    """{case: bool} the build's supports_op gives with those flags."""
    rules = RULES[key]
    return {n: {"yes": True, "red": red, "mm": mm}[rules[n.split(" ")[0]][0]] for n in names(key)}


def ask(key, r):
    """{case: bool} from the build's own supports_op in r's process, or None when not asked."""
    how = ASK.get(key)
    if how is None or r.handle is None:
        return None
    g = Ggml(r.p.m, r.loaded, r.caller)
    if how == "device":
        dev = g.call("ggml_backend_reg_dev_get", r.handle, 0)
        query = lambda t: g.call("ggml_backend_dev_supports_op", dev, t)  # noqa: E731
    else:
        query = lambda t: g.call("ggml_backend_supports_op", r.handle, t)  # noqa: E731
    want = set(names(key))
    return {n: bool(query(build(g)) & 0xFF) for n, _, build in CASES if n in want}


def missing_constructors(key, loaded):
    """The constructors of the build's op cases its images lack (what NOT_ASKED says, checked)."""
    g = Ggml.__new__(Ggml)
    g.loaded = loaded
    want = set(names(key))
    return sorted({c for n, c, _ in CASES if n in want and not g.has(c)})
