#!/bin/sh
# uninstall.sh [--prefix DIR] [--all [--yes]]: removes what install.sh installed under DIR
# (default /usr/local, or the prefix this copy was installed into): exactly the files listed in
# DIR/share/vzcaps/install-manifest whose SHA-256 still matches (a changed file is kept and
# named), then the directories install.sh created, when empty. --all also removes the
# LaunchAgents `vzcaps launchd` installed (after launchctl bootout), ~/Library/Logs/vzcaps and
# ~/Library/Caches/vzcaps, and lists prepared copies; --yes removes those too. Never: removes a
# file the manifest does not list, a changed file, or a non-empty directory. Only what a stock
# Mac has.
set -u
set -f
me=uninstall.sh
usage="usage: uninstall.sh [--prefix DIR] [--all [--yes]]   (default prefix /usr/local; DIR relative to the current directory)"
prefix=""
all=no
yes=no
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { echo "$me: --prefix needs a directory ($usage)" >&2; exit 2; }; prefix=$2; shift 2
            [ -n "$prefix" ] || { echo "$me: --prefix is empty ($usage)" >&2; exit 2; } ;;
        --prefix=*) prefix=${1#--prefix=}; shift
            [ -n "$prefix" ] || { echo "$me: --prefix is empty ($usage)" >&2; exit 2; } ;;
        --all) all=yes; shift ;;
        --yes) yes=yes; shift ;;
        -h|--help)
            echo "$usage"
            echo "Removes the files install.sh recorded in PREFIX/share/vzcaps/install-manifest that are unchanged,"
            echo "then the directories it created, when empty."
            echo "--all: also the LaunchAgents vzcaps installed, ~/Library/Logs/vzcaps and ~/Library/Caches/vzcaps,"
            echo "and lists the prepared copies in ~/Library/Application Support/vzcaps/prepared (--yes removes them)."
            exit 0 ;;
        *) echo "$me: unknown argument \"$1\" ($usage)" >&2; exit 2 ;;
    esac
done
[ $yes = no ] || [ $all = yes ] || { echo "$me: --yes goes with --all ($usage)" >&2; exit 2; }
if [ -z "$prefix" ]; then
    # installed as PREFIX/share/vzcaps/uninstall.sh: that prefix; else /usr/local
    self=$(cd -P -- "$(dirname -- "$0")" 2>/dev/null && pwd -P) || self=""
    case $self in
        */share/vzcaps) [ -f "$self/install-manifest" ] && prefix=${self%/share/vzcaps} ;;
    esac
    [ -n "$prefix" ] || prefix=/usr/local
fi

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
# check_manifest FILE: the manifest's lines ("dir PATH" and "file SHA256 PATH") on stdout, or
# a message per bad line on stderr and status 1
check_manifest() {
    awk -v me="$me" -v file="$1" '
        NR == 1 { if ($0 != "# vzcaps install-manifest 1") { printf "%s: %s is not a manifest written by install.sh (first line)\n", me, file > "/dev/stderr"; bad = 1; exit 1 } next }
        /^#/ { next }
        {
            ok = 0
            if ($1 == "dir" && NF == 2) { p = $2; ok = 1 }
            if ($1 == "file" && NF == 3 && length($2) == 64 && $2 ~ /^[0-9a-f]+$/) { p = $3; ok = 1 }
            if (ok && p != "." && (p !~ /^[A-Za-z0-9._+][A-Za-z0-9._+\/-]*$/ || p ~ /(^|\/)\.\.?(\/|$)/ || p ~ /\/\/|\/$/)) ok = 0
            if (ok && (p in seen)) ok = 0
            if (!ok) { printf "%s: %s line %d is malformed\n", me, file, NR > "/dev/stderr"; bad = 1 }
            else { seen[p] = 1; print }
        }
        END { exit bad }' "$1"
}
# ---- end of the shared part ----
resolve_prefix
base=${prefix%/}
say() { printf '%s\n' "$*" || exit 1; } # a failed write to standard output is an error
warn() { printf '%s: %s\n' "$me" "$*" >&2; }
rc=0

# ---- the files install.sh installed, by its manifest ----
manifest=$base/share/vzcaps/install-manifest
if [ -L "$manifest" ] || { [ -e "$manifest" ] && [ ! -f "$manifest" ]; }; then
    warn "$(q "$manifest") is a link or not a file: nothing removed"
    exit 1
elif [ ! -e "$manifest" ]; then
    warn "no install manifest at $(q "$manifest"): install.sh did not install vzcaps into $(q "$prefix") (or one without a manifest did: remove its files by hand): nothing removed there"
    [ $all = yes ] || exit 1
    rc=1
else
    entries=$(check_manifest "$manifest") || { warn "nothing removed"; exit 1; }
    removed=0 kept=0 gone=0
    present=""
    for p in $(printf '%s\n' "$entries" | awk '$1 == "file" { print $3 }'); do
        if [ -f "$base/$p" ] && [ ! -L "$base/$p" ]; then present="$present $p"; fi
    done
    current=$(digests "$base" $present)
    while read -r kind h p; do
        [ "$kind" = file ] || continue
        f=$base/$p
        if [ -L "$f" ]; then
            say "kept $(q "$f"): a link now, not the file install.sh installed"; kept=$((kept + 1))
        elif [ ! -e "$f" ]; then
            gone=$((gone + 1))
        elif [ ! -f "$f" ]; then
            say "kept $(q "$f"): not a regular file now"; kept=$((kept + 1))
        elif [ "$(lookup "$current" "$p")" != "$h" ]; then
            say "kept $(q "$f"): changed since install.sh installed it"; kept=$((kept + 1))
        elif rm -f "$f"; then
            removed=$((removed + 1))
        else
            warn "cannot remove $(q "$f")"; rc=1; kept=$((kept + 1))
        fi
    done <<EOF
