"""make release: the archive a guest installs from (its content, its help, byte-for-byte
reproducibility), and the Homebrew tap with the archive's URL and real checksum. Most tests use
stand-in binaries for dist/ (the packaging is what they test); the round trip with the real
cross-built binaries needs dist/ (make dist). install.sh and uninstall.sh themselves:
test_install_scripts.py, test_install_manifest.py and test_uninstall_all.py."""
import hashlib
import os
import shlex
import shutil
import subprocess
import tarfile
import time

import pytest

from conftest import BUILD, ROOT, built

NAME = "vzcaps-0.1.0-macos"
DOCS = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
INSTALLED = ["bin/vzcaps", "lib/libvzcaps.dylib", "share/man/man1/vzcaps.1", "share/bash-completion/completions/vzcaps",
             "share/zsh/site-functions/_vzcaps", "share/fish/vendor_completions.d/vzcaps.fish",
             "share/doc/vzcaps/README", "share/doc/vzcaps/LICENSE", "share/doc/vzcaps/vzcaps.conf.example",
             "share/vzcaps/uninstall.sh", "share/vzcaps/provision-image.sh"] + [f"share/doc/vzcaps/{d}" for d in DOCS]
TOP = ["README", "LICENSE", "vzcaps.conf.example", "SHA256SUMS", "install.sh", "uninstall.sh", "provision-image.sh"]


def commit_time():
    return int(subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout)


@pytest.fixture(scope="module")
def fake_dist(tmp_path_factory):
    d = tmp_path_factory.mktemp("fakedist")
    (d / "vzcaps").write_bytes(b"\xcf\xfa\xed\xfe stand-in command\n")
    (d / "libvzcaps.dylib").write_bytes(b"\xcf\xfa\xed\xfe stand-in library\n")
    return d


def release(out, dist, umask=None, **env):
    def pre():
        if umask is not None:
            os.umask(umask)
    e = dict(os.environ, RELEASE_OUT=str(out), DIST_DIR=str(dist), **env)
    e.pop("SOURCE_DATE_EPOCH", None) if "SOURCE_DATE_EPOCH" not in env else None
    e.pop("URL", None) if "URL" not in env else None
    return subprocess.run(["sh", "scripts/release"], cwd=ROOT, env=e, capture_output=True, text=True, timeout=120,
                          preexec_fn=pre)


@pytest.fixture(scope="module")
def made(tmp_path_factory, fake_dist):
    out = tmp_path_factory.mktemp("release")
    p = release(out, fake_dist)
    assert p.returncode == 0, p.stderr
    return out, out / f"{NAME}.tar.gz"


def test_archive_content_and_help(made, tmp_path):
    _, archive = made
    with tarfile.open(archive) as t:
        files = {m.name.split("/", 1)[1] for m in t.getmembers() if m.isfile()}
        t.extractall(tmp_path)
    assert files == set(INSTALLED) | set(TOP)
    assert DOCS, "docs/*.md: the pages the archive carries"
    rel = tmp_path / NAME
    readme = (rel / "README").read_text()
    for part in ("Install", "First run", "Uninstall", "Documentation", "install.sh --prefix", "uninstall.sh --all",
                 "share/doc/vzcaps", "other than macOS", "com.apple.quarantine"):
        assert part in readme, part
    assert "@VERSION@" not in readme and "0.1.0" in readme
    for d in DOCS:
        assert (rel / "share" / "doc" / "vzcaps" / d).read_bytes() == (ROOT / "docs" / d).read_bytes()
    assert (rel / "share" / "vzcaps" / "uninstall.sh").read_bytes() == (ROOT / "packaging" / "uninstall.sh").read_bytes()
    # the image provisioner: at the top (Packer runs it from there) and installed beside the uninstaller
    for copy in (rel / "provision-image.sh", rel / "share" / "vzcaps" / "provision-image.sh"):
        assert copy.read_bytes() == (ROOT / "packaging" / "provision-image.sh").read_bytes()
    sums = (rel / "SHA256SUMS").read_text().splitlines()
    assert sorted(ln.split("  ", 1)[1] for ln in sums) == sorted(files - {"SHA256SUMS"})
    for ln in sums:
        h, f = ln.split("  ", 1)
        assert hashlib.sha256((rel / f).read_bytes()).hexdigest() == h


