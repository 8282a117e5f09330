# SPDX-License-Identifier: GPL-2.0
"""opbench_vm - boot a project kernel under QEMU, run one command, return its status.

The QEMU command line is data: small functions each return one group of
arguments, build_command() joins them, and `--show-command` prints the result
without booting. run() boots, watches the serial console (captured to a log
file), enforces a timeout and turns kernel splats into a failure.

    opbench-vm --kernel bzImage --image rootfs.ext4 --share DIR \
        --accel auto -- uname -r

Exit status: the guest command's own, or
    124  guest timed out (console tail printed)
    125  kernel panic, oops, BUG, WARNING or similar seen on the console
    126  the guest never reached the command (boot failure)
    2    bad arguments
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

EXIT_TIMEOUT = 124
EXIT_SPLAT = 125
EXIT_NOBOOT = 126

ICOUNT_OPTS = "shift=0,align=off,sleep=off"

# Console lines that mean the kernel is unwell, whatever the command
# returned: the project's one kernel-problem pattern. Benchmark, selftest,
# tracing and stress boots all fail on it (guest_run.py writes the matching
# lines to kernel-problems.txt). Lockdep, hung-task and RCU reports only
# appear on the debug kernel configuration; they are here so that no boot
# of it can pass with one on its console.
SPLAT_RE = re.compile(
    r"Kernel panic|Oops|BUG:|WARNING:|general protection fault|"
    r"KASAN:|UBSAN:|kmemleak:.*new suspected|soft lockup|hard LOCKUP|"
    r"blocked for more than|rcu.*detected stall|suspicious RCU usage|"
    r"possible circular locking|possible recursive locking|"
    r"inconsistent lock state|Call Trace:")

START_MARK = "OPBENCH-START"
EXIT_RE = re.compile(r"OPBENCH-EXIT: (\d+)")


class LaunchError(Exception):
    """A problem with the request, reported as 'opbench-vm: error: ...'."""


# ---------------------------------------------------------------------------
# Accelerator choice

def kvm_status(dev="/dev/kvm", sysmod="/sys/module"):
    """Return (usable, reason) for KVM on this host, without booting."""
    if os.path.isdir(os.path.join(sysmod, "kvm_pvm")):
        return (False, "/dev/kvm is served by kvm_pvm, a nested PVM "
                "hypervisor that cannot boot an ordinary guest kernel")
    if not os.path.exists(dev):
        return (False, "/dev/kvm does not exist")
    if not os.access(dev, os.R_OK | os.W_OK):
        return (False, "/dev/kvm is not accessible to this user")
    return (True, "/dev/kvm is usable")


def choose_accel(requested, status=None):
    """Map --accel to (accel, reason, warning-or-None).

    requested: auto, kvm, tcg or icount. 'auto' takes KVM when usable,
    TCG otherwise, with a warning that goes into the run record.
    """
    usable, why = status if status is not None else kvm_status()
    if requested == "auto":
        if usable:
            return ("kvm", why, None)
        return ("tcg", why, "KVM not usable (%s): falling back to TCG "
                "software emulation; times are emulated, not hardware" % why)
    if requested == "kvm" and not usable:
        raise LaunchError("--accel kvm requested but %s; use --accel tcg "
                          "or --accel icount" % why)
    if requested in ("tcg", "icount"):
        return (requested, "requested", None)
    return (requested, why, None)


# ---------------------------------------------------------------------------
# Argument groups

def accel_args(accel):
    if accel == "kvm":
        # -arch-capabilities: QEMU 7.2 with -cpu host aborts on some hosts
        # with "failed to set MSR 0x10a".
        return ["-accel", "kvm", "-cpu", "host,-arch-capabilities"]
    if accel == "tcg":
        return ["-accel", "tcg,thread=multi", "-cpu", "max"]
    if accel == "icount":
        # Guest time counts executed instructions: one instruction, one ns.
        return ["-accel", "tcg", "-cpu", "max", "-icount", ICOUNT_OPTS]
    raise LaunchError("unknown accelerator '%s'; use auto, kvm, tcg or icount"
                      % accel)


def accel_record(accel):
    """The accelerator and its options as vm.json declares them, so that
    the analysis reads them instead of parsing qemu_command: the arguments
    accel_args() gives, the CPU model, the icount options (None without)."""
    args = accel_args(accel)
    return {"accel": accel, "accel_args": args,
            "cpu": args[args.index("-cpu") + 1],
            "icount": ICOUNT_OPTS if "-icount" in args else None}


def machine_args(smp, mem):
    return ["-machine", "pc", "-smp", str(smp), "-m", str(mem),
            "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot"]


def kernel_args(kernel, cmdline):
    return ["-kernel", kernel, "-append", cmdline]


def disk_args(image):
    # snapshot=on: writes go to a throw-away overlay, so several guests can
    # boot the same cached image at once and none can damage it.
    return ["-drive", "file=%s,format=raw,if=virtio,snapshot=on" % image]


def share_args(share):
    return ["-virtfs", "local,path=%s,mount_tag=share,security_model=none,"
            "id=share" % share]


def console_args(logfile):
    return ["-serial", "file:%s" % logfile]


def qmp_args(sock):
    return ["-qmp", "unix:%s,server=on,wait=off" % sock] if sock else []


def kernel_cmdline(script, extra=""):
    # acpi=noirq and no i8042 probing: ACPI interrupt-link setup and the
    # PS/2 probe cost about 1 s of a TCG boot; the guest uses neither.
    parts = ["console=ttyS0", "root=/dev/vda", "rootfstype=ext4", "rw",
             "init=/sbin/opbench-init", "panic=-1", "loglevel=5",
             "tsc=reliable", "clocksource=tsc", "acpi=noirq", "i8042.noaux",
             "i8042.nokbd", "opbench.cmd=%s" % script]
    if extra:
        parts.append(extra)
    return " ".join(parts)


def build_command(opts, accel, logfile, script, qmp_sock=None):
    """The whole QEMU argument list for one run."""
    return ([opts.qemu] + machine_args(opts.smp, opts.mem) + accel_args(accel)
            + kernel_args(opts.kernel, kernel_cmdline(script, opts.append))
            + disk_args(opts.image) + share_args(opts.share)
            + console_args(logfile) + qmp_args(qmp_sock)
            + (["-plugin", opts.plugin] if getattr(opts, "plugin", "")
               else []))


# ---------------------------------------------------------------------------
# Running

def parse_pin(spec, smp):
    """'0,1' -> [0, 1]: host CPU for each vCPU thread, in vCPU order."""
    if not spec:
        return None
    try:
        cpus = [int(c) for c in spec.split(",")]
    except ValueError:
        raise LaunchError("--pin '%s' is not a comma-separated list of host "
                          "CPU numbers (e.g. --pin 0,1)" % spec)
    if len(cpus) != smp:
        raise LaunchError("--pin lists %d host CPUs for %d vCPUs; give one "
                          "per vCPU" % (len(cpus), smp))
    ncpu = os.cpu_count() or 1
    for c in cpus:
        if c < 0 or c >= ncpu:
            raise LaunchError("--pin: host CPU %d does not exist (0-%d)"
                              % (c, ncpu - 1))
    return cpus


def qmp_vcpu_threads(sock, deadline):
    """Thread ids of the vCPUs, from QMP query-cpus-fast."""
    while time.time() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            break
        except OSError:
            time.sleep(0.05)
    else:
        raise LaunchError("QMP socket %s never appeared" % sock)
    f = s.makefile("rw")
    f.readline()
    for cmd in ({"execute": "qmp_capabilities"},
                {"execute": "query-cpus-fast"}):
        f.write(json.dumps(cmd) + "\n")
        f.flush()
        while True:
            reply = json.loads(f.readline())
            if "return" in reply or "error" in reply:
                break
    s.close()
    return [c["thread-id"] for c in sorted(reply.get("return", []),
                                           key=lambda c: c["cpu-index"])]


def console_tail(logfile, n=30):
    try:
        with open(logfile, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


def find_splats(text):
    return [l for l in text.splitlines() if SPLAT_RE.search(l)]


def write_guest_script(share, argv):
    """Put the command into the share as a script; return its name."""
    fd, path = tempfile.mkstemp(prefix=".opbench-cmd-", suffix=".sh",
                                dir=share)
    with os.fdopen(fd, "w") as f:
        f.write("#!/bin/sh\n")
        if len(argv) == 1 and os.path.isfile(os.path.join(share, argv[0])):
            f.write("exec sh %s\n" % shlex.quote(argv[0]))
        else:
            f.write("exec %s\n" % " ".join(shlex.quote(a) for a in argv))
    return os.path.basename(path)


def boot_once(opts, accel, script, logfile, record, probe=None):
    """Boot one guest; return (status, reason). probe: seconds to wait for
    first console output before giving up (KVM sanity probe)."""
    qmp_dir = tempfile.mkdtemp(prefix="opbench-qmp-")
    qmp_sock = os.path.join(qmp_dir, "qmp") if opts.pin_cpus else None
    cmd = build_command(opts, accel, logfile, script, qmp_sock)
    record["qemu_command"] = cmd
    open(logfile, "w").close()
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        if opts.pin_cpus:
            tids = qmp_vcpu_threads(qmp_sock, t0 + 10)
            for i, tid in enumerate(tids):
                os.sched_setaffinity(tid, {opts.pin_cpus[i % len(opts.pin_cpus)]})
            record["vcpu_threads"] = tids
        pos = 0
        text = ""
        started = None
        shown = 0
        finished = False
        exit_seen = None
        echo = opts.verbose
        while True:
            with open(logfile, errors="replace") as f:
                f.seek(pos)
                chunk = f.read()
                pos = f.tell()
            if chunk:
                text += chunk
                if echo:
                    sys.stderr.write(chunk)
                if started is None and START_MARK in text:
                    started = time.time() - t0
                    record["boot_to_command_s"] = round(started, 3)
                    shown = text.index(START_MARK) + len(START_MARK) + 1
                if started is not None and not echo and not finished:
                    # The command's output, as whole lines, on our stdout,
                    # up to the exit marker.
                    end = text.rfind("\n") + 1
                    for line in text[shown:end].splitlines():
                        if EXIT_RE.search(line):
                            finished = True
                            break
                        print(line.rstrip("\r"), flush=True)
                    shown = max(shown, end)
            now = time.time() - t0
            if exit_seen is None and EXIT_RE.search(text):
                exit_seen = now
            if proc.poll() is not None:
                break
            if exit_seen is not None and now > exit_seen + 10:
                break   # reported its status but never reset: stop it
            if probe is not None and not text and now > probe:
                proc.kill()
                proc.wait()
                return (None, "no console output within %ds" % probe)
            if now > opts.timeout:
                proc.kill()
                proc.wait()
                record["outcome"] = "timeout"
                return (EXIT_TIMEOUT, "timeout")
            time.sleep(0.05)
        out = proc.stdout.read().decode(errors="replace")
        with open(logfile, errors="replace") as f:
            text = f.read()
        record["elapsed_s"] = round(time.time() - t0, 3)
        splats = find_splats(text)
        if splats:
            record["outcome"] = "kernel-splat"
            record["splats"] = splats
            return (EXIT_SPLAT, "splat")
        m = EXIT_RE.search(text)
        if not m:
            record["outcome"] = "no-exit-status"
            record["qemu_output"] = out[-2000:]
            return (EXIT_NOBOOT, "noboot")
        record["outcome"] = "ok"
        return (int(m.group(1)), "ok")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(qmp_dir, ignore_errors=True)


def qemu_version(qemu):
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True,
                             text=True, check=True).stdout
        return out.splitlines()[0]
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="opbench-vm",
        description="Boot a kernel under QEMU with the rseq-opbench guest "
        "image, run one command in the guest and return its exit status.",
        epilog="Exit status: the command's, or 124 timeout, 125 kernel "
        "splat, 126 boot failure.")
    p.add_argument("--kernel", required=True, help="bzImage to boot")
    p.add_argument("--image", required=True, help="guest root (ext4 image)")
    p.add_argument("--share", required=True,
                   help="host directory shared as /share (inputs, outputs); "
                   "the command runs there")
    p.add_argument("--accel", required=True,
                   choices=["auto", "kvm", "tcg", "icount"],
                   help="no default (scripts/common.sh accel_for decides "
                   "it for the scripts); auto: KVM if it can boot an ordinary kernel, TCG "
                   "otherwise; icount: TCG with -icount %s" % ICOUNT_OPTS)
    p.add_argument("--smp", type=int, default=2, help="vCPUs (default 2)")
    p.add_argument("--mem", default="2G", help="guest memory (default 2G)")
    p.add_argument("--pin", default="",
                   help="host CPU for each vCPU thread, e.g. 0,1")
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds before the guest is killed (default 600)")
    p.add_argument("--console-log", default="",
                   help="serial console log (default: <share>/console.log)")
    p.add_argument("--record", default="",
                   help="write a JSON record of the run (accelerator, "
                   "warnings, QEMU command, boot time, outcome)")
    p.add_argument("--append", default="", help="extra kernel arguments")
    p.add_argument("--qemu", default="qemu-system-x86_64")
    p.add_argument("--plugin", default="",
                   help="a TCG plugin: QEMU's -plugin argument, "
                   "file=PATH,arg=... (tracing/insnprof)")
    p.add_argument("--kvm-probe", type=float, default=15,
                   help="seconds without console output before KVM is "
                   "declared unusable and TCG is used (default 15)")
    p.add_argument("--show-command", "--dry-run", action="store_true",
                   dest="show_command",
                   help="print the QEMU command line and exit; boots nothing")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="copy the guest console to stderr")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="command to run in the guest (after --)")
    opts = p.parse_args(argv)
    if opts.command and opts.command[0] == "--":
        opts.command = opts.command[1:]
    if opts.smp < 1:
        raise LaunchError("--smp must be at least 1")
    opts.pin_cpus = parse_pin(opts.pin, opts.smp)
    return opts


def check_inputs(opts):
    for what, path in (("--kernel", opts.kernel), ("--image", opts.image)):
        if not os.path.isfile(path):
            raise LaunchError("%s %s: no such file; build it with `make "
                              "kernels` / `make image`" % (what, path))
    if not os.path.isdir(opts.share):
        raise LaunchError("--share %s: no such directory" % opts.share)
    if not opts.command:
        raise LaunchError("no guest command given; add one after --, "
                          "e.g. -- uname -r")
    if shutil.which(opts.qemu) is None:
        raise LaunchError("%s not found; run scripts/deps.sh" % opts.qemu)


def main(argv=None):
    try:
        opts = parse_args(sys.argv[1:] if argv is None else argv)
        accel, reason, warning = choose_accel(opts.accel)
        opts.share = os.path.abspath(opts.share)
        logfile = opts.console_log or os.path.join(opts.share, "console.log")
        if opts.show_command:
            print(" ".join(shlex.quote(a) for a in build_command(
                opts, accel, logfile, "<script>",
                "<qmp>" if opts.pin_cpus else None)))
            return 0
        check_inputs(opts)
    except LaunchError as e:
        print("opbench-vm: error: %s" % e, file=sys.stderr)
        return 2
    if warning:
        print("opbench-vm: WARNING: %s" % warning, file=sys.stderr)
    record = {**accel_record(accel), "accel_reason": reason, "warnings":
              [warning] if warning else [], "qemu_version":
              qemu_version(opts.qemu), "smp": opts.smp, "mem": opts.mem,
              "pin": opts.pin_cpus, "kernel": os.path.abspath(opts.kernel),
              "image": os.path.abspath(opts.image),
              "guest_command": opts.command}
    script = write_guest_script(opts.share, opts.command)
    try:
        probe = opts.kvm_probe if accel == "kvm" and opts.accel == "auto" \
            else None
        status, why = boot_once(opts, accel, script, logfile, record, probe)
        if status is None:
            warning = ("KVM guest showed %s: falling back to TCG software "
                       "emulation; times are emulated, not hardware" % why)
            print("opbench-vm: WARNING: %s" % warning, file=sys.stderr)
            record["warnings"].append(warning)
            accel = "tcg"
            record.update(accel_record(accel))
            status, why = boot_once(opts, accel, script, logfile, record)
    finally:
        os.unlink(os.path.join(opts.share, script))
    if opts.record:
        with open(opts.record, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write("\n")
    if why == "timeout":
        print("opbench-vm: error: guest timed out after %gs; console tail "
              "(%s):" % (opts.timeout, logfile), file=sys.stderr)
        for l in console_tail(logfile):
            print("  | " + l, file=sys.stderr)
    elif why == "splat":
        print("opbench-vm: error: kernel reported a problem on the console "
              "(%s):" % logfile, file=sys.stderr)
        for l in record["splats"][:20]:
            print("  | " + l, file=sys.stderr)
    elif why == "noboot":
        print("opbench-vm: error: the guest never reported the command's "
              "exit status; console tail (%s):" % logfile, file=sys.stderr)
        for l in console_tail(logfile):
            print("  | " + l, file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
