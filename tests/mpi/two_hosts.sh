#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces (each with its own hostname) joined by
# a veth pair. mpirun runs in the first and starts the second rank in the other through a
# launcher agent (as ssh would), and the ranks talk over TCP only. The training equals one
# process's, bit for bit (deterministic mode). Needs root and `ip netns`: skipped otherwise.
source "$(dirname "$0")/common.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v ip > /dev/null || ! command -v unshare > /dev/null; then
  skip "needs root, ip (iproute2) and unshare for network namespaces"
fi
a=tandem_a_$$
b=tandem_b_$$
cleanup() {
  ip netns del "$a" 2> /dev/null || true
  ip netns del "$b" 2> /dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
if ! ip netns add "$a" 2> /dev/null || ! ip netns add "$b" 2> /dev/null ||
  ! ip link add "tva$$" type veth peer name "tvb$$" 2> /dev/null; then
  skip "this machine does not allow network namespaces or veth pairs"
fi
ip link set "tva$$" netns "$a"
ip link set "tvb$$" netns "$b"
ip -n "$a" addr add 10.203.0.1/24 dev "tva$$"
ip -n "$b" addr add 10.203.0.2/24 dev "tvb$$"
for ns in "$a" "$b"; do
  ip -n "$ns" link set lo up
done
ip -n "$a" link set "tva$$" up
ip -n "$b" link set "tvb$$" up

# The launcher agent: `agent HOST COMMAND...` runs COMMAND "on" HOST (its namespace, with
# its hostname), as `ssh HOST COMMAND...` would.
cat > "$WORK/agent" << AGENT
#!/bin/sh
host=\$1; shift
case \$host in
  10.203.0.1) ns=$a; name=hosta ;;
  10.203.0.2) ns=$b; name=hostb ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
echo "\$host" >> "$WORK/agent.log"
exec ip netns exec \$ns unshare --uts sh -c "hostname \$name; \$*"
AGENT
chmod +x "$WORK/agent"

common=(train --limit-train 1024 --limit-test 100 --batch-size 64 --seed 6 --layers 256,64
        --deterministic --epochs 2 --verbose 0)
"$TANDEM" "${common[@]}" --threads-per-device 1 --save "$WORK/one.tandem" > /dev/null
ip netns exec "$a" unshare --uts sh -c "hostname hosta; exec \"\$@\"" -- \
  "${MPIRUN[@]}" -np 2 -H 10.203.0.1,10.203.0.2 \
  --mca plm_rsh_agent "$WORK/agent" --mca btl tcp,self \
  --mca btl_tcp_if_include 10.203.0.0/24 --mca oob_tcp_if_include 10.203.0.0/24 \
  "$TANDEM" "${common[@]}" --save "$WORK/two.tandem" > "$WORK/out" 2> "$WORK/err" ||
  { cat "$WORK/out" "$WORK/err"; fail "mpirun across the namespaces failed"; }
expect_in "$WORK/agent.log" "10.203.0.2"
"$WEIGHTS_DIFF" "$WORK/one.tandem" "$WORK/two.tandem" 0 || fail "two hosts differ from one process"

# A mismatch names the other host.
status=0
ip netns exec "$a" unshare --uts sh -c "hostname hosta; exec \"\$@\"" -- \
  "${MPIRUN[@]}" -H 10.203.0.1,10.203.0.2 \
  --mca plm_rsh_agent "$WORK/agent" --mca btl tcp,self \
  --mca btl_tcp_if_include 10.203.0.0/24 --mca oob_tcp_if_include 10.203.0.0/24 \
  -np 1 "$TANDEM" "${common[@]}" : -np 1 "$TANDEM" "${common[@]}" --lr 0.01 \
  > "$WORK/out" 2> "$WORK/err" || status=$?
[ $status -ne 0 ] || fail "a mismatch across hosts was accepted"
expect_in "$WORK/err" "rank 0 is on hosta"
expect_in "$WORK/err" "rank 1 on hostb: optimizer differs from rank 0's"
echo "PASS"