def test_the_example_config_is_valid_and_serves_the_python_recipe(tmp_path):
    conf = tmp_path / "vzcaps.conf"
    shutil.copy(ROOT / "packaging" / "vzcaps.conf.example", conf)
    conf.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VZCAPS_")}
    for exe, family in (("python3", "Apple8"), ("llama-server", "Apple8"), ("ollama", "Apple8")):
        p = subprocess.run([str(BUILD / "vzcaps"), "check", "--exe", exe, "--chip", "Apple M2"], capture_output=True,
                           text=True, env=dict(env, VZCAPS_CONFIG=str(conf)))
        assert p.returncode == 0, p.stdout + p.stderr
        assert "configuration  valid" in p.stdout and f"({family})" in p.stdout, (exe, p.stdout)


def test_two_releases_from_one_commit_are_byte_identical(made, fake_dist, tmp_path):
    _, first = made
    time.sleep(1.1)  # other file times, another umask, another directory
    p = release(tmp_path / "again", fake_dist, umask=0o077)
    assert p.returncode == 0, p.stderr
    second = tmp_path / "again" / f"{NAME}.tar.gz"
    assert first.read_bytes() == second.read_bytes()
    raw = first.read_bytes()
    assert raw[:3] == b"\x1f\x8b\x08" and raw[3] & 0x08 == 0 and raw[4:8] == b"\0\0\0\0"  # gzip: no name, no time
    epoch = commit_time()
    with tarfile.open(first) as t:
        members = t.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names, key=lambda n: n.split("/")) and names[0] == NAME
    assert not [n for n in names if "/._" in n]
    for m in members:
        assert (m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "", "", epoch), m.name
        want = 0o755 if m.isdir() or "/bin/" in m.name or m.name.endswith(".sh") else 0o644
        assert m.mode == want, (m.name, oct(m.mode))


def test_a_tap_directory_release_did_not_write_is_never_removed(fake_dist, tmp_path):
    """regression: make release ran rm -rf OUT/homebrew-vzcaps, whatever it was (a clone of a
    published tap, with its history, say). Its own tap, or a link there, is replaced."""
    out = tmp_path / "o"
    assert release(out, fake_dist).returncode == 0
    assert release(out, fake_dist).returncode == 0  # its own tap: replaced
    tap = out / "homebrew-vzcaps"
    (tap / "Formula" / "other.rb").write_text("# a formula of mine\n")
    p = release(out, fake_dist)
    assert p.returncode == 1 and p.stderr == (f"release: {tap} exists and is not a tap make release wrote (a repository "
                                              "of yours?): move it away (nothing was released)\n"), p.stderr
    assert (tap / "Formula" / "other.rb").read_text() == "# a formula of mine\n"
    (tap / "Formula" / "other.rb").unlink()
    (tap / "README.md").write_text("changed\n")  # a change to a file it wrote, committed or not
    assert release(out, fake_dist).returncode == 1 and (tap / "README.md").read_text() == "changed\n"
    shutil.rmtree(tap)
    mine = tmp_path / "mine"
    (mine / "Formula").mkdir(parents=True)
    tap.symlink_to(mine)
    assert release(out, fake_dist).returncode == 0 and mine.is_dir() and tap.is_dir() and not tap.is_symlink()


