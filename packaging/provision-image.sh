#!/bin/sh
# provision-image.sh: bakes vzcaps into a macOS VM image (a Packer shell provisioner for Tart or
# Anka; docs/fleet.md): installs the release archive with its install.sh, a system config with
# per-program sections, shims for the client programs first on the PATH of the runner's user
# (their shell start-up files and, with --runner-dir, the GitHub runner service's .path), and
# optionally a LaunchAgent for a long-running server (vzcaps launchd --install).
# Never: sets DYLD_INSERT_LIBRARIES anywhere (only shimmed programs and the agent get the
# library); writes through a link; replaces a config or start-up block it did not write (the
# config only with --force). Only what a stock Mac has: /bin/sh, BSD tools, tar.
set -eu
me=provision-image.sh
usage="usage: $me --archive vzcaps-VERSION-macos.tar.gz --user NAME [--home DIR] [--prefix DIR] [--etc DIR]
       [--programs \"NAME...\"] [--config FILE] [--force] [--shim-dir DIR] [--runner-dir DIR]
       [--server LABEL -- PROGRAM [ARGS...]]"
archive="" user="" home="" prefix=/usr/local etc=/usr/local/etc config="" force=no shims="" runner="" server=""
programs="llama-server llama-cli llama-bench whisper-cli ollama"
fail() { printf '%s: %s\n' "$me" "$*" >&2; exit 1; }
bad() { printf '%s: %s\n%s\n' "$me" "$*" "$usage" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --archive | --user | --home | --prefix | --etc | --programs | --config | --shim-dir | --runner-dir | --server)
            [ $# -ge 2 ] || bad "$1 needs a value"
            case $1 in
                --archive) archive=$2 ;; --user) user=$2 ;; --home) home=$2 ;; --prefix) prefix=$2 ;; --etc) etc=$2 ;;
                --programs) programs=$2 ;; --config) config=$2 ;; --shim-dir) shims=$2 ;; --runner-dir) runner=$2 ;;
                --server) server=$2 ;;
            esac
            shift 2 ;;
        --force) force=yes; shift ;;
        --) shift; break ;;
        -h | --help) echo "$usage"; exit 0 ;;
        *) bad "unknown argument \"$1\"" ;;
    esac
done
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
[ -f "$archive" ] || fail "$archive is not a file"
as_root=no
[ "$(id -u)" -eq 0 ] && as_root=yes
id -u "$user" >/dev/null 2>&1 || fail "user $user does not exist"
[ -d "$home" ] || fail "$home (the home of $user) is not a directory"

say() { printf '%s\n' "$*"; }
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
mkdir -p "$etc"
conf=$etc/vzcaps.conf
plain_or_absent "$conf"
if [ -e "$conf" ]; then
    if cmp -s "$conf" "$config"; then
        say "config: $conf is already this config"
    elif [ $force = yes ]; then
        write_new "$conf" "$config"
        say "config: replaced $conf (--force)"
    else
        fail "$conf exists and differs from the config to install: not replaced (pass --force)"
    fi
else
    write_new "$conf" "$config"
    say "config: wrote $conf"
fi

# ---- 3. shims, owned by whoever provisions (the runner's user cannot change them) ----
set -f
# shellcheck disable=SC2086
"$vz" shims --dir "$shims" $names || fail "vzcaps shims failed (above)"
set +f

# ---- 4. the runner's user: the shim directory first on PATH in every shell it starts ----
# A block between two marker lines, replaced on every run; the rest of each file is kept.
begin="# >>> vzcaps shims (written by provision-image.sh) >>>"
end="# <<< vzcaps shims <<<"
block="$begin
case \"\$PATH\" in $shims | $shims:*) ;; *) PATH=$shims:\$PATH; export PATH ;; esac
$end"
put_block() { # put_block FILE: FILE with the block, owned by the user
    f=$home/$1
    plain_or_absent "$f"
    if [ -f "$f" ]; then
        awk -v b="$begin" -v e="$end" '$0 == b { skip = 1 } !skip { print } $0 == e { skip = 0 }' "$f" >"$work/rc" ||
            fail "cannot read $f"
    else
        : >"$work/rc"
    fi
    printf '%s\n' "$block" >>"$work/rc"
    if [ -f "$f" ] && cmp -s "$f" "$work/rc"; then return 0; fi
    write_new "$f" "$work/rc"
    [ $as_root = no ] || chown "$user" "$f" || fail "cannot give $f to $user"
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
        write_new "$p" "$work/path"
        [ $as_root = no ] || chown "$user" "$p" || fail "cannot give $p to $user"
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
