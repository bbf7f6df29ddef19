"""No function in src/ is longer than 80 lines (issue 31, the house rules).

A function's length runs from the line that names it to the line of its closing brace, both
counted. That is the pre-stop hook's awk count (from the line ending in `)` before a `{` line
to the closing brace) or longer: the hook starts at the last line of the signature, this count
at the line holding the name, and it also sees the functions the hook's pattern misses (a `{`
on the signature line, attributes, a parameter list over several lines).

The counter works on the text with comments, strings and character constants blanked (their
newlines kept) and preprocessor lines dropped, so a brace in a string or a comment is not a
brace, and finds every `{` at file level whose header ends in a parameter list."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
LIMIT = 80

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_A_FUNCTION = {"if", "while", "for", "switch", "return", "sizeof", "defined"}


def blank(text):
    """text with comments, string and character literals and preprocessor lines replaced by
    spaces, every newline kept (so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # a directive, with its backslash continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def _strip_attributes(header):
    """header with __attribute__((...)), __asm__(...) and the like blanked (same length)."""
    chars = list(header)
    for m in re.finditer(r"\b(__attribute__|__asm__|asm|__declspec|_Alignas)\s*\(", header):
        depth, j = 0, m.end() - 1
        while j < len(header):
            if header[j] == "(":
                depth += 1
            elif header[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        for k in range(m.start(), min(j + 1, len(header))):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)


def _name_before_parameters(h, base=0):
    """(name, offset) of the function h declares, h ending in its parameter list; also for a
    function returning a pointer to a function, `int (*pick(int k))(int)`."""
    depth, j = 0, len(h) - 1
    while j >= 0:
        if h[j] == ")":
            depth += 1
        elif h[j] == "(":
            depth -= 1
            if depth == 0:
                break
        j -= 1
    if j < 0:
        return None
    before = h[:j].rstrip()
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)$", before)
    if m:
        return m.group(1), base + m.start(1)
    if before.endswith(")"):
        # the declarator in parentheses: look inside it
        d, k = 0, len(before) - 1
        while k >= 0:
            if before[k] == ")":
                d += 1
            elif before[k] == "(":
                d -= 1
                if d == 0:
                    break
            k -= 1
        inner = before[k + 1:-1].rstrip()
        if k >= 0 and inner.endswith(")"):
            return _name_before_parameters(inner, base + k + 1)
    return None


def _function_name(header):
    """(name, offset of the name in header) when header (the text between the previous
    file-level `;`/`}` and a file-level `{`) is a function definition's, else None."""
    h = _strip_attributes(header).rstrip()
    if not h.endswith(")") or "=" in h:
        return None
    got = _name_before_parameters(h)
    if not got or got[0] in _NOT_A_FUNCTION:
        return None
    words = _IDENT.findall(h[:got[1]])
    if words and words[0] in ("struct", "union", "enum") and len(words) == 1:
        return None
    return got


def functions(text):
    """[(name, first line, last line)] of every function defined in C source text."""
    src = blank(text)
    found = []
    depth = 0
    header_start = 0
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if depth == 0 and c in ";}":
            header_start = i + 1
        elif c == "{":
            if depth == 0:
                got = _function_name(src[header_start:i])
                if got:
                    name, off = got
                    first = src.count("\n", 0, header_start + off) + 1
                    d, j = 0, i
                    while j < n:
                        if src[j] == "{":
                            d += 1
                        elif src[j] == "}":
                            d -= 1
                            if d == 0:
                                break
                        j += 1
                    last = src.count("\n", 0, j) + 1
                    found.append((name, first, last))
                    i = j
                    header_start = j + 1
                    continue
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                header_start = i + 1
        i += 1
    return found


def long_functions(root=SRC, limit=LIMIT):
    out = []
    for p in sorted(root.rglob("*.c")):
        for name, first, last in functions(p.read_text(errors="replace")):
            if last - first + 1 > limit:
                out.append(f"{p.relative_to(root.parent)}:{first}: {name}: {last - first + 1} lines")
    return out


def test_no_function_in_src_is_over_80_lines():
    bad = long_functions()
    assert not bad, ("functions over %d lines (split them by the steps they take):\n  " % LIMIT
                     + "\n  ".join(bad))


