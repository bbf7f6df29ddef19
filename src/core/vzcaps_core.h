/* vzcaps core: every decision the library and the command make, as pure C11.
 * Owns: GPU family names, the chip table, settings parsing, config files, resolution, answer().
 * Never: touches the Objective-C runtime, the file system, the environment or the heap itself. */
#ifndef VZCAPS_CORE_H
#define VZCAPS_CORE_H

#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define VZCAPS_VERSION "0.1.0"
/* A string both of vzcaps's own binaries carry, so that inspect does not mistake them for the
 * Metal clients whose strings they quote. */
#define VZCAPS_SELF_MARKER "@(#)vzcaps-self"

/* ---- Metal GPU families (METAL-FACTS: "Metal GPU families") ---- */

#define VZCAPS_APPLE_FIRST 1001
#define VZCAPS_APPLE_LAST 1010

/* Every known family value, ascending; *count receives the length. */
const int64_t *vzcaps_family_all(size_t *count);
/* Display name such as "Apple7" or "Metal3"; NULL for an unknown value. */
const char *vzcaps_family_name(int64_t value);
bool vzcaps_family_is_apple(int64_t value);
/* Parses a family by name ("apple7", "Metal3", case-insensitive) or by plain decimal
 * number. Returns 0 and sets *out, or -1 when the text is not a known family. */
int vzcaps_family_parse(const char *text, int64_t *out);

/* ---- chips (METAL-FACTS: "So the real family of a host is a function of its chip") ---- */

struct vzcaps_chip {
    bool known;                      /* false: no safe answer for this chip */
    char series;                     /* 'M' (M1 ... M5) or 'A' (A18, A19); 0 when unknown */
    int generation;                  /* the number after the series letter; 0 when unknown */
    int64_t apple_family;            /* real Apple family, 0 when unknown */
    uint64_t max_threadgroup_memory; /* documented maximum, 0 when unknown */
    bool guest;                      /* brand carried the " (Virtual)" suffix */
    char name[48];                   /* canonical "Apple M2 Pro", or the brand as given */
};

/* Reads a CPU brand string ("Apple M4 Max (Virtual)"). Unrecognised brands give
 * known = false (not an error). Never fails. */
void vzcaps_chip_from_brand(const char *brand, struct vzcaps_chip *out);
/* Where the chip table's row for a known chip comes from (a dated source); NULL if unknown. */
const char *vzcaps_chip_source(const struct vzcaps_chip *chip);
/* Whether the chip has a non-Apple family (Mac, Common, MacCatalyst, Metal3/4). */
bool vzcaps_chip_has_family(const struct vzcaps_chip *chip, int64_t family);

/* ---- settings: what was asked for, before any host fact is applied ---- */

enum vzcaps_family_mode { VZCAPS_FAMILY_UNSET, VZCAPS_FAMILY_OFF, VZCAPS_FAMILY_AUTO, VZCAPS_FAMILY_NUMBER };

enum vzcaps_key {
    VZCAPS_KEY_APPLE_FAMILY_MAX,
    VZCAPS_KEY_MAX_THREADGROUP_MEMORY,
    VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE,
    VZCAPS_KEY_EXTRA_FAMILIES,
    VZCAPS_KEY_HOST_CHIP,
    VZCAPS_KEY_UNSAFE_BEYOND_HARDWARE,
    VZCAPS_KEY_INHERIT,
    VZCAPS_KEY_LOG,
    VZCAPS_KEY_CALLERS,
    VZCAPS_KEY_STOCK_CALLERS,
    VZCAPS_KEY_COUNT
};

#define VZCAPS_MAX_EXTRA 12
/* Paths longer than this are refused ("too long"), never cut: macOS's PATH_MAX is 1024, so
 * open(2) there fails on a longer path anyway. */
#define VZCAPS_PATH_MAX 1024
#define VZCAPS_ORIGIN_LEN (VZCAPS_PATH_MAX + 96) /* "file:line: key" or a variable name */
/* callers / stock_callers: blank-separated globs of image base names, at most this long */
#define VZCAPS_GLOBS_LEN 256
/* PyTorch's MPS backend (libtorch_cpu) switches correctness workarounds and Metal Performance
 * Primitives kernels on Apple7..10 answers (METAL-FACTS, "More client facts"): by default its
 * calls get the stock answers. */
#define VZCAPS_DEFAULT_STOCK_CALLERS "libtorch_cpu.dylib libtorch_cpu.so"
#define VZCAPS_MAX_THREADGROUP_LIMIT 1048576ull          /* accepted range of the value */
#define VZCAPS_MAX_WORKING_SET_LIMIT (1ull << 50)         /* 1 PiB */

