/* Unit tests of src/common/safewrite: the one way the command writes files, tried with what a
 * hostile or unlucky machine puts in its way (links, directories and FIFOs at the name, a full
 * disk, a umask, setuid modes, files vzcaps did not write). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../../src/common/safewrite.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mount.h>
#endif
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256];

static char *at(const char *name)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", root, name);
    return b;
}

static int setup(void **st)
{
    (void)st;
    snprintf(root, sizeof root, "/tmp/vzcaps-test-safewrite.XXXXXX");
    assert_non_null(mkdtemp(root));
    umask(022);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "umount %s/small 2>/dev/null; rm -rf %s", root, root);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path)
{
    static char buf[8192];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n < 0 ? 0 : n] = '\0';
    return buf;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* No ".vzcaps-tmp.*" is left in the directory. */
static void assert_no_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, ".vzcaps-tmp.", 12) == 0)
            fail_msg("temporary left behind: %s/%s", dir, e->d_name);
    closedir(d);
}

static const struct vzcaps_wopts plain = {.mode = 0644};

static void test_new_file_and_modes(void **st)
{
    (void)st;
    char *err = NULL;
    assert_int_equal(vzcaps_write_file(at("a.txt"), "hello\n", 6, &plain, &err), 0);
    assert_string_equal(slurp(at("a.txt")), "hello\n");
    struct stat sb;
    assert_int_equal(lstat(at("a.txt"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0644);
    /* setuid, setgid, sticky and world-write never survive; the umask applies */
    struct vzcaps_wopts evil = {.mode = 07777};
    assert_int_equal(vzcaps_write_file(at("b"), "x", 1, &evil, &err), 0);
    assert_int_equal(lstat(at("b"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0755);
    mode_t old = umask(077);
    assert_int_equal(vzcaps_write_file(at("c"), "x", 1, &evil, &err), 0);
    umask(old);
    assert_int_equal(lstat(at("c"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0700);
    assert_int_equal(vzcaps_safe_mode(04777), 0775);
    assert_int_equal(vzcaps_safe_mode(S_IFREG | 02755), 0755);
    assert_no_temporaries(root);
}

static void test_policies(void **st)
{
    (void)st;
    char *err = NULL;
    put(at("user.txt"), "the user's own notes\n");
    /* NEW_ONLY: an existing file stays */
    assert_int_equal(vzcaps_write_file(at("user.txt"), "x", 1, &plain, &err), -1);
    assert_non_null(strstr(err, "already exists (not replaced)"));
    assert_int_equal(strncmp(err, at("user.txt"), strlen(at("user.txt"))), 0);
    free(err), err = NULL;
    /* IF_MARKED: a file without the marker stays, one with it is replaced */
    struct vzcaps_wopts marked = {.mode = 0644, .replace = VZCAPS_IF_MARKED, .marker = "<!-- written by vzcaps -->"};
    assert_int_equal(vzcaps_write_file(at("user.txt"), "new", 3, &marked, &err), -1);
    assert_non_null(strstr(err, "vzcaps did not write it"));
    free(err), err = NULL;
    assert_string_equal(slurp(at("user.txt")), "the user's own notes\n");
    /* the marker counts only where it stands (rule 4): the first line, whole */
    const char *not_ours[] = {"# table\n<!-- written by vzcaps -->\n", "<!-- written by vzcaps --> and more\n",
                              " <!-- written by vzcaps -->\n", "<!-- written by vzcaps -->"};
    for (size_t i = 0; i < sizeof not_ours / sizeof *not_ours; i++) {
        put(at("notes.md"), not_ours[i]);
        assert_int_equal(vzcaps_write_file(at("notes.md"), "new", 3, &marked, &err), -1);
        free(err), err = NULL;
        assert_string_equal(slurp(at("notes.md")), not_ours[i]);
    }
    put(at("ours.md"), "<!-- written by vzcaps -->\n# table\n");
    assert_int_equal(vzcaps_write_file(at("ours.md"), "new", 3, &marked, &err), 0);
    assert_string_equal(slurp(at("ours.md")), "new");
    /* after an XML declaration: line 2, only when asked for */
    put(at("ours.svg"), "<?xml version=\"1.0\"?>\n<!-- written by vzcaps -->\n<svg/>\n");
    assert_int_equal(vzcaps_write_file(at("ours.svg"), "new", 3, &marked, &err), -1);
    free(err), err = NULL;
    struct vzcaps_wopts svg = {.mode = 0644, .replace = VZCAPS_IF_MARKED, .marker = "<!-- written by vzcaps -->",
                               .marker_at = VZCAPS_MARK_AFTER_XML_DECL};
    assert_int_equal(vzcaps_write_file(at("ours.svg"), "new", 3, &svg, &err), 0);
    /* IF_MARKED without a marker never replaces */
    struct vzcaps_wopts no_marker = {.mode = 0644, .replace = VZCAPS_IF_MARKED};
    assert_int_equal(vzcaps_write_file(at("ours.md"), "x", 1, &no_marker, &err), -1);
    free(err), err = NULL;
    /* FORCE: replaced */
    struct vzcaps_wopts force = {.mode = 0644, .replace = VZCAPS_FORCE};
    assert_int_equal(vzcaps_write_file(at("user.txt"), "forced", 6, &force, &err), 0);
    assert_string_equal(slurp(at("user.txt")), "forced");
    assert_no_temporaries(root);
}

/* A link, a directory or a FIFO at the name is never written through or replaced, whatever
 * the policy, and a FIFO never blocks. */
static void test_hostile_names(void **st)
{
    (void)st;
    char *err = NULL;
    put(at("victim"), "precious\n");
    assert_int_equal(symlink(at("victim"), at("link")), 0);
    assert_int_equal(symlink(at("nowhere"), at("dangling")), 0);
    assert_int_equal(mkdir(at("dir"), 0755), 0);
    assert_int_equal(mkfifo(at("fifo"), 0644), 0);
    const char *names[] = {"link", "dangling", "dir", "fifo"};
    const char *why[] = {"is a symbolic link", "is a symbolic link", "is a directory", "is not a regular file"};
    enum vzcaps_replace policies[] = {VZCAPS_NEW_ONLY, VZCAPS_IF_MARKED, VZCAPS_FORCE};
    for (size_t p = 0; p < 3; p++) {
        struct vzcaps_wopts o = {.mode = 0644, .replace = policies[p], .marker = "m"};
        for (size_t i = 0; i < 4; i++) {
            alarm(10); /* a FIFO opened for reading would hang: fail instead */
            assert_int_equal(vzcaps_write_file(at(names[i]), "m evil", 6, &o, &err), -1);
            alarm(0);
            assert_non_null(err);
            if (!strstr(err, why[i]))
                fail_msg("%s under policy %zu: %s", names[i], p, err);
            free(err), err = NULL;
        }
    }
    assert_string_equal(slurp(at("victim")), "precious\n");
    struct stat sb;
    assert_int_equal(lstat(at("nowhere"), &sb), -1);
    assert_int_equal(lstat(at("link"), &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_no_temporaries(root);
    /* the same inside an open directory */
    int dfd = open(root, O_RDONLY | O_DIRECTORY);
    assert_int_equal(vzcaps_write_fileat(dfd, root, "link", "x", 1, &plain, &err), -1);
    free(err), err = NULL;
    assert_int_equal(vzcaps_write_fileat(dfd, root, "../escape", "x", 1, &plain, &err), -1);
    assert_non_null(strstr(err, "not a file name"));
    free(err), err = NULL;
    assert_int_equal(vzcaps_write_fileat(dfd, root, "inside", "x", 1, &plain, &err), 0);
    close(dfd);
    assert_string_equal(slurp(at("inside")), "x");
}

/* The directory a path names is followed (macOS's /tmp is a link); the file's name is not. */
static void test_parent_links_are_followed(void **st)
{
    (void)st;
    char *err = NULL;
    assert_int_equal(mkdir(at("real"), 0755), 0);
    assert_int_equal(symlink("real", at("alias")), 0);
    assert_int_equal(vzcaps_write_file(at("alias/x.csv"), "1,2\n", 4, &plain, &err), 0);
    assert_string_equal(slurp(at("real/x.csv")), "1,2\n");
    assert_int_equal(vzcaps_write_file(at("none/x.csv"), "1", 1, &plain, &err), -1);
    assert_non_null(strstr(err, "no such directory"));
    free(err), err = NULL;
    put(at("plainfile"), "");
    assert_int_equal(vzcaps_write_file(at("plainfile/x"), "1", 1, &plain, &err), -1);
    free(err), err = NULL;
}

/* A write that fails is an error naming the path and the reason, and nothing is placed. */
static void test_full_disk(void **st)
{
    (void)st;
    char *err = NULL;
    static char data[256 * 1024];
    memset(data, 'z', sizeof data);
    /* a file-size limit fails writes the way a full disk does, on any machine */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        int rc = vzcaps_write_file(at("big"), data, sizeof data, &plain, &err);
        _exit(rc == -1 && err && strstr(err, strerror(EFBIG)) && strstr(err, "/big: ") ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat sb;
    assert_int_equal(lstat(at("big"), &sb), -1);
    assert_no_temporaries(root);
#ifdef __linux__
    /* a real full file system: a 64 KiB tmpfs (make check runs as root on Linux) */
    assert_int_equal(mkdir(at("small"), 0755), 0);
    if (mount("tmpfs", at("small"), "tmpfs", 0, "size=64k") != 0)
        fail_msg("cannot mount a tmpfs at %s (%s): run the unit tests as root", at("small"), strerror(errno));
    assert_int_equal(vzcaps_write_file(at("small/big"), data, sizeof data, &plain, &err), -1);
    assert_non_null(strstr(err, strerror(ENOSPC)));
    free(err), err = NULL;
    assert_int_equal(lstat(at("small/big"), &sb), -1);
    assert_no_temporaries(at("small"));
    /* through a stream too */
    struct vzcaps_out o;
    assert_int_equal(vzcaps_out_open(&o, at("small/s"), &plain, &err), 0);
    FILE *f = vzcaps_out_stream(&o);
    assert_non_null(f);
    for (int i = 0; i < 100; i++)
        fwrite(data, 1, 4096, f);
    assert_int_equal(vzcaps_out_commit(&o, &err), -1);
    assert_non_null(strstr(err, strerror(ENOSPC)));
    free(err), err = NULL;
    assert_int_equal(lstat(at("small/s"), &sb), -1);
    assert_no_temporaries(at("small"));
    umount(at("small"));
#endif
}

static void test_abort_places_nothing(void **st)
{
    (void)st;
    struct vzcaps_out o;
    char *err = NULL;
    assert_int_equal(vzcaps_out_open(&o, at("never"), &plain, &err), 0);
    vzcaps_out_write(&o, "x", 1);
    vzcaps_out_abort(&o);
    vzcaps_out_abort(&o); /* twice is safe */
    struct stat sb;
    assert_int_equal(lstat(at("never"), &sb), -1);
    assert_no_temporaries(root);
}

static void test_output_directories(void **st)
{
    (void)st;
    char *err = NULL;
    int fd = vzcaps_dir_open_output(at("out/deep/bundle"), NULL, &err);
    assert_true(fd >= 0);
    close(fd);
    fd = vzcaps_dir_open_output(at("out/deep/bundle"), NULL, &err); /* exists, empty */
    assert_true(fd >= 0);
    assert_int_equal(vzcaps_write_fileat(fd, at("out/deep/bundle"), "summary.md", "s", 1, &plain, &err), 0);
    close(fd);
    assert_int_equal(vzcaps_dir_open_output(at("out/deep/bundle"), NULL, &err), -1);
    assert_non_null(strstr(err, "not empty"));
    free(err), err = NULL;
    fd = vzcaps_dir_open_output(at("out/deep/bundle"), "summary.md", &err); /* marked */
    assert_true(fd >= 0);
    close(fd);
    /* a link at the name, also written with a trailing slash, is refused */
    assert_int_equal(mkdir(at("elsewhere"), 0755), 0);
    assert_int_equal(symlink(at("elsewhere"), at("dirlink")), 0);
    const char *links[] = {"dirlink", "dirlink/", "dirlink//"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(vzcaps_dir_open_output(at(links[i]), NULL, &err), -1);
        assert_non_null(strstr(err, "is a symbolic link"));
        free(err), err = NULL;
    }
    put(at("afile"), "");
    assert_int_equal(vzcaps_dir_open_output(at("afile"), NULL, &err), -1);
    assert_non_null(strstr(err, "not a directory"));
    free(err), err = NULL;
    /* a new subdirectory, never an existing one */
    fd = open(at("elsewhere"), O_RDONLY | O_DIRECTORY);
    int sub = vzcaps_mkdirat_new(fd, at("elsewhere"), "sub", 0755, &err);
    assert_true(sub >= 0);
    close(sub);
    assert_int_equal(vzcaps_mkdirat_new(fd, at("elsewhere"), "sub", 0755, &err), -1);
    assert_non_null(strstr(err, "already exists"));
    free(err), err = NULL;
    close(fd);
    assert_int_equal(vzcaps_mkdir_parents(at("p/q/r"), &err), 0);
    assert_int_equal(vzcaps_mkdir_parents(at("afile/q"), &err), -1);
    free(err), err = NULL;
}

/* Standard output is a file too: a full or closed one is an error at exit, named with its
 * reason also when the failure happened in the middle (more output than stdio buffers). */
static char child_message[256];

static int close_stdout_in_child(const char *how)
{
    int msg[2];
    if (pipe(msg) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(msg[1], 2); /* the message is read back by the test */
        close(msg[0]);
        if (strncmp(how, "full", 4) == 0) {
            int full = open("/dev/full", O_WRONLY);
            dup2(full, 1);
        } else if (strncmp(how, "closed", 6) == 0) {
            close(1);
            vzcaps_guard_std_fds();
        } else {
            dup2(open("/dev/null", O_WRONLY), 1);
        }
        for (int i = 0; i < (strstr(how, "much") ? 5000 : 1); i++)
            printf("some output, line %d\n", i);
        _exit(vzcaps_close_stdout() == 0 ? 0 : 1);
    }
    close(msg[1]);
    ssize_t n = read(msg[0], child_message, sizeof child_message - 1);
    child_message[n > 0 ? n : 0] = '\0';
    close(msg[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_standard_output(void **st)
{
    (void)st;
#ifdef __linux__
    assert_int_equal(close_stdout_in_child("full"), 1); /* /dev/full */
    assert_string_equal(child_message, "vzcaps: cannot write standard output: No space left on device\n");
    assert_int_equal(close_stdout_in_child("full, much"), 1); /* failed while printing, not at exit */
    assert_string_equal(child_message, "vzcaps: cannot write standard output: No space left on device\n");
#endif
    assert_int_equal(close_stdout_in_child("closed"), 1);
    assert_string_equal(child_message, "vzcaps: cannot write standard output: Bad file descriptor\n");
    assert_int_equal(close_stdout_in_child("closed, much"), 1);
    assert_string_equal(child_message, "vzcaps: cannot write standard output: Bad file descriptor\n");
    assert_int_equal(close_stdout_in_child("null"), 0);
    assert_string_equal(child_message, "");
    /* a closed descriptor 1 never becomes a file opened later */
    pid_t pid = fork();
    if (pid == 0) {
        close(1);
        vzcaps_guard_std_fds();
        int fd = open(at("later"), O_WRONLY | O_CREAT, 0644);
        _exit(fd > 2 ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The names a user may give one output or directory by: another spelling is the same one. */
static void test_spellings(void **st)
{
    (void)st;
    const char *cases[][2] = {{"d", "d"}, {"d/", "d"}, {"d/.", "d"}, {"d//.//", "d"}, {"d/./.", "d"}, {".", "."},
                              {"./", "."}, {"/", "/"}, {"/.", "/"}, {"//", "/"}, {"d/..", "d/.."}, {"a.b", "a.b"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *n = vzcaps_dir_name(cases[i][0]);
        assert_non_null(n);
        assert_string_equal(n, cases[i][1]);
        free(n);
    }
    assert_int_equal(mkdir(at("sub"), 0755), 0);
    assert_int_equal(symlink("sub", at("link")), 0);
    assert_true(vzcaps_same_output(at("sub/o.md"), at("link/o.md")));          /* neither exists yet */
    assert_true(vzcaps_same_output(at("o.md"), at("sub/../o.md")));
    assert_false(vzcaps_same_output(at("o.md"), at("sub/o.md")));
    assert_false(vzcaps_same_output(at("missing/o.md"), at("missing/o.md"))); /* no directory: nothing to compare */
    char *a = at("sub/x");
    FILE *f = fopen(a, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(link(a, at("hard")), 0);
    assert_true(vzcaps_same_output(at("hard"), at("sub/x")));                  /* a hard link */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_file_and_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parent_links_are_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_places_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(test_standard_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spellings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
