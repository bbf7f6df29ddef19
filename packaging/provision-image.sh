#!/bin/sh
# provision-image.sh: bakes vzcaps into a macOS VM image (a Packer shell provisioner for Tart or
# Anka; docs/fleet.md): installs the release archive with its install.sh, a system config with
# per-program sections, shims for the client programs first on the PATH of the runner's user
# (their shell start-up files and, with --runner-dir, the GitHub runner service's .path), and
# optionally a LaunchAgent for a long-running server (vzcaps launchd --install). Everything it
# writes (the shim links, the start-up file blocks, the runner's .path, the system config, the
# directories it makes) is recorded under PREFIX/share/vzcaps/provision with the one record
# mechanism (the record block below, identical in install.sh, uninstall.sh and scripts/release);
# --undo (and uninstall.sh --all) removes exactly those, restoring a file as it was when nobody
# changed it since, and keeps what a user made or changed (named).
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
fail() { printf '%s: %s\n' "$me" "$*" >&2; exit 1; }
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
# lines naming the entry as written, then "kind KIND", "path PATH", "orig absent|saved|none"
# and for a start-up file "shims DIR"; entry.N.orig: a file as it was before, mode kept) ----
records=${prefix%/}/share/vzcaps/provision
maker="vzcaps provision-image.sh"
# record_of PATH: the record naming PATH, if any
record_of() {
    for _r in $(entries); do
        _r=$records/entry.$_r
        [ -f "$_r" ] && [ ! -L "$_r" ] && [ "$(sed -n 4p "$_r")" = "path $1" ] && { printf '%s\n' "$_r"; return 0; }
    done
    return 1
}
# entries: the record numbers, newest first
entries() {
    [ -d "$records" ] || return 0
    (cd "$records" && find . -name 'entry.*' -type f | sed -n 's|^\./entry\.\([0-9][0-9]*\)$|\1|p' | sort -rn)
}
# new_record PATH: reserves a record file for PATH (its path line, so record_of finds it) as rec
new_record() {
    _n=1
    while [ -e "$records/entry.$_n" ] || [ -L "$records/entry.$_n" ]; do _n=$((_n + 1)); done
    printf '\n\n\npath %s\n' "$1" >"$records/entry.$_n" || fail "cannot write a record in $records (a full disk?)"
    rec=$records/entry.$_n
}
# before_write PATH STRIP: before PATH is (re)written; sets rec (its record) and orig. While PATH
# is as provisioning left it, the record's saved original stays; else PATH as it is now is kept
# (through STRIP, which takes our part out, when a record says provisioning wrote it before), or
# "absent"
before_write() {
    if rec=$(record_of "$1") && made_by_record "$1" "$rec" "$maker"; then
        orig=$(sed -n 's/^orig //p' "$rec")
        return 0
    fi
    _seen=no
    if rec=$(record_of "$1"); then _seen=yes; else new_record "$1"; fi
    if [ -f "$1" ] && [ ! -L "$1" ]; then
        cp -p "$1" "$rec.orig" || fail "cannot keep a copy of $1 in $records"
        if [ -n "$2" ] && [ $_seen = yes ]; then
            $2 <"$1" >"$rec.orig" || fail "cannot keep a copy of $1 in $records"
        fi
        orig=saved
    else
        rm -f "$rec.orig"
        orig=absent
    fi
}
# record_entry PATH KIND [EXTRA]: PATH as it is now, in its record (rec, from before_write, or a new one)
record_entry() {
    [ -n "${rec:-}" ] || new_record "$1"
    { made_record "$1" "$maker" && printf 'kind %s\npath %s\norig %s\n' "$2" "$1" "${orig:-none}" &&
        { [ -z "${3:-}" ] || printf '%s\n' "$3"; }; } >"$rec.new" && mv -f "$rec.new" "$rec" ||
        { rm -f "$rec.new"; fail "cannot record $1 in $records (a full disk?)"; }
    rec="" orig=""
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
        mkdir "$_d" || fail "cannot make $_d"
        rec="" orig=""
        record_entry "$_d" dir
    done <<EOF
$_todo
EOF
}
block_body() { printf 'case "$PATH" in %s | %s:*) ;; *) PATH=%s:$PATH; export PATH ;; esac\n' "$1" "$1" "$1"; }
begin="# >>> vzcaps shims (written by provision-image.sh) >>>"
end="# <<< vzcaps shims <<<"
# strip_block [DIR]: standard input without the marker block (with DIR: only when it is the block
# provisioning writes for DIR, else status 3 and nothing; no block: status 4)
strip_block() {
    awk -v b="$begin" -v e="$end" -v body="${1:+$(block_body "$1")}" '
        { l[NR] = $0 }
        END {
            for (i = 1; i <= NR; i++) if (l[i] == b) { found = i; break }
            if (!found && body != "") exit 4
            if (found && body != "" && !(l[found + 1] == body && l[found + 2] == e)) exit 3
            skip = 0
            for (i = 1; i <= NR; i++) { if (l[i] == b) skip = 1; if (!skip) print l[i]; if (l[i] == e) skip = 0 }
        }'
}
# strip_path DIR: standard input (a .path) without DIR leading its first line (status 4 when it does not)
strip_path() {
    awk -v s="$1" 'NR == 1 { if ($0 == s) $0 = ""; else if (index($0, s ":") == 1) $0 = substr($0, length(s) + 2); else bad = 1 } { print } END { exit bad ? 4 : 0 }'
}
# put_back PATH SOURCE: SOURCE's bytes in place of PATH, through a temporary beside it (the mode
# and owner of a copy made with cp -p)
put_back() {
    _t=$(mktemp "$(dirname "$1")/.vzcaps-provision.XXXXXX") || return 1
    if cp -p "$2" "$_t" && mv -f "$_t" "$1"; then return 0; fi
    rm -f "$_t"
    return 1
}
# undo_file RECORD KIND PATH ORIG EXTRA: PATH as it was, when it is as provisioning left it; else
# only provisioning's part taken out of it, or kept and named (a user's: status 0); status 1 when
# a write failed
undo_file() {
    _dir=${5#shims }
    if [ -L "$3" ]; then say "kept $3: a link now, not the file $me wrote"; return 0
    elif [ ! -e "$3" ]; then say "$3: already gone"; return 0
    elif [ ! -f "$3" ]; then say "kept $3: not a regular file now"; return 0
    fi
    if made_by_record "$3" "$1" "$maker"; then
        case $4 in
            absent) rm -f "$3" && say "removed $3" && return 0 ;;
            saved) [ -f "$1.orig" ] && put_back "$3" "$1.orig" && say "restored $3 as it was before" && return 0 ;;
        esac
        say "kept $3: cannot put back what was there before"; return 1
    fi
    _s=0
    case $2 in
        conf) say "kept $3: changed since $me wrote it"; return 0 ;;
        rc) strip_block "$_dir" <"$3" >"$records/stripped" || _s=$? ;;
        path) strip_path "$_dir" <"$3" >"$records/stripped" || _s=$? ;;
    esac
    case $_s in
        0) cp -p "$3" "$records/stripped.m" && cat "$records/stripped" >"$records/stripped.m" && put_back "$3" "$records/stripped.m" &&
               rm -f "$records/stripped.m" && say "$3: took out what $me wrote (changed since, so the rest is kept)" && return 0
           say "kept $3: cannot write it"; return 1 ;;
        3) say "kept $3: the block between the vzcaps markers was edited since $me wrote it (remove it by hand)"; return 0 ;;
        *) say "$3: nothing of $me left in it (changed since)"; return 0 ;;
    esac
}
# undo_all: every record, newest first; then (without --keep-install) the install itself
undo_all() {
    _rc=0
    if [ -L "$records" ] || { [ -e "$records" ] && [ ! -d "$records" ]; }; then
        printf '%s: %s is a link or not a directory: nothing undone\n' "$me" "$records" >&2; return 1
    fi
    if [ -d "$records" ]; then
        _vz=${prefix%/}/bin/vzcaps
        for _n in $(entries); do
            _r=$records/entry.$_n
            [ -f "$_r" ] && [ ! -L "$_r" ] || continue
            _k=$(sed -n 's/^kind //p' "$_r") _p=$(sed -n 4p "$_r") _o=$(sed -n 's/^orig //p' "$_r") _x=$(sed -n 6p "$_r")
            _p=${_p#path }
            case $_k in
                dir)
                    if [ -d "$_p" ] && [ ! -L "$_p" ]; then
                        if rmdir "$_p" 2>/dev/null; then say "removed the directory $_p"; else say "kept $_p: not empty"; fi
                    fi ;;
                shim)
                    if [ ! -e "$_p" ] && [ ! -L "$_p" ]; then say "$_p: already gone"
                    elif _e=$("$_vz" shims --dir "${_p%/*}" --remove "${_p##*/}" 2>&1 >/dev/null); then say "removed the shim $_p"
                    else say "kept $_p: $(printf '%s' "${_e:-vzcaps shims --remove refused it}" | head -n 1)"
                    fi ;;
                rc | path | conf) undo_file "$_r" "$_k" "$_p" "$_o" "$_x" || _rc=1 ;;
                *) say "kept the record $_r: not one $me wrote"; _rc=1; continue ;;
            esac
            rm -f "$_r" "$_r.orig"
        done
        rm -f "$records/stripped" "$records/stripped.m"
        rmdir "$records" 2>/dev/null || { say "kept $records: not empty"; _rc=1; }
    else
        say "nothing provisioned under $prefix (no $records)"
    fi
    [ $keep_install = no ] || return $_rc
    _u=${prefix%/}/share/vzcaps/uninstall.sh
    if [ -f "$_u" ]; then sh "$_u" --prefix "$prefix" || _rc=1
    else say "no $_u: the install is left as it is"
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
sh "$release/install.sh" --prefix "$prefix" || fail "install.sh failed (above): nothing more done"
vz=$prefix/bin/vzcaps
# the records of what follows: the install's own share/vzcaps, readable only by whoever provisions
if [ ! -d "$records" ]; then mkdir -m 700 "$records" || fail "cannot make $records"; fi
[ ! -L "$records" ] || fail "$records is a symbolic link: nothing more done"

