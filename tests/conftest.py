import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The host's benchmark lock (perfsnake.hostlock) of this test session: tests
# do not wait for a campaign (or another test session) running on the machine.
import os  # noqa: E402
import tempfile  # noqa: E402

os.environ.setdefault(
    "PERFSNAKE_HOST_LOCK", os.path.join(tempfile.mkdtemp(prefix="perfsnake-test-lock-"), "bench.lock")
)
