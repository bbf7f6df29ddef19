/* Option values shared by the subcommands (--timeout, --family), and the bash, zsh and fish
 * completions generated from the command table (`vzcaps __completions SHELL`: what completes a
 * value follows from its metavariable, cli_value_kind; `vzcaps __profiles` lists sections).
 * Owns: how a command line's values are checked and completed (the line read against the table
 * and usage errors are help.c's; this file calls it, it calls nothing here). Never: decides what
 * an option means for the library (that is the core's configuration step). */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

int timeout_opt(const char *cmd, const char *value, unsigned *seconds)
{
    uint64_t v;
    if (vzcaps_parse_u64(value, &v) != 0 || v > 604800)
        return usage_error(cmd, "--timeout takes whole seconds from 0 (none) to 604800 (a week), not \"%s\"", value);
    *seconds = (unsigned)v;
    return 0;
}

int check_family_opt(const char *cmd, const char *value)
{
    struct vzcaps_settings s;
    char why[VZCAPS_NOTE_LEN];
    memset(&s, 0, sizeof s);
    if (value && vzcaps_settings_set(&s, VZCAPS_KEY_APPLE_FAMILY_MAX, value, "--family", why, sizeof why) != 0)
        return usage_error(cmd, "--family: %s", why);
    return 0;
}

/* ---- completions: bash, zsh and fish scripts generated from the table ---- */

enum value_kind cli_value_kind(const char *m)
{
    static const struct { const char *metavar; enum value_kind kind; } kinds[] = {
        {"PROFILE", VALUE_PROFILE}, {"BRAND", VALUE_CHIP},  {"PROGRAM", VALUE_PROGRAM}, {"CMD", VALUE_PROGRAM}, {"NAME", VALUE_PROGRAM},
        {"FILE", VALUE_FILE},       {"PATH", VALUE_FILE},   {"MODEL", VALUE_FILE},      {"BUNDLE_DIR", VALUE_FILE},
        {"DIR", VALUE_DIR},         {"COMMAND", VALUE_COMMAND}, {"N", VALUE_NONE},      {"LABEL", VALUE_NONE},
        {"SECONDS", VALUE_NONE},     {"TIME", VALUE_NONE},
    };
    if (!m)
        return VALUE_NONE;
    size_t n = strcspn(m, " ");
    if (memchr(m, '|', n))
        return VALUE_WORDS;
    if (n > 5 && strncmp(m + n - 5, ".json", 5) == 0)
        return VALUE_FILE;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i].metavar) == n && strncmp(kinds[i].metavar, m, n) == 0)
            return kinds[i].kind;
    return VALUE_UNKNOWN;
}

static const char *const kind_names[] = {"none", "none", "words", "profile", "chip", "program", "file", "dir", "command"};

/* What a command's operands are: "exec" (a command with its own arguments), "rest" (after --,
 * passed on), "restcmd" (after --, a command: doctor --bundle DIR -- CMD), or a value kind; token gets the operand's metavariable ("status|enable|disable"). */
static const char *operand_kind(const struct cmd_spec *c, char *token, size_t cap)
{
    token[0] = '\0';
    if (c->args_mode == ARGS_COMMAND)
        return "exec";
    if (c->args_mode == ARGS_REST)
        return strstr(c->args, "-- CMD") ? "restcmd" : "rest";
    if (c->args_mode == ARGS_NONE)
        return "none";
    const char *a = c->args + strspn(c->args, "[(");
    snprintf(token, cap, "%.*s", (int)strcspn(a, " ].)"), a);
    enum value_kind k = cli_value_kind(token);
    return kind_names[k];
}

/* Calls fn for every word a metavariable's choices stand for ("auto|off|FAMILY": auto, off,
 * and each Apple family the core accepts), with a short description. */