# plain_or_absent PATH: fails unless PATH is absent or a regular file (never a link, a FIFO that
# would hang a read, a device or a directory)
plain_or_absent() {
    [ ! -L "$1" ] || fail "$1 is a symbolic link: not written through it"
    [ ! -e "$1" ] || [ -f "$1" ] || fail "$1 is not a regular file: left alone"
}
# write_new DEST SOURCE: SOURCE's bytes to DEST through a temporary file beside it, renamed
# (never through a link; mode 644)
write_new() {
    plain_or_absent "$1"
    _t=$(mktemp "$(dirname "$1")/.vzcaps-provision.XXXXXX") || fail "cannot write beside $1"
    if cat "$2" >"$_t" && chmod 644 "$_t" && mv -f "$_t" "$1"; then return 0; fi
    rm -f "$_t"
    fail "cannot write $1 (a full disk?)"
}

# ---- 2. the system config: per-program sections, validated before the image keeps it ----
[ -n "$config" ] || config=$release/vzcaps.conf.example
[ -f "$config" ] || fail "config $config is not a file"
# checked as the image will hold it (a copy, mode 644) before anything is written
cat "$config" >"$work/vzcaps.conf" && chmod 644 "$work/vzcaps.conf" || fail "cannot read $config"
set -f
for name in $names; do
    "$vz" check --config "$work/vzcaps.conf" --exe "$name" >"$work/check.txt" 2>&1 ||
        { sed "s|$work/vzcaps.conf|$config|g" "$work/check.txt" >&2; fail "vzcaps check refused $config for $name (above): nothing written"; }
