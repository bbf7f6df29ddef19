/* Mach-O reader for inspect, doctor, run's target check and the artifact audit.
 * Owns: every offset check. Never: reads outside the buffer, trusts a count or an offset,
 * or aborts on hostile input (errors are one line naming the problem). */
#define _XOPEN_SOURCE 700
#include "macho.h"

#include "bytes.h"
#include "../common/input.h"
#include "../common/plist.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"
#include "../common/sha256.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM_64 0xcffaedfeu
#define MH_MAGIC_32 0xfeedfaceu
#define FAT_MAGIC 0xcafebabeu
#define FAT_MAGIC_64 0xcafebabfu
#define CPU_ARM64 0x0100000cu
#define CPU_X86_64 0x01000007u
#define LC_SEGMENT_64 0x19u
#define LC_LOAD_DYLIB 0xcu
#define LC_ID_DYLIB 0xdu
#define LC_LOAD_WEAK_DYLIB 0x80000018u
#define LC_REEXPORT_DYLIB 0x8000001fu
#define LC_LAZY_LOAD_DYLIB 0x20u
#define LC_LOAD_UPWARD_DYLIB 0x80000023u
#define LC_CODE_SIGNATURE 0x1du
#define LC_BUILD_VERSION 0x32u
#define LC_VERSION_MIN_MACOSX 0x24u
#define LC_ENCRYPTION_INFO 0x21u
#define LC_ENCRYPTION_INFO_64 0x2cu
#define CSMAGIC_EMBEDDED_SIGNATURE 0xfade0cc0u
#define CSMAGIC_CODEDIRECTORY 0xfade0c02u
#define CSMAGIC_EMBEDDED_ENTITLEMENTS 0xfade7171u
#define CS_ADHOC 0x2u
#define CS_RESTRICT 0x800u
#define CS_REQUIRE_LV 0x2000u
#define CS_RUNTIME 0x10000u

const char *const macho_capability_selectors[] = {
    "supportsFamily:", "supportsFeatureSet:", "maxThreadgroupMemoryLength", "recommendedMaxWorkingSetSize",
    "maxBufferLength", "hasUnifiedMemory", "architecture", "name", "newResidencySetWithDescriptor:error:",
    "supportsBCTextureCompression", "currentAllocatedSize", NULL};

const char *macho_injection_name(enum macho_injection i)
{
    return i == MACHO_INJECTION_HONOURED ? "honoured" : i == MACHO_INJECTION_IGNORED ? "ignored" : "unknown";
}






static void arch_name(struct macho_slice *s)
{
    uint32_t sub = s->cpusubtype & 0x00ffffffu;
    if (s->cputype == CPU_ARM64)
        snprintf(s->arch, sizeof s->arch, "%s", sub == 2 ? "arm64e" : "arm64");
    else if (s->cputype == CPU_X86_64)
        snprintf(s->arch, sizeof s->arch, "%s", sub == 8 ? "x86_64h" : "x86_64");
    else
        snprintf(s->arch, sizeof s->arch, "cpu 0x%x", s->cputype);
}

/* A load-command string at offset off within a command of size cmdsize. */
static void lc_string(const uint8_t *cmd, uint32_t cmdsize, uint32_t off, char *out, size_t outlen)
{
    out[0] = '\0';
    if (off >= cmdsize)
        return;
    size_t n = 0;
    while (off + n < cmdsize && cmd[off + n] && n + 1 < outlen)
        n++;
    memcpy(out, cmd + off, n);
    out[n] = '\0';
}

static void version_string(uint32_t v, char *out, size_t len)
{
    if (v & 0xff)
        snprintf(out, len, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
    else
        snprintf(out, len, "%u.%u", v >> 16, (v >> 8) & 0xff);
}

/* NUL-separated string table: which capability selectors does it hold? */
static void scan_strings(struct macho_slice *s, const uint8_t *p, uint64_t n, bool methnames)
{
    uint64_t i = 0;
    while (i < n) {
        uint64_t start = i;
        while (i < n && p[i])
            i++;
        size_t len = (size_t)(i - start);
        const char *str = (const char *)p + start;
        if (len >= 10 && memcmp(str, "ggml_metal", 10) == 0)
            s->ggml = true;
        if (len >= sizeof VZCAPS_SELF_MARKER - 1 && memcmp(str, VZCAPS_SELF_MARKER, sizeof VZCAPS_SELF_MARKER - 1) == 0)
            s->own = true;
        for (const char *const *sel = macho_capability_selectors; *sel; sel++) {
            /* C strings name a selector only when distinctive (sel_registerName callers) */
            if (strlen(*sel) != len || memcmp(*sel, str, len) != 0 || (!methnames && len < 9))
                continue;
            bool dup = false;
            for (size_t k = 0; k < s->n_selectors; k++)
                dup |= s->selectors[k] == *sel;
            if (!dup && s->n_selectors < MACHO_MAX_SELECTORS)
                s->selectors[s->n_selectors++] = *sel;
        }
        i++;
    }
}

static bool xml_entitlement_true(const char *xml, size_t len, const char *key)
{
    char needle[160];
    snprintf(needle, sizeof needle, "<key>%s</key>", key);
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++) {
        if (memcmp(xml + i, needle, nl) != 0)
            continue;
        size_t j = i + nl;
        while (j < len && (xml[j] == ' ' || xml[j] == '\n' || xml[j] == '\t' || xml[j] == '\r'))
            j++;
        return j + 7 <= len && memcmp(xml + j, "<true/>", 7) == 0;
    }
    return false;
}