def test_a_clone_of_its_tap_at_that_path_is_not_taken_for_its_own(fake_dist, tmp_path):
    """regression (issue 25, rule 4): a tap was recognised by its shape and its commit's author,
    so a user's clone of a published tap put back at OUT/homebrew-vzcaps (same files, same
    commit, perhaps with the user's remote and branches) was removed as the release's own. The
    record beside the tap names the directory release made (device, inode, modification time)."""
    out = tmp_path / "o"
    assert release(out, fake_dist).returncode == 0
    tap = out / "homebrew-vzcaps"
    record = out / ".homebrew-vzcaps.vzcaps-made"
    st = os.lstat(tap)
    assert record.read_text() == (f"make release\ncopy {st.st_dev} {st.st_ino} {st.st_mtime_ns // 10**9}."
                                  f"{st.st_mtime_ns % 10**9:09d} -\n")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(tap), str(clone)], check=True)
    shutil.rmtree(tap)
    clone.rename(tap)
    p = release(out, fake_dist)
    assert p.returncode == 1 and "is not a tap make release wrote" in p.stderr, p.stderr
    assert (tap / ".git" / "config").read_text().count("[remote") == 1  # the user's clone, untouched
    # a record that is not the release's (a link, or naming another directory) is not believed
    shutil.rmtree(tap)
    assert release(out, fake_dist).returncode == 0
    record.write_text("make release\ncopy 1 2 3.000000000 -\n")
    assert release(out, fake_dist).returncode == 1 and tap.is_dir()


def test_source_date_epoch_sets_the_times(fake_dist, tmp_path):
    p = release(tmp_path / "o", fake_dist, SOURCE_DATE_EPOCH="1700000000")
    assert p.returncode == 0, p.stderr
    with tarfile.open(tmp_path / "o" / f"{NAME}.tar.gz") as t:
        assert {m.mtime for m in t.getmembers()} == {1700000000}
    p = release(tmp_path / "o", fake_dist, SOURCE_DATE_EPOCH="yesterday")
    assert p.returncode == 1 and "not a whole number" in p.stderr
    p = release(tmp_path / "o", fake_dist, GIT_DIR=str(tmp_path / "no-git"))
    assert p.returncode == 1 and "set SOURCE_DATE_EPOCH" in p.stderr


