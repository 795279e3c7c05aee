# SPDX-License-Identifier: BSD-3-Clause
"""bench-sample.py: one measured window of a forwarding DPDK program.

    python3 bench-sample.py PREFIX PID WARMUP SECONDS EXPECT [MAGLBCTL ARG...]

Run by the dataplane benchmarks (dataplane-vs-testpmd, dataplane-import).
Reads DPDK telemetry (/ethdev/stats,0 of EAL file prefix PREFIX) and the CPU
time of process PID's forwarding thread (lcore 1's, from its schedstat);
for maglb (a maglbctl command given) also maglbctl's counters at both ends
of the window, and the control thread's CPU time (the main thread: the
main lcore). WARMUP seconds, then a window of SECONDS; EXPECT "new" instead
measures from 10 % to 90 % of the first pass over a capture of $NEW_FRAMES
frames. Prints one JSON object; checks that the run is what it claims
(EXPECT "established": flow-table hits; "new": new flows; "none": testpmd)
and that no drop counter moved, and exits 1 with a line on stderr when it
is not. With $SAMPLE_PEER_PID, also that process's CPU time over the
window (peer_cpu_s; its main thread's schedstat). $DP_COUNTERS_H names
dataplane/core/counters.h (the drop reasons); $BENCH_ME the benchmark, for
its error lines.
"""
import glob, json, os, re, signal, socket, subprocess, sys, time

signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
signal.signal(signal.SIGPIPE, signal.SIG_DFL)

ME = os.environ.get("BENCH_ME", "bench-sample")
prefix, pid, warmup, seconds, expect = sys.argv[1:6]
pid, warmup, seconds = int(pid), float(warmup), float(seconds)
ctl = sys.argv[6:]                      # maglbctl command, or nothing
peer = int(os.environ["SAMPLE_PEER_PID"]) if os.environ.get("SAMPLE_PEER_PID") else None

# Every drop reason: the X(NAME, ...) lines of DP_DROP_REASONS in counters.h.
text = open(os.environ["DP_COUNTERS_H"]).read()
block = text.split("#define DP_DROP_REASONS", 1)[1].split("enum dp_drop", 1)[0]
DROPS = set(re.findall(r"X\((\w+),", block))

def die(msg):
    print(f"{ME}: error: {msg}", file=sys.stderr)
    sys.exit(1)

def worker_task():
    # EAL names lcore 1's thread rte-worker-1 (22.11) or lcore-worker-1.
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            if open(t + "/comm").read().strip() in ("rte-worker-1", "lcore-worker-1"):
                return t
        except OSError:
            pass
    return None

def telemetry():
    path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
    for _ in range(300):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(path)
            s.recv(16384)
            return s
        except OSError:
            time.sleep(0.1)
    die(f"no DPDK telemetry socket {path}")

def port_stats(s):
    s.send(b"/ethdev/stats,0")
    return json.loads(s.recv(1 << 20))["/ethdev/stats"]

def cpu_ns(task):
    return int(open(task + "/schedstat").read().split()[0])

def counters():
    out = subprocess.run(ctl + ["--json", "counters"], capture_output=True, text=True)
    if out.returncode != 0:
        die("maglbctl counters: " + out.stderr.strip())
    c = {}
    for e in json.loads(out.stdout)["counters"]:
        c[e["scope"] + "/" + e["name"]] = e["value"]
    return c

def peer_cpu_ns():
    try:
        return cpu_ns(f"/proc/{peer}")
    except OSError:
        die(f"process {peer} (SAMPLE_PEER_PID) ended before the window did")

def sample(s, task):
    st = port_stats(s)
    r = {"t": time.monotonic(), "cpu": cpu_ns(task), "st": st,
         "ctl": counters() if ctl else None}
    if ctl:
        r["control_cpu"] = cpu_ns(f"/proc/{pid}/task/{pid}")
    if peer is not None:
        r["peer_cpu"] = peer_cpu_ns()
    return r

if not os.path.exists(f"/proc/{pid}"):
    die(f"process {pid} is gone")
task = None
for _ in range(300):
    task = worker_task()
    if task:
        break
    time.sleep(0.1)
if task is None:
    die("cannot find the forwarding lcore's thread (rte-worker-1)")
