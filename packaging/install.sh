#!/bin/sh
# install.sh [--prefix DIR] [--force]: installs vzcaps from this release directory under DIR
# (default /usr/local): every file under bin/, lib/ and share/, each checked against SHA256SUMS
# first, and a manifest of what it installed (DIR/share/vzcaps/install-manifest) that
# uninstall.sh reads. Never: copies anything when a checksum line is missing, malformed or
# wrong; writes through a link; replaces a file it did not install (unless --force). Only what
# a stock Mac has: /bin/sh, BSD tools, shasum (sha256sum elsewhere).
set -u
set -f
me=install.sh
usage="usage: install.sh [--prefix DIR] [--force]   (default prefix /usr/local; DIR relative to the current directory)"
prefix=/usr/local
force=no
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { echo "$me: --prefix needs a directory ($usage)" >&2; exit 2; }; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --force) force=yes; shift ;;
        -h|--help)
            echo "$usage"
            echo "Checks every file against SHA256SUMS, installs under the prefix, removes the quarantine"
            echo "attribute, and records what it installed in PREFIX/share/vzcaps/install-manifest."
            echo "--force: install on a system other than macOS (the programs will not run there), and"
            echo "replace files under the prefix that install.sh did not install."
            exit 0 ;;
        *) echo "$me: unknown argument \"$1\" ($usage)" >&2; exit 2 ;;
    esac
done

# ---- shared with uninstall.sh (kept identical; a test compares them) ----
# q PATH: PATH as one shell word (quoted when it needs it), for messages a user may paste; a
# control character (which a terminal would act on) is shown as ?
q() {
    case $1 in
        '' | *[!A-Za-z0-9_./+:@%,=-]*) printf "'%s'" "$(printf '%s' "$1" | tr '[:cntrl:]' '?' | sed "s/'/'\\\\''/g")" ;;
        *) printf '%s' "$1" ;;
    esac
}
# resolve_prefix: PREFIX made absolute against the caller's directory, ~ expanded; exits 2 on
# what cannot be a prefix
resolve_prefix() {
    case $prefix in
        '') echo "$me: --prefix is empty ($usage)" >&2; exit 2 ;;
        *[[:cntrl:]]*) echo "$me: --prefix $(q "$prefix" | tr '[:cntrl:]' '?') has a control character: refused" >&2; exit 2 ;;
        '~' | '~/'*)
            [ -n "${HOME:-}" ] || { echo "$me: --prefix $(q "$prefix"): HOME is not set, so ~ cannot be expanded" >&2; exit 2; }
            prefix=$HOME${prefix#'~'} ;;
        '~'*) echo "$me: --prefix $(q "$prefix"): ~USER is not expanded here: give the full path" >&2; exit 2 ;;
    esac
    case $prefix in
        /*) ;;
        *) prefix=$(pwd)/$prefix ;;
    esac
    prefix=$(printf '%s\n' "$prefix" | sed -e 's|//*|/|g' -e ':a' -e 's|/\./|/|g' -e 'ta' -e 's|/\.$||' -e 's|\(.\)/$|\1|')
    [ -n "$prefix" ] || prefix=/
}
# digests DIR PATH...: "SHA256 PATH" for each PATH under DIR that could be read, from one run
# of the tool (the PATHs are checked plain names: nothing in them is escaped)
digests() {
    _dir=${1:-/}
    shift
    [ $# -gt 0 ] || return 0
    (cd "$_dir" && $sumtool "$@" 2>/dev/null) | sed -n 's/^\([0-9a-f]\{64\}\) [ *]\(.*\)$/\1 \2/p'
}
# lookup TABLE PATH: the SHA-256 that TABLE ("SHA256 PATH" lines) gives PATH, or nothing
lookup() { printf '%s\n' "$1" | awk -v p="$2" '$2 == p { print $1; exit }'; }
# shasum ships with macOS; sha256sum is the fallback elsewhere
if command -v shasum >/dev/null 2>&1; then sumtool="shasum -a 256"; elif command -v sha256sum >/dev/null 2>&1; then sumtool=sha256sum; else sumtool=""; fi
[ -n "$sumtool" ] || { echo "$me: shasum is needed to check the files" >&2; exit 1; }
# check_manifest FILE: the manifest's lines ("dir PATH", "file SHA256 PATH" and "parent N DEV INO":
# the Nth directory above the prefix, made by install.sh, by its device and inode) on stdout, or
# a message per bad line on stderr and status 1
check_manifest() {
    awk -v me="$me" -v file="$1" '
        NR == 1 { if ($0 != "# vzcaps install-manifest 1") { printf "%s: %s is not a manifest written by install.sh (first line)\n", me, file > "/dev/stderr"; bad = 1; exit 1 } next }
        /^#/ { next }
        {
            ok = 0
            if ($1 == "dir" && NF == 2) { p = $2; ok = 1 }
            if ($1 == "file" && NF == 3 && length($2) == 64 && $2 ~ /^[0-9a-f]+$/) { p = $3; ok = 1 }
            if ($1 == "parent" && NF == 4 && $2 ~ /^[1-9][0-9]*$/ && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/) { p = "parent " $2; ok = 2 }
            if (ok == 1 && p != "." && (p !~ /^[A-Za-z0-9._+][A-Za-z0-9._+\/-]*$/ || p ~ /(^|\/)\.\.?(\/|$)/ || p ~ /\/\/|\/$/)) ok = 0
            if (ok && (p in seen)) ok = 0
            if (!ok) { printf "%s: %s line %d is malformed\n", me, file, NR > "/dev/stderr"; bad = 1 }
            else { seen[p] = 1; print }
        }
        END { exit bad }' "$1"
}
# parent_dir N: the Nth directory above the prefix
parent_dir() {
    _pd=$prefix _pn=0
    while [ $_pn -lt "$1" ]; do _pd=$(dirname "$_pd"); _pn=$((_pn + 1)); done
    printf '%s\n' "$_pd"
}
# made_parent N DEV INO: the Nth directory above the prefix is the one install.sh made there (a
# directory, not a link, of that device and inode; its time changes with what it holds)
made_parent() {
    _pd=$(parent_dir "$1") && [ -d "$_pd" ] && [ ! -L "$_pd" ] || return 1
    _pi=$(made_stat "$_pd") && [ "${_pi% *}" = "$2 $3" ]
}
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
# ---- end of the shared part ----

resolve_prefix
base=${prefix%/} # joins: "$base/bin", also when the prefix is /
here=$(cd -P -- "$(dirname -- "$0")" && pwd -P) || { echo "$me: cannot find the release directory" >&2; exit 1; }
name=${here##*/}
say() { printf '%s\n' "$*" || exit 1; } # a failed write to standard output is an error
fail() { printf '%s: %s\n' "$me" "$*" >&2; exit 1; }