$entries
EOF
    if [ $rc = 0 ]; then
        rm -f "$manifest" || { warn "cannot remove $(q "$manifest")"; rc=1; }
        # the directories install.sh made, deepest (last made) first, when empty
        for d in $(printf '%s\n' "$entries" | awk '$1 == "dir" { l[++n] = $2 } END { while (n) print l[n--] }'); do
            if [ "$d" = . ]; then dd=$prefix; else dd=$base/$d; fi
            [ -d "$dd" ] && [ ! -L "$dd" ] || continue
            rmdir "$dd" 2>/dev/null || say "kept $(q "$dd"): not empty"
        done
    fi
    msg="removed $removed files from $(q "$prefix")"
    [ $gone = 0 ] || msg="$msg ($gone already gone)"
    [ $kept = 0 ] || msg="$msg; kept $kept (named above)"
    say "$msg"
fi
[ $all = yes ] || exit $rc

# ---- --all: what vzcaps made for this user ----
[ -n "${HOME:-}" ] || { warn "--all: HOME is not set"; exit 1; }
agents=$HOME/Library/LaunchAgents
na=0
set +f
for plist in "$agents"/*.plist; do
    set -f
    [ -f "$plist" ] && [ ! -L "$plist" ] || continue
    label=${plist##*/}
    label=${label%.plist}
    case $label in '' | .* | *[!A-Za-z0-9._-]*) continue ;; esac
    # what `vzcaps launchd` writes: its label, the library as DYLD_INSERT_LIBRARIES, and the
    # job's logs under ~/Library/Logs/vzcaps/
    grep -Fq "<string>$label</string>" "$plist" && grep -Eq '/libvzcaps[.](dylib|so)</string>' "$plist" &&
        grep -Fq "/Library/Logs/vzcaps/$label.err.log</string>" "$plist" || continue
    if command -v launchctl >/dev/null 2>&1; then
        if launchctl bootout "gui/$(id -u)/$label" >/dev/null 2>&1; then say "stopped $label (launchctl bootout)"
        else say "$label was not running (launchctl bootout had nothing to stop)"
        fi
    fi
    if rm -f "$plist"; then say "removed $(q "$plist")"; na=$((na + 1)); else warn "cannot remove $(q "$plist")"; rc=1; fi
done
set -f
[ $na -gt 0 ] || say "no LaunchAgent of vzcaps in $(q "$agents")"
for d in "$HOME/Library/Logs/vzcaps" "$HOME/Library/Caches/vzcaps"; do
    if [ -L "$d" ]; then
        if rm -f "$d"; then say "removed the link $(q "$d")"; else warn "cannot remove $(q "$d")"; rc=1; fi
    elif [ -e "$d" ]; then
        if rm -rf "$d"; then say "removed $(q "$d")"; else warn "cannot remove all of $(q "$d")"; rc=1; fi
    fi
done
prepared="$HOME/Library/Application Support/vzcaps/prepared"
# made_by_prepare NAME: NAME in $prepared is a copy vzcaps prepare made: not a link, and its
# marker .NAME.vzcaps-prepared (a plain file starting "vzcaps prepare") names its inode
made_by_prepare() {
    _m="$prepared/.$1.vzcaps-prepared"
    [ -f "$_m" ] && [ ! -L "$_m" ] && [ ! -L "$prepared/$1" ] && [ -e "$prepared/$1" ] || return 1
    [ "$(sed -n 1p "$_m")" = "vzcaps prepare" ] || return 1
    _ino=$(ls -di "$prepared/$1" | sed -n '1s/^ *\([0-9][0-9]*\) .*/\1/p')
    _named=$(sed -n '2s/^copy [0-9][0-9]* \([0-9][0-9]*\)\( .*\)\{0,1\}$/\1/p' "$_m")
    [ -n "$_ino" ] && [ "$_ino" = "$_named" ]
}
np=0
if [ -d "$prepared" ] && [ ! -L "$prepared" ]; then
    set +f
    for c in "$prepared"/* "$prepared"/.[!.]* "$prepared"/..?*; do
        set -f
        [ -e "$c" ] || [ -L "$c" ] || continue
        n=${c##*/}
        case $n in .*.vzcaps-prepared) continue ;; esac # a marker goes with its copy
        if ! made_by_prepare "$n"; then
            say "kept $(q "$c"): not a copy vzcaps prepare made (no marker beside it names it)"
            continue
        fi
        np=$((np + 1))
        if [ $yes = no ]; then
            say "prepared copy: $(q "$c") (kept; uninstall.sh --all --yes removes it)"
        elif chmod -R u+w "$c" 2>/dev/null; rm -rf "$c" && rm -f "$prepared/.$n.vzcaps-prepared"; then
            say "removed the prepared copy $(q "$c")" # a copy of a read-only tree is made writable first
        else
            warn "cannot remove all of $(q "$c")"; rc=1
        fi
    done
    set -f
    if [ $yes = yes ]; then
        rmdir "$prepared" 2>/dev/null && rmdir "$HOME/Library/Application Support/vzcaps" 2>/dev/null
    fi
fi
[ $np -gt 0 ] || say "no prepared copies in $(q "$prepared") (copies made with prepare --into elsewhere are not looked for)"
exit $rc