struct vzcaps_settings {
    unsigned set;                  /* bit (1 << vzcaps_key) per key given */
    enum vzcaps_family_mode family_mode;
    int64_t family_max;
    uint64_t max_threadgroup_memory;
    uint64_t recommended_working_set_size;
    int64_t extra[VZCAPS_MAX_EXTRA];
    size_t n_extra;
    char host_chip[128];
    bool unsafe, inherit, quiet, verbose; /* log: quiet, normal (neither) or verbose */
    bool inherit_matching;                /* inherit = matching (inherit is then false) */
    char callers[VZCAPS_GLOBS_LEN], stock_callers[VZCAPS_GLOBS_LEN]; /* normalised: single blanks; "" = none */
    /* where each key came from, e.g. "VZCAPS_APPLE_FAMILY_MAX" or "vzcaps.conf:4" */
    char origin[VZCAPS_KEY_COUNT][VZCAPS_ORIGIN_LEN];
    /* the top-level log_file of the config file, as written (checked: vzcaps_log_file_check);
     * "" when none */
    char log_file[VZCAPS_PATH_MAX + 1];
    char log_file_origin[VZCAPS_ORIGIN_LEN];
};

/* Config-file spelling of a key ("apple_family_max"); NULL when out of range. */
const char *vzcaps_key_name(enum vzcaps_key key);
/* Looks a config-file key up; -1 when unknown. */
int vzcaps_key_from_name(const char *name);

/* Parses one value into s (a later value for the same key replaces an earlier one).
 * Returns 0, or -1 with a reason ("not a number: ...") in err. origin is recorded. */
int vzcaps_settings_set(struct vzcaps_settings *s, enum vzcaps_key key, const char *value,
                        const char *origin, char *err, size_t errlen);

/* ---- config files ---- */

#define VZCAPS_CONFIG_MAX_LINE 1024
#define VZCAPS_CONFIG_MAX_SIZE 65536

/* Parses a whole config file and applies the chosen section to *s.
 * Section: profile if non-NULL (must exist), else the first whose match fits exe,
 * else [default], else none. Any error rejects the whole file: returns -1 and writes
 * "file:line: reason" to err for every bad line ("; " between them, then "; and N more bad
 * lines" for those that do not fit in errlen), *s untouched. On success the chosen section's name is
 * copied to section (empty when none). */
int vzcaps_config_apply(const char *text, size_t len, const char *file, const char *exe,
                        const char *profile, struct vzcaps_settings *s, char *section,
                        size_t section_len, char *err, size_t errlen);

/* Where the config file is: one order for the library, the command, the man page and the
 * docs. VZCAPS_CONFIG alone when it is set (the file must then exist); otherwise the first of
 * these that exists:
 *   $XDG_CONFIG_HOME/vzcaps/vzcaps.conf, when XDG_CONFIG_HOME is an absolute path (the XDG
 *     rule: a relative or empty one is ignored), else $HOME/.config/vzcaps/vzcaps.conf when
 *     HOME is an absolute path (a relative or empty HOME is ignored the same way);
 *   ROOT/opt/homebrew/etc/vzcaps.conf  ($(brew --prefix)/etc on Apple silicon);
 *   ROOT/usr/local/etc/vzcaps.conf     ($(brew --prefix)/etc on Intel, and the usual place).
 * root is prefixed to the system paths: "" (or NULL) in use, a directory in tests. Writes
 * the candidates to paths in order and returns how many (1..VZCAPS_CONFIG_SEARCH_MAX), with
 * *named telling whether VZCAPS_CONFIG chose the file; or -1 with the reason in why when a
 * path would be longer than VZCAPS_PATH_MAX (refused, never cut) or VZCAPS_CONFIG is empty. */
#define VZCAPS_CONFIG_SEARCH_MAX 3
#define VZCAPS_CONFIG_ORDER_TEXT                                                                      \
    "$VZCAPS_CONFIG if set; else the first that exists of $XDG_CONFIG_HOME/vzcaps/vzcaps.conf (when " \
    "XDG_CONFIG_HOME is absolute; else ~/.config/vzcaps/vzcaps.conf when HOME is), /opt/homebrew/etc/vzcaps.conf, "      \
    "/usr/local/etc/vzcaps.conf"
int vzcaps_config_search(const char *const *envp, const char *root, char paths[][VZCAPS_PATH_MAX + 1], bool *named,
                         char *why, size_t len);

/* Glob with '*' and '?' over a whole string. */
bool vzcaps_glob_match(const char *pattern, const char *text);
/* Whether one of the blank-separated globs (a match value, a callers list) fits name (NULL: no). */
bool vzcaps_globs_fit(const char *globs, const char *name);

/* ---- resolution against host facts ---- */

#define VZCAPS_MAX_NOTES 10
/* A note holds a path (VZCAPS_PATH_MAX) and its reason; values quoted in notes are clipped
 * explicitly (vzcaps_clip), so a note never ends mid-value without saying so. */
#define VZCAPS_NOTE_LEN (VZCAPS_PATH_MAX + 400)

enum vzcaps_state {
    VZCAPS_STOCK_UNCONFIGURED, /* nothing asked: silent */
    VZCAPS_STOCK_OFF,          /* explicitly off: silent */
    VZCAPS_STOCK_REFUSED,      /* configuration rejected or unsafe to apply: one log line */
    VZCAPS_ENABLED
};