done
set +f
config=$work/vzcaps.conf
make_dirs "$etc"
conf=$etc/vzcaps.conf
plain_or_absent "$conf"
if [ -e "$conf" ]; then
    if cmp -s "$conf" "$config"; then
        say "config: $conf is already this config"
    elif [ $force = yes ]; then
        before_write "$conf" ""
        write_new "$conf" "$config"
        record_entry "$conf" conf
        say "config: replaced $conf (--force)"
    else
        fail "$conf exists and differs from the config to install: not replaced (pass --force)"
    fi
else
    before_write "$conf" ""
    write_new "$conf" "$config"
    record_entry "$conf" conf
    say "config: wrote $conf"
fi

# ---- 3. shims, owned by whoever provisions (the runner's user cannot change them) ----
make_dirs "$shims"
set -f
new_shims=""
for name in $names; do
    [ -e "$shims/$name" ] || [ -L "$shims/$name" ] || new_shims="$new_shims $name"
done
# shellcheck disable=SC2086
"$vz" shims --dir "$shims" -- $names || fail "vzcaps shims failed (above)"
for name in $new_shims; do
    record_entry "$shims/$name" shim
done
set +f

# ---- 4. the runner's user: the shim directory first on PATH in every shell it starts ----
# A block between two marker lines, replaced on every run; the rest of each file is kept.
block="$begin
$(block_body "$shims")
$end"
put_block() { # put_block FILE: FILE with the block, owned by the user
    f=$home/$1
    plain_or_absent "$f"
    if [ -f "$f" ]; then
        strip_block <"$f" >"$work/rc" || fail "cannot read $f"
    else
        : >"$work/rc"
    fi
    printf '%s\n' "$block" >>"$work/rc"
    if [ -f "$f" ] && cmp -s "$f" "$work/rc"; then return 0; fi
    before_write "$f" strip_block
    write_new "$f" "$work/rc"
    [ $as_root = no ] || chown "$user" "$f" || fail "cannot give $f to $user"
    record_entry "$f" rc "shims $shims"
    say "PATH: $f puts $shims first"
}
# zsh (the login shell of a macOS user) reads .zshenv in every shell, ssh commands included;
# .zprofile runs after /etc/zprofile's path_helper, which moves earlier entries back
put_block .zshenv
put_block .zprofile
put_block .profile
[ ! -f "$home/.bash_profile" ] || put_block .bash_profile # bash reads .profile only without it

