# Shared by the netns test scripts (source it): what is left in the
# namespaces, and waiting for a condition with a deadline.
# Needs NS (the namespaces, by node) and a function `keep_pids I` that prints
# the pids of namespace I that belong to the test bed (its sshd, slurmd).

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
