/* Ad-hoc code signatures written by vzcaps itself (for prepare): the reader's inverse, as
 * linkers write their "linker-signed" signatures. Owns: the CodeDirectory and superblob,
 * fitting them into a slice (into the existing signature space, zero-padded to its size, or by
 * growing __LINKEDIT and the load commands), re-laying out universal files.
 * Never: changes a byte before the signature other than the load commands it must update;
 * trusts an offset or a count it has not checked. */
#include "codesign.h"

#include "bytes.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"
#include "macho.h"
#include "../common/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MH_MAGIC_64 0xfeedfacfu
#define FAT_MAGIC 0xcafebabeu
#define FAT_MAGIC_64 0xcafebabfu
#define MH_EXECUTE 2u
#define LC_SEGMENT_64 0x19u
#define LC_CODE_SIGNATURE 0x1du
#define CSMAGIC_EMBEDDED_SIGNATURE 0xfade0cc0u
#define CSMAGIC_CODEDIRECTORY 0xfade0c02u
#define CSMAGIC_REQUIREMENTS 0xfade0c01u
#define CS_ADHOC 0x2u
#define CS_EXECSEG_MAIN_BINARY 0x1u
#define CD_VERSION 0x20400u  /* with the exec-segment fields */
#define CD_HEADER 88u        /* bytes of a version 0x20400 CodeDirectory before its identifier */
#define PAGE_LOG 12u         /* 4 KiB pages, as codesign and ld64 hash them */
/* special slots: 1 Info.plist, 2 the requirements, 3 the resource seal (CodeResources). Two
 * when nothing is bound (slot 1 zero), three when the resource seal is. */
#define SLOT_INFO 1u
#define SLOT_REQUIREMENTS 2u
#define SLOT_RESOURCES 3u

static void put_le32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24); }
static void put_le64(uint8_t *p, uint64_t v) { put_le32(p, (uint32_t)v), put_le32(p + 4, (uint32_t)(v >> 32)); }
static void put_be32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v; }
static void put_be64(uint8_t *p, uint64_t v) { put_be32(p, (uint32_t)(v >> 32)), put_be32(p + 4, (uint32_t)v); }

static void digest(const void *data, size_t n, uint8_t out[32])
{
    struct sha256 h;
    sha256_init(&h);
    sha256_update(&h, data, n);
    sha256_final(&h, out);
}




/* What signing a slice needs to know about it. */
struct slice_layout {
    uint32_t filetype, cputype;
    uint64_t sig_off, sig_size;  /* LC_CODE_SIGNATURE dataoff, datasize */
    size_t lc_sig, lc_linkedit;  /* offsets of those load commands; lc_linkedit 0 when none */
    uint64_t text_off, text_size;
    char ident[256];             /* the current signature's identifier, "" when none */
    uint32_t old_flags;
    bool placeholder;            /* no signature yet: an empty one was made room for */
};