static void each_word(const char *metavar, void (*fn)(FILE *, const char *, const char *), FILE *out)
{
    const char *p = metavar;
    size_t end = strcspn(metavar, " ");
    while (p < metavar + end) {
        size_t n = strcspn(p, "| ");
        char *w = xformat("%.*s", (int)n, p);
        if (strcmp(w, "FAMILY") == 0) {
            size_t count;
            const int64_t *all = vzcaps_family_all(&count);
            for (size_t i = 0; i < count; i++)
                if (vzcaps_family_is_apple(all[i])) {
                    char num[24];
                    snprintf(num, sizeof num, "%lld", (long long)all[i]);
                    fn(out, num, vzcaps_family_name(all[i]));
                }
        } else {
            fn(out, w, strcmp(w, "auto") == 0 ? "the host chip's own family" : strcmp(w, "off") == 0 ? "stock answers" : "");
        }
        free(w);
        p += n + (p[n] == '|');
    }
}

/* Calls fn for each chip brand the core recognises ("Apple M2 Pro", "Apple A18 Pro"): every
 * M and A generation up to 40 with each variant, as vzcaps_chip_from_brand reads them. */
static void each_chip(void (*fn)(FILE *, const char *, const char *), FILE *out)
{
    static const char *const variants[] = {"", " Pro", " Max", " Ultra"};
    for (const char *series = "MA"; *series; series++)
        for (int g = 1; g <= 40; g++)
            for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
                char brand[48];
                struct vzcaps_chip chip;
                snprintf(brand, sizeof brand, "Apple %c%d%s", *series, g, variants[v]);
                vzcaps_chip_from_brand(brand, &chip);
                if (chip.known)
                    fn(out, brand, vzcaps_family_name(chip.apple_family));
            }
}

/* s inside single quotes: bash and zsh ('\'' for a quote), fish (\' and \\) */
static void squote(FILE *out, const char *s, bool fish)
{
    fputc('\'', out);
    for (; *s; s++) {
        if (*s == '\'')
            fputs(fish ? "\\'" : "'\\''", out);
        else if (fish && *s == '\\')
            fputs("\\\\", out);
        else if (*s == '\n')
            fputc(' ', out);
        else
            fputc(*s, out);
    }
    fputc('\'', out);
}

static void word_sh(FILE *out, const char *w, const char *desc)
{
    (void)desc;
    fputc(' ', out);
    squote(out, w, false);
}

/* zsh _describe entries: "word:description", a ':' in the word escaped */
static void word_zsh(FILE *out, const char *w, const char *desc)
{
    char *e = xformat("%s%s%s", w, desc && *desc ? ":" : "", desc ? desc : "");
    char *buf = xformat("%*s", (int)(2 * strlen(e) + 1), "");
    size_t k = 0;
    for (const char *p = w; *p; p++) {
        if (*p == ':')
            buf[k++] = '\\';
        buf[k++] = *p;
    }
    snprintf(buf + k, strlen(e) + 1, "%s", e + strlen(w));
    fputc(' ', out);
    squote(out, buf, false);
    free(buf);
    free(e);
}

static void word_fish(FILE *out, const char *w, const char *desc)
{
    char *e = xformat("%s%s%s", w, desc && *desc ? "\t" : "", desc ? desc : "");
    fputc(' ', out);
    squote(out, e, true);
    free(e);
}

static const char bash_head[] =
    "# bash completion for vzcaps (generated by `vzcaps __completions bash` from the command table)\n"
    "_vzcaps_add() { # PREFIX WORD...: the words that start with PREFIX\n"
    "    local p=$1 w\n"
    "    shift\n"
    "    for w in \"$@\"; do [[ $w == \"$p\"* ]] && COMPREPLY+=(\"$w\"); done\n"
    "}\n"
    "_vzcaps_kind() { # KIND PREFIX\n"
    "    local IFS=$'\\n'\n"
    "    case $1 in\n"
    "        file) COMPREPLY+=($(compgen -f -- \"$2\")) ;;\n"
    "        dir) COMPREPLY+=($(compgen -d -- \"$2\")) ;;\n"
    "        program) COMPREPLY+=($(compgen -c -- \"$2\")) ;;\n"
    "        profile)\n"
    "            local a=()\n"
    "            [[ -n $_vzcaps_cfg ]] && a=(--config \"${_vzcaps_cfg/#\\~/$HOME}\")\n"
    "            COMPREPLY+=($(compgen -W \"$(\"$_vzcaps_self\" __profiles \"${a[@]}\" 2>/dev/null)\" -- \"$2\")) ;;\n";