struct vzcaps_profile {
    enum vzcaps_state state;
    bool invalid;                    /* refused because the configuration itself is wrong */
    int64_t apple_family_max;        /* 0 when Apple families are left stock */
    uint64_t max_threadgroup_memory; /* floor, 0 = none */
    uint64_t recommended_working_set_size; /* floor, 0 = none */
    int64_t extra[VZCAPS_MAX_EXTRA];
    size_t n_extra;
    bool inherit, quiet, unsafe;
    bool verbose;                    /* log = verbose: the start-up line too, as before the first device */
    bool inherit_matching;           /* inherit = matching: only children a section matches keep it */
    /* caller scope: whose calls get the answers above (see vzcaps_caller_in_scope) */
    char callers[VZCAPS_GLOBS_LEN], stock_callers[VZCAPS_GLOBS_LEN];
    bool scoped;                     /* false: every caller is in scope, no need to ask who calls */
    bool scope_default;              /* callers "*" and the built-in stock callers */
    struct vzcaps_chip chip;
    char chip_origin[VZCAPS_ORIGIN_LEN]; /* how the chip was found */
    char notes[VZCAPS_MAX_NOTES][VZCAPS_NOTE_LEN];
    size_t n_notes;
};

struct vzcaps_host {
    const char *brand;        /* detected brand string, NULL when none */
    const char *brand_origin; /* e.g. "machdep.cpu.brand_string" */
    uint64_t physical_memory; /* bytes, 0 when unknown */
    int translated;           /* 1: an x86_64 process under Rosetta (sysctl.proc_translated), whose
                                 brand string does not name the chip; 0 native or unknown */
    uint64_t (*physical_memory_of)(void); /* or NULL: asked when physical_memory is 0 and it is
                                             needed (only a working-set floor needs it) */
};

/* Applies the settings to the host facts. Never fails: refusals set state and notes. */
void vzcaps_profile_resolve(const struct vzcaps_settings *s, const struct vzcaps_host *host,
                            struct vzcaps_profile *p);
/* Marks p refused with one reason (used for parse and file errors). */
void vzcaps_profile_refuse(struct vzcaps_profile *p, const char *reason);
/* One-line human summary (without the "vzcaps: " prefix). */
void vzcaps_profile_describe(const struct vzcaps_profile *p, const char *exe, char *buf, size_t len);

/* ---- the answer ---- */

enum vzcaps_query {
    VZCAPS_Q_SUPPORTS_FAMILY,            /* arg = family, stock = 0/1 */
    VZCAPS_Q_MAX_THREADGROUP_MEMORY,     /* stock = bytes */
    VZCAPS_Q_RECOMMENDED_WORKING_SET     /* stock = bytes */
};

uint64_t vzcaps_answer(const struct vzcaps_profile *p, enum vzcaps_query q, int64_t arg, uint64_t stock);
/* Whether a call made from the image with base name image ("" when it cannot be told) gets
 * the profile's answers: never when a stock_callers glob fits it (checked first), else when a
 * callers glob does. The library asks it for each image as it loads (and, once some image is
 * out of scope, per page of calling code, cached). */
bool vzcaps_caller_in_scope(const struct vzcaps_profile *p, const char *image);
/* Which rule decides for image: "stock_callers", "callers" or "not in callers". */
const char *vzcaps_caller_rule(const struct vzcaps_profile *p, const char *image);
/* The supportsFamily: answers of an in-scope call whose stock answer is NO, computed once for
 * the library's hooks: table[i] is vzcaps_answer(p, VZCAPS_Q_SUPPORTS_FAMILY,
 * VZCAPS_FAMILY_TABLE_FIRST + i, 0); every family value outside the table is answered with
 * the stock answer (no known family lies outside it). */
#define VZCAPS_FAMILY_TABLE_FIRST 1001
#define VZCAPS_FAMILY_TABLE_LEN 4002 /* 1001 (Apple1) .. 5002 (Metal4) */
void vzcaps_family_table(const struct vzcaps_profile *p, unsigned char table[VZCAPS_FAMILY_TABLE_LEN]);
/* Whether the hook for q is needed at all under p. */
bool vzcaps_query_needed(const struct vzcaps_profile *p, enum vzcaps_query q);

/* ---- the whole configuration step shared by the library and the command ---- */

struct vzcaps_inputs {
    const char *const *envp;  /* NULL-terminated "NAME=value" array */
    const char *exe;          /* executable base name */
    const char *preload_var;  /* LD_PRELOAD / DYLD_INSERT_LIBRARIES: set twice is refused; NULL: not checked */
    /* NULL-terminated pairs {variable, label}: a setting read from that variable is reported
     * as coming from the label (the command passes its options as variables, and says
     * "--chip" rather than "VZCAPS_HOST_CHIP"); NULL: none */
    const char *const *labels;
    /* reads a whole file; returns 0, or -1 with a reason in err. absent: set *missing. */
    int (*read_file)(void *ctx, const char *path, char *buf, size_t cap, size_t *len,
                     bool *missing, char *err, size_t errlen);
    void *read_ctx;
    struct vzcaps_host host;
    const char *sys_root;     /* vzcaps_config_search's root: NULL in use, a directory in tests */
};

