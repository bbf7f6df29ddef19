# Drives zsh's own completion system in a pseudo-terminal and prints the matches it offers.
# Usage: zsh -f zsh_capture.zsh FPATH_DIR 'command line' (TAB is pressed at its end). Each match
# is printed as "match" or "match -- description"; compadd calls are captured, as in
# Valodim's zsh-capture-completion.
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
local init=${TMPDIR:-/tmp}/vzcaps-zsh-capture.$$
cat >$init <<INIT
PROMPT=
fpath=($1 \$fpath)
autoload -U compinit
compinit -u -D
bindkey '^M' undefined
bindkey '^J' undefined
bindkey '^I' complete-word
zstyle ':completion:*' insert-tab false
zstyle ':completion:*' list-grouped false
__vz_begin() { print -r -- __VZ_BEGIN__ }
__vz_end() { print -r -- __VZ_END__ }
compprefuncs=( __vz_begin )
comppostfuncs=( __vz_end exit )
compadd() {
    if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
        builtin compadd "\$@"
        return
    fi
    local -a __hits __dscr
    local __d=\${@[(i)-d]}
    if (( __d < \$# )); then
        local __v=\${@[__d+1]}
        [[ \$__v == \(* ]] && eval "__dscr=\$__v" || __dscr=( "\${(@P)__v}" )
    fi
    builtin compadd -A __hits -D __dscr "\$@"
    local i
    for (( i = 1; i <= \$#__hits; i++ )); do
        if (( i <= \$#__dscr )) && [[ -n \$__dscr[i] && \$__dscr[i] != \$__hits[i] ]]; then
            print -r -- "__VZ_HIT \$__hits[i] -- \${\${\${__dscr[i]#\$__hits[i]}## #}#-- }"
        else
            print -r -- "__VZ_HIT \$__hits[i]"
        fi
    done
    builtin compadd "\$@"
}
print -r -- __VZ_READY__
INIT
zpty -w z "source $init"
local line
while zpty -r z line; do [[ $line == *__VZ_READY__* && $line != *print* ]] && break; done
zpty -w -n z "$2"$'\t'
local on=0
while zpty -r z line; do
    line=${line%$'\r'}
    line=${line%$'\n'}
    line=${line%$'\r'}
    [[ $line == *__VZ_BEGIN__* ]] && on=1 && continue
    [[ $line == *__VZ_END__* ]] && break
    (( on )) && [[ $line == __VZ_HIT\ * ]] && print -r -- ${line#__VZ_HIT }
done
rm -f $init
zpty -d z
