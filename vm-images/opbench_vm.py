# SPDX-License-Identifier: GPL-2.0
"""opbench_vm - boot a project kernel under QEMU, run one command, return its status.

The QEMU command line is data: small functions each return one group of
arguments, build_command() joins them, and `--show-command` prints the result
without booting. run() boots, watches the serial console (captured to a log
file), enforces a timeout and turns kernel splats into a failure.

    opbench-vm --kernel bzImage --image rootfs.ext4 --share DIR \
        --accel auto -- uname -r

Under KVM (kvm_status() says why it is or is not usable, and the fix) each
vCPU thread is pinned to its own physical core, SMT siblings and CPU 0's
core left to the host (vcpu_pinning(); --pin chooses instead), and the guest
gets the host's invariant TSC as its clock (KVM_CPU, CLOCK_ARGS); vm.json
records the pinning, the reason for it and the clock options.

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
import stat
import subprocess
import sys
import tempfile
import time

EXIT_TIMEOUT = 124
EXIT_SPLAT = 125
EXIT_NOBOOT = 126

ICOUNT_OPTS = "shift=0,align=off,sleep=off"

# The guest's CPU under KVM. -arch-capabilities: QEMU 7.2 with -cpu host
# aborts on some hosts with "failed to set MSR 0x10a". +invtsc: CPUID
# 80000007H:EDX bit 8, the invariant TSC, which -cpu host leaves out
# because it blocks migration; QEMU 7.2 takes it all the same (it only
# refuses a later migrate or savevm, "State blocked by non-migratable CPU
# device (invtsc flag)", and refuses to start only under --only-migratable,
# which is not given) and passes it on when the host has it. The guest
# kernel then trusts the TSC and ranks kvm-clock below it.
KVM_CPU = "host,-arch-capabilities,+invtsc"

# The guest's clock, on every accelerator's kernel command line: the TSC,
# without the clocksource watchdog that could declare it unstable and
# switch clocks in the middle of a run.
CLOCK_ARGS = ["tsc=reliable", "clocksource=tsc"]

# Console lines that mean the kernel is unwell, whatever the command
# returned: the project's one kernel-problem pattern. Benchmark, selftest,
# tracing and stress boots all fail on it (guest_run.py writes the matching
# lines to kernel-problems.txt). Lockdep, hung-task and RCU reports only
# appear on the debug kernel configuration; they are here so that no boot
# of it can pass with one on its console. "kernel BUG at" and "Unable to
# handle kernel" are how BUG() and a bad kernel access begin on the other
# architectures' consoles (correctness/arch-run.sh greps with this too).
SPLAT_RE = re.compile(
    r"Kernel panic|Oops|BUG:|kernel BUG at|Unable to handle kernel|"
    r"WARNING:|general protection fault|"
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

def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The CPU flags /proc/cpuinfo lists (its first 'flags' line, not the
    'vmx flags' one), as a set; None when the file cannot be read."""
    try:
        with open(cpuinfo, errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "flags":
                    return set(value.split())
    except OSError:
        return None
    return set()


def dev_access_problem(path, st, euid, gids, names=None):
    """Why user euid (groups gids) cannot open path read-write, judged
    from its stat result st by the mode bits as the kernel judges them
    (root passes; the owner's bits, else the group's, else the others');
    None when it can. A pure function: tests give it any identity, where
    os.access would answer for the user running them (root: always yes).
    names: {"user", "owner", "group", "members"}, looked up when None."""
    if euid == 0:
        return None
    mode = st.st_mode
    if euid == st.st_uid:
        need = stat.S_IRUSR | stat.S_IWUSR
    elif st.st_gid in gids:
        need = stat.S_IRGRP | stat.S_IWGRP
    else:
        need = stat.S_IROTH | stat.S_IWOTH
    if mode & need == need:
        return None
    n = names if names is not None else id_names(st, euid)
    what = ("%s (mode %04o, owner %s, group %s) is not readable and "
            "writable by user %s" % (path, stat.S_IMODE(mode), n["owner"],
                                     n["group"], n["user"]))
    group_rw = stat.S_IRGRP | stat.S_IWGRP
    if euid != st.st_uid and st.st_gid not in gids and \
            mode & group_rw == group_rw:
        if n["user"] in n["members"]:
            return ("%s: %s is in group %s, but this login session is not "
                    "yet; log in again (or run `newgrp %s`)"
                    % (what, n["user"], n["group"], n["group"]))
        return ("%s: add the user to group %s (`sudo usermod -aG %s %s`) "
                "and log in again" % (what, n["group"], n["group"],
                                      n["user"]))
    return ("%s: give the device to group kvm with mode 0660 (a udev "
            "rule: KERNEL==\"kvm\", GROUP=\"kvm\", MODE=\"0660\"), then "
            "add the user to group kvm (`sudo usermod -aG kvm %s`)"
            % (what, n["user"]))


def id_names(st, euid):
    """Names for dev_access_problem's message: the user, the file's owner
    and group, and the group's listed members (numbers when unknown)."""
    import grp
    import pwd

    def user(uid):
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return str(uid)
    try:
        g = grp.getgrgid(st.st_gid)
        group, members = g.gr_name, list(g.gr_mem)
    except KeyError:
        group, members = str(st.st_gid), []
    return {"user": user(euid), "owner": user(st.st_uid), "group": group,
            "members": members}


def has_acl(path):
    """True when path carries a POSIX access ACL (logind's uaccess puts
    one on /dev/kvm): then the mode bits do not tell who may open it."""
    try:
        os.getxattr(path, "system.posix_acl_access")
        return True
    except (OSError, AttributeError):
        return False


def kvm_status(dev="/dev/kvm", sysmod="/sys/module",
               cpuinfo="/proc/cpuinfo", ids=None):
    """Return (usable, reason) for KVM on this host, without booting.

    The reason names the cause and the fix. Causes, in the order they are
    checked: a kvm_pvm host; a CPU whose flags (cpuinfo) have neither vmx
    nor svm; the kvm module without kvm_intel or kvm_amd (sysmod); no
    /dev/kvm (dev); /dev/kvm not readable and writable by this user
    (ids: (euid, groups), this process's by default), judged by
    dev_access_problem() from its mode bits, or by os.access() when it
    carries an ACL.
    """
    if os.path.isdir(os.path.join(sysmod, "kvm_pvm")):
        return (False, "/dev/kvm is served by kvm_pvm, a nested PVM "
                "hypervisor that cannot boot an ordinary guest kernel")
    flags = cpu_flags(cpuinfo)
    if flags is not None and not flags & {"vmx", "svm"}:
        return (False, "the CPU exposes no hardware virtualisation (no vmx "
                "or svm flag in %s): enable VT-x/AMD-V in the firmware, "
                "or, on a virtual machine, nested virtualisation in the "
                "hypervisor above" % cpuinfo)
    vendor = [m for m in ("kvm_intel", "kvm_amd")
              if os.path.isdir(os.path.join(sysmod, m))]
    want = ("kvm_amd" if flags and "svm" in flags and "vmx" not in flags
            else "kvm_intel" if flags and "vmx" in flags
            else "kvm_intel or kvm_amd")
    if os.path.isdir(os.path.join(sysmod, "kvm")) and not vendor:
        return (False, "the kvm module is loaded but neither kvm_intel nor "
                "kvm_amd is: run `sudo modprobe %s`; if it refuses, dmesg "
                "says why (often virtualisation disabled in the firmware)"
                % want)
    if not os.path.exists(dev):
        if vendor:
            return (False, "%s does not exist although %s is loaded: in a "
                    "container, pass the device in (docker run --device "
                    "/dev/kvm)" % (dev, vendor[0]))
        return (False, "%s does not exist: load KVM (`sudo modprobe %s`)"
                % (dev, want))
    euid, gids = ids if ids is not None else (
        os.geteuid(), set(os.getgroups()) | {os.getegid()})
    problem = dev_access_problem(dev, os.stat(dev), euid, gids)
    if ids is None and has_acl(dev):
        # The ACL decides, and only the kernel reads it whole.
        if os.access(dev, os.R_OK | os.W_OK):
            problem = None
        elif problem is None:
            problem = ("%s carries an ACL that does not let this user read "
                       "and write it (see `getfacl %s`): add the user to "
                       "group kvm (`sudo usermod -aG kvm USER`) and log in "
                       "again" % (dev, dev))
    if problem:
        return (False, problem)
    return (True, "%s is usable%s" % (dev, " (%s)" % vendor[0] if vendor
                                      else ""))


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
        return ["-accel", "kvm", "-cpu", KVM_CPU]
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


def clock_record(accel, cpuinfo="/proc/cpuinfo"):
    """How the guest keeps time, as vm.json declares it: the TSC options
    given (CPU flags, kernel arguments), whether the host's TSC is
    invariant (constant_tsc and nonstop_tsc in its cpuinfo; None when not
    read), and a warning when a KVM guest cannot get an invariant TSC."""
    rec = {"kernel_args": list(CLOCK_ARGS), "cpu_flags": [],
           "host_invariant_tsc": None, "warning": None}
    if accel != "kvm":
        rec["why"] = ("TCG: the guest's TSC is QEMU's emulated counter%s"
                      % (" (icount: instructions executed)"
                         if accel == "icount" else ""))
        return rec
    flags = cpu_flags(cpuinfo)
    rec["cpu_flags"] = ["+invtsc"]
    if flags is not None:
        rec["host_invariant_tsc"] = {"constant_tsc",
                                     "nonstop_tsc"} <= flags
    rec["why"] = ("KVM: +invtsc gives the guest the host's invariant TSC "
                  "and %s makes it the guest's clock" % " ".join(CLOCK_ARGS))
    if rec["host_invariant_tsc"] is False:
        rec["warning"] = ("the host's TSC is not invariant (constant_tsc "
                          "and nonstop_tsc not both in %s): QEMU drops "
                          "+invtsc and the guest's times may drift with "
                          "the host's frequency and power states; run on a "
                          "host whose TSC is invariant" % cpuinfo)
    return rec


def launch_record(accel, pinning, clock=None):
    """What vm.json says about how the guest ran: accel_record(), the
    vCPU pinning ("pin": host CPU per vCPU or None, as before; "pinning":
    choose_pinning()'s whole answer, with why) and the clock options
    (clock_record())."""
    return {**accel_record(accel), "pin": pinning["cpus"],
            "pinning": pinning,
            "clock": clock if clock is not None else clock_record(accel)}


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
             "init=/sbin/opbench-init", "panic=-1", "loglevel=5"]
    parts += CLOCK_ARGS + ["acpi=noirq", "i8042.noaux", "i8042.nokbd",
                           "opbench.cmd=%s" % script]
    if extra:
        parts.append(extra)
    return " ".join(parts)