/* The identifier and flags of the first CodeDirectory of the signature at [off, off+len). */
static int old_signature(const uint8_t *m, uint64_t off, uint64_t len, struct slice_layout *l, char *err, size_t errlen)
{
    if (len < 12 || be32(m + off) != CSMAGIC_EMBEDDED_SIGNATURE)
        FAIL("its code signature cannot be parsed (no signature superblob)");
    const uint8_t *sb = m + off;
    uint32_t sblen = be32(sb + 4), count = be32(sb + 8);
    if (sblen < 12 || sblen > len || count > (sblen - 12) / 8)
        FAIL("its code signature cannot be parsed (superblob length or count out of range)");
    /* every blob inside the superblob and after its index, before any is read */
    const uint8_t *cd = NULL;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t type = be32(sb + 12 + 8 * i), boff = be32(sb + 16 + 8 * i);
        if (boff > sblen - 8 || be32(sb + boff + 4) < 8 || be32(sb + boff + 4) > sblen - boff)
            FAIL("its code signature cannot be parsed (blob %u outside the superblob)", i);
        if (boff < 12 + 8 * count)
            FAIL("its code signature cannot be parsed (blob %u overlaps the index)", i);
        if (type == 0 && !cd)
            cd = sb + boff;
    }
    if (cd) {
        uint32_t cdlen = be32(cd + 4);
        if (cdlen < 44 || be32(cd) != CSMAGIC_CODEDIRECTORY)
            FAIL("its code signature cannot be parsed (bad CodeDirectory)");
        l->old_flags = be32(cd + 12);
        uint32_t ident = be32(cd + 20);
        size_t n = 0;
        while (ident < cdlen && ident + n < cdlen && cd[ident + n] && n + 1 < sizeof l->ident)
            n++;
        if (ident >= cdlen || ident + n >= cdlen || cd[ident + n])
            FAIL("its code signature cannot be parsed (identifier outside the CodeDirectory or too long)");
        memcpy(l->ident, cd + ident, n);
        l->ident[n] = '\0';
        return 0;
    }
    FAIL("its code signature cannot be parsed (no CodeDirectory)");
}

static int scan_slice(const uint8_t *m, uint64_t size, struct slice_layout *l, bool placeholder, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    l->placeholder = placeholder;
    if (size < 32 || le32(m) != MH_MAGIC_64)
        FAIL("not a 64-bit little-endian Mach-O slice");
    l->cputype = le32(m + 4);
    l->filetype = le32(m + 12);
    uint32_t ncmds = le32(m + 16);
    uint64_t pos = 32, end, linkedit_end = 0;
    if (load_commands_end(m, size, &end, err, errlen) != 0)
        return -1;
    char nm[68];
    for (uint32_t i = 0; i < ncmds; i++) {
        const uint8_t *c = load_command_next(m, &pos, end, i, err, errlen);
        if (!c)
            return -1;
        uint32_t cmd = le32(c), cmdsize = le32(c + 4);
        if (cmd == LC_CODE_SIGNATURE) {
            if (cmdsize < 16 || l->lc_sig)
                FAIL("load command %u: a second or short code signature command", i);
            l->lc_sig = (size_t)(c - m);
            l->sig_off = le32(c + 8);
            l->sig_size = le32(c + 12);
        } else if (cmd == LC_SEGMENT_64 && cmdsize >= 72) {
            if (!in_range(size, le64(c + 40), le64(c + 48)))
                FAIL("truncated: segment %s extends past the end of the file", name16(c + 8, nm));
            if (memcmp(c + 8, "__LINKEDIT\0", 11) == 0)
                l->lc_linkedit = (size_t)(c - m), linkedit_end = le64(c + 40) + le64(c + 48);
            else if (memcmp(c + 8, "__TEXT\0", 7) == 0)
                l->text_off = le64(c + 40), l->text_size = le64(c + 48);
        }
    }
    if (!l->lc_sig)
        FAIL("not signed: there is no signature to replace");
    if (!in_range(size, l->sig_off, l->sig_size))
        FAIL("truncated: the code signature extends past the end of the file");
    if (l->sig_off + l->sig_size != size)
        FAIL("data follows the code signature: not a layout vzcaps re-signs");
    if (l->sig_off < end)
        FAIL("the code signature overlaps the load commands");
    if (l->lc_linkedit && linkedit_end != size)
        FAIL("the code signature is not at the end of __LINKEDIT: not a layout vzcaps re-signs");
    if (l->placeholder && l->sig_size == 0)
        return 0;
    return old_signature(m, l->sig_off, l->sig_size, l, err, errlen);
}

/* An unsigned slice with a signature command added (for a universal file whose other slices
 * are signed): the command goes after the others, in the padding before the first section,
 * and points at an empty signature at the end of __LINKEDIT (the file's end, 16-aligned).
 * A new image in *out, or -1 when there is no room for the command or __LINKEDIT is not last. */