static bool hash_matches(const uint8_t *data, uint64_t len, const uint8_t *want, unsigned hash_size)
{
    struct sha256 h;
    uint8_t d[32];
    sha256_init(&h);
    sha256_update(&h, data, (size_t)len);
    sha256_final(&h, d);
    return memcmp(d, want, hash_size) == 0;
}

/* The blobs of an embedded signature this reader looks at. */
struct sig_blobs {
    const uint8_t *cd, *req, *ent, *der;
    uint32_t cdlen, reqlen, entlen, derlen;
};

/* Says why the signature is not accepted: false. */
static __attribute__((format(printf, 2, 3))) bool sig_bad(struct macho_slice *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->signature_problem, sizeof s->signature_problem, fmt, ap);
    va_end(ap);
    return false;
}

/* The superblob at sb (len bytes in the file) and the blobs in it. */
static bool sig_find_blobs(struct macho_slice *s, const uint8_t *sb, uint64_t len, struct sig_blobs *b)
{
    if (be32(sb) != CSMAGIC_EMBEDDED_SIGNATURE)
        return sig_bad(s, "signature blob has a bad magic");
    uint32_t sblen = be32(sb + 4), count = be32(sb + 8);
    if (sblen > len || sblen < 12 || count > (sblen - 12) / 8)
        return sig_bad(s, "signature superblob length or count out of range");
    for (uint32_t i = 0; i < count; i++) {
        uint32_t type = be32(sb + 12 + 8 * i), boff = be32(sb + 16 + 8 * i);
        if (boff > sblen - 8)
            return sig_bad(s, "signature blob %u outside the superblob", i);
        uint32_t blen = be32(sb + boff + 4);
        if (blen < 8 || blen > sblen - boff)
            return sig_bad(s, "signature blob %u has a bad length", i);
        if (type == 0)
            b->cd = sb + boff, b->cdlen = blen;
        else if (type == 2)
            b->req = sb + boff, b->reqlen = blen;
        else if (type == 5)
            b->ent = sb + boff, b->entlen = blen;
        else if (type == 7)
            b->der = sb + boff, b->derlen = blen;
    }
    if (!b->cd || b->cdlen < 44 || be32(b->cd) != CSMAGIC_CODEDIRECTORY)
        return sig_bad(s, "no code directory");
    return true;
}

/* What the code directory and the entitlements say: flags, identifier, hardened runtime,
 * library validation, the dyld entitlements. */
static void sig_facts(struct macho_slice *s, const struct sig_blobs *b)
{
    const uint8_t *cd = b->cd;
    uint32_t cdlen = b->cdlen, ident_off = be32(cd + 20);
    s->cs_flags = be32(cd + 12);
    s->platform_binary = cd[38] != 0;
    if (ident_off < cdlen) {
        size_t n = 0;
        while (ident_off + n < cdlen && cd[ident_off + n] && n + 1 < sizeof s->identifier)
            n++;
        memcpy(s->identifier, cd + ident_off, n);
        s->identifier[n] = '\0';
    }
    s->adhoc = s->cs_flags & CS_ADHOC;
    s->hardened_runtime = s->cs_flags & CS_RUNTIME;
    s->library_validation = (s->cs_flags & CS_REQUIRE_LV) || s->hardened_runtime;
    if (b->ent) {
        const char *ent = (const char *)b->ent + 8;
        s->entitlements_present = true;
        s->allow_dyld_env = xml_entitlement_true(ent, b->entlen - 8, "com.apple.security.cs.allow-dyld-environment-variables");
        s->disable_library_validation = xml_entitlement_true(ent, b->entlen - 8, "com.apple.security.cs.disable-library-validation");
    }
}

