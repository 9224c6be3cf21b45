# Sourced by every shell test, first thing after its arguments:
#   . "$(dirname "$0")/../test_util/preamble.sh"   (path from the test's folder)
# fail MESSAGE counts a failed check and the test goes on, so one run shows
# every failure; the test ends with `[ "$fails" -eq 0 ]` (or exits 1 when
# fails > 0). skip REASON ends the test as skipped (77: the ctest entry sets
# SKIP_RETURN_CODE), never as passed.
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
skip() { echo "SKIP: $*" >&2; exit 77; }