s = telemetry()
if expect == "new":
    # The first pass over the capture: every packet of it is a new flow
    # (later passes may find entries still alive). Measure from 10 % to
    # 90 % of it, polling the port's counter.
    frames = int(os.environ["NEW_FRAMES"])
    def await_rx(n):
        while port_stats(s)["ipackets"] < n:
            time.sleep(0.005)
    await_rx(0.1 * frames)
    a = sample(s, task)
    await_rx(0.9 * frames)
    b = sample(s, task)
else:
    time.sleep(warmup)
    a = sample(s, task)
    time.sleep(seconds)
    b = sample(s, task)

wall = b["t"] - a["t"]
cpu = (b["cpu"] - a["cpu"]) / 1e9
d = {k: b["st"][k] - a["st"][k] for k in a["st"] if isinstance(a["st"][k], int)}
res = {
    "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "cpu_share": round(cpu / wall, 3),
    "opackets": d["opackets"], "ipackets": d["ipackets"],
    "mpps": round(d["opackets"] / cpu / 1e6, 3) if cpu > 0 else 0.0,
    "wall_mpps": round(d["opackets"] / wall / 1e6, 3),
}
errors = {k: d[k] for k in ("imissed", "ierrors", "oerrors", "rx_nombuf") if d.get(k)}
if d["opackets"] == 0:
    die(f"{prefix}: nothing forwarded in the window")
if errors:
    die(f"{prefix}: port errors in the window: {errors}")
if d["opackets"] < 0.99 * d["ipackets"]:
    die(f"{prefix}: forwarded {d['opackets']} of {d['ipackets']} received")
if peer is not None:
    res["peer_cpu_s"] = round((b["peer_cpu"] - a["peer_cpu"]) / 1e9, 3)

if ctl:
    ca, cb = a["ctl"], b["ctl"]
    dc = {k.split("/", 1)[1]: cb[k] - ca.get(k, 0) for k in cb if k.startswith("total/")}
    drops_total = {k.split("/", 1)[1]: v for k, v in cb.items()
                   if k.startswith("total/") and v and k.split("/", 1)[1] in DROPS}
    rx = dc["RX_PACKETS"]
    res.update({"rx": rx, "flow_hits": dc["FLOW_HITS"], "new_flows": dc["NEW_FLOWS"],
                "synced_hits": dc["SYNCED_HITS"], "untracked": dc["UNTRACKED"],
                "flows_expired": dc["FLOWS_EXPIRED"], "export_dropped": dc["EXPORT_DROPPED"],
                "table_flows": cb.get("worker0/FLOWS"),
                "inserted_total": cb.get("total/NEW_FLOWS")})
    # The control thread: its CPU time and what it imported in the window.
    dctl = lambda k: cb.get("control/" + k, 0) - ca.get("control/" + k, 0)
    res["control"] = {
        "cpu_s": round((b["control_cpu"] - a["control_cpu"]) / 1e9, 3),
        "imported": dctl("IMPORTED"), "import_rejected": dctl("IMPORT_REJECTED"),
        "import_full": dctl("IMPORT_FULL"), "ticks": dctl("TICKS"),
        "synced_entries": cb.get("synced/ENTRIES"),
    }
    if drops_total:
        die(f"{prefix}: maglb dropped packets: {drops_total}")
    if dc["UNTRACKED"]:
        die(f"{prefix}: {dc['UNTRACKED']} new flows untracked (insert cap or table full)")
    if res["control"]["import_rejected"] or res["control"]["import_full"]:
        die(f"{prefix}: imports refused in the window: "
            f"{res['control']['import_rejected']} rejected, "
            f"{res['control']['import_full']} synced table full")
    if expect == "established" and dc["FLOW_HITS"] < 0.999 * rx:
        die(f"{prefix}: only {dc['FLOW_HITS']} of {rx} packets hit the flow table")
    if expect == "new" and (dc["NEW_FLOWS"] < 0.99 * rx or dc["FLOW_HITS"] > 0.01 * rx):
        die(f"{prefix}: not every packet of the first pass was a new flow: "
            f"{dc['NEW_FLOWS']} new, {dc['FLOW_HITS']} hits of {rx}")
print(json.dumps(res))