struct vzcaps_config_result {
    struct vzcaps_profile profile;
    char config_path[VZCAPS_PATH_MAX + 1]; /* the file found (read, or refused), empty when none */
    char config_error[VZCAPS_NOTE_LEN];    /* why that file was refused, empty when it was used */
    char searched[VZCAPS_CONFIG_SEARCH_MAX][VZCAPS_PATH_MAX + 1]; /* the search order, as looked at */
    int n_searched;
    char section[64];        /* chosen section, empty when none */
    char env_prefix[16];     /* "VZCAPS_", "TART_METAL_", "LUME_METAL_" or "" */
    /* the stats log (VZCAPS_LOG_FILE, which wins, else the config file's top-level log_file),
     * ~/ expanded; "" when off (neither set, VZCAPS_LOG_FILE empty, or ~/ without an absolute
     * HOME: then a note says so). Set whatever the profile's state, but for a configuration
     * refused before the file was read. */
    char log_file[VZCAPS_PATH_MAX + 1];
    char log_file_origin[VZCAPS_ORIGIN_LEN]; /* "VZCAPS_LOG_FILE" or "FILE:LINE: log_file" */
};

/* Static scratch the caller provides for reading the file (VZCAPS_CONFIG_MAX_SIZE + 1). */
void vzcaps_configure(const struct vzcaps_inputs *in, char *file_buf, size_t file_cap,
                      struct vzcaps_config_result *out);
/* Value of name in envp, or NULL. */
/* strncmp(s, prefix, n) == 0 for a prefix of at least n bytes, and strchr, by hand: the
 * library's constructor reads the environment with them, and every libc function it calls is
 * a symbol ld.so looks up (about 800 instructions) in each process the library starts in */
bool vzcaps_has_prefix(const char *s, const char *prefix, size_t n);
const char *vzcaps_find_char(const char *s, char c);
bool vzcaps_streq(const char *a, const char *b); /* strcmp(a, b) == 0 */
const char *vzcaps_env_get(const char *const *envp, const char *name);
bool vzcaps_env_is(const char *entry, const char *name); /* entry is "name=..." */

/* VZCAPS_PROGRAM=PID-PPID:NAME: the name the launcher hands the library for a #! script, whose
 * process the library sees as its interpreter (the section's match meets NAME, the stats record
 * names NAME; docs/config.md), tied to the script's process by its pid and its parent's (a
 * later process that reuses the pid has another parent). 1 with NAME in name when they are
 * pid and ppid (the script's own process, before and after an exec); -1 when it is another
 * process's (a child of it: stock, as every child); 0 when value is absent or malformed, or
 * another process's written PID-PPID+NAME (the script's process keeps the injection in its
 * children, which are configured by their own names). A PID without its PPID is another's. */
int vzcaps_program_handed(const char *value, long long pid, long long ppid, char *name, size_t len);
/* The launcher writes PID as this many zeros ("0000000000:NAME": it cannot know the pid of a
 * line a shell runs); vzcaps_program_handed then returns 2, and the first process that reads it
 * claims it: PID-PPID:NAME in its environment. */
#define VZCAPS_PROGRAM_CLAIM 10
/* Whether an environment entry belongs to vzcaps: any name starting with VZCAPS_,
 * TART_METAL_ or LUME_METAL_ (whatever its length, with or without '='). Children that
 * start stock see none of them. */
bool vzcaps_env_is_ours(const char *entry);

/* Keeps children stock: removes every entry of ours (vzcaps_env_is_ours) from the
 * NULL-terminated array env, compacting it in place, and our library from every entry of
 * preload_var (vzcaps_strip_library_facts; marked: the first entry's facts); an entry left empty
 * goes too. A changed preload entry is written into memory from alloc(ctx, bytes) (the core
 * itself never allocates). Any number, length or duplication of entries. 0, or -1 when alloc
 * failed (env is then unchanged past the entry being rewritten, and still NULL-terminated). */
int vzcaps_env_strip(char **env, const char *preload_var, const char *seps, const char *libname, const bool *marked,
                     size_t n_marked, void *(*alloc)(void *ctx, size_t bytes), void *ctx);

/* ---- selective inheritance (inherit = matching): the library passes itself on only to a
 * child that a config section's match fits and that has a slice the library loads ---- */

/* What an executable's first bytes say about the slices it has, for the library's question
 * "which slice will this child run": an ELF file of elf_machine (the rig's own machine, 0 on
 * macOS) is NATIVE; a Mach-O (thin, or fat with at most 32 slices all within the n bytes)
 * is read for its arm64 and arm64e slices; anything else (a script, a truncated or unknown
 * file) is NONE_KNOWN. Pass at least VZCAPS_SLICES_HEAD bytes when the file has them. */