static const char bash_body[] =
    "_vzcaps_after() { # CMD INDEX PREFIX: what follows --, from word INDEX\n"
    "    _vzcaps_cmd \"$1\"\n"
    "    case $_vz_a in\n"
    "        exec|restcmd)\n"
    "            if (( COMP_CWORD == $2 )); then _vzcaps_kind program \"$3\"\n"
    "            elif declare -F _command_offset >/dev/null; then _command_offset \"$2\" # bash-completion: its own\n"
    "            else _vzcaps_kind file \"$3\"; fi ;;\n"
    "        rest) _vzcaps_kind file \"$3\" ;;\n"
    "        words) _vzcaps_add \"$3\" \"${_vz_w[@]}\" ;;\n"
    "        *) _vzcaps_kind \"$_vz_a\" \"$3\" ;;\n"
    "    esac\n"
    "}\n"
    "_vzcaps() {\n"
    "    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} w opt= want=0 i pre= cut=\n"
    "    local _vzcaps_cfg= _vzcaps_self=${COMP_WORDS[0]} _vz_n _vz_k _vz_a _vz_w _vz_o\n"
    "    _vzcaps_self=${_vzcaps_self//\\\\/} # the command as typed: its escapes, quotes and ~ undone\n"
    "    _vzcaps_self=${_vzcaps_self//[\\\"\\']/}\n"
    "    [[ $_vzcaps_self == \"~\" || $_vzcaps_self == \"~/\"* ]] && _vzcaps_self=$HOME${_vzcaps_self#\\~}\n"
    "    COMPREPLY=()\n"
    "    [[ $cur == = ]] && cur=\n"
    "    cur=${cur#[\\\"\\']}\n"
    "    cur=${cur//\\\\/}\n"
    "    if (( COMP_CWORD == 1 )); then\n"
    "        _vzcaps_kind command \"$cur\"\n"
    "        _vzcaps_add \"$cur\" --version --help\n"
    "        return\n"
    "    fi\n"
    "    _vzcaps_cmd \"$cmd\"\n"
    "    for (( i = 2; i < COMP_CWORD; i++ )); do\n"
    "        w=${COMP_WORDS[i]}\n"
    "        [[ $w == = ]] && continue\n"
    "        if (( want > 0 )); then\n"
    "            want=$((want - 1))\n"
    "            if [[ $opt == --config ]]; then # as typed: drop its quotes and escapes\n"
    "                _vzcaps_cfg=${w//\\\\/}\n"
    "                _vzcaps_cfg=${_vzcaps_cfg//[\\\"\\']/}\n"
    "            fi\n"
    "        elif [[ $w == -- ]]; then\n"
    "            _vzcaps_after \"$cmd\" $((i + 1)) \"$cur\"\n"
    "            return\n"
    "        elif [[ $w == -?* ]]; then\n"
    "            opt=${w%%=*}\n"
    "            _vzcaps_opt \"$cmd\" \"$opt\"\n"
    "            want=$_vz_n\n"
    "            if [[ $w == *=* && $want -gt 0 ]]; then # --opt=VALUE as one word (bash 3.2)\n"
    "                want=$((want - 1))\n"
    "                if [[ $opt == --config ]]; then\n"
    "                    _vzcaps_cfg=${w#*=}\n"
    "                    _vzcaps_cfg=${_vzcaps_cfg//\\\\/}\n"
    "                    _vzcaps_cfg=${_vzcaps_cfg//[\\\"\\']/}\n"
    "                fi\n"
    "            fi\n"
    "        elif [[ $_vz_a == exec ]]; then # the command starts here\n"
    "            _vzcaps_after \"$cmd\" \"$i\" \"$cur\"\n"
    "            return\n"
    "        fi\n"
    "    done\n"
    "    # bash 3.2 leaves --opt=VALUE one word (4.0 splits it at =): the value is completed here;\n"
    "    # readline replaces from its last word break: after the value's last = when = is one (the\n"
    "    # default), else the whole word\n"
    "    if (( want == 0 )) && [[ $cur == -?*=* ]]; then\n"
    "        _vzcaps_opt \"$cmd\" \"${cur%%=*}\"\n"
    "        if (( _vz_n > 0 )); then\n"
    "            opt=${cur%%=*} want=$_vz_n\n"
    "            cur=${cur#*=}\n"
    "            cur=${cur#[\\\"\\']}\n"
    "            if [[ $COMP_WORDBREAKS == *=* ]]; then cut=${cur%\"${cur##*=}\"}; else pre=$opt=; fi\n"
    "        fi\n"
    "    fi\n"
    "    if (( want > 0 )); then\n"
    "        _vzcaps_opt \"$cmd\" \"$opt\"\n"
    "        if [[ $_vz_k == words ]]; then _vzcaps_add \"$cur\" \"${_vz_w[@]}\"; else _vzcaps_kind \"$_vz_k\" \"$cur\"; fi\n"
    "        [[ -z $cut ]] || for i in \"${!COMPREPLY[@]}\"; do COMPREPLY[i]=${COMPREPLY[i]#\"$cut\"}; done\n"
    "        [[ -z $pre ]] || COMPREPLY=(\"${COMPREPLY[@]/#/$pre}\")\n"
    "        return\n"
    "    fi\n"
    "    _vzcaps_cmd \"$cmd\"\n"
    "    case $_vz_a in\n"
    "        none|rest|restcmd) _vzcaps_add \"$cur\" \"${_vz_o[@]}\" ;;\n"
    "        *)\n"
    "            if [[ $cur == -* ]]; then _vzcaps_add \"$cur\" \"${_vz_o[@]}\"\n"
    "            elif [[ $_vz_a == words ]]; then _vzcaps_add \"$cur\" \"${_vz_w[@]}\"\n"
    "            elif [[ $_vz_a == exec ]]; then _vzcaps_kind program \"$cur\"\n"
    "            else _vzcaps_kind \"$_vz_a\" \"$cur\"; fi ;;\n"
    "    esac\n"
    "}\n"
    "# -o filenames: bash quotes what it inserts (a name with a space stays one word)\n"
    "complete -o filenames -F _vzcaps vzcaps\n";

