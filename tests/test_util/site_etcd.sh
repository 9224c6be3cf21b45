# A one-member etcd standing in for a site's (plain http, its data in a
# directory the caller owns and removes), for the shell tests and benches
# of coordinator failover. Source it, then:
#   start_site_etcd DIR [ADDR=127.0.0.1]
# sets etcd_pid and etcd_url (http://ADDR:PORT, a port the kernel picked)
# once the member answers, or returns 1 (its log in DIR/etcd.log). The
# caller stops it: kill "$etcd_pid"; wait "$etcd_pid".
start_site_etcd() {
  local dir=$1 addr=${2:-127.0.0.1} port peer i
  port=$(python3 -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$addr")
  peer=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  etcd --name site --data-dir "$dir/etcd" --listen-client-urls "http://$addr:$port" \
    --advertise-client-urls "http://$addr:$port" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "site=http://127.0.0.1:$peer" \
    >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  etcd_url=http://$addr:$port
  for i in $(seq 1000); do
    (exec 3<>"/dev/tcp/$addr/$port") 2>/dev/null && return 0
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.02
  done
  return 1
}
