#!/bin/sh
# End-to-end checks of the dslaunch binary's front end: subcommand dispatch,
# --help/--version, --dry-run of the committed examples, and exit code 2 with
# the parser's message for bad input. Starts no job.
# Usage: dslaunch_cli_test.sh DSLAUNCH SOURCE_DIR
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: some checks run elsewhere
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# No machine's /job/hostfile: the cases below that want one set their own.
export DSLAUNCH_DEFAULT_HOSTFILE="$tmp/no-default-hostfile"

# expect CODE PATTERN -- ARGS...: runs dslaunch, checks the exit code and that
# stdout+stderr contain PATTERN (fixed string).
expect() {
  code=$1 pattern=$2
  shift 3
  "$bin" "$@" >"$tmp/out" 2>&1
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$pattern" "$tmp/out"; then
    echo "FAIL: dslaunch $* -> exit $rc (want $code), output:"
    sed 's/^/  | /' "$tmp/out"
    echo "  (wanted to find: $pattern)"
    fail=1
  else
    echo "ok: dslaunch $*"
  fi
}

expect 0 "dslaunch 0." -- --version
expect 0 "Subcommands:" -- --help
expect 0 "--nproc_per_node" -- --help
expect 0 "DSLAUNCH_CONNECT_TIMEOUT" -- env
# status --all: every job of this user, one line each, from a record left in the private directory.
mkdir -p "$tmp/xdg/dslaunch" && chmod 700 "$tmp/xdg" "$tmp/xdg/dslaunch"
printf '%s' '{"job_id":"abcdef012345","pid":999,"state":"done","elapsed_seconds":42.5,"generation":0,"restarts":0,"max_restarts":0,"world_size":2,"ranks_running":0,"agents_registered":2,"nodes_lost":0,"exit_code":3,"nodes":[],"ranks":[],"ending":{"summary":"dslaunch: job failed; first failure at 2026-12-01 22:52:16.327 UTC\n  host w1, rank 1, pid 7: exited with code 3\n","argv":["python3","-u","train.py"],"started":1796165536,"stacks_path":"/srv/run/logs/stacks.gen0.txt","log_dir":"/srv/run/logs","hang_report":["rank 1 (w1): in Spin (innermost: poll), step 40","1 other: in gloo::AllreduceRing::run, step 40"]}}' \
  >"$tmp/xdg/dslaunch/abcdef012345-999.json" && chmod 600 "$tmp/xdg/dslaunch/abcdef012345-999.json"
( export XDG_RUNTIME_DIR="$tmp/xdg"
  expect 0 "JOB           PID      STARTED (UTC)           STATE     EXIT  TIME     WORLD  RESTARTS  COMMAND" -- status --all
  expect 0 "abcdef012345  999      2026-12-01 22:52:16     ended     3     42s      2      0/0       python3 -u train.py" -- status --all
  # After the end, status JOB says how it ended: the summary dslaunch printed then.
  expect 0 "how it ended:" -- status abcdef
  expect 0 "  host w1, rank 1, pid 7: exited with code 3" -- status abcdef
  # ... and where the last hang's stacks and the logs are.
  expect 0 "hang stacks: /srv/run/logs/stacks.gen0.txt" -- status abcdef
  expect 0 "logs: /srv/run/logs" -- status abcdef
  expect 0 "the last hang (ranks grouped by stack):" -- status abcdef
  expect 0 "  rank 1 (w1): in Spin (innermost: poll), step 40" -- status abcdef
  expect 0 "(nothing of yours is running: this is your newest ended job; dslaunch status --all lists every job, dslaunch status JOB shows one)" -- status
  expect 2 "status: --all lists every job; to see one, give its JOB without --all" -- status --all abc
  exit $fail ) || fail=1
# A near miss of a subcommand is a typo, not a job (unless a program has that name).
expect 2 "dslaunch: error: unknown subcommand 'statu' (did you mean 'status'?); to run a program called 'statu' on every slot, put it after \`--\`: dslaunch [options] -- statu" -- statu
expect 2 "unknown subcommand 'reprot' (did you mean 'report'?)" -- reprot
expect 0 "node 2: 127.0.0.3" -- --hostfile "$src/hostfiles/local" --dry-run "$src/examples/train.yaml"
expect 0 "(every variable of every node: --dry-run)" -- --hostfile "$src/hostfiles/local" --dry-run=short "$src/examples/train.yaml"
expect 0 "command: python3 -u train.py --local_rank=(LOCAL_RANK) --deepspeed_config ds.json" -- \
  run -H "$src/hostfiles/example" -i 'worker-0:0,2@worker-1' --dry-run train.py --deepspeed_config ds.json
