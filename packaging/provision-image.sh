#!/bin/sh
# provision-image.sh: bakes vzcaps into a macOS VM image (a Packer shell provisioner for Tart or
# Anka; docs/fleet.md): installs the release archive with its install.sh, a system config with
# per-program sections, shims for the client programs first on the PATH of the runner's user
# (their shell start-up files and, with --runner-dir, the GitHub runner service's .path), and
# optionally a LaunchAgent for a long-running server (vzcaps launchd --install). Everything it
# writes (the shim links, the start-up file blocks, the runner's .path, the system config, the
# LaunchAgent, the directories it makes) is recorded under PREFIX/share/vzcaps/provision with the
# one record mechanism (the record block below, identical in install.sh, uninstall.sh and
# scripts/release), each record written before its entry (a journal: a run killed anywhere leaves
# records --undo finishes); --undo (and uninstall.sh --all) removes exactly those, restoring a
# file byte for byte as it was when nobody changed it since, and keeps what a user made or
# changed (named). A second run writes nothing and says "already provisioned".
# Never: sets DYLD_INSERT_LIBRARIES anywhere (only shimmed programs and the agent get the
# library); writes through a link; replaces a config or start-up block it did not write (the
# config only with --force). Only what a stock Mac has: /bin/sh, BSD tools, tar.
set -eu
me=provision-image.sh
usage="usage: $me --archive vzcaps-VERSION-macos.tar.gz --user NAME [--home DIR] [--prefix DIR] [--etc DIR]
       [--programs \"NAME...\"] [--config FILE] [--force] [--shim-dir DIR] [--runner-dir DIR]
       [--server LABEL -- PROGRAM [ARGS...]]
       $me --undo [--prefix DIR]   (removes what it wrote, then the install; the installed copy's
                                    default PREFIX is the one it is installed in)"
archive="" user="" home="" prefix=/usr/local etc=/usr/local/etc config="" force=no shims="" runner="" server=""
undo=no keep_install=no prefix_given=no
programs="llama-server llama-cli llama-bench whisper-cli ollama"
# left: once the install is in place, what a stop leaves and the command that removes it (one line)
left=""
fail() { printf '%s: %s\n' "$me" "$*" >&2; [ -z "$left" ] || printf '%s: %s\n' "$me" "$left" >&2; exit 1; }
# q PATH: PATH as one shell word, for a command line a user pastes
q() {
    case $1 in
        '' | *[!A-Za-z0-9_./+:@%,=-]*) printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
        *) printf '%s' "$1" ;;
    esac
}
bad() { printf '%s: %s\n%s\n' "$me" "$*" "$usage" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --archive | --user | --home | --prefix | --etc | --programs | --config | --shim-dir | --runner-dir | --server)
            [ $# -ge 2 ] || bad "$1 needs a value"
            case $1 in
                --archive) archive=$2 ;; --user) user=$2 ;; --home) home=$2 ;; --prefix) prefix=$2 prefix_given=yes ;; --etc) etc=$2 ;;
                --programs) programs=$2 ;; --config) config=$2 ;; --shim-dir) shims=$2 ;; --runner-dir) runner=$2 ;;
                --server) server=$2 ;;
            esac
            shift 2 ;;
        --force) force=yes; shift ;;
        --undo) undo=yes; shift ;;
        --keep-install) keep_install=yes; shift ;; # --undo from uninstall.sh --all, which removes the install itself
        --) shift; break ;;
        -h | --help) echo "$usage"; exit 0 ;;
        *) bad "unknown argument \"$1\"" ;;
    esac
done
# the installed copy (PREFIX/share/vzcaps/provision-image.sh) undoes its own PREFIX unless told
if [ $undo = yes ] && [ $prefix_given = no ]; then
    case $0 in
        */share/vzcaps/provision-image.sh) _self=$(cd "$(dirname "$0")" && pwd) && prefix=${_self%/share/vzcaps} ;;
    esac
