import subprocess
import sys

from store import MemoryStore


def test_demo_command_builds_a_store_with_every_tier(tmp_path):
    path = tmp_path / "demo.db"
    out = subprocess.run(
        [sys.executable, "-m", "inspector.cli", "demo", "--db", str(path), "--no-open"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "alice" in out and "(anonymous)" in out
    with MemoryStore.open(path, read_only=True) as s:
        tenants = {t.user_id: t.counts for t in s.tenants()}
        assert set(tenants) == {"alice", "bob", "carol", None}
        alice = tenants["alice"]
        assert alice.blocks and alice.episodes and alice.facts and alice.kv_entries
        assert alice.scratchpad_entries and alice.checkpoints
        assert any(f.valid_until for f in s.facts(user_id="alice", include_history=True))