expect 0 "MASTER_PORT=29501" -- --master_port 29501 --dry-run -- true
expect 2 "hostfile $tmp/missing: No such file or directory" -- -H "$tmp/missing" --dry-run -- true
# Every host that does not resolve is named, not only the first (nothing is started).
printf 'nohost-a.invalid slots=1\nnohost-b.invalid slots=1\n' >"$tmp/unresolved"
expect 2 "2 hosts do not resolve: nohost-a.invalid (" -- --hostfile "$tmp/unresolved" -- true
expect 2 ", nohost-b.invalid (" -- --hostfile "$tmp/unresolved" -- true
printf 'w0 slots=4\nw1 slot=4\n' >"$tmp/hf"
expect 2 "$tmp/hf:2: expected 'slots=N', got 'slot=4' (did you mean 'slots'?)" -- -H "$tmp/hf" --dry-run -- true
expect 2 "   ^" -- -H "$tmp/hf" --dry-run -- true
printf 'command: [x]\nprocs_per_nod: 1\n' >"$tmp/job.yaml"
expect 2 "$tmp/job.yaml:2:1: unknown key 'procs_per_nod' (did you mean 'procs_per_node'?)" -- --dry-run "$tmp/job.yaml"
expect 2 "procs_per_nod: 1" -- --dry-run "$tmp/job.yaml"  # the line echoed under the message (and a caret)
# procs_per_node over a host's slots: the job file's line and the host's.
printf 'command: [x]\nprocs_per_node: 2\n' >"$tmp/job.yaml"
printf 'w0 slots=1\n' >"$tmp/hf1"
expect 2 "$tmp/job.yaml:2:17: procs_per_node is 2 but host 'w0' (hostfile line 1) has 1 selected slot(s)" -- \
  -H "$tmp/hf1" --dry-run "$tmp/job.yaml"
# The trainer: section is checked by dstrain's parser before anything starts.
printf 'trainer:\n  model: {layers: [784, 10], activaton: relu}\n' >"$tmp/job.yaml"
expect 2 "$tmp/job.yaml:2:30: unknown key 'activaton' in trainer.model (did you mean 'activation'?)" -- --dry-run "$tmp/job.yaml"
printf 'trainer:\n  config:\n    train_batch_size: 8\n    zero_optimization: {stag: 1}\n' >"$tmp/job.yaml"
expect 2 "$tmp/job.yaml:4:25: unknown key 'stag' in trainer.config.zero_optimization (did you mean 'stage'?)" -- --dry-run "$tmp/job.yaml"
# ... and its batch sizes against the plan's world size (3 hosts x 2 slots).
printf 'trainer:\n  config: {train_batch_size: 8}\n' >"$tmp/job.yaml"
expect 2 "$tmp/job.yaml trainer.config: train_batch_size (8) is not divisible by world size (6)" -- \
  --hostfile "$src/hostfiles/local" --dry-run "$tmp/job.yaml"
# .dslaunch_env is read at plan time: --dry-run shows its values, and the
# variables dslaunch owns are refused there as in the job file's env: (exit 2).
mkdir -p "$tmp/home" "$tmp/wd"
printf 'DOTENV_SEEN=yes\n' >"$tmp/wd/.dslaunch_env"
expect_in() { dir=$1; shift; ( cd "$dir" && export HOME="$tmp/home" && expect "$@" && exit $fail ) || fail=1; }
expect_in "$tmp/wd" 0 "DOTENV_SEEN=yes" -- --dry-run -- true
printf '# pinned\nRANK=0\n' >"$tmp/wd/.dslaunch_env"
expect_in "$tmp/wd" 2 "$tmp/wd/.dslaunch_env:2: RANK is set by dslaunch for every worker and cannot be overridden" -- --dry-run -- true
printf 'MASTER_PORT=1\n' >"$tmp/home/.dslaunch_env"
expect_in "$tmp" 2 "$tmp/home/.dslaunch_env:1: MASTER_PORT is set by dslaunch for every worker and cannot be overridden" -- --dry-run -- true
rm -f "$tmp/home/.dslaunch_env" "$tmp/wd/.dslaunch_env"
# Durations out of their documented range: file:line:col, the flag or the variable.
printf 'command: [x]\nelastic:\n  hang_timeout: 4294968s\n' >"$tmp/job.yaml"
expect 2 "$tmp/job.yaml:3:17: 'hang_timeout': expected 0 (off) or a duration between 100ms and 168h, got '4294968s'" -- \
  --dry-run "$tmp/job.yaml"
expect 2 "--connect-timeout: expected a duration between 10ms and 1h, got '5000h'" -- --connect-timeout 5000h --dry-run -- true
( export DSLAUNCH_STOP_GRACE=2000h
  expect 2 "DSLAUNCH_STOP_GRACE='2000h': expected a duration between 0s and 1h" -- --dry-run -- true; exit $fail ) || fail=1