def ruby_eval(formula, unpacked):
    """Loads the formula with a stand-in Formula class and runs its install block in the unpacked
    archive: prints url, sha256, version, whether there is a test block, and every path installed."""
    script = r'''
require "pathname"
class Installer
  def initialize(where, log) @where, @log = where, log end
  def install(*paths)
    paths.flatten.each do |p|
      raise "#{p} is not in the archive" unless File.file?(p)
      @log << "#{@where} #{p}"
    end
  end
  def /(other) Pathname.new("#{@where}/#{other}") end
end
class Formula
  class << self
    attr_reader :fields, :test_block
    def method_missing(name, *args, &blk) (@fields ||= {})[name] = args.first end
    def respond_to_missing?(*) true end
    def test(&blk) @test_block = blk end
  end
  attr_reader :log
  def initialize() @log = [] end
  %w[bin lib man1 bash_completion zsh_completion fish_completion doc].each do |d|
    define_method(d) { Installer.new(d, @log) }
  end
end
load ARGV[0]
f = Vzcaps.fields
puts "url #{f[:url]}", "sha256 #{f[:sha256]}", "version #{f[:version]}", "homepage #{f[:homepage].inspect}"
puts "test #{!Vzcaps.test_block.nil?}"
Dir.chdir(ARGV[1]) { v = Vzcaps.new; v.install; v.log.each { |l| puts "installed #{l}" } }
'''
    p = subprocess.run(["ruby", "-e", script, str(formula), str(unpacked)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_the_tap_formula(made, tmp_path):
    out, archive = made
    tap = out / "homebrew-vzcaps"
    formula = tap / "Formula" / "vzcaps.rb"
    text = formula.read_text()
    p = subprocess.run(["ruby", "-c", str(formula)], capture_output=True, text=True)
    assert p.returncode == 0 and "Syntax OK" in p.stdout, p.stderr
    assert "__dir__" not in text and "github.com/\"" not in text and "example" not in text and "@" not in text
    assert not (out / "vzcaps.rb").exists()  # the formula lives in the tap only
    with tarfile.open(archive) as t:
        t.extractall(tmp_path)
    lines = ruby_eval(formula, tmp_path / NAME)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert f"url file://{archive}" in lines and f"sha256 {digest}" in lines and "version 0.1.0" in lines
    assert "homepage nil" in lines and "test true" in lines
    installed = {ln.split(" ", 2)[2] for ln in lines if ln.startswith("installed ")}
    assert installed == {f for f in INSTALLED if not f.startswith("share/vzcaps/")}  # brew uninstalls its own
    # a git repository with the formula committed, ready for brew tap NAME DIR
    st = subprocess.run(["git", "-C", str(tap), "status", "--porcelain"], capture_output=True, text=True)
    assert st.returncode == 0 and st.stdout == ""
    files = subprocess.run(["git", "-C", str(tap), "ls-files"], capture_output=True, text=True).stdout.split()
    assert sorted(files) == ["Formula/vzcaps.rb", "README.md"]
    assert "brew tap vzcaps/vzcaps" in (tap / "README.md").read_text()


def test_a_url_the_user_passes(fake_dist, tmp_path):
    url = "https://downloads.example.org/v0.1.0/vzcaps-0.1.0-macos.tar.gz?a=1&b=2|3"
    p = release(tmp_path / "o", fake_dist, URL=url)
    assert p.returncode == 0, p.stderr
    with tarfile.open(tmp_path / "o" / f"{NAME}.tar.gz") as t:
        t.extractall(tmp_path / "x")
    lines = ruby_eval(tmp_path / "o" / "homebrew-vzcaps" / "Formula" / "vzcaps.rb", tmp_path / "x" / NAME)
    assert f"url {url}" in lines
    for bad in ('https://x/"; system "id', "https://x/#{`id`}", "ftp://x/a.tar.gz", "https://x/a b", "relative.tar.gz"):
        p = release(tmp_path / "bad", fake_dist, URL=bad)
        assert p.returncode == 1 and "URL" in p.stderr, bad


def test_a_local_path_with_blanks_is_a_valid_file_url(fake_dist, tmp_path):
    out = tmp_path / "my releases"
    p = release(out, fake_dist)
    assert p.returncode == 0, p.stderr
    text = (out / "homebrew-vzcaps" / "Formula" / "vzcaps.rb").read_text()
    assert f'url "file://{tmp_path}/my%20releases/{NAME}.tar.gz"' in text
    tap_line = next(ln for ln in (out / "homebrew-vzcaps" / "README.md").read_text().splitlines() if ln.strip().startswith("brew tap "))
    assert shlex.split(tap_line) == ["brew", "tap", "vzcaps/vzcaps", str(out / "homebrew-vzcaps")]


@built(ROOT / "dist" / "libvzcaps.dylib", how="make dist")
def test_install_and_uninstall_round_trip_with_the_real_binaries(tmp_path):
    out = tmp_path / "out"
    p = release(out, ROOT / "dist")
    assert p.returncode == 0, p.stderr
    with tarfile.open(out / f"{NAME}.tar.gz") as t:
        t.extractall(tmp_path / "x")
    rel = tmp_path / "x" / NAME
    prefix = tmp_path / "prefix"
    p = subprocess.run(["sh", str(rel / "install.sh"), "--force", "--prefix", str(prefix)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "not macOS" in p.stdout and f"next: {prefix}/bin/vzcaps doctor" in p.stdout
    assert (prefix / "lib" / "libvzcaps.dylib").read_bytes() == (ROOT / "dist" / "libvzcaps.dylib").read_bytes()
    assert (prefix / "bin" / "vzcaps").read_bytes() == (ROOT / "dist" / "vzcaps").read_bytes()
    assert (prefix / "share" / "man" / "man1" / "vzcaps.1").read_text() == (BUILD / "vzcaps.1").read_text()
    p = subprocess.run(["sh", str(rel / "uninstall.sh"), "--prefix", str(prefix)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert not prefix.exists()


def test_the_man_page_points_at_the_installed_documentation():
    page = (BUILD / "vzcaps.1").read_text()
    see_also = page[page.index(".SH SEE ALSO"):]
    assert "share/doc/vzcaps" in see_also and "README of the vzcaps sources" not in see_also
