# Shared by the netns test scripts (source it): the cluster's nodes, what is
# left in the namespaces, and waiting for a condition with a deadline.
# leftovers needs NS (read_cluster sets it) and a function `keep_pids I` that
# prints the pids of namespace I that belong to the test bed (its sshd, slurmd).

# read_cluster: ALIAS, NS and ADDR, by node, from the cluster's nodes file
# ($C, else DSLAUNCH_TEST_CLUSTER: tests/cluster/with-cluster's state dir).
read_cluster() {
  local dir=${C:-${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}}
  mapfile -t ALIAS < <(awk '{print $1}' "$dir/nodes")
  mapfile -t NS < <(awk '{print $2}' "$dir/nodes")
  mapfile -t ADDR < <(awk '{print $3}' "$dir/nodes")
}

# The other processes in the namespaces: listed on stderr, counted on stdout.
leftovers() {
  local i=0 ns keep p n=0
  for ns in "${NS[@]}"; do
    keep=" $(keep_pids "$i") "
    for p in $(ip netns pids "$ns"); do
      [[ "$keep" == *" $p "* ]] && continue
      n=$((n + 1)); ps -o pid=,cmd= -p "$p" >&2
    done
    i=$((i + 1))
  done
  echo $n
}
no_leftovers() { [ "$(leftovers 2>/dev/null)" -eq 0 ]; }

# wait_for SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds;
# false at the deadline.
wait_for() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@"; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.1; done
}
