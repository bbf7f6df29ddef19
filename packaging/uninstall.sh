#!/bin/sh
# uninstall.sh [--prefix DIR] [--all [--yes [--config]]]: removes what install.sh installed under
# DIR (default /usr/local, or the prefix this copy was installed into): exactly the files listed
# in DIR/share/vzcaps/install-manifest whose SHA-256 still matches (a changed file is kept and
# named), then the directories install.sh created, when empty; without --all, while vzcaps made
# anything for this user, it keeps its installed copy so that --all can run later. --all also
# removes the LaunchAgents `vzcaps launchd` installed (after launchctl bootout),
# the logs vzcaps made in ~/Library/Logs/vzcaps (the rest kept and named) and ~/Library/Caches/vzcaps, what provision-image.sh wrote (by its records:
# provision-image.sh --undo), and lists prepared copies and config files;
# --yes removes the copies, --yes --config the config files. Never: removes a file the manifest
# does not list, a changed file, a non-empty directory, or something of the user's that vzcaps's
# record does not name. Only what a stock Mac has.
set -u
set -f
me=uninstall.sh
usage="usage: uninstall.sh [--prefix DIR] [--all [--yes [--config]]]   (default prefix /usr/local; DIR relative to the current directory)"
prefix=""
all=no
yes=no
config=no
journals_only=no
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { echo "$me: --prefix needs a directory ($usage)" >&2; exit 2; }; prefix=$2; shift 2
            [ -n "$prefix" ] || { echo "$me: --prefix is empty ($usage)" >&2; exit 2; } ;;
        --prefix=*) prefix=${1#--prefix=}; shift
            [ -n "$prefix" ] || { echo "$me: --prefix is empty ($usage)" >&2; exit 2; } ;;
        --all) all=yes; shift ;;
        --yes) yes=yes; shift ;;
        --config) config=yes; shift ;;
        --journals) journals_only=yes; shift ;; # provision-image.sh --undo: is there an install killed early?
        -h|--help)
            echo "$usage"
            echo "Removes the files install.sh recorded in PREFIX/share/vzcaps/install-manifest that are unchanged,"
            echo "then the directories it created, when empty."
            echo "--all: also the LaunchAgents vzcaps installed, the logs vzcaps made in ~/Library/Logs/vzcaps"
            echo "(the rest there is kept and named), ~/Library/Caches/vzcaps,"
            echo "and lists the prepared copies in ~/Library/Application Support/vzcaps/prepared (--yes removes them)"
            echo "and the config files the library would read (--yes --config removes them)."
            echo "Without --all, while vzcaps has made any of those for you, this script keeps its installed copy,"
            echo "PREFIX/share/vzcaps/uninstall.sh, so that --all can run later (and remove it then)."
            exit 0 ;;
        *)
            # the nearest option by edit distance (at most 2, or the one it begins), as a suggestion
            near=$(printf '%s\n' "$1" | awk 'function d(a, b,   i, j, m, n, c, x, y, z, p) {
                    m = length(a); n = length(b)
                    for (j = 0; j <= n; j++) p[0, j] = j
                    for (i = 1; i <= m; i++) {
                        p[i, 0] = i
                        for (j = 1; j <= n; j++) {
                            c = substr(a, i, 1) != substr(b, j, 1)
                            x = p[i - 1, j] + 1; y = p[i, j - 1] + 1; z = p[i - 1, j - 1] + c
                            p[i, j] = x < y ? (x < z ? x : z) : (y < z ? y : z)
                        }
                    }
                    return p[m, n]
                }
                { a = $0 }
                END { if (NR != 1) exit # a name with a newline: no suggestion
                  best = ""; bd = 3
                  split("--prefix --all --yes --config --help", o, " ")
                  for (k = 1; k <= 5; k++) {
                      e = d(a, o[k]); if (length(a) > 2 && index(o[k], a) == 1) e = 1
                      if (e < bd) { bd = e; best = o[k] }
                  }
                  print best }')
            if [ -n "$near" ]; then
                echo "$me: unknown argument \"$1\" (did you mean $near?) ($usage)" >&2
            else
                echo "$me: unknown argument \"$1\" ($usage)" >&2
            fi
            exit 2 ;;
    esac