/* Every code page and special slot against its SHA-256 hash (the signature at off). */
static bool sig_verify(struct macho_slice *s, const uint8_t *m, uint64_t msize, uint64_t off, const struct sig_blobs *b)
{
    const uint8_t *cd = b->cd;
    uint32_t cdlen = b->cdlen, version = be32(cd + 8);
    uint32_t hash_off = be32(cd + 16), n_special = be32(cd + 24), n_code = be32(cd + 28);
    uint64_t code_limit = be32(cd + 32);
    unsigned hash_size = cd[36], hash_type = cd[37], page_log = cd[39];
    if (version >= 0x20300 && cdlen >= 64 && be64(cd + 56))
        code_limit = be64(cd + 56);
    if (hash_type != 2 || hash_size != 32) {
        s->signature_valid = -1;
        return sig_bad(s, "hash type %u not verified here (only SHA-256)", hash_type);
    }
    if (page_log < 9 || page_log > 20 || code_limit > msize || code_limit > off)
        return sig_bad(s, "code limit or page size out of range");
    uint64_t page = 1ull << page_log;
    if (n_code != (code_limit + page - 1) / page)
        return sig_bad(s, "%u code slots for a code limit of %llu", n_code, (unsigned long long)code_limit);
    if (n_special > 16 || hash_off < (uint64_t)n_special * hash_size || hash_off > cdlen ||
        (uint64_t)n_code * hash_size > cdlen - hash_off)
        return sig_bad(s, "hash slots outside the code directory");
    for (uint32_t i = 0; i < n_code; i++) {
        uint64_t start = (uint64_t)i * page, plen = code_limit - start < page ? code_limit - start : page;
        if (!hash_matches(m + start, plen, cd + hash_off + (uint64_t)i * hash_size, hash_size))
            return sig_bad(s, "page %u (bytes %llu..%llu) does not match its hash", i, (unsigned long long)start,
                           (unsigned long long)(start + plen));
    }
    const struct { int slot; const uint8_t *blob; uint32_t len; const char *what; } special[] = {
        {2, b->req, b->reqlen, "requirements"}, {5, b->ent, b->entlen, "entitlements"}, {7, b->der, b->derlen, "DER entitlements"}};
    for (size_t k = 0; k < 3; k++) {
        if ((uint32_t)special[k].slot > n_special)
            continue;
        const uint8_t *want = cd + hash_off - (uint64_t)special[k].slot * hash_size;
        static const uint8_t zero[32];
        if (special[k].blob ? !hash_matches(special[k].blob, special[k].len, want, hash_size) : memcmp(want, zero, hash_size) != 0)
            return sig_bad(s, "%s do not match their hash slot", special[k].what);
    }
    return true;
}

/* Parses and verifies the embedded signature at [off, off+len) of the slice. */
static void parse_signature(struct macho_slice *s, const uint8_t *m, uint64_t msize, uint64_t off, uint64_t len)
{
    s->signed_ = true;
    s->signature_valid = 0;
    struct sig_blobs b = {0};
    if (!in_range(msize, off, len) || len < 12 ? !sig_bad(s, "signature outside the file") : !sig_find_blobs(s, m + off, len, &b))
        return;
    sig_facts(s, &b);
    if (sig_verify(s, m, msize, off, &b))
        s->signature_valid = 1;
}

static void injection_verdict(struct macho_slice *s)
{
    if (s->plugin) {
        s->injection = MACHO_INJECTION_UNKNOWN;
        snprintf(s->injection_reason, sizeof s->injection_reason,
                 "a plugin: whether the library is honoured depends on the executable that loads it (inspect that one)");
        return;
    }
    /* what dyld tells AMFI besides the signature (DyldProcessConfig.cpp, getAMFI): such a
     * process is restricted and its DYLD_* variables are removed; a re-signed copy keeps both */
    if (s->restrict_section) {
        s->injection = MACHO_INJECTION_IGNORED;
        snprintf(s->injection_reason, sizeof s->injection_reason,
                 "a __RESTRICT,__restrict section: dyld treats the program as restricted and ignores DYLD_* variables");
    } else if (s->encryption_cmd && s->cryptid != 0) {
        s->injection = MACHO_INJECTION_IGNORED;
        snprintf(s->injection_reason, sizeof s->injection_reason,
                 "FairPlay-encrypted segments (LC_ENCRYPTION_INFO cryptid %u): dyld treats the program as restricted and "
                 "ignores DYLD_* variables", s->cryptid);
    } else if (!s->signed_) {
        s->injection = s->cputype == CPU_ARM64 ? MACHO_INJECTION_UNKNOWN : MACHO_INJECTION_HONOURED;
        snprintf(s->injection_reason, sizeof s->injection_reason, "%s",
                 s->cputype == CPU_ARM64 ? "unsigned arm64 code does not run on Apple silicon at all"
                                         : "unsigned: no runtime restrictions");
    } else if (s->signature_valid == 0) {
        s->injection = MACHO_INJECTION_UNKNOWN;
        snprintf(s->injection_reason, sizeof s->injection_reason, "signature does not verify: %s", s->signature_problem);
    } else if (s->platform_binary) {
        s->injection = MACHO_INJECTION_IGNORED;
        snprintf(s->injection_reason, sizeof s->injection_reason, "platform (Apple system) binary: DYLD_* variables are ignored");
    } else if (s->cs_flags & CS_RESTRICT) {
        s->injection = MACHO_INJECTION_IGNORED;
        snprintf(s->injection_reason, sizeof s->injection_reason, "restricted signature: DYLD_* variables are ignored");
    } else if (s->hardened_runtime && !s->allow_dyld_env) {
        s->injection = MACHO_INJECTION_IGNORED;
        snprintf(s->injection_reason, sizeof s->injection_reason,
                 "hardened runtime without com.apple.security.cs.allow-dyld-environment-variables: DYLD_INSERT_LIBRARIES is ignored");
    } else if (s->library_validation && !s->disable_library_validation) {
        s->injection = MACHO_INJECTION_IGNORED;
        snprintf(s->injection_reason, sizeof s->injection_reason,
                 "library validation without com.apple.security.cs.disable-library-validation: an ad-hoc signed library is refused");
    } else {
        s->injection = MACHO_INJECTION_HONOURED;
        snprintf(s->injection_reason, sizeof s->injection_reason, "%s",
                 s->hardened_runtime ? "hardened runtime, but entitled for DYLD variables and other libraries"
                                     : "no hardened runtime or library validation");
    }
}

