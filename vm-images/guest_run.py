# SPDX-License-Identifier: GPL-2.0
"""guest_run - the one way the project boots a guest: a flavour, a boot
directory and a command.

    guest-run --flavour ops [--kconfig debug] --out DIR --accel ACCEL
              [--copy FILE]... [--timeout S] [--append ARGS] [--dry-run]
              -- CMD [ARG]...

The kernel and the image come from the run manifest ($MANIFEST, by default
$CACHE_DIR/manifest), which only the build steps write: nothing here
fetches, unpacks or builds. DIR is shared with the guest as /share, and the
command runs there. After the boot DIR holds, for every driver alike:

    console.log          the serial console
    vm.json              the launcher's record (accelerator, QEMU command,
                         boot time, outcome)
    kernel-provenance    the provenance of the kernel that was booted
    commands.txt         the host command, the QEMU command, the guest command
    kernel-problems.txt  console lines that match the kernel-problem pattern
                         (opbench_vm.SPLAT_RE; empty when there were none)

A hung task, a lockdep report, a KASAN report or any other match of that one
pattern fails the boot (status 125), whatever the command returned. The
command's output goes to stdout. Files given with --copy are put into DIR
for the guest and removed afterwards. --dry-run resolves everything, prints
it and the QEMU command line, and boots and writes nothing.

A boot whose first kernel problem came before the command started is void,
not a verdict on the command: it is booted once more, the same way for
every driver, with the void boot's files moved to DIR/void-1/ and the count
in vm.json ("void_boots") and on stderr. A second void boot fails (125).
So is a boot whose first kernel problem is a watchdog's report (a soft
lockup, an RCU stall, a hung task) while the host kept QEMU's threads
waiting 20 seconds in some 20 seconds (summed over the threads): under TCG those watchdogs are wall
clocks, and the host stopped them (opbench_vm.starved_watchdog; the reason
goes to vm.json's warnings).

Exit status: the guest command's, or opbench-vm's (124 timeout, 125 kernel
problem, 126 no boot), or 2 for a bad request (named on stderr).
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

import opbench_vm

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL_PATH = os.path.join(TOP, "kernel-patch", "scripts", "kernel-path.sh")
OUTPUTS = ("console.log", "vm.json", "kernel-provenance", "commands.txt",
           "kernel-problems.txt")


class RunError(Exception):
    """A request that cannot be run, reported as 'guest-run: error: ...'."""


def manifest_path(env=None):
    env = os.environ if env is None else env
    cache = env.get("CACHE_DIR") or "/var/cache/rseq-opbench"
    return env.get("MANIFEST") or os.path.join(cache, "manifest")


def read_manifest(path):
    """The manifest as a dict (KEY=VALUE lines)."""
    try:
        with open(path) as f:
            return dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
    except OSError:
        raise RunError("no run manifest at %s: the build steps write it; "
                       "run make kernels image first" % path)


def resolve(flavour, kconfig, env=None):
    """(kernel directory, image) for a flavour, from the manifest."""
    env = dict(os.environ if env is None else env, KCONFIG=kconfig)
    r = subprocess.run([KERNEL_PATH, flavour], env=env, capture_output=True,
                       text=True)
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()
        raise RunError(msg[-1].split("error: ", 1)[-1] if msg else
                       "kernel-path.sh failed for '%s'" % flavour)
    kdir = r.stdout.strip()
    if not os.path.isfile(os.path.join(kdir, "provenance")):
        raise RunError("%s has no provenance file: rebuild the flavour "
                       "(make kernels FLAVOURS=%s)" % (kdir, flavour))
    image = read_manifest(manifest_path(env)).get("image")
    if not image or not os.path.isfile(image):
        raise RunError("no guest image in the manifest (%s): make image"
                       % manifest_path(env))
    return kdir, image


def has_kasan(kdir):
    """True when the kernel in kdir was built with CONFIG_KASAN=y."""
    try:
        with open(os.path.join(kdir, "config")) as f:
            return any(l.strip() == "CONFIG_KASAN=y" for l in f)
    except OSError:
        return False


# A KASAN kernel on a 5-level guest (QEMU's -cpu max has LA57) can report a
# wild-memory-access at boot that is no verdict on anything: identify_cpu()
# clears boot_cpu_data's capabilities with interrupts on, pgtable_l5_enabled()
# reads them, and an interrupt in that window sees KASAN_SHADOW_START of
# 4-level paging, below the direct map at 0xff11... (CI, 2026-12-05:
# rcu_is_watching() from irqentry_enter() in arch_cpu_finalize_init()).
# 4-level paging closes the window; only KASAN kernels get it, so the
# benchmark kernels boot as before.
KASAN_ARGS = ["no5lvl"]


def launcher_args(opts, kdir, image):
    """opbench-vm's arguments for this boot."""
    a = ["--kernel", os.path.join(kdir, "bzImage"), "--image", image,
         "--share", opts.out, "--accel", opts.accel,
         "--timeout", str(opts.timeout),
         "--console-log", os.path.join(opts.out, "console.log"),
         "--record", os.path.join(opts.out, "vm.json")]
    append = ([] if not has_kasan(kdir) else KASAN_ARGS) + \
        ([opts.append] if opts.append else [])
    if append:
        a += ["--append", " ".join(append)]
    if opts.smp:
        a += ["--smp", str(opts.smp)]
    if opts.plugin:
        a += ["--plugin", opts.plugin]
    return a + ["--"] + opts.command


