import sys
from pathlib import Path

# tests/support_model.py (the fake Messages API) is shared by several test folders.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