/* A linked library's load command (LC_LOAD_DYLIB and its kin) into s->libs: 0, or -1 with err. */
static int slice_dylib(struct macho_slice *s, const uint8_t *c, uint32_t cmd, uint32_t cmdsize, uint32_t i, char *err,
                       size_t errlen)
{
    if (s->n_libs == MACHO_MAX_LIBS)
        FAIL("more than %d linked libraries (vzcaps reads at most %d)", MACHO_MAX_LIBS, MACHO_MAX_LIBS);
    uint32_t off = le32(c + 8);
    lc_string(c, cmdsize, off, s->libs[s->n_libs], sizeof s->libs[0]);
    if (off < cmdsize && strnlen((const char *)c + off, cmdsize - off) >= sizeof s->libs[0])
        FAIL("load command %u: a library path longer than %d bytes", i, MACHO_MAX_LIB_NAME - 1);
    s->lib_weak[s->n_libs++] = cmd == LC_LOAD_WEAK_DYLIB;
    return 0;
}

/* An LC_SEGMENT_64: the __RESTRICT section, and the strings of __objc_methname and __cstring
 * (scan_strings): 0, or -1 with err. */
static int slice_segment(const uint8_t *m, uint64_t size, struct macho_slice *s, const uint8_t *c, uint32_t cmdsize, uint32_t i,
                         char *err, size_t errlen)
{
    char nm[68];
    if (cmdsize < 72)
        FAIL("load command %u: short segment command", i);
    if (!in_range(size, le64(c + 40), le64(c + 48)))
        FAIL("truncated: segment %s (offset %llu, %llu bytes) extends past the end of the file", name16(c + 8, nm),
             (unsigned long long)le64(c + 40), (unsigned long long)le64(c + 48));
    uint32_t nsects = le32(c + 64);
    if (nsects > (cmdsize - 72) / 80)
        FAIL("load command %u: %u sections do not fit in %u bytes", i, nsects, cmdsize);
    for (uint32_t k = 0; k < nsects; k++) {
        const uint8_t *sec = c + 72 + 80 * k;
        char sect[17] = {0}, seg[17] = {0};
        memcpy(sect, sec, 16);
        memcpy(seg, sec + 16, 16);
        if (strcmp(seg, "__RESTRICT") == 0 && strcmp(sect, "__restrict") == 0)
            s->restrict_section = true; /* dyld's UnsafeHeader::isRestricted */
        bool meth = strcmp(sect, "__objc_methname") == 0, cstr = strcmp(sect, "__cstring") == 0;
        if (!meth && !cstr)
            continue;
        uint64_t ssize = le64(sec + 40);
        uint32_t soff = le32(sec + 48);
        if (!in_range(size, soff, ssize))
            FAIL("truncated: section %s (offset %u, %llu bytes) extends past the end of the file", sect, soff, (unsigned long long)ssize);
        scan_strings(s, m + soff, ssize, meth);
    }
    return 0;
}

/* Which Metal clients the linked libraries name (none in vzcaps itself, which quotes them). */
static void slice_clients(struct macho_slice *s)
{
    for (size_t i = 0; i < s->n_libs; i++) {
        const char *l = s->libs[i];
        if (strstr(l, "libggml"))
            s->ggml = true;
        if (strstr(l, "libmlx") || strstr(l, "/mlx"))
            s->mlx = true;
        if (strstr(l, "libtorch"))
            s->torch_mps = true;
    }
    if (s->own)
        s->ggml = s->mlx = s->torch_mps = false;
}

