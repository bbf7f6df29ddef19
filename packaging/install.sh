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
# check_manifest FILE: the manifest's lines ("dir PATH", "file SHA256 PATH", "parent N DEV INO":
# the Nth directory above the prefix, made by install.sh, by its device and inode; and in the
# journal of a run (written before what it names is made): "parent N" about to be made, "temp
# PATH" a temporary copy, a PATH's second "file" line, its bytes about to be) on stdout, or a
# message per bad line on stderr and status 1
check_manifest() {
    awk -v me="$me" -v file="$1" '
        NR == 1 { if ($0 != "# vzcaps install-manifest 1") { printf "%s: %s is not a manifest written by install.sh (first line)\n", me, file > "/dev/stderr"; bad = 1; exit 1 } next }
        /^#/ { next }
        {
            ok = 0
            if (($1 == "dir" || $1 == "temp") && NF == 2) { p = $2; k = $1 " " p; ok = 1 }
            if ($1 == "file" && NF == 3 && length($2) == 64 && $2 ~ /^[0-9a-f]+$/) { p = $3; k = $0; ok = 1 }
            if ($1 == "parent" && (NF == 4 || NF == 2) && $2 ~ /^[1-9][0-9]*$/ && $3 ~ /^[0-9]*$/ && $4 ~ /^[0-9]*$/) { k = "parent " $2; ok = 2 }
            if (ok == 1 && p != "." && (p !~ /^[A-Za-z0-9._+][A-Za-z0-9._+\/-]*$/ || p ~ /(^|\/)\.\.?(\/|$)/ || p ~ /\/\/|\/$/)) ok = 0
            if (ok && (k in seen)) ok = 0
            if (!ok) { printf "%s: %s line %d is malformed\n", me, file, NR > "/dev/stderr"; bad = 1 }
            else { seen[k] = 1; print }
        }
        END { exit bad }' "$1"
}
# parent_dir N: the Nth directory above the prefix
parent_dir() {
    _pd=$prefix _pn=0
    while [ $_pn -lt "$1" ]; do _pd=$(dirname "$_pd"); _pn=$((_pn + 1)); done
    printf '%s\n' "$_pd"
}
# made_parent N [DEV INO]: the Nth directory above the prefix is the one install.sh made there (a
# directory, not a link, of that device and inode; its time changes with what it holds; without
# them, one a journal names as about to be made)
made_parent() {
    _pd=$(parent_dir "$1") && [ -d "$_pd" ] && [ ! -L "$_pd" ] || return 1
    [ -n "${2:-}" ] || return 0
    _pi=$(made_stat "$_pd") && [ "${_pi% *}" = "$2 $3" ]
}
# journals: the journals of an install into this prefix killed before share/vzcaps was there to
# hold its manifest (install.sh writes one beside the nearest directory there is, owned by the
# one installing, before it makes the first), one path a line; only their dir and parent lines count
journals() {
    _jd=$base/share/vzcaps
    while [ "$_jd" != / ]; do
        _jd=$(dirname "$_jd")
        set +f
        for _j in "$_jd"/.vzcaps-install-journal.*; do
            [ -f "$_j" ] && [ ! -L "$_j" ] && [ -O "$_j" ] && [ "$(sed -n 2p "$_j")" = "# the journal of an install into $prefix" ] &&
                printf '%s\n' "$_j"
        done
        set -f
    done
}
# journal_lines: the dir and parent lines of those journals
journal_lines() {
    journals | while IFS= read -r _j; do check_manifest "$_j" 2>/dev/null | grep -E '^(dir|parent) '; done
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
# a run killed before share/vzcaps held its manifest left a journal of the directories it made
jlines=$(journal_lines)
[ -z "$jlines" ] || old=$(printf '%s\n%s\n' "$old" "$jlines" | awk 'NF')
# the temporary copy of each file, beside it (a name of install.sh's: .vzcaps-install.NAME)
tmps=$(printf '%s\n' "$files" | sed 's|^\(.*\)/\([^/]*\)$|\1/.vzcaps-install.\2 &|')
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
while read -r t f; do
    [ -e "$base/$t" ] || [ -L "$base/$t" ] || continue
    [ -f "$base/$t" ] && [ ! -L "$base/$t" ] && printf '%s\n' "$old" | grep -Fqx "temp $t" ||
        conflict "$base/$t" "exists and is not a temporary copy install.sh's record names"
done <<EOF
$tmps
EOF
[ -z "$conflicts" ] || { printf '%s: cannot install into %s:%s\nnothing installed\n' "$me" "$(q "$prefix")" "$conflicts" >&2; exit 1; }

# ---- already installed: every file there with this release's bytes and named so by the
# manifest, with the modes it gives them: nothing is written (a second run changes nothing) ----
same=no
if [ -n "$old" ] && [ -z "$jlines" ] && ! printf '%s\n' "$old" | grep -q '^temp '; then
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

# ---- 3. copy, as a journal: what this run makes is recorded before it is made (in the manifest,
# or, before share/vzcaps is there to hold it, in a journal beside the nearest directory there
# is), so that uninstall.sh after a kill at any point removes it all and a rerun carries it on.
# Each file goes to its temporary copy beside its destination, checked, then renamed ----
sdir=$base/share/vzcaps
created=""      # directories this run made, in the order made ("." the prefix)
parents=""      # "parent N DEV INO" lines: the directories above the prefix this run made
installed=""    # "file SHA256 PATH" lines: the files renamed into place
journal0=""     # this run's journal outside share/vzcaps, while it is needed
wrote=no        # whether this run wrote the manifest
# what this run will make: the directories above the prefix ("N PATH", outermost first), the
# prefix itself and the directories under it
up_todo="" todo=""
if [ ! -d "$prefix" ]; then
    _up=0 _d=$prefix
    while _d=$(dirname "$_d") && [ ! -d "$_d" ]; do
        _up=$((_up + 1))
        up_todo="$_up $_d
$up_todo"
    done
    todo=".
"
fi
for d in $needed_dirs; do
    [ -d "$base/$d" ] || todo="$todo$d
"
done
# step: a point between two writes. For the test of a run killed at each point,
# INSTALL_SH_STOP_AT=N kills it (SIGKILL: no trap runs) at the Nth
_step=0
step() {
    _step=$((_step + 1))
    [ "$_step" != "${INSTALL_SH_STOP_AT:-}" ] || kill -KILL $$
}
# manifest_text journal|final: the manifest: in a journal also what is about to be made (the
# directories, the temporary copies, each file's bytes about to be); final: what is there
manifest_text() {
    echo "# vzcaps install-manifest 1"
    echo "# what install.sh of $name installed under this prefix; uninstall.sh removes these files"
    echo "# when they are unchanged, then these directories when empty"
    { printf '%s\n' "$old" | grep '^dir '; printf '%s' "$created" | sed 's/^/dir /'
      [ "$1" = final ] || printf '%s' "$todo" | sed 's/^/dir /'; } | awk 'NF && !seen[$0]++'
    { printf '%s' "$parents"; printf '%s\n' "$old" | grep '^parent '; } | awk 'NF && !seen[$2]++'
    if [ "$1" = journal ]; then
        printf '%s\n' "$tmps" | sed -n 's/^\([^ ]*\) .*/temp \1/p'
        { printf '%s\n' "$old" | grep '^file '
          { printf '%s\n\n' "$files"; printf '%s\n' "$sums"; } | awk 'NF == 0 { s = 1; next } !s { w[$0] = 1; next } $2 in w { print "file " $0 }'
        } | awk '!seen[$0]++'
        return 0
    fi
    printf '%s\n' "$installed" | grep '^file '
    # files of an earlier install that this one did not replace
    printf '%s\n' "$old" | grep '^file ' | while read -r _k _h _p; do
        printf '%s\n' "$installed" | awk -v p="$_p" '$3 == p { f = 1 } END { exit !f }' || echo "file $_h $_p"
    done | awk '!seen[$3]++'
}
# write_manifest journal|final: the manifest, whole or not at all (a temporary beside it, renamed)
write_manifest() {
    [ -d "$sdir" ] || return 1
    _t=$sdir/.install-manifest.new
    rm -f "$_t"
    manifest_text "$1" >"$_t" && chmod 644 "$_t" && [ ! -L "$manifest" ] && [ ! -d "$manifest" ] && mv -f "$_t" "$manifest" &&
        wrote=yes && return 0
    rm -f "$_t"
    return 1
}
abort() {
    trap - INT TERM HUP
    printf '%s\n' "$tmps" | while read -r _t _f; do [ ! -f "$base/$_t" ] || [ -L "$base/$_t" ] || rm -f "$base/$_t"; done
    if [ -n "$installed$created$parents$(printf '%s\n' "$old" | grep -v '^temp ')" ] && write_manifest final; then
        [ -z "$journal0" ] || rm -f "$journal0"
        printf '%s: %s: stopped; the files installed so far are in %s (uninstall.sh removes them)\n' "$me" "$1" "$(q "$manifest")" >&2
    else
        # nothing recorded: the directories this run made go again, when empty
        [ $wrote = no ] || rm -f "$manifest"
        for _d in $(printf '%s' "$created" | awk '{ l[++n] = $0 } END { while (n) print l[n--] }'); do
            if [ "$_d" = . ]; then rmdir "$prefix" 2>/dev/null; else rmdir "$base/$_d" 2>/dev/null; fi
        done
        printf '%s' "$parents" | sort -k2,2n | while read -r _k _n _dv _in; do
            made_parent "$_n" "$_dv" "$_in" && rmdir "$(parent_dir "$_n")" 2>/dev/null
        done
        [ -z "$journal0" ] || rm -f "$journal0"
        printf '%s: %s: stopped\n' "$me" "$1" >&2
    fi
    exit 1
}
trap 'abort "interrupted"' INT TERM HUP
make_dir() { # make_dir REL: creates PREFIX/REL (mode 755, whatever the umask) and records it
    _md=$base/$1
    [ "$1" != . ] || _md=$prefix
    if mkdir -m 755 "$_md" 2>/dev/null; then created="$created$1
"
    elif [ ! -d "$_md" ]; then abort "cannot create $(q "$_md")"
    fi
}
# a stale temporary copy of a killed run, named by its record, goes
printf '%s\n' "$old" | sed -n 's/^temp //p' | while read -r t; do
    [ ! -f "$base/$t" ] || [ -L "$base/$t" ] || rm -f "$base/$t"
done
if [ ! -d "$sdir" ]; then
    # the directories on the way to share/vzcaps: recorded first in a journal beside the nearest
    # directory there is (owned by the one installing; uninstall.sh looks there), then made
    _nd=$sdir
    while [ ! -d "$_nd" ]; do _nd=$(dirname "$_nd"); done
    journal0=$_nd/.vzcaps-install-journal.$$
    if [ -e "$journal0" ] || [ -L "$journal0" ]; then # a killed run's of the same number: merged above
        journals | grep -Fqx -- "$journal0" && rm -f "$journal0"
    fi
    { echo "# vzcaps install-manifest 1"; echo "# the journal of an install into $prefix"
      printf '%s' "$up_todo" | sed -n 's/^\([0-9]*\) .*/parent \1/p'; printf '%s' "$todo" | sed 's/^/dir /'; } |
        (set -C && cat >"$journal0") 2>/dev/null || { journal0=""; abort "cannot write $(q "$_nd")/.vzcaps-install-journal.$$"; }
    step
    while read -r _n _d; do
        [ -n "$_n" ] || continue
        mkdir -m 755 "$_d" 2>/dev/null || abort "cannot create $(q "$_d")"
        _id=$(made_stat "$_d") && [ -n "$_id" ] || abort "cannot read $(q "$_d")"
        parents="${parents}parent $_n ${_id% *}
"
        step
    done <<EOF
$up_todo
EOF
    for d in . share share/vzcaps; do
        printf '%s' "$todo" | grep -Fqx -- "$d" || continue
        make_dir "$d"
        step
    done
fi
write_manifest journal || abort "cannot write $(q "$manifest")"
step
# the journals, this run's and a killed run's (the manifest holds what they named now)
journals | while IFS= read -r _j; do rm -f "$_j"; done
journal0=""
step
_i=0
for d in $todo; do
    [ -d "$base/$d" ] || make_dir "$d"
    _i=$((_i + 1))
    [ $_i != 1 ] || step
done
step
# each_copy FUNCTION: FUNCTION TEMPORARY PATH for each file, with a step after the first and the last
each_copy() {
    _i=0
    while read -r t f; do
        [ -n "$f" ] || continue
        "$1" "$t" "$f"
        _i=$((_i + 1))
        [ $_i != 1 ] || step
    done <<EOF
$tmps
EOF
    step
}
copy_one() {
    (set -C && cat "$here/$2" >"$base/$1") 2>/dev/null || abort "cannot write $(q "$base/$2") (a full disk?)"
    case $2 in bin/* | *.sh) mode=755 ;; *) mode=644 ;; esac
    chmod $mode "$base/$1" || abort "cannot set the mode of $(q "$base/$2")"
}
place_one() {
    dest=$base/$2
    [ ! -d "$dest" ] || abort "$(q "$dest") became a directory"
    [ ! -L "$dest" ] || rm -f "$dest" || abort "cannot replace the link $(q "$dest")"
    mv -f "$base/$1" "$dest" || abort "cannot put $(q "$dest") in place"
    installed="${installed}file $(lookup "$sums" "$2") $2
"
}
each_copy copy_one
copied=$(digests "$base" $(printf '%s\n' "$tmps" | cut -d' ' -f1))
while read -r t f; do
    [ -n "$f" ] || continue
    h=$(lookup "$sums" "$f")
    [ "$(lookup "$copied" "$t")" = "$h" ] || abort "the copy of $f does not match its checksum (a failing disk?)"
done <<EOF
$tmps
EOF
each_copy place_one
write_manifest final || abort "cannot write $(q "$manifest")"
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