def problems_at_boot(console):
    """True when a kernel problem came before the command started."""
    head = console.split(opbench_vm.START_MARK, 1)[0]
    return bool(opbench_vm.find_splats(head))


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="guest-run",
        description="Boot a built flavour with the guest image and run one "
        "command in a boot directory (see vm-images/guest_run.py).")
    p.add_argument("--flavour", required=True,
                   help="FLAVOUR[@TOOLCHAIN], as built by make kernels")
    p.add_argument("--kconfig", default=os.environ.get("KCONFIG") or
                   "default", choices=["default", "debug", "latency"],
                   help="kernel configuration (default: $KCONFIG or default)")
    p.add_argument("--out", required=True,
                   help="boot directory, shared as /share (made if missing)")
    p.add_argument("--copy", action="append", default=[], metavar="FILE",
                   help="put FILE into the boot directory for the guest; "
                   "removed after the boot")
    p.add_argument("--accel", required=True,
                   choices=["auto", "kvm", "tcg", "icount"],
                   help="QEMU accelerator (no default here: the scripts "
                   "decide it, scripts/common.sh accel_for; under icount "
                   "guest time counts instructions)")
    p.add_argument("--timeout", type=float, default=1800,
                   help="seconds before the guest is killed (default 1800)")
    p.add_argument("--append", default="", help="extra kernel arguments")
    p.add_argument("--smp", type=int, default=0, help="vCPUs (default 2)")
    p.add_argument("--plugin", default="",
                   help="a QEMU TCG plugin, as -plugin takes it "
                   "(file=PATH,arg=...)")
    p.add_argument("--dry-run", action="store_true",
                   help="resolve and print; boot and write nothing")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="command to run in the guest (after --)")
    opts = p.parse_args(argv)
    if opts.command and opts.command[0] == "--":
        opts.command = opts.command[1:]
    if not opts.command:
        raise RunError("no guest command given; add one after --")
    opts.out = os.path.abspath(opts.out)
    return opts


def dry_run(opts, kdir, image):
    print("kernel:  %s" % os.path.join(kdir, "bzImage"))
    print("image:   %s" % image)
    print("out:     %s" % opts.out)
    print("guest:   %s" % shlex.join(opts.command))
    sys.stdout.flush()
    return opbench_vm.main(["--show-command"] + launcher_args(opts, kdir,
                                                              image))