def initrd_accel_args(accel):
    """The accelerator of an initramfs guest of another architecture (its
    CPU is the target's, in --machine): TCG, multi-threaded, or under
    icount."""
    if accel == "tcg":
        return ["-accel", "tcg,thread=multi"]
    if accel == "icount":
        return ["-accel", "tcg", "-icount", ICOUNT_OPTS]
    raise LaunchError("an --initrd guest runs under tcg or icount, not %s"
                      % accel)


def build_command(opts, accel, logfile, script, qmp_sock=None):
    """The whole QEMU argument list for one run."""
    if getattr(opts, "initrd", ""):
        return ([opts.qemu] + shlex.split(opts.machine) +
                initrd_accel_args(accel) +
                ["-display", "none", "-monitor", "none", "-no-reboot"] +
                console_args(logfile) +
                ["-kernel", opts.kernel, "-initrd", opts.initrd, "-append",
                 " ".join(["console=%s" % opts.console, "panic=-1",
                           "loglevel=5"] + ([opts.append] if opts.append
                                            else []))])
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


def parse_cpulist(text):
    """A kernel CPU list ('0-3,8,10-11', '' for none) as a set."""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpulist(cpus):
    """The inverse of parse_cpulist: {0, 1, 2, 5} -> '0-2,5'."""
    out = []
    for c in sorted(cpus):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in out)