fi
say() { printf '%s\n' "$*"; }
# ---- the record of what vzcaps made (kept identical in packaging/*install.sh and scripts/release;
# the same test as src/common/record.c: tests/dist/test_record.py runs one table through both) ----
# made_stat PATH: "DEV INO SEC.NNNNNNNNN" of PATH itself (a link is not followed): macOS's (BSD)
# stat first (%Fm: the seconds with nine digits of nanoseconds, file_cmds stat.c), its output
# used only when it succeeds (GNU's reads -f as --file-system and fails on the format), then
# GNU's form; nothing when PATH cannot be read
made_stat() {
    _mo=$(stat -f '%d %i %Fm' -- "$1" 2>/dev/null) && printf '%s\n' "$_mo" || stat -c '%d %i %.9Y' -- "$1" 2>/dev/null
}
# made_sum: the SHA-256 of standard input
made_sum() {
    if command -v shasum >/dev/null 2>&1; then shasum -a 256; else sha256sum; fi | cut -c1-64
}
# made_this PATH FIELDS: PATH is the entry FIELDS names as it is now. FIELDS is a record's
# "DEV INO SEC.NNNNNNNNN", then " SHA256" of its content (a file's bytes, a link's target and a
# newline; compared) or " -" (not compared) or nothing; anything else says no
made_this() {
    _mp=$1 _mf=$2 _mh=none
    case $_mf in
        *' '*' '*' '*' '*) return 1 ;;
        *' '*' '*' '*) _mh=${_mf##* } _mf=${_mf% *} ;;
    esac
    case $_mh in
        none | -) ;;
        *[!0-9a-f]*) return 1 ;;
        *) [ ${#_mh} -eq 64 ] || return 1 ;;
    esac
    _mn=$(made_stat "$_mp") && [ -n "$_mn" ] && [ "$_mn" = "$_mf" ] || return 1
    case $_mh in none | -) return 0 ;; esac
    if [ -L "$_mp" ]; then _mc=$(readlink -- "$_mp" | made_sum)
    elif [ -f "$_mp" ]; then _mc=$(made_sum <"$_mp")
    else return 1
    fi
    [ "$_mc" = "$_mh" ]
}
# made_by_record PATH RECORD MAKER: RECORD is a plain file (not a link, at most 64 KiB, no NUL
# byte) whose first line is MAKER and whose second line "copy FIELDS" names PATH as it is now
made_by_record() {
    [ -f "$2" ] && [ ! -L "$2" ] || return 1
    _ms=$(wc -c <"$2" | tr -d ' ') && [ "$_ms" -le 65536 ] && [ "$(tr -d '\000' <"$2" | wc -c | tr -d ' ')" = "$_ms" ] || return 1
    [ "$(sed -n 1p "$2")" = "$3" ] || return 1
    _ml=$(sed -n 2p "$2")
    case $_ml in 'copy '*) made_this "$1" "${_ml#copy }" ;; *) return 1 ;; esac
}
# made_record PATH MAKER: the record's first two lines for PATH (its hash when a file or link)
made_record() {
    _mn=$(made_stat "$1") && [ -n "$_mn" ] || return 1
    if [ -L "$1" ]; then _mc=$(readlink -- "$1" | made_sum)
    elif [ -f "$1" ]; then _mc=$(made_sum <"$1")
    else _mc=-
    fi
    printf '%s\ncopy %s %s\n' "$2" "$_mn" "$_mc"
}
# made_marked FILE MARKER WHERE: the plain file FILE (not a link) carries MARKER as a whole line,
# ended by a newline within its first 4096 bytes (no NUL byte among them), where WHERE says:
# line1; after-xml (the line after an XML declaration, else the first); after-doctype (line 3,
# after the XML declaration and the DOCTYPE line)
made_marked() {
    [ -f "$1" ] && [ ! -L "$1" ] || return 1
    _mt=$(head -c 4096 <"$1" | tr -d '\000' | wc -c | tr -d ' ')
    [ "$_mt" -gt 0 ] && [ "$_mt" = "$(head -c 4096 <"$1" | wc -c | tr -d ' ')" ] || return 1
    _mt=$(head -c 4096 <"$1" | wc -l | tr -d ' ')
    _m1=$(head -c 4096 <"$1" | sed -n 1p)
    case $3 in
        line1) _mk=1 ;;
        after-xml) case $_m1 in '<?xml '*'?>') _mk=2 ;; *) _mk=1 ;; esac ;;
        after-doctype)
            case $_m1 in '<?xml '*'?>') ;; *) return 1 ;; esac
            case $(head -c 4096 <"$1" | sed -n 2p) in '<!DOCTYPE '*'>') _mk=3 ;; *) return 1 ;; esac ;;
        *) return 1 ;;
    esac
    [ "$_mt" -ge $_mk ] && [ "$(head -c 4096 <"$1" | sed -n "${_mk}p")" = "$2" ]
}
# ---- end of the record ----
# ---- what provisioning wrote: one record per entry in $records (entry.N: the record's two
# lines naming the entry as written, then "kind KIND", "path PATH", "orig absent|saved|none" and
# keyed lines: "shims DIR" for a start-up file or .path, "label LABEL" and "user NAME" for an
# agent; entry.N.orig: a file as it was before, mode kept). A journal: each record is written
# (whole, renamed into place) before its entry is, with "copy pending", the SHA-256 of the bytes
# about to be written ("want"), the entry as provisioning left it before ("before", on a rerun)
# and the temporary copy's name ("temp"); once written, the record names the entry as it is. So a
# run stopped at any point (a kill, a failing chown) leaves records that --undo finishes ----
records=${prefix%/}/share/vzcaps/provision
maker="vzcaps provision-image.sh"
# rec_field KEY RECORD: the value of RECORD's first "KEY VALUE" line
rec_field() { sed -n "s/^$1 //p" "$2" | sed -n 1p; }
# entries: the record numbers, newest first
entries() {
    [ -d "$records" ] || return 0
    (cd "$records" && find . -name 'entry.*' -type f | sed -n 's|^\./entry\.\([0-9][0-9]*\)$|\1|p' | sort -rn)
}
# record_of PATH: the record naming PATH, if any
record_of() {
    for _r in $(entries); do
        _r=$records/entry.$_r
        [ -f "$_r" ] && [ ! -L "$_r" ] && [ "$(sed -n 4p "$_r")" = "path $1" ] && { printf '%s\n' "$_r"; return 0; }
    done
    return 1
}
# put_record RECORD: standard input as RECORD, whole or not at all (a temporary renamed)
put_record() {
    cat >"$1.new" && mv -f "$1.new" "$1" || { rm -f "$1.new"; fail "cannot record in $records (a full disk?)"; }
}
# ours PATH RECORD: PATH is as provisioning left it: as its record names it, or (a run stopped
# between the record and the write) the bytes it was about to write, or as an earlier run left it
ours() {
    made_by_record "$1" "$2" "$maker" && return 0
    [ "$(sed -n 2p "$2")" = "copy pending" ] && [ "$(sed -n 1p "$2")" = "$maker" ] || return 1
    _w=$(rec_field want "$2") _b=$(rec_field before "$2")
    { [ -n "$_b" ] && made_this "$1" "$_b"; } && return 0
    [ -n "$_w" ] && [ -f "$1" ] && [ ! -L "$1" ] && [ "$(made_sum <"$1")" = "$_w" ]
}
# step: a point between two writes. For the test of a run stopped at each point,
# PROVISION_IMAGE_STOP_AT=N kills the run (SIGKILL, no trap runs) at the Nth
step=0 stop_at=${PROVISION_IMAGE_STOP_AT:-}
unset PROVISION_IMAGE_STOP_AT
step() {
    step=$((step + 1))
    [ "$stop_at" != "$step" ] || kill -KILL $$
}
# intend PATH KIND NEWFILE [EXTRA]: PATH's record, before PATH is (re)written with NEWFILE's bytes
# (sets rec and tmp_of). While PATH is as provisioning left it, the saved original stays; else
# PATH as it is now is kept (without provisioning's part when a record says it wrote PATH
# before), or "absent"
intend() {
    _before="" _seen=no
    if rec=$(record_of "$1"); then
        _seen=yes
        if ours "$1" "$rec"; then
            _orig=$(rec_field orig "$rec")
            case $(sed -n 2p "$rec") in 'copy pending') _before=$(rec_field before "$rec") ;; *) _before=$(sed -n 2p "$rec"); _before=${_before#copy } ;; esac
            _seen=kept
        fi
    else
        _n=1
        while [ -e "$records/entry.$_n" ] || [ -L "$records/entry.$_n" ]; do _n=$((_n + 1)); done
        rec=$records/entry.$_n
    fi
    if [ $_seen != kept ]; then
        if [ -f "$1" ] && [ ! -L "$1" ]; then
            cp -p "$1" "$rec.orig.new" || fail "cannot keep a copy of $1 in $records"
            if [ $_seen = yes ]; then
                strip_kind "$(rec_field kind "$rec")" "$1" "$(rec_field shims "$rec")" >"$rec.orig.new" ||
                    cp -p "$1" "$rec.orig.new" || fail "cannot keep a copy of $1 in $records"
            fi
            mv -f "$rec.orig.new" "$rec.orig" || fail "cannot keep a copy of $1 in $records"
            step # a saved original without its record yet: --undo removes it
            _orig=saved
        else
            rm -f "$rec.orig"
            _orig=absent
        fi
    fi
    # a temporary copy a stopped run left beside PATH (its record names it) goes
    _old=$(rec_field temp "$rec" 2>/dev/null)
    [ "$_old" != "$1.vzcaps-provision" ] || { [ ! -f "$_old" ] || [ -L "$_old" ] || rm -f "$_old"; }
    tmp_of=$1.vzcaps-provision
    { printf '%s\ncopy pending\nkind %s\npath %s\norig %s\n' "$maker" "$2" "$1" "$_orig"
      [ -z "${4:-}" ] || printf '%s\n' "$4"
      printf 'want %s\ntemp %s\n' "$(made_sum <"$3")" "$tmp_of"
      [ -z "$_before" ] || printf 'before %s\n' "$_before"; } | put_record "$rec"
}
# pending PATH KIND [EXTRA]: a new record for PATH, about to be made (a directory, a shim, an agent)
pending() {
    _n=1
    while [ -e "$records/entry.$_n" ] || [ -L "$records/entry.$_n" ]; do _n=$((_n + 1)); done
    rec=$records/entry.$_n
    { printf '%s\ncopy pending\nkind %s\npath %s\norig absent\n' "$maker" "$2" "$1"
      [ -z "${3:-}" ] || printf '%s\n' "$3"; } | put_record "$rec"
}
# record_entry PATH KIND [EXTRA]: PATH as it is now, in its record (rec, from intend or pending)
record_entry() {
    _orig=$(rec_field orig "$rec")
    { made_record "$1" "$maker" && printf 'kind %s\npath %s\norig %s\n' "$2" "$1" "${_orig:-none}" &&
        { [ -z "${3:-}" ] || printf '%s\n' "$3"; }; } >"$rec.new" && mv -f "$rec.new" "$rec" ||
        { rm -f "$rec.new"; fail "cannot record $1 in $records (a full disk?)"; }
    rec=""
}
# make_dirs DIR: makes DIR and the directories above it that are missing, each recorded
make_dirs() {
    _md=$1 _todo=""
    while [ ! -d "$_md" ]; do
        _todo="$_md
$_todo"
        _md=$(dirname "$_md")
    done
    while IFS= read -r _d; do
        [ -n "$_d" ] || continue
        pending "$_d" dir
        step
        mkdir "$_d" || fail "cannot make $_d"
        step
        record_entry "$_d" dir
        changed=yes
    done <<EOT
$_todo
EOT
}
# the PATH block of this prefix in a start-up file: one per prefix, so two prefixes provisioned
# into the same home are undone independently. When the file did not end in a newline, its
# begin marker says the newline before it is provisioning's, and taking the block out takes it too
block_body() { printf 'case "$PATH" in %s | %s:*) ;; *) PATH=%s:$PATH; export PATH ;; esac\n' "$1" "$1" "$1"; }
block_pre="# >>> vzcaps shims of " block_suf=" (written by provision-image.sh) >>>"
block_suf_nl=" (written by provision-image.sh, with the newline before it) >>>"
begin=$block_pre$prefix$block_suf begin_nl=$block_pre$prefix$block_suf_nl end="# <<< vzcaps shims of $prefix <<<"
# only_blocks FILE: FILE holds nothing but PATH blocks of provisioning (of any prefix)
only_blocks() {
    awk -v pre="$block_pre" -v end="# <<< vzcaps shims of " '
        !inb && index($0, pre) == 1 { inb = 1; next }
        inb && index($0, end) == 1 { inb = 0; next }
        !inb { bad = 1 }
        END { exit bad }' "$1"
}
# has_final_newline FILE: FILE is empty or ends in a newline
has_final_newline() { [ -z "$(tail -c 1 "$1")" ]; }
# strip_block FILE [DIR]: FILE without this prefix's block, byte for byte otherwise (with DIR:
# only when it is the block provisioning writes for DIR, else status 3 and nothing; no block:
# status 4)
strip_block() {
    _nl=0
    ! has_final_newline "$1" || _nl=1
    awk -v b="$begin" -v bn="$begin_nl" -v e="$end" -v body="${2:+$(block_body "$2")}" -v nl=$_nl -v pre="$block_pre" \
        -v suf="$block_suf" -v sufnl="$block_suf_nl" '
        { l[NR] = $0 }
        END {
            for (i = 1; i <= NR; i++) if (l[i] == b || l[i] == bn) { found = i; break }
            if (!found && body != "") exit 4
            if (found && body != "" && !(l[found + 1] == body && l[found + 2] == e)) exit 3
            n = 0; skip = 0; ours_nl = 0
            for (i = 1; i <= NR; i++) {
                if (!skip && (l[i] == b || l[i] == bn)) { skip = 1; ours_nl = l[i] == bn }
                else if (skip && l[i] == e) { skip = 0; if (i == NR) continue
                    # the newline before the block goes with the next block of another prefix
                    if (ours_nl && index(l[i + 1], pre) == 1 && substr(l[i + 1], length(l[i + 1]) - length(suf) + 1) == suf)
                        l[i + 1] = substr(l[i + 1], 1, length(l[i + 1]) - length(suf)) sufnl
                    ours_nl = 0; continue }
                if (!skip) { o[++n] = l[i]; ours_nl = 0 }
            }
            if (ours_nl) nl = 0
            for (i = 1; i <= n; i++) printf "%s%s", o[i], (i < n || nl) ? "\n" : ""
        }' "$1"
}
# strip_path FILE DIR: FILE (a .path) without the entry DIR in its first line, byte for byte
# otherwise (status 4 when the first line has no such entry)
strip_path() {
    _nl=0
    ! has_final_newline "$1" || _nl=1
    awk -v s="$2" -v nl=$_nl '
        NR == 1 {
            k = split($0, a, ":"); out = ""; gone = 0; first = 1
            for (i = 1; i <= k; i++) {
                if (!gone && a[i] == s) { gone = 1; continue }
                out = first ? a[i] : out ":" a[i]; first = 0
            }
            $0 = out
        }
        { o[NR] = $0 }
        END { for (i = 1; i <= NR; i++) printf "%s%s", o[i], (i < NR || nl) ? "\n" : ""; exit gone ? 0 : 4 }' "$1"
}
# strip_kind KIND FILE DIR: FILE without provisioning's part (a start-up file's block, .path's entry)
strip_kind() {
    case $1 in
        rc) strip_block "$2" ;;
        path) strip_path "$2" "$3" ;;
        *) return 1 ;;
    esac
}
# put_back PATH SOURCE: SOURCE's bytes in place of PATH, through a temporary beside it (the mode
# and owner of a copy made with cp -p)
put_back() {
    _t=$(mktemp "$(dirname "$1")/.vzcaps-provision.XXXXXX") || return 1
    if cp -p "$2" "$_t" && mv -f "$_t" "$1"; then return 0; fi
    rm -f "$_t"
    return 1
}
# undo_file RECORD KIND PATH ORIG DIR: PATH as it was, when it is as provisioning left it; else
# only provisioning's part taken out of it, or kept and named (a user's: status 0); status 1 when
# a write failed
undo_file() {
    _tp=$(rec_field temp "$1")
    if [ -n "$_tp" ] && [ "$_tp" = "$3.vzcaps-provision" ] && [ -f "$_tp" ] && [ ! -L "$_tp" ]; then
        rm -f "$_tp" && say "removed $_tp (the copy a stopped run left)"
    fi
    if [ -L "$3" ]; then say "kept $3: a link now, not the file $me wrote"; return 0
    elif [ ! -e "$3" ]; then say "$3: already gone"; return 0
    elif [ ! -f "$3" ]; then say "kept $3: not a regular file now"; return 0
    fi
    if ours "$3" "$1"; then
        case $4 in
            absent) rm -f "$3" && say "removed $3" && return 0 ;;
            saved) [ -f "$1.orig" ] && put_back "$3" "$1.orig" && say "restored $3 as it was before" && return 0 ;;
        esac
        say "kept $3: cannot put back what was there before"; return 1
    fi
    if [ "$(sed -n 2p "$1")" = "copy pending" ] && [ "$4" = saved ] && [ -f "$1.orig" ] && cmp -s "$3" "$1.orig"; then
        say "$3: unchanged (the run stopped before writing it)"; return 0
    fi
    _s=0
    case $2 in
        conf) say "kept $3: changed since $me wrote it"; return 0 ;;
        rc) strip_block "$3" "$5" >"$records/stripped" || _s=$? ;;
        path) strip_path "$3" "$5" >"$records/stripped" || _s=$? ;;
    esac
    case $_s in
        0) if [ ! -s "$records/stripped" ] && { [ "$4" = absent ] || { [ -f "$1.orig" ] && only_blocks "$1.orig"; }; }; then
               rm -f "$3" && say "removed $3: nothing but what $me wrote was left in it" && return 0
           fi
           if [ "$4" = saved ] && [ -f "$1.orig" ] && cmp -s "$records/stripped" "$1.orig"; then
               put_back "$3" "$1.orig" && say "restored $3 as it was before" && return 0
           fi
           cp -p "$3" "$records/stripped.m" && cat "$records/stripped" >"$records/stripped.m" && put_back "$3" "$records/stripped.m" &&
               rm -f "$records/stripped.m" && say "$3: took out what $me wrote (changed since, so the rest is kept)" && return 0
           say "kept $3: cannot write it"; return 1 ;;
        3) say "kept $3: the block between the vzcaps markers was edited since $me wrote it (remove it by hand)"; return 0 ;;
        *) say "$3: nothing of $me left in it (changed since)"; return 0 ;;
    esac
}
# as_user NAME HOME COMMAND...: COMMAND as NAME with HOME (sudo when this is another user)
as_user() {
    _au=$1 _ah=$2
    shift 2
    if [ "$(id -un)" = "$_au" ]; then HOME=$_ah "$@"; else sudo -u "$_au" env HOME="$_ah" "$@"; fi
}
# undo_agent RECORD PATH: the LaunchAgent of --server: stopped and removed (vzcaps launchd
# --remove, as its user, while the installed vzcaps is still there), and its two logs
undo_agent() {
    _l=$(rec_field label "$1") _u=$(rec_field user "$1") _h=$(rec_field home "$1")
    [ -n "$_l" ] && [ -n "$_u" ] && [ -n "$_h" ] || { say "kept the record $1: no label, user or home in it"; return 1; }
    if [ ! -e "$2" ] && [ ! -L "$2" ]; then say "$2: already gone"
    elif ! ours "$2" "$1" && [ "$(sed -n 2p "$1")" != "copy pending" ]; then say "kept $2: changed since $me wrote it"; return 0
    elif _e=$(as_user "$_u" "$_h" "$_vz" launchd --label "$_l" --remove 2>&1 >/dev/null); then say "removed the LaunchAgent $_l ($2)"
    else say "kept $2: $(printf '%s' "${_e:-vzcaps launchd --remove refused it}" | head -n 1)"; return 1
    fi
    for _lf in "$_h/Library/Logs/vzcaps/$_l.out.log" "$_h/Library/Logs/vzcaps/$_l.err.log"; do
        if [ -f "$_lf" ] && [ ! -L "$_lf" ]; then rm -f "$_lf" && say "removed $_lf"; fi
    done
    return 0
}
# undo_all: every record, newest first; then (without --keep-install) the install itself
undo_all() {
    _rc=0
    if [ -L "$records" ] || { [ -e "$records" ] && [ ! -d "$records" ]; }; then
        printf '%s: %s is a link or not a directory: nothing undone\n' "$me" "$records" >&2; return 1
    fi
    if [ -d "$records" ] && ! { [ -r "$records" ] && [ -w "$records" ] && [ -x "$records" ] && [ -w "${records%/provision}" ]; }; then
        printf '%s: %s is not yours to change (provisioned as %s): nothing undone; run --undo as that user (sudo)\n' \
            "$me" "$records" "$(ls -ld "$records" | awk '{ print $3 }')" >&2
        return 1
    fi
    _seen_records=no manifest=${prefix%/}/share/vzcaps/install-manifest
    if [ -d "$records" ]; then
        _seen_records=yes _vz=${prefix%/}/bin/vzcaps
        for _n in $(entries); do
            _r=$records/entry.$_n
            [ -f "$_r" ] && [ ! -L "$_r" ] || continue
            if [ "$(sed -n 1p "$_r")" != "$maker" ]; then say "kept the record $_r: not one $me wrote"; _rc=1; continue; fi
            _k=$(rec_field kind "$_r") _p=$(sed -n 4p "$_r") _o=$(rec_field orig "$_r") _x=$(rec_field shims "$_r")
            _p=${_p#path }
            case $_k in
                dir)
                    if [ -d "$_p" ] && [ ! -L "$_p" ]; then
                        if rmdir "$_p" 2>/dev/null; then say "removed the directory $_p"; else say "kept $_p: not empty"; fi
                    fi ;;
                shim)
                    if [ ! -e "$_p" ] && [ ! -L "$_p" ]; then
                        # a run killed inside vzcaps shims left its temporary link: a --remove takes it
                        "$_vz" shims --dir "${_p%/*}" --remove "${_p##*/}" 2>/dev/null | grep -v '^removed ' || true
                        say "$_p: already gone"
                    elif _e=$("$_vz" shims --dir "${_p%/*}" --remove "${_p##*/}" 2>&1 >/dev/null); then say "removed the shim $_p"
                    else say "kept $_p: $(printf '%s' "${_e:-vzcaps shims --remove refused it}" | head -n 1)"
                    fi ;;
                agent) undo_agent "$_r" "$_p" || _rc=1 ;;
                rc | path | conf) undo_file "$_r" "$_k" "$_p" "$_o" "$_x" || _rc=1 ;;
                *) say "kept the record $_r: not one $me wrote"; _rc=1; continue ;;
            esac
            rm -f "$_r" "$_r.orig"
        done
        # what a run killed before a record's entry left: its temporaries, and an original saved
        # for a record not written yet (so for a file not written either)
        rm -f "$records/stripped" "$records/stripped.m" "$records"/entry.*.new "$records"/entry.*.orig.new
        for _o in "$records"/entry.*.orig; do
            [ ! -f "$_o" ] || [ -e "${_o%.orig}" ] || rm -f "$_o"
        done
        rmdir "$records" 2>/dev/null || { say "kept $records: not empty"; _rc=1; }
    fi
    [ $keep_install = no ] || return $_rc
    # the install, by its manifest (or the journal of an install killed before it): the
    # uninstall.sh beside this script (of this release: an upgrade killed part way leaves the
    # earlier one installed) or, without one, the installed copy
    _u=$(dirname "$0")/uninstall.sh
    [ -f "$_u" ] || _u=${prefix%/}/share/vzcaps/uninstall.sh
    if [ -f "$_u" ] && { [ -e "$manifest" ] || [ -n "$(sh "$_u" --prefix "$prefix" --journals)" ]; }; then
        sh "$_u" --prefix "$prefix" || _rc=1
    elif [ ! -d "$records" ] && [ $_seen_records = no ]; then
        say "nothing to undo under $prefix: nothing provisioned or installed there"
    elif [ -e "$manifest" ]; then
        say "no $_u: the install is left as it is"
    fi
    return $_rc
}

