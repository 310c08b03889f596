"""Where the tests' data, golden files and the repository are, whichever tier a test is in."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