# ---- the counter itself, on planted examples ----

def body(n):
    """n lines of statements."""
    return "".join(f"    x += {k};\n" for k in range(n))


def lengths(text):
    return {name: last - first + 1 for name, first, last in functions(text)}


def test_counts_the_usual_layout():
    text = "static int\nfoo(int a, int b)\n{\n" + body(3) + "    return a;\n}\n"
    # foo( ... ) line, {, three statements, return, } = 7
    assert lengths(text) == {"foo": 7}


def test_counts_a_brace_on_the_signature_line():
    text = "static int f(void) {\n" + body(5) + "}\n"
    assert lengths(text) == {"f": 7}


def test_counts_from_the_name_of_a_multi_line_parameter_list():
    text = "int\nmany(const char *a,\n     int b,\n     int c)\n{\n" + body(2) + "}\n"
    assert lengths(text) == {"many": 7}


def test_sees_attributes_before_and_after():
    text = ("__attribute__((constructor)) static void init(void)\n{\n" + body(1) + "}\n"
            "static void g(int x) __attribute__((unused));\n"
            "static void h(int x) __attribute__((noinline)) {\n" + body(1) + "}\n"
            "static __attribute__((format(printf, 1, 2))) void say(const char *f, ...)\n{\n}\n")
    assert lengths(text) == {"init": 4, "h": 3, "say": 3}


def test_braces_in_strings_comments_and_characters_do_not_count():
    text = ('int s(void)\n{\n    const char *p = "}}}{";\n    char c = \'}\';\n'
            "    /* } */\n    // }\n    return p[0] + c;\n}\nint after(void)\n{\n    return 0;\n}\n")
    assert lengths(text) == {"s": 8, "after": 4}


def test_struct_initialisers_and_declarations_are_not_functions():
    text = ("struct node { int a; };\nstatic const struct x table[] = {\n    { 1 },\n};\n"
            "enum e { A, B };\nint proto(int);\ntypedef int (*fp)(int);\n"
            "static int (*pick(int k))(int)\n{\n    return 0;\n}\n")
    assert lengths(text) == {"pick": 4}


def test_preprocessor_lines_are_not_code():
    text = ("#define BLOCK(x) { x }\n#if X\n#endif\nint f(void)\n{\n#ifdef A\n    return 1;\n"
            "#endif\n    return 0;\n}\n")
    assert lengths(text) == {"f": 7}


def test_the_limit_is_eighty_and_names_the_function(tmp_path):
    src = tmp_path / "src" / "cli"
    src.mkdir(parents=True)
    # 78 statements + name line + { + } = 81 lines; 77 statements = 80 lines
    (src / "a.c").write_text("int\nlong_one(void)\n{\n" + body(78) + "}\n"
                             "int\nfits(void)\n{\n" + body(77) + "}\n")
    assert long_functions(tmp_path / "src") == ["src/cli/a.c:2: long_one: 81 lines"]


def test_agrees_with_the_pre_stop_hook_on_the_tree():
    """Wherever the hook's awk pattern sees a function, this counter sees it too, at the
    same length or longer. (The awk counts braces inside strings too; here its rule runs on
    the text with strings and comments blanked, which is what it means.)"""
    pattern = re.compile(r"^[A-Za-z_].*\)[ \t]*$")
    seen = 0
    for p in sorted(SRC.rglob("*.c")):
        text = p.read_text(errors="replace")
        lines, code = text.split("\n"), blank(text).split("\n")
        mine = {last: last - first + 1 for _, first, last in functions(text)}
        k = 0
        while k < len(lines) - 1:
            if pattern.match(lines[k]) and lines[k + 1].startswith("{"):
                start, depth, j = k + 1, 1, k + 2
                while depth > 0 and j < len(lines):
                    depth += code[j].count("{") - code[j].count("}")
                    j += 1
                awk_len = j - start + 1
                assert j in mine, f"{p.relative_to(ROOT)}:{start}: the hook sees a function here"
                assert mine[j] >= awk_len, f"{p.relative_to(ROOT)}:{start}"
                seen += 1
                k = j
            else:
                k += 1
    assert seen > 500  # the tree has well over that many functions in the hook's layout
