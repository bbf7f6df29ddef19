/* Unit tests of the one way the command reads a file (src/common/input.c) and of the
 * property-list reader (src/common/plist.c): FIFOs, directories, links, limits, files that
 * shrink or grow between fstat and read, XML entities, binary plists, cycles, duplicates. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../../src/common/input.h"
#include "../../src/common/plist.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static char *path_of(const char *name)
{
    static char p[4][128];
    static int k;
    snprintf(p[k % 4], sizeof p[0], "%s/%s", dir, name);
    return p[k++ % 4];
}

static void put_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/vzcaps-input-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static int read_one(const char *path, size_t max, unsigned flags, struct vzcaps_input *in, char *err, size_t errlen)
{
    struct vzcaps_input_opts o = {.max = max, .flags = flags};
    return vzcaps_input_read(path, &o, in, err, errlen);
}

static void test_reads_a_regular_file_whole(void **state)
{
    (void)state;
    char *p = path_of("a");
    put_file(p, "hello\0world", 11);
    struct vzcaps_input in;
    char err[300];
    assert_int_equal(read_one(p, 100, 0, &in, err, sizeof err), 0);
    assert_int_equal(in.len, 11);
    assert_memory_equal(in.data, "hello\0world", 12);
    vzcaps_input_free(&in);
}

static void test_refuses_what_is_not_a_regular_file(void **state)
{
    (void)state;
    char *fifo = path_of("fifo"), *d = path_of("d"), err[300];
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkdir(d, 0700), 0);
    struct vzcaps_input in;
    assert_int_equal(read_one(fifo, 100, 0, &in, err, sizeof err), -1); /* and never hangs */
    assert_non_null(strstr(err, "not a regular file (a FIFO)"));
    assert_non_null(strstr(err, fifo));
    assert_null(in.data);
    assert_int_equal(read_one(d, 100, 0, &in, err, sizeof err), -1);
    assert_non_null(strstr(err, "a directory, not a file"));
    assert_int_equal(read_one(path_of("none"), 100, 0, &in, err, sizeof err), -1);
    assert_true(in.missing);
    assert_non_null(strstr(err, "cannot open: No such file"));
}

static void test_a_link_is_refused_when_the_caller_says_so(void **state)
{
    (void)state;
    char *t = path_of("target"), *l = path_of("link"), err[300];
    put_file(t, "x", 1);
    assert_int_equal(symlink(t, l), 0);
    struct vzcaps_input in;
    assert_int_equal(read_one(l, 100, 0, &in, err, sizeof err), 0);
    vzcaps_input_free(&in);
    assert_int_equal(read_one(l, 100, VZCAPS_IN_NOFOLLOW, &in, err, sizeof err), -1);
    assert_non_null(strstr(err, "a symbolic link (not followed)"));
    assert_false(in.missing);
}

static void test_the_limit_is_stated_and_exact(void **state)
{
    (void)state;
    char *p = path_of("big"), err[300];
    static char data[2048];
    memset(data, 'x', sizeof data);
    put_file(p, data, 1024);
    struct vzcaps_input in;
    assert_int_equal(read_one(p, 1024, 0, &in, err, sizeof err), 0); /* exactly the limit: read */
    vzcaps_input_free(&in);
    assert_int_equal(read_one(p, 1023, 0, &in, err, sizeof err), -1);
    assert_non_null(strstr(err, ": larger than 1023 bytes (1024 bytes)"));
    char lim[32];
    vzcaps_input_size_text(64 << 20, lim, sizeof lim);
    assert_string_equal(lim, "64 MiB");
    vzcaps_input_size_text(1 << 30, lim, sizeof lim);
    assert_string_equal(lim, "1024 MiB");
}

static long hook_size;
static void resize_hook(int fd, const char *path)
{
    (void)fd;
    assert_int_equal(truncate(path, hook_size), 0);
}