def read_cpulist(path):
    """The CPU list in a sysfs file, or None when there is no such file."""
    try:
        with open(path) as f:
            return parse_cpulist(f.read())
    except OSError:
        return None


def vcpu_pinning(smp, sysfs="/sys", allowed=None):
    """Choose one host CPU per vCPU, each on its own physical core.

    Reads, under the sysfs root, devices/system/cpu/online, isolated and
    each cpuN/topology/core_cpus_list (thread_siblings_list on kernels
    before 5.7): a core is a set of SMT siblings. allowed: the CPUs this
    process may run on (its affinity by default). Prefers isolated cores
    when there are enough of them, and cores without CPU 0, where the
    host's housekeeping runs, when there are enough without it; takes the
    lowest CPUs otherwise. Returns {"cpus": host CPU per vCPU, "cores":
    each one's core, "why": the choice in words}; raises LaunchError when
    there are fewer usable physical cores than vCPUs.
    """
    base = os.path.join(sysfs, "devices", "system", "cpu")
    online = read_cpulist(os.path.join(base, "online"))
    if online is None:
        raise LaunchError("cannot read %s/online to place the vCPUs; choose "
                          "host CPUs yourself with --pin" % base)
    if allowed is None:
        allowed = os.sched_getaffinity(0)
    isolated = read_cpulist(os.path.join(base, "isolated")) or set()
    usable = sorted(online & set(allowed))
    cores = {}
    unknown = set()
    for cpu in usable:
        topo = os.path.join(base, "cpu%d" % cpu, "topology")
        sib = read_cpulist(os.path.join(topo, "core_cpus_list"))
        if sib is None:
            sib = read_cpulist(os.path.join(topo, "thread_siblings_list"))
        if not sib:
            sib = {cpu}
            unknown.add(cpu)
        cores.setdefault(frozenset(sib | {cpu}), []).append(cpu)
    order = sorted(cores, key=min)
    if len(order) < smp:
        pin = ("; e.g. --pin %s to share cores between SMT siblings"
               % ",".join(map(str, usable[:smp]))
               if len(usable) >= smp else "")
        raise LaunchError(
            "%d vCPUs need %d physical cores, one each, but this process "
            "may run on %d (CPUs %s; cores %s): use --smp %d or fewer, or "
            "choose host CPUs yourself with --pin%s"
            % (smp, smp, len(order), format_cpulist(usable),
               " ".join(format_cpulist(c) for c in order), len(order), pin))
    notes = []
    iso = online & isolated
    pool = order
    use_iso = False
    if iso:
        iso_cores = [c for c in order if set(cores[c]) & iso]
        outside = iso - set(usable)
        if len(iso_cores) >= smp:
            pool = iso_cores
            use_iso = True
            notes.append("on isolated CPUs (%s)" % format_cpulist(iso))
        else:
            notes.append("isolated CPUs %s give %d physical cores for %d "
                         "vCPUs: not used" % (format_cpulist(iso),
                                              len(iso_cores), smp))
        if outside:
            notes.append("isolated CPUs %s are outside this process's CPUs "
                         "(%s): run it under `taskset -c %s` to use them"
                         % (format_cpulist(outside), format_cpulist(usable),
                            format_cpulist(iso)))
    housekeeping = [c for c in pool if 0 in c]
    if housekeeping:
        rest = [c for c in pool if 0 not in c]
        if len(rest) >= smp:
            pool = rest
            notes.append("the core of CPU 0 (%s), where the host's "
                         "housekeeping runs, left out"
                         % format_cpulist(housekeeping[0]))
        else:
            notes.append("the core of CPU 0 (%s) used: too few cores "
                         "without it" % format_cpulist(housekeeping[0]))
    if unknown:
        notes.append("no SMT topology in sysfs for CPUs %s: each taken as "
                     "its own core" % format_cpulist(unknown))
    chosen = pool[:smp]
    cpus = []
    for c in chosen:
        cpus.append(min([x for x in cores[c] if x in iso] if use_iso
                        else cores[c]))
    smt = ", SMT siblings left to the host" if any(
        len(c) > 1 for c in chosen) else ""
    why = "one physical core per vCPU%s: %s" % (smt, ", ".join(
        "vCPU %d -> CPU %d (core %s)" % (i, cpu, format_cpulist(c))
        for i, (cpu, c) in enumerate(zip(cpus, chosen))))
    return {"cpus": cpus, "cores": [sorted(c) for c in chosen],
            "why": "; ".join([why] + notes)}


