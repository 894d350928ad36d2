"""The hub token never appears in logs, errors, cards or staged files, also with every logger at DEBUG and when
the hub refuses the push. Pushes go to the in-process fake hub (tests/fake_hub.py) in a subprocess, so that
HF_TOKEN and the verbosity are set before huggingface_hub is imported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "beir"
TOKEN = "hf_secretTokenForLeakTest_7d41c09b"
REPO = "ragloaders-test/secrets"

PUSH_SCRIPT = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    import fake_hub
    hub = fake_hub.install(sys.argv[1])
    status = int(sys.argv[2])
    if status:
        import httpx2
        handle = hub.handle

        def refuse_commits(request):
            if request.method == "POST" and "/commit/" in request.url.path:
                request.read()
                return httpx2.Response(status, json={"error": "fake hub: commit refused"})
            return handle(request)

        hub.handle = refuse_commits
    from ragloaders.cli import main
    sys.exit(main(sys.argv[3:]))
""")


def files_holding(folder: Path, secret: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret in p.read_bytes()]


# a push in a subprocess each (seconds): the hub's refusal by default, its success and its failure in CI
@pytest.mark.parametrize("hub_status", [pytest.param(0, marks=pytest.mark.slow), 401,
                                        pytest.param(500, marks=pytest.mark.slow)],
                         ids=["accepted", "unauthorized", "server-error"])
def test_token_never_in_output_errors_cards_staged_files_or_caches(tmp_path, hub_status):
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(
        HF_TOKEN=TOKEN, HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
        HF_HUB_VERBOSITY="debug", DATASETS_VERBOSITY="debug", HF_HUB_DISABLE_TELEMETRY="1",
        PYTHONPATH=os.pathsep.join([str(ROOT / "loaders"), str(ROOT / "tests")]),
    )
    command = [sys.executable, "-c", PUSH_SCRIPT, str(tmp_path / "hub"), str(hub_status),
               "push", "beir/nfcorpus", "--repo-id", REPO, "--data-dir", str(DATA),
               "--cache-dir", str(tmp_path / "cache"), "--staging-dir", str(tmp_path / "staged")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)

    if hub_status:
        assert done.returncode != 0
        assert str(hub_status) in done.stderr  # the error is reported ...
    else:
        assert done.returncode == 0, done.stderr[-3000:]
    assert "DEBUG" in done.stderr  # ... and the logs were as verbose as they get
    assert (tmp_path / "staged" / "README.md").is_file()
    assert TOKEN not in done.stdout and TOKEN not in done.stderr
    assert TOKEN[3:] not in done.stdout + done.stderr  # not even without its prefix
    assert files_holding(tmp_path, TOKEN.encode()) == []  # staged files, card, hub state, caches