static const char zsh_head[] =
    "#compdef vzcaps\n"
    "# zsh completion for vzcaps (generated by `vzcaps __completions zsh` from the command table)\n"
    "_vzcaps_kind() { # KIND\n"
    "  case $1 in\n"
    "    file) _files ;;\n"
    "    dir) _files -/ ;;\n"
    "    program) _command_names -e ;;\n"
    "    profile) local -a a\n"
    "      [[ -n $_vzcaps_cfg ]] && a=(--config ${${(Q)_vzcaps_cfg}/#\\~/$HOME})\n"
    "      compadd -- ${(f)\"$(${(Q)_vzcaps_self} __profiles $a 2>/dev/null)\"} ;;\n";
static const char zsh_body[] =
    "_vzcaps_after() { # CMD INDEX: what follows the word at INDEX (--, or the word before the command)\n"
    "  _vzcaps_cmd $1\n"
    "  case $_vz_a in\n"
    "    exec|restcmd) words=(\"${(@)words[$2+1,-1]}\"); (( CURRENT -= $2 )); _normal ;;\n"
    "    rest) _files ;;\n"
    "    words) _describe -t values value _vz_w ;;\n"
    "    *) _vzcaps_kind $_vz_a ;;\n"
    "  esac\n"
    "}\n"
    "_vzcaps() {\n"
    "  local cmd=$words[2] w opt= want=0 i _vzcaps_cfg= _vzcaps_self=$words[1] _vz_n _vz_k _vz_a\n"
    "  [[ $_vzcaps_self == '~' || $_vzcaps_self == '~/'* ]] && _vzcaps_self=$HOME${_vzcaps_self#\\~} # as typed: ~ undone\n"
    "  local -a _vz_w _vz_o\n"
    "  if (( CURRENT == 2 )); then\n"
    "    _vzcaps_kind command\n"
    "    [[ $PREFIX == -* ]] && compadd -- --version --help\n"
    "    return\n"
    "  fi\n"
    "  _vzcaps_cmd $cmd\n"
    "  for (( i = 3; i < CURRENT; i++ )); do\n"
    "    w=$words[i]\n"
    "    if (( want > 0 )); then\n"
    "      (( want-- ))\n"
    "      [[ $opt == --config ]] && _vzcaps_cfg=$w\n"
    "    elif [[ $w == -- ]]; then\n"
    "      _vzcaps_after $cmd $i\n"
    "      return\n"
    "    elif [[ $w == -?* ]]; then\n"
    "      opt=${w%%=*}\n"
    "      _vzcaps_opt $cmd $opt\n"
    "      want=$_vz_n\n"
    "      if [[ $w == *=* ]] && (( want > 0 )); then\n"
    "        (( want-- ))\n"
    "        [[ $opt == --config ]] && _vzcaps_cfg=${w#*=}\n"
    "      fi\n"
    "    elif [[ $_vz_a == exec ]]; then\n"
    "      _vzcaps_after $cmd $(( i - 1 ))\n"
    "      return\n"
    "    fi\n"
    "  done\n"
    "  if (( want == 0 )) && [[ $PREFIX == --*=* ]]; then\n"
    "    opt=${PREFIX%%=*}\n"
    "    compset -P '*='\n"
    "    _vzcaps_opt $cmd $opt\n"
    "    want=$_vz_n\n"
    "  fi\n"
    "  if (( want > 0 )); then\n"
    "    _vzcaps_opt $cmd $opt\n"
    "    if [[ $_vz_k == words ]]; then _describe -t values value _vz_w; else _vzcaps_kind $_vz_k; fi\n"
    "    return\n"
    "  fi\n"
    "  _vzcaps_cmd $cmd\n"
    "  if [[ $PREFIX == -* || $_vz_a == (none|rest|restcmd) ]]; then\n"
    "    _describe -t options option _vz_o\n"
    "  elif [[ $_vz_a == exec ]]; then\n"
    "    _command_names -e\n"
    "  elif [[ $_vz_a == words ]]; then\n"
    "    _describe -t values value _vz_w\n"
    "  else\n"
    "    _vzcaps_kind $_vz_a\n"
    "  fi\n"
    "}\n"
    "_vzcaps \"$@\"\n";