if [ $undo = yes ]; then
    [ -z "$archive$user" ] || bad "--undo takes only --prefix"
    case $prefix in /*) ;; *) bad "$prefix is not an absolute path" ;; esac
    undo_all
    exit $?
fi
[ -n "$archive" ] || bad "--archive is required"
[ -n "$user" ] || bad "--user is required"
[ -n "$server" ] || [ $# -eq 0 ] || bad "a command after -- needs --server LABEL"
[ -z "$server" ] || [ $# -gt 0 ] || bad "--server $server needs the program after --"
[ -n "$home" ] || home=/Users/$user
[ -n "$shims" ] || shims=$prefix/libexec/vzcaps/shims
for p in "$prefix" "$etc" "$shims" "$home" ${runner:+"$runner"}; do
    case $p in
        /*) ;;
        *) bad "$p is not an absolute path" ;;
    esac
done
# the shim directory goes into shell start-up files and .path: plain, nothing in it needs quoting
case $shims in
    *[!A-Za-z0-9_./+-]* | */../* | */..) bad "$shims has a character a PATH entry in a start-up file cannot carry plainly (or ..)" ;;
esac
names=$programs # split on blanks where used, never globbed (set -f)
[ -n "$(printf '%s' "$names" | tr -d ' \t\n')" ] || bad "--programs names no program"
set -f
for name in $names; do # vzcaps check and vzcaps shims would read it as one of their options
    case $name in -*) bad "--programs: \"$name\" starts with '-': a program name, not an option" ;; esac