#define VZCAPS_SLICES_HEAD 1024
enum vzcaps_slices {
    VZCAPS_SLICES_NONE_KNOWN,  /* unreadable, a script, or not an executable vzcaps reads */
    VZCAPS_SLICES_ARM64E_ONLY, /* Mach-O whose only Apple-silicon slice is arm64e (Apple's programs) */
    VZCAPS_SLICES_UNIVERSAL,   /* a fat Mach-O holding both arm64e and arm64 slices */
    VZCAPS_SLICES_ARM64,       /* an arm64 slice and no arm64e one (thin, or fat with x86_64) */
    VZCAPS_SLICES_NATIVE,      /* the rig: an ELF executable of the library's own machine */
};
enum vzcaps_slices vzcaps_slices_of(const unsigned char *head, size_t n, unsigned elf_machine);
/* Every section's match patterns in a config file (already accepted by vzcaps_config_apply),
 * blank-separated, into out: the length, or -1 when they do not fit (refused, never cut). */
int vzcaps_config_matches(const char *text, size_t len, char *out, size_t outlen);
/* Keep or strip for a child started as path with argv0: KEEP only when a pattern of matches
 * fits the base name of argv0 (of path when argv0 is empty: the name the child's own library
 * picks its section by) and the child has a slice the library loads (NATIVE or ARM64; arm64e
 * only or universal only when library_has_arm64e). why says which rule decided (NULL or len 0:
 * nothing is formatted, as the library asks in exec paths). */
enum { VZCAPS_CHILD_STRIP, VZCAPS_CHILD_KEEP };
int vzcaps_child_decision(const char *path, const char *argv0, const char *matches, enum vzcaps_slices slices,
                          bool library_has_arm64e, char *why, size_t len);
/* The environment a child gets. envp: the array the caller gives the child; saved: the
 * entries of ours (vzcaps_env_is_ours) this process started with; lib_path: our library as
 * the preload variable named it. strip: envp without any entry of ours and without our
 * library in its preload entry (by name or lib_elem; an entry left empty goes). keep: envp's
 * other entries, our saved entries, and the preload entry with our library after its other
 * libraries (or one naming only ours). *out is envp itself when nothing changes (strip of an
 * array with nothing of ours), else an array built in mem: returns 0, or the bytes needed when
 * cap is smaller (nothing written). The arrays and strings of envp and saved are never changed. */
struct vzcaps_child_env_in {
    char *const *envp;
    const char *const *saved;
    size_t n_saved;
    const char *preload_var, *seps, *libname, *lib_path;
    const bool *lib_elem; /* lib_elem[k]: the first preload entry's k-th element is our library by */
    size_t n_lib;         /* what the file is, whatever its name (vzcaps_strip_library_facts) */
};
long vzcaps_child_env(const struct vzcaps_child_env_in *in, bool keep, void *mem, size_t cap, char *const **out);

/* ---- trust in a file (sudo/ssh rules): the owner is the real user or root, and neither
 * group nor others may write it. 0, or -1 with "not trusted: ..." in why. ---- */
int vzcaps_file_trust(unsigned long owner, unsigned long mode, unsigned long uid, char *why, size_t len);

/* ---- launchers: executables that only re-execute the real program with the same
 * environment (python.org and Homebrew framework builds of Python). Given the real path of
 * this executable, writes the path of the program it re-executes and returns true when the
 * path has a launcher's shape; the caller confirms that file exists. Such a process passes
 * the injection on unchanged: the profile applies in the program it starts. ---- */
bool vzcaps_launcher_target(const char *exe_path, char *target, size_t len);

/* ---- stock means stock (stock.c): the environment of a run that must be stock ---- */

/* The number of ':'-separated entries in a PATH value (empty ones count; "" is one). */
size_t vzcaps_path_entries(const char *path);
/* The environment a stock child gets (doctor --bundle's, bench's, probe's and verify's stock
 * runs): envp without any entry of ours (vzcaps_env_is_ours), without our library (base name
 * libname, or an element lib_elem marks) in the preload entry (its other libraries kept; an
 * entry left empty goes), and with PATH without the entries that are vzcaps directories (a shim
 * directory, or one holding a vzcaps command under another name), so a program named on it
 * resolves to the real one. Which entries those are is the caller's fact: shim_dir[i] for the i-th entry
 * of the first PATH entry's value (n_path of them; vzcaps_path_entries); a PATH left with no
 * entry goes (the system's default search). A later duplicate of PATH or of the preload entry
 * goes (the first speaks). *out is built in mem: 0, or the bytes needed when cap is smaller
 * (nothing written). envp and its strings are never changed. */
struct vzcaps_stock_env_in {
    char *const *envp;
    const bool *shim_dir;
    size_t n_path;
    const char *preload_var, *seps, *libname;
    /* lib_elem[k]: the k-th element of the first preload entry (vzcaps_strip_library_facts) is
     * our library by what the file is; n_lib of them (NULL, 0: the name rule alone) */
    const bool *lib_elem;
    size_t n_lib;
};
long vzcaps_stock_env(const struct vzcaps_stock_env_in *in, void *mem, size_t cap, char *const **out);