done
[ $yes = no ] || [ $all = yes ] || { echo "$me: --yes goes with --all ($usage)" >&2; exit 2; }
[ $config = no ] || [ $all = yes ] || { echo "$me: --config goes with --all ($usage)" >&2; exit 2; }
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
base=${prefix%/}
[ $journals_only = no ] || { journals; exit 0; }
say() { printf '%s\n' "$*" || exit 1; } # a failed write to standard output is an error
warn() { printf '%s: %s\n' "$me" "$*" >&2; }
rc=0

# ---- what vzcaps made for this user (--all removes it), looked for before anything goes ----
# (nothing without an absolute HOME; paths go one a line, so none with a control character)
case ${HOME:-} in *[[:cntrl:]]*) home="" ;; /*) home=$HOME ;; *) home="" ;; esac
agents=$home/Library/LaunchAgents
prepared="$home/Library/Application Support/vzcaps/prepared"
# our_agents: the LaunchAgents `vzcaps launchd` wrote, one path a line: its marker as the line
# after the DOCTYPE line; or, written before it had one, its label, the library as
# DYLD_INSERT_LIBRARIES and the job's logs under ~/Library/Logs/vzcaps/
our_agents() {
    [ -n "$home" ] || return 0
    set +f
    for _a in "$agents"/*.plist; do
        set -f
        [ -f "$_a" ] && [ ! -L "$_a" ] || continue
        _l=${_a##*/}
        _l=${_l%.plist}
        case $_l in '' | .* | *[!A-Za-z0-9._-]*) continue ;; esac
        made_marked "$_a" "<!-- written by vzcaps launchd -->" after-doctype || {
            grep -Fq "<string>$_l</string>" "$_a" && grep -Eq '/libvzcaps[.](dylib|so)</string>' "$_a" &&
                grep -Fq "/Library/Logs/vzcaps/$_l.err.log</string>" "$_a"
        } || continue
        printf '%s\n' "$_a"
    done
    set -f
}
# made_by_prepare NAME: NAME in $prepared is a copy vzcaps prepare made: its record
# .NAME.vzcaps-prepared names it as it is now (device, inode, modification time, content)
made_by_prepare() {
    made_by_record "$prepared/$1" "$prepared/.$1.vzcaps-prepared" "vzcaps prepare"
}
# prepared_entries [odd]: the name of every entry of the prepared directory but the records, one
# a line; with odd, instead, a "kept" line for each name with a control character (which prepare
# never makes, and which one name a line could not carry)
prepared_entries() {
    [ -n "$home" ] && [ -d "$prepared" ] && [ ! -L "$prepared" ] || return 0
    set +f
    for _c in "$prepared"/* "$prepared"/.[!.]* "$prepared"/..?*; do
        set -f
        [ -e "$_c" ] || [ -L "$_c" ] || continue
        case ${_c##*/} in
            .*.vzcaps-prepared) ;; # a record goes with its copy
            *[[:cntrl:]]*) [ $# = 0 ] || say "kept $(q "$_c"): not a copy vzcaps prepare made (a control character in its name)" ;;
            *) [ $# = 1 ] || printf '%s\n' "${_c##*/}" ;;
        esac
    done
    set -f
}
# config_files: the config files the library would look at (docs/config.md, vzcaps_config_search
# in src/core/config.c) that exist, one path a line: $VZCAPS_CONFIG alone when it is set; else
# $XDG_CONFIG_HOME/vzcaps/vzcaps.conf (an absolute XDG_CONFIG_HOME) or ~/.config/vzcaps/vzcaps.conf
# (an absolute HOME), then /opt/homebrew/etc/vzcaps.conf and /usr/local/etc/vzcaps.conf
config_files() {
    if [ -n "${VZCAPS_CONFIG+set}" ]; then
        case $VZCAPS_CONFIG in
            *[[:cntrl:]]*) warn "VZCAPS_CONFIG has a control character: not looked at" ;;
            ?*) [ -e "$VZCAPS_CONFIG" ] || [ -L "$VZCAPS_CONFIG" ] && printf '%s\n' "$VZCAPS_CONFIG" ;;
        esac
        return 0
    fi
    case ${XDG_CONFIG_HOME:-} in
        *[[:cntrl:]]*) _u="" ;;
        /*) _u=$XDG_CONFIG_HOME/vzcaps/vzcaps.conf ;;
        *) if [ -n "$home" ]; then _u=$home/.config/vzcaps/vzcaps.conf; else _u=""; fi ;;
    esac
    for _f in "$_u" /opt/homebrew/etc/vzcaps.conf /usr/local/etc/vzcaps.conf; do
        [ -n "$_f" ] && { [ -e "$_f" ] || [ -L "$_f" ]; } && printf '%s\n' "$_f"
    done
    return 0
}
# leftovers: what --all would act on, one line each (empty: nothing)
leftovers() {
    our_agents
    [ -n "$home" ] || return 0
    for _d in "$home/Library/Logs/vzcaps" "$home/Library/Caches/vzcaps"; do
        if [ -e "$_d" ] || [ -L "$_d" ]; then printf '%s\n' "$_d"; fi
    done
    prepared_entries | while IFS= read -r _c; do made_by_prepare "$_c" && printf '%s\n' "$prepared/$_c"; done
    config_files
}

# ---- --all, first: what provision-image.sh wrote (shim links, start-up file blocks, the runner's
# .path, the system config), by its records, with the installed vzcaps still there ----
if [ $all = no ] && { [ -e "$base/share/vzcaps/provision" ] || [ -L "$base/share/vzcaps/provision" ]; }; then
    # without --all, the install would go and leave provisioning's shims and PATH blocks with
    # nothing to undo them: nothing is removed
    warn "$(q "$prefix") was provisioned by provision-image.sh (its records: $(q "$base/share/vzcaps/provision")): nothing removed; run $(q "$base/share/vzcaps/uninstall.sh") --all, or provision-image.sh --undo, which undo it first"
    exit 1
fi
if [ $all = yes ] && { [ -e "$base/share/vzcaps/provision" ] || [ -L "$base/share/vzcaps/provision" ]; }; then
    if [ -f "$base/share/vzcaps/provision-image.sh" ] && [ ! -L "$base/share/vzcaps/provision-image.sh" ]; then
        if ! sh "$base/share/vzcaps/provision-image.sh" --undo --keep-install --prefix "$prefix"; then
            # the install (this script, provision-image.sh, the vzcaps its undo runs) stays to finish it
            warn "what provision-image.sh wrote is not all undone (above): the install in $(q "$prefix") is kept; run $(q "$base/share/vzcaps/uninstall.sh") --all again when that is fixed"
            exit 1
        fi
    else
        warn "$(q "$base/share/vzcaps/provision") holds provision-image.sh's records, but $(q "$base/share/vzcaps/provision-image.sh") is missing: what it provisioned is kept"
        rc=1
    fi
fi

# ---- the files install.sh installed, by its manifest (and, of a run killed part way, the
# journal it wrote first: its temporary copies, the files it was about to place) ----
manifest=$base/share/vzcaps/install-manifest
jfiles=$(journals)
if [ -L "$manifest" ] || { [ -e "$manifest" ] && [ ! -f "$manifest" ]; }; then
    warn "$(q "$manifest") is a link or not a file: nothing removed"
    exit 1
elif [ ! -e "$manifest" ] && [ -z "$jfiles" ]; then
    warn "no install manifest at $(q "$manifest"): install.sh did not install vzcaps into $(q "$prefix") (or one without a manifest did: remove its files by hand): nothing removed there"
    [ $all = yes ] || exit 1
    rc=1
else
    entries=""
    if [ -e "$manifest" ]; then entries=$(check_manifest "$manifest") || { warn "nothing removed"; exit 1; }; fi
    entries=$(printf '%s\n%s\n' "$entries" "$(journal_lines)" | awk 'NF')
    if [ -d "$base/share/vzcaps" ] && { [ ! -w "$base/share/vzcaps" ] || [ ! -x "$base/share/vzcaps" ]; }; then
        warn "$(q "$prefix") is not yours to change (installed as $(ls -ld "$base/share/vzcaps" | awk '{ print $3 }')): nothing removed; run it as that user (sudo)"
        exit 1
    fi
    removed=0 kept=0 gone=0 stopped=no
    [ -z "$jfiles" ] && ! printf '%s\n' "$entries" | grep -q '^temp ' || stopped=yes
    # the temporary copies a killed run left, by their record
    for t in $(printf '%s\n' "$entries" | sed -n 's/^temp //p'); do
        [ ! -f "$base/$t" ] || [ -L "$base/$t" ] || rm -f "$base/$t" || { warn "cannot remove $(q "$base/$t")"; rc=1; }
    done
    # without --all, while vzcaps made anything for this user, the installed copy of this script
    # stays (with a manifest naming it) so that --all can run later; it removes itself then
    self_rel=share/vzcaps/uninstall.sh
    keep_self=no kept_self=""
    if [ $all = no ] && printf '%s\n' "$entries" | awk -v p="$self_rel" '$1 == "file" && $3 == p { f = 1 } END { exit !f }'; then
        later=$(leftovers)
        [ -z "$later" ] || keep_self=yes
    fi
    paths=$(printf '%s\n' "$entries" | awk '$1 == "file" && !seen[$3]++ { print $3 }')
    present=""
    for p in $paths; do
        if [ -f "$base/$p" ] && [ ! -L "$base/$p" ]; then present="$present $p"; fi
    done
    current=$(digests "$base" $present)
    # each file once: removed when it has the bytes of one of its lines (a run killed between
    # its journal and its renames names both the bytes there before and those about to be)
    for p in $paths; do
        f=$base/$p
        h=$(lookup "$current" "$p")
        if [ -L "$f" ]; then
            say "kept $(q "$f"): a link now, not the file install.sh installed"; kept=$((kept + 1))
        elif [ ! -e "$f" ]; then
            gone=$((gone + 1))
        elif [ ! -f "$f" ]; then
            say "kept $(q "$f"): not a regular file now"; kept=$((kept + 1))
        elif [ -z "$h" ] || ! printf '%s\n' "$entries" | grep -Fqx "file $h $p"; then
            say "kept $(q "$f"): changed since install.sh installed it"; kept=$((kept + 1))
        elif [ $keep_self = yes ] && [ "$p" = "$self_rel" ]; then
            kept_self="file $h $p"
        elif rm -f "$f"; then
            removed=$((removed + 1))
        else
            warn "cannot remove $(q "$f")"; rc=1; kept=$((kept + 1))
        fi
    done
    if [ $rc = 0 ] && [ -n "$kept_self" ]; then
        _t=$base/share/vzcaps/.install-manifest.new
        rm -f "$_t"
        {
            echo "# vzcaps install-manifest 1"
            echo "# what is left of an install: uninstall.sh --all removes this copy of itself, then these directories"
            printf '%s\n' "$entries" | grep -v '^file \|^temp '
            printf '%s\n' "$kept_self"
        } >"$_t" && chmod 644 "$_t" && mv -f "$_t" "$manifest" || { rm -f "$_t"; warn "cannot write $(q "$manifest")"; rc=1; }
        [ $rc != 0 ] || printf '%s\n' "$jfiles" | while IFS= read -r j; do [ -z "$j" ] || rm -f "$j"; done
        say "kept $(q "$base/$self_rel") to finish later: vzcaps made things for you that only --all removes:"
        printf '%s\n' "$later" | while IFS= read -r _x; do say "  $(q "$_x")"; done
        say "run: sh $(q "$base/$self_rel") --all (it lists them and removes them, then itself)"
    elif [ $rc = 0 ]; then
        rm -f "$manifest" "$base/share/vzcaps/.install-manifest.new" || { warn "cannot remove $(q "$manifest")"; rc=1; }
        printf '%s\n' "$jfiles" | while IFS= read -r j; do [ -z "$j" ] || rm -f "$j"; done
        # the directories install.sh made, deepest first, when empty
        for d in $(printf '%s\n' "$entries" | awk '$1 == "dir" { print $2 }' | LC_ALL=C sort -ru); do
            if [ "$d" = . ]; then dd=$prefix; else dd=$base/$d; fi
            [ -d "$dd" ] && [ ! -L "$dd" ] || continue
            rmdir "$dd" 2>/dev/null || say "kept $(q "$dd"): not empty"
        done
        # then the directories it made above the prefix, nearest first, when they are the ones it
        # made and empty
        if [ ! -e "$prefix" ]; then
            printf '%s\n' "$entries" | awk '$1 == "parent" && !seen[$2]++' | sort -k2,2n | while read -r _k n dv in; do
                dd=$(parent_dir "$n")
                [ -e "$dd" ] || [ -L "$dd" ] || continue
                if ! made_parent "$n" "$dv" "$in"; then say "kept $(q "$dd"): not the directory install.sh made there"
                elif ! rmdir "$dd" 2>/dev/null; then say "kept $(q "$dd"): not empty"
                fi
            done
        fi
    fi
    msg="removed $removed files from $(q "$prefix")"
    if [ $stopped = yes ]; then msg="$msg and what an install stopped part way had made (its temporary copies, its directories)"
    elif [ $gone != 0 ]; then msg="$msg ($gone already gone)"
    fi
    [ $kept = 0 ] || msg="$msg; kept $kept (named above)"
    say "$msg"
fi
[ $all = yes ] || exit $rc

# ---- --all: what vzcaps made for this user ----
[ -n "$home" ] || { warn "--all: HOME is not an absolute path (without control characters)"; exit 1; }
na=0
agent_labels=$(our_agents | sed 's|.*/||; s|\.plist$||')
# ours_log NAME: a file of ~/Library/Logs/vzcaps that vzcaps made: the standard output or error
# log of one of its LaunchAgents (LABEL.out.log, LABEL.err.log), or a stats log (vzcaps.log,
# stats.jsonl or any name, and its .1) whose every line is one of the library's records, or a
# record cut short (docs/config.md), and not empty
ours_log() {
    case $1 in
        *.out.log | *.err.log)
            _ol=${1%.*.log}
            printf '%s\n' "$agent_labels" | grep -Fqx -- "$_ol" && return 0 ;;
    esac
    _of=$logs/$1
    [ -f "$_of" ] && [ ! -L "$_of" ] && [ -s "$_of" ] || return 1
    _os='"([^"\\]|\\.)*"' # a JSON string
    REC="^[{]\"v\":1,\"time\":[0-9]+,\"pid\":[0-9]+,\"program\":$_os,\"path\":$_os,\"event\":\"(hooked|left_stock)\",\"class\":$_os,\"family\":[0-9]+,\"reason\":$_os[}]\$" \
        LC_ALL=C awk 'BEGIN { rec = ENVIRON["REC"] }
        $0 ~ rec { whole++; next }
        index($0, "{\"v\":1,") == 1 { next } # a record cut short
        { bad = 1; exit }
        END { exit bad || !whole }' "$_of"
}
while IFS= read -r plist; do
    [ -n "$plist" ] || continue
    label=${plist##*/}
    label=${label%.plist}
    if command -v launchctl >/dev/null 2>&1; then
        # vzcaps launchd bootstraps into gui/UID, or user/UID in a guest with no GUI login (SSH)
        stopped=no
        for domain in "gui/$(id -u)" "user/$(id -u)"; do
            if launchctl bootout "$domain/$label" >/dev/null 2>&1; then stopped=yes; break; fi
        done
        if [ $stopped = yes ]; then say "stopped $label (launchctl bootout $domain)"
        else say "$label was not running (launchctl bootout had nothing to stop in gui/$(id -u) or user/$(id -u))"
        fi
    fi
    if rm -f "$plist"; then say "removed $(q "$plist")"; na=$((na + 1)); else warn "cannot remove $(q "$plist")"; rc=1; fi
done <<EOF
$(our_agents)
EOF
[ $na -gt 0 ] || say "no LaunchAgent of vzcaps in $(q "$agents")"
# ~/Library/Logs/vzcaps: only what vzcaps made there goes (the logs of its agents, stats logs);
# the rest (a user's notes, evidence) is kept and named, and the directory with it
logs=$home/Library/Logs/vzcaps
if [ -d "$logs" ] && [ ! -L "$logs" ]; then
    set +f
    for f in "$logs"/* "$logs"/.[!.]* "$logs"/..?*; do
        set -f
        [ -e "$f" ] || [ -L "$f" ] || continue
        n=${f##*/}
        if ours_log "$n" && [ -f "$f" ] && [ ! -L "$f" ]; then
            if rm -f "$f"; then say "removed $(q "$f")"; else warn "cannot remove $(q "$f")"; rc=1; fi
        else
            say "kept $(q "$f"): not a log vzcaps made"
        fi
    done
    set -f
    if rmdir "$logs" 2>/dev/null; then say "removed $(q "$logs")"; else say "kept $(q "$logs"): not empty (named above)"; fi