done
set +f
[ -f "$archive" ] || fail "$archive is not a file"
as_root=no
[ "$(id -u)" -eq 0 ] && as_root=yes
id -u "$user" >/dev/null 2>&1 || fail "user $user does not exist"
[ -d "$home" ] || fail "$home (the home of $user) is not a directory"

work=$(mktemp -d "${TMPDIR:-/tmp}/vzcaps-provision.XXXXXX") || fail "cannot make a temporary directory"
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP

# ---- 1. the release, installed by its own install.sh (checksums, manifest, quarantine) ----
tar -xzf "$archive" -C "$work" || fail "$archive is not a readable release archive"
release=""
for d in "$work"/vzcaps-*-macos; do
    [ -f "$d/install.sh" ] && [ ! -L "$d/install.sh" ] && release=$d
done
[ -n "$release" ] || fail "$archive holds no vzcaps-VERSION-macos/install.sh"
changed=no # anything this run wrote: none says "already provisioned"
# plain_or_absent PATH: fails unless PATH is absent or a regular file (never a link, a FIFO that
# would hang a read, a device or a directory)
plain_or_absent() {
    [ ! -L "$1" ] || fail "$1 is a symbolic link: not written through it"
    [ ! -e "$1" ] || [ -f "$1" ] || fail "$1 is not a regular file: left alone"
}
# the config as the image will hold it (a copy, mode 644); a different one there stops the run
# before anything is installed (--force replaces it)
[ -n "$config" ] || config=$release/vzcaps.conf.example
[ -f "$config" ] || fail "config $config is not a file"
cat "$config" >"$work/vzcaps.conf" && chmod 644 "$work/vzcaps.conf" || fail "cannot read $config"
conf=$etc/vzcaps.conf
plain_or_absent "$conf"
if [ -e "$conf" ] && [ $force = no ] && ! cmp -s "$conf" "$work/vzcaps.conf"; then
    fail "$conf exists and differs from the config to install: not replaced (pass --force): nothing installed or written"