def choose_pinning(opts, accel, sysfs="/sys", allowed=None):
    """How the vCPU threads are pinned: (pinning, warning-or-None).

    pinning: {"source": "--pin", "auto" or None, "cpus": host CPU per
    vCPU or None, "cores", "why"}, as vm.json records it. --pin wins.
    Under KVM each vCPU gets its own physical core (vcpu_pinning); when
    there are too few, that is an error under --accel kvm and a warning
    (no pinning) when --accel auto chose KVM. Under TCG and icount
    nothing is pinned unless --pin says so.
    """
    if opts.pin_cpus:
        return ({"source": "--pin", "cpus": list(opts.pin_cpus),
                 "cores": None, "why": "given with --pin"}, None)
    if accel != "kvm":
        return ({"source": None, "cpus": None, "cores": None,
                 "why": "not pinned: automatic pinning is for KVM only "
                 "(--pin pins under TCG too)"}, None)
    try:
        pinning = vcpu_pinning(opts.smp, sysfs, allowed)
    except LaunchError as e:
        if getattr(opts, "accel", "kvm") == "kvm":
            raise
        return ({"source": None, "cpus": None, "cores": None,
                 "why": "not pinned: %s" % e},
                "KVM vCPUs not pinned, times are noisier: %s" % e)
    return (dict(pinning, source="auto"), None)


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