static int add_signature_command(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    if (len < 32 || le32(in) != MH_MAGIC_64)
        FAIL("not a 64-bit little-endian Mach-O slice");
    uint32_t ncmds = le32(in + 16);
    uint64_t pos = 32, end, first_data = len, linkedit_end = 0;
    size_t lc_linkedit = 0;
    if (load_commands_end(in, len, &end, err, errlen) != 0)
        return -1;
    for (uint32_t i = 0; i < ncmds; i++) {
        const uint8_t *c = load_command_next(in, &pos, end, i, err, errlen);
        if (!c)
            return -1;
        uint32_t cmd = le32(c), cmdsize = le32(c + 4);
        if (cmd == LC_CODE_SIGNATURE)
            FAIL("already has a signature command");
        if (cmd != LC_SEGMENT_64 || cmdsize < 72)
            continue;
        uint64_t fileoff = le64(c + 40), filesize = le64(c + 48);
        if (!in_range(len, fileoff, filesize))
            FAIL("truncated: a segment extends past the end of the file");
        if (memcmp(c + 8, "__LINKEDIT\0", 11) == 0)
            lc_linkedit = (size_t)(c - in), linkedit_end = fileoff + filesize;
        else if (filesize && fileoff && fileoff < first_data)
            first_data = fileoff;
        uint32_t nsects = le32(c + 64);
        if (nsects > (cmdsize - 72) / 80)
            FAIL("a segment's sections do not fit in its command");
        for (uint32_t k = 0; k < nsects; k++) {
            uint32_t soff = le32(c + 72 + 80 * k + 48);
            if (soff && soff < first_data)
                first_data = soff;
        }
    }
    if (!lc_linkedit || linkedit_end != len)
        FAIL("unsigned, and __LINKEDIT is not at the end of the file: not a layout vzcaps signs");
    if (end + 16 > first_data)
        FAIL("unsigned, and there is no room for a signature command before the first section");
    size_t sig_off = (len + 15) & ~(size_t)15;
    uint8_t *m = calloc(1, sig_off ? sig_off : 1);
    if (!m)
        FAIL("out of memory");
    memcpy(m, in, len);
    put_le32(m + 16, ncmds + 1);
    put_le32(m + 20, le32(in + 20) + 16);
    put_le32(m + end, LC_CODE_SIGNATURE), put_le32(m + end + 4, 16);
    put_le32(m + end + 8, (uint32_t)sig_off), put_le32(m + end + 12, 0);
    uint8_t *seg = m + lc_linkedit;
    put_le64(seg + 48, le64(seg + 48) + (sig_off - len));
    *out = m;
    *out_len = sig_off;
    return 0;
}

static uint32_t n_special(const struct codesign_bind *bind)
{
    return bind && bind->resources ? SLOT_RESOURCES : SLOT_REQUIREMENTS;
}

static size_t superblob_size(const char *ident, uint64_t code_limit, uint32_t nspecial)
{
    uint64_t pages = (code_limit + (1u << PAGE_LOG) - 1) >> PAGE_LOG;
    size_t cd = CD_HEADER + strlen(ident) + 1 + (size_t)(nspecial + pages) * 32;
    return 12 + 2 * 8 + cd + 12; /* header, two index entries, CodeDirectory, empty requirements */
}