fi
manifest=${prefix%/}/share/vzcaps/install-manifest
was=$(made_stat "$manifest") || was=""
self=$(cd "$(dirname "$0")" && pwd)/${0##*/}
sh "$release/install.sh" --prefix "$prefix" || {
    _rc=$?
    [ $_rc -le 128 ] || left="stopped part way: install.sh was killed; what it made goes with: sh $(q "$self") --undo --prefix $(q "$prefix")"
    fail "install.sh failed (above): nothing more done"; }
[ -n "$was" ] && [ "$(made_stat "$manifest")" = "$was" ] || changed=yes # install.sh rewrote its manifest
left="stopped part way: what this run installed and wrote is left in $prefix (recorded); sh $(q "$prefix/share/vzcaps/provision-image.sh") --undo removes it"
step
vz=$prefix/bin/vzcaps
# the records of what follows: the install's own share/vzcaps, readable only by whoever provisions
if [ ! -d "$records" ]; then mkdir -m 700 "$records" || fail "cannot make $records"; fi
[ ! -L "$records" ] || fail "$records is a symbolic link: nothing more done"
step

# write_new DEST SOURCE: SOURCE's bytes to DEST through a new file beside it (tmp_of, which its
# record names), renamed (never through a link or over a file not its own; mode 644)
write_new() {
    plain_or_absent "$1"
    [ ! -e "$tmp_of" ] && [ ! -L "$tmp_of" ] || fail "$tmp_of exists (not $me's): $1 not written"
    _mode=644 # a file there keeps its mode (a user's 600 .zshenv stays 600)
    [ ! -f "$1" ] || _mode=$(stat -c '%a' "$1" 2>/dev/null || stat -f '%Lp' "$1" 2>/dev/null) || _mode=644
    case $_mode in [0-7][0-7][0-7] | [0-7][0-7][0-7][0-7]) ;; *) _mode=644 ;; esac
    if (set -C && cat "$2" >"$tmp_of") && chmod "$_mode" "$tmp_of" && mv -f "$tmp_of" "$1"; then return 0; fi
    rm -f "$tmp_of"
    fail "cannot write $1 (a full disk?)"
}
# journal_write PATH KIND NEWFILE [EXTRA]: NEWFILE's bytes as PATH, its record first (owned by
# the user unless a config)
journal_write() {
    plain_or_absent "$1"
    intend "$1" "$2" "$3" "${4:-}"
    step
    write_new "$1" "$3"
    step
    [ $as_root = no ] || [ "$2" = conf ] || chown "$user" "$1" || fail "cannot give $1 to $user"
    record_entry "$1" "$2" "${4:-}"
    changed=yes
}