static int parse_slice(const uint8_t *m, uint64_t size, struct macho_slice *s, char *err, size_t errlen)
{
    if (size < 32)
        FAIL("truncated Mach-O header (%llu bytes)", (unsigned long long)size);
    uint32_t magic = le32(m);
    if (magic == MH_MAGIC_32 || be32(m) == MH_MAGIC_32)
        FAIL("32-bit Mach-O is not supported");
    if (magic == MH_CIGAM_64)
        FAIL("big-endian Mach-O is not supported");
    if (magic != MH_MAGIC_64)
        FAIL("not a Mach-O file (magic 0x%08x)", magic);
    s->cputype = le32(m + 4);
    s->cpusubtype = le32(m + 8);
    s->filetype = le32(m + 12);
    arch_name(s);
    uint32_t ncmds = le32(m + 16);
    uint64_t pos = 32, end;
    if (load_commands_end(m, size, &end, err, errlen) != 0)
        return -1;
    for (uint32_t i = 0; i < ncmds; i++) {
        const uint8_t *c = load_command_next(m, &pos, end, i, err, errlen);
        if (!c)
            return -1;
        uint32_t cmd = le32(c), cmdsize = le32(c + 4);
        switch (cmd) {
        case LC_BUILD_VERSION:
            if (cmdsize >= 16)
                version_string(le32(c + 12), s->minos, sizeof s->minos);
            break;
        case LC_VERSION_MIN_MACOSX:
            if (cmdsize >= 16 && !s->minos[0])
                version_string(le32(c + 8), s->minos, sizeof s->minos);
            break;
        case LC_ID_DYLIB:
            if (cmdsize >= 24)
                lc_string(c, cmdsize, le32(c + 8), s->install_name, sizeof s->install_name);
            break;
        case LC_LOAD_DYLIB:
        case LC_LOAD_WEAK_DYLIB:
        case LC_REEXPORT_DYLIB:
        case LC_LAZY_LOAD_DYLIB:
        case LC_LOAD_UPWARD_DYLIB:
            if (cmdsize >= 24 && slice_dylib(s, c, cmd, cmdsize, i, err, errlen) != 0)
                return -1;
            break;
        case LC_ENCRYPTION_INFO:
        case LC_ENCRYPTION_INFO_64:
            if (cmdsize < 20)
                FAIL("load command %u: short encryption info command", i);
            if (!s->encryption_cmd) { /* the first, as dyld's findFairPlayEncryptionLoadCommand */
                s->encryption_cmd = true;
                s->cryptid = le32(c + 16);
            }
            break;
        case LC_CODE_SIGNATURE:
            if (cmdsize < 16)
                FAIL("load command %u: short code signature command", i);
            if (!in_range(size, le32(c + 8), le32(c + 12)))
                FAIL("truncated: code signature (offset %u, %u bytes) extends past the end of the file", le32(c + 8), le32(c + 12));
            parse_signature(s, m, size, le32(c + 8), le32(c + 12));
            break;
        case LC_SEGMENT_64:
            if (slice_segment(m, size, s, c, cmdsize, i, err, errlen) != 0)
                return -1;
            break;
        default:
            break;
        }
    }
    slice_clients(s);
    s->plugin = s->filetype == 8 /* MH_BUNDLE */;
    injection_verdict(s);
    return 0;
}

int macho_parse(const uint8_t *data, size_t size, struct macho_file *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (size < 8)
        FAIL("too short to be a Mach-O file (%zu bytes)", size);
    uint32_t magic = be32(data);
    if (magic != FAT_MAGIC && magic != FAT_MAGIC_64) {
        out->n_slices = 1;
        out->slices[0].size = size;
        return parse_slice(data, size, &out->slices[0], err, errlen);
    }
    out->fat = true;
    uint32_t n = be32(data + 4);
    size_t entry = magic == FAT_MAGIC ? 20 : 32;
    if (n == 0 || n > MACHO_MAX_SLICES)
        FAIL("universal header claims %u slices (1..%d supported)", n, MACHO_MAX_SLICES);
    if (!in_range(size, 8, (uint64_t)n * entry))
        FAIL("truncated universal header");
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = data + 8 + i * entry;
        struct macho_slice *s = &out->slices[i];
        uint64_t off = magic == FAT_MAGIC ? be32(e + 8) : be64(e + 8);
        uint64_t len = magic == FAT_MAGIC ? be32(e + 12) : be64(e + 16);
        if (!in_range(size, off, len))
            FAIL("truncated: slice %u (offset %llu, %llu bytes) extends past the end of the file", i, (unsigned long long)off,
                 (unsigned long long)len);
        s->offset = off;
        s->size = len;
        char sub[200];
        if (parse_slice(data + off, len, s, sub, sizeof sub) != 0)
            FAIL("slice %u: %s", i, sub);
        if (s->cputype != be32(e) || s->cpusubtype != be32(e + 4))
            FAIL("slice %u: universal header says cpu 0x%x/0x%x, the slice says 0x%x/0x%x", i, be32(e), be32(e + 4),
                 s->cputype, s->cpusubtype);
        out->n_slices++;
    }
    return 0;
}

