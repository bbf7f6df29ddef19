#!/bin/sh
# Removes what install.sh installed: uninstall.sh [--prefix DIR] (default /usr/local). Exactly
# those files, then the directories they were in, when that leaves them empty.
set -eu
prefix=/usr/local
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { echo "uninstall.sh: --prefix needs a directory" >&2; exit 2; }; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        -h|--help) echo "usage: uninstall.sh [--prefix DIR]   (default /usr/local)"; exit 0 ;;
        *) echo "uninstall.sh: unknown argument $1 (usage: uninstall.sh [--prefix DIR])" >&2; exit 2 ;;
    esac
done
files="bin/vzcaps lib/libvzcaps.dylib share/man/man1/vzcaps.1 share/bash-completion/completions/vzcaps
share/zsh/site-functions/_vzcaps share/fish/vendor_completions.d/vzcaps.fish"
for f in $files; do
    rm -f "$prefix/$f"
    d=$(dirname "$f")
    while [ "$d" != . ]; do
        rmdir "$prefix/$d" 2>/dev/null || break # only when empty: other software's files stay
        d=$(dirname "$d")
    done
done
echo "removed vzcaps from $prefix"