# ---- 2. the system config: per-program sections, validated before the image keeps it ----
set -f
for name in $names; do
    "$vz" check --config "$work/vzcaps.conf" --exe "$name" >"$work/check.txt" 2>&1 ||
        { sed "s|$work/vzcaps.conf|$config|g" "$work/check.txt" >&2; fail "vzcaps check refused $config for $name (above): no config written"; }
done
set +f
config=$work/vzcaps.conf
make_dirs "$etc"
plain_or_absent "$conf"
if [ -e "$conf" ]; then
    if cmp -s "$conf" "$config"; then
        say "config: $conf is already this config"
    elif [ $force = yes ]; then
        journal_write "$conf" conf "$config"
        say "config: replaced $conf (--force)"
    else
        fail "$conf exists and differs from the config to install: not replaced (pass --force)"
    fi
else
    journal_write "$conf" conf "$config"
    say "config: wrote $conf"
fi

# ---- 3. shims, owned by whoever provisions (the runner's user cannot change them) ----
make_dirs "$shims"
set -f
new_shims=""
for name in $names; do
    [ -e "$shims/$name" ] || [ -L "$shims/$name" ] || new_shims="$new_shims $name"
done
for name in $new_shims; do
    pending "$shims/$name" shim
done
step
# shellcheck disable=SC2086
"$vz" shims --dir "$shims" -- $names >"$work/shims.txt" || { cat "$work/shims.txt"; fail "vzcaps shims failed (above)"; }
step
[ -z "$new_shims" ] || { cat "$work/shims.txt"; changed=yes; } # what it made (a second run: nothing)
for name in $new_shims; do
    rec=$(record_of "$shims/$name") || fail "the record of $shims/$name is gone"
    record_entry "$shims/$name" shim