static const char fish_head[] =
    "# fish completion for vzcaps (generated by `vzcaps __completions fish` from the command table)\n"
    "function __vzcaps_words # the words before the cursor, up to and without --\n"
    "    set -l t (commandline -opc)\n"
    "    set -l i (contains -i -- -- $t)\n"
    "    and set t $t[1..(math $i - 1)]\n"
    "    string join \\n -- $t\n"
    "end\n"
    "function __vzcaps_none # no command yet\n"
    "    test (count (commandline -opc)) -eq 1\n"
    "end\n"
    "function __vzcaps_using -a name # the command is NAME, and no -- yet\n"
    "    set -l t (commandline -opc)\n"
    "    test \"$t[2]\" = \"$name\"; and not contains -- -- $t[3..-1]\n"
    "end\n"
    "function __vzcaps_after -a name # the command is NAME, after --\n"
    "    set -l t (commandline -opc)\n"
    "    test \"$t[2]\" = \"$name\"; and contains -- -- $t[3..-1]\n"
    "end\n"
    "function __vzcaps_rest # what follows --, completed as its own command line\n"
    "    set -l t (commandline -opc)\n"
    "    set -l i (contains -i -- -- $t)\n"
    "    set -l rest\n"
    "    test $i -lt (count $t); and set rest (string escape -- $t[(math $i + 1)..-1])\n"
    "    complete -C (string join ' ' -- $rest (commandline -ct))\n"
    "end\n"
    "function __vzcaps_profiles # the config file's sections, read now\n"
    "    set -l t (commandline -opc)\n"
    "    set -l i (contains -i -- --config $t)\n"
    "    set -l self (string replace -r '^~(?=/|$)' $HOME -- $t[1]) # the command as typed: ~ undone\n"
    "    set -l cfg\n"
    "    if test -n \"$i\"; and test $i -lt (count $t)\n"
    "        set cfg $t[(math $i + 1)]\n"
    "    else # or written --config=FILE\n"
    "        for w in $t\n"
    "            string match -q -- '--config=*' $w; and set cfg (string sub -s 10 -- $w)\n"
    "        end\n"
    "    end\n"
    "    if test -n \"$cfg\"\n"
    "        $self __profiles --config (string replace -r '^~(?=/|$)' $HOME -- $cfg) 2>/dev/null\n"
    "    else\n"
    "        $self __profiles 2>/dev/null\n"
    "    end\n"
    "end\n"
    "function __vzcaps_value -a n opt # the word N before the cursor is OPT (its Nth value is next)\n"
    "    set -l t (commandline -opc)\n"
    "    set -l i (math (count $t) - $n + 1)\n"
    "    test $i -ge 1; and test \"$t[$i]\" = \"$opt\"\n"
    "end\n"
    "complete -c vzcaps -f # files only where a file is expected\n";