/* ---- how macOS starts a process (launch.c): decisions over facts the caller gathered ---- */

/* Whether SIP protects the program at path (under /bin, /sbin, /usr/bin, /usr/sbin,
 * /usr/libexec or /System; components compared without case, "//" and "/./" collapsed):
 * macOS removes DYLD_* variables when it starts one. A relative path is never protected
 * (resolve it first). The list, as text for messages: vzcaps_protected_dirs_text(). */
bool vzcaps_path_protected(const char *path);
const char *vzcaps_protected_dirs_text(void);

/* A #! line as xnu's exec_shell_imgact reads it (kern_exec.c:605-760): within the first
 * VZCAPS_SHEBANG_MAX bytes of the file (the page is zero-filled past its end), ended by '\n' or
 * '#', words split at spaces and tabs, cut at a NUL byte (word 0 the interpreter). */
#define VZCAPS_SHEBANG_MAX 512
struct vzcaps_shebang {
    char text[VZCAPS_SHEBANG_MAX]; /* the words, each ending in NUL */
    uint16_t off[VZCAPS_SHEBANG_MAX / 2];
    size_t n_words;
};
/* Parses the first n bytes of a file (pass up to VZCAPS_SHEBANG_MAX of them; fewer means the
 * file ends there). 0: no "#!", not a script; 1: parsed; -1: the kernel answers ENOEXEC (no
 * interpreter; no '\n' or '#' within the 512 bytes, as in a file that is only "#!/path"), why. */
int vzcaps_shebang_parse(const char *head, size_t n, struct vzcaps_shebang *sb, char *why, size_t len);
/* Word i, or NULL past the last. */
const char *vzcaps_shebang_word(const struct vzcaps_shebang *sb, size_t i);
/* Which of xnu's image activators claims a file by its first n bytes (kern_exec.c:2417-2423,
 * execsw: a thin Mach-O MH_EXECUTE, a fat file with FAT_MAGIC in its order, then #!; elf: the
 * platform's kernel runs ELF files too, as the rig's does): none is ENOEXEC. */
enum { VZCAPS_EXEC_NONE, VZCAPS_EXEC_IMAGE, VZCAPS_EXEC_SCRIPT };
int vzcaps_exec_claims(const unsigned char *head, size_t n, bool elf);
/* The next entry of the PATH value at *p (NULL: none left): the directory (an empty entry is
 * ".", the current directory, as Libc's and glibc's execvp read it) and its length. */
bool vzcaps_path_entry(const char **p, const char **dir, size_t *len);
/* The PATH execvp searches: path, or when it is unset Libc's _PATH_DEFPATH "/usr/bin:/bin"
 * (darwin; paths.h:65) or glibc's "/bin:/usr/bin". Set but empty: the current directory. */
const char *vzcaps_search_path(const char *path, bool darwin);
/* What execvp and posix_spawnp do after exec of one PATH candidate failed with err (exists: the
 * candidate's stat succeeds), by Libc's rules (darwin: gen/FreeBSD/exec.c:228-301,
 * sys/posix_spawn.c:140-199: ELOOP and ENAMETOOLONG go on, a denied file is remembered) or
 * glibc's (posix/execvpe.c): go on to the next entry, run the candidate with /bin/sh (ENOEXEC),
 * or stop with err. After the last entry: EACCES if *eacces, else ENOENT. */
enum { VZCAPS_SEARCH_NEXT, VZCAPS_SEARCH_SHELL, VZCAPS_SEARCH_STOP };
int vzcaps_search_step(int err, bool exists, bool darwin, bool *eacces);
/* argv[0] of that /bin/sh: Libc keeps the caller's (its "sh" when argv is empty), glibc's is
 * "/bin/sh". */
const char *vzcaps_search_sh_argv0(const char *argv0, bool darwin);
/* Whether path is the system's env, /usr/bin/env ("//" and "." components aside; case
 * ignored, as macOS's default file system does): by path, never by name. */
bool vzcaps_path_is_system_env(const char *path);
/* For an interpreter that is the system's env: 1 with *name_word the word naming the program
 * env starts (the words after it are its arguments), as BSD env's getopt("-0C:iP:S:u:v") reads
 * the line (shell_cmds env.c:88; -S takes the next word, already split; -- ends the options);
 * 0 when the interpreter is not env; -1 when starting the program directly would not be the
 * same (another option, a long option: env has none and stops with its usage, VAR=value,
 * quotes, escapes or $ after -S), why says; -2 when env is given no program (it would start the
 * script itself, over and over). */
int vzcaps_shebang_env(const struct vzcaps_shebang *sb, size_t *name_word, char *why, size_t len);

/* Whether a POSIX shell reads word, as the first word of a command, as an assignment
 * (NAME=value, NAME a POSIX name): a program word like that is printed as a path instead. */
bool vzcaps_shell_word_is_assignment(const char *word);