int macho_slice_signed(const uint8_t *m, size_t size)
{
    char err[200];
    size_t errlen = sizeof err;
    uint64_t pos = 32, end;
    if (size < 32 || le32(m) != MH_MAGIC_64 || load_commands_end(m, size, &end, err, errlen) != 0)
        return -1;
    uint32_t ncmds = le32(m + 16);
    for (uint32_t i = 0; i < ncmds; i++) {
        const uint8_t *c = load_command_next(m, &pos, end, i, err, errlen);
        if (!c)
            return -1;
        if (le32(c) == LC_CODE_SIGNATURE)
            return 1;
    }
    return 0;
}

const char *macho_kind_name(enum macho_kind k)
{
    switch (k) {
    case MACHO_KIND_CODE: return "signed code";
    case MACHO_KIND_PARTLY_SIGNED: return "a universal file with signed and unsigned slices";
    case MACHO_KIND_UNSIGNED: return "unsigned code";
    case MACHO_KIND_OBJECT: return "an object file";
    case MACHO_KIND_DSYM: return "debug symbols (dSYM)";
    case MACHO_KIND_ARCHIVE: return "a static archive";
    case MACHO_KIND_JAVA: return "a Java class file";
    case MACHO_KIND_OTHER_MACHO: return "a 32-bit or big-endian Mach-O file";
    case MACHO_KIND_BROKEN: return "a damaged Mach-O file";
    case MACHO_KIND_NONE: break;
    }
    return "not a Mach-O file";
}

static enum macho_kind slice_kind(const uint8_t *m, uint64_t size)
{
    if (size >= 8 && memcmp(m, "!<arch>\n", 8) == 0)
        return MACHO_KIND_ARCHIVE;
    if (size < 32)
        return MACHO_KIND_BROKEN;
    if (le32(m) != MH_MAGIC_64)
        return le32(m) == MH_MAGIC_32 || be32(m) == MH_MAGIC_32 || le32(m) == MH_CIGAM_64 ? MACHO_KIND_OTHER_MACHO
                                                                                         : MACHO_KIND_BROKEN;
    uint32_t filetype = le32(m + 12);
    if (filetype == 1 /* MH_OBJECT */)
        return MACHO_KIND_OBJECT;
    if (filetype == 0xa /* MH_DSYM */)
        return MACHO_KIND_DSYM;
    int sig = macho_slice_signed(m, (size_t)size);
    return sig < 0 ? MACHO_KIND_BROKEN : sig ? MACHO_KIND_CODE : MACHO_KIND_UNSIGNED;
}

enum macho_kind macho_classify(const uint8_t *d, size_t size, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", "");
    if (size < 8)
        return MACHO_KIND_NONE;
    uint32_t magic = be32(d);
    enum macho_kind k;
    if (le32(d) == MH_MAGIC_64) {
        k = slice_kind(d, size);
    } else if (magic == FAT_MAGIC || magic == FAT_MAGIC_64) {
        uint32_t n = be32(d + 4);
        size_t entry = magic == FAT_MAGIC ? 20 : 32;
        if (magic == FAT_MAGIC && n >= 45) /* a class file's version (major >= 45) where a count would be */
            return MACHO_KIND_JAVA;
        if (n == 0 || n > MACHO_MAX_SLICES || !in_range(size, 8, (uint64_t)n * entry)) {
            snprintf(err, errlen, "universal header claims %u slices (1..%d supported)", n, MACHO_MAX_SLICES);
            return MACHO_KIND_BROKEN;
        }
        unsigned code = 0, unsigned_ = 0, resource = 0;
        k = MACHO_KIND_NONE;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *e = d + 8 + i * entry;
            uint64_t off = magic == FAT_MAGIC ? be32(e + 8) : be64(e + 8);
            uint64_t len = magic == FAT_MAGIC ? be32(e + 12) : be64(e + 16);
            if (!in_range(size, off, len)) {
                snprintf(err, errlen, "truncated: slice %u extends past the end of the file", i);
                return MACHO_KIND_BROKEN;
            }
            enum macho_kind s = slice_kind(d + off, len);
            if (s == MACHO_KIND_BROKEN || s == MACHO_KIND_OTHER_MACHO) {
                k = s;
                break;
            }
            code += s == MACHO_KIND_CODE;
            unsigned_ += s == MACHO_KIND_UNSIGNED;
            resource += s != MACHO_KIND_CODE && s != MACHO_KIND_UNSIGNED;
            if (s != MACHO_KIND_CODE && s != MACHO_KIND_UNSIGNED)
                k = s; /* the kind of a slice that is not code names the file */
        }
        if (k == MACHO_KIND_NONE || k == MACHO_KIND_BROKEN || k == MACHO_KIND_OTHER_MACHO) {
            if (k == MACHO_KIND_NONE)
                k = code && unsigned_ ? MACHO_KIND_PARTLY_SIGNED : code ? MACHO_KIND_CODE : MACHO_KIND_UNSIGNED;
        } else if (code || unsigned_) {
            snprintf(err, errlen, "a universal file mixing code with %s slices", macho_kind_name(k));
            return MACHO_KIND_BROKEN;
        }
        (void)resource;
    } else if (le32(d) == MH_MAGIC_32 || magic == MH_MAGIC_32 || le32(d) == MH_CIGAM_64) {
        return MACHO_KIND_OTHER_MACHO;
    } else {
        return MACHO_KIND_NONE;
    }
    if (k == MACHO_KIND_CODE || k == MACHO_KIND_PARTLY_SIGNED || k == MACHO_KIND_UNSIGNED || k == MACHO_KIND_BROKEN) {
        /* code is what the reader reads in full: one notion of a well-formed file */
        static struct macho_file mf;
        char why[300];
        if (macho_parse(d, size, &mf, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s", why);
            return MACHO_KIND_BROKEN;
        }
        if (k == MACHO_KIND_BROKEN) {
            snprintf(err, errlen, "not a layout vzcaps reads");
            return k;
        }
    }
    return k;
}