static void bash_kind_case(FILE *out, const char *name, void (*fn)(FILE *, const char *, const char *))
{
    fprintf(out, "        %s) _vzcaps_add \"$2\"", name);
    if (fn)
        each_chip(fn, out);
    else
        for (const struct cmd_spec *c = cli_commands; c->name; c++)
            fprintf(out, " %s", c->name);
    fputs(" ;;\n", out);
}

static size_t opt_values(const struct opt_spec *o)
{
    size_t need = 0;
    for (const char *p = o->arg; p && *p; need++)
        p += strcspn(p, " "), p += *p == ' ';
    return need;
}

/* " _vz_w=( WORD... )" for a metavariable's words (none: nothing). */
static void words_array(FILE *out, const char *metavar, void (*word)(FILE *, const char *, const char *))
{
    if (!metavar)
        return;
    fputs(" _vz_w=(", out);
    each_word(metavar, word, out);
    fputs(" )", out);
}

/* The end of _vzcaps_kind, then _vzcaps_opt and _vzcaps_cmd, which bash and zsh share: in is one
 * level of indentation, word writes one word of an array (zsh's carry their description). */
static void print_sh_tables(FILE *out, const char *in, void (*word)(FILE *, const char *, const char *))
{
    fprintf(out, "%sesac\n}\n_vzcaps_opt() { # CMD OPTION: it takes _vz_n values of kind _vz_k (words: _vz_w)\n"
                 "%s_vz_n=0 _vz_k=none _vz_w=()\n%scase $1:$2 in\n", in, in, in);
    for (const struct cmd_spec *c = cli_commands; c->name; c++)
        for (const struct opt_spec *o = c->opts; o->name; o++)
            if (o->arg) {
                enum value_kind k = cli_value_kind(o->arg);
                fprintf(out, "%s%s%s:%s) _vz_n=%zu _vz_k=%s", in, in, c->name, o->name, opt_values(o), kind_names[k]);
                words_array(out, k == VALUE_WORDS ? o->arg : NULL, word);
                fputs(" ;;\n", out);
            }
    fprintf(out, "%sesac\n}\n_vzcaps_cmd() { # CMD: its options _vz_o and what its operands are, _vz_a (words: _vz_w)\n"
                 "%s_vz_o=() _vz_a=none _vz_w=()\n%scase $1 in\n", in, in, in);
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        char token[128];
        const char *kind = operand_kind(c, token, sizeof token);
        fprintf(out, "%s%s%s) _vz_o=(", in, in, c->name);
        for (const struct opt_spec *o = c->opts; o->name; o++)
            word(out, o->name, o->help);
        if (c->args_mode == ARGS_COMMAND || c->args_mode == ARGS_REST)
            word(out, "--", strcmp(kind, "rest") != 0 ? "ends the options; the command follows" : "ends the options");
        fprintf(out, " ) _vz_a=%s", kind);
        words_array(out, strcmp(kind, "words") == 0 ? token : NULL, word);
        fputs(" ;;\n", out);
    }
    fprintf(out, "%sesac\n}\n", in);
}