/* `csrutil status` output: enabled, disabled or unknown (a custom configuration, no output). */
enum { VZCAPS_SIP_UNKNOWN = -1, VZCAPS_SIP_DISABLED = 0, VZCAPS_SIP_ENABLED = 1 };
int vzcaps_sip_parse(const char *text);
/* Whether a workload may keep the injection in its children (--inherit, inherit = yes): on
 * macOS a library without an arm64e slice reaching an arm64e child makes dyld terminate it.
 * OK: nothing to say; NOTE: allowed, why says what remains; REFUSED: why says why, and
 * anyway (the user accepted it) turns it into NOTE. */
enum { VZCAPS_INHERIT_OK, VZCAPS_INHERIT_NOTE, VZCAPS_INHERIT_REFUSED };
int vzcaps_inherit_decision(bool macos, int sip, bool library_has_arm64e, bool anyway, char *why, size_t len);
/* What a guest answers stock (METAL-FACTS.md): the highest Apple family it supports, and its
 * threadgroup memory. */
#define VZCAPS_GUEST_APPLE_MAX 1005
#define VZCAPS_GUEST_THREADGROUP 32768
/* Why a program with profile p would run stock (check --strict): refused, off, nothing
 * configured, a profile that changes no answer (none above what the guest answers stock), or callers that leave every call out of scope;
 * NULL when the library changes answers for it. */
const char *vzcaps_stock_reason(const struct vzcaps_profile *p, char *why, size_t len);
/* What an arm64e program at path is, for a message ("Apple's Command Line Tools Python", "a
 * system program"), or NULL when it is none of the known kinds. */
const char *vzcaps_arm64e_client(const char *path);

/* The value (n bytes) of a com.apple.quarantine attribute, "flags;time;agent;uuid", described
 * in out ("quarantined (downloaded by Safari, flags 0083)"); any value, even malformed, means
 * the file is quarantined: returns true. */
bool vzcaps_quarantine_describe(const char *value, size_t n, char *out, size_t len);

/* ---- output: one documented escape form for every human-readable line ----
 * Control characters (C0), DEL, C1 controls (U+0080..U+009F) and bytes that are not valid
 * UTF-8 become \xNN per byte; a backslash becomes \\. Valid printable UTF-8 passes.
 * Writes at most outlen bytes including the NUL; returns the length the whole escaped text
 * needs (like snprintf): a result >= outlen means out holds only a prefix. 4 * n + 1 bytes
 * always suffice. */
size_t vzcaps_escape(const char *in, size_t n, char *out, size_t outlen);
/* Length of the valid UTF-8 sequence at p (n bytes available), 0 when invalid. */
size_t vzcaps_utf8_valid(const char *p, size_t n);
/* Copies s into out for quoting in a message: at most max bytes of it, then "...(N bytes)"
 * when it was longer, so a clipped value says so; in a buffer too small for max bytes and
 * that note, the prefix gives way and the note stays whole. Returns out. */
char *vzcaps_clip(const char *s, size_t max, char *out, size_t outlen);
/* vzcaps_clip of the n bytes at s (no NUL needed), such as an environment entry's name. */
char *vzcaps_clipn(const char *s, size_t n, size_t max, char *out, size_t outlen);

/* ---- did you mean (suggest.c): one suggestion for every name a user types ---- */

/* Edits (insert, remove, replace, swap two neighbours; ASCII case ignored) from a to b; 99 when
 * either is over 40 bytes. Stack only. */
int vzcaps_edit_distance(const char *a, const char *b);
/* The candidate nearest to word, at most two edits away (one for words of three letters or
 * fewer) and with the same digits (a typo never changes a number), the first of equals; NULL
 * when none is near or word is itself a candidate. NULL entries are skipped. Allocates nothing. */
const char *vzcaps_did_you_mean(const char *word, const char *const *candidates, size_t n);
/* The family name nearest to text ("Metal3" for "metl3"), or NULL. */
const char *vzcaps_family_suggest(const char *text);
/* A known chip's canonical brand for text: "Apple M2 Pro" for "M2 Pro", "m2 pro" or
 * "Apple M2 Por"; into out, true when there is one. */
bool vzcaps_chip_suggest(const char *text, char *out, size_t len);

/* ---- the stats log (statslog.c): what the library appends for `vzcaps stats` ----
 * One JSON line per process, at the first device hooked or left stock, exactly:
 * {"v":1,"time":T,"pid":P,"program":"NAME","path":"EXE","event":"hooked"|"left_stock",
 *  "class":"CLASS","family":F,"reason":"WHY"}
 * (a hooked record from the library adds ,"no_raise":"WHY NOT": "" when a raised answer is
 * possible for its device and profile), then at most one line per effect kind, with the same
 * members and event "unlocked" (,"image":"IMAGE","selector":"SEL","stock":S,"given":G: the first
 * answer above the device's own an image in scope got), and at most VZCAPS_STOCK_CALLERS lines
 * with event "stock_caller" (,"image":"IMAGE": an image the caller scope kept stock),
 * each ending in '\n', at most VZCAPS_STATSLOG_MAX bytes with it. Strings are JSON-escaped (", \,
 * controls, DEL and C1 controls as \u00XX), valid UTF-8 passes, a byte that is not UTF-8 is
 * \udcXX of its value (a lone low surrogate, as surrogateescape decodes it: never U+00XX); when the whole does not fit, the longest strings are cut to a common
 * length at a UTF-8 (escape) boundary and end in "...". family: the highest Apple family the
 * process answers yes to (0 when stock); reason: "" when hooked. */