# Limits checked at parse time: NUL bytes, MAX_ARG_STRLEN, allocations that cannot succeed.
printf 'command: [x]\nenv: {A: "x\\0y"}\n' >"$tmp/job.yaml"
expect 2 "$tmp/job.yaml:2:10: 'env': the value of A contains a NUL byte at offset 1" -- --dry-run "$tmp/job.yaml"
printf 'w0 slots=1048576\nw1 slots=1048576\n' >"$tmp/hf"
expect 2 "$tmp/hf:2: the hosts' slots add up to 2097152 here, more than the maximum world size 1048576" -- \
  -H "$tmp/hf" --dry-run -- true
printf 'trainer:\n  model: {layers: [784, 1048576, 10]}\n' >"$tmp/job.yaml"
expect 2 "$tmp/job.yaml:2: 'trainer.model.layers' has 833617930 parameters, more than the maximum 268435456" -- \
  --dry-run "$tmp/job.yaml"
expect 2 "--num_gpus: expected an integer between 1 and 1048576, or auto, gpu or cpu, got '2000000000'" -- \
  --num_gpus 2000000000 --dry-run -- true
# Range errors name the option, the range in plain numbers and the value given.
expect 2 "--nnodes: expected N or MIN:MAX with integers between 1 and 1048576, got '0'" -- --nnodes 0 --dry-run -- true
expect 2 "--master_port: expected an integer between 0 and 65535 (0: a free port per generation), got '99999'" -- \
  --master_port 99999 --dry-run -- true
expect 2 "--fanout: expected an integer between 1 and 1048576, got '-1'" -- --fanout -1 --dry-run -- true
expect 2 "--fanout-tree: expected an integer between 2 and 1024, got '1'" -- --fanout-tree 1 -- true
expect 2 "--fanout-tree: the nodes start each other's agents over ssh, which needs --launcher ssh, and this job starts its agents with local" -- \
  --fanout-tree 2 -- true
printf 'h1 slots=1\n' >"$tmp/hostfile.remote"
expect 2 "--fanout-tree with --ship-agent: the nodes start each other's agents from the dsagent path on their own disks" -- \
  -H "$tmp/hostfile.remote" --fanout-tree 2 --ship-agent -- true
# --dry-run refuses what the run refuses (issue 33 item 7): it passed these and the run failed.
expect 2 "--fanout-tree: the nodes start each other's agents over ssh, which needs --launcher ssh, and this job starts its agents with local" -- \
  --hostfile "$src/hostfiles/local" --fanout-tree 16 --dry-run -- true
expect 2 "--fanout-tree with --ship-agent" -- -H "$tmp/hostfile.remote" --fanout-tree 2 --ship-agent --dry-run -- true
expect 2 "--launcher local: host 'h1' (hostfile line 1) is not this machine" -- \
  -H "$tmp/hostfile.remote" --launcher local --dry-run -- true
expect 0 "launcher ssh (auto)" -- -H "$tmp/hostfile.remote" --dry-run -- true
# Command-line manners: a one-dash long option never prints the help and exits 0;
# prefixes as argparse takes them; did you mean.
expect 2 "'-hostfile': a long option takes two dashes: --hostfile" -- -hostfile myhosts train.py
expect 0 "node 2: 127.0.0.3" -- --host "$src/hostfiles/local" --dry -- true
expect 2 "'--n' could be --num_nodes, --num_gpus" -- --n 2 -- true
expect 2 "unknown option '--hostfle' (did you mean --hostfile?)" -- --hostfle x -- true
expect 2 "--nproc_per_node: expected an integer between 1 and 4096 without a hostfile (workers on this machine), got '100000'" -- \
  --nproc_per_node 100000 --dry-run -- true
