# The container's command server: reads command numbers on stdin, runs /run/ai-fix/cmd-N.sh in its own
# session with output to /run/ai-fix/out-N, and answers `DONE N status oom-kills` (see server.py).
S=; command -v setsid >/dev/null 2>&1 && S=setsid
mkdir -p "$HOME" 2>/dev/null
oom() {  # the cgroup's OOM-kill count, with shell builtins only (no process per command)
  for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    [ -r "$f" ] || continue
    while read -r k v; do [ "$k" = oom_kill ] && { echo "$v"; return; }; done <"$f"
  done
}
echo "READY $(oom)"
while read -r n; do
  $S sh "/run/ai-fix/cmd-$n.sh" >"/run/ai-fix/out-$n" 2>&1 </dev/null &
  pid=$!
  wait "$pid"; rc=$?
  kill -9 -"$pid" 2>/dev/null
  echo "DONE $n $rc $(oom)"
done
