"""make check-client's negative case (run by scripts/check-client, not by the default suite:
it needs the client built from the sdist): the stand-in device also claims Apple6, which no
prediction expects, and check-client must fail naming the lines that moved."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_check(**extra):
    env = dict(os.environ, CHECK_CLIENT_NO_NEGATIVE="1", **extra)
    return subprocess.run(["sh", "scripts/check-client"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=900)


def test_unpredicted_stock_answer_fails_check_client():
    p = run_check(STANDIN_EXTRA_FAMILY="1006")
    out = p.stdout.decode()
    assert p.returncode != 0, out
    assert "BAD has bfloat                    true" in out, out
    assert "BAD GPU family                    MTLGPUFamilyApple6  (1006)" in out, out
    assert "check-client: FAIL: 2 of 3 runs differ from the prediction" in out, out
    # and the record the README's quote is held to no longer matches the lines ggml printed
    assert "check-client: ggml's lines of the stock run differ from tests/fixtures/client/stock.txt:" in out, out


def test_same_build_passes_without_the_extra_answer():
    p = run_check()
    out = p.stdout.decode()
    assert p.returncode == 0, out
    assert "match the prediction in all 3 runs" in out, out