os=$(uname -s)
if [ "$os" != Darwin ]; then
    [ $force = yes ] || fail "this system is $os, not macOS: this release holds macOS programs (Mach-O), which do not run here (Exec format error): nothing installed. Pass --force to lay the files out anyway (onto a Mac's disk, say)."
    say "$me: this system is $os, not macOS: laying the files out as asked (--force); the programs will not run here"
fi

# ---- 1. the release: every file under bin/, lib/ and share/ must have a valid, matching line ----
[ -f "$here/SHA256SUMS" ] && [ ! -L "$here/SHA256SUMS" ] || fail "$(q "$here/SHA256SUMS") is missing (a damaged release): nothing installed"
sums=$(awk -v me="$me" '
    {
        h = tolower(substr($0, 1, 64)); sep = substr($0, 65, 2); p = substr($0, 67)
        ok = length($0) > 66 && h ~ /^[0-9a-f]+$/ && length(h) == 64 && (sep == "  " || sep == " *")
        if (ok && (p !~ /^[A-Za-z0-9._+][A-Za-z0-9._+\/-]*$/ || p ~ /(^|\/)\.\.?(\/|$)/ || p ~ /\/\/|\/$/)) ok = 0
        if (ok && (p in seen)) { printf "%s: SHA256SUMS line %d lists %s a second time\n", me, NR, p > "/dev/stderr"; bad = 1; next }
        if (!ok) { printf "%s: SHA256SUMS line %d is not \"SHA-256  PATH\" (a damaged release)\n", me, NR > "/dev/stderr"; bad = 1; next }
        seen[p] = 1
        print h, p
    }
    END { exit bad }' "$here/SHA256SUMS") || fail "SHA256SUMS is malformed: nothing installed"
for top in bin lib share; do
    [ -d "$here/$top" ] && [ ! -L "$here/$top" ] || fail "$(q "$here/$top") is missing (a damaged release): nothing installed"
done
odd=$(cd "$here" && find bin lib share \( ! -type f ! -type d \) -o -name '*[!A-Za-z0-9._+-]*' -o -name '-*' | head -n 3)
[ -z "$odd" ] || fail "the release holds $(printf '%s' "$odd" | tr '[:cntrl:]' '?' | sed -n 1p) and the like, which is not a plain file with a plain name: nothing installed"
files=$(cd "$here" && find bin lib share -type f | LC_ALL=C sort)
for required in bin/vzcaps lib/libvzcaps.dylib; do
    printf '%s\n' "$files" | grep -Fqx "$required" || fail "$(q "$here/$required") is missing or not a file (a damaged release): nothing installed"
done
problems=""
for f in $files; do
    [ -n "$(lookup "$sums" "$f")" ] || problems="$problems
  $f: no line in SHA256SUMS"
done
present=""
for p in $(printf '%s\n' "$sums" | cut -d' ' -f2); do
    if [ -L "$here/$p" ] || [ ! -f "$here/$p" ]; then
        problems="$problems
  $p: listed in SHA256SUMS but missing or not a file"
    else
        present="$present $p"
    fi
done
actual=$(digests "$here" $present)
for p in $present; do
    [ "$(lookup "$actual" "$p")" = "$(lookup "$sums" "$p")" ] || problems="$problems
  $p: does not match its SHA256SUMS line"
done
[ -z "$problems" ] || { printf '%s: the files do not match SHA256SUMS (a damaged or altered release): nothing installed%s\n' "$me" "$problems" >&2; exit 1; }

# ---- 2. the destination: nothing is replaced that install.sh did not install ----
manifest_rel=share/vzcaps/install-manifest
manifest=$base/$manifest_rel
old=""
if [ -L "$manifest" ] || { [ -e "$manifest" ] && [ ! -f "$manifest" ]; }; then
    fail "$(q "$manifest") is a link or not a file: nothing installed"
elif [ -e "$manifest" ]; then
    if old=$(check_manifest "$manifest"); then :
    elif [ $force = yes ]; then old=""
    else fail "$(q "$manifest") was not written by install.sh: nothing installed (move it away, or pass --force)"
    fi
fi
conflicts=""
conflict() { conflicts="$conflicts
  $(q "$1"): $2"; }
# the directories on the way to each file, prefix first
dirs_of() {
    printf '%s\n' "$files" | sed -n 's|/[^/]*$||p' | awk -F/ '{ p = ""; for (i = 1; i <= NF; i++) { p = p (i > 1 ? "/" : "") $i; print p } }' | LC_ALL=C sort -u
    echo share/vzcaps
}
needed_dirs=$(dirs_of | LC_ALL=C sort -u)
if [ -e "$prefix" ] && [ ! -d "$prefix" ]; then conflict "$prefix" "exists and is not a directory"; fi
for d in $needed_dirs; do
    if [ -e "$base/$d" ] && [ ! -d "$base/$d" ]; then conflict "$base/$d" "exists and is not a directory"
    elif [ -L "$base/$d" ] && [ ! -e "$base/$d" ]; then conflict "$base/$d" "is a dangling link"
    fi
done
existing=""
for f in $files; do
    if [ -f "$base/$f" ] && [ ! -L "$base/$f" ]; then existing="$existing $f"; fi
done
current=$(digests "$base" $existing)
for f in $files share/vzcaps/install-manifest; do
    dest=$base/$f
    if [ -L "$dest" ]; then
        [ $force = yes ] || conflict "$dest" "is a symbolic link, which install.sh did not make (pass --force to replace the link itself)"
    elif [ -d "$dest" ]; then
        conflict "$dest" "is a directory where a file goes"
    elif [ -e "$dest" ] && [ ! -f "$dest" ]; then
        conflict "$dest" "is not a regular file"
    elif [ -e "$dest" ] && [ "$f" != "$manifest_rel" ]; then
        cur=$(lookup "$current" "$f")
        [ -n "$cur" ] || cur=unreadable
        [ "$cur" = "$(lookup "$sums" "$f")" ] && continue # the same bytes: replacing them changes nothing
        printf '%s\n' "$old" | grep -Fqx "file $cur $f" && continue # what install.sh installed, unchanged since
        [ $force = yes ] || conflict "$dest" "exists and is not what install.sh installed (pass --force to replace it)"
    fi
done
[ -z "$conflicts" ] || { printf '%s: cannot install into %s:%s\nnothing installed\n' "$me" "$(q "$prefix")" "$conflicts" >&2; exit 1; }

# ---- already installed: every file there with this release's bytes and named so by the
# manifest, with the modes it gives them: nothing is written (a second run changes nothing) ----
same=no
if [ -n "$old" ]; then
    same=yes
    for f in $files; do
        h=$(lookup "$sums" "$f")
        case $f in bin/* | *.sh) _m=-rwxr-xr-x ;; *) _m=-rw-r--r-- ;; esac # the mode step 3 gives it (755, 644)
        [ "$(ls -ld -- "$base/$f" | cut -c1-10)" = "$_m" ] || { same=no; break; } # a command that cannot start: repaired
        if [ -L "$base/$f" ] || [ ! -f "$base/$f" ] || [ "$(lookup "$current" "$f")" != "$h" ] ||
            ! printf '%s\n' "$old" | grep -Fqx "file $h $f"; then same=no; break; fi
    done
fi
if [ $same = yes ]; then
    say "already installed: the $(printf '%s\n' "$files" | grep -c .) files in $(q "$prefix") are this release's: nothing written"
else

# ---- 3. copy: each file to a new temporary file beside its destination, checked, renamed ----
created=""    # directories this run made, in the order made
parents=""    # "parent N DEV INO" lines: the directories above the prefix this run made
installed=""  # "file SHA256 PATH" lines
tmps=""       # "TEMPORARY PATH" lines, relative to the prefix
write_manifest() {
    [ -d "$base/share/vzcaps" ] || return 1
    _t=$(mktemp "$base/share/vzcaps/.install-manifest.XXXXXX") || return 1
    {
        echo "# vzcaps install-manifest 1"
        echo "# what install.sh of $name installed under this prefix; uninstall.sh removes these files"
        echo "# when they are unchanged, then these directories when empty"
        { printf '%s\n' "$old" | grep '^dir '; printf '%s' "$created" | sed 's/^/dir /'; } | awk 'NF && !seen[$0]++'
        { printf '%s\n' "$old" | grep '^parent '; printf '%s' "$parents"; } | awk 'NF && !seen[$2]++'
        printf '%s\n' "$installed" | grep '^file '
        # files of an earlier install that this one did not replace
        printf '%s\n' "$old" | grep '^file ' | while read -r _k _h _p; do
            printf '%s\n' "$installed" | awk -v p="$_p" '$3 == p { f = 1 } END { exit !f }' || echo "file $_h $_p"
        done
    } >"$_t" && chmod 644 "$_t" && [ ! -L "$manifest" ] && [ ! -d "$manifest" ] && mv -f "$_t" "$manifest" && return 0
    rm -f "$_t"
    return 1
}
abort() {
    for _t in $(printf '%s' "$tmps" | cut -d' ' -f1); do rm -f "$base/$_t"; done
    if [ -n "$installed$created" ] && write_manifest; then
        printf '%s: %s: stopped; the files installed so far are in %s (uninstall.sh removes them)\n' "$me" "$1" "$(q "$manifest")" >&2
    else
        # nothing recorded: the directories this run made go again, when empty
        for _d in $(printf '%s' "$created" | awk '{ l[++n] = $0 } END { while (n) print l[n--] }'); do
            if [ "$_d" = . ]; then rmdir "$prefix" 2>/dev/null; else rmdir "$base/$_d" 2>/dev/null; fi
        done
        printf '%s' "$parents" | sort -k2,2n | while read -r _k _n _dv _in; do
            made_parent "$_n" "$_dv" "$_in" && rmdir "$(parent_dir "$_n")" 2>/dev/null
        done
        printf '%s: %s: stopped\n' "$me" "$1" >&2
    fi
    exit 1
}
trap 'abort "interrupted"' INT TERM HUP
make_dir() { # make_dir REL: creates PREFIX/REL (mode 755) and records it
    if mkdir -m 755 "$base/$1" 2>/dev/null; then created="$created$1
"
    elif [ ! -d "$base/$1" ]; then abort "cannot create $(q "$base/$1")"
    fi
}
if [ ! -d "$prefix" ]; then
    # the missing directories above the prefix, outermost first: each made (mode 755, whatever
    # the umask) and recorded by its device and inode, so uninstall.sh removes them again
    _up=0 _d=$prefix _missing=""
    while _d=$(dirname "$_d") && [ ! -d "$_d" ]; do
        _up=$((_up + 1))
        _missing="$_up $_d
$_missing"
    done
    while read -r _n _d; do
        [ -n "$_n" ] || continue
        mkdir -m 755 "$_d" 2>/dev/null || abort "cannot create $(q "$_d")"
        _id=$(made_stat "$_d") && [ -n "$_id" ] || abort "cannot read $(q "$_d")"
        parents="${parents}parent $_n ${_id% *}
"
    done <<EOF
$_missing
EOF
    mkdir -m 755 "$prefix" 2>/dev/null || abort "cannot create $(q "$prefix")"
    created=".
"
fi
for d in $needed_dirs; do
    [ -d "$base/$d" ] || make_dir "$d"
done
for f in $files; do
    dest=$base/$f
    tmp=$(mktemp "$(dirname "$dest")/.vzcaps-install.XXXXXX") || abort "cannot create a temporary file beside $(q "$dest")"
    tmps="$tmps${tmp#"$base/"} $f
"
    cat "$here/$f" >"$tmp" 2>/dev/null || abort "cannot write $(q "$dest") (a full disk?)"
    case $f in bin/* | *.sh) mode=755 ;; *) mode=644 ;; esac
    chmod $mode "$tmp" || abort "cannot set the mode of $(q "$dest")"
done
copied=$(digests "$base" $(printf '%s' "$tmps" | cut -d' ' -f1))
while read -r t f; do
    [ -n "$f" ] || continue
    h=$(lookup "$sums" "$f")
    [ "$(lookup "$copied" "$t")" = "$h" ] || abort "the copy of $f does not match its checksum (a failing disk?)"
done <<EOF
$tmps
EOF
while read -r t f; do
    [ -n "$f" ] || continue
    dest=$base/$f
    [ ! -d "$dest" ] || abort "$(q "$dest") became a directory"
    [ ! -L "$dest" ] || rm -f "$dest" || abort "cannot replace the link $(q "$dest")"
    mv -f "$base/$t" "$dest" || abort "cannot put $(q "$dest") in place"
    installed="${installed}file $(lookup "$sums" "$f") $f
"
done <<EOF
$tmps
EOF
tmps=""
write_manifest || abort "cannot write $(q "$manifest")"
trap - INT TERM HUP
n=$(printf '%s' "$installed" | grep -c '^file ')
say "installed $n files into $(q "$prefix") (the list: $(q "$manifest"))"
fi

# ---- 4. quarantine: a browser download marks the files; Gatekeeper and dyld refuse them ----
rc=0
if command -v xattr >/dev/null 2>&1; then
    nq=0
    for f in $files; do
        dest=$base/$f
        if xattr -p com.apple.quarantine "$dest" >/dev/null 2>&1; then
            if xattr -d com.apple.quarantine "$dest" >/dev/null 2>&1; then nq=$((nq + 1))
            else printf '%s: cannot remove com.apple.quarantine from %s: run xattr -d com.apple.quarantine %s\n' "$me" "$(q "$dest")" "$(q "$dest")" >&2; rc=1
            fi
        fi
    done
    if [ $nq -gt 0 ]; then say "quarantine: removed com.apple.quarantine from $nq installed files"
    elif xattr -p com.apple.quarantine "$here/bin/vzcaps" >/dev/null 2>&1; then say "quarantine: this release is quarantined (a browser download); the installed files are not"
    else say "quarantine: none on the installed files"
    fi
else
    say "quarantine: no xattr command (not macOS): nothing to remove"
fi
case ":${PATH:-}:" in
    *":$base/bin:"*) ;;
    *) say "note: $(q "$base/bin") is not in PATH" ;;
esac
# zsh finds completions in the directories of its fpath, whose default (zsh -f: no start-up file
# read) holds /usr/local/share/zsh/site-functions but not another prefix's; bash-completion and
# fish need no such line for /usr/local, and ~/.local is bash-completion's own user directory
zdir=$base/share/zsh/site-functions
if command -v zsh >/dev/null 2>&1 &&
    ! zsh -fc 'for d in $fpath; do [[ $d == $1 ]] && exit 0; done; exit 1' zsh "$zdir" >/dev/null 2>&1; then
    say "note: zsh completes vzcaps once ~/.zshrc has fpath=($(q "$zdir") \$fpath) before compinit"
fi
say "next: $(q "$base/bin/vzcaps") doctor"
exit $rc