#define VZCAPS_STATSLOG_MAX 1024
#define VZCAPS_STATSLOG_ROTATE 1048576 /* 1 MiB: at or above, LOG is renamed LOG.1 first */
#define VZCAPS_STATSLOG_START "{\"v\":1,\"time\":" /* every record's first bytes */
#define VZCAPS_STOCK_CALLERS 4
struct vzcaps_statslog_record {
    long long time, pid, family;
    bool hooked;
    const char *program, *path, *cls, *reason; /* NULL is "" */
};
enum { VZCAPS_EVENT_LEFT_STOCK, VZCAPS_EVENT_HOOKED, VZCAPS_EVENT_UNLOCKED, VZCAPS_EVENT_STOCK_CALLER };
/* What a record of the library's adds: event (0: hooked or left stock, as the record says),
 * no_raise for a hooked one, image (and selector, stock, given) for an effect. */
struct vzcaps_statslog_more {
    int event;
    const char *no_raise, *image, *selector;
    unsigned long long stock, given;
};
/* Writes the record into out; returns its length (<= VZCAPS_STATSLOG_MAX, ending in '\n'). */
size_t vzcaps_statslog_format(const struct vzcaps_statslog_record *r, char out[VZCAPS_STATSLOG_MAX]);
size_t vzcaps_statslog_format_more(const struct vzcaps_statslog_record *r, const struct vzcaps_statslog_more *more,
                                   char out[VZCAPS_STATSLOG_MAX]);
/* Bytes of the JSON-escaped form of the n bytes at s (the form the record uses). */
size_t vzcaps_json_escaped_len(const char *s, size_t n);
/* A log_file value (config key or VZCAPS_LOG_FILE): an absolute path or ~/PATH, at most
 * VZCAPS_PATH_MAX bytes, not ending in '/'. 0, or -1 with why. */
int vzcaps_log_file_check(const char *value, char *why, size_t len);
/* A checked value made a path: ~/ against home (which must be absolute; trailing '/' dropped).
 * 0, or -1 when home is not absolute or the path would be longer than VZCAPS_PATH_MAX. */
int vzcaps_log_file_expand(const char *value, const char *home, char *out, size_t cap);

/* ---- small helpers ---- */

/* Plain decimal (no sign, blank, prefix or trailing text); 0 or -1. */
int vzcaps_parse_u64(const char *text, uint64_t *out);
/* Whether an element of list (a preload value, elements split at any of seps) has the base
 * name libname: "/x/libvzcaps.so" does, "/x/libvzcaps.so.bak" and "libvzcaps.sox" do not. */
bool vzcaps_list_names_library(const char *list, const char *seps, const char *libname);
/* Copies list without entries whose base name is libname; seps lists the separators.
 * Returns the length written, or -1 if out is too small. */
int vzcaps_strip_library(const char *list, const char *seps, const char *libname, char *out, size_t outlen);
/* The same, also without the k-th element (0-based, empty ones counted, as split at any one of
 * seps) when ours[k] is true (k < n_ours): the caller found it to be our library by what the
 * file is, whatever its name. out NULL: the length alone. The one rule for the stock runs and
 * the library's children (vzcaps_env_strip, vzcaps_child_env). */
int vzcaps_strip_library_facts(const char *list, const char *seps, const char *libname, const bool *ours, size_t n_ours,
                               char *out, size_t outlen);
/* vsnprintf; a format of %s, %lld, %llu and %% alone is made without libc's formatter. */
int vzcaps_vformat(char *out, size_t cap, const char *fmt, va_list ap);
/* snprintf(dst, cap, "%s", src) without the formatting machinery (cap >= 1): the length of src. */
size_t vzcaps_copy(char *dst, size_t cap, const char *src);
/* Empties settings, a profile or a configuration result for reuse: every field a reader looks
 * at, without clearing the large text arrays (notes, origins, paths) past their terminators
 * (the library configures once before main; clearing them cost most of its start-up). */
void vzcaps_settings_reset(struct vzcaps_settings *s);
void vzcaps_profile_reset(struct vzcaps_profile *p);
void vzcaps_config_result_reset(struct vzcaps_config_result *r);
/* Base name of a path (pointer into path). */
const char *vzcaps_basename(const char *path);
/* snprintf-like appending that never overflows; text that does not fit is cut and the end
 * of buf marked "..." (never cut silently). Returns buf. */
char *vzcaps_appendf(char *buf, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