int macho_plist_executable(const char *plist, char **name, char *err, size_t errlen)
{
    *name = NULL;
    struct plist *doc;
    bool missing = false;
    if (plist_read_file(plist, &doc, &missing, err, errlen) != 0)
        return missing ? 0 : -1; /* no Info.plist is no error; one that cannot be read is */
    const struct plist *v = plist_get(doc, "CFBundleExecutable");
    int rc = 0;
    if (doc->type != PLIST_DICT) {
        snprintf(err, errlen, "%s: the property list is not a dictionary", plist);
        rc = -1;
    } else if (v && v->type != PLIST_STRING) {
        snprintf(err, errlen, "%s: CFBundleExecutable is not a string", plist);
        rc = -1;
    } else if (v && v->len) {
        /* a file name beside the bundle's other code, nothing that leads out of it */
        if (memchr(v->str, '\0', v->len)) { /* a binary plist's string may hold one: shown whole */
            char *shown = nul_shown(v->str, v->len);
            snprintf(err, errlen, "%s: CFBundleExecutable \"%s\" holds a NUL byte, which no file name can", plist,
                     shown ? shown : "(out of memory)");
            free(shown);
            rc = -1;
        } else if (memchr(v->str, '/', v->len) || strcmp(v->str, ".") == 0 || strcmp(v->str, "..") == 0) {
            snprintf(err, errlen, "%s: CFBundleExecutable \"%s\" is not a file name (it would lead out of the bundle)", plist,
                     v->str); /* raw: the printer escapes it */
            rc = -1;
        } else {
            *name = xformat("%s", v->str);
        }
    }
    plist_free(doc);
    return rc;
}

/* The main executable of the .app bundle bundle[0..n), relative to it:
 * Contents/MacOS/<CFBundleExecutable of Contents/Info.plist>, else Contents/MacOS/<the
 * bundle's base name>; *named says whether the Info.plist named it. On the heap; NULL with
 * "PLIST: reason" in err when Info.plist exists but cannot be read (not a regular file, larger
 * than PLIST_MAX_SIZE, not an XML or binary property list) or its CFBundleExecutable is not a
 * plain file name (a '/', "." or ".." would lead out of Contents/MacOS). */
static char *bundle_executable(const char *bundle, size_t n, bool *named, char *err, size_t errlen)
{
    char *plist = xformat("%.*s/Contents/Info.plist", (int)n, bundle), *name = NULL, *exe = NULL;
    int rc = macho_plist_executable(plist, &name, err, errlen);
    free(plist);
    *named = name != NULL;
    if (rc != 0)
        return NULL;
    if (name) {
        exe = xformat("Contents/MacOS/%s", name);
    } else { /* no Info.plist, or no CFBundleExecutable in it: the bundle's base name */
        const char *base = bundle + n;
        while (base > bundle && base[-1] != '/')
            base--;
        exe = xformat("Contents/MacOS/%.*s", (int)(bundle + n - base - 4), base);
    }
    free(name);
    return exe;
}

/* ".app" bundles: their main executable (bundle_executable), and in out->info_plist the
 * Info.plist that named it; other paths as given. -1 with a reason when the path would not
 * fit or Info.plist cannot be read. */