fi
for d in "$logs" "$home/Library/Caches/vzcaps"; do
    [ "$d" != "$logs" ] || [ -L "$d" ] || continue
    if [ -L "$d" ]; then
        if rm -f "$d"; then say "removed the link $(q "$d")"; else warn "cannot remove $(q "$d")"; rc=1; fi
    elif [ -e "$d" ]; then
        if rm -rf "$d"; then say "removed $(q "$d")"; else warn "cannot remove all of $(q "$d")"; rc=1; fi
    fi
done
np=0
prepared_entries odd
while IFS= read -r n; do
    [ -n "$n" ] || continue
    c=$prepared/$n
    if ! made_by_prepare "$n"; then
        say "kept $(q "$c"): not a copy vzcaps prepare made (no record beside it names it as it is now)"
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
done <<EOF
$(prepared_entries)
EOF
if [ $yes = yes ] && [ -d "$prepared" ] && [ ! -L "$prepared" ]; then
    rmdir "$prepared" 2>/dev/null && rmdir "$home/Library/Application Support/vzcaps" 2>/dev/null
fi
[ $np -gt 0 ] || say "no prepared copies in $(q "$prepared") (copies made with prepare --into elsewhere are not looked for)"
# the config files: yours, not vzcaps's, so listed, and removed only with --yes --config
nc=0
while IFS= read -r f; do
    [ -n "$f" ] || continue
    nc=$((nc + 1))
    if [ $yes = no ] || [ $config = no ]; then
        say "config file: $(q "$f") (kept; uninstall.sh --all --yes --config removes it)"
    elif [ -d "$f" ] && [ ! -L "$f" ]; then
        warn "$(q "$f") is a directory, not a config file: kept"; rc=1
    elif [ ! -f "$f" ] && [ ! -L "$f" ]; then # a device (VZCAPS_CONFIG=/dev/null) or FIFO: the library reads none
        warn "$(q "$f") is not a regular file, not a config file: kept"; rc=1
    elif rm -f "$f"; then
        say "removed the config file $(q "$f")"
        case $f in */vzcaps/vzcaps.conf) rmdir "${f%/vzcaps.conf}" 2>/dev/null ;; esac # its directory, when empty
    else
        warn "cannot remove $(q "$f")"; rc=1
    fi
done <<EOF
$(config_files)
EOF
# the page that says where: the installed one while it is there, else the release archive's
page=$base/share/doc/vzcaps/config.md
if [ -f "$page" ]; then page="installed as $(q "$page"), also in the release archive"; else page="share/doc/vzcaps/config.md in the release archive"; fi
[ $nc -gt 0 ] || say "no config files (looked where the library looks: the config page, $page)"
exit $rc
