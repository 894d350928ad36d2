import os
import tempfile
from pathlib import Path

# Keep every cache of datasets / huggingface_hub out of the user's home; set before they are imported.
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="ragloaders-tests-hf-"))
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

DATA = Path(__file__).parent / "data"