def cpu_seconds(pid):
    """User and system CPU time of a live process, all its threads (the
    vCPUs among them), in seconds; None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runqueue_wait(pid):
    """Seconds the threads of a live process (the vCPUs among them) spent
    runnable but not running on the host (schedstat's run_delay, summed):
    how long the host starved the guest. None when it cannot be read."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


# A guest kernel's watchdogs are wall clocks under TCG: the soft-lockup
# detector reports a CPU that did not schedule for 2 * watchdog_thresh (20 s
# by default), RCU a grace period that did not end in 21 s, the hung-task
# detector a task blocked for 120 s. A host that does not run QEMU's
# threads for that long fires them with no fault in the guest kernel.
STARVE_WINDOW_S = 20
# The console's first line of such a report.
WATCHDOG_RE = re.compile(r"soft lockup|hard LOCKUP|rcu.*detected stall|"
                         r"blocked for more than")


class HostShare:
    """What the host gave a QEMU process while it ran: CPU time, run-queue
    wait in all, the most run-queue wait in any one second of wall time,
    and the most in any STARVE_WINDOW_S seconds (with when that window
    ended, in seconds since the launch), sampled about once a second into
    the boot's record."""

    def __init__(self, pid, record):
        self.pid, self.record = pid, record
        self.last_t, self.last_wait = None, None
        self.t0, self.window = None, []
        record["host_max_wait_per_s"] = 0.0
        record["host_max_wait_window"] = {"s": STARVE_WINDOW_S,
                                          "wait_s": 0.0, "end_s": None}

    def sample(self, now):
        if self.last_t is not None and now - self.last_t < 1.0:
            return
        cpu = cpu_seconds(self.pid)
        wait = runqueue_wait(self.pid)
        if cpu is not None:
            self.record["qemu_cpu_s"] = round(cpu, 2)
        if wait is None:
            return
        self.record["host_wait_s"] = round(wait, 2)
        if self.last_t is not None and self.last_wait is not None:
            per_s = (wait - self.last_wait) / (now - self.last_t)
            if per_s > self.record["host_max_wait_per_s"]:
                self.record["host_max_wait_per_s"] = round(per_s, 3)
        if self.t0 is None:
            self.t0 = now
        self.window.append((now, wait))
        while now - self.window[0][0] > STARVE_WINDOW_S:
            self.window.pop(0)
        worst = self.record["host_max_wait_window"]
        in_window = wait - self.window[0][1]
        if in_window > worst["wait_s"]:
            worst["wait_s"] = round(in_window, 2)
            worst["end_s"] = round(now - self.t0, 1)
        self.last_t, self.last_wait = now, wait


def starved_watchdog(console, record):
    """Why a boot's kernel problem is the host's, or None: its first
    report is a watchdog's (WATCHDOG_RE) and the host kept QEMU's threads
    waiting, in all, at least STARVE_WINDOW_S seconds in some
    STARVE_WINDOW_S seconds (the boot's record, HostShare): as long as one
    vCPU thread kept off the host's CPUs for the whole window. The wait is
    summed over QEMU's threads, so the test is loose: a real lockup on a
    busy host is classed so too, and costs one boot more (a second void
    boot fails). Such a boot is void, not a verdict on the kernel:
    guest_run.py boots it again once."""
    splats = find_splats(console)
    if not splats or not WATCHDOG_RE.search(splats[0]):
        return None
    worst = record.get("host_max_wait_window") or {}
    w = worst.get("wait_s") or 0.0
    s = worst.get("s") or STARVE_WINDOW_S
    if w < s:
        return None
    return ("the guest kernel's watchdog fired (%s) while the host kept "
            "QEMU's threads waiting %.1f s in %d s (the window ending %s s "
            "after the launch): emulator starvation, not a kernel problem"
            % (splats[0].strip()[:120], w, s, worst.get("end_s")))


def boot_once(opts, accel, script, logfile, record, pin=None, probe=None):
    """Boot one guest; return (status, reason). pin: host CPU for each
    vCPU thread, or None; probe: seconds to wait for first console output
    before giving up (KVM sanity probe). The record gets the boot's wall
    time against its limit, and what the host gave QEMU (HostShare): a
    guest starved by its host shows run-queue wait, which tells emulator
    starvation from a slow kernel when a limit or a watchdog fires."""
    qmp_dir = tempfile.mkdtemp(prefix="opbench-qmp-")
    qmp_sock = os.path.join(qmp_dir, "qmp") if pin else None
    cmd = build_command(opts, accel, logfile, script, qmp_sock)
    record["qemu_command"] = cmd
    open(logfile, "w").close()
    t0 = time.time()
    record["timeout_s"] = opts.timeout
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    share = HostShare(proc.pid, record)
    try:
        if pin:
            tids = qmp_vcpu_threads(qmp_sock, t0 + 10)
            for i, tid in enumerate(tids):
                os.sched_setaffinity(tid, {pin[i % len(pin)]})
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
            share.sample(now)
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
                record["elapsed_s"] = round(time.time() - t0, 3)
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
    p.add_argument("--image", default="", help="guest root (ext4 image)")
    p.add_argument("--share", default="",
                   help="host directory shared as /share (inputs, outputs); "
                   "the command runs there")
    p.add_argument("--initrd", default="",
                   help="an initramfs whose /init runs the guest's work and "
                   "prints the start and exit markers itself (another "
                   "architecture's guest, vm-images/targets/: "
                   "correctness/arch-run.sh); in place of --image, --share "
                   "and a command")
    p.add_argument("--machine", default="",
                   help="with --initrd: QEMU's machine, CPU, CPUs and memory "
                   "(a target's QEMU arguments after the program)")
    p.add_argument("--console", default="ttyS0",
                   help="with --initrd: the guest's console device")
    p.add_argument("--accel", required=True,
                   choices=["auto", "kvm", "tcg", "icount"],
                   help="no default (scripts/common.sh accel_for decides "
                   "it for the scripts); auto: KVM if it can boot an "
                   "ordinary kernel, TCG otherwise; icount: TCG with "
                   "-icount %s" % ICOUNT_OPTS)
    p.add_argument("--smp", type=int, default=2, help="vCPUs (default 2)")
    p.add_argument("--mem", default="2G", help="guest memory (default 2G)")
    p.add_argument("--pin", default="",
                   help="host CPU for each vCPU thread, e.g. 0,1 (default: "
                   "under KVM, each vCPU on its own physical core, SMT "
                   "siblings and CPU 0's core left to the host; under TCG, "
                   "none)")
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
    if opts.initrd:
        if opts.image or opts.share or opts.command:
            raise LaunchError("--initrd runs the initramfs's own /init: no "
                              "--image, --share or command with it")
        initrd_accel_args(opts.accel)
        if opts.pin or opts.plugin:
            raise LaunchError("--pin and --plugin are for the x86_64 guest; "
                              "an --initrd guest runs under TCG unpinned")
    elif not opts.image or not opts.share:
        raise LaunchError("--image and --share are needed (or --initrd, "
                          "for an initramfs guest)")
    if opts.smp < 1:
        raise LaunchError("--smp must be at least 1")
    opts.pin_cpus = parse_pin(opts.pin, opts.smp)
    return opts


def check_inputs(opts):
    for what, path in (("--kernel", opts.kernel),
                       ("--initrd" if opts.initrd else "--image",
                        opts.initrd or opts.image)):
        if not os.path.isfile(path):
            raise LaunchError("%s %s: no such file; build it with `make "
                              "kernels` / `make image`" % (what, path))
    if opts.initrd:
        if shutil.which(opts.qemu) is None:
            raise LaunchError("%s not found; run scripts/deps.sh" % opts.qemu)
        return
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
        pinning, pin_warning = choose_pinning(opts, accel)
        if opts.initrd and not opts.console_log:
            raise LaunchError("--initrd needs --console-log (no share to "
                              "put it in)")
        opts.share = os.path.abspath(opts.share) if opts.share else ""
        logfile = opts.console_log or os.path.join(opts.share, "console.log")
        if opts.show_command:
            print(" ".join(shlex.quote(a) for a in build_command(
                opts, accel, logfile, "<script>",
                "<qmp>" if pinning["cpus"] else None)))
            return 0
        check_inputs(opts)
    except LaunchError as e:
        print("opbench-vm: error: %s" % e, file=sys.stderr)
        return 2
    clock = clock_record(accel)
    warnings = [w for w in (warning, pin_warning, clock["warning"]) if w]
    for w in warnings:
        print("opbench-vm: WARNING: %s" % w, file=sys.stderr)
    record = {**launch_record(accel, pinning, clock), "accel_reason": reason,
              "warnings": warnings, "qemu_version": qemu_version(opts.qemu),
              "smp": opts.smp, "mem": opts.mem,
              "kernel": os.path.abspath(opts.kernel),
              "image": os.path.abspath(opts.initrd or opts.image),
              "guest_command": opts.command}
    if opts.initrd:
        # The target's machine says the CPU, the CPUs and memory.
        args = initrd_accel_args(accel)
        record.update(smp=None, mem=None, machine=opts.machine,
                      initrd=True, accel_args=args, cpu=None,
                      icount=ICOUNT_OPTS if "-icount" in args else None)
        # Killed, it takes its QEMU with it (boot_once's finally).
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + 15))
    script = None if opts.initrd else write_guest_script(opts.share,
                                                          opts.command)
    try:
        probe = opts.kvm_probe if accel == "kvm" and opts.accel == "auto" \
            else None
        status, why = boot_once(opts, accel, script, logfile, record,
                                pinning["cpus"], probe)
        if status is None:
            warning = ("KVM guest showed %s: falling back to TCG software "
                       "emulation; times are emulated, not hardware" % why)
            print("opbench-vm: WARNING: %s" % warning, file=sys.stderr)
            record["warnings"].append(warning)
            accel = "tcg"
            record.pop("vcpu_threads", None)
            pinning = choose_pinning(opts, accel)[0]
            record.update(launch_record(accel, pinning))
            status, why = boot_once(opts, accel, script, logfile, record,
                                    pinning["cpus"])
    finally:
        if script:
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