static void print_bash(FILE *out)
{
    fputs(bash_head, out);
    bash_kind_case(out, "command", NULL);
    bash_kind_case(out, "chip", word_sh);
    print_sh_tables(out, "    ", word_sh);
    fputs(bash_body, out);
}

static void print_zsh(FILE *out)
{
    fputs(zsh_head, out);
    fputs("    command) local -a c\n      c=(", out);
    for (const struct cmd_spec *c = cli_commands; c->name; c++)
        word_zsh(out, c->name, c->summary);
    fputs(" )\n      _describe -t commands 'vzcaps command' c ;;\n    chip) local -a c\n      c=(", out);
    each_chip(word_zsh, out);
    fputs(" )\n      _describe -t chips chip c ;;\n", out);
    print_sh_tables(out, "  ", word_zsh);
    fputs(zsh_body, out);
}

static void fish_values(FILE *out, enum value_kind k, const char *metavar)
{
    switch (k) {
    case VALUE_WORDS:
        fputs(" -x -a \"", out);
        each_word(metavar, word_fish, out);
        fputs("\"", out);
        break;
    case VALUE_PROFILE: fputs(" -x -a '(__vzcaps_profiles)'", out); break;
    case VALUE_CHIP:
        fputs(" -x -a \"", out);
        each_chip(word_fish, out);
        fputs("\"", out);
        break;
    case VALUE_PROGRAM: fputs(" -x -a '(__fish_complete_command)'", out); break;
    case VALUE_FILE: fputs(" -r -F", out); break;
    case VALUE_DIR: fputs(" -x -a '(__fish_complete_directories)'", out); break;
    case VALUE_COMMAND:
        fputs(" -x -a \"", out);
        for (const struct cmd_spec *c = cli_commands; c->name; c++)
            word_fish(out, c->name, c->summary);
        fputs("\"", out);
        break;
    default: fputs(" -x", out); break;
    }
}