done
set +f

# ---- 4. the runner's user: the shim directory first on PATH in every shell it starts ----
# A block of this prefix between two marker lines, replaced on every run; the rest of each file
# is kept byte for byte.
put_block() { # put_block FILE: FILE with the block, owned by the user
    f=$home/$1
    plain_or_absent "$f"
    if [ -f "$f" ]; then
        strip_block "$f" >"$work/rc" || fail "cannot read $f"
    else
        : >"$work/rc"
    fi
    if [ -s "$work/rc" ] && ! has_final_newline "$work/rc"; then
        printf '\n%s\n' "$begin_nl" >>"$work/rc"
    else
        printf '%s\n' "$begin" >>"$work/rc"
    fi
    { block_body "$shims"; printf '%s\n' "$end"; } >>"$work/rc"
    if [ -f "$f" ] && cmp -s "$f" "$work/rc"; then return 0; fi
    journal_write "$f" rc "$work/rc" "shims $shims"
    say "PATH: $f puts $shims first"
}
# zsh (the login shell of a macOS user) reads .zshenv in every shell, ssh commands included;
# .zprofile runs after /etc/zprofile's path_helper, which moves earlier entries back
put_block .zshenv
put_block .zprofile
put_block .profile
[ ! -f "$home/.bash_profile" ] || put_block .bash_profile # bash reads .profile only without it

