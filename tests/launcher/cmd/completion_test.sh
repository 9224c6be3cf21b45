#!/bin/bash
# `dslaunch completion bash` driven in a real bash, as the shell does on Tab:
# COMP_WORDS/COMP_CWORD set, the registered function called, COMPREPLY read.
#   completion_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
work=$(mktemp -d /tmp/dsl-completion.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../../test_util/preamble.sh"
"$DSLAUNCH" completion bash >"$work/dslaunch.bash" || { echo "FAIL: dslaunch completion bash exited $?"; exit 1; }
mkdir -p "$work/here/dir" && cd "$work/here" && touch job.yaml train.py notes.txt hosts
# complete WORD... : what Tab offers for the last word, sorted, one line.
complete_words() {
  bash --norc --noprofile -c '
    source ../dslaunch.bash || exit 9
    spec=$(complete -p dslaunch) || exit 8
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    fn=${spec#*-F }; fn=${fn%% *}
    "$fn"
    printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd" "' bash "$@"
}
expect() {  # expect "WANTED WORDS" WORD...
  local want=$1; shift
  local got; got=$(complete_words "$@")
  [ "$got" = "$want" ] || fail "dslaunch ${*:2}<Tab>: got '$got', expected '$want'"
}
has() {  # has WORD WORD...: the completions of the last word include WORD
  local want=$1; shift
  complete_words "$@" | tr ' ' '\n' | grep -qx -- "$want" || fail "dslaunch ${*:2}<Tab> does not offer $want"
}
has --hostfile dslaunch --host
has -H dslaunch -
has --nproc_per_node dslaunch --nproc
has --nproc-per-node dslaunch --nproc
has --master_port dslaunch --master_p
has check dslaunch ""
has cluster dslaunch c
expect "auto local mpich openmpi pdsh slurm ssh" dslaunch --launcher ""
expect "dir hosts job.yaml notes.txt train.py" dslaunch --hostfile ""
expect "dir job.yaml train.py" dslaunch --hostfile hosts ""
expect "down run status up" dslaunch cluster ""
has --nodes dslaunch cluster up --no
has --keep-image dslaunch cluster down --keep
expect "" dslaunch --nproc_per_node ""
expect "dir job.yaml train.py" dslaunch --dry-run ""
expect "dir hosts job.yaml notes.txt train.py" dslaunch -- ./prog ""
# Issue 42 item 13: file names were word-split and globbed ('a b.yaml' was
# offered as two words, a file named '*' expanded to every file). Each name
# is one word, as it is.
mkdir -p "$work/odd/sub" && (cd "$work/odd" && touch "a b.yaml" "*")
odd_words() {  # odd_words WORD...: COMPREPLY in $work/odd, each element in [], sorted
  (cd "$work/odd" && bash --norc --noprofile -c '
    source ../dslaunch.bash || exit 9
    spec=$(complete -p dslaunch) || exit 8
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    fn=${spec#*-F }; fn=${fn%% *}
    "$fn"
    printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort | sed "s/.*/[&]/" | paste -sd ""' bash "$@")
}
got=$(odd_words dslaunch --hostfile "")
[ "$got" = "[*][a b.yaml][sub]" ] || fail "dslaunch --hostfile <Tab> among odd names: got '$got', expected '[*][a b.yaml][sub]'"
got=$(odd_words dslaunch --hostfile hosts "")
[ "$got" = "[a b.yaml][sub]" ] || fail "dslaunch --hostfile hosts <Tab> among odd names: got '$got', expected '[a b.yaml][sub]'"
got=$(odd_words dslaunch -- ./prog "")
[ "$got" = "[*][a b.yaml][sub]" ] || fail "dslaunch -- ./prog <Tab> among odd names: got '$got', expected '[*][a b.yaml][sub]'"
# Every option the parser declares is offered: the long options of --help's
# option lines ("  -H,--hostfile FILE   ...").
"$DSLAUNCH" --help | grep -E '^  -' | awk '{print $1}' | tr ',' '\n' | grep -- '^--' | sort -u >"$work/help-options"
[ -s "$work/help-options" ] || fail "no option lines in dslaunch --help"
offered=$(complete_words dslaunch -)
while read -r opt; do
  grep -qw -- "$opt" <<<"$offered" || fail "--help names $opt but Tab does not offer it"
done <"$work/help-options"
[ $fails -eq 0 ] && echo "completion: all checks passed"
exit $((fails > 0))