static void print_fish(FILE *out)
{
    fputs(fish_head, out);
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        fprintf(out, "complete -c vzcaps -n __vzcaps_none -a %s -d ", c->name);
        squote(out, c->summary, true);
        fputc('\n', out);
    }
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        for (const struct opt_spec *o = c->opts; o->name; o++) {
            bool lng = o->name[1] == '-';
            fprintf(out, "complete -c vzcaps -n '__vzcaps_using %s' %s %s", c->name, lng ? "-l" : "-o", o->name + (lng ? 2 : 1));
            if (o->arg)
                fish_values(out, cli_value_kind(o->arg), o->arg);
            char *d = xformat("%s%s", o->help, o->def == REQUIRED ? " (required)" : "");
            fputs(" -d ", out);
            squote(out, d, true);
            free(d);
            fputc('\n', out);
            for (size_t k = 2; k <= opt_values(o); k++) { /* the later values of "--replay A B" */
                fprintf(out, "complete -c vzcaps -n '__vzcaps_using %s; and __vzcaps_value %zu %s'", c->name, k, o->name);
                fish_values(out, cli_value_kind(o->arg), o->arg);
                fputc('\n', out);
            }
        }
        char token[128];
        const char *kind = operand_kind(c, token, sizeof token);
        if (c->args_mode == ARGS_COMMAND) {
            fprintf(out, "complete -c vzcaps -n '__vzcaps_using %s' -a -- -d 'ends the options; the command follows'\n", c->name);
            fprintf(out, "complete -c vzcaps -n '__vzcaps_after %s' -x -a '(__vzcaps_rest)'\n", c->name);
        } else if (c->args_mode == ARGS_REST && strcmp(kind, "restcmd") == 0) {
            fprintf(out, "complete -c vzcaps -n '__vzcaps_using %s' -a -- -d 'ends the options; the command follows'\n", c->name);
            fprintf(out, "complete -c vzcaps -n '__vzcaps_after %s' -x -a '(__vzcaps_rest)'\n", c->name);
        } else if (c->args_mode == ARGS_REST) {
            fprintf(out, "complete -c vzcaps -n '__vzcaps_using %s' -a -- -d 'ends the options'\n", c->name);
            fprintf(out, "complete -c vzcaps -n '__vzcaps_after %s' -F\n", c->name);
        } else if (c->args_mode == ARGS_POSITIONAL) {
            fprintf(out, "complete -c vzcaps -n '__vzcaps_using %s'", c->name);
            enum value_kind k = strcmp(kind, "words") == 0 ? VALUE_WORDS : cli_value_kind(token);
            if (k == VALUE_FILE)
                fputs(" -F\n", out);
            else {
                fish_values(out, k, token);
                fputc('\n', out);
            }
            if (k == VALUE_FILE)
                fprintf(out, "complete -c vzcaps -n '__vzcaps_after %s' -F\n", c->name);
        }
    }
}

int cli_print_completions(FILE *out, const char *shell)
{
    if (strcmp(shell, "bash") == 0)
        print_bash(out);
    else if (strcmp(shell, "zsh") == 0)
        print_zsh(out);
    else if (strcmp(shell, "fish") == 0)
        print_fish(out);
    else
        return -1;
    return 0;
}

int cli_print_profiles(FILE *out, const char *const *envp, const char *config)
{
    static char paths[VZCAPS_CONFIG_SEARCH_MAX][VZCAPS_PATH_MAX + 1], buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    char why[VZCAPS_NOTE_LEN], section[64];
    bool named = false;
    int n = config ? (snprintf(paths[0], sizeof paths[0], "%s", config), strlen(config) <= VZCAPS_PATH_MAX ? 1 : -1)
                   : vzcaps_config_search(envp, NULL, paths, &named, why, sizeof why);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        bool missing = false;
        if (vzcaps_read_file(NULL, paths[i], buf, sizeof buf, &len, &missing, why, sizeof why) != 0) {
            if (missing && !config && !named)
                continue;
            return 1;
        }
        struct vzcaps_settings s;
        memset(&s, 0, sizeof s);
        if (vzcaps_config_apply(buf, len, paths[i], NULL, NULL, &s, section, sizeof section, why, sizeof why) != 0)
            return 1;
        /* the file is valid: every line that starts with [ is a section header */
        for (const char *p = buf; *p;) {
            size_t n_line = strcspn(p, "\n");
            const char *q = p + strspn(p, " \t");
            if (*q == '[') {
                size_t k = strcspn(q + 1, "]");
                fprintf(out, "%.*s\n", (int)k, q + 1);
            }
            p += n_line + (p[n_line] == '\n');
        }
        return 0;
    }
    return 1;
}