/* Writes the superblob for m[0..code_limit) into dst (size bytes, zero-filled past it). */
static void write_superblob(const uint8_t *m, uint64_t code_limit, const struct slice_layout *l, const char *ident,
                            const struct codesign_bind *bind, uint8_t *dst, size_t size, uint8_t cdhash[20])
{
    memset(dst, 0, size);
    uint32_t nspecial = n_special(bind);
    uint64_t pages = (code_limit + (1u << PAGE_LOG) - 1) >> PAGE_LOG;
    size_t ident_len = strlen(ident) + 1;
    uint32_t hash_off = (uint32_t)(CD_HEADER + ident_len + nspecial * 32);
    uint32_t cd_len = hash_off + (uint32_t)pages * 32, total = (uint32_t)superblob_size(ident, code_limit, nspecial);
    uint32_t cd_at = 12 + 16, req_at = cd_at + cd_len;
    put_be32(dst, CSMAGIC_EMBEDDED_SIGNATURE);
    put_be32(dst + 4, total);
    put_be32(dst + 8, 2);
    put_be32(dst + 12, 0), put_be32(dst + 16, cd_at);  /* CSSLOT_CODEDIRECTORY */
    put_be32(dst + 20, 2), put_be32(dst + 24, req_at); /* CSSLOT_REQUIREMENTS */
    uint8_t *req = dst + req_at;
    put_be32(req, CSMAGIC_REQUIREMENTS), put_be32(req + 4, 12), put_be32(req + 8, 0);

    uint8_t *cd = dst + cd_at;
    put_be32(cd, CSMAGIC_CODEDIRECTORY);
    put_be32(cd + 4, cd_len);
    put_be32(cd + 8, CD_VERSION);
    put_be32(cd + 12, CS_ADHOC); /* ad hoc; no hardened runtime, library validation or restrict */
    put_be32(cd + 16, hash_off);
    put_be32(cd + 20, CD_HEADER);
    put_be32(cd + 24, nspecial);
    put_be32(cd + 28, (uint32_t)pages);
    put_be32(cd + 32, code_limit > UINT32_MAX ? 0 : (uint32_t)code_limit);
    cd[36] = 32, cd[37] = 2, cd[38] = 0, cd[39] = PAGE_LOG; /* SHA-256, not a platform binary */
    /* 40 spare2, 44 scatterOffset, 48 teamOffset, 52 spare3: zero */
    put_be64(cd + 56, code_limit > UINT32_MAX ? code_limit : 0);
    put_be64(cd + 64, l->text_off);
    put_be64(cd + 72, l->text_size);
    put_be64(cd + 80, l->filetype == MH_EXECUTE ? CS_EXECSEG_MAIN_BINARY : 0);
    memcpy(cd + CD_HEADER, ident, ident_len);
    /* slot N lives N hashes before the code slots; an unbound slot stays zero */
    digest(req, 12, cd + hash_off - SLOT_REQUIREMENTS * 32);
    if (bind && bind->info_plist)
        memcpy(cd + hash_off - SLOT_INFO * 32, bind->info_plist, 32);
    if (bind && bind->resources)
        memcpy(cd + hash_off - SLOT_RESOURCES * 32, bind->resources, 32);
    for (uint64_t i = 0; i < pages; i++) {
        uint64_t start = i << PAGE_LOG, len = code_limit - start < (1u << PAGE_LOG) ? code_limit - start : (1u << PAGE_LOG);
        digest(m + start, (size_t)len, cd + hash_off + i * 32);
    }
    if (cdhash) { /* the CodeDirectory's SHA-256, cut to 20 bytes as cdhashes are */
        uint8_t full[32];
        digest(cd, cd_len, full);
        memcpy(cdhash, full, 20);
    }
}