def boot(opts, kdir, image, argv):
    os.makedirs(opts.out, exist_ok=True)
    used = [f for f in OUTPUTS if os.path.exists(os.path.join(opts.out, f))]
    if used:
        raise RunError("%s already holds a boot (%s); give each boot a new "
                       "directory" % (opts.out, ", ".join(used)))
    for src in opts.copy:
        if not os.path.isfile(src):
            raise RunError("--copy %s: no such file" % src)
    shutil.copy(os.path.join(kdir, "provenance"),
                os.path.join(opts.out, "kernel-provenance"))
    cmds = os.path.join(opts.out, "commands.txt")
    with open(cmds, "w") as f:
        f.write("# host: %s\n" % shlex.join(["vm-images/guest-run"] + argv))
        f.write("# guest: %s\n" % shlex.join(opts.command))
    copied = []
    try:
        for src in opts.copy:
            dst = os.path.join(opts.out, os.path.basename(src))
            shutil.copy2(src, dst)
            copied.append(dst)
        status = opbench_vm.main(launcher_args(opts, kdir, image))
    finally:
        for c in copied:
            os.unlink(c)
    record = os.path.join(opts.out, "vm.json")
    if os.path.exists(record):
        with open(record) as f:
            qemu = json.load(f).get("qemu_command")
        if qemu:
            with open(cmds, "a") as f:
                f.write("# qemu: %s\n" % shlex.join(qemu))
    try:
        with open(os.path.join(opts.out, "console.log"),
                  errors="replace") as f:
            console = f.read()
    except OSError:
        console = ""
    splats = opbench_vm.find_splats(console)
    with open(os.path.join(opts.out, "kernel-problems.txt"), "w") as f:
        f.writelines(l + "\n" for l in splats)
    if splats and problems_at_boot(console):
        print("guest-run: the first kernel problem came at boot, before the "
              "command started: this boot is void, not a verdict on the "
              "command (%s)" % os.path.join(opts.out, "kernel-problems.txt"),
              file=sys.stderr)
        return status, True
    starved = None
    if splats and os.path.exists(record):
        with open(record) as f:
            starved = opbench_vm.starved_watchdog(console, json.load(f))
    if starved:
        print("guest-run: %s: this boot is void (%s)" % (
            starved, os.path.join(opts.out, "kernel-problems.txt")),
            file=sys.stderr)
        with open(record) as f:
            rec = json.load(f)
        rec.setdefault("warnings", []).append(starved)
        with open(record, "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write("\n")
        return status, True
    return status, False


VOID_DIR = "void-1"


def boot_unless_void(opts, kdir, image, argv):
    """boot(), once more after a void boot; the second boot's vm.json
    counts the void one. What the void boot wrote (the runner's files, and
    what its command created) is kept in VOID_DIR; what the caller put in
    the directory before (the guest's programs, a file its shell is
    writing the output into) stays for the second boot."""
    before = set(os.listdir(opts.out)) if os.path.isdir(opts.out) else set()
    status, void = boot(opts, kdir, image, argv)
    if not void or status != opbench_vm.EXIT_SPLAT:
        return status
    keep = os.path.join(opts.out, VOID_DIR)
    os.makedirs(keep)
    for f in os.listdir(opts.out):
        if f != VOID_DIR and (f in OUTPUTS or f not in before):
            shutil.move(os.path.join(opts.out, f), os.path.join(keep, f))
    print("guest-run: WARNING: void boot of %s, kept in %s: booting once "
          "more (a second void boot fails)" % (opts.flavour, keep),
          file=sys.stderr)
    status, void = boot(opts, kdir, image, argv)
    record = os.path.join(opts.out, "vm.json")
    if os.path.exists(record):
        with open(record) as f:
            rec = json.load(f)
        rec["void_boots"] = 1
        with open(record, "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write("\n")
    return status


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
        kdir, image = resolve(opts.flavour, opts.kconfig)
        if opts.dry_run:
            return dry_run(opts, kdir, image)
        return boot_unless_void(opts, kdir, image, argv)
    except RunError as e:
        print("guest-run: error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
