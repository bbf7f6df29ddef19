/* libFuzzer target: any bytes as the head of a file, through the image activators, the #! parser
 * (xnu's exec_shell_imgact) and the env reading, with the rules checked on every input:
 *   - only a head starting with "#!" is a script; a line parses only when a newline or '#'
 *     ends it within the first 512 bytes; it has 1..255 words, none holding a space, tab,
 *     newline or '#', only the last one empty (a NUL ends the words);
 *   - a refused line says why in one line (no newline), and so does a refused env line;
 *   - env's program is a word of the line, never a VAR=value, nor an option unless after --;
 *   - the protected-location test and the quarantine description never crash or cut silently. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/vzcaps_core.h"

static void check_line(const char *why)
{
    if (!why[0] || strchr(why, '\n'))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vzcaps_shebang sb;
    char why[300] = "";
    size_t n = size > VZCAPS_SHEBANG_MAX + 1 ? VZCAPS_SHEBANG_MAX + 1 : size;
    int k = vzcaps_shebang_parse((const char *)data, n, &sb, why, sizeof why);
    bool hash_bang = size >= 2 && data[0] == '#' && data[1] == '!', ends = false;
    for (size_t i = 2; i < n && i < VZCAPS_SHEBANG_MAX; i++)
        ends |= data[i] == '\n' || data[i] == '#';
    if ((k != 0) != hash_bang || (k == 1 && !ends) || (vzcaps_exec_claims(data, size, true) == VZCAPS_EXEC_SCRIPT) != hash_bang)
        abort();
    if (k < 0)
        check_line(why);
    if (k == 1) {
        if (sb.n_words == 0 || sb.n_words > VZCAPS_SHEBANG_MAX / 2)
            abort();
        for (size_t i = 0; i < sb.n_words; i++) {
            const char *w = vzcaps_shebang_word(&sb, i);
            if ((!w[0] && i + 1 < sb.n_words) || strlen(w) > VZCAPS_SHEBANG_MAX - 2 || w[strcspn(w, " \t\n#")])
                abort();
        }
        if (vzcaps_shebang_word(&sb, sb.n_words))
            abort();
        size_t name = 0;
        char ewhy[200] = "";
        int e = vzcaps_shebang_env(&sb, &name, ewhy, sizeof ewhy);
        if (e < 0)
            check_line(ewhy);
        if (e == 1) {
            const char *w = vzcaps_shebang_word(&sb, name);
            if (name == 0 || name >= sb.n_words || strchr(w, '=') ||
                (w[0] == '-' && strcmp(vzcaps_shebang_word(&sb, name - 1), "--") != 0))
                abort();
        }
        (void)vzcaps_path_protected(vzcaps_shebang_word(&sb, 0));
        (void)vzcaps_arm64e_client(vzcaps_shebang_word(&sb, 0));
    }
    char desc[200];
    if (!vzcaps_quarantine_describe((const char *)data, size, desc, sizeof desc) || strchr(desc, '\n'))
        abort();
    return 0;
}