static int resolve_bundle(const char *path, char *out, size_t len, struct macho_file *mf, char *err, size_t errlen)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    bool app = n >= 4 && strncmp(path + n - 4, ".app", 4) == 0, named = false;
    char *rel = app ? bundle_executable(path, n, &named, err, errlen) : NULL;
    if (app && !rel)
        return -1;
    int w = app ? snprintf(out, len, "%.*s/%s", (int)n, path, rel) : snprintf(out, len, "%s", path);
    free(rel);
    if (w < 0 || (size_t)w >= len)
        FAIL("%.64s...: path longer than %zu bytes", path, len - 1);
    if (named)
        snprintf(mf->info_plist, sizeof mf->info_plist, "%.*s/Contents/Info.plist", (int)n, path);
    snprintf(mf->path, sizeof mf->path, "%s", out);
    return 0;
}

bool macho_needs_whole(const uint8_t *head, size_t n)
{
    return n >= 8 && (le32(head) == MH_MAGIC_64 || be32(head) == FAT_MAGIC || be32(head) == FAT_MAGIC_64);
}

/* The first 32 bytes of path, when they tell that it is no file macho_parse reads whole
 * (*told set, and the file is not read further); 0, or -1 with "PATH: reason". */
static int head_tells(const char *path, uint8_t head[32], size_t *n, bool *told, char *err, size_t errlen)
{
    struct stat st;
    *told = false;
    int fd = vzcaps_input_open(path, 0, &st, err, errlen);
    if (fd < 0)
        return -1;
    ssize_t got;
    while ((got = pread(fd, head, 32, 0)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (got < 0)
        FAIL("%s: cannot read: %s", path, strerror(errno));
    *n = (size_t)got;
    /* a file over the limit is refused by its size below, whatever it starts with */
    *told = got == 32 && st.st_size <= MACHO_MAX_SIZE && !macho_needs_whole(head, 32);
    return 0;
}

int macho_load(const char *path, struct macho_file *out, char *err, size_t errlen)
{
    char real[4400], why[300];
    static struct macho_file named; /* the names resolve_bundle found, kept across the parse */
    memset(out, 0, sizeof *out);
    memset(&named, 0, sizeof named);
    if (resolve_bundle(path, real, sizeof real, &named, err, errlen) != 0)
        return -1;
    uint8_t head[32];
    size_t hn = 0;
    bool told;
    if (head_tells(real, head, &hn, &told, err, errlen) != 0)
        return -1;
    if (told) { /* not a file read whole (a model, a script): its first bytes say why */
        if (macho_parse(head, hn, out, why, sizeof why) != 0)
            FAIL("%s: %s", real, why);
        FAIL("%s: not a Mach-O file", real);
    }
    /* read, never mapped: a file that shrinks while read is "truncated", never a SIGBUS */
    struct vzcaps_input file;
    struct vzcaps_input_opts io = {.max = MACHO_MAX_SIZE};
    if (vzcaps_input_read(real, &io, &file, err, errlen) != 0)
        return -1;
    int rc = macho_parse((const uint8_t *)file.data, file.len, out, why, sizeof why);
    vzcaps_input_free(&file);
    if (rc != 0)
        FAIL("%s: %s", real, why);
    memcpy(out->path, named.path, sizeof out->path);
    memcpy(out->info_plist, named.info_plist, sizeof out->info_plist);
    size_t rl = strlen(real);
    if (rl > 5 && strcmp(real + rl - 5, ".node") == 0) /* a Node.js native addon: a plugin */
        for (size_t i = 0; i < out->n_slices; i++) {
            out->slices[i].plugin = true;
            injection_verdict(&out->slices[i]);
        }
    return 0;
}

/* The slices' architectures, blank-separated; with dylibs_only, -1 for a slice that is not a
 * dynamic library. */
static int slice_archs(const char *path, bool dylibs_only, char *out, size_t len, char *err, size_t errlen)
{
    static struct macho_file mf;
    if (macho_load(path, &mf, err, errlen) != 0)
        return -1;
    out[0] = '\0';
    for (size_t i = 0; i < mf.n_slices; i++) {
        if (dylibs_only && mf.slices[i].filetype != 6 /* MH_DYLIB */)
            FAIL("slice %s is not a dynamic library (Mach-O file type %u)", mf.slices[i].arch, mf.slices[i].filetype);
        vzcaps_appendf(out, len, "%s%s", i ? " " : "", mf.slices[i].arch);
    }
    return 0;
}

int macho_dylib_check(const char *path, char *archs, size_t len, char *err, size_t errlen)
{
    return slice_archs(path, true, archs, len, err, errlen);
}

int macho_arch_list(const char *path, char *out, size_t len, char *err, size_t errlen)
{
    return slice_archs(path, false, out, len, err, errlen);
}