# ---- 5. the self-hosted runner service: its launchd job's runsvc.sh exports PATH from .path ----
if [ -n "$runner" ]; then
    [ -d "$runner" ] || fail "--runner-dir $runner is not a directory"
    p=$runner/.path
    plain_or_absent "$p"
    if [ -f "$p" ]; then rest=$(cat "$p"); else rest=/usr/bin:/bin:/usr/sbin:/sbin; fi # launchd's own PATH
    rest=$(printf '%s\n' "$rest" | head -n 1 | tr ':' '\n' | awk -v s="$shims" 'NF && $0 != s' | paste -s -d : -)
    printf '%s\n' "$shims${rest:+:$rest}" >"$work/path"
    if ! { [ -f "$p" ] && cmp -s "$p" "$work/path"; }; then
        before_write "$p" "strip_path $shims"
        write_new "$p" "$work/path"
        [ $as_root = no ] || chown "$user" "$p" || fail "cannot give $p to $user"
        record_entry "$p" path "shims $shims"
    fi
    say "runner: $p starts with $shims (restart the service: ./svc.sh stop && ./svc.sh start)"
fi

# ---- 6. a LaunchAgent for a long-running server, written and bootstrapped as the user ----
if [ -n "$server" ]; then
    # the program is resolved without the shims: the agent runs the real one with the library
    plain=$(printf '%s\n' "$PATH" | tr ':' '\n' | awk -v s="$shims" 'NF && $0 != s' | paste -s -d : -)
    if [ "$(id -un)" = "$user" ]; then
        HOME=$home PATH=$plain "$vz" launchd --label "$server" --keep-alive --install -- "$@" || fail "vzcaps launchd failed (above)"
    else
        sudo -u "$user" env HOME="$home" PATH="$plain" "$vz" launchd --label "$server" --keep-alive --install -- "$@" ||
            fail "vzcaps launchd as $user failed (above)"
    fi
fi
say "$me: done; check with: $vz doctor"
