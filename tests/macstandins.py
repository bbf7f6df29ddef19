"""A Mac's answers off a Mac: the stand-ins for uname, sw_vers and sysctl, the tools a stock macOS
has, and the writer of a stand-in script. Plain Python (no pytest): the simulated-Mac tests, the
fleet recipes' tests and scripts/try-action (make try-action) use the same ones."""


# what a stock macOS has in /usr/bin and /bin that these scripts may use (no groff since macOS 13,
# no rsvg-convert, no llvm tools, no pytest)
STOCK = ["sh", "bash", "cat", "grep", "sed", "awk", "mkdir", "rm", "rmdir", "cp", "mv", "ln", "chmod", "dirname",
         "basename", "env", "tr", "head", "tail", "sort", "uniq", "wc", "find", "xargs", "git", "make", "tar", "gzip",
         "id", "date", "ls", "cut", "printf", "test", "true", "false", "touch", "mktemp", "readlink", "od", "cmp",
         "diff", "file", "perl", "shasum", "expr", "tee", "sleep", "which", "stat"]

UNAME = r"""#!/bin/sh
[ $# -eq 0 ] && set -- -s
out=""
for a in "$@"; do
  case "$a" in -?*) ;; *) echo "usage: uname [-amnprsv]" >&2; exit 1 ;; esac
  flags=${a#-}
  while [ -n "$flags" ]; do
    f=${flags%"${flags#?}"}; flags=${flags#?}
    case "$f" in
      s) out="$out Darwin" ;; m|p) out="$out arm64" ;; r) out="$out 24.1.0" ;; n) out="$out sim-mac" ;;
      v) out="$out Darwin Kernel Version 24.1.0" ;;
      a) out="$out Darwin sim-mac 24.1.0 Darwin Kernel Version 24.1.0 arm64" ;;
      *) echo "uname: illegal option -- $f" >&2; exit 1 ;;
    esac
  done
done
echo "${out# }"
"""
SW_VERS = r"""#!/bin/sh
case "${1:-}" in
  -productName) echo macOS ;; -productVersion) echo 15.1 ;; -buildVersion) echo 24B83 ;;
  "") printf 'ProductName:\t\tmacOS\nProductVersion:\t\t15.1\nBuildVersion:\t\t24B83\n' ;;
  *) echo "usage: sw_vers [-productName|-productVersion|-buildVersion]" >&2; exit 1 ;;
esac
"""
SYSCTL = r"""#!/bin/sh
[ "${1:-}" = -n ] && shift
case "${1:-}" in
  hw.ncpu|hw.logicalcpu) echo 8 ;; hw.memsize) echo 17179869184 ;; hw.optional.arm64) echo 1 ;;
  machdep.cpu.brand_string) echo "Apple M2" ;; kern.osproductversion) echo 15.1 ;;
  *) echo "sysctl: unknown oid '${1:-}'" >&2; exit 1 ;;
esac
"""


def write(path, text, **subst):
    for k, v in subst.items():
        text = text.replace(f"@{k}@", str(v))
    path.write_text(text)
    path.chmod(0o755)