static void test_a_file_that_shrinks_while_read_is_truncated(void **state)
{
    (void)state;
    char *p = path_of("shrinks"), err[300];
    static char data[100000];
    memset(data, 'y', sizeof data);
    put_file(p, data, sizeof data);
    struct vzcaps_input in;
    hook_size = 10;
    vzcaps_input_after_stat = resize_hook;
    int rc = read_one(p, 1 << 20, 0, &in, err, sizeof err);
    vzcaps_input_after_stat = NULL;
    assert_int_equal(rc, -1);
    assert_null(in.data);
    assert_non_null(strstr(err, "truncated while read (10 of 100000 bytes)"));
    assert_non_null(strstr(err, p));
    /* the streaming form says the same */
    put_file(p, data, sizeof data);
    struct stat st;
    int fd = vzcaps_input_open(p, 0, &st, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(truncate(p, 5), 0);
    char buf[64];
    ssize_t got = read(fd, buf, sizeof buf);
    close(fd);
    assert_int_equal(vzcaps_input_end(p, &st, (unsigned long long)got, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated while read (5 of 100000 bytes)"));
}

static void test_a_file_that_grows_past_the_limit_is_refused(void **state)
{
    (void)state;
    char *p = path_of("grows"), err[300];
    put_file(p, "abc", 3);
    struct vzcaps_input in;
    hook_size = 5000;
    vzcaps_input_after_stat = resize_hook;
    int rc = read_one(p, 4096, 0, &in, err, sizeof err);
    vzcaps_input_after_stat = NULL;
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "larger than 4 KiB (it grew while read)"));
    put_file(p, "abc", 3);
    hook_size = 3000; /* within the limit: what was read is the file */
    vzcaps_input_after_stat = resize_hook;
    rc = read_one(p, 4096, 0, &in, err, sizeof err);
    vzcaps_input_after_stat = NULL;
    assert_int_equal(rc, 0);
    assert_int_equal(in.len, 3000);
    vzcaps_input_free(&in);
}

static void test_devices_only_when_the_caller_says_so(void **state)
{
    (void)state;
    struct vzcaps_input in;
    char err[300];
    assert_int_equal(read_one("/dev/null", 100, 0, &in, err, sizeof err), -1);
    assert_string_equal(err, "/dev/null: not a regular file (a character device)");
    assert_int_equal(read_one("/dev/null", 100, VZCAPS_IN_SPECIAL, &in, err, sizeof err), 0);
    assert_int_equal(in.len, 0);
    vzcaps_input_free(&in);
    /* a stream has no size to check first: its limit still holds */
    assert_int_equal(read_one("/dev/zero", 100, VZCAPS_IN_SPECIAL, &in, err, sizeof err), -1);
    assert_string_equal(err, "/dev/zero: larger than 100 bytes (it grew while read)");
}

/* ---- property lists ---- */

static struct plist *parse(const char *s, size_t n, char *err, size_t errlen)
{
    return plist_parse(s, n ? n : strlen(s), err, errlen);
}

static void test_xml_plist_with_entities(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
                      "<plist version=\"1.0\">\n<dict>\n  <!-- a comment <key>CFBundleExecutable</key><string>Decoy</string> -->\n"
                      "  <key>CFBundleExecutable</key>\n  <string>A&amp;B&#x20;&#233;<![CDATA[<x>]]></string>\n"
                      "  <key>n</key><integer>-42</integer><key>h</key><integer>0x10</integer><key>u</key><integer>18446744073709551615</integer>\n"
                      "  <key>r</key><real>2.5</real><key>t</key><true/><key>e</key><string/>\n"
                      "  <key>d</key><data>eHk=</data><key>a</key><array><dict/><false/></array>\n"
                      "</dict>\n</plist>\n";
    char err[300];
    struct plist *p = parse(xml, 0, err, sizeof err);
    assert_non_null(p);
    const struct plist *v = plist_get(p, "CFBundleExecutable");
    assert_non_null(v);
    assert_int_equal(v->type, PLIST_STRING);
    assert_string_equal(v->str, "A&B \xc3\xa9<x>");
    assert_int_equal(plist_get(p, "n")->integer, -42);
    assert_int_equal(plist_get(p, "h")->integer, 16);
    assert_true((unsigned long long)plist_get(p, "u")->integer == 18446744073709551615ull);
    assert_true(plist_get(p, "r")->real == 2.5);
    assert_true(plist_get(p, "t")->boolean);
    assert_string_equal(plist_get(p, "e")->str, "");
    assert_int_equal(plist_get(p, "d")->len, 2);
    assert_memory_equal(plist_get(p, "d")->str, "xy", 2);
    assert_int_equal(plist_get(p, "a")->n, 2);
    assert_null(plist_get(p, "Decoy"));
    plist_free(p);
}

static void test_xml_plist_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"<plist><dict><key>a</key><string>&foo;</string></dict></plist>", "line 1: unknown entity &foo;"},
        {"<plist><dict><key>a</key><string>x</string><key>a</key><string>y</string></dict></plist>", "duplicate key \"a\""},
        {"<plist><dict><key>a</key></dict></plist>", "expected an element"},
        {"<plist><string>x</plist>", "expected </string>"},
        {"<plist><dict><string>x</string></dict></plist>", "<string> where a <key> belongs"},
        {"<dict></dict>", "<dict> where <plist> belongs"},
        {"<plist><integer>12x</integer></plist>", "<integer> is not a number"},
        {"<plist><string>&#0;</string></plist>", "a character reference that is not a character"},
        {"<plist><string>x</string></plist>junk", "text after </plist>"},
        {"{ CFBundleExecutable = x; }", "expected an element"},
        {"", "not a property list (empty)"},
        {"<plist><string>unterminated", "<string>: unexpected end of the file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[300] = "";
        struct plist *p = parse(bad[i].text, 0, err, sizeof err);
        if (p || !strstr(err, bad[i].why))
            fail_msg("case %zu: %s: got \"%s\"", i, bad[i].text, err);
    }
    /* deep nesting is refused, not a stack overflow */
    static char deep[8 * 1000 + 64];
    size_t n = (size_t)snprintf(deep, sizeof deep, "<plist>");
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "<array>");
    char err[300];
    assert_null(parse(deep, n, err, sizeof err));
    assert_non_null(strstr(err, "nested deeper than 128"));
}