expect 2 "--nnodes: MIN (3) is more than MAX (2) in '3:2'" -- --nnodes 3:2 --dry-run -- true
expect 2 "--launcher mvapich: not supported (mpirun_rsh is not supported yet)" -- --launcher mvapich --dry-run -- true
expect 0 "launcher mpich" -- --launcher mpich --dry-run -- true
expect 0 "launcher openmpi" -- --launcher OpenMPI --dry-run -- true
expect 2 "--node_rank: node rank 3 is not below the node count 3" -- --nnodes 3 --node_rank 3 --master_addr 127.0.0.1 --dry-run -- true
expect 2 "DSLAUNCH_SECRET_FILE" -- --nnodes 2 --node_rank 0 --master_addr 10.9.9.9 --dry-run -- true
expect 0 "launcher pdsh" -- --launcher PDSH --dry-run -- true
# torchrun flags that do not apply: accepted, one notice line on stderr.
expect 0 "dslaunch: ignoring --monitor_interval 1 (dslaunch is told when a worker exits" -- --monitor_interval 1 --dry-run -- true
expect 2 "--tee 9: expected 0-3 (1 stdout, 2 stderr, 3 both)" -- --tee 9 --dry-run -- true
# DeepSpeed's script form shows the --local_rank the agent appends; torchrun's -m does not.
expect 0 "command: python3 -u train.py --local_rank=(LOCAL_RANK) --deepspeed" -- --dry-run train.py --deepspeed
expect 0 "command: python3 -u -m pkg.train --deepspeed" -- --dry-run -m pkg.train --deepspeed
# DSLAUNCH_DEFAULT_HOSTFILE (DeepSpeed's /job/hostfile) when it exists; OpenMPI's max_slots= noticed.
printf '127.0.0.1 slots=1 max_slots=4\n127.0.0.2 slots=1\n' >"$tmp/default_hf"
( export DSLAUNCH_DEFAULT_HOSTFILE="$tmp/default_hf"
  expect 0 "hostfile: $tmp/default_hf (DSLAUNCH_DEFAULT_HOSTFILE, no --hostfile given)" -- --dry-run -- true
  expect 0 "node 1: 127.0.0.2" -- --dry-run -- true
  expect 0 "dslaunch: $tmp/default_hf:1: ignoring max_slots=4 (OpenMPI's limit" -- --dry-run -- true
  expect 0 "hostfile: none, this machine" -- --launcher local --dry-run -- true
  exit $fail ) || fail=1
# dslaunch check checks what the run would use (issue 33 item 6): without a
# hostfile this machine, a hostfile whose jobs run locally here without ssh,
# and --launcher as given; it reads the same default hostfile.
expect 0 "localhost  local, no ssh" -- check
expect 0 "127.0.0.3  local, no ssh" -- check --hostfile "$src/hostfiles/local"
expect 2 "--launcher local: host 'h1' (hostfile line 1) is not this machine" -- check -H "$tmp/hostfile.remote" --launcher local
expect 1 "127.0.0.2: " -- check --hostfile "$src/hostfiles/local" --launcher ssh --connect-timeout 2s
# Given the job, check checks it on every host: here a script that is not there.
expect 1 "127.0.0.3: nope.py is not in $PWD: every node needs the script at the same path" -- \
  check --hostfile "$src/hostfiles/local" nope.py
printf 'w0 slots=x\n' >"$tmp/bad_default_hf"
( export DSLAUNCH_DEFAULT_HOSTFILE="$tmp/bad_default_hf"
  expect 2 "$tmp/bad_default_hf:1:" -- check
  exit $fail ) || fail=1
expect 2 "-i: unknown host 'w9'" -- -H "$src/hostfiles/local" -i w9 --dry-run -- true
expect 2 "--include: unknown host 'w9'" -- -H "$src/hostfiles/local" --include w9 --dry-run -- true
expect 2 "unknown option '--bogus'" -- --bogus -- true
expect 0 "usage: dslaunch check" -- check --help
# Subcommands return their errors; only main.cc prints them and picks the exit code.
expect 2 "dslaunch: error: cluster: unknown verb 'bogus': expected up, down, status or run" -- cluster bogus
expect 2 "dslaunch: error: cluster up: --nodes: Value 0 not in range 1 to 1000" -- cluster up --nodes 0
expect 2 "expected a job file" --
expect 2 "env: unexpected argument 'x'" -- env x
# A --metrics-addr that is not a numeric address, or one this host cannot
# bind, is an input error (issue 42 item 14: it exited 1).
expect 2 "--metrics-addr 'localhost': expected a numeric address" -- -H "$src/hostfiles/local" --metrics-port 0 --metrics-addr localhost -- true
expect 2 "--metrics-port 0 on 10.99.99.99: Cannot assign requested address" -- -H "$src/hostfiles/local" --metrics-port 0 --metrics-addr 10.99.99.99 -- true
# Too few file descriptors for 100 agents, and the hard limit cannot be
# raised (no CAP_SYS_RESOURCE, as in a container): refused before any agent
# starts, naming the number. Where the limit can be raised, nothing to check.
awk 'BEGIN { for (i = 1; i <= 100; i++) printf "127.0.1.%d slots=1\n", i }' >"$tmp/hosts100"
if ( ulimit -n 128 && ulimit -Hn 256 ) 2>/dev/null; then
  echo "skip: this process may raise its hard descriptor limit"
else
  ( ulimit -n 128
    expect 1 "needs 856 open files for 100 agents and 100 workers; the limit is 128 (hard 128)" -- \
      --hostfile "$tmp/hosts100" -- true
    exit $fail ) || fail=1
fi
exit $fail
