#!/bin/sh
# Installs vzcaps from this release directory: install.sh [--prefix DIR] (default /usr/local).
# Checks every file against SHA256SUMS first and installs nothing if one differs. Only tools
# stock macOS has. uninstall.sh removes exactly what this installs.
set -eu
prefix=/usr/local
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a directory" >&2; exit 2; }; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        -h|--help) echo "usage: install.sh [--prefix DIR]   (default /usr/local)"; exit 0 ;;
        *) echo "install.sh: unknown argument $1 (usage: install.sh [--prefix DIR])" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if command -v shasum >/dev/null 2>&1; then check="shasum -a 256 -c"; else check="sha256sum -c"; fi
if ! $check SHA256SUMS >/dev/null 2>&1; then
    echo "install.sh: the files do not match SHA256SUMS (a damaged or altered release): nothing installed" >&2
    $check SHA256SUMS 2>/dev/null | grep -v ': OK$' >&2 || true
    exit 1
fi
files="bin/vzcaps lib/libvzcaps.dylib share/man/man1/vzcaps.1 share/bash-completion/completions/vzcaps
share/zsh/site-functions/_vzcaps share/fish/vendor_completions.d/vzcaps.fish"
for f in $files; do
    mkdir -p "$prefix/$(dirname "$f")"
    cp "$f" "$prefix/$f.tmp.$$"
    if [ "$f" = bin/vzcaps ]; then chmod 755 "$prefix/$f.tmp.$$"; else chmod 644 "$prefix/$f.tmp.$$"; fi
    mv "$prefix/$f.tmp.$$" "$prefix/$f"
done
echo "installed vzcaps into $prefix"
echo "next: $prefix/bin/vzcaps doctor"