# ---- 5. the self-hosted runner service: its launchd job's runsvc.sh exports PATH from .path ----
# The shim directory as the first entry of its first line; the rest of the file kept byte for byte
if [ -n "$runner" ]; then
    [ -d "$runner" ] || fail "--runner-dir $runner is not a directory"
    p=$runner/.path
    plain_or_absent "$p"
    if [ -f "$p" ]; then
        case $(sed -n 1p "$p") in
            "$shims" | "$shims":*) cp "$p" "$work/path" ;;
            *) _nl=0
               ! has_final_newline "$p" || _nl=1
               awk -v s="$shims" -v nl=$_nl 'NR == 1 { $0 = $0 == "" ? s : s ":" $0 } { o[NR] = $0 }
                   END { for (i = 1; i <= NR; i++) printf "%s%s", o[i], (i < NR || nl) ? "\n" : "" }' "$p" >"$work/path" ;;
        esac
        [ -s "$work/path" ] || printf '%s\n' "$shims" >"$work/path"
    else
        printf '%s\n' "$shims:/usr/bin:/bin:/usr/sbin:/sbin" >"$work/path" # launchd's own PATH after the shims
    fi
    if ! { [ -f "$p" ] && cmp -s "$p" "$work/path"; }; then
        journal_write "$p" path "$work/path" "shims $shims"
    fi
    say "runner: $p starts with $shims (restart the service: ./svc.sh stop && ./svc.sh start)"
fi

# ---- 6. a LaunchAgent for a long-running server, written and bootstrapped as the user ----
# Recorded before it is made (with the directories vzcaps launchd will make for it and its logs),
# so --undo stops and removes it, and its logs, as the user
if [ -n "$server" ]; then
    # the program is resolved without the shims: the agent runs the real one with the library
    plain=$(printf '%s\n' "$PATH" | tr ':' '\n' | awk -v s="$shims" 'NF && $0 != s' | paste -s -d : -)
    plist=$home/Library/LaunchAgents/$server.plist
    if [ -f "$plist" ] && [ ! -L "$plist" ] &&
        as_user "$user" "$home" env PATH="$plain" "$vz" launchd --label "$server" --keep-alive -- "$@" >"$work/plist" 2>/dev/null &&
        cmp -s "$plist" "$work/plist"; then
        say "server: $plist is already this job"
    elif [ ! -e "$plist" ] && [ ! -L "$plist" ]; then
        for d in "$home/Library" "$home/Library/LaunchAgents" "$home/Library/Logs" "$home/Library/Logs/vzcaps"; do
            [ -d "$d" ] || [ -L "$d" ] || pending "$d" dir
        done
        pending "$plist" agent "label $server
user $user
home $home"
        step
        as_user "$user" "$home" env PATH="$plain" "$vz" launchd --label "$server" --keep-alive --install -- "$@" ||
            fail "vzcaps launchd as $user failed (above)"
        step
        rec=$(record_of "$plist") || fail "the record of $plist is gone"
        record_entry "$plist" agent "label $server
user $user
home $home"
        for d in "$home/Library" "$home/Library/LaunchAgents" "$home/Library/Logs" "$home/Library/Logs/vzcaps"; do
            if rec=$(record_of "$d") && [ "$(sed -n 2p "$rec")" = "copy pending" ] && [ -d "$d" ]; then record_entry "$d" dir; fi
        done
        changed=yes
    else
        as_user "$user" "$home" env PATH="$plain" "$vz" launchd --label "$server" --keep-alive --install -- "$@" ||
            fail "vzcaps launchd as $user failed (above)"
        say "server: $plist was there before: not recorded (the undo leaves it)"
    fi
fi
if [ $changed = no ]; then say "$me: already provisioned: nothing changed; check with: $vz doctor"
else say "$me: done; check with: $vz doctor"
fi