static int sign_slice(const uint8_t *in, size_t len, const char *fallback_ident, const struct codesign_bind *bind,
                      bool placeholder, uint8_t **out, size_t *out_len, struct codesign_slice_report *rep, char *err,
                      size_t errlen)
{
    struct slice_layout l;
    if (scan_slice(in, len, &l, placeholder, err, errlen) != 0)
        return -1;
    const char *ident = l.ident[0] ? l.ident : fallback_ident;
    size_t need = superblob_size(ident, l.sig_off, n_special(bind));
    uint64_t space = l.sig_size, grow = 0;
    if (need > space) {
        if (!l.lc_linkedit)
            FAIL("the new signature (%zu bytes) does not fit in the old one (%llu) and there is no __LINKEDIT to grow", need,
                 (unsigned long long)space);
        grow = ((need + 15) & ~(uint64_t)15) - space;
    }
    if (len + grow > UINT32_MAX)
        FAIL("too large to re-sign");
    uint8_t *m = malloc(len + grow);
    if (!m)
        FAIL("out of memory");
    memcpy(m, in, len);
    if (grow) { /* the signature grows at the end of __LINKEDIT: its command and the segment follow */
        uint8_t *sig = m + l.lc_sig, *seg = m + l.lc_linkedit;
        put_le32(sig + 12, (uint32_t)(space + grow));
        uint64_t filesize = le64(seg + 48) + grow, page = l.cputype == 0x0100000cu ? 0x4000 : 0x1000;
        uint64_t vmsize = (filesize + page - 1) & ~(page - 1);
        put_le64(seg + 48, filesize);
        if (le64(seg + 32) < vmsize)
            put_le64(seg + 32, vmsize);
        space += grow;
    }
    uint8_t cdhash[20];
    write_superblob(m, l.sig_off, &l, ident, bind, m + l.sig_off, (size_t)space, cdhash);
    if (rep) {
        rep->old_flags = l.old_flags;
        rep->grew = grow;
        rep->was_unsigned = placeholder;
        snprintf(rep->identifier, sizeof rep->identifier, "%s", ident);
        memcpy(rep->cdhash, cdhash, sizeof cdhash);
        rep->cputype = l.cputype;
        rep->cpusubtype = le32(in + 8);
    }
    *out = m;
    *out_len = len + grow;
    return 0;
}

/* A slice of a universal file: an unsigned one gets a signature command first (when asked). */
static int sign_member(const uint8_t *in, size_t len, const char *ident, const struct codesign_bind *bind, bool add,
                       uint8_t **out, size_t *out_len, struct codesign_slice_report *rep, char *err, size_t errlen)
{
    if (!add || macho_slice_signed(in, len) != 0)
        return sign_slice(in, len, ident, bind, false, out, out_len, rep, err, errlen);
    uint8_t *tmp;
    size_t tmp_len;
    if (add_signature_command(in, len, &tmp, &tmp_len, err, errlen) != 0)
        return -1;
    int rc = sign_slice(tmp, tmp_len, ident, bind, true, out, out_len, rep, err, errlen);
    free(tmp);
    return rc;
}

static uint64_t align_up(uint64_t v, uint32_t log2)
{
    uint64_t a = 1ull << (log2 > 20 ? 20 : log2);
    return (v + a - 1) & ~(a - 1);
}

/* Each slice of a universal file signed on its own, into signed_[i] (sizes[i] bytes; the
 * caller frees them), with its alignment and the offset of the first slice. The slices must
 * lie inside the file, after the header, and not overlap each other. */
static int sign_fat_slices(const uint8_t *in, size_t len, bool wide, uint32_t n, const char *fallback_ident,
                           const struct codesign_bind *bind, bool sign_unsigned_slices, uint8_t **signed_, size_t *sizes,
                           uint32_t *aligns, uint64_t *first_out, struct codesign_report *rep, char *err, size_t errlen)
{
    size_t entry = wide ? 32 : 20;
    uint64_t first = UINT64_MAX;
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const uint8_t *e = in + 8 + i * entry;
        uint64_t off = wide ? be64(e + 8) : be32(e + 8), sz = wide ? be64(e + 16) : be32(e + 12);
        aligns[i] = be32(e + (wide ? 24 : 16));
        if (!in_range(len, off, sz) || off < 8 + (uint64_t)n * entry) {
            snprintf(err, errlen, "truncated: slice %u extends past the end of the file", i);
            rc = -1;
            break;
        }
        /* the slices must not overlap each other */
        for (uint32_t k = 0; k < i && rc == 0; k++) {
            const uint8_t *f = in + 8 + k * entry;
            uint64_t o2 = wide ? be64(f + 8) : be32(f + 8), s2 = wide ? be64(f + 16) : be32(f + 12);
            if (off < o2 + s2 && o2 < off + sz) {
                snprintf(err, errlen, "slices %u and %u overlap", k, i);
                rc = -1;
            }
        }
        if (rc)
            break;
        first = off < first ? off : first;
        char why[300];
        if (sign_member(in + off, (size_t)sz, fallback_ident, bind, sign_unsigned_slices, &signed_[i], &sizes[i],
                        rep ? &rep->slice[i] : NULL, why, sizeof why) != 0) {
            snprintf(err, errlen, "slice %u: %s", i, why);
            rc = -1;
        }
    }
    *first_out = first;
    return rc;
}