static const unsigned char bin_app[] = {
    0x62, 0x70, 0x6c, 0x69, 0x73, 0x74, 0x30, 0x30, 0xd3, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x5f, 0x10, 0x12, 0x43, 0x46, 0x42,
    0x75, 0x6e, 0x64, 0x6c, 0x65, 0x45, 0x78, 0x65, 0x63, 0x75, 0x74, 0x61, 0x62, 0x6c, 0x65, 0x5c, 0x43, 0x46, 0x42, 0x75, 0x6e,
    0x64, 0x6c, 0x65, 0x4e, 0x61, 0x6d, 0x65, 0x51, 0x6e, 0x65, 0x00, 0x52, 0x00, 0x65, 0x00, 0x61, 0x00, 0x6c, 0x00, 0xe9, 0x53,
    0x41, 0x26, 0x42, 0xa4, 0x07, 0x08, 0x09, 0x0a, 0x10, 0x01, 0x23, 0x40, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x42,
    0x78, 0x79, 0x08, 0x0f, 0x24, 0x31, 0x33, 0x3e, 0x42, 0x47, 0x49, 0x52, 0x53, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x56};

static void test_binary_plist(void **state)
{
    (void)state;
    char err[300];
    struct plist *p = plist_parse(bin_app, sizeof bin_app, err, sizeof err);
    if (!p)
        fail_msg("%s", err);
    assert_string_equal(plist_get(p, "CFBundleExecutable")->str, "Real\xc3\xa9"); /* UTF-16 in the file */
    assert_string_equal(plist_get(p, "CFBundleName")->str, "A&B");                /* no entities in binary */
    const struct plist *n = plist_get(p, "n");
    assert_int_equal(n->type, PLIST_ARRAY);
    assert_int_equal(n->n, 4);
    assert_int_equal(n->items[0]->integer, 1);
    assert_true(n->items[1]->real == 2.5);
    assert_true(n->items[2]->boolean);
    assert_memory_equal(n->items[3]->str, "xy", 2);
    plist_free(p);
    /* every cut of the file is refused with a reason, never read past */
    for (size_t len = 0; len < sizeof bin_app; len++) {
        unsigned char *cut = malloc(len ? len : 1);
        memcpy(cut, bin_app, len);
        p = plist_parse(cut, len, err, sizeof err);
        free(cut);
        assert_null(p);
        assert_true(err[0] != '\0');
    }
}

static void test_binary_plist_refusals(void **state)
{
    (void)state;
    /* an array that holds itself */
    unsigned char cyc[43] = {'b', 'p', 'l', 'i', 's', 't', '0', '0', 0xa1, 0x00, 0x08};
    cyc[11 + 6] = 1, cyc[11 + 7] = 1, cyc[11 + 15] = 1, cyc[11 + 31] = 10;
    char err[300];
    assert_null(plist_parse(cyc, sizeof cyc, err, sizeof err));
    assert_non_null(strstr(err, "binary: object 0 contains itself"));
    /* a reference past the object count */
    cyc[9] = 5;
    assert_null(plist_parse(cyc, sizeof cyc, err, sizeof err));
    assert_non_null(strstr(err, "a reference to object 5 of 1"));
    /* an offset table outside the file */
    cyc[9] = 0, cyc[11 + 31] = 200;
    assert_null(plist_parse(cyc, sizeof cyc, err, sizeof err));
    assert_non_null(strstr(err, "the offset table lies outside the file"));
    unsigned char v15[48] = "bplist15";
    assert_null(plist_parse(v15, sizeof v15, err, sizeof err));
    assert_non_null(strstr(err, "other than bplist00"));
}

static void test_read_file_names_the_file(void **state)
{
    (void)state;
    char *p = path_of("Info.plist"), err[300];
    put_file(p, "<plist><string>x", 16);
    struct plist *doc;
    bool missing = true;
    assert_int_equal(plist_read_file(p, &doc, &missing, err, sizeof err), -1);
    assert_false(missing);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, "not a property list vzcaps reads"));
    assert_int_equal(plist_read_file(path_of("absent.plist"), &doc, &missing, err, sizeof err), -1);
    assert_true(missing);
    put_file(p, bin_app, sizeof bin_app);
    assert_int_equal(plist_read_file(p, &doc, &missing, err, sizeof err), 0);
    assert_string_equal(plist_get(doc, "CFBundleExecutable")->str, "Real\xc3\xa9");
    plist_free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_a_regular_file_whole),
        cmocka_unit_test(test_refuses_what_is_not_a_regular_file),
        cmocka_unit_test(test_a_link_is_refused_when_the_caller_says_so),
        cmocka_unit_test(test_the_limit_is_stated_and_exact),
        cmocka_unit_test(test_a_file_that_shrinks_while_read_is_truncated),
        cmocka_unit_test(test_a_file_that_grows_past_the_limit_is_refused),
        cmocka_unit_test(test_devices_only_when_the_caller_says_so),
        cmocka_unit_test(test_xml_plist_with_entities),
        cmocka_unit_test(test_xml_plist_refusals),
        cmocka_unit_test(test_binary_plist),
        cmocka_unit_test(test_binary_plist_refusals),
        cmocka_unit_test(test_read_file_names_the_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
