# Homebrew formula: builds vzcaps from source on a Mac with Xcode's command line tools.
# Not tested from the development environment (no macOS there); see README.
class Vzcaps < Formula
  desc "Metal capability answers for macOS guests, from the host's real chip"
  homepage "https://example.invalid/vzcaps"
  url "https://example.invalid/vzcaps/vzcaps-0.1.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license "MIT"

  depends_on :macos

  def install
    system "make", "all"
    system "make", "install", "PREFIX=#{prefix}"
  end

  test do
    assert_match "vzcaps 0.1.0", shell_output("#{bin}/vzcaps --version")
    system bin/"vzcaps", "check", "--chip", "Apple M2", "--json"
  end
end