/* The signed slices joined under the same header: the first slice where it was, each next
 * one at its alignment. */
static int join_fat_slices(const uint8_t *in, bool wide, uint32_t n, uint8_t *const *signed_, const size_t *sizes,
                           const uint32_t *aligns, uint64_t first, uint8_t **out, size_t *out_len,
                           struct codesign_report *rep, char *err, size_t errlen)
{
    size_t entry = wide ? 32 : 20;
    uint64_t total = first;
    uint64_t offs[CODESIGN_MAX_SLICES];
    for (uint32_t i = 0; i < n; i++) {
        offs[i] = i ? align_up(total, aligns[i]) : first;
        total = offs[i] + sizes[i];
    }
    if (!wide && total > UINT32_MAX) {
        snprintf(err, errlen, "too large for a 32-bit universal header");
        return -1;
    }
    if (!(*out = calloc(1, (size_t)total))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(*out, in, (size_t)first); /* the header and its padding */
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *e = *out + 8 + i * entry;
        if (wide)
            put_be64(e + 8, offs[i]), put_be64(e + 16, sizes[i]);
        else
            put_be32(e + 8, (uint32_t)offs[i]), put_be32(e + 12, (uint32_t)sizes[i]);
        memcpy(*out + offs[i], signed_[i], sizes[i]);
    }
    *out_len = (size_t)total;
    if (rep)
        rep->n_slices = n;
    return 0;
}

int codesign_adhoc_bound(const uint8_t *in, size_t len, const char *fallback_ident, const struct codesign_bind *bind,
                         bool sign_unsigned_slices, uint8_t **out, size_t *out_len, struct codesign_report *rep, char *err,
                         size_t errlen)
{
    /* one notion of a well-formed file: what the project's reader refuses is not signed */
    static struct macho_file mf;
    char why[300];
    if (macho_parse(in, len, &mf, why, sizeof why) != 0)
        FAIL("%s", why);
    if (len >= 4 && le32(in) == MH_MAGIC_64) {
        if (rep)
            rep->n_slices = 1;
        return sign_slice(in, len, fallback_ident, bind, false, out, out_len, rep ? &rep->slice[0] : NULL, err, errlen);
    }
    if (len < 8 || (be32(in) != FAT_MAGIC && be32(in) != FAT_MAGIC_64))
        FAIL("not a Mach-O file");
    bool wide = be32(in) == FAT_MAGIC_64;
    uint32_t n = be32(in + 4);
    size_t entry = wide ? 32 : 20;
    if (n == 0 || n > CODESIGN_MAX_SLICES || !in_range(len, 8, (uint64_t)n * entry))
        FAIL("universal header claims %u slices (1..%d supported)", n, CODESIGN_MAX_SLICES);
    uint8_t *signed_[CODESIGN_MAX_SLICES] = {0};
    size_t sizes[CODESIGN_MAX_SLICES];
    uint32_t aligns[CODESIGN_MAX_SLICES];
    uint64_t first = UINT64_MAX;
    int rc = sign_fat_slices(in, len, wide, n, fallback_ident, bind, sign_unsigned_slices, signed_, sizes, aligns, &first,
                             rep, err, errlen);
    if (rc == 0)
        rc = join_fat_slices(in, wide, n, signed_, sizes, aligns, first, out, out_len, rep, err, errlen);
    for (uint32_t i = 0; i < n; i++)
        free(signed_[i]);
    return rc;
}
