/* The one record of what vzcaps made: the test every command uses before it replaces or removes
 * something because vzcaps made it (packaging/uninstall.sh and scripts/release run the same test
 * in shell, kept in agreement by tests/dist/test_record.py, which runs one table through both).
 * Never: takes an entry for vzcaps's by its name, its inode alone, or a marker elsewhere than
 * where docs/safety.md (rule 4) says it stands. */
#ifndef VZCAPS_RECORD_H
#define VZCAPS_RECORD_H

#include <stdbool.h>
#include <stddef.h>

/* An entry as vzcaps records it when it has made it, taken without following a link: device,
 * inode, modification time to the nanosecond (an inode is reused at once on ext4 and APFS; its
 * modification time to the nanosecond is not), and the SHA-256 of its content where that is
 * cheap: a regular file's bytes, a link's target and a newline (as readlink(1) prints it); a
 * directory, FIFO or device has none ("-"). */
struct vzcaps_made {
    unsigned long long dev, ino;
    long long sec;
    long nsec;
    char sha256[65];
};

/* A device number as the record keeps it, which is how BSD `stat -f %d` prints it (the shell
 * scripts compare with that): a 32-bit dev_t (macOS's is int32_t) as unsigned 32-bit (file_cmds
 * stat.c format1: st_dev's default output is FMTF_UNSIGNED, and a 4-byte field is cast to
 * u_int32_t), so a device with bit 31 set is not sign-extended; a wider one as it is (Linux's
 * dev_t is unsigned 64-bit, as GNU `stat -c %d` prints it). raw: the dev_t converted to
 * unsigned long long; width: sizeof the dev_t. */
unsigned long long vzcaps_made_dev(unsigned long long raw, size_t width);
/* The entry at name in dirfd (AT_FDCWD: name is a path). hash false: "-" for every entry.
 * 0, or -1 with errno (the entry is missing or unreadable). */
int vzcaps_made_stat(int dirfd, const char *name, bool hash, struct vzcaps_made *m);
/* The record's fields "DEV INO SEC.NNNNNNNNN SHA256|-" (no newline), on the heap (NULL: out of
 * memory). */
char *vzcaps_made_format(const struct vzcaps_made *m);
/* Whether fields (as vzcaps_made_format writes them; a record without the hash, from before it
 * had one, compares the rest) name the entry at name in dirfd as it is now: a different device,
 * inode, modification time or content, a missing entry or malformed fields say no. */
bool vzcaps_made_this(int dirfd, const char *name, const char *fields);

/* A record kept beside what it names (prepare's .NAME.vzcaps-prepared, the tap's record): a
 * regular file, not a link, of at most 64 KiB, whose first line is exactly first (the maker,
 * "vzcaps prepare") and whose second line is "copy FIELDS". Whether recname in dirfd is such a
 * record and names the entry at name as it is now. This is "vzcaps made this entry", for files,
 * directories and links alike. */
bool vzcaps_made_by_record(int dirfd, const char *name, const char *recname, const char *first);
/* The text of such a record, on the heap: first, "copy FIELDS" of the entry at name, then
 * extra (lines ending in a newline, or NULL). NULL with errno when the entry cannot be read. */
char *vzcaps_record_text(int dirfd, const char *name, const char *first, const char *extra);

/* Where a marker stands in a text output vzcaps wrote (never anywhere else in it). */
enum vzcaps_mark_at {
    VZCAPS_MARK_LINE1 = 0,      /* the first line is the marker (Markdown, a record's maker) */
    VZCAPS_MARK_AFTER_XML_DECL, /* the line after an XML declaration (SVG), else the first */
    VZCAPS_MARK_AFTER_DOCTYPE,  /* line 3: after the XML declaration and the DOCTYPE (plists) */
    VZCAPS_MARK_IN_HEAD,        /* anywhere in the first 4096 bytes: the verify cache only */
};
/* Whether the first n bytes of a file (no NUL among them) carry marker where at says. A line
 * is compared whole: "MARKER" and nothing else between its start and "\n". */
bool vzcaps_marked_text(const char *head, size_t n, const char *marker, enum vzcaps_mark_at at);
/* The same for the regular file name in dirfd (AT_FDCWD: a path), opened without following a
 * link or blocking, its first 4096 bytes read. */
bool vzcaps_marked_file(int dirfd, const char *name, const char *marker, enum vzcaps_mark_at at);

#endif
